"""The primary database's latency, and the latency the web tier and a saturated database settle on.

The fluid model's tick is 30 s, far longer than it takes a queue of queries to build or drain. With
the web tier reading last tick's database latency, a saturated database and the web tier's thread
capacity chased each other a tick apart: a slow tick starved the web tier of threads, the next tick
the idle database was fast again, and the latency cycled between the statement timeout and a tenth
of it. Real systems settle within seconds, so while the database is near saturation the tick solves
for the latency the closed loop (web threads, their queries, the database's queue) settles on
(:func:`settle_latency`), and the web tier reads that instead of last tick's.
"""

from __future__ import annotations

from collections.abc import Callable

SATURATED = 0.8  # database utilisation (last tick) from which the tick solves the closed loop
TOLERANCE_MS = 0.01  # the solve stops when the latency agrees with itself (or its bracket) to this
MAX_STEPS = 60


def queueing_latency(kept_q: float, offered_q: float, cap: float, base_lat: float, conns: float,
                     max_conns: float, stmt_to: float) -> tuple[float, float]:
    """The primary's mean query latency (ms) and utilisation for ``kept_q`` queries per second served
    and ``offered_q`` offered (queries the clients' exhausted pools hold back included)."""
    # exhausted pools queue at the client and keep the server saturated: its load does not fall
    # below what it can serve while more is offered (Little's law in a closed connection pool)
    busy_q = cap * 0.97 if offered_q > cap * 0.97 else offered_q
    db_u = (kept_q if kept_q > busy_q else busy_q) / cap if cap > 0 else 10.0
    if db_u < 0.95:
        new_lat = base_lat / (1.0 - db_u)
    else:
        new_lat = base_lat * 20.0 + (db_u - 0.95) * stmt_to * 2.0
        # a saturated server queues at most its clients' open connections (Little's law): past that,
        # clients wait for a pool connection instead
        held = base_lat + (conns if conns < max_conns else max_conns) / cap * 1000.0
        new_lat = new_lat if new_lat < held else held
    return (new_lat if new_lat < stmt_to else stmt_to), db_u


def with_inertia(prev_lat: float, new_lat: float) -> float:
    """Queued work drains over more than one tick: latency moves toward its new level with inertia."""
    return 0.5 * (prev_lat + new_lat) if new_lat < prev_lat else 0.3 * prev_lat + 0.7 * new_lat


def thread_load(served: float, cap_cpu: float, own_ms: float, down_ms: float, threads: int,
                prev_u: float) -> tuple[float, float, float, float]:
    """A web replica's request time (s), its utilisation this tick before and after smoothing, and the
    share of its requests it sheds.

    Its capacity is the lesser of what its CPU and its threads can serve (a thread is busy for the
    replica's own work plus ``down_ms`` below it); queued requests carry over, so the utilisation
    moves halfway from ``prev_u`` (the last tick's; negative when there is none). Past full
    utilisation the excess is shed.
    """
    lat_s = (own_ms + down_ms) / 1000.0
    cap_threads = threads / (lat_s if lat_s > 1e-3 else 1e-3)
    cap = cap_cpu if cap_cpu < cap_threads else cap_threads
    u_raw = served / cap if cap > 0 else 10.0
    u = 0.5 * (u_raw + prev_u) if prev_u >= 0.0 else u_raw
    return lat_s, u_raw, u, (1.0 - 1.0 / u if u > 1.0 else 0.0)


def pool_shortfall(need: float, free: float) -> float:
    """The share of queries that wait out the pool's timeout when ``need`` connections are wanted."""
    return (1.0 - free / need if free > 0 else 1.0) if need > free else 0.0


def settle_latency(demand: Callable[[float], tuple[float, float]], prev_lat: float, cap: float, base_lat: float,
                   conns: float, max_conns: float, stmt_to: float) -> float:
    """The latency ``L`` with ``L = with_inertia(prev_lat, queueing_latency(*demand(L)))``.

    ``demand(L)`` gives the (kept, offered) queries per second the clients send when the database
    answers in ``L`` ms; it does not grow with ``L`` (slower answers hold threads and connections
    longer), so the right-hand side does not rise with ``L``: the root is unique and a bracketing
    search finds it. Solving the tick implicitly like this is what keeps it from cycling.
    """

    def gap(lat: float) -> float:  # negative below the root, positive above it
        kept, offered = demand(lat)
        return lat - with_inertia(prev_lat, queueing_latency(kept, offered, cap, base_lat, conns, max_conns, stmt_to)[0])

    # regula falsi, Illinois variant: the gap is steep near saturation, so the end that stays put is
    # halved to keep the bracket closing from both sides
    lo, hi = 0.0, (prev_lat if prev_lat > stmt_to else stmt_to)
    g_lo, g_hi = gap(lo), gap(hi)
    if g_hi <= 0.0:
        return hi
    side = 0
    lat = hi
    for _ in range(MAX_STEPS):
        lat = (lo * g_hi - hi * g_lo) / (g_hi - g_lo)
        g = gap(lat)
        if -TOLERANCE_MS < g < TOLERANCE_MS or hi - lo < TOLERANCE_MS:
            break
        if g > 0.0:
            hi, g_hi = lat, g
            if side > 0:
                g_lo *= 0.5
            side = 1
        else:
            lo, g_lo = lat, g
            if side < 0:
                g_hi *= 0.5
            side = -1
    return lat
