"""inspect_ai front end: the ``srezero/incident`` task (registered through the ``inspect_ai`` entry point).

::

    inspect eval srezero/incident --model openai/gpt-4o -T task=inc-002 -T seeds=5    # seeds 0..4
    inspect eval srezero/incident --model openai/gpt-4o -T task=inc-002 -T seed=7     # seed 7 only

One sample per (task, seed). Each sample gets its own seeded :class:`~srezero.episode.Episode`, the
tools derived from the one declaration are bound to that episode, and the solver plays the model
against it exactly as the core API would: every tool call the model makes is one ``Episode.step``
(a call inspect could not parse, an unknown tool or a bad argument is an invalid action, as in the
core), and a reply without a tool call is read as a text action (``get_alerts()`` works; prose is an
invalid action that costs a step), so every sample ends by ``resolve`` or a budget. The scorer reports
the episode's marks and their components, each with mean and stderr.
"""

from __future__ import annotations

from typing import Any

import orjson
from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageTool, ChatMessageUser
from inspect_ai.scorer import Score, Scorer, Target, mean, scorer, stderr
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import ToolCall, ToolCallError, ToolDef, ToolParams
from inspect_ai.util import store

import srezero
from srezero.adapters._common import INSTRUCTIONS, budget_line, summary_line, tool_declarations
from srezero.episode import MAX_SEED, Episode, Observation
from srezero.tools.schema_words import BOUND_WORDS, bound_words

#: Where the solver leaves the finished episode's result for the scorer (a JSON-able dict).
RESULT_KEY = "srezero_result"
#: Set when an inspect limit (messages, tokens, time) stopped the sample before the episode ended.
CUT_SHORT_KEY = "srezero_cut_short"
#: How the episode ended and whether a diagnosis was submitted (for the score's explanation and answer).
END_KEY = "srezero_end"
NO_DIAGNOSIS = "(no diagnosis submitted)"
NOT_EXECUTED = "not executed: the episode has ended"
#: The score components, in report order: marks (0-100) and its terms.
COMPONENTS = ("marks", "diagnosis", "mitigation", "evidence", "success", "penalty")
TEXT_ACTION_HINT = "\n(Answer with a tool call; a reply without one is read as a text action.)"


# ---------------------------------------------------------------------------- dataset
def _task_ids(task: str | list[str] | None) -> list[str]:
    if task is None or task == "all":
        return [t.id for t in srezero.list_tasks()]
    if isinstance(task, str):
        items: list[Any] = task.split(",")
    elif isinstance(task, list | tuple):
        items = list(task)
    else:
        raise ValueError(f"task={task!r}: give a task id, a comma-separated list of ids or a path to a task file")
    ids = [str(t).strip() for t in items if str(t).strip()]
    if not ids:
        raise ValueError(f"task={task!r} names no task: give a task id, a comma-separated list, or leave it out "
                         "for every curated task")
    return list(dict.fromkeys(ids))  # a repeated id would repeat sample ids, which inspect refuses


def _seed_value(value: Any, name: str) -> int:
    """One seed: a non-negative int (or its decimal text); bools are refused, not read as 0/1."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"{name}={value!r}: a seed is a non-negative integer")
    try:
        seed = int(value.strip()) if isinstance(value, str) else value
    except ValueError:
        raise ValueError(f"{name}={value!r}: a seed is a non-negative integer") from None
    if seed < 0:
        raise ValueError(f"{name}={value!r}: seeds are non-negative")
    if seed > MAX_SEED:
        raise ValueError(f"{name}={value!r}: seeds are at most 2**63 - 1")
    return seed


def _seeds(seeds: int | str | list[int] | None, seed_start: int = 0, seed: int | None = None) -> list[int]:
    """The seeds to play. ``seed=S``: just S. ``seeds=N`` (an int, or its text ``"N"``: ``-T seeds=7`` and
    ``seeds="7"`` mean the same): N seeds from ``seed_start``. A list, or text with a comma: those seeds."""
    if seed is not None:
        if seeds is not None:
            raise ValueError(f"give seed={seed!r} (one seed) or seeds={seeds!r}, not both")
        return [_seed_value(seed, "seed")]
    if seeds is None:
        seeds = 1
    if isinstance(seeds, str) and "," not in seeds:
        try:
            seeds = int(seeds.strip())
        except ValueError:
            raise ValueError(f"seeds={seeds!r}: give a count, a comma-separated list of seeds, "
                             "or seed=S for one seed") from None
    if isinstance(seeds, int) and not isinstance(seeds, bool):
        if seeds < 1:
            raise ValueError(f"seeds={seeds}: give a count >= 1, a comma-separated list of seeds, or seed=S")
        start = _seed_value(seed_start, "seed_start")
        return list(range(start, start + seeds))
    if isinstance(seeds, str):
        items: list[Any] = [s for s in seeds.split(",") if s.strip()]
    elif isinstance(seeds, list | tuple):  # inspect's CLI splits -T seeds=0,7 into ["0", "7"] ("7," into ["7", ""])
        items = [s for s in seeds if not (isinstance(s, str) and not s.strip())]
    else:
        raise ValueError(f"seeds={seeds!r}: give a count, a comma-separated list of seeds, or seed=S for one seed")
    if not items:
        raise ValueError(f"seeds={seeds!r} names no seed")
    return list(dict.fromkeys(_seed_value(s, "seeds") for s in items))


def incident_dataset(task: str | list[str] | None = None, seeds: int | str | list[int] | None = None,
                     seed_start: int = 0, seed: int | None = None) -> MemoryDataset:
    """One sample per task and seed; the input is the page the on-call engineer receives.

    ``seeds`` defaults to 1 (seed ``seed_start``); see :func:`_seeds` for the accepted forms."""
    samples: dict[str, Sample] = {}
    for tid in _task_ids(task):
        for s in _seeds(seeds, seed_start, seed):
            env = srezero.make(tid, s)
            obs, _ = env.reset(seed=s)
            sample_id = f"{env.spec.id}-seed-{s}"  # an id and a path to the same task are one sample
            samples.setdefault(sample_id, Sample(id=sample_id, input=obs.text, metadata={"task_id": tid, "seed": s}))
    return MemoryDataset(list(samples.values()), name="srezero")


# ---------------------------------------------------------------------------- tools
def _call_action(call: ToolCall) -> dict[str, Any]:
    """A model's tool call as a core action. Unparsable arguments stay unparsable, so the episode
    reports them (and counts an invalid action) exactly as it would for any other front end."""
    if call.parse_error:
        return {"tool": call.function, "arguments": f"<unparsable: {call.parse_error[:200]}>"}
    return {"tool": call.function, "args": call.arguments}


def finish_episode(env: Episode) -> None:
    """End ``env`` (as truncated if it is still running) and keep its result in the sample's store,
    where :func:`incident_scorer` reads it.

    Call it at the end of your own solver that uses :func:`episode_tools`: a sample whose episode
    ended by ``resolve`` or a budget is kept already, but one your solver stopped early is not."""
    result = env.finish()
    store().set(RESULT_KEY, orjson.loads(orjson.dumps(result)))
    store().set(END_KEY, {"how": _how_it_ended(env, result), "diagnosis_submitted": env.diagnosis_submitted})


def _how_it_ended(env: Episode, result: dict[str, Any]) -> str:
    budget = env.spec.budget
    return {"resolve": "ended by resolve" + (" while a root cause was still active"
                                             if result["premature_resolution"] else ""),
            "step_budget": f"the step budget ran out ({budget.steps} steps)",
            "time_budget": f"the simulated-time budget ran out ({budget.time_s / 60:g} min)",
            }.get(env.end_cause() or "", "stopped before resolve or a budget; scored as truncated")


def episode_tools(env: Episode) -> list[ToolDef]:
    """The declared tools as inspect ToolDefs bound to one episode (usable by any inspect solver).

    When a call ends the episode (``resolve`` or a budget), its result is kept for the scorer. Under
    inspect's own tool loop (``react``, ``generate(tool_calls="loop")``) inspect rejects malformed calls
    before they reach the episode, so they are not counted as invalid actions: report numbers from
    :func:`incident_agent` (docs/integrations.md shows a ``react`` recipe that stops at the end)."""

    def bind(name: str) -> Any:
        async def execute(**kwargs: Any) -> str:
            obs, *_ = env.step({"tool": name, "args": kwargs})
            if obs.done:
                finish_episode(env)
            return f"{obs.text}\n\n{budget_line(env, obs)}"

        return execute

    return [ToolDef(bind(d["name"]), name=d["name"], description=d["description"],
                    parameters=ToolParams.model_validate(_words_for_dropped(d["parameters"])))
            for d in tool_declarations()]


def _words_for_dropped(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` (modified in place) with every bound inspect's schema model has no field for appended
    to its description (inspect drops them silently, so the model would never learn them; the episode
    still enforces them as invalid actions)."""
    from inspect_ai.tool import ToolParam

    dropped_keys = {k for k in BOUND_WORDS if k not in ToolParam.model_fields}

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item)
        if not isinstance(node, dict):
            return
        dropped = bound_words(node, dropped_keys)
        if dropped:
            node["description"] = f"{node.get('description', '')} ({', '.join(dropped)})".lstrip()
        for value in node.values():
            walk(value)

    walk(schema)
    return schema


# ---------------------------------------------------------------------------- solver
@solver
def incident_agent() -> Solver:
    """Play the sample's episode: model turn -> episode steps, until resolve or a budget ends it."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        seed = int(state.metadata["seed"])
        env = srezero.make(state.metadata["task_id"], seed)
        obs, _ = env.reset(seed=seed)
        state.messages = [ChatMessageSystem(content=INSTRUCTIONS), ChatMessageUser(content=obs.text)]
        state.tools = episode_tools(env)
        try:
            while not obs.done:
                state = await generate(state, tool_calls="none")
                message = state.output.message
                if message.tool_calls:
                    for call in message.tool_calls:
                        if obs.done:  # every call needs its tool message, or the transcript is not valid to send
                            state.messages.append(ChatMessageTool(content=NOT_EXECUTED, tool_call_id=call.id,
                                                                  function=call.function,
                                                                  error=ToolCallError("unknown", NOT_EXECUTED)))
                            continue
                        obs = env.step(_call_action(call))[0]
                        state.messages.append(_tool_message(call, obs, budget_line(env, obs)))
                else:
                    obs = env.step(message.text)[0]
                    hint = "" if obs.ok else TEXT_ACTION_HINT
                    state.messages.append(ChatMessageUser(content=f"{obs.text}{hint}\n\n{budget_line(env, obs)}"))
        finally:
            # an inspect limit (messages, tokens, time) ends the episode as truncated, scored like a budget
            if not obs.done:
                state.store.set(CUT_SHORT_KEY, True)
            finish_episode(env)
        state.completed = True
        return state

    return solve


def _tool_message(call: ToolCall, obs: Observation, budget: str) -> ChatMessageTool:
    # "parsing" only when inspect could not parse the call's arguments; a call the episode refused
    # (unknown tool, bad value, a domain error) is not a parse error
    kind = "parsing" if call.parse_error else "unknown"
    error = None if obs.ok else ToolCallError(kind, obs.error or "invalid action")
    return ChatMessageTool(content=f"{obs.text}\n\n{budget}", tool_call_id=call.id, function=call.function,
                           error=error)


# ---------------------------------------------------------------------------- scorer
def score_components(result: dict[str, Any]) -> dict[str, float]:
    """Marks and its components: diagnosis score, mitigation, evidence coverage, success, penalties."""
    terms = result["marks_terms"]
    return {"marks": float(result["marks"]), "diagnosis": float(result["diagnosis"]["score"]),
            "mitigation": 1.0 if result["mitigated"] else 0.0, "evidence": float(result["evidence_coverage"]),
            "success": 1.0 if result["success"] else 0.0,
            "penalty": max(0.0, -sum(v for k, v in terms.items() if k.endswith("_penalty")))}


@scorer(metrics={name: [mean(), stderr()] for name in COMPONENTS})
def incident_scorer() -> Scorer:
    """The episode's marks (0-100) and components; an episode cut short by an inspect limit is scored as
    truncated (the world is verified as the agent left it), and the explanation says so."""

    async def score(state: TaskState, target: Target) -> Score:
        result = state.store.get(RESULT_KEY)
        if result is None:
            return Score(value=dict.fromkeys(COMPONENTS, 0.0),
                         explanation="no episode result: the episode never started, or a solver using "
                                     "episode_tools() stopped before resolve or a budget without finish_episode(env)")
        claims = result["diagnosis"].get("claims") or []
        end = state.store.get(END_KEY) or {"how": "ended", "diagnosis_submitted": bool(claims)}
        how = end["how"]
        if state.store.get(CUT_SHORT_KEY):
            how = ("stopped by an inspect limit before resolve or a budget; scored as truncated (the world "
                   "verified as the agent left it)")
        terms = ", ".join(f"{k} {v:+.1f}" for k, v in result["marks_terms"].items() if v) or "none"
        explanation = f"{how}. {summary_line(result)}. Marks terms: {terms}."
        # "[]" is an answer (no fault); not calling submit_diagnosis at all is a different one
        answer = orjson.dumps(claims).decode() if end["diagnosis_submitted"] else NO_DIAGNOSIS
        return Score(value=score_components(result), answer=answer, explanation=explanation,
                     metadata={"result": result})

    return score


# ---------------------------------------------------------------------------- task
@task
def incident(task: str | None = None, seeds: int | str | list[int] | None = None, seed_start: int = 0,
             seed: int | None = None) -> Task:
    """srezero incidents: ``-T task=ID`` (comma list, or all curated tasks by default);
    ``-T seeds=N`` (N seeds from ``seed_start``, default 1), ``-T seeds=3,7,11`` (those seeds) or
    ``-T seed=7`` (that seed only)."""
    return Task(dataset=incident_dataset(task, seeds, seed_start, seed), solver=incident_agent(),
                scorer=incident_scorer())
