"""The cache's contents over time: what it holds and how fresh its TTL keeps it (one tick at a time).

A cache empties at once (eviction, expiry, a restart) but fills only as misses refill it, so healing
a cache takes simulated time; the tick model (srezero.sim.model) reads the hit ratio from this state.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from srezero.sim.clock import TICK_S

if TYPE_CHECKING:
    from srezero.sim.state import ModelState

#: Time constant (s) of a cache filling up: a restarted one warming, and one refilling after evictions.
CACHE_WARM_S = 150.0
#: Per tick, the part of the gap between what the cache holds and what it could hold that stays unfilled
#: when every miss is refilled.
CACHE_REFILL = math.exp(-TICK_S / CACHE_WARM_S)
def cache_contents(st: ModelState, cover: float, ttl_f: float, ttl_s: float, reachable: bool, up: bool,
                   fills: float) -> None:
    """What the cache holds: ``st.cache_held``, the share of the working set in memory (at most ``cover``,
    what maxmemory allows), and ``st.cache_fresh``, how much of that its TTL keeps fresh (at most
    ``ttl_f``). Both follow a lowered limit at once (eviction, expiry) but climb back only as misses refill
    them, at the warm-up's pace and only for the share ``fills`` of misses whose database read succeeds.
    Keys no client can reach (a wrong secret or address) expire unrefilled."""
    held, fresh = st.cache_held, st.cache_fresh
    if held < 0.0:  # the first tick: a settled cache
        held, fresh = cover, ttl_f
    gain = (1.0 - CACHE_REFILL) * fills if reachable else 0.0
    held = cover if held >= cover else held + (cover - held) * gain
    fresh = ttl_f if fresh >= ttl_f else fresh + (ttl_f - fresh) * gain
    if up and not reachable:
        held *= math.exp(-TICK_S / (ttl_s if ttl_s > 1.0 else 1.0))
    st.cache_held, st.cache_fresh = held, fresh
