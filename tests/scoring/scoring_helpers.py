"""Tiny hand-built tasks and scripted trajectories for the scoring tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import srezero
from srezero.episode import Episode
from srezero.task.loader import parse_data
from srezero.task.spec import TaskSpec

#: A scripted action: a tool call dict, a text call, or a function of the episode returning one.
Step = dict[str, Any] | str | Callable[[Episode], Any]


def crash_loop_spec(**over: Any) -> TaskSpec:
    """Workers crash-loop after env.DATABASE_URL is emptied (like inc-001), quiet noise."""
    data: dict[str, Any] = {
        "id": "t-crash", "title": "crash loop", "description": "workers crash-loop (test task)",
        "difficulty": "easy", "faults": [{"primitive": "crash_loop", "target": "worker", "at": 60}],
        "noise": {"profile": "quiet"}, "alert": {"name": "QueueBacklogGrowing"}, "slo": {"queue_age_s": 180},
        "budget": {"steps": 30, "time_s": 1800},
    }
    data.update(over)
    return parse_data(data)


#: A read that shows crash_loop_spec's cause (its CrashLoopBackOff), so a diagnosis after it is grounded.
LOOK = 'get_status(service="worker")'


def pool_spec(**over: Any) -> TaskSpec:
    """A web_server release leaks database connections (rollback cures it)."""
    data: dict[str, Any] = {
        "id": "t-pool", "title": "pool", "description": "connection leak in a release (test task)",
        "difficulty": "easy", "faults": [{"primitive": "db_pool_exhaustion", "target": "web_server", "at": 60}],
        "noise": {"profile": "quiet"}, "budget": {"steps": 30, "time_s": 1800},
    }
    data.update(over)
    return parse_data(data)


def control_spec(**over: Any) -> TaskSpec:
    """Nothing is broken; a spurious alert pages."""
    data: dict[str, Any] = {
        "id": "t-control", "title": "control", "description": "no fault, the page is noise (test task)",
        "difficulty": "easy", "ground_truth": {"no_fault": True}, "noise": {"profile": "quiet"},
        "budget": {"steps": 20, "time_s": 1200},
    }
    data.update(over)
    return parse_data(data)


def run(spec: TaskSpec | str, actions: list[Step], seed: int = 0, reward: str = "shaped"
        ) -> tuple[Episode, dict[str, Any], list[float]]:
    """Play ``actions`` (then resolve, if the episode is still running); return env, result, rewards
    (shaped by default: these tests pin the shaping; ``srezero.make`` itself defaults to sparse)."""
    env = srezero.make(spec, seed, reward=reward)
    env.reset()
    rewards: list[float] = []
    info: dict[str, Any] = {}
    for a in [*actions, "resolve()"]:
        if env.st.done:
            break
        action = a(env) if callable(a) else a
        _obs, r, terminated, truncated, info = env.step(action)
        rewards.append(r)
        if terminated or truncated:
            break
    return env, info["result"], rewards


def truth_claims(env: Episode) -> dict[str, Any]:
    claims = [{"entity": rc.entity, "category": rc.category, "detail": rc.detail} for rc in env.truth]
    return {"tool": "submit_diagnosis", "args": {"root_causes": claims}}


def oracle_reads(env: Episode) -> list[dict[str, Any]]:
    return [a for a in env.oracle_plan() if env._tools[a["tool"]].kind == "read"]


def oracle_fix(env: Episode) -> list[dict[str, Any]]:
    return [a for f in env.faults for a in f.oracle_fix(env.world)]


def play_script(spec: TaskSpec, script: Callable[[Episode], list[Any]], seed: int = 0
                ) -> tuple[Episode, dict[str, Any], list[float]]:
    """Reset, build the action list from the live episode (privileged), play it, resolve."""
    env = srezero.make(spec, seed)
    env.reset()
    actions = script(env)
    rewards: list[float] = []
    info: dict[str, Any] = {}
    for a in [*actions, "resolve()"]:
        _obs, r, terminated, truncated, info = env.step(a)
        rewards.append(r)
        if terminated or truncated:
            break
    return env, info["result"], rewards
