"""Database-layer primitives."""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from srezero.faults.app import ship
from srezero.faults.base import Fault, FaultMeta, Param, Remedy, RootCause, Signal, register
from srezero.sim.model import TICK_S

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
        signals=(Signal("search_logs", "service", pattern="timeout acquiring connection", description="pool waits"),
                 Signal("query_metrics", "service", args=(("metric", "db_pool_in_use"),), description="pool pinned at its size"),
                 Signal("get_changes", "any", pattern="<version>", description="the release that started it")),
        remedies=(Remedy("rollback", "roll web_server back to the previous release"),),
        wrong_fix_effects="restarts give minutes of relief, then the pool drains again; a larger pool can exceed the "
                          "database's max_connections and make every replica fail",
    )

    def prepare(self, w: World) -> None:
        self.service = "web_server"
        self.version = ""

    def inject(self, w: World) -> None:
        svc = w.services[self.service]
        self.version = ship(w, self.service, "conn_leak", self.params["leak_per_min"], "retry payment capture inline").version
        # start partly drained so the page comes within minutes, not hours
        for rep in svc.replicas:
            rep.leaked_conns = svc.config["db_pool_size"] * 0.5

    def evolve(self, w: World) -> Generator[Any, Any, None]:
        svc = w.services[self.service]
        while True:
            yield w.env.timeout(TICK_S)
            if svc.deploy.defect != "conn_leak":
                continue
            step = self.params["leak_per_min"] * TICK_S / 60.0
            for rep in svc.replicas:
                if rep.state == "Running":
                    rep.leaked_conns = min(rep.leaked_conns + step, float(svc.config["db_pool_size"]) * 1.2)

    def neutralised(self, w: World) -> bool:
        svc = w.services[self.service]
        return svc.deploy.defect != "conn_leak" and all(r.leaked_conns < 1.0 for r in svc.replicas)

    def why_active(self, w: World) -> str:
        return f"web_server still runs {w.services['web_server'].deploy.version}, which leaks database connections"

    def root_cause(self, w: World) -> RootCause:
        return RootCause(entity="web_server", category="resource_exhaustion",
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
