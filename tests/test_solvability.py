"""Every curated task is solvable by the oracle (at the curated bar, cleanly), lost by the random agent,
and pages on its own."""

from __future__ import annotations

import pytest

import srezero
from srezero.task.validate import MIN_MARKS, viable
from tests.conftest import play

SEEDS = range(5)


def test_oracle_solves_every_task(task_ids) -> None:
    for task in task_ids:
        for seed in SEEDS:
            r = play(task, seed, "oracle")["result"]
            assert r["success"], (task, seed, r["mitigation"]["reasons"], r["diagnosis"]["checklist"])
            # docs/writing-tasks.md: the oracle must reach 98 marks on curated tasks (they all score 100)
            assert r["marks"] >= MIN_MARKS == 98, (task, seed, r["marks"], r["marks_terms"], r["evidence"])
            assert r["invalid_actions"] == 0 and r["evidence"]["coverage"] == 1.0, (task, seed, r["evidence"])


def test_random_agent_does_not_solve(task_ids) -> None:
    marks = []
    for task in task_ids:
        for seed in SEEDS:
            r = play(task, seed, "random")["result"]
            assert not r["success"], (task, seed)
            marks.append(r["marks"])
    assert sum(marks) / len(marks) <= 10


@pytest.mark.parametrize("seed", SEEDS)
def test_the_page_fires_on_its_own(task_ids, seed: int) -> None:
    """Symptoms emerge from the fault (or the control's noise): the paging alert is never only forced."""
    for task in task_ids:
        ok, why = viable(srezero.get_task(task), seed)
        assert ok, (task, seed, why)


def test_a_false_alarms_backlog_is_watched_until_it_clears() -> None:
    """On inc-011 seed 35 the false alarm's queue backlog outlasts the verification's settling period
    when the incident is resolved at once; the oracle watches it drain first, as an engineer would."""
    r = play("inc-011", 35, "oracle")["result"]
    assert r["success"] and r["marks"] == 100, r["mitigation"]["reasons"]
    assert r["sim_seconds"] > 180
