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
    tool and validated arguments, an invalid one as the tool and arguments its repr holds (refused
    again, with the same error). An unrecordable object was recorded as its type name and replays as
    that text.
    """
    out: list[Any] = []
    for step in record.get("trajectory") or []:
        action = step.get("action")
        if isinstance(action, str) and action.startswith("Action(") and step.get("tool") and step.get("ok"):
            action = {"tool": step["tool"], "args": step.get("args") or {}}
        elif isinstance(action, str) and action.startswith("Action(") and (sent := _typed_action(action)):
            action = sent  # an invalid one: the same tool and arguments, refused again with the same words
        elif not isinstance(action, dict | str):
            action = str(action)
        out.append(action)
    return out


def _typed_action(text: str) -> dict[str, Any] | None:
    """``Action(tool='x', args={...})`` as a record holds it, back to ``{"tool", "args"}``; None when the
    text is no such call (its arguments are JSON-safe values, so their repr reads back literally)."""
    import ast

    try:
        call = ast.parse(text, mode="eval").body
        if not isinstance(call, ast.Call) or call.args:
            return None
        fields = {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords}
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        return None
    tool, args = fields.get("tool"), fields.get("args")
    return {"tool": tool, "args": args} if set(fields) == {"tool", "args"} and isinstance(tool, str) \
        and isinstance(args, dict) else None


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
    return Rerun(env, env.result, _divergence(env, actions, want, record.get("trajectory") or []))


def _divergence(env: Episode, actions: list[Any], want: dict[str, Any] | None,
                recorded: list[dict[str, Any]] = ()) -> str:
    if len(env.trajectory) != len(actions):
        return f"replayed {len(env.trajectory)} of {len(actions)} recorded steps"
    for step, was in zip(env.trajectory, recorded):  # what each step showed, not only where the episode ended
        if any(key in was and step.get(key) != was[key] for key in ("text", "error")):
            return f"step {step['step']} showed something else than the record holds"
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
