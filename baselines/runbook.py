"""The runbook agent: the observation-only script an SRE team might write for its pager.

Procedure: read the alerts, the topology and the pods; scan every service's error rate for
anomalies; search the logs of the services the paging alert's runbook points at (then the other
alerts', then the anomalous services'); the first service whose logs match the signature table
decides the diagnosis; a signature's follow-up reads gather what its fix needs; submit, apply the
mapped fix, resolve. With no signature and no anomaly it calls the page a false alarm.

It never touches ground truth: it only reads observations (tests run it with every privileged
accessor made to raise). Like any script it trusts the first plausible symptom in the order its
runbook lists services, so it does well when the symptom names the cause and badly when the task
is built to mislead (an application exception caused by a failing disk) or the cause is in another
layer than the symptom.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from baselines._observe import SERVICES, Script, ScriptedAgent, anomaly, call, log_lines, series
from srezero.episode import Briefing

#: Alert name -> services whose logs its runbook page says to check, in order.
ALERT_RUNBOOKS: dict[str, tuple[str, ...]] = {
    "HighErrorRate": ("web_server", "load_balancer"),
    "HighLatency": ("web_server", "database"),
    "QueueBacklogGrowing": ("worker", "message_queue"),
    "WorkerErrors": ("worker",),
    "PodCrashLooping": (),
    "DatabaseLatencyHigh": ("database",),
}
MAX_LOG_SERVICES = 4


@dataclass
class Finding:
    entity: str
    category: str
    detail: str
    fixes: list[dict[str, Any]] = field(default_factory=list)


#: A signature handler may read more, then returns a Finding, or a service name to search next.
Handler = Callable[["RunbookAgent", str, str, "re.Match[str]"], Script]


@dataclass(frozen=True)
class Signature:
    name: str
    pattern: re.Pattern[str]
    handler: Handler


class RunbookAgent(ScriptedAgent):
    """A scripted runbook. Deterministic: the same observations give the same actions."""

    name = "runbook"

    def __init__(self, scan_metrics: bool = True) -> None:
        self.scan_metrics = scan_metrics

    def settings(self) -> dict[str, Any]:
        return {"scan_metrics": self.scan_metrics, "signatures": [s.name for s in SIGNATURES]}

    def start(self, task_info: Briefing) -> None:
        self.budget = task_info.step_budget
        m = re.search(r"\] (\w+) on ", task_info.page)
        self.page_alert = m.group(1) if m else ""

    # ------------------------------------------------------------------ the procedure
    def run(self) -> Script:
        v = self.view
        v.read_alerts((yield call("get_alerts")))
        v.read_topology((yield call("get_topology")))
        v.read_status((yield call("get_status")))
        scores: dict[str, float] = {}
        if self.scan_metrics and self.budget >= 25:
            for svc in SERVICES:
                obs = yield call("query_metrics", target=svc, metric="error_rate", window_s=900)
                scores[svc] = anomaly(series(obs)) if obs.ok else 0.0
        finding: Finding | None = None
        if scores and max(scores.values()) <= 0.5:  # nothing is erroring: is the page still firing?
            v.read_alerts((yield call("get_alerts")))
            if not any(a.get("name") == self.page_alert for a in v.alerts):
                finding = Finding("", "none", f"{self.page_alert} cleared by itself with no error anomaly")
        queue = [] if finding else self.log_order(scores)
        searched: list[str] = []
        while queue and finding is None and len(searched) < MAX_LOG_SERVICES:
            svc = queue.pop(0)
            if svc in searched:
                continue
            searched.append(svc)
            obs = yield call("search_logs", service=svc, level="warn", limit=50)
            hit = match(log_lines(obs))
            if hit is not None:
                sig, replica, m = hit
                outcome = yield from sig.handler(self, svc, replica, m)
                if isinstance(outcome, Finding):
                    finding = outcome
                elif outcome not in searched:  # a symptom of a dependency: read its logs next
                    queue.insert(0, outcome)
        if finding is None:
            finding = yield from self.without_signature(scores)
        claims = [] if finding.category == "none" else [
            {"entity": finding.entity, "category": finding.category, "detail": finding.detail}]
        yield call("submit_diagnosis", root_causes=claims, summary=f"runbook: {finding.detail}")
        for fix in finding.fixes:
            if fix["tool"] in self.tools:
                yield fix
        yield call("resolve", note="runbook: fix applied" if finding.fixes else "runbook: no action")

    def log_order(self, scores: dict[str, float]) -> list[str]:
        """The paging alert's runbook first, then the other alerts', then anomalous services."""
        order: list[str] = []
        for a in self.view.alerts:
            svc = self.view.service_of(a.get("entity", "")) or ""
            order += [*ALERT_RUNBOOKS.get(a.get("name", ""), ()), svc]
        crashing = [p["service"] for p in self.view.pods if p.get("state") == "CrashLoopBackOff"]
        order += crashing + [s for s, x in sorted(scores.items(), key=lambda kv: -kv[1]) if x > 0.5]
        return [s for s in dict.fromkeys(order) if s in SERVICES]

    def without_signature(self, scores: dict[str, float]) -> Script:
        """No signature matched: crash-looping pods get a restart, otherwise it is a false alarm."""
        crashing = [p["service"] for p in self.view.pods if p.get("state") == "CrashLoopBackOff"]
        if crashing:
            svc = crashing[0]
            return Finding(svc, "code_defect", f"{svc} replicas crash-looping", [call("restart", target=svc)])
        if any(x > 0.5 for x in scores.values()):
            svc = max(scores, key=lambda s: scores[s])
            return Finding(svc, "code_defect", f"{svc} error rate rising with no known signature")
        yield from ()
        return Finding("", "none", "no anomaly found: false alarm")

    # ------------------------------------------------------------------ helpers for handlers
    def config(self, service: str) -> Script:
        if service not in self.view.configs:
            self.view.read_config(service, (yield call("get_config", service=service)))
        return self.view.configs.get(service, {})

    def history(self) -> Script:
        if not self.view.changes:
            self.view.read_changes((yield call("get_changes", window_h=72.0)))
        return self.view.changes

    def revert(self, service: str, key: str, fallback: Any) -> Script:
        """The config value to restore: the one before the last change of ``key``, else ``fallback``."""
        yield from self.history()
        old = self.view.previous_value(service, key)
        return fallback if old is None else old


# ---------------------------------------------------------------------- signature handlers
def _missing_env(agent: RunbookAgent, svc: str, replica: str, m: re.Match[str]) -> Script:
    key = f"env.{m.group(1)}"
    yield from agent.config(svc)  # confirm the variable is empty before changing it
    value = yield from agent.revert(svc, key, None)
    if value in (None, ""):  # copy it from a sibling service that has it set
        for other in ("web_server", "worker"):
            cfg = yield from agent.config(other)
            if cfg.get(key):
                value = cfg[key]
                break
    fixes = [call("set_config", service=svc, key=key, value=value)] if value not in (None, "") else []
    return Finding(f"{svc}.{key}", "misconfiguration", f"{key} is missing, so {svc} fails at start-up", fixes)


def _code_defect(agent: RunbookAgent, svc: str, replica: str, m: re.Match[str]) -> Script:
    yield from agent.history()
    deploy = agent.view.last_deploy(svc)
    if deploy is not None:
        return Finding(svc, "code_defect", f"unhandled exceptions in {m.group(1)} after {deploy.detail}",
                       [call("rollback", service=svc)])
    return Finding(svc, "code_defect", f"unhandled exceptions in {m.group(1)}", [call("restart", target=svc)])


def _pool_exhausted(agent: RunbookAgent, svc: str, replica: str, m: re.Match[str]) -> Script:
    yield from agent.history()
    fixes = [call("rollback", service="web_server")] if agent.view.last_deploy("web_server") else []
    return Finding("web_server", "resource_exhaustion",
                   f"database connection pool exhausted (db_pool_size={m.group(1)}): connections leak", fixes)


def _client_timeout(agent: RunbookAgent, svc: str, replica: str, m: re.Match[str]) -> Script:
    value = yield from agent.revert("web_server", "db_timeout_ms", 2000)
    return Finding("web_server.db_timeout_ms", "misconfiguration",
                   f"db_timeout_ms={m.group(1)} is shorter than database queries take",
                   [call("set_config", service="web_server", key="db_timeout_ms", value=value)])


def _disk_io(agent: RunbookAgent, svc: str, replica: str, m: re.Match[str]) -> Script:
    primary = agent.view.db_primary()
    node = (primary or {}).get("node") or agent.view.node_of(replica) or ""
    device = ""
    if node:
        obs = yield call("node_diagnostics", node=node, check="dmesg")
        devs = re.findall(r"I/O error, dev (\w+)", obs.text)
        device = devs[-1] if devs else ""
    entity = f"{node}/{device}" if device else node
    return Finding(entity, "hardware", f"read errors (EIO) on {device or 'the database disk'}",
                   [call("failover", service="database")])


def _config_limit(key: str, service: str, category: str, factor: int) -> Handler:
    """A limit that is too low: restore its previous value, else multiply the shown limit."""

    def handler(agent: RunbookAgent, svc: str, replica: str, m: re.Match[str]) -> Script:
        value = yield from agent.revert(service, key, int(m.group(1)) * factor)
        return Finding(f"{service}.{key}", category, f"{key} limit {m.group(1)} reached",
                       [call("set_config", service=service, key=key, value=value)])

    return handler


def _diagnose_only(entity: str, category: str, detail: str, fix: dict[str, Any] | None = None) -> Handler:
    def handler(agent: RunbookAgent, svc: str, replica: str, m: re.Match[str]) -> Script:
        yield from ()
        target = entity.replace("{svc}", svc).replace("{node}", agent.view.node_of(replica) or svc)
        return Finding(target, category, detail, [fix] if fix else [])

    return handler


def _disk_full(root: bool) -> Handler:
    """A full disk: the data disk under the database primary, or the root disk of the replica's node."""

    def handler(agent: RunbookAgent, svc: str, replica: str, m: re.Match[str]) -> Script:
        yield from ()
        primary = agent.view.db_primary() or {}
        node = (agent.view.node_of(replica) if root else primary.get("node")) or agent.view.node_of(replica) or ""
        disks = agent.view.nodes.get(node) or []
        device = (disks[0] if root else disks[-1]) if disks else ""
        entity = f"{node}/{device}" if device else node or svc
        fixes = [call("cleanup_disk", node=node, device=device)] if device else []
        return Finding(entity, "resource_exhaustion", f"{device or 'a disk'} on {node} is full", fixes)

    return handler


def _follow(service: str) -> Handler:
    """The line blames a dependency: the runbook reads that service's logs next."""

    def handler(agent: RunbookAgent, svc: str, replica: str, m: re.Match[str]) -> Script:
        yield from ()
        return service

    return handler


def _db_refused(agent: RunbookAgent, svc: str, replica: str, m: re.Match[str]) -> Script:
    host = m.group(1)
    value = yield from agent.revert("web_server", "db_host", host)
    if value != host:  # the history shows db_host was changed: the address itself is the suspect
        return Finding("web_server.db_host", "misconfiguration", f"db_host points at {host}",
                       [call("set_config", service="web_server", key="db_host", value=value)])
    primary = agent.view.db_primary() or {}
    if primary.get("state") not in (None, "Running"):  # the primary is down: promote the replica
        node = primary.get("node") or "database"
        return Finding(node, "hardware", f"database primary {primary.get('name')} is {primary.get('state')}",
                       [call("failover", service="database")])
    return Finding("database", "dependency_failure", "the database refuses connections", [])


def _db_max_connections(agent: RunbookAgent, svc: str, replica: str, m: re.Match[str]) -> Script:
    """No change in the history explains "too many clients" (a cut the ``too_many_clients`` row reverts
    first; a raise is no suspect): allow four times the connections."""
    cfg = yield from agent.config("database")
    current = cfg.get("max_connections")
    value = int(current) * 4 if isinstance(current, int | float) and current else 500
    return Finding("database.max_connections", "misconfiguration", f"max_connections={current} is too low",
                   [call("set_config", service="database", key="max_connections", value=value)])


def _revert_key(service: str, key: str, category: str, detail: str, fallback: Any) -> Handler:
    """A setting the history shows was changed: put the previous value back."""

    def handler(agent: RunbookAgent, svc: str, replica: str, m: re.Match[str]) -> Script:
        value = yield from agent.revert(service, key, fallback)
        fixes = [call("set_config", service=service, key=key, value=value)] if value is not None else []
        return Finding(f"{service}.{key}", category, detail.format(*m.groups()), fixes)

    return handler


def _revert_harmful(settings: tuple[tuple[str, str, int], ...], category: str, symptom: str,
                    otherwise: Handler | None = None) -> Handler:
    """A symptom several settings can cause: undo whichever the history changed last in the harmful
    direction (``+1``: raising it hurts, ``-1``: lowering it does); else ``otherwise``, else blame the
    first setting without a fix. A change the other way (more connections allowed) is no suspect."""

    def handler(agent: RunbookAgent, svc: str, replica: str, m: re.Match[str]) -> Script:
        changes = yield from agent.history()
        for change in reversed(changes):
            for service, key, harmful in settings:
                if change.service == service and key in change.edits:
                    old, new = change.edits[key]
                    if _direction(old, new) == harmful:
                        yield from agent.config(service)  # confirm the live value before changing it
                        return Finding(f"{service}.{key}", category, f"{symptom}: {key} changed from {old} to {new}",
                                       [call("set_config", service=service, key=key, value=old)])
        if otherwise is not None:
            return (yield from otherwise(agent, svc, replica, m))
        service, key, _ = settings[0]
        return Finding(f"{service}.{key}", category, symptom)

    return handler


def _direction(old: str, new: str) -> int:
    try:
        a, b = float(old), float(new)
    except ValueError:
        return 0
    return (b > a) - (b < a)


def _lock_holder(agent: RunbookAgent, svc: str, replica: str, m: re.Match[str]) -> Script:
    yield from ()
    return Finding("database", "code_defect", f"session {m.group(1)} holds a lock everyone waits on",
                   [call("terminate_session", pid=int(m.group(1)))])


def _slow_query(agent: RunbookAgent, svc: str, replica: str, m: re.Match[str]) -> Script:
    yield from ()
    table, column = m.group(1), m.group(2)
    if column:
        return Finding(f"database.{table}", "code_defect", f"sequential scans on {table}.{column}: missing index",
                       [call("create_index", table=table, column=column)])
    return Finding(f"database.{table}", "resource_exhaustion", f"slow scans of {table}: table bloat",
                   [call("vacuum", table=table)])


def _poison(agent: RunbookAgent, svc: str, replica: str, m: re.Match[str]) -> Script:
    yield from ()
    return Finding("worker", "code_defect", f"message {m.group(1)} fails every attempt (poison message)",
                   [call("dead_letter_message", message_id=m.group(1))])


def _clock(agent: RunbookAgent, svc: str, replica: str, m: re.Match[str]) -> Script:
    yield from ()
    node = agent.view.node_of(replica) or ""
    return Finding(node or svc, "authentication", "tokens rejected: the node's clock is skewed",
                   [call("sync_clock", node=node)] if node else [])


#: The signature table, checked in order on every log line (the first pattern that matches a line
#: labels it). The most frequent label among the first matching service's lines wins.
SIGNATURES: tuple[Signature, ...] = tuple(Signature(n, re.compile(p), h) for n, p, h in (
    ("missing_env", r"KeyError: '([A-Z_][A-Z0-9_]*)' \(required environment variable", _missing_env),
    ("unhandled_exception", r"Unhandled exception in ([\w.]+)", _code_defect),
    ("pool_exhausted", r"timeout acquiring connection from pool .*pool_size=(\d+)", _pool_exhausted),
    ("client_timeout", r"query canceled after (\d+)ms \(attempt", _client_timeout),
    ("disk_io", r"could not read block \d+ .*Input/output error", _disk_io),
    ("root_full", r"write /tmp/\S+: no space left on device", _disk_full(root=True)),
    ("disk_full", r"No space left on device", _disk_full(root=False)),
    ("too_many_clients", r"too many clients already",
     _revert_harmful((("web_server", "db_pool_size", +1), ("database", "max_connections", -1)), "misconfiguration",
                     "the database refuses clients beyond max_connections", _db_max_connections)),
    ("statement_timeout", r"canceling statement due to statement timeout",
     _diagnose_only("database", "capacity", "queries exceed the statement timeout: the database is overloaded")),
    ("lock_holder", r"waiting for ShareLock .* holding the lock: (\d+)", _lock_holder),
    ("lock_wait", r"lock timeout|waiting for ShareLock", _diagnose_only("database", "code_defect", "lock contention")),
    ("slow_query", r"statement: SELECT .*? FROM (\w+)(?: WHERE (\w+) = )?", _slow_query),
    ("lb_health_check", r"health check GET (\S+) on upstream .* failed: HTTP 404",
     _revert_key("load_balancer", "health_check_path", "misconfiguration", "health checks of {0} get 404", None)),
    ("queue_refused", r"queue: publish to (\S+) failed",
     _revert_key("web_server", "queue_host", "misconfiguration", "publishing to {0} fails", None)),
    ("dlq_full", r"jobs\.dlq.* (?:is full|reached max-length)",
     _revert_key("message_queue", "dlq_max_messages", "misconfiguration", "the dead-letter queue is full", None)),
    ("db_refused", r"connection to (\S+) failed: Connection refused", _db_refused),
    ("emfile", r"too many open files \(limit (\d+)\)",
     _config_limit("max_open_files", "web_server", "resource_exhaustion", 8)),
    ("rate_limited", r"rate limit (\d+) rps exceeded", _config_limit("rate_limit_rps", "web_server",
                                                                      "misconfiguration", 3)),
    ("lb_conn_limit", r"(\d+) worker_connections are not enough",
     _config_limit("max_connections", "load_balancer", "misconfiguration", 3)),
    ("cache_maxmemory", r"maxmemory reached \((\d+)mb\)",
     _config_limit("maxmemory_mb", "cache", "misconfiguration", 2)),
    ("cache_refused", r"cache: connection refused",
     _diagnose_only("cache", "dependency_failure", "cache refuses connections", call("restart", target="cache"))),
    ("auth_wrongpass", r"WRONGPASS", _diagnose_only("cache", "authentication", "cache rejects the password")),
    ("tls_expired", r"certificate has expired",
     _diagnose_only("load_balancer", "authentication", "TLS certificate expired",
                    call("renew_certificate", service="load_balancer"))),
    ("clock_skew", r"\"iat\" is in the future", _clock),
    ("conntrack", r"dial tcp: connect: connection timed out",
     _diagnose_only("{node}", "network", "connections time out: conntrack table full")),
    ("packet_loss", r"i/o timeout after retransmissions", _diagnose_only("{node}", "network", "packet loss")),
    ("overload", r"worker pool saturated",
     _revert_harmful((("web_server", "workers", -1), ("web_server", "cpu_limit", -1)), "misconfiguration",
                     "the web tier sheds requests", _diagnose_only("web_server", "capacity", "web tier saturated",
                                                                   call("scale", service="web_server", replicas=6)))),
    ("duplicate_delivery", r"already processed by another consumer",
     _revert_harmful((("message_queue", "visibility_timeout_s", -1),), "misconfiguration",
                     "jobs are redelivered while they still run")),
    ("idle_timeout", r"exceeded upstream idle timeout",
     _revert_harmful((("load_balancer", "idle_timeout_s", -1),), "misconfiguration",
                     "the balancer cuts slow requests at its idle timeout")),
    ("poison", r"(?:job|message) (\w+) (?:failed: ValueError|on queue 'jobs' unacked)", _poison),
    ("no_upstream", r"no live upstreams", _follow("web_server")),
    ("upstream_timeout", r"upstream timed out", _follow("web_server")),
    ("job_db_error", r"failed: database error", _follow("database")),
))


def match(lines: list[tuple[str, str]]) -> tuple[Signature, str, re.Match[str]] | None:
    """The most frequent signature among ``lines`` (ties: table order), with its latest line's match."""
    counts: dict[str, int] = {}
    latest: dict[str, tuple[Signature, str, re.Match[str]]] = {}
    for replica, text in lines:
        for sig in SIGNATURES:
            m = sig.pattern.search(text)
            if m:
                counts[sig.name] = counts.get(sig.name, 0) + 1
                latest[sig.name] = (sig, replica, m)
                break
    if not counts:
        return None
    order = [s.name for s in SIGNATURES]
    best = max(counts, key=lambda n: (counts[n], -order.index(n)))
    return latest[best]
