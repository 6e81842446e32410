"""The runner hands an agent a seed for its own randomness, never the seed of the world it plays."""

from __future__ import annotations

import srezero
from srezero.agents.protocol import agent_seed
from srezero.agents.runner import run_episode


class _SeedSpy:
    def __init__(self) -> None:
        self.seeds: list[int] = []

    def reset(self, briefing, seed, tool_specs) -> None:
        self.seeds.append(seed)

    def act(self, observation):
        return "resolve()"


def test_an_agent_is_handed_a_hash_of_the_episode_seed() -> None:
    spy = _SeedSpy()
    for seed in (0, 1, 734902118365, 0):
        record = run_episode(srezero.make("inc-001", seed), spy, seed)
        assert record["seed"] == seed  # the record keeps the episode's seed; the agent never sees it
    assert spy.seeds == [agent_seed(0), agent_seed(1), agent_seed(734902118365), agent_seed(0)]
    assert all(0 <= s < 2**31 for s in spy.seeds)  # APIs that take a seed take an int32
    assert len(set(spy.seeds)) == 3 and spy.seeds[0] != 0 and spy.seeds[2] != 734902118365
