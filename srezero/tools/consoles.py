"""Service admin consoles (read tools): what psql, redis-cli and the broker's management UI show.

Every row is rendered from the world's true state (sessions, slots, tables, keys, messages) in the
words the real tools print. Healthy worlds show healthy rows with seeded names and numbers, so the
view itself never says which row is the fault; an engineer who knows what to look for finds it.
Imported by :mod:`srezero.tools.write_services`, which registers these tools.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from srezero.sim.queue import poison_held_by
from srezero.sim.rng import stable_int
from srezero.sim.topology import AUTHORS
from srezero.tools.registry import ToolOutput, tool

if TYPE_CHECKING:
    from srezero.sim.world import World
    from srezero.tools.context import ToolContext

#: table -> (indexed columns, other columns). A missing index is removed from the first tuple.
SCHEMA: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "orders": (("id", "customer_id", "created_at"), ("status", "total", "currency")),
    "order_items": (("id", "order_id", "product_id"), ("quantity", "price")),
    "customers": (("id", "email"), ("name", "created_at", "country")),
    "products": (("id", "sku"), ("name", "price", "updated_at")),
    "invoices": (("id", "order_id", "created_at"), ("status", "pdf_url")),
    "events": (("id", "created_at"), ("kind", "payload", "customer_id")),
}
LOCK_QUERY = "UPDATE orders SET status = 'archived' WHERE created_at < now() - interval '2 years'"
REPORT_QUERY = "SELECT date_trunc('day', o.created_at), sum(i.price * i.quantity) FROM orders o JOIN order_items i " \
               "ON i.order_id = o.id GROUP BY 1 ORDER BY 1"
DUMP_QUERY = "COPY public.events (id, created_at, kind, payload, customer_id) TO stdout;"
PEEK_QUERY = "SELECT status, count(*) FROM orders WHERE created_at > now() - interval '1 day' GROUP BY 1"
#: Background sessions (bits of ``ModelState.db_background_ended`` once the agent ends one)
DUMP, PEEK = 1, 2
HOT_KEYS = ("session:*", "cart:*", "product:*", "price:*", "user:*", "ratelimit:*")


def _pid(w: World, *parts: object) -> int:
    return 1000 + stable_int(w.seed, "pid", *parts) % 60000


def _age(seconds: float) -> str:
    s = int(max(0.0, seconds))
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def background_sessions(w: World) -> list[dict[str, Any]]:
    """The benign long-lived backends a production database has some of on any day: the metrics
    exporter on each node (always), a colleague's psql left idle after a look at the orders (half the
    worlds), the nightly logical backup in its long COPY (two thirds of the worlds, while it runs).
    They depend on the world alone, never on a fault, so an odd session is no culprit by itself: the
    locks and replication views say who blocks whom. Ending one is a wrong write with a cost
    (srezero.tools.write_services.terminate_session)."""
    st = w.state
    now = w.now
    primary, standby = w.topo.db_primary(), w.topo.db_standby()
    rows = [{"node": node.name, "pid": _pid(w, "exporter", node.name, st.exporter_reconnects), "user": "monitor",
             "app": "postgres_exporter", "state": "idle", "age": 0.0, "wait": "",
             "query": "SELECT * FROM pg_stat_database"} for node in (primary, standby)]
    h = stable_int(w.spec.id, w.seed, "db-background")
    if h % 2 and not st.db_background_ended & PEEK:
        user = AUTHORS[h // 2 % 8]  # a person, not a bot
        rows.append({"node": (primary, standby)[h // 16 % 2].name, "pid": _pid(w, "psql", user), "user": user,
                     "app": "psql", "state": "idle", "age": 0.0, "wait": "", "query": PEEK_QUERY})
    start = h // 32 % (w.history_cols * 30 + 900)  # from the first sample to 15 min after the last
    if h // 7 % 3 and start <= now < start + 2400 + h // 97 % 3600 and not st.db_background_ended & DUMP:
        rows.append({"node": primary.name, "pid": _pid(w, "pg_dump", start), "user": "backup", "app": "pg_dump",
                     "state": "active", "age": now - start, "wait": "", "query": DUMP_QUERY})
    return rows


def db_sessions(w: World) -> list[dict[str, Any]]:
    """Backends on the primary and the standby, as pg_stat_activity would list them."""
    st = w.state
    now = w.now
    primary, standby = w.topo.db_primary(), w.topo.db_standby()
    rows: list[dict[str, Any]] = []
    locked = st.db_lock_pid and st.db_lock_ms > 0
    for rep in w.services["web_server"].replicas + w.services["worker"].replicas:
        if rep.state != "Running":
            continue
        for i in range(2):
            busy = i == 0 and rep.rps > 0
            wait = "Lock: transactionid" if busy and locked else ""
            rows.append({"node": primary.name, "pid": _pid(w, rep.name, i), "user": "app", "app": rep.name,
                         "state": "active" if busy else "idle", "age": 0.0 if not busy else 0.02, "wait": wait,
                         "query": "UPDATE orders SET status = $1 WHERE id = $2" if busy else "COMMIT"})
    rows.append({"node": primary.name, "pid": _pid(w, "walsender", standby.name), "user": "replicator",
                 "app": standby.name, "state": "streaming", "age": 0.0, "wait": "", "query": "START_REPLICATION"})
    if locked:
        rows.append({"node": primary.name, "pid": st.db_lock_pid, "user": "ops", "app": "psql",
                     "state": "idle in transaction", "age": now - st.db_lock_since, "wait": "ClientRead",
                     "query": LOCK_QUERY})
    if now < st.vacuum_until:
        full = "FULL " if st.vacuum_full else ""
        rows.append({"node": primary.name, "pid": _pid(w, "vacuum", int(st.vacuum_until)), "user": "postgres",
                     "app": "psql", "state": "active", "age": 30.0, "wait": "", "query": f"VACUUM {full}(VERBOSE)"})
    if now < st.index_build_until:
        rows.append({"node": primary.name, "pid": _pid(w, "index", int(st.index_build_until)), "user": "postgres",
                     "app": "psql", "state": "active", "age": 30.0, "wait": "", "query": "CREATE INDEX CONCURRENTLY"})
    if st.standby_query_s > 0 and st.standby_query_pid:
        rows.append({"node": standby.name, "pid": st.standby_query_pid, "user": "reporting", "app": "metabase",
                     "state": "active", "age": now - st.standby_query_since, "wait": "", "query": REPORT_QUERY})
    rows += background_sessions(w)
    rows.sort(key=lambda r: (r["node"], r["pid"]))  # as psql orders them here: where a row is says nothing
    return rows


def _database(w: World, view: str) -> str:
    st = w.state
    dbc = w.services["database"].config
    if view == "activity":
        lines = [f"{'NODE':12} {'PID':>6} {'USER':10} {'APPLICATION':17} {'STATE':20} {'XACT AGE':9} {'WAIT':20} QUERY"]
        for r in db_sessions(w):
            lines.append(f"{r['node']:12} {r['pid']:>6} {r['user']:10} {r['app']:17} {r['state']:20} "
                         f"{_age(r['age']):9} {r['wait']:20} {r['query'][:70]}")
        primary = w.topo.db_primary()
        if primary.state == "Running":  # a pool's sessions look alike: two of each client's are listed
            lines.append(f"({primary.conns:.0f} backends on {primary.name} in all; each app client's pool is "
                         "listed by two of its sessions)")
        return "\n".join(lines)
    if view == "locks":
        if not (st.db_lock_pid and st.db_lock_ms > 0) and not (st.vacuum_full and w.now < st.vacuum_until):
            return "no backends waiting on locks"
        waiting = [r for r in db_sessions(w) if r["wait"].startswith("Lock")]
        holder = st.db_lock_pid or _pid(w, "vacuum", int(st.vacuum_until))
        return "\n".join([f"blocking pid {holder} holds RowExclusiveLock on relation orders; {len(waiting)} "
                          "backend(s) waiting:"] + [f"  pid {r['pid']} ({r['app']}) waiting {r['wait']}"
                                                    for r in waiting])
    if view == "replication":
        standby = w.topo.db_standby()
        delay = dbc["max_standby_streaming_delay_s"]
        lines = [f"standby {standby.name}: state {'streaming' if standby.state == 'Running' else 'disconnected'}, "
                 f"replay lag {st.replication_lag_s:.0f} s, max_standby_streaming_delay {delay} s"]
        if st.standby_query_s > 0 and st.replication_lag_s > 30:
            lines.append(f"  replay waiting for conflicting query pid {st.standby_query_pid} on the standby")
        lines.append(f"{'SLOT':28} {'TYPE':9} {'ACTIVE':6} RETAINED WAL")
        lines.append(f"{'standby_' + standby.name.replace('-', '_'):28} physical  true   0.1 GB")
        for name, (active, retained) in sorted(st.db_slots.items()):
            lines.append(f"{name:28} physical  {'true' if active else 'false':6} {retained:.1f} GB")
        return "\n".join(lines)
    if view == "tables":
        lines = [f"{'TABLE':12} {'ROWS':>10} {'DEAD %':>7} LAST AUTOVACUUM"]
        for table in SCHEMA:
            base = 1 + stable_int(w.seed, table) % 40
            dead = st.db_dead_tuple_pct if table == st.db_bloat_table else 1.0 + stable_int(w.seed, table, "d") % 30 / 10
            last = "never since autovacuum was turned off" if not dbc["autovacuum"] else \
                f"{w.stamp(w.now - 600 - stable_int(w.seed, table, 'v') % 3000)}"
            lines.append(f"{table:12} {base * 250_000:>10} {dead:>7.1f} {last}")
        return "\n".join(lines)
    lines = [f"{'TABLE':12} {'SEQ SCANS/MIN':>14}  INDEXES"]
    for table, (indexed, _) in SCHEMA.items():
        cols = [c for c in indexed if f"{table}.{c}" != st.db_missing_index]
        scans = 40_000 if st.db_missing_index.startswith(table + ".") else 2 + stable_int(w.seed, table, "s") % 20
        names = ", ".join(f"{table}_pkey" if c == "id" else f"{table}_{c}_idx" for c in cols)
        lines.append(f"{table:12} {scans:>14}  {names}")
    return "\n".join(lines)


@tool("read", 10)
def inspect_database(ctx: ToolContext,
                     view: Annotated[Literal["activity", "locks", "replication", "tables", "indexes"],
                                     "activity: sessions; locks: who blocks whom; replication: standby lag and "
                                     "slots; tables: size and dead tuples; indexes: indexes and sequential scans"]
                     ) -> ToolOutput:
    """Inspect the database like psql would: view 'activity' (sessions), 'locks', 'replication' (standbys and
    slots), 'tables' or 'indexes'."""
    return ToolOutput(f"database {view}:\n" + _database(ctx.world, view), echo_lines=1)


def _cache_clients(w: World) -> int:
    """Eight connections per running web replica, and four per worker while a worker release reads the
    cache (workers do not use it otherwise)."""
    def running(kind: str) -> int:
        return sum(1 for r in w.services[kind].replicas if r.state == "Running")

    return running("web_server") * 8 + (running("worker") * 4 if w.state.workers_read_cache else 0)


def _cache(w: World, section: str) -> str:
    cache = w.services["cache"]
    rep = cache.replicas[0]
    cc = cache.config
    st = w.state
    if rep.state != "Running":
        return f"Could not connect to Redis at {st.cache_addr}: Connection refused ({rep.name} is {rep.state})"
    if section == "hotkeys":
        shares = [(k, 0.02 + stable_int(w.seed, k) % 100 / 1000) for k in HOT_KEYS]
        if st.cache_hot_key > 0:
            shares.append((st.cache_hot_key_name, st.cache_hot_key))
        total = sum(s for _, s in shares)
        lines = ["# Scanning the entire keyspace to find hot keys (sampled LFU counters)"]
        for key, share in sorted(shares, key=lambda x: -x[1]):
            lines.append(f"hot key found: {key:28} ops share {share / total:6.1%}")
        return "\n".join(lines)
    row = w.row_of
    hit = float(w.vals[row[("cache", "hit_ratio")]])
    evictions = float(w.vals[row[("cache", "evictions_per_s")]])
    used = float(w.vals[row[("cache", "memory_used_mb")]])
    up = rep.uptime_s(w.now)  # the server process's (its keyspace warms separately)
    auth_fails = 0 if rep.err_causes.get("auth_fail") is None else int(w.services["web_server"].rps * 30)
    return "\n".join([
        "# Server", f"uptime_in_seconds:{int(up)}", "# Memory", f"used_memory_human:{used:.0f}M",
        f"maxmemory_human:{cc['maxmemory_mb']}M", f"maxmemory_policy:{cc['eviction_policy']}",
        "# Stats", f"keyspace_hit_ratio:{hit:.3f}", f"evicted_keys_per_sec:{evictions:.0f}",
        f"rejected_auth_last_30s:{auth_fails}", f"instantaneous_ops_per_sec:{rep.rps:.0f}",
        "# Clients", f"connected_clients:{_cache_clients(w)}",
    ])


@tool("read", 10)
def inspect_cache(ctx: ToolContext,
                  section: Annotated[Literal["info", "hotkeys"], "info: memory, hit ratio, evictions, auth; "
                                     "hotkeys: the keys taking the most operations"] = "info") -> ToolOutput:
    """Inspect the cache like redis-cli would: INFO (memory, hits, evictions, auth failures) or --hotkeys."""
    return ToolOutput(f"cache {section}:\n" + _cache(ctx.world, section), echo_lines=1)


def _queue(w: World, view: str) -> str:
    st = w.state
    mqc = w.services["message_queue"].config
    row = w.row_of
    workers = [r for r in w.services["worker"].replicas if r.state == "Running"]
    prefetch = min(int(mqc["max_inflight"]), int(w.services["worker"].config["concurrency"]))
    if view == "queues":
        return "\n".join([
            f"{'QUEUE':10} {'READY':>8} {'UNACKED':>8} {'CONSUMERS':>9} {'PUBLISH/S':>10} {'DELIVER/S':>10} "
            f"{'REDELIVER/S':>12} MAX-LENGTH",
            f"{'jobs':10} {st.mq_depth:>8.0f} {len(workers) * prefetch:>8} {len(workers):>9} "
            f"{w.vals[row[('message_queue', 'publish_rate')]]:>10.1f} {st.mq_consumed:>10.1f} "
            f"{w.vals[row[('message_queue', 'redeliveries_per_s')]]:>12.1f} -",
            f"{'jobs.dlq':10} {st.mq_dlq:>8.0f} {0:>8} {0:>9} {'-':>10} {'-':>10} {'-':>12} "
            f"{mqc['dlq_max_messages']} (overflow reject-publish)",
            f"policy: visibility_timeout {mqc['visibility_timeout_s']} s, max_redeliveries {mqc['max_redeliveries']}, "
            f"prefetch {mqc['max_inflight']}"])
    if view == "messages":
        lines = [f"{'MESSAGE':8} {'DELIVERIES':>10} {'AGE':>9} {'STATE':8} TYPE"]
        for pid in st.mq_poison_ids:  # in flight: a consumer holds it (and keeps extending its visibility)
            deliveries = 1 + st.mq_poison_redelivered.get(pid, 0)
            age = w.now - st.mq_poison_since.get(pid, w.now)
            lines.append(f"{pid:8} {deliveries:>10} {_age(age):>9} {'unacked':8} invoice.render")
        # the head of a FIFO queue is its oldest message: as old as the backlog (queue_age_s)
        oldest = st.mq_age_s if st.mq_depth >= 1 else 0.0
        for i, mid in enumerate(head_message_ids(w, int(w.now // 30))):
            lines.append(f"{mid:8} {1:>10} {_age(max(0.0, oldest - i * 0.4)):>9} {'ready':8} "
                         f"{('email.send', 'order.sync', 'invoice.render')[i]}")
        return "\n".join(lines)
    # the client acks in batches (or on a timer): a prefetch below the batch waits for the timer
    lines = [f"{'CONSUMER':16} {'PREFETCH':>8} {'UNACKED':>8} {'ACKS/S':>8} ACK-BATCH"]
    share = st.mq_consumed / max(1, len(workers))
    batch = f"{st.mq_ack_batch} msgs or {st.mq_ack_flush_s:g} s"
    for rep in workers:
        stuck = bool(poison_held_by(w, rep))  # it retries a poison message in process and acks nothing
        lines.append(f"{rep.name:16} {mqc['max_inflight']:>8} {prefetch:>8} {0.0 if stuck else share:>8.1f} {batch}")
    return "\n".join(lines)


def head_message_ids(w: World, bucket: int) -> list[str]:
    """Ids of the ordinary messages at the head of 'jobs' during one 30 s bucket (the head moves on)."""
    return [f"{stable_int(w.seed, 'msg', bucket, i) % 16**6:06x}" for i in range(3)]


@tool("read", 10)
def inspect_queue(ctx: ToolContext,
                  view: Annotated[Literal["queues", "messages", "consumers"], "queues: depth, rates, dead letters; "
                                  "messages: the head of the queue and the messages consumers hold, with "
                                  "delivery counts and ages; consumers: per worker"]
                  = "queues") -> ToolOutput:
    """Inspect the message broker like its management UI: view 'queues', 'messages' or 'consumers'."""
    return ToolOutput(f"message_queue {view}:\n" + _queue(ctx.world, view), echo_lines=1)
