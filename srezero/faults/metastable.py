"""Metastable failure modes: a latent weakness plus a transient trigger latch the system into a bad state.

The trigger ends; the degraded state does not, because the overload sustains itself. Only the
declared mitigation (removing the weakness) lets the system drain back to health, and a
``relapse_probe`` replays the trigger during verification to prove the weakness is gone. The
retry storm lives in :mod:`srezero.faults.app`; this module adds the cache stampede.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from srezero.faults.base import Fault, FaultMeta, Param, Remedy, RootCause, Signal, register, value_tokens
from srezero.sim import changes
from srezero.sim.cache import CACHE_WARM_S
from srezero.sim.clock import TICK_S

if TYPE_CHECKING:
    from srezero.sim.world import World


def _warmth(w: World) -> float:
    return 1.0 - math.exp(-max(0.0, w.now - w.state.cache_ready_since) / CACHE_WARM_S)


def _cool(w: World, share: float) -> None:
    """Make ``share`` of the cache's keys cold at once (the cache keeps running)."""
    target = max(0.01, min(_warmth(w), 1.0 - share))
    w.state.cache_ready_since = w.now + CACHE_WARM_S * math.log(1.0 - target)


@register
class CacheStampede(Fault):
    """Metastable: request coalescing is off; a resharding that moves a share of keys sets off a herd.

    With coalescing off, every request that misses a cold key queries the database itself. A
    resharding makes a share of keys cold at once; the herd overloads the database, queries pass
    the client timeout, the cache fills that would have ended the herd never land, and the miss
    ratio stays high long after the resharding finished. Turning coalescing back on lets one query
    per key through; the cache warms and the database recovers. Restarting the cache makes it
    worse (every key goes cold), and scaling the web tier adds herd members.
    """

    meta = FaultMeta(
        name="cache_stampede",
        layer="failure_mode",
        category="misconfiguration",
        targets=("service:web_server",),
        description="cache request coalescing disabled; a partial cache flush sets off a self-sustaining "
                    "thundering herd on the database",
        params=(Param("flush_frac", float, 0.15, lo=0.14, hi=0.2, description="share of keys made cold by the trigger"),),
        signals=(Signal("get_config", "service", (), r"cache_coalescing = false", "coalescing off"),
                 Signal("query_metrics", "cache", (("metric", "hit_ratio"),), "", "hit ratio stuck low"),
                 Signal("query_metrics", "database", (("metric", "request_rate"),), "", "the herd at the database"),
                 Signal("get_changes", "any", (), "cache_coalescing", "the change that disabled it")),
        remedies=(Remedy("set_config", "web_server cache_coalescing = true (one database query per cold key); the "
                                       "cache then warms within minutes"),),
        wrong_fix_effects="restarting or flushing the cache makes every key cold and deepens the herd; scaling the "
                          "web tier adds more concurrent misses; restarts alone re-latch at the next resharding",
        example="web_server",
        alert="HighErrorRate",
    )

    def prepare(self, w: World) -> None:
        web = w.services["web_server"]
        web.config["cache_coalescing"] = False
        when = -float(w.rng_world.uniform(1.0, 2.5)) * 86400
        changes.record(w, when, "web_server", "config", changes.edit_line(w, "cache_coalescing", True, False),
                       w.author())

    def inject(self, w: World) -> None:
        _cool(w, self.params["flush_frac"])
        w.emit("Normal", "Resharded", "cache", f"cluster rebalanced: {self.params['flush_frac']:.0%} of slots moved; "
                                               "moved keys start cold")

    def relapse_probe(self, w: World, delay: float) -> Generator[Any, Any, None]:
        """Replay the resharding during verification, on a cache that has warmed up again (as the
        first one hit a warm cache): with coalescing on, the cache just refills."""
        yield w.env.timeout(delay)
        for _ in range(10):
            if _warmth(w) >= 0.9:
                break
            yield w.env.timeout(TICK_S)
        _cool(w, self.params["flush_frac"])

    def neutralised(self, w: World) -> bool:
        return bool(w.services["web_server"].config.get("cache_coalescing")) and w.state.db_timeout_frac < 0.05

    def why_active(self, w: World) -> str:
        if not w.services["web_server"].config.get("cache_coalescing"):
            return "web_server still has cache_coalescing off, so every cold key sends a herd to the database"
        return "the database is still overloaded by cache misses"

    def root_cause(self, w: World) -> RootCause:
        return RootCause(entity="web_server.cache_coalescing", category="misconfiguration",
                         detail="cache_coalescing=false lets a cold cache send a thundering herd to the database",
                         detail_tokens=("cache_coalescing", "coalesc", "herd", "stampede", "single-flight", *value_tokens(False)),
                         aliases=("web_server",), fault=self.meta.name, layer=self.meta.layer)

    def signals(self, w: World) -> list[tuple[str, str, dict[str, Any], str]]:
        return [("get_config", "web_server", {}, r"cache_coalescing = false"),
                ("query_metrics", "cache", {"metric": "hit_ratio"}, ""),
                ("query_metrics", "database", {"metric": "request_rate"}, ""),
                ("get_changes", "*", {}, "cache_coalescing")]

    def oracle_reads(self, w: World) -> list[dict[str, Any]]:
        return [{"tool": "query_metrics", "args": {"target": "cache", "metric": "hit_ratio"}},
                {"tool": "query_metrics", "args": {"target": "database", "metric": "request_rate"}},
                {"tool": "get_config", "args": {"service": "web_server"}},
                {"tool": "get_changes", "args": {}}]

    def oracle_fix(self, w: World) -> list[dict[str, Any]]:
        return [{"tool": "set_config", "args": {"service": "web_server", "key": "cache_coalescing", "value": True}}]

    def envelope_violations(self, w: World) -> list[list[dict[str, Any]]]:
        """Restarting the cache looks like 'reset the cache' but makes every key cold."""
        return [[{"tool": "restart", "args": {"target": "cache"}}]]
