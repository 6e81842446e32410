"""The metrics history before the first live tick (srezero/sim/world.py ``_backfill_history``).

History is one settled tick filled over its columns, so a series that moves only once ticks run for
real would date the start of the simulation, and with it the onset, to the column: a red-team agent
found the first change of a noise-free disk series in 132 of 132 episodes and blamed whatever changed
after it, and a variance-ratio detector over CPU, connections and latencies still placed the first
live tick within a tick in about a third of worlds once rates and disks moved. Each test here failed
before the backfill it checks.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from srezero.faults import noise
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


@pytest.fixture
def steady(monkeypatch: pytest.MonkeyPatch) -> Callable[[range], list[World]]:
    """Healthy worlds with no noise at all: nobody restarts, ships or edits anything during the live
    ticks (events that move connections and memory, which the history has no counterpart of)."""
    monkeypatch.setattr(noise, "schedule", lambda *args: None)

    def build(seeds: range) -> list[World]:
        worlds = [World.build(control("quiet"), seed) for seed in seeds]
        for w in worlds:
            w.advance(600.0)
        return worlds

    return build


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


def test_load_driven_series_vary_in_history_as_much_as_in_live_ticks(steady: Callable[[range], list[World]]) -> None:
    """CPU, connections, latencies and the rest follow the load in history as the model does live (a
    probe at lighter traffic measures each series' response), so every series that visibly moves live
    moves by about as much, tick to tick, in the history just before."""
    worlds = steady(range(6))
    for w in worlds:
        h = w.history_cols
        for (entity, metric), row in w.row_of.items():
            if metric in EVENT_DRIVEN or "disk_used" in metric:
                continue
            level = abs(w.buf[row, h]) or 1.0
            live = np.abs(np.diff(w.buf[row, h : w.col + 1])).mean()
            hist = np.abs(np.diff(w.buf[row, h - 21 : h])).mean()
            # a move well under the measurement noise (or a count's odd unit step) shows nobody anything
            visible = max(0.1 * M.NOISE_SIGMA.get(metric, 0.0), 1e-3) * level
            if live > visible or hist > visible:
                assert 0.33 < hist / live < 3.0, (w.seed, entity, metric, hist, live)


def test_the_settled_tick_ends_the_history_and_the_first_live_tick_continues_it(
        steady: Callable[[range], list[World]]) -> None:
    """The last history column is the settled system the live ticks continue from (faults size
    themselves from it), so the first live tick steps from it no more than later ticks step."""
    first, later = [], []
    for w in steady(range(6)):
        h = w.history_cols
        for metric in ("latency_p99_ms", "request_rate"):
            series = w.buf[w.row_of[("web_server", metric)], h - 1 : w.col + 1]
            steps = np.abs(np.diff(series)) / series[0]
            first.append(steps[0])
            later.append(steps[1:].mean())
    assert np.mean(first) < 2.0 * np.mean(later), (np.mean(first), np.mean(later))
