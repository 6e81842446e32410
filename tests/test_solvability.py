"""Every task is solvable by the oracle and lost by the random agent."""

from __future__ import annotations

from tests.conftest import play


def test_oracle_solves_every_task(task_ids) -> None:
    for task in task_ids:
        for seed in range(5):
            r = play(task, seed, "oracle")["result"]
            assert r["success"], (task, seed, r["mitigation"]["reasons"], r["diagnosis"]["checklist"])
            assert r["marks"] >= 95, (task, seed, r["marks"], r["marks_terms"])


def test_random_agent_does_not_solve(task_ids) -> None:
    marks = []
    for task in task_ids:
        for seed in range(5):
            r = play(task, seed, "random")["result"]
            assert not r["success"], (task, seed)
            marks.append(r["marks"])
    assert sum(marks) / len(marks) <= 10
