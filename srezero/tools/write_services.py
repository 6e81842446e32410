"""Write tools specific to service-level faults (certificates, queues, database sessions...).

Declared with ``@tool`` like every other tool; :data:`srezero.tools.registry.TOOL_MODULES` loads this
module. Keep each tool's consequences real: see the module docstring of :mod:`srezero.tools.write`.
Maintenance takes simulated time and load (an index build, a VACUUM); a VACUUM FULL locks its table;
terminating the wrong session fails that client's work; purging a queue destroys messages.
The read consoles these tools pair with live in :mod:`srezero.tools.consoles` (imported here).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Annotated, Any, Literal

from srezero.sim.replication import start_report
from srezero.tools import consoles
from srezero.tools.consoles import SCHEMA, db_sessions, head_message_ids
from srezero.tools.registry import ToolError, ToolOutput, tool
from srezero.tools.write import AGENT

if TYPE_CHECKING:
    from srezero.sim.world import World
    from srezero.tools.context import ToolContext

__all__ = ["consoles"]
REPORT_RERUN_S = 240.0  # the reporting job re-runs a terminated query after this long


def _later(w: World, delay: float, fn: Callable[[], None]) -> None:
    def run() -> Generator[Any, Any, None]:
        yield w.env.timeout(delay)
        fn()

    w.env.process(run())


@tool("write", 10)
def terminate_session(ctx: ToolContext,
                      pid: Annotated[int, "backend pid, as inspect_database('activity') lists it"]) -> ToolOutput:
    """Terminate a database backend (pg_terminate_backend). Its open transaction rolls back."""
    w = ctx.world
    st = w.state
    row = next((r for r in db_sessions(w) if r["pid"] == pid), None)
    if row is None:
        raise ToolError(f"no database backend with pid {pid}; inspect_database(view='activity') lists them")
    w.change("database", "terminate", f"pg_terminate_backend({pid}) ({row['user']}/{row['app']})", AGENT)
    # one message for every backend: the tool reports what it did, never whether it was the culprit
    done = ToolOutput(f"terminated pid {pid} ({row['user']}/{row['app']}); its transaction, if any, rolled back")
    if pid == st.db_lock_pid:
        st.db_lock_pid, st.db_lock_ms = 0, 0.0
        return done
    if pid == st.standby_query_pid:
        held = st.standby_query_s
        st.standby_query_s, st.standby_query_pid = 0.0, 0

        def rerun() -> None:  # the dashboard refresh runs the report again
            start_report(w, held)

        _later(w, REPORT_RERUN_S, rerun)
        return done
    if row["query"].startswith("VACUUM"):
        st.vacuum_until, st.vacuum_full = -1.0, False
    elif row["query"].startswith("CREATE INDEX"):
        st.index_build_until = -1.0
    elif row["user"] == "app":
        rep = w.topo.replicas.get(row["app"])
        w.collateral_errors += (rep.rps if rep is not None else 0.0) * 0.2  # its in-flight requests fail
    elif row["app"] == "postgres_exporter":  # it reconnects at once: a new backend, one failed scrape
        st.exporter_reconnects += 1
    elif row["app"] == "pg_dump":  # the night's logical backup is lost; it runs again tomorrow
        st.db_background_ended |= consoles.DUMP
        w.emit("Warning", "BackupFailed", "database", "nightly logical backup failed: pg_dump: error: Dumping the "
               'contents of table "events" failed: server closed the connection unexpectedly')
    elif row["query"] == consoles.PEEK_QUERY:  # a colleague's idle session: they lose their prompt, nothing else
        st.db_background_ended |= consoles.PEEK
    else:
        st.replication_lag_s += 20.0  # the walsender restarts; the standby reconnects
    return done


def _column(table: str, column: str) -> None:
    if table not in SCHEMA:
        raise ToolError(f"unknown table {table!r}; tables: {', '.join(SCHEMA)}")
    indexed, other = SCHEMA[table]
    if column not in indexed + other:
        raise ToolError(f"table {table} has no column {column!r}; columns: {', '.join(indexed + other)}")


@tool("write", 15)
def create_index(ctx: ToolContext, table: Annotated[str, "table to index"],
                 column: Annotated[str, "column to index"]) -> ToolOutput:
    """Build an index (CREATE INDEX CONCURRENTLY IF NOT EXISTS). It takes about 45 s of extra database load."""
    w = ctx.world
    st = w.state
    _column(table, column)
    key = f"{table}.{column}"
    if column in SCHEMA[table][0] and column != "id" and key != st.db_missing_index:
        # Postgres skips it with a notice (an "id" column is the primary key, whose index has another
        # name, so that one builds a redundant index). Still a write the agent made: like any write, it is judged
        # (a wrong fix, unless it is part of one), so trying columns one by one to see which index
        # is missing costs what a shotgun costs, not what a typo does.
        return ToolOutput(f'NOTICE:  relation "{table}_{column}_idx" already exists, skipping')
    if w.now < st.index_build_until:
        raise ToolError("another CREATE INDEX CONCURRENTLY is still running; wait for it to finish")
    until = w.now + 45.0
    st.index_build_until, st.index_build_key = until, key

    def done() -> None:
        if st.index_build_until != until:
            return  # cancelled
        if st.db_missing_index == key:
            st.db_missing_index = ""
        w.emit("Normal", "IndexBuilt", "database", f"index {table}_{column}_idx is valid")

    _later(w, 45.0, done)
    w.change("database", "index", f"CREATE INDEX CONCURRENTLY {table}_{column}_idx ON {table} ({column})", AGENT)
    return ToolOutput(f"building {table}_{column}_idx concurrently (about 45 s; the database works harder meanwhile)")


@tool("write", 15)
def vacuum(ctx: ToolContext, table: Annotated[str, "table to vacuum; empty for every table"] = "",
           full: Annotated[bool, "VACUUM FULL: rewrites the table and locks it exclusively while it runs"] = False
           ) -> ToolOutput:
    """Run VACUUM to reclaim dead tuples (a few minutes of extra I/O). FULL locks the table meanwhile."""
    w = ctx.world
    st = w.state
    if table and table not in SCHEMA:
        raise ToolError(f"unknown table {table!r}; tables: {', '.join(SCHEMA)}")
    if w.now < st.vacuum_until:
        raise ToolError("a VACUUM is already running; wait for it to finish")
    took = (60.0 if table else 180.0) + (60.0 if full else 0.0)
    until = w.now + took
    st.vacuum_until, st.vacuum_full, st.vacuum_table = until, full, table

    def done() -> None:
        if st.vacuum_until != until:
            return  # cancelled
        st.vacuum_full = False
        if table in ("", st.db_bloat_table):
            st.db_dead_tuple_pct = min(st.db_dead_tuple_pct, 2.5)

    _later(w, took, done)
    what = f"VACUUM {'FULL ' if full else ''}{table or '(all tables)'}"
    w.change("database", "vacuum", what, AGENT)
    return ToolOutput(f"{what} started (about {took:.0f} s)")


@tool("write", 10)
def drop_replication_slot(ctx: ToolContext,
                          slot: Annotated[str, "slot name, as inspect_database('replication') lists it"]) -> ToolOutput:
    """Drop a replication slot. The WAL it retained is recycled; whoever consumed it can no longer resume."""
    w = ctx.world
    st = w.state
    standby = w.topo.db_standby()
    own = "standby_" + standby.name.replace("-", "_")
    if slot == own:
        w.destroyed.append(f"dropped the standby's replication slot {slot}; {standby.name} must be rebuilt")
        w.emit("Warning", "ReplicationBroken", standby.name,
               "FATAL:  could not receive data from WAL stream: requested WAL segment has already been removed")
        w.change("database", "replication", f"dropped replication slot {slot}", AGENT)
        return ToolOutput(f"dropped replication slot {slot}")
    if slot not in st.db_slots:
        raise ToolError(f"replication slot \"{slot}\" does not exist; slots: {', '.join([own, *sorted(st.db_slots)])}")
    retained = st.db_slots.pop(slot)[1]
    disk = w.topo.db_primary().node.data_disk
    disk.used_gb = max(disk.used_gb * 0.2, disk.used_gb - retained)
    w.change("database", "replication", f"dropped replication slot {slot}", AGENT)
    return ToolOutput(f"dropped replication slot {slot}; {retained:.0f} GB of retained WAL will be recycled")


@tool("write", 20, target_arg="service")
def renew_certificate(ctx: ToolContext,
                      service: Annotated[str, "service whose serving certificate to renew"] = "load_balancer"
                      ) -> ToolOutput:
    """Request and install a new serving certificate (about 15 s for issuance and reload)."""
    w = ctx.world
    if service != "load_balancer":
        raise ToolError("only the load_balancer terminates TLS")

    def installed() -> None:
        w.services["load_balancer"].config["tls_cert_days_left"] = 90
        w.emit("Normal", "CertificateIssued", "load_balancer", "certificate issued and reloaded; valid for 90 days")

    _later(w, 15.0, installed)
    w.change("load_balancer", "certificate", "requested a new serving certificate", AGENT)
    return ToolOutput("certificate requested; it is installed when issuance completes (about 15 s)")


@tool("write", 10)
def dead_letter_message(ctx: ToolContext,
                        message_id: Annotated[str, "message id, as inspect_queue('messages') lists it"]) -> ToolOutput:
    """Move one message from 'jobs' to the dead-letter queue 'jobs.dlq' (kept for inspection)."""
    w = ctx.world
    st = w.state
    bucket = int(w.now // 30)
    listed = set(head_message_ids(w, bucket)) | set(head_message_ids(w, bucket - 1))
    if message_id not in st.mq_poison_ids and message_id not in listed:
        raise ToolError(f"no message {message_id!r} waiting in queue 'jobs' (it may already have been processed)")
    cap = w.services["message_queue"].config["dlq_max_messages"]
    if st.mq_dlq + 1 > cap:
        raise ToolError(f"queue 'jobs.dlq' is at its max-length ({cap}); the message stays in 'jobs'")
    if message_id in st.mq_poison_ids:
        st.mq_poison_gone[message_id] = w.now
        st.mq_poison = len(st.mq_poison_ids)
    else:  # an ordinary job: it will not run until someone re-drives the dead-letter queue
        st.mq_depth = max(0.0, st.mq_depth - 1.0)
    st.mq_dlq += 1
    w.change("message_queue", "dead-letter", f"moved message {message_id} to jobs.dlq", AGENT)
    return ToolOutput(f"message {message_id} moved to jobs.dlq")


@tool("write", 10)
def purge_queue(ctx: ToolContext,
                queue: Annotated[Literal["jobs", "jobs.dlq"], "queue to empty"]) -> ToolOutput:
    """Delete every message in a queue. Destructive: the messages are gone for good."""
    w = ctx.world
    st = w.state
    if queue == "jobs":
        lost = st.mq_depth + st.mq_poison + st.mq_cycling
        st.mq_depth, st.mq_cycling, st.mq_poison = 0.0, 0.0, 0
        st.mq_poison_gone.update(dict.fromkeys(st.mq_poison_ids, w.now))
    else:
        lost, st.mq_dlq = st.mq_dlq, 0.0
    st.mq_lost += lost
    if lost >= 1:
        w.destroyed.append(f"purged {lost:.0f} message(s) from {queue}")
    w.change("message_queue", "purge", f"purged {queue} ({lost:.0f} messages)", AGENT)
    return ToolOutput(f"purged {lost:.0f} message(s) from {queue}")
