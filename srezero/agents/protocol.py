"""The agent protocol every baseline and user agent implements (guide: docs/extending.md#add-an-agent).

An agent is a class whose instances have::

    reset(briefing: Briefing, seed: int, tool_specs: list[dict]) -> None
    act(observation: Observation) -> action   # text call, dict, Action or kubectl string

``seed`` is for the agent's own randomness (sampling, an LLM's ``seed``): :func:`agent_seed` of the
episode's seed, never the episode's seed itself. An agent handed the world's seed could rebuild the
world with the public simulator and read its ground truth. Derived, it hides the world only when the
evaluator draws seeds from a large private range (``srezero sweep --seed-start``): the hash is public,
so a small range is enumerated in seconds (docs/scoring.md, "What the score cannot defend against").

The runner calls both positionally, so the parameter names are the agent's own. ``reset`` comes
once per episode, before the first ``act``; the first observation is the page. The briefing is an
opaque episode id, the page and the budgets (:class:`~srezero.episode.Briefing`). ``tool_specs`` is
:func:`srezero.tool_specs`: each tool's ``name``, ``description``, ``parameters`` (JSON schema),
``kind`` (read, write or submit) and ``cost_s``. The episode ends when the agent calls ``resolve()``
or a budget runs out.

Optional: ``usage() -> dict`` (stored in each record; the LLM agents report ``prompt_tokens``,
``completion_tokens``, ``cost_usd``, ``latency_s`` and ``provider_errors``); ``settings() -> dict``
(stored in the run manifest); ``step_info() -> dict`` (merged into the trajectory entry of the
action just taken). The constructor receives ``--agent-arg KEY=VALUE`` as keyword arguments.

An agent that declares ``wants_ground_truth = True`` receives ``bind_oracle(plan)`` (the actions of
perfect play) before its first act; its records are marked ``privileged`` and it is reported as an
upper bound, never ranked among the baselines. Only the oracle should.

An agent whose *provider* fails (an LLM endpoint down, rate-limited past its retries) raises
:class:`ProviderError`: the sweep records the episode as a provider error, apart from model
failures, and carries on. An agent that stops without resolving (a replay of an episode that was
abandoned or cut short) raises :class:`StopEpisode`: the episode is finished as truncated and scored,
as when a harness stops early. Any other exception is recorded as an agent error.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from srezero.episode import Briefing, Observation
from srezero.sim.rng import stable_int


def agent_seed(seed: int) -> int:
    """The seed an agent receives for an episode seed: a 31-bit hash of it (APIs take int32 seeds)."""
    return stable_int("agent", seed) % 2**31


class ProviderError(RuntimeError):
    """The agent's model provider failed (HTTP 429/5xx, timeouts, connection errors) after retries."""


class StopEpisode(Exception):
    """Raised from ``act`` to stop without resolving: the episode ends truncated and is scored as it stands."""


@runtime_checkable
class Agent(Protocol):
    def reset(self, briefing: Briefing, seed: int, tool_specs: list[dict[str, Any]]) -> None: ...

    def act(self, observation: Observation) -> Any: ...
