"""Shared fixtures. Tests mirror the package: tests/<area>/test_*.py."""

from __future__ import annotations

import pytest

import srezero


@pytest.fixture(scope="session")
def task_ids() -> list[str]:
    return [t.id for t in srezero.list_tasks()]


def play(task_id: str, seed: int, agent_name: str) -> dict:
    from srezero.agents import registry
    from srezero.agents.runner import run_episode

    return run_episode(srezero.make(task_id, seed), registry.create(agent_name), seed)
