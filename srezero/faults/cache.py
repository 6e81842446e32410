"""Cache-layer primitives. Nearly every cache failure shows up at the database: misses become queries.

The hit ratio in the model is ``h_max * coverage^1.5 * ttl_factor * warmth`` and a miss costs
``read_queries`` database reads, so a cache that evicts, expires too soon, restarts empty or
refuses clients multiplies the database's load until it saturates.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from srezero.faults.app import ship
from srezero.faults.base import FaultMeta, Param, Remedy, RootCause, Signal, register
from srezero.faults.common import CFG, CHANGE, Declared, TunedConfig, esc
from srezero.sim import changes
from srezero.sim.clock import TICK_S

if TYPE_CHECKING:
    from srezero.sim.world import World

_HERD = "the database takes every miss"
#: a hit ratio the cache's INFO shows below the 0.5 CacheHitRatioLow pages at (a healthy cache's is ~0.9)
_LOW_HIT = Signal("inspect_cache", "any", args=(("section", "info"),), pattern=r"keyspace_hit_ratio:0\.[0-4]")


@register
class CacheEvictionStorm(TunedConfig):
    """maxmemory set below the working set: the cache evicts keys it will need a moment later."""

    meta = FaultMeta(
        name="cache_eviction_storm", layer="cache", category="misconfiguration", targets=("service:cache",),
        description="cache maxmemory set below the working set: constant evictions, a low hit ratio",
        params=(Param("ratio", float, 0.25, lo=0.05, hi=0.6, description="maxmemory as a share of the working set"),),
        signals=(replace(CFG, alt=(Signal("inspect_cache", "any", args=(("section", "info"),),
                                          pattern=r"maxmemory_human:<value>M"),)),
                 CHANGE, Signal("query_metrics", "cache", args=(("metric", "evictions_per_s"),), description="evictions"),
                 Signal("search_logs", "cache", pattern="maxmemory reached", description="the cache evicting",
                        alt=(Signal("inspect_cache", "any", args=(("section", "info"),),
                                    pattern=r"evicted_keys_per_sec:[1-9]\d"),))),
        remedies=(Remedy("set_config", "maxmemory_mb at least the working set (memory_used_mb of the cache "
                         "before the change shows it) and at most 16384"),),
        wrong_fix_effects=f"restarting the cache empties it and {_HERD}; scaling the web tier adds load",
        example="cache", example_params=(("ratio", 0.25),), alert="HighLatencyP99",
    )
    key = "maxmemory_mb"
    reason = "free memory on the node"

    def compute_bad(self, w: World) -> Any:
        return max(64, int(w.state.cache_ws_mb * self.params["ratio"]))

    def probes(self, w: World) -> tuple[Any, Any]:
        return int(w.state.cache_ws_mb * 0.8), 65_536

    def oracle_fix(self, w: World) -> list[dict[str, Any]]:
        # the cache refills only as fast as the saturated database answers its misses: watch it recover
        return [*super().oracle_fix(w), {"tool": "wait", "args": {"seconds": 120}}]


@register
class CacheCrashHerd(TunedConfig):
    """The cache pod's memory limit was lowered below its dataset. Each time it warms up it is
    OOM-killed and restarts empty, and every restart sends a thundering herd to the database."""

    meta = FaultMeta(
        name="cache_crash_herd", layer="cache", category="resource_exhaustion", targets=("service:cache",),
        description="a cache memory limit below its dataset: OOM kills that restart it empty, again and again",
        params=(Param("ratio", float, 0.3, lo=0.2, hi=0.9, description="the limit as a share of the dataset"),),
        signals=(Signal("get_events", "service", pattern="OOMKilled", description="the cache OOM-killed",
                        alt=(Signal("node_diagnostics", "any", args=(("check", "dmesg"),),
                                    pattern=r"Memory cgroup out of memory: Killed process \d+ \(redis-server\)"),)),
                 Signal("query_metrics", "cache", args=(("metric", "hit_ratio"),), description="hit ratio collapsing",
                        alt=(_LOW_HIT,)),
                 replace(CFG, alt=(Signal("node_diagnostics", "any", args=(("check", "limits"),),  # the pod's cgroup
                                          pattern=r"cache-\w+\s+cpu\.max=\S+ throttled=\d+%\s+memory\.max=<value>M"),)),
                 CHANGE),
        remedies=(Remedy("set_config", "cache memory_limit_mb at least 1.2x the dataset (capped by maxmemory) "
                         "and at most half the node's memory"),),
        wrong_fix_effects=f"restarting the cache empties it again and {_HERD}; lowering maxmemory below the "
                          "working set trades the crashes for evictions",
        example="cache", example_params=(("ratio", 0.3),),
    )
    key = "memory_limit_mb"
    reason = "right-size the cache pod"

    def _dataset(self, w: World) -> float:
        cache = w.services["cache"]
        return cache.replicas[0].base_mem_mb * 0.2 + min(float(cache.config["maxmemory_mb"]), w.state.cache_ws_mb)

    def compute_bad(self, w: World) -> Any:
        base = w.services["cache"].replicas[0].base_mem_mb  # it still starts; it dies once it has warmed
        return int(max(base * 1.15, self._dataset(w) * self.params["ratio"]))

    def probes(self, w: World) -> tuple[Any, Any]:
        return int(self._dataset(w) * 0.95), int(w.services["cache"].replicas[0].node.mem_total_mb)

    def oracle_fix(self, w: World) -> list[dict[str, Any]]:
        # the resized pod restarts empty, so one last herd follows the fix: watch it subside (2-4 minutes)
        return [*super().oracle_fix(w), {"tool": "wait", "args": {"seconds": 120}}]


@register
class CacheAuthFailure(Declared):
    """The cache's password was rotated on the server; the web tier still presents the old secret,
    every command fails with WRONGPASS, and the clients fall back to the database."""

    meta = FaultMeta(
        name="cache_auth_failure", layer="cache", category="authentication", targets=("service:cache",),
        description="a cache password rotation the web tier never picked up",
        signals=(Signal("search_logs", "cache", pattern="WRONGPASS", description="the cache rejecting AUTH",
                        alt=(Signal("inspect_cache", "any", args=(("section", "info"),),
                                    pattern=r"rejected_auth_last_30s:[1-9]"),)),
                 Signal("search_logs", "web_server", pattern="WRONGPASS", description="clients falling back"),
                 Signal("get_changes", "any", pattern="auth_secret", description="the rotation")),
        remedies=(Remedy("set_config", "web_server cache_auth_secret = the cache's new auth_secret"),),
        wrong_fix_effects=f"restarting either side keeps the mismatch while {_HERD}",
        example="cache", alert="HighLatencyP99",
    )

    def prepare(self, w: World) -> None:
        self.old = str(w.services["cache"].config["auth_secret"])
        self.new = changes.next_secret(self.old)

    def inject(self, w: World) -> None:
        w.services["cache"].config["auth_secret"] = self.new
        w.change("cache", "config", changes.edit_line(w, "auth_secret", self.old, self.new), w.author())

    def neutralised(self, w: World) -> bool:
        return w.services["web_server"].config["cache_auth_secret"] == w.services["cache"].config["auth_secret"]

    def why_active(self, w: World) -> str:
        return "web_server presents a cache secret the cache no longer accepts"

    def root_cause(self, w: World) -> RootCause:
        return RootCause(entity="web_server.cache_auth_secret", category="authentication",
                         detail=f"the cache now requires {self.new}; web_server still sends {self.old}",
                         detail_tokens=("auth_secret", "password", "WRONGPASS", "AUTH", self.new),
                         aliases=("web_server", "cache", "cache.auth_secret"), fault=self.meta.name,
                         layer=self.meta.layer)

    def oracle_fix(self, w: World) -> list[dict[str, Any]]:
        return [{"tool": "set_config", "args": {"service": "web_server", "key": "cache_auth_secret", "value": self.new}}]

    def envelope_violations(self, w: World) -> list[list[dict[str, Any]]]:
        return [[{"tool": "set_config", "args": {"service": "web_server", "key": "cache_auth_secret",
                                                 "value": changes.next_secret(self.new)}}]]


@register
class CacheTtlMisconfig(TunedConfig):
    """The default TTL cut to seconds: keys written from then on expire before they are read again, and
    the hit ratio falls as the keys stored with the old TTL run it out (srezero.sim.cache)."""

    meta = FaultMeta(
        name="cache_ttl_misconfig", layer="cache", category="misconfiguration", targets=("service:cache",),
        description="a cache TTL so short that keys expire before they are reused",
        params=(Param("value", int, 5, lo=1, hi=60, description="the new TTL in seconds"),),
        signals=(CFG, CHANGE, Signal("query_metrics", "cache", args=(("metric", "hit_ratio"),),
                                    description="hit ratio collapsing", alt=(_LOW_HIT,))),
        remedies=(Remedy("set_config", "ttl_s between 120 and 86400 (longer serves stale data)"),),
        wrong_fix_effects=f"restarting the cache empties it and {_HERD}; raising maxmemory does nothing",
        example="cache", example_params=(("value", 5),),
    )
    key = "ttl_s"
    reason = "fresher prices"

    def probes(self, w: World) -> tuple[Any, Any]:
        return 60, 10_000_000


HOT_KEY = "promo:banner:v2"


@register
class CacheHotKey(Declared):
    """A release reads one large key on every request (web_server) or on every item of every job
    (worker). The single-threaded cache saturates on it; operations beyond its throughput time out and
    fall back to the database, so the web tier slows whichever service shipped the release. The target
    is that service."""

    meta = FaultMeta(
        name="cache_hot_key", layer="cache", category="code_defect", targets=("service:web_server", "service:worker"),
        description="a release (of the web tier or the workers) that reads one large cache key per request or "
                    "job and saturates the cache",
        params=(Param("share", float, 0.9, lo=0.3, hi=1.0, description="share of cache operations on the key"),),
        signals=(Signal("inspect_cache", "any", args=(("section", "hotkeys"),), pattern=esc(HOT_KEY),
                        description="the hot key"),
                 Signal("search_logs", "web_server", pattern="cache: timeout reading from",
                        description="cache reads timing out"),
                 Signal("get_changes", "any", pattern="<version>", description="the release")),
        remedies=(Remedy("rollback", "roll the service that shipped the release back to its previous release"),),
        wrong_fix_effects=f"restarting the cache empties it and {_HERD}; more maxmemory does not add throughput",
        example="web_server", example_params=(("share", 0.9),), alert="HighLatencyP99",
    )

    def prepare(self, w: World) -> None:
        self.version = ""
        self.reader = self.target.obj.kind  # the service whose release reads the key ...
        self.per = "request" if self.reader == "web_server" else "job"  # ... on every one of these

    def inject(self, w: World) -> None:
        self.version = ship(w, self.reader, "hot_key", 0.0).version
        w.state.cache_hot_key_name = HOT_KEY
        w.state.cache_hot_reader = self.reader

    def evolve(self, w: World) -> Generator[Any, Any, None]:
        svc = w.services[self.reader]
        while True:  # the key is hot exactly while the release that reads it runs
            w.state.cache_hot_key = self.params["share"] if svc.deploy.defect == "hot_key" else 0.0
            yield w.env.timeout(TICK_S)

    def subs(self, w: World) -> dict[str, str]:
        return {"version": esc(self.version)}

    def neutralised(self, w: World) -> bool:
        return w.services[self.reader].deploy.defect != "hot_key"

    def why_active(self, w: World) -> str:
        return f"{self.reader} {w.services[self.reader].deploy.version} still reads {HOT_KEY} on every {self.per}"

    def root_cause(self, w: World) -> RootCause:
        return RootCause(entity=self.reader, category="code_defect",
                         detail=f"release {self.version} reads the hot key {HOT_KEY} on every {self.per}",
                         detail_tokens=("hot key", "promo", self.version, "hotkey"), aliases=("cache",),
                         fault=self.meta.name, layer=self.meta.layer)

    def oracle_fix(self, w: World) -> list[dict[str, Any]]:
        return [{"tool": "rollback", "args": {"service": self.reader}}]

    def envelope_violations(self, w: World) -> list[list[dict[str, Any]]]:
        return [[{"tool": "set_config", "args": {"service": "cache", "key": "maxmemory_mb", "value": 16384}}]]
