"""The saturated database's closed loop with the web tier (srezero/sim/database.py)."""

from __future__ import annotations

import pytest

import srezero
from srezero.sim.clock import TICK_S
from srezero.sim.database import queueing_latency, settle_latency, with_inertia
from srezero.sim.world import World
from tests.sim.twins import at

LAW = (800.0, 3.0, 200.0, 500, 5000.0)  # capacity q/s, base ms, open connections, max_connections, timeout ms


def thread_bound(lat: float) -> tuple[float, float]:
    """Clients whose threads each wait out one query: the slower the answers, the fewer queries."""
    q = 2400.0 / (1.0 + lat / 100.0)
    return q, q


@pytest.mark.parametrize("prev", [3.0, 60.0, 900.0, 5000.0])
def test_the_settled_latency_is_the_fixed_point_of_the_demand_and_the_queueing_law(prev: float) -> None:
    lat = settle_latency(thread_bound, prev, *LAW)
    step = 0.02 + 1e-4 * lat  # the latency law is steep near saturation: check the root is bracketed

    def implied(x: float) -> float:
        return with_inertia(prev, queueing_latency(*thread_bound(x), *LAW)[0])

    assert implied(lat - step) > lat - step
    assert implied(lat + step) < lat + step


def test_a_demand_that_does_not_depend_on_latency_settles_where_one_explicit_step_lands() -> None:
    law_lat = queueing_latency(700.0, 700.0, *LAW)[0]
    assert settle_latency(lambda lat: (700.0, 700.0), 40.0, *LAW) == pytest.approx(with_inertia(40.0, law_lat), abs=0.02)


def test_ticks_solved_in_turn_converge_on_one_latency() -> None:
    lat, seen = 3.0, []
    for _ in range(30):
        lat = settle_latency(thread_bound, lat, *LAW)
        seen.append(lat)
    assert max(seen[-5:]) - min(seen[-5:]) < 0.01 * seen[-1]
    assert seen[-1] > 20.0 * LAW[1]  # the clients do keep it saturated


def test_a_database_saturated_by_cache_misses_settles_instead_of_cycling() -> None:
    # inc-034 (the web tier keeps a rotated cache password) on seed 31: when the web tier read last
    # tick's database latency, the database's load swung between 520 and 950 queries/s in a four-tick
    # cycle, the edge p99 with it, and the page's condition never held for its 90 s
    w = World.build(srezero.get_task("inc-034"), 31)
    w.page()
    assert not w.page_forced
    rates, edge = [], []
    for _ in range(20):
        w.advance(TICK_S)
        rates.append(at(w, "database", "request_rate"))
        edge.append(at(w, "load_balancer", "latency_p99_ms"))
    assert max(rates) < 1.25 * min(rates)
    assert max(edge) < 1.5 * min(edge)
