"""The agent protocol every baseline and user agent implements.

An agent is any object with::

    reset(task_info: Briefing, seed: int, tool_specs: list[dict]) -> None
    act(observation: Observation) -> action            # dict, text call, kubectl string or Action

Optional: ``usage() -> dict`` with ``prompt_tokens``, ``completion_tokens``, ``cost_usd``,
``latency_s`` and ``provider_errors`` for LLM agents; ``settings() -> dict`` for the run manifest.

The briefing is an opaque episode id, the page and the budgets. An agent that declares
``wants_ground_truth = True`` (only the oracle) receives ``bind_oracle(plan)`` before its first
act; it is an upper bound that proves solvability and is never ranked among baselines.

An agent whose *provider* fails (an LLM endpoint down, rate-limited past its retries) raises
:class:`ProviderError`: the sweep records the episode as a provider error, apart from model
failures, and carries on. Any other exception is recorded as an agent error.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from srezero.episode import Briefing, Observation


class ProviderError(RuntimeError):
    """The agent's model provider failed (HTTP 429/5xx, timeouts, connection errors) after retries."""


@runtime_checkable
class Agent(Protocol):
    def reset(self, task_info: Briefing, seed: int, tool_specs: list[dict[str, Any]]) -> None: ...

    def act(self, observation: Observation) -> Any: ...
