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


@pytest.mark.parametrize(("task", "seed"), [("inc-023", 55), ("inc-024", 146), ("inc-025", 160), ("inc-037", 38)])
def test_the_oracle_watches_a_backlog_drain_instead_of_timing_it(task: str, seed: int) -> None:
    """On these seeds a wait sized at the page from the backlog then (or none, for a young one) left the oldest
    message above its SLO in the verification window: the backlog grew until the fix landed. The oracle now
    watches the queue's age fall under three quarters of the SLO before it resolves."""
    played = play(task, seed, "oracle")
    r = played["result"]
    assert r["success"] and r["marks"] == 100, r["mitigation"]["reasons"]
    slo = srezero.get_task(task).slo.queue_age_s
    watches = [s for s in played["trajectory"] if s["tool"] == "wait" and s["args"]["metric"] == "queue_age_s"]
    assert watches and all(s["args"]["below"] == 0.75 * slo for s in watches)
    assert watches[-1]["text"].split(";")[0].endswith(f", below {0.75 * slo:g}")
