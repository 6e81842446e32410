"""Application config primitives: one named setting pushed outside its safe envelope.

Each bad value is derived from *this* world's load and limits (a timeout below the database's
latency, a pool that overruns ``max_connections``), so it bites in every seed; the safe envelope
in :mod:`srezero.faults.envelopes` is relative in the same way. ``bad_config`` stays the generic one.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from srezero.faults.base import FaultMeta, Param, Remedy, Signal, register
from srezero.faults.common import CFG, CHANGE, TunedConfig, baseline, esc, healthy_db_lat, live, traced
from srezero.faults.envelopes import healthy
from srezero.sim.config import ENDPOINTS

if TYPE_CHECKING:
    from srezero.sim.world import World

_RESTARTS = "restarts reload the same value"


def _web_rps(w: World) -> float:
    """Requests per second one web replica receives when healthy."""
    return baseline(w, "load_balancer", "request_rate") / max(1, len(live(w, "web_server")))


@register
class BadTimeout(TunedConfig):
    """The database client timeout is set below the database's normal latency (a units slip: 3 s
    written as 3 ms). Most queries are cancelled client-side, and each retry adds load."""

    meta = FaultMeta(
        name="bad_timeout", layer="application", category="misconfiguration", targets=("service:web_server",),
        description="the database client timeout set below the database's normal query latency",
        params=(Param("factor", float, 0.7, lo=0.2, hi=0.95,
                      description="the timeout as a multiple of the database's mean latency at injection"),),
        signals=(CFG, CHANGE, Signal("search_logs", "service", pattern="query canceled after",
                                    description="client-side query cancellations", alt=(traced("db query timeout"),))),
        remedies=(Remedy("set_config", "db_timeout_ms between 40x the database's base latency and 30000 ms; "
                         "a value near the latency still cancels the slow half, a huge one lets stuck queries "
                         "hold connections"),),
        wrong_fix_effects=f"{_RESTARTS}; scaling adds replicas that time out the same way; raising the "
                          "database's statement_timeout changes nothing",
        example="web_server", example_params=(("factor", 0.7),),
    )
    key = "db_timeout_ms"
    reason = "fail fast on slow queries"

    def compute_bad(self, w: World) -> Any:
        return max(1, int(healthy_db_lat(w) * self.params["factor"]))

    def probes(self, w: World) -> tuple[Any, Any]:
        return max(2, int(healthy_db_lat(w) * 1.1)), 120_000


@register
class BadPoolSize(TunedConfig):
    """The per-replica database pool is raised so far that all replicas together open more
    connections than the database accepts: new connections fail with "too many clients"."""

    meta = FaultMeta(
        name="bad_pool_size", layer="application", category="misconfiguration", targets=("service:web_server",),
        description="a database pool size whose total across replicas exceeds the database's max_connections",
        params=(Param("factor", float, 1.6, lo=1.1, hi=4.0,
                      description="total pool connections as a multiple of max_connections"),),
        signals=(CFG, CHANGE, Signal("search_logs", "service", pattern="too many clients",
                                    description="connections refused by the database",
                                    alt=(traced("too many clients"),)),
                 Signal("query_metrics", "database", args=(("metric", "connections"),),
                        description="connections pinned at max_connections")),
        remedies=(Remedy("set_config", "db_pool_size with replicas x pool + workers x 4 + 6 <= max_connections "
                         "(and >= 4), or raise database max_connections to fit (at most 2000)"),),
        wrong_fix_effects=f"{_RESTARTS}; scaling web_server opens even more connections",
        example="web_server", example_params=(("factor", 1.6),),
    )
    key = "db_pool_size"
    reason = "more headroom for bursts"

    def _limit(self, w: World) -> int:
        return int(w.services["database"].config["max_connections"])

    def compute_bad(self, w: World) -> Any:
        return math.ceil(self._limit(w) * self.params["factor"] / len(live(w, "web_server")))

    def probes(self, w: World) -> tuple[Any, Any]:
        return 2, math.ceil(self._limit(w) / len(live(w, "web_server"))) + 1

    def prepare(self, w: World) -> None:
        super().prepare(w)
        self.original_max = w.services["database"].config["max_connections"]

    def neutralised(self, w: World) -> bool:
        return super().neutralised(w) and healthy(w, "database", "max_connections", self.original_max)


@register
class BadRateLimit(TunedConfig):
    """A per-replica rate limit below the traffic each replica carries: the excess gets 429s."""

    meta = FaultMeta(
        name="bad_rate_limit", layer="application", category="misconfiguration", targets=("service:web_server",),
        description="a per-replica rate limit set below the request rate each replica serves",
        params=(Param("ratio", float, 0.5, lo=0.1, hi=0.9, description="limit as a share of the per-replica rate"),),
        signals=(CFG, CHANGE, Signal("search_logs", "service", pattern="rate limit .* exceeded",
                                    description="requests rejected with 429", alt=(traced("429 rate limited"),))),
        remedies=(Remedy("set_config", "rate_limit_rps = 0 (off) or at least 1.5x the peak per-replica rate"),),
        wrong_fix_effects=f"{_RESTARTS}; scaling helps only in proportion and costs capacity",
        example="web_server", example_params=(("ratio", 0.5),),
    )
    key = "rate_limit_rps"
    reason = "protect the API from scrapers"

    def compute_bad(self, w: World) -> Any:
        return max(1, int(_web_rps(w) * self.params["ratio"]))

    def probes(self, w: World) -> tuple[Any, Any]:
        return max(1, int(_web_rps(w) * 0.95)), None


@register
class BadWorkerCount(TunedConfig):
    """Too few request threads per replica: requests queue for a thread and the excess is shed."""

    meta = FaultMeta(
        name="bad_worker_count", layer="application", category="misconfiguration", targets=("service:web_server",),
        description="request worker threads per replica set below what the traffic needs",
        params=(Param("ratio", float, 0.4, lo=0.05, hi=0.8,
                      description="threads as a share of those busy at the current load"),),
        signals=(CFG, CHANGE, Signal("search_logs", "service", pattern="worker pool saturated",
                                    description="requests shed with 503", alt=(traced("503 shed"),))),
        remedies=(Remedy("set_config", "workers between 8 and 256 per replica (each thread costs memory)"),),
        wrong_fix_effects=f"{_RESTARTS}; scaling helps only in proportion; raising cpu_limit changes nothing",
        example="web_server", example_params=(("ratio", 0.4),),
    )
    key = "workers"
    reason = "reduce memory per pod"

    def _busy(self, w: World) -> float:
        reps = w.services["web_server"].replicas
        return max((baseline(w, r.name, "request_rate") * baseline(w, r.name, "latency_p50_ms") / 800.0
                    for r in reps), default=1.0)

    def compute_bad(self, w: World) -> Any:
        return max(1, int(self._busy(w) * self.params["ratio"]))

    def probes(self, w: World) -> tuple[Any, Any]:
        return max(1, min(7, int(self._busy(w) * 0.9))), 4096


#: config key -> (dependency, the log line of a failing call)
_HOSTS = {"db_host": ("database", "connection to .* failed"),
          "cache_host": ("cache", "falling back to database"),
          "queue_host": ("message_queue", "publish to .* failed")}


def _elsewhere(w: World, dependency: str, offset: int) -> str:
    """An address this dependency has in other worlds but not in this one (a copied endpoint)."""
    pool = ENDPOINTS[dependency]
    own = pool.index(w.topo.conventions.endpoints[dependency])
    return pool[(own + offset) % len(pool)]


@register
class BadHost(TunedConfig):
    """A dependency address that points nowhere in this environment (an endpoint copied from another
    environment, a migration's new name set too early, a wrong port): every call to it fails."""

    meta = FaultMeta(
        name="bad_host", layer="application", category="misconfiguration", targets=("service:web_server",),
        description="a dependency address (host or port) in the web tier's config points nowhere",
        params=(Param("key", str, "db_host", choices=tuple(_HOSTS), description="which dependency address"),),
        signals=(CFG, CHANGE, Signal("search_logs", "service", pattern="<symptom>",
                                    description="calls to the dependency failing")),
        remedies=(Remedy("set_config", "the address the dependency really has in this environment (the value "
                         "before the change)"),),
        wrong_fix_effects=f"{_RESTARTS}; restarting the dependency itself changes nothing",
        example="web_server", example_params=(("key", "db_host"),),
    )
    reason = "point at the new endpoint"

    def compute_bad(self, w: World) -> Any:
        return _elsewhere(w, _HOSTS[self.key][0], 1)

    def probes(self, w: World) -> tuple[Any, Any]:
        return _elsewhere(w, _HOSTS[self.key][0], 2), None

    def subs(self, w: World) -> dict[str, str]:
        return {**super().subs(w), "value": esc(repr(self.bad_value(w))), "symptom": _HOSTS[self.key][1]}
