"""The cache each tick: what it holds, how fresh its TTL keeps it, and what the web tier gets from it.

A cache empties at once (eviction, a restart) but fills only as misses refill it, so healing a cache
takes simulated time. A lowered TTL applies to keys written from then on: keys already stored keep the
TTL they were written with, so the hit ratio falls as they expire, over one old TTL.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from srezero.sim import metrics as M
from srezero.sim.clock import TICK_S
from srezero.sim.nodes import link_loss

if TYPE_CHECKING:
    from srezero.sim.components import Replica
    from srezero.sim.state import ModelState
    from srezero.sim.world import World

#: Time constant (s) of a cache filling up: a restarted one warming, and one refilling after evictions.
CACHE_WARM_S = 150.0
#: Per tick, the part of the gap between what the cache holds and what it could hold that stays unfilled
#: when every miss is refilled.
CACHE_REFILL = math.exp(-TICK_S / CACHE_WARM_S)
#: A client gives up on a cache read after this long and falls back to the database.
CACHE_CLIENT_TIMEOUT_MS = 250.0
#: Reads of a hot key per job when a worker release reads it (once per item of a job's batch): a worker
#: handles a job where the web tier serves a request, so it needs as many reads to saturate the cache.
WORKER_HOT_READS = 12.0


def cache_contents(st: ModelState, t: float, cover: float, ttl_s: float, reachable: bool, up: bool,
                   fills: float) -> None:
    """What the cache holds: ``st.cache_held``, the share of the working set in memory (at most ``cover``,
    what maxmemory allows), and ``st.cache_fresh``, how much of that its TTL keeps fresh (at most what
    ``ttl_s`` allows). A lowered maxmemory evicts at once; a lowered TTL lets the stored keys run out the
    TTL they were written with (``st.cache_key_ttl_s``), so freshness falls linearly until the last of them
    expires. Both climb back only as misses refill them, at the warm-up's pace and only for the share
    ``fills`` of misses whose database read succeeds. Keys no client can reach (a wrong secret or
    address) expire unrefilled."""
    ttl_f = 1.0 - math.exp(-ttl_s / 90.0)
    held, fresh = st.cache_held, st.cache_fresh
    if held < 0.0:  # the first tick, or a restart: a settled cache whose keys all carry today's TTL
        held, fresh = cover, ttl_f
        st.cache_key_ttl_s = ttl_s
        st.cache_stale_until = 0.0
    if ttl_s < st.cache_key_ttl_s:  # lowered: the newest key written with the old TTL expires one old TTL from now
        st.cache_stale_until = max(st.cache_stale_until, t + st.cache_key_ttl_s)
    st.cache_key_ttl_s = ttl_s
    gain = (1.0 - CACHE_REFILL) * fills if reachable else 0.0
    held = cover if held >= cover else held + (cover - held) * gain
    if fresh > ttl_f:
        left = st.cache_stale_until - t
        fresh = ttl_f + (fresh - ttl_f) * (1.0 - TICK_S / left) if left > TICK_S else ttl_f
    else:
        fresh += (ttl_f - fresh) * gain
    if up and not reachable:
        held *= math.exp(-TICK_S / (ttl_s if ttl_s > 1.0 else 1.0))
    st.cache_held, st.cache_fresh = held, fresh


def cache_reads(st: ModelState, t: float, cc: dict[str, Any], cache_rep: Replica, web_rps: float, reachable: bool,
                up: bool, fills: float) -> tuple[float, float, float, float, float, float, float]:
    """What the web tier gets from the cache this tick, after updating its contents
    (:func:`cache_contents`): ``(hit, latency_ms, timeout_share, served_hit, served_latency_ms, cover,
    warm)``. Reads that time out (a saturated hot key, or packets lost on the cache node's NIC) fall back
    to the database. ``served_*`` is what the server itself measures: a read lost on the network never
    reaches its keyspace statistics, a hot key's backlog does."""
    cover = min(1.0, cc["maxmemory_mb"] / st.cache_ws_mb)
    warm = 1.0 - math.exp(-(t - st.cache_ready_since) / CACHE_WARM_S) if up else 0.0
    cache_contents(st, t, cover, float(cc["ttl_s"]), reachable, up, fills)
    hit = st.cache_h_max * st.cache_held ** 1.5 * st.cache_fresh * warm if reachable else 0.0
    lat = 0.6 * (1.0 + 30.0 * st.cache_hot_key)
    timeouts = 0.0
    if st.cache_hot_key > 0 and reachable:
        # one large hot value read per request saturates the single-threaded server: the excess
        # operations hit the client timeout and fall back to the database
        if st.cache_hot_reader == "worker":  # the workers' jobs (last tick's rate) read it, on top of the web tier
            util = (web_rps + st.mq_consumed * WORKER_HOT_READS * 250.0 * st.cache_hot_key) / 20000.0
        else:
            util = web_rps * (1.0 + 250.0 * st.cache_hot_key) / 20000.0
        if util > 1.0:
            timeouts = 1.0 - 1.0 / util
    if timeouts:
        hit *= 1.0 - timeouts
        lat += CACHE_CLIENT_TIMEOUT_MS * timeouts
    served_hit, served_lat = hit, lat
    lost = link_loss(cache_rep.node) if reachable else 0.0
    if lost:
        timeouts = 1.0 - (1.0 - timeouts) * (1.0 - lost)
        hit *= 1.0 - lost
        lat += CACHE_CLIENT_TIMEOUT_MS * lost
    return hit, lat, timeouts, served_hit, served_lat, cover, warm


def cache_server(w: World, rep: Replica, cc: dict[str, Any], ops: float, cover: float, warm: float,
                 served_lat: float, reachable: bool, up: bool, auth_ok: bool) -> tuple[float, float]:
    """The cache server's own side of the tick: its CPU, memory (and the OOM kill when the dataset outgrows
    the pod's limit), log causes and replica metrics. Returns ``(evictions_per_s, used_mb)``."""
    st = w.state
    ev = ops * (1.0 - cover) * 0.8 + ops * 0.002
    rep.rps = ops
    rep.lat_ms = served_lat
    rep.cpu = ops * 0.00025 * (1.0 + 4 * st.cache_hot_key) + 0.05 if up else 0.0
    rep.err_causes = {}
    if cover < 0.8 and reachable:
        rep.err_causes["evicting"] = 1.0 - cover
    if not auth_ok and up:
        rep.err_causes["auth_fail"] = 1.0
    refilled = st.cache_held / cover if cover > 0.0 else 0.0  # of what maxmemory lets it hold
    used_mb = min(cc["maxmemory_mb"], st.cache_ws_mb * warm) * refilled if up else 0.0
    rep.mem_mb = rep.base_mem_mb * 0.2 + used_mb if up else rep.mem_mb
    if up and rep.mem_mb > cc["memory_limit_mb"]:  # the dataset outgrew the pod's memory limit
        w.emit("Warning", "OOMKilled", rep.name,
               f"Container exceeded memory limit ({cc['memory_limit_mb']}Mi) and was OOMKilled")
        w.dmesg(rep.node, f"Memory cgroup out of memory: Killed process {1000 + rep.index * 37} "
                f"(redis-server) total-vm:{int(rep.mem_mb * 1100)}kB, anon-rss:{int(rep.mem_mb * 1000)}kB")
        w.restart_replica(rep, reason="OOMKilled", by_agent=False)
    M.record_replica(w.vals, rep, ops, 1.0 if not auth_ok and up else 0.0, served_lat, 0.3, ops * 0.3 if up else 0.0)
    return ev, used_mb
