"""Sampled traces along the call path, built from the latest tick's state of each hop."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from srezero.telemetry.logs import WEB_CAUSES, _Rand

if TYPE_CHECKING:
    from srezero.sim.components import Replica
    from srezero.sim.world import World

ENDPOINTS = ("GET /api/orders", "POST /api/cart", "POST /api/checkout", "GET /api/products")
_SHORT_ERR = {
    "db_pool_timeout": "timeout acquiring db connection", "db_too_many_conns": "db: too many clients",
    "db_timeout": "db query timeout", "io_error": "db: could not read block (Input/output error)",
    "statement_timeout": "db: statement timeout", "disk_full": "db: No space left on device",
    "lock_wait": "db: lock timeout", "db_unavailable": "db: connection refused", "overload": "503 shed",
    "rate_limited": "429 rate limited", "code_defect": "unhandled exception", "emfile": "too many open files",
    "net_loss": "i/o timeout", "clock_skew": "token rejected", "conntrack": "connect timeout",
    "upstream_timeout": "upstream idle timeout", "enfile": "too many open files in system",
    "port_exhaustion": "cannot assign requested address", "root_full": "no space left on device",
    "mq_unavailable": "publish failed: connection refused", "mq_timeout": "publish failed: i/o timeout",
    "db_net": "db: i/o timeout",
}
#: web causes that are logged but do not fail the request (the client falls back to the database)
_NOT_ERRORS = ("cache_down", "cache_unavailable", "cache_timeout", "gc_pressure")
_DB_SIDE = {"db_pool_timeout", "db_too_many_conns", "db_timeout", "io_error", "statement_timeout", "disk_full",
            "lock_wait", "db_unavailable", "db_net"}


def sample(w: World, service: str | None, errors_only: bool, limit: int) -> list[dict[str, Any]]:
    """Up to ``limit`` traces from the last tick, errors weighted by their share of requests."""
    webs = _serving(w)
    if not webs:
        return []
    st = w.state
    cache_hit = w.buf[w.row_of[("cache", "hit_ratio")], w.col]
    traces = []
    r = _Rand(w, w.seed, w.col, 77)
    attempts = 0
    while len(traces) < limit and attempts < limit * 40:
        attempts += 1
        rep = webs[r.int(0, len(webs))]
        err_cause = ""
        roll = r.u()
        acc = 0.0
        for cause, frac in rep.err_causes.items():
            if cause in WEB_CAUSES and cause not in _NOT_ERRORS:
                acc += frac
                if roll < acc:
                    err_cause = cause
                    break
        if errors_only and not err_cause:
            continue
        hit = r.u() < cache_hit
        spans = []
        db_ms = st.db_lat_ms * (1.0 + r.u())
        client_to = float(w.services["web_server"].config["db_timeout_ms"])
        if err_cause in ("db_pool_timeout", "db_timeout", "db_net"):
            db_ms = client_to
        elif db_ms >= client_to:  # a query that answered did so before its client gave up on it
            db_ms = client_to * (0.85 + 0.15 * r.u())
        cache_ms = 0.4 + r.u() * 0.6
        spans.append({"service": "cache", "name": "GET session:*", "ms": round(cache_ms, 1),
                      "status": "hit" if hit else "miss"})
        if err_cause == "db_pool_timeout":  # it waited for a pooled connection and never reached the database
            spans.append({"service": "web_server", "name": "db pool acquire", "ms": round(db_ms, 1), "status": "timeout"})
        elif err_cause == "db_timeout":  # each attempt waited out the client timeout, then was retried
            tries = int(w.services["web_server"].config["db_retries"]) + 1
            spans += [{"service": "database", "name": "SELECT orders", "ms": round(db_ms, 1), "status": "timeout"}
                      for _ in range(tries)]
        elif not hit or err_cause in _DB_SIDE:
            spans.append({"service": "database", "name": "SELECT orders", "ms": round(db_ms, 1),
                          "status": "error" if err_cause in _DB_SIDE else "ok"})
        if r.u() < st.publish_frac and not err_cause:
            spans.append({"service": "message_queue", "name": "publish jobs", "ms": 1.1, "status": "ok"})
        elif err_cause in _PUBLISH_FAILED:
            status, ms = _PUBLISH_FAILED[err_cause]
            spans.append({"service": "message_queue", "name": "publish jobs", "ms": ms, "status": status})
        own = rep.lat_ms - sum(s["ms"] for s in spans) if rep.lat_ms else 10.0
        waited = _waited_ms(w, err_cause)  # a lost packet or dropped SYN is only given up on at a timeout
        if waited > own:
            own = waited
        total = max(1.0, sum(s["ms"] for s in spans) + max(own, 2.0))
        trace = {
            "trace_id": r.hexid(8) + r.hexid(8),
            "endpoint": ENDPOINTS[r.int(0, len(ENDPOINTS))],
            "total_ms": round(total, 1),
            "status": 500 if err_cause and err_cause not in ("overload", "rate_limited") else
            (503 if err_cause == "overload" else 429 if err_cause == "rate_limited" else 200),
            "web_replica": rep.name,
            "error": _SHORT_ERR.get(err_cause, ""),
            "spans": spans,
        }
        if service and service not in ("load_balancer", "web_server", rep.name) and \
                not any(s["service"] == service for s in spans):
            continue
        traces.append(trace)
    return traces


#: How long a publish waits for the broker's confirm before the client gives up (ms).
PUBLISH_TIMEOUT_MS = 5000.0
#: A connect whose SYN the kernel drops is retried at 1 s and 3 s before the client gives up (ms).
CONNECT_TIMEOUT_MS = 3000.0
#: How a failed publish's span ends, by cause: (status, ms). A refused connection fails at once.
_PUBLISH_FAILED = {"mq_timeout": ("timeout", PUBLISH_TIMEOUT_MS), "mq_unavailable": ("error", 2.0)}


def _serving(w: World) -> list[Replica]:
    """The web replicas that served requests in the last tick: where traces start."""
    return [r for r in w.services["web_server"].replicas if r.state == "Running" and r.rps > 0]


def _waited_ms(w: World, err_cause: str) -> float:
    """The time a request failing with ``err_cause`` spent in the web tier before it failed."""
    if err_cause == "net_loss":
        return float(w.services["web_server"].config["db_timeout_ms"])  # a reply lost on the way: the read timeout
    if err_cause == "conntrack":
        return CONNECT_TIMEOUT_MS
    return 0.0


def none_sampled(w: World, kind: str | None, service: str, errors_only: bool) -> str:
    """Why a sample came back empty, in the words of a tracing UI."""
    if kind == "worker":
        return ("workers are not on the request path: jobs reach them through message_queue and are not traced "
                "(their metrics and logs show the jobs)")
    if not _serving(w):
        return "no traces sampled in the last 30 s (no traffic reached the web tier)"
    which = "failed requests" if errors_only else "requests"
    touching = f" touching {service}" if service else ""
    return (f"no {which}{touching} among the traces sampled in the last 30 s (traces start at the web tier: "
            "a request the load balancer refused or failed itself is only in its logs and metrics)")


def render(traces: list[dict[str, Any]], lb_name: str) -> str:
    lines = []
    for tr in traces:
        status = f"ERROR {tr['status']}" if tr["status"] >= 400 else "OK 200"
        lines.append(f"trace {tr['trace_id']}  {tr['endpoint']}  {tr['total_ms']:.1f} ms  {status}")
        lines.append(f"  load_balancer {lb_name}  {tr['total_ms'] + 0.8:.1f} ms")
        err = f"  error: {tr['error']}" if tr["error"] else ""
        lines.append(f"  └ web_server {tr['web_replica']}  {tr['total_ms']:.1f} ms{err}")
        for i, sp in enumerate(tr["spans"]):
            branch = "└" if i == len(tr["spans"]) - 1 else "├"
            lines.append(f"      {branch} {sp['service']} {sp['name']}  {sp['ms']:.1f} ms  {sp['status']}")
    return "\n".join(lines)
