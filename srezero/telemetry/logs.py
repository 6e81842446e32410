"""Log lines, rendered lazily from per-tick error causes plus benign chatter.

The world stores, per replica and tick, a small dict of error causes with their share of requests.
Here each cause becomes templated, levelled, timestamped lines with values taken from live state
(the pool size, the timeout, a block number). Randomness comes from a fixed table indexed by
(replica, tick, line), so the same query always returns the same lines and a line never changes
between two queries. Templates never mention fault names or ids: they say what a real process
would print.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any

from srezero.sim.clock import TICK_S
from srezero.sim.metrics import R_CPU, R_MEM, R_P50, R_RPS
from srezero.sim.readings import noise_table
from srezero.sim.world import LogContext

if TYPE_CHECKING:
    from srezero.sim.components import Replica
    from srezero.sim.world import World

LEVELS = ("debug", "info", "warn", "error")
_LEVEL_RANK = {lvl: i for i, lvl in enumerate(LEVELS)}

#: cause -> (level, template). Fields: {timeout} {pool} {retries} {attempt} {block} {rel} {reason} {limit} {rid} {host}
WEB_CAUSES: dict[str, tuple[str, str]] = {
    "db_pool_timeout": ("error", "db: timeout acquiring connection from pool after {timeout}ms (pool_size={pool}, in_use={pool}, waiting={waiting}) rid={rid}"),
    "db_too_many_conns": ("error", "db: connect failed: FATAL: sorry, too many clients already rid={rid}"),
    "db_timeout": ("error", "db: query canceled after {timeout}ms (attempt {attempt}/{attempts}) rid={rid}"),
    "io_error": ("error", "Unhandled exception in OrderRepository.fetch: InternalError: could not read block {block} in file \"base/16384/{rel}\": Input/output error rid={rid}"),
    "statement_timeout": ("error", "db: ERROR: canceling statement due to statement timeout rid={rid}"),
    "disk_full": ("error", "db: ERROR: could not extend file \"base/16384/{rel}\": No space left on device rid={rid}"),
    "lock_wait": ("error", "db: ERROR: canceling statement due to lock timeout rid={rid}"),
    "db_unavailable": ("error", "db: connection to {host} failed: Connection refused rid={rid}"),
    "cache_down": ("warn", "cache: connection refused ({chost}); falling back to database"),
    "cache_unavailable": ("warn", "cache: error from {chost}: WRONGPASS invalid username-password pair or connection failed; falling back to database"),
    "overload": ("warn", "worker pool saturated ({workers} busy); rejecting request with 503 rid={rid}"),
    "rate_limited": ("warn", "rate limit {limit} rps exceeded; returning 429 rid={rid}"),
    "code_defect": ("error", "Unhandled exception in {handler}: {exc} rid={rid}"),
    "emfile": ("error", "accept4: too many open files (limit {fdlimit})"),
    "net_loss": ("error", "upstream request failed: read tcp: i/o timeout after retransmissions rid={rid}"),
    "clock_skew": ("error", "auth: token rejected: \"iat\" is in the future (now={now}) rid={rid}"),
    "conntrack": ("error", "dial tcp: connect: connection timed out rid={rid}"),
    "enfile": ("error", "accept4: too many open files in system (ENFILE); retrying in 5ms"),
    "port_exhaustion": ("error", "dial tcp {host}: connect: cannot assign requested address rid={rid}"),
    "root_full": ("error", "write /tmp/upload-{job}: no space left on device rid={rid}"),
    "upstream_timeout": ("error", "request exceeded upstream idle timeout; connection reset rid={rid}"),
    "gc_pressure": ("warn", "GC overhead limit: {gcpct}% of CPU time in garbage collection (heap {heap}MB of {memlimit}MB)"),
    "cache_timeout": ("warn", "cache: timeout reading from {chost} after 250ms; falling back to database rid={rid}"),
    "mq_unavailable": ("error", "queue: publish to {qhost} failed: dial tcp {qhost}: connect: connection refused rid={rid}"),
    "mq_timeout": ("error", "queue: publish to {qhost} failed: write tcp: i/o timeout after retransmissions rid={rid}"),
    "db_net": ("error", "db: read tcp {host}: i/o timeout (attempt {attempt}/{attempts}) rid={rid}"),
    "crash": ("error", "{reason}"),
}
DB_CAUSES: dict[str, tuple[str, str]] = {
    "io_error": ("error", "ERROR:  could not read block {block} in file \"base/16384/{rel}\": Input/output error"),
    "too_many_conns": ("error", "FATAL:  sorry, too many clients already"),
    "statement_timeout": ("error", "ERROR:  canceling statement due to statement timeout"),
    "disk_full": ("error", "PANIC:  could not write to file \"pg_wal/xlogtemp.{pid}\": No space left on device"),
    "lock_wait": ("warn", "LOG:  process {pid} still waiting for ShareLock on transaction {txid} after 1000.{ms} ms "
                  "DETAIL:  Process holding the lock: {lockpid}. Wait queue: {pid}."),
    "db_unavailable": ("error", "FATAL:  the database system is starting up"),
    "slow_query": ("warn", "LOG:  duration: {slowms}.{pct} ms  statement: {stmt}"),
    "client_net": ("warn", "LOG:  could not receive data from client: Connection timed out"),
    "wal_stream": ("error", "FATAL:  could not receive data from WAL stream: server closed the connection unexpectedly"),
    "recovery_conflict": ("error", "ERROR:  canceling statement due to conflict with recovery DETAIL:  User query might "
                          "have needed to see row versions that must be removed."),
}
CACHE_CAUSES: dict[str, tuple[str, str]] = {
    "evicting": ("warn", "maxmemory reached ({maxmem}mb); evicting keys with policy {policy}"),
    "auth_fail": ("warn", "client {ip}:{port} AUTH failed: WRONGPASS invalid username-password pair"),
}
WORKER_CAUSES: dict[str, tuple[str, str]] = {
    "poison": ("error", "job {pjob} failed: ValueError: invalid literal for int() with base 10: 'N/A' (attempt {pattempt}); "
               "retrying"),
    "dlq_rejected": ("error", "job {job} failed after {maxr} attempts; dead-letter publish rejected (queue 'jobs.dlq' is full), requeueing"),
    "db_error": ("error", "job {job} failed: database error, will retry"),
    "duplicate": ("warn", "job {job} already processed by another consumer; duplicate delivery ignored"),
    "net_loss": ("error", "consumer: connection to broker {mqaddr} lost: read tcp: i/o timeout; reconnecting in 2.00 seconds"),
    "gc_pressure": WEB_CAUSES["gc_pressure"],
    "cache_timeout": ("warn", "job {job}: cache: timeout reading from {chost} after 250ms; falling back to database"),
    "code_defect": ("error", "job {job} failed: Unhandled exception in {jobhandler}: {exc}"),
    "crash": ("error", "{reason}"),
}
MQ_CAUSES: dict[str, tuple[str, str]] = {
    "poison": ("warn", "message {pjob} on queue 'jobs' unacked for {pheld}s; its consumer keeps extending the "
               "visibility timeout"),
    "dlq_full": ("warn", "queue 'jobs.dlq' reached max-length {dlqmax}; rejecting dead-lettered messages (overflow=reject-publish)"),
}
LB_CAUSES: dict[str, tuple[str, str]] = {
    "tls_expired": ("error", "SSL_do_handshake() failed (SSL: error:0A000086:certificate verify failed: certificate has expired) while SSL handshaking"),
    "conn_limit": ("error", "{limit} worker_connections are not enough while connecting to upstream"),
    "no_upstream": ("error", "no live upstreams while connecting to upstream \"web_server\""),
    "hc_fail": ("warn", "health check GET {hcpath} on upstream {up} failed: HTTP 404; marking server down"),
    "upstream_timeout": ("error", "upstream timed out (110: Connection timed out) while reading response header from upstream"),
    "upstream_connect_timeout": ("error", "upstream timed out (110: Connection timed out) while connecting to upstream"),
    "port_exhaustion": ("error", "connect() to {up} failed (99: Cannot assign requested address) while connecting to upstream"),
    "enfile": ("error", "accept4() failed (23: Too many open files in system)"),
    "root_full": ("error", "open() \"/var/cache/nginx/proxy_temp/{pct}/0000{n2}\" failed (28: No space left on device) while reading upstream"),
}
CAUSE_TABLES = {"web_server": WEB_CAUSES, "database": DB_CAUSES, "cache": CACHE_CAUSES, "worker": WORKER_CAUSES,
                "message_queue": MQ_CAUSES, "load_balancer": LB_CAUSES}

CHATTER: dict[str, tuple[tuple[str, str], ...]] = {
    "web_server": (("info", "GET /api/orders 200 {took}ms rid={rid}"), ("info", "POST /api/cart 201 {took}ms rid={rid}"),
                   ("info", "GET {served} 200 1ms"), ("warn", "slow request GET /api/reports/export {slow}ms rid={rid}"),
                   ("warn", "deprecated config key 'legacy_checkout' ignored"), ("debug", "session refreshed uid={uid}")),
    "database": (("info", "LOG:  checkpoint complete: wrote {n} buffers ({pct}%)"),
                 ("info", "LOG:  automatic vacuum of table \"app.public.events\": index scans: 1"),
                 ("warn", "LOG:  checkpoints are occurring too frequently ({n2} seconds apart)"),
                 ("info", "LOG:  duration: {tookf} ms  statement: SELECT id, status FROM orders WHERE id = $1")),
    "cache": (("info", "DB saved on disk"), ("info", "Background saving started by pid {pid}"),
              ("info", "{n} changes in 60 seconds. Saving...")),
    "worker": (("info", "job {job} done in {took}ms"), ("info", "job {job} done in {took}ms"),
               ("warn", "job {job} took {slow}ms (slow export)")),
    "message_queue": (("info", "accepting AMQP connection <0.{pid}.0> ({ip}:{port})"),
                      ("info", "queue 'jobs': {n} messages ready")),
    "load_balancer": (("info", "\"GET /api/orders HTTP/1.1\" 200 {n} \"-\" upstream={up} rt={rt}"),
                      ("info", "\"POST /api/cart HTTP/1.1\" 201 {n} \"-\" upstream={up} rt={rt}")),
}
HANDLERS = ("CheckoutHandler.post", "PricingService.quote", "InvoiceJob.render")
JOB_HANDLERS = ("InvoiceJob.render", "ExportJob.run", "ReceiptMailer.send")
EXCEPTIONS = ("KeyError: 'currency'", "TypeError: unsupported operand type(s) for *: 'NoneType' and 'float'",
              "AttributeError: 'NoneType' object has no attribute 'id'")


@functools.cache
def _units() -> list[float]:
    """The shared noise table's normals folded into [0, 1), as Python floats (numpy scalar arithmetic
    is several times slower): what a render draw returns."""
    return [(x % 1.0 + 1.0) % 1.0 for x in noise_table()[1]]


_MIX = 1_000_003
_MASK = 0xFFFFFFFF


class _Rand:
    """Cheap deterministic randomness for rendering: the shared noise table indexed by a running key
    that starts from the world's own offset into it, mixed with ``parts``."""

    __slots__ = ("key", "table")

    def __init__(self, w: World, *parts: int) -> None:
        self.table = _units()
        k = w.noise_offset
        for p in parts:
            k = (k * _MIX + p) & _MASK
        self.key = k

    def u(self) -> float:
        self.key = (self.key * 1_103_515_245 + 12_345) & 0x7FFFFFFF
        return self.table[self.key % 4099]  # NOISE_TABLE_SIZE, as a literal in this hot loop

    def int(self, lo: int, hi: int) -> int:
        self.key = key = (self.key * 1_103_515_245 + 12_345) & 0x7FFFFFFF  # u(), inlined: the most common draw
        return lo + int(self.table[key % 4099] * (hi - lo))

    def hexid(self, digits: int) -> str:
        """An id of ``digits`` hex digits from the running key itself, not the 4,099-entry table: request and
        job ids drawn from the table repeated within an episode and across episodes."""
        self.key = key = (self.key * 1_103_515_245 + 12_345) & 0x7FFFFFFF
        return f"{(key * 0x9E3779B1 ^ key >> 13) & ((1 << 4 * digits) - 1):0{digits}x}"


def _held_xid(lock_pid: int, drawn: int) -> int:
    """The transaction a lock waiter waits on: the blocking backend's own, the same in every line (one
    backend holds one transaction id); a waiter with no known holder waits on the drawn one."""
    return 80_000 + lock_pid * 7_919 % 20_000 if lock_pid else drawn


_FIELD_FNS = {
    # values of the line's own time (config.Config.at, the tick's LogContext), not of the read's
    "timeout": lambda w, rep, r, t: _cfg(w, "web_server", "db_timeout_ms", t),
    "pool": lambda w, rep, r, t: _cfg(w, "web_server", "db_pool_size", t),
    "waiting": lambda w, rep, r, t: r.int(3, 60),
    "attempt": lambda w, rep, r, t: r.int(1, int(_cfg(w, "web_server", "db_retries", t)) + 2),
    "attempts": lambda w, rep, r, t: int(_cfg(w, "web_server", "db_retries", t)) + 1,
    "block": lambda w, rep, r, t: r.int(10_000, 900_000),
    "rel": lambda w, rep, r, t: 24_601 + r.int(0, 40),
    "reason": lambda w, rep, r, t: _tick_of(w, rep, t)[4] or "exited with code 1",
    "limit": lambda w, rep, r, t: (_cfg(w, "load_balancer", "max_connections", t) if rep.kind == "load_balancer"
                                   else _cfg(w, "web_server", "rate_limit_rps", t)),
    "rid": lambda w, rep, r, t: r.hexid(8),
    "host": lambda w, rep, r, t: _cfg(w, "web_server", "db_host", t),
    "chost": lambda w, rep, r, t: _cfg(w, "web_server", "cache_host", t),
    "workers": lambda w, rep, r, t: _cfg(w, "web_server", "workers", t),
    "handler": lambda w, rep, r, t: HANDLERS[r.int(0, 3)],
    "jobhandler": lambda w, rep, r, t: JOB_HANDLERS[r.int(0, 3)],
    "exc": lambda w, rep, r, t: EXCEPTIONS[r.int(0, 3)],
    "fdlimit": lambda w, rep, r, t: _cfg(w, "web_server", "max_open_files", t),
    "now": lambda w, rep, r, t: w.stamp(t),
    "ms": lambda w, rep, r, t: r.int(4, 60),
    # a served request's or finished job's duration: about the replica's median of that tick
    "took": lambda w, rep, r, t: max(1, int(_took_ms(w, rep, r, t))),
    "tookf": lambda w, rep, r, t: f"{_took_ms(w, rep, r, t):.3f}",
    "rt": lambda w, rep, r, t: f"{_took_ms(w, rep, r, t) / 1000.0:.3f}",
    "slow": lambda w, rep, r, t: r.int(1100, 2600),
    "uid": lambda w, rep, r, t: r.int(1000, 99999),
    "n": lambda w, rep, r, t: r.int(200, 9000),
    "pct": lambda w, rep, r, t: r.int(1, 9),
    "n2": lambda w, rep, r, t: r.int(12, 28),
    "pid": lambda w, rep, r, t: r.int(1000, 30000),
    "txid": lambda w, rep, r, t: _held_xid(_tick_of(w, rep, t)[3].db_lock_pid, r.int(80_000, 99_999)),
    "job": lambda w, rep, r, t: r.hexid(6),
    "ip": lambda w, rep, r, t: f"10.{_node_index_at(rep, t)}.{r.int(1, 250)}.{r.int(2, 250)}",
    "port": lambda w, rep, r, t: r.int(32768, 60999),
    "maxmem": lambda w, rep, r, t: _cfg(w, "cache", "maxmemory_mb", t),
    "policy": lambda w, rep, r, t: _cfg(w, "cache", "eviction_policy", t),
    "up": lambda w, rep, r, t: f"10.{_node_index_at(rep, t)}.0.{r.int(2, 60)}:8080",
    "slowms": lambda w, rep, r, t: int(_tick_of(w, rep, t)[3].db_lat_ms * (3.0 + r.u() * 4.0)) + 200,
    "stmt": lambda w, rep, r, t: _slow_statement(_tick_of(w, rep, t)[3]),
    "qhost": lambda w, rep, r, t: _cfg(w, "web_server", "queue_host", t),
    "mqaddr": lambda w, rep, r, t: w.state.mq_addr,  # where the workers' broker really is
    "maxr": lambda w, rep, r, t: _cfg(w, "message_queue", "max_redeliveries", t),
    "dlqmax": lambda w, rep, r, t: _cfg(w, "message_queue", "dlq_max_messages", t),
    # the poison message a consumer was stuck on at the line's time, not now (it may be dead-lettered since)
    "pjob": lambda w, rep, r, t: _poison_at(w, t) or r.hexid(6),
    "pattempt": lambda w, rep, r, t: 1 + int(_poison_held(w, t) / 7.0),
    "pheld": lambda w, rep, r, t: int(_poison_held(w, t)),
    # what the heap was at the line's tick, not now (a replica OOM-killed since has a fresh heap)
    "gcpct": lambda w, rep, r, t: min(98, int(_causes_at(w, rep, int(t // TICK_S)).get("gc_pressure", 0.1) * 100) + 40),
    "heap": lambda w, rep, r, t: int(w.buf[rep.row + R_MEM, min(int(t // TICK_S), w.col)]),
    "memlimit": lambda w, rep, r, t: rep.service.config.at("memory_limit_mb", t) or 0,
    "lockpid": lambda w, rep, r, t: _tick_of(w, rep, t)[3].db_lock_pid or r.int(1000, 30000),
    "served": lambda w, rep, r, t: w.state.health_path,
    "hcpath": lambda w, rep, r, t: _cfg(w, "load_balancer", "health_check_path", t),
}


def _took_ms(w: World, rep: Replica, r: _Rand, t: float) -> float:
    """One request's or job's duration in the tick of ``t``: the replica's recorded median, spread +-45%."""
    p50 = float(w.buf[rep.row + R_P50, int(t // TICK_S)])
    return (p50 if p50 > 0.0 else 20.0) * (0.55 + 0.9 * r.u())


def _poison_at(w: World, t: float) -> str | None:
    """The poison message a line at time ``t`` names: one stuck then (at the start of its tick, if all
    left during it), chosen by the time, so the same line always names the same one."""
    for at in (t, t - t % TICK_S):
        stuck = w.state.mq_poison_at(at)
        if stuck:
            return stuck[int(t * 7.0) % len(stuck)]
    return None


def _poison_held(w: World, t: float) -> float:
    """How long the poison message a line at ``t`` names had been stuck by then (seconds)."""
    pid = _poison_at(w, t)
    return max(0.0, t - w.state.mq_poison_since[pid]) if pid else 0.0


def _cfg(w: World, service: str, key: str, t: float) -> Any:
    """``service.key`` as it was at the line's time ``t``."""
    return w.services[service].config.at(key, t)


def _node_index_at(rep: Replica, t: float) -> int:
    """The index of the node ``rep`` ran on at time ``t`` (a drain moves pods)."""
    index = rep.node.index
    for when, before in reversed(rep.moves):
        if when <= t:
            break
        index = before
    return index


def _tick_of(w: World, rep: Replica, t: float) -> tuple[int, dict[str, float], float, LogContext, str]:
    """The cause history entry of ``rep``'s tick that holds time ``t`` (the state its lines quote); the
    present, for a tick with none (a line no cause wrote)."""
    col = int(t // TICK_S)
    return _entry_at(w, rep, col) or (col, {}, 0.0, LogContext.of(w.state), rep.crash_reason)


def _entry_at(w: World, rep: Replica, col: int) -> tuple[int, dict[str, float], float, LogContext, str] | None:
    """``rep``'s cause history entry of tick ``col``, if it had causes then."""
    # histories are appended in column order; scan from the end (queries look at recent ticks)
    for entry in reversed(w.cause_hist.get(rep.name, ())):
        if entry[0] == col:
            return entry
        if entry[0] < col:
            break
    return None


def _slow_statement(ctx: LogContext) -> str:
    """The statement a slow-query log line shows: the scan that lost its index, or the bloated table."""
    if ctx.db_missing_index:
        table, column = ctx.db_missing_index.split(".", 1)
        return f"SELECT * FROM {table} WHERE {column} = $1 ORDER BY created_at DESC LIMIT 50"
    return f"SELECT count(*) FROM {ctx.db_bloat_table} WHERE created_at > now() - interval '1 day'"


class _Fields(dict):
    """Template values computed on first use (most templates need two or three of them); a field a
    template repeats, like a lock waiter's pid, gets one value."""

    __slots__ = ("args",)  # no Python-level __init__: it would double the cost of rendering a line
    args: tuple[World, Replica, _Rand, float]

    def __missing__(self, key: str) -> object:
        value = _FIELD_FNS[key](*self.args)
        self[key] = value
        return value


def _fields(w: World, rep: Replica, r: _Rand, t: float) -> _Fields:
    fields = _Fields()
    fields.args = (w, rep, r, t)
    return fields


_LEVEL_TAG = {"debug": "DEBUG", "info": "INFO ", "warn": "WARN ", "error": "ERROR"}


#: a replica-tick that printed nothing (most of them): one shared, never-mutated list
_NO_LINES: list[tuple[float, str, str]] = []


def replica_lines(w: World, rep: Replica, col: int) -> list[tuple[float, str, str]]:
    """Every line one replica printed during tick ``col``, as (time, level, full line), cached.

    A past tick's lines never change, so they are rendered once per world and reused by every
    later search; only the current tick is recomputed (it is still being written). Callers must
    not change the list.
    """
    key = (rep.name, col)
    cache = w.log_cache
    hit = cache.get(key)
    if hit is not None:
        return hit
    lines = _render(w, rep, col)
    if col < w.col:
        cache[key] = lines
    return lines


def _replica_mix(w: World, rep: Replica) -> tuple[int, int]:
    """What :func:`_render`'s key needs besides the column: the world's part (offset, seed) and the
    replica's (index, name), mixed in closed form. ``_Rand(w, seed, col, index, len, ord)`` mixes
    each part as ``k * M + p (mod 2**32)``, so its key is ``(world * M + col) * M**3 + replica``."""
    mix = w.log_mix
    hit = mix.get(rep.name)
    if hit is None:
        name = rep.name
        world = (w.noise_offset * _MIX + w.seed) & _MASK
        hit = mix[rep.name] = (world, ((rep.index * _MIX + len(name)) * _MIX + ord(name[-1])) & _MASK)
    return hit


_MIX3 = _MIX ** 3


def _render(w: World, rep: Replica, col: int) -> list[tuple[float, str, str]]:
    """The lines of one replica-tick: sampled chatter, then each active cause's lines, by time."""
    world, replica = _replica_mix(w, rep)
    # the first draw of _Rand(w, seed, col, index, len, ord), inlined: most replica-ticks print nothing
    key = ((((world * _MIX + col) * _MIX3 + replica) & _MASK) * 1_103_515_245 + 12_345) & 0x7FFFFFFF
    chat = _units()[key % 4099] < 0.6 and _working(w, rep, col)  # sampled access logs: every other tick or so
    causes = _causes_at(w, rep, col)
    if not chat and not causes:
        return _NO_LINES
    r = _Rand.__new__(_Rand)
    r.table = _units()
    r.key = key
    t0 = col * TICK_S
    out: list[tuple[float, str, str]] = []
    if chat:  # a crash-looping or idle process prints no access logs and finishes no jobs
        chatter = CHATTER.get(rep.kind, ())
        lvl, tpl = chatter[r.int(0, len(chatter))]
        if lvl != "warn" or r.u() >= 0.6:
            out.append((t0 + r.u() * TICK_S, lvl, tpl.format_map(_fields(w, rep, r, t0))))
    if causes:
        table = CAUSE_TABLES.get(rep.kind, {})
        for cause, frac in causes.items():
            spec = table.get(cause)
            if spec is None or (frac <= 0.0005 and cause not in ("cache_down", "cache_unavailable")):
                continue
            lvl, tpl = spec
            n = 1 if frac < 0.02 or cause == "crash" else 2 if frac < 0.2 else 3
            for _ in range(n):
                t = t0 + r.u() * TICK_S
                out.append((t, lvl, tpl.format_map(_fields(w, rep, r, t))))
        if len(out) > 1:
            out.sort(key=_time_of)
    stamp, name = w.stamp, rep.name
    return [(t, lvl, f"{stamp(t)} {_LEVEL_TAG[lvl]} {name} {text}") for t, lvl, text in out]


def _time_of(line: tuple[float, str, str]) -> float:
    return line[0]


def _working(w: World, rep: Replica, col: int) -> bool:
    """Whether the replica did work in tick ``col``: served requests or jobs (its recorded rate), or,
    for the broker, which keeps its own housekeeping while nothing is published, ran at all."""
    if w.buf[rep.row + R_RPS, col] > 0.0:
        return True
    return rep.kind == "message_queue" and w.buf[rep.row + R_CPU, col] > 0.0


def _causes_at(w: World, rep: Replica, col: int) -> dict[str, float]:
    entry = _entry_at(w, rep, col)
    return entry[1] if entry else {}


def search(w: World, replicas: list[Replica], pattern: str, level: str, window_s: float, limit: int
           ) -> tuple[list[str], int, bool]:
    """Newest-first scan; returns (lines oldest-first, lines scanned, truncated)."""
    rx = re.compile(pattern, re.IGNORECASE) if pattern else None
    min_rank = _LEVEL_RANK.get(level, 0) if level else 0
    c_hi = w.col
    c_lo = max(0, c_hi - int(window_s // TICK_S) + 1)
    found: list[tuple[float, str]] = []
    scanned = 0
    for col in range(c_hi, c_lo - 1, -1):
        batch = []
        for rep in replicas:
            for t, lvl, line in replica_lines(w, rep, col):
                scanned += 1
                if _LEVEL_RANK[lvl] < min_rank:
                    continue
                if rx is None or rx.search(line):
                    batch.append((t, line))
        batch.sort()
        found.extend(reversed(batch))
        if len(found) >= limit:
            return [ln for _, ln in reversed(found[:limit])], scanned, True
    return [ln for _, ln in reversed(found)], scanned, False
