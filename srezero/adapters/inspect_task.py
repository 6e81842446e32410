"""inspect_ai front end: the ``srezero/incident`` task (registered through the ``inspect_ai`` entry point).

::

    inspect eval srezero/incident --model openai/gpt-4o -T task=inc-002 -T seeds=5

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
from srezero.adapters._common import INSTRUCTIONS, summary_line, tool_declarations
from srezero.episode import Episode, Observation

#: Where the solver leaves the finished episode's result for the scorer (a JSON-able dict).
RESULT_KEY = "srezero_result"
#: Set when an inspect limit (messages, tokens, time) stopped the sample before the episode ended.
CUT_SHORT_KEY = "srezero_cut_short"
#: The score components, in report order: marks (0-100) and its terms.
COMPONENTS = ("marks", "diagnosis", "mitigation", "evidence", "success", "penalty")
TEXT_ACTION_HINT = "\n(Answer with a tool call; a reply without one is read as a text action.)"


# ---------------------------------------------------------------------------- dataset
def _task_ids(task: str | list[str] | None) -> list[str]:
    if task is None or task == "all":
        return [t.id for t in srezero.list_tasks()]
    if isinstance(task, str):
        return [t.strip() for t in task.split(",") if t.strip()]
    return [str(t) for t in task]


def _seeds(seeds: int | str | list[int], seed_start: int) -> list[int]:
    if isinstance(seeds, int) and not isinstance(seeds, bool):
        if seeds < 1:
            raise ValueError(f"seeds={seeds}: give a count >= 1 or a comma-separated list of seeds")
        return list(range(seed_start, seed_start + seeds))
    items = seeds.split(",") if isinstance(seeds, str) else list(seeds)
    try:
        return [int(str(s).strip()) for s in items if str(s).strip()]
    except ValueError:
        raise ValueError(f"seeds={seeds!r}: give a count or a comma-separated list of integers") from None


def incident_dataset(task: str | list[str] | None = None, seeds: int | str | list[int] = 1,
                     seed_start: int = 0) -> MemoryDataset:
    """One sample per task and seed; the input is the page the on-call engineer receives."""
    samples = []
    for tid in _task_ids(task):
        for seed in _seeds(seeds, seed_start):
            env = srezero.make(tid, seed)
            obs, _ = env.reset(seed=seed)
            samples.append(Sample(id=f"{env.spec.id}-seed-{seed}", input=obs.text,
                                  metadata={"task_id": tid, "seed": seed}))
    return MemoryDataset(samples, name="srezero")


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
    store().set(RESULT_KEY, orjson.loads(orjson.dumps(env.finish())))


def episode_tools(env: Episode) -> list[ToolDef]:
    """The declared tools as inspect ToolDefs bound to one episode (usable by any inspect solver).

    When a call ends the episode (``resolve`` or a budget), its result is kept for the scorer."""

    def bind(name: str) -> Any:
        async def execute(**kwargs: Any) -> str:
            obs, *_ = env.step({"tool": name, "args": kwargs})
            if obs.done:
                finish_episode(env)
            return obs.text

        return execute

    return [ToolDef(bind(d["name"]), name=d["name"], description=d["description"],
                    parameters=ToolParams.model_validate(d["parameters"]))
            for d in tool_declarations()]


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
                        obs = env.step(_call_action(call))[0]
                        state.messages.append(_tool_message(call, obs))
                        if obs.done:
                            break
                else:
                    obs = env.step(message.text)[0]
                    state.messages.append(ChatMessageUser(content=obs.text + ("" if obs.ok else TEXT_ACTION_HINT)))
        finally:
            # an inspect limit (messages, tokens, time) ends the episode as truncated, scored like a budget
            if not obs.done:
                state.store.set(CUT_SHORT_KEY, True)
            finish_episode(env)
        state.completed = True
        return state

    return solve


def _tool_message(call: ToolCall, obs: Observation) -> ChatMessageTool:
    error = None if obs.ok else ToolCallError("parsing", obs.error or "invalid action")
    return ChatMessageTool(content=obs.text, tool_call_id=call.id, function=call.function, error=error)


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
        explanation = summary_line(result)
        if state.store.get(CUT_SHORT_KEY):
            explanation = ("stopped by an inspect limit before resolve or a budget; scored as truncated (the world "
                           "verified as the agent left it). " + explanation)
        return Score(value=score_components(result), answer=orjson.dumps(claims).decode(),
                     explanation=explanation, metadata={"result": result})

    return score


# ---------------------------------------------------------------------------- task
@task
def incident(task: str | None = None, seeds: int | str = 1, seed_start: int = 0) -> Task:
    """srezero incidents: ``-T task=ID`` (comma list, or all curated tasks by default),
    ``-T seeds=N`` (N seeds from ``seed_start``) or ``-T seeds=3,7,11``."""
    return Task(dataset=incident_dataset(task, seeds, seed_start), solver=incident_agent(),
                scorer=incident_scorer())
