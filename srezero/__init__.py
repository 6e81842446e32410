"""srezero: a deterministic incident simulator and benchmark for site-reliability agents.

Public API (imported lazily, so ``import srezero`` stays fast)::

    import srezero
    srezero.list_tasks()                 # -> [TaskInfo(id, title, difficulty, tags, split, layers, roots, path)]
    srezero.get_task("inc-001")          # -> TaskSpec, by id, gen: id or .toml path
    srezero.load_task("my.toml")         # -> TaskSpec from a file, validated (errors name file, field, problem)
    env = srezero.make("inc-001", seed=3)
    obs, info = env.reset()
    obs, reward, terminated, truncated, info = env.step('get_alerts()')
    env.tool_specs()                     # -> [{"name", "description", "parameters", "kind", "cost_s"}]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from srezero._version import __version__

if TYPE_CHECKING:
    from srezero.episode import Briefing, Episode, Observation
    from srezero.task.spec import TaskInfo, TaskSpec
    from srezero.tools.parse import Action

__all__ = [
    "Action",
    "Briefing",
    "Episode",
    "Observation",
    "TaskInfo",
    "TaskSpec",
    "__version__",
    "get_task",
    "list_tasks",
    "load_task",
    "make",
    "tool_specs",
]

_LAZY = {
    "Action": ("srezero.tools.parse", "Action"),
    "Briefing": ("srezero.episode", "Briefing"),
    "Episode": ("srezero.episode", "Episode"),
    "Observation": ("srezero.episode", "Observation"),
    "TaskInfo": ("srezero.task.spec", "TaskInfo"),
    "TaskSpec": ("srezero.task.spec", "TaskSpec"),
    "get_task": ("srezero.task.loader", "get_task"),
    "load_task": ("srezero.task.loader", "load_file"),
    "list_tasks": ("srezero.task.loader", "list_tasks"),
    "tool_specs": ("srezero.tools.registry", "tool_specs"),
}


def make(task: str | TaskSpec, seed: int = 0, reward: str = "sparse", gamma: float = 1.0) -> Episode:
    """Create an episode for a task id, a path to a task file, or a TaskSpec. Call ``reset()`` next.

    ``reward="sparse"`` (default): 0 until the final step, which pays ``marks / 100``; safe to show an
    agent under evaluation. ``reward="shaped"`` returns potential-based per-step rewards for training;
    they carry information about the hidden state (a write that heals the fault pays at once), so an
    agent under evaluation must not see them (the Gymnasium adapters default to shaped: they are for
    training). ``gamma``: the learner's discount factor, so that shaping cannot make stalling pay
    (docs/scoring.md).
    """
    from srezero.episode import Episode
    from srezero.task.loader import get_task
    from srezero.task.spec import TaskSpec

    spec = task if isinstance(task, TaskSpec) else get_task(task)
    return Episode(spec, seed, reward, gamma)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'srezero' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public API only (``dir(srezero)``, tab completion), lazy names included."""
    return sorted(__all__)
