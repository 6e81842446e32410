"""Parameters that vary by world: a workload share moves within its spread; a per-world choice a task
leaves unset is picked by each world."""

from __future__ import annotations

import srezero
from srezero.faults.base import REGISTRY, Param, load_all
from srezero.sim.world import World
from srezero.task.loader import get_task


def test_a_spread_moves_the_value_by_a_stable_factor_within_its_bounds() -> None:
    p = Param("share", float, 0.5, lo=0.2, hi=0.6, spread=0.3)
    seen = [p.in_world(0.5, "inc-x", seed, 0) for seed in range(200)]
    assert seen == [p.in_world(0.5, "inc-x", seed, 0) for seed in range(200)]  # a hash, not a draw
    assert min(seen) < 0.37 and max(seen) == 0.6  # 0.35 .. 0.65, kept under hi
    assert all(0.35 <= v <= 0.6 for v in seen) and len(set(seen)) > 100


def test_without_a_spread_or_for_text_the_value_is_the_tasks() -> None:
    assert Param("n", int, 3, lo=1, hi=8).in_world(3, "t", 1, 0) == 3
    assert Param("k", str, "a", spread=0.3).in_world("a", "t", 1, 0) == "a"
    assert Param("b", bool, True, spread=0.3).in_world(True, "t", 1, 0) is True
    ints = {Param("n", int, 10, lo=1, hi=20, spread=0.3).in_world(10, "t", s, 0) for s in range(50)}
    assert all(isinstance(v, int) for v in ints) and min(ints) <= 8 and max(ints) >= 12


def test_a_fault_in_a_world_holds_its_moved_value_and_the_spec_keeps_the_tasks() -> None:
    spec = get_task("inc-028")
    rates = []
    for seed in range(6):
        w = World.build(spec, seed)
        rates.append(w.faults[0].params["error_rate"])
    assert spec.faults[0].params.get("error_rate", 0.12) == 0.12
    assert len(set(rates)) == 6 and all(0.084 <= r <= 0.156 for r in rates), rates


def test_only_workload_shares_spread() -> None:
    """A value the agent reads back (a timeout, a limit) must stay the task's: spreads are for
    shares the traffic mix sets, which no config shows."""
    load_all()
    spread = {(name, p.name) for name, cls in REGISTRY.items() for p in cls.meta.params if p.spread}
    assert spread == {("bad_deploy", "error_rate"), ("feature_flag_bug", "error_rate")}
    assert srezero.make("inc-029", seed=0).reset()  # the tasks that use them still page


def test_a_per_world_choice_left_unset_is_each_worlds_and_one_a_task_sets_is_kept() -> None:
    p = Param("index", str, "a.x", choices=("a.x", "b.y", "c.z"), per_world=True)
    picks = [p.pick_in_world("inc-x", seed, 0) for seed in range(60)]
    assert picks == [p.pick_in_world("inc-x", seed, 0) for seed in range(60)] and set(picks) == set(p.choices)
    spec = get_task("inc-025")  # missing_index leaves the index to the world
    assert "index" not in spec.faults[0].params
    gone = {World.build(spec, seed).faults[0].index for seed in range(12)}
    assert len(gone) >= 3, gone
    pinned = spec.model_copy(deep=True)
    pinned.faults[0].params["index"] = "invoices.order_id"
    assert {World.build(pinned, seed).faults[0].index for seed in range(4)} == {"invoices.order_id"}


def test_the_missing_index_is_the_only_per_world_choice() -> None:
    """A per-world choice must change what the agent has to find, not how the incident unfolds (which
    index is gone does not change the model's dynamics); a new one needs that check first."""
    load_all()
    per_world = {(name, p.name) for name, cls in REGISTRY.items() for p in cls.meta.params if p.per_world}
    assert per_world == {("missing_index", "index")}
