"""Run one episode with one agent and return its record (a JSON-able dict)."""

from __future__ import annotations

import time
from typing import Any

from srezero.episode import Episode


def run_episode(env: Episode, agent: Any, seed: int, max_steps: int | None = None) -> dict[str, Any]:
    obs, info = env.reset(seed=seed)
    agent.reset(env.briefing, seed, env.tool_specs())
    if getattr(agent, "wants_ground_truth", False):
        agent.bind_oracle(env.oracle_plan())
    limit = max_steps or env.spec.budget.steps + 5
    info: dict[str, Any] = {}
    for _ in range(limit):
        action = agent.act(obs)
        obs, _reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    result = info.get("result") or env.result
    record: dict[str, Any] = {
        "task_id": env.spec.id,
        "seed": seed,
        "result": result,
        "trajectory": env.trajectory,
    }
    usage = getattr(agent, "usage", None)
    if callable(usage):
        record["usage"] = usage()
    return record


def timed(fn, *args, **kwargs) -> tuple[Any, float]:
    t = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t
