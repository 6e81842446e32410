"""Re-run a recorded episode: the record keeps the actions, the simulator is deterministic.

Replaying a record's (task, seed, actions) through :func:`srezero.make` rebuilds the episode it
records, world and all: the report's replay page charts it, ``srezero debrief`` explains it, and the
replay agent (``baselines/replay.py``) feeds the same actions to a harness. All three read a record's
actions here, so a record replays the same way everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from srezero.episode import Episode
    from srezero.task.spec import TaskSpec


def recorded_actions(record: dict[str, Any]) -> list[Any]:
    """The actions of a record's trajectory, as they were sent.

    A typed :class:`~srezero.tools.parse.Action` was recorded as its repr: a valid one replays as its
    tool and arguments; an invalid one replays as the repr, which is invalid again (its arguments were
    not recorded). An unrecordable object was recorded as its type name and replays as that text.
    """
    out: list[Any] = []
    for step in record.get("trajectory") or []:
        action = step.get("action")
        if isinstance(action, str) and action.startswith("Action(") and step.get("tool") and step.get("ok"):
            action = {"tool": step["tool"], "args": step.get("args") or {}}
        elif not isinstance(action, dict | str):
            action = str(action)
        out.append(action)
    return out


def ended_without_resolve(record: dict[str, Any]) -> bool:
    """Whether the recorded episode was cut short (a budget, a harness stopping, a player quitting)."""
    result = record.get("result") or {}
    return bool(result.get("truncated")) and not result.get("resolved")


@dataclass
class Rerun:
    """A record replayed: the finished episode, its result, and how it differs from the record."""

    env: Episode
    result: dict[str, Any] | None
    diverged: str  # "" when the replay reproduces the record's steps and result


def rerun(record: dict[str, Any], spec: TaskSpec | str | None = None) -> Rerun:
    """Replay ``record`` on its task (or ``spec``) and seed and end the episode as the record did.

    An episode the record ended early (``finish()`` by a harness, a player's quit) is finished the same
    way once its actions run out; a record without a result (an agent error) stays unfinished. Raises
    KeyError or ValueError when the task cannot be loaded or built.
    """
    import srezero
    from srezero.sweep.records import REWARD

    seed = int(record["seed"])
    env = srezero.make(spec if spec is not None else record["task_id"], seed, reward=REWARD)
    env.reset(seed=seed)
    actions = recorded_actions(record)
    for action in actions:
        if env.result is not None:
            break
        env.step(action)
    want = record.get("result")
    if env.result is None and want is not None:
        env.finish()
    return Rerun(env, env.result, _divergence(env, actions, want))


def _divergence(env: Episode, actions: list[Any], want: dict[str, Any] | None) -> str:
    if len(env.trajectory) != len(actions):
        return f"replayed {len(env.trajectory)} of {len(actions)} recorded steps"
    got = env.result
    if want is None or got is None:
        return "" if want is got else "the replay ended with a result the record does not have"
    # a key the record lacks was added to results after it was written (e.g. ``end``): not a divergence
    got = {k: v for k, v in got.items() if k in want}
    if orjson.dumps(got, option=orjson.OPT_SORT_KEYS) == orjson.dumps(want, option=orjson.OPT_SORT_KEYS):
        return ""  # compared as a record holds them (a record in memory may still have tuples and NaN)
    if got.get("marks") != want.get("marks"):
        return f"replay scored {got.get('marks')} marks, the record {want.get('marks')}"
    keys = sorted(k for k in set(got) | set(want) if orjson.dumps(got.get(k)) != orjson.dumps(want.get(k)))
    return f"replay's result differs from the record's in {', '.join(keys)}"
