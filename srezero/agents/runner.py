"""Run one episode with one agent and return its record (a JSON-able dict).

With ``catch=True`` (what the sweep uses) nothing an agent or the environment raises escapes: the
record's ``status`` says what went wrong (``provider_error``, ``agent_error``, ``env_error``) and
``error`` carries the exception's type and message (no traceback: paths are machine-specific and
records must be byte-reproducible). Without it, exceptions propagate, which is what a developer
debugging an agent wants.

An agent may have ``step_info() -> dict``: its keys are added to the trajectory entry of the action
it just took (the LLM agents add ``model_reply``, the raw reply behind the action).
"""

from __future__ import annotations

from typing import Any

from srezero.agents.protocol import ProviderError, StopEpisode, agent_seed
from srezero.episode import Episode
from srezero.tools.parse import json_safe

#: What becomes the failure of the episode's agent (or environment) with ``catch=True`` instead of
#: propagating: any exception, and SystemExit (an agent that calls sys.exit must not end a sweep). A
#: sweep's worker processes add KeyboardInterrupt: they ignore SIGINT, so there only an agent raises it.
CAUGHT: tuple[type[BaseException], ...] = (Exception, SystemExit)


def describe_error(exc: BaseException) -> str:
    """``Type: message`` for a record or an error line, whatever the exception does when printed."""
    try:
        text = str(exc)
    except Exception:  # an agent's exception whose __str__ raises too
        text = "<its message could not be read>"
    return json_safe(f"{type(exc).__name__}: {text}"[:2000])


def _annotate(env: Episode, agent: Any) -> None:
    """Add the agent's ``step_info()`` (an LLM's raw reply) to the step's trajectory entry; the
    environment's own keys win. Agents without ``step_info`` leave the trajectory as it was."""
    fn = getattr(agent, "step_info", None)
    extra = fn() if callable(fn) else None
    if extra and env.trajectory:
        entry = env.trajectory[-1]
        for key, value in extra.items():
            entry.setdefault(key, json_safe(value))


def run_episode(env: Episode, agent: Any, seed: int, max_steps: int | None = None,
                catch: bool = False) -> dict[str, Any]:
    status, error = "ok", None
    info: dict[str, Any] = {}
    stage = "env"
    try:
        obs, _ = env.reset(seed=seed)
        specs = env.tool_specs()  # the environment's: a broken tool declaration is no agent's error
        stage = "agent"
        agent.reset(env.briefing, agent_seed(seed), specs)  # never the world's seed
        if getattr(agent, "wants_ground_truth", False):
            agent.bind_oracle(env.oracle_plan())
        limit = max_steps if max_steps is not None else env.spec.budget.steps + 5
        for _ in range(limit):
            stage = "agent"
            try:
                action = agent.act(obs)
            except StopEpisode:
                stage = "env"
                info = {"result": env.finish()}
                break
            stage = "env"
            obs, _reward, terminated, truncated, info = env.step(action)
            stage = "agent"
            _annotate(env, agent)
            if terminated or truncated:
                break
        else:  # the harness's step cap (--max-steps) came first: the episode is truncated and scored
            stage = "env"
            info = {"result": env.finish()}
    except ProviderError as exc:
        if not catch:
            raise
        status, error = "provider_error", describe_error(exc)
    except CAUGHT as exc:
        if not catch:
            raise
        status, error = f"{stage}_error", describe_error(exc)
    result = (info.get("result") or env.result) if status == "ok" else None
    record: dict[str, Any] = {
        "task_id": env.spec.id,
        "seed": seed,
        "episode_id": env.episode_id,
        # an agent that was handed the ground truth is an upper bound, never ranked with baselines
        "privileged": bool(getattr(agent, "wants_ground_truth", False)),
        "status": status,
        "error": error,
        "result": result,
        "trajectory": env.trajectory,
    }
    usage = getattr(agent, "usage", None)
    if callable(usage):
        record["usage"] = json_safe(usage())
    return record
