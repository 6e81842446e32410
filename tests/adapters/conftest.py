"""Shared fixtures for the adapter tests: core-API reference rollouts to compare every front end against."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

import srezero

#: The task and seed the cross-front-end equality tests play (a fault with a write fix and a diagnosis).
TASK, SEED = "inc-002", 1


@dataclass
class Rollout:
    """What the core API produced for a list of actions."""

    page: str
    actions: list[Any]
    texts: list[str] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    ends: list[tuple[bool, bool]] = field(default_factory=list)
    result: dict[str, Any] | None = None


def core_rollout(task: str, seed: int, actions: list[Any] | None = None, reward: str = "shaped") -> Rollout:
    """Play ``actions`` (default: the oracle plan) through ``srezero.make`` + ``reset`` + ``step``, with
    the Gymnasium adapters' default reward."""
    env = srezero.make(task, seed, reward=reward)
    obs, _ = env.reset(seed=seed)
    if actions is None:
        actions = env.oracle_plan()
    out = Rollout(obs.text, list(actions))
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        out.texts.append(obs.text)
        out.rewards.append(reward)
        out.ends.append((terminated, truncated))
        if terminated or truncated:
            out.result = info["result"]
            break
    return out


@pytest.fixture(scope="session")
def oracle() -> Rollout:
    """The oracle trajectory of (TASK, SEED) and the core API's result for it."""
    ref = core_rollout(TASK, SEED)
    assert ref.result is not None and ref.result["marks"] > 90, "the oracle must solve the reference task"
    return ref
