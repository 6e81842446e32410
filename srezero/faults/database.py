"""Database-layer primitives."""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from srezero.faults.app import ship
from srezero.faults.base import Fault, FaultMeta, Param, Remedy, RootCause, Signal, register, value_tokens
from srezero.faults.common import Declared, traced
from srezero.sim import changes
from srezero.sim.clock import TICK_S
from srezero.sim.rng import stable_int

if TYPE_CHECKING:
    from srezero.sim.world import World


@register
class ConnectionLeak(Fault):
    """A release forgets to return connections on an error path; each replica's pool drains.

    Leaked connections accumulate per replica until requests queue for a connection and time out.
    A restart returns the leaked connections, so it helps for a while and then the pool drains
    again; rolling back the release is the cure.
    """

    meta = FaultMeta(
        name="db_pool_exhaustion",
        layer="database",
        category="resource_exhaustion",
        targets=("service:web_server",),
        description="a release leaks database connections until the client pool is exhausted",
        params=(Param("leak_per_min", float, 1.2, lo=0.2, hi=10.0, description="connections leaked per replica per minute"),),
        signals=(Signal("search_logs", "service", pattern="timeout acquiring connection", description="pool waits",
                        alt=(traced("timeout acquiring db connection"),)),
                 Signal("query_metrics", "service", args=(("metric", "db_pool_in_use"),), description="pool pinned at its size"),
                 Signal("get_changes", "any", pattern="<version>", description="the release that started it")),
        remedies=(Remedy("rollback", "roll web_server back to the previous release; each pod keeps its leaked connections until the rollout replaces it"),),
        wrong_fix_effects="restarts give minutes of relief, then the pool drains again; a larger pool can exceed the "
                          "database's max_connections and make every replica fail",
        example="web_server", example_params=(("leak_per_min", 2.0),),
    )

    def prepare(self, w: World) -> None:
        self.service = "web_server"
        self.version = ""

    def inject(self, w: World) -> None:
        self.version = ship(w, self.service, "conn_leak", self.params["leak_per_min"]).version

    def evolve(self, w: World) -> Generator[Any, Any, None]:
        svc = w.services[self.service]
        rolled: set[str] = set()  # pods that came up on the leaking release (the rollout goes pod by pod)
        while True:
            yield w.env.timeout(TICK_S)
            if svc.deploy.defect != "conn_leak":
                continue
            step = self.params["leak_per_min"] * TICK_S / 60.0
            for rep in svc.replicas:
                if rep.state == "Running" and rep.version == self.version and rep.name not in rolled:
                    rolled.add(rep.name)  # starts partly drained, so the page comes within minutes, not hours
                    rep.leaked_conns = max(rep.leaked_conns, svc.config["db_pool_size"] * 0.5)
                if rep.state == "Running":
                    rep.leaked_conns = min(rep.leaked_conns + step, float(svc.config["db_pool_size"]) * 1.2)

    def neutralised(self, w: World) -> bool:
        # the cause is the release: once it is rolled back, the pods it leaked on recover as the
        # rollout replaces them, one at a time
        return w.services[self.service].deploy.defect != "conn_leak"

    def why_active(self, w: World) -> str:
        return f"web_server still runs {w.services['web_server'].deploy.version}, which leaks database connections"

    def root_cause(self, w: World) -> RootCause:
        return RootCause(entity="web_server", category="resource_exhaustion", also=("code_defect",),
                         detail=f"release {self.version} leaks database connections until the pool is exhausted",
                         detail_tokens=("leak", "pool", self.version, "connection"), fault=self.meta.name,
                         layer=self.meta.layer)

    def oracle_reads(self, w: World) -> list[dict[str, Any]]:
        return [{"tool": "search_logs", "args": {"service": "web_server", "pattern": "connection"}},
                {"tool": "query_metrics", "args": {"target": "web_server", "metric": "db_pool_in_use"}},
                {"tool": "get_changes", "args": {"service": "web_server"}}]

    def oracle_fix(self, w: World) -> list[dict[str, Any]]:
        return [{"tool": "rollback", "args": {"service": "web_server"}}]

    def signals(self, w: World) -> list[tuple[str, str, dict[str, Any], str]]:
        return [("search_logs", "web_server", {}, "timeout acquiring connection"),
                ("query_metrics", "web_server", {"metric": "db_pool_in_use"}, ""),
                ("get_changes", "*", {}, self.version.replace(".", r"\."))]


_SCAN_TARGETS = ("orders.customer_id", "order_items.order_id", "invoices.order_id", "customers.email")


@register
class MissingIndex(Declared):
    """A migration dropped an index (meaning to rebuild it concurrently, never did): every read
    that used it now scans the table, multiplying the database's work per query."""

    meta = FaultMeta(
        name="missing_index", layer="database", category="code_defect", targets=("service:database",),
        description="an index dropped by a migration: the queries that used it scan the whole table",
        params=(Param("index", str, "orders.customer_id", choices=_SCAN_TARGETS, per_world=True,
                      description="table.column"),
                Param("scan_cost", float, 6.0, lo=2.0, hi=30.0, description="work per read relative to healthy")),
        signals=(Signal("search_logs", "database", pattern=r"duration: .*<column> = \$1",
                        description="slow statements filtering on the unindexed column"),
                 Signal("inspect_database", "any", args=(("view", "indexes"),), pattern=r"<table>\s+40000",
                        description="sequential scans on the table, its index absent"),
                 Signal("get_changes", "any", pattern="DROP INDEX", description="the migration")),
        remedies=(Remedy("create_index", "CREATE INDEX CONCURRENTLY on the same table and column (about 45 s)"),),
        wrong_fix_effects="restarts and failovers keep the schema; indexing another column only adds load; "
                          "scaling the web tier sends more queries",
        example="database", example_params=(("scan_cost", 6.0),),
    )

    def prepare(self, w: World) -> None:
        self.index = self.params["index"]
        self.table, self.column = self.index.split(".")

    def inject(self, w: World) -> None:
        w.state.db_missing_index, w.state.db_scan_cost = self.index, self.params["scan_cost"]
        w.change("database", "migration", f"{changes.migration_id(w)}_reindex: DROP INDEX {self.table}_{self.column}_idx "
                 "(to be rebuilt CONCURRENTLY)", w.author())

    def subs(self, w: World) -> dict[str, str]:
        return {"table": self.table, "column": self.column}

    def neutralised(self, w: World) -> bool:
        st = w.state  # an index build that is under way counts: it completes on its own
        return st.db_missing_index != self.index or (st.index_build_key == self.index and w.now <= st.index_build_until)

    def why_active(self, w: World) -> str:
        return f"{self.table}.{self.column} still has no index, so its queries scan the table"

    def root_cause(self, w: World) -> RootCause:
        return RootCause(entity="database", category="code_defect",
                         detail=f"missing index on {self.index}: queries scan {self.table}",
                         detail_tokens=("index", self.column, "seq scan", "sequential"),
                         fault=self.meta.name, layer=self.meta.layer)

    def oracle_fix(self, w: World) -> list[dict[str, Any]]:
        return [{"tool": "create_index", "args": {"table": self.table, "column": self.column}}]

    def envelope_violations(self, w: World) -> list[list[dict[str, Any]]]:
        other = "status" if self.table == "orders" else "created_at" if self.table != "order_items" else "quantity"
        return [[{"tool": "create_index", "args": {"table": self.table, "column": other}}]]


@register
class LockContention(Declared):
    """Someone left a transaction open in psql after a bulk UPDATE: its row locks block every query
    that touches those rows until the statement timeout. Terminating that backend is the cure; a
    database restart or failover also ends it, at the price of an outage."""

    meta = FaultMeta(
        name="lock_contention", layer="database", category="resource_exhaustion", targets=("service:database",),
        description="a long open transaction holds row locks that block application queries",
        params=(Param("lock_ms", float, 2500.0, lo=200.0, hi=20000.0, description="mean time a query waits"),),
        signals=(Signal("search_logs", "database", pattern="Process holding the lock: <pid>",
                        description="lock waits naming the blocker"),
                 Signal("inspect_database", "any", args=(("view", "locks"),), pattern="blocking pid <pid>",
                        description="the blocking backend"),
                 Signal("query_metrics", "database", args=(("metric", "lock_waits"),), description="lock waits",
                        alt=(Signal("inspect_database", "any", args=(("view", "locks"),),
                                    pattern=r"[1-9]\d* backend\(s\) waiting"),
                             Signal("inspect_database", "any", args=(("view", "activity"),),
                                    pattern=r"Lock: transactionid")))),
        remedies=(Remedy("terminate_session", "terminate the blocking backend (its transaction rolls back)"),),
        wrong_fix_effects="terminating other sessions fails their requests; restarting the web tier changes "
                          "nothing; a database restart ends the transaction but takes the database down",
        example="database", example_params=(("lock_ms", 2500.0),), restart_heals=True,
    )

    def prepare(self, w: World) -> None:
        self.pid = 1000 + stable_int(w.seed, "lock-holder", self.index) % 60000

    def inject(self, w: World) -> None:
        st = w.state
        st.db_lock_pid, st.db_lock_ms, st.db_lock_since = self.pid, self.params["lock_ms"], w.now - 240.0
        self.primary = w.topo.db_primary()
        self.started_at = self.primary.ready_at

    def session_over(self, w: World) -> bool:
        """A restart (which sets a new ``ready_at``) or failover of the primary ended the session, whether or
        not this process has woken up to clear the lock yet: the write is judged on what it did."""
        p = self.primary
        return p.state != "Running" or p.ready_at != self.started_at or w.topo.db_primary() is not p

    def evolve(self, w: World) -> Generator[Any, Any, None]:
        while w.state.db_lock_pid == self.pid:
            yield w.env.timeout(TICK_S)
            if self.session_over(w):
                w.state.db_lock_pid, w.state.db_lock_ms = 0, 0.0

    def subs(self, w: World) -> dict[str, str]:
        return {"pid": str(self.pid)}

    def neutralised(self, w: World) -> bool:
        return w.state.db_lock_pid != self.pid or self.session_over(w)

    def why_active(self, w: World) -> str:
        return f"backend {self.pid} still holds its transaction open and blocks queries"

    def root_cause(self, w: World) -> RootCause:
        return RootCause(entity="database", category="resource_exhaustion",
                         detail=f"an idle-in-transaction session (pid {self.pid}) holds row locks",
                         detail_tokens=("lock", str(self.pid), "transaction", "blocking"),
                         fault=self.meta.name, layer=self.meta.layer)

    def oracle_fix(self, w: World) -> list[dict[str, Any]]:
        return [{"tool": "terminate_session", "args": {"pid": self.pid}}]

    def envelope_violations(self, w: World) -> list[list[dict[str, Any]]]:
        from srezero.tools.consoles import db_sessions

        other = next(r["pid"] for r in db_sessions(w) if r["user"] == "app")
        return [[{"tool": "terminate_session", "args": {"pid": other}}]]


@register
class TableBloat(Declared):
    """Autovacuum was turned off during a bulk import and never turned back on. Dead row versions
    pile up with every update; scans wade through them and the database slows by the day."""

    meta = FaultMeta(
        name="table_bloat", layer="database", category="misconfiguration", targets=("service:database",),
        description="autovacuum left disabled: dead tuples bloat a hot table until queries slow down",
        params=(Param("table", str, "events", choices=("events", "orders", "order_items", "invoices")),
                Param("dead_pct", float, 75.0, lo=40.0, hi=85.0, description="dead tuples when it starts to bite")),
        signals=(Signal("get_config", "database", pattern="autovacuum = false", description="autovacuum off",
                        alt=(Signal("inspect_database", "any", args=(("view", "tables"),),
                                    pattern="never since autovacuum was turned off"),
                             Signal("get_changes", "any", pattern=r"autovacuum: (?:True|true) -> (?:False|false)"))),
                 Signal("query_metrics", "database", args=(("metric", "dead_tuple_pct"),), description="dead tuples",
                        alt=(Signal("inspect_database", "any", args=(("view", "tables"),),  # DEAD % of 20 or more
                                    pattern=r"\s\d+\s+(?:[2-9]\d|100)\.\d\s"),)),
                 Signal("inspect_database", "any", args=(("view", "tables"),),
                        pattern=r"<table>\s+\d+\s+\d\d\.\d never since autovacuum", description="the bloated table")),
        remedies=(Remedy("set_config", "database autovacuum = true (it then works the backlog down slowly)"),
                  Remedy("vacuum", "VACUUM the table now (not FULL: that locks it); needs autovacuum back on to last")),
        wrong_fix_effects="a VACUUM alone helps until the dead tuples return; VACUUM FULL locks the table and "
                          "fails every query on it while it runs; restarts change nothing",
        example="database", example_params=(("table", "events"), ("dead_pct", 75.0)), alert="HighLatencyP99",
    )

    def prepare(self, w: World) -> None:
        db = w.services["database"]
        db.config["autovacuum"] = False
        when = w.now - float(w.rng_world.uniform(2.0, 5.0)) * 86400
        changes.record(w, when, "database", "config", changes.edit_line(w, "autovacuum", True, False), w.author())
        w.state.db_bloat_table = self.params["table"]

    def inject(self, w: World) -> None:
        w.state.db_dead_tuple_pct = max(w.state.db_dead_tuple_pct, self.params["dead_pct"])

    def subs(self, w: World) -> dict[str, str]:
        return {"table": self.params["table"]}

    def neutralised(self, w: World) -> bool:
        st = w.state  # a VACUUM of the table that is under way counts: it completes on its own
        vacuuming = w.now <= st.vacuum_until and st.vacuum_table in ("", self.params["table"])
        return bool(w.services["database"].config["autovacuum"]) and (st.db_dead_tuple_pct < 20.0 or vacuuming)

    def why_active(self, w: World) -> str:
        on = w.services["database"].config["autovacuum"]
        return f"autovacuum is {'on' if on else 'off'} and {w.state.db_dead_tuple_pct:.0f}% of rows are dead"

    def root_cause(self, w: World) -> RootCause:
        return RootCause(entity="database.autovacuum", category="misconfiguration",
                         detail=f"autovacuum disabled: {self.params['table']} is bloated with dead tuples",
                         detail_tokens=("autovacuum", "vacuum", "bloat", "dead tuple", *value_tokens(False)), aliases=("database",),
                         fault=self.meta.name, layer=self.meta.layer)

    def oracle_fix(self, w: World) -> list[dict[str, Any]]:
        return [{"tool": "set_config", "args": {"service": "database", "key": "autovacuum", "value": True}},
                {"tool": "vacuum", "args": {"table": self.params["table"]}}]

    def envelope_violations(self, w: World) -> list[list[dict[str, Any]]]:
        return [[{"tool": "vacuum", "args": {"table": self.params["table"]}}]]
