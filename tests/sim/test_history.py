"""The metrics history before the first live tick (srezero/sim/world.py ``_backfill_history``).

History is one settled tick broadcast over its columns, so a series that moves only once ticks run for
real would date the start of the simulation, and with it the onset, to the column: a red-team agent
found the first change of a noise-free disk series in 132 of 132 episodes and blamed whatever changed
after it. Each test here failed before the backfill.
"""

from __future__ import annotations

import numpy as np
import pytest

from srezero.sim import metrics as M
from srezero.sim.world import World
from tests.faults.test_noise import control

SEEDS = (0, 1, 2)
#: Pod counts move only when a pod restarts or a release rolls (an event the agent also sees as one)
EVENT_DRIVEN = frozenset({"ready_replicas", "healthy_backends", "restarts"})


def healthy(seed: int) -> World:
    w = World.build(control("quiet"), seed)
    w.advance(600.0)  # 20 live ticks, nothing broken
    return w


@pytest.mark.parametrize("seed", SEEDS)
def test_no_noise_free_series_starts_moving_at_the_first_live_tick(seed: int) -> None:
    w = healthy(seed)
    h = w.history_cols
    for (entity, metric), row in w.row_of.items():
        if M.NOISE_SIGMA.get(metric, 0.0) or metric in EVENT_DRIVEN:
            continue
        hist, live = w.buf[row, :h], w.buf[row, h : w.col + 1]
        if np.ptp(live) > 0:
            assert np.ptp(hist) > 0, (entity, metric)


@pytest.mark.parametrize("seed", SEEDS)
def test_disks_fill_at_the_same_rate_before_and_after_the_first_live_tick(seed: int) -> None:
    w = healthy(seed)
    for node in w.topo.nodes:
        for metric in ("root_disk_used_pct", "data_disk_used_pct"):
            steps = np.diff(w.buf[w.row_of[(node.name, metric)], : w.col + 1])
            assert np.allclose(steps, steps[-1], rtol=1e-6), (node.name, metric)
            assert steps[-1] > 0


@pytest.mark.parametrize("seed", SEEDS)
def test_request_rates_vary_in_history_as_much_as_in_live_ticks(seed: int) -> None:
    """Traffic follows its per-column noise and the day's curve in history too: the tick-to-tick spread
    of the true rates is of one size on both sides of the first live tick."""
    w = healthy(seed)
    h = w.history_cols
    for entity in ("load_balancer", "web_server", "message_queue"):
        metric = "publish_rate" if entity == "message_queue" else "request_rate"
        series = w.buf[w.row_of[(entity, metric)], : w.col + 1]
        steps = np.abs(np.diff(np.log(series)))
        before, after = steps[: h - 1].mean(), steps[h:].mean()
        assert 0.5 < before / after < 2.0, (entity, before, after)
