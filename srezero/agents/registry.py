"""Agent names -> classes. ``package.module:Class`` loads a user's own agent."""

from __future__ import annotations

import importlib
from typing import Any

BUILTIN = {
    "random": "baselines.random_agent:RandomAgent",
    "oracle": "baselines.oracle:OracleAgent",
    "runbook": "baselines.runbook:RunbookAgent",
    "greedy": "baselines.greedy:GreedyAgent",
    "shotgun": "baselines.shotgun:ShotgunAgent",
    "replay": "baselines.replay:ReplayAgent",
    "llm-prompt": "baselines.llm:PromptAgent",
    "llm-react": "baselines.llm:ReActAgent",
}
#: Deterministic baselines run by default in a sweep (the oracle is reported apart).
DEFAULT_SWEEP = ("oracle", "random", "runbook", "greedy", "shotgun")


def resolve(name: str) -> type:
    ref = BUILTIN.get(name, name)
    if ":" not in ref:
        raise ValueError(f"unknown agent {name!r}; built-in agents: {', '.join(BUILTIN)}; "
                         "or give package.module:Class")
    module, _, attr = ref.partition(":")
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        raise ValueError(f"cannot import agent module {module!r}: {exc}") from None
    try:
        return getattr(mod, attr)
    except AttributeError:
        raise ValueError(f"module {module!r} has no attribute {attr!r}") from None


def create(name: str, **kwargs: Any) -> Any:
    return resolve(name)(**kwargs)
