"""The inspect_ai front end: the registered task, a scripted mockllm eval scored like the core, openbench."""

from __future__ import annotations

import importlib
import sys
import types
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("inspect_ai")

from inspect_ai import eval as inspect_eval
from inspect_ai.model import (
    ChatMessageAssistant,
    ChatMessageTool,
    ChatMessageUser,
    ModelOutput,
    ModelUsage,
    get_model,
)
from inspect_ai.tool import ToolCall

import srezero
from srezero.adapters.inspect_task import (
    COMPONENTS,
    NO_DIAGNOSIS,
    NOT_EXECUTED,
    _seeds,
    _task_ids,
    incident,
    incident_dataset,
)
from tests.adapters.conftest import SEED, TASK, core_rollout

MODEL = "mockllm/model"


def _output(action: dict[str, Any] | str | ToolCall | list[Any]) -> ModelOutput:
    """A scripted model turn: a tool call for a dict action (or a ToolCall), a plain reply for a string,
    several tool calls in one turn for a list."""
    if isinstance(action, str):
        out = ModelOutput.from_content(MODEL, action)
    else:
        calls = action if isinstance(action, list) else [action]
        calls = [c if isinstance(c, ToolCall) else ToolCall(id=f"call-{i}", function=c["tool"], arguments=c["args"])
                 for i, c in enumerate(calls)]
        out = ModelOutput.for_tool_call(MODEL, calls[0].function, calls[0].arguments)
        out.choices[0].message = ChatMessageAssistant(content="", tool_calls=calls, model=MODEL)
    out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)  # keeps mockllm off the tokenizer
    return out


@dataclass
class Script:
    """Plays a fixed list of turns per sample, keyed by the sample's page (its first user message)."""

    turns: dict[str, list[Any]] = field(default_factory=dict)

    def __call__(self, messages: list[Any], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        page = next(m.text for m in messages if isinstance(m, ChatMessageUser))
        done = sum(isinstance(m, ChatMessageAssistant) for m in messages)  # one assistant message per turn
        return _output(self.turns[page][done])


def _eval(script: Script, task: str, tmp_path: Path, **seeds: Any) -> Any:
    logs = inspect_eval("srezero/incident", task_args={"task": task, **seeds},
                        model=get_model(MODEL, custom_outputs=script), log_dir=str(tmp_path), display="none")
    assert logs[0].status == "success", logs[0].error
    return logs[0]


def test_registered_task_with_scripted_oracle_scores_the_core_marks(oracle, tmp_path: Path) -> None:
    other = core_rollout(TASK, SEED + 1)
    refs = {oracle.page: oracle, other.page: other}
    log = _eval(Script({p: r.actions for p, r in refs.items()}), TASK, tmp_path, seeds=f"{SEED},{SEED + 1}")
    assert sorted(s.id for s in log.samples) == [f"{TASK}-seed-{SEED}", f"{TASK}-seed-{SEED + 1}"]
    for sample in log.samples:
        ref = refs[sample.input]
        score = sample.scores["incident_scorer"]
        assert score.value["marks"] == ref.result["marks"]
        assert score.value["diagnosis"] == ref.result["diagnosis"]["score"]
        assert score.metadata["result"]["steps"] == ref.result["steps"]
        tool_msgs = [m for m in sample.messages if isinstance(m, ChatMessageTool)]
        # tool results are the core observations, each with the budget left (or the end) after it
        assert [m.text.rsplit("\n\n", 1)[0] for m in tool_msgs] == ref.texts
        footers = [m.text.rsplit("\n\n", 1)[1] for m in tool_msgs]
        budget = srezero.make(TASK, SEED).spec.budget.steps
        assert [f.split(";")[0] for f in footers[:-1]] == [f"[step {i} of {budget}" for i in range(1, len(footers))]
        assert footers[-1] == "[episode ended: resolved]"
    metrics = {s.name: s.metrics for s in log.results.scores}
    assert set(metrics) == set(COMPONENTS)
    for name in COMPONENTS:
        assert {"mean", "stderr"} <= set(metrics[name])


def test_bad_calls_and_text_replies_step_the_episode_like_the_core(oracle, tmp_path: Path) -> None:
    turns = [{"tool": "query_metrics", "args": {"target": 3}}, {"tool": "no_such_tool", "args": {}},
             "get_topology()", "I will look at the database next.", *oracle.actions]
    ref = core_rollout(TASK, SEED, turns)
    log = _eval(Script({oracle.page: turns}), TASK, tmp_path, seed=SEED)
    result = log.samples[0].scores["incident_scorer"].metadata["result"]
    assert result["invalid_actions"] == 3 == ref.result["invalid_actions"]
    assert result["marks"] == ref.result["marks"] and result["steps"] == ref.result["steps"]
    errors = [m.error for m in log.samples[0].messages if isinstance(m, ChatMessageTool)][:2]
    assert [e.type for e in errors] == ["unknown", "unknown"]  # refused by the episode, not a parse error


def test_dataset_arguments() -> None:
    assert _seeds(3, 10) == [10, 11, 12]
    assert _seeds(7, 0) == _seeds("7", 0) == _seeds(" 7 ", 0) == list(range(7))  # -T seeds=7 passes the int 7
    assert _seeds(None, 5) == [5] and _seeds(None, 0, seed=7) == _seeds(None, 0, seed="7") == [7]
    assert _seeds("4, 9", 0) == [4, 9] and _seeds([1, 2], 0) == [1, 2] and _seeds("7,", 0) == [7]
    assert _seeds("3,3,1", 0) == [3, 1] and _seeds([2, "2"], 0) == [2]  # duplicates would repeat sample ids
    assert _seeds(["0", "7"], 0) == [0, 7] and _seeds(["7", ""], 0) == [7]  # -T seeds=0,7 and -T seeds=7,
    for seeds, start, seed, message in ((0, 0, None, "count >= 1"), ("a,b", 0, None, "non-negative integer"),
                                        ("a", 0, None, "give a count"), (True, 0, None, "seeds=True"),
                                        ([True], 0, None, "seeds=True"), (None, 0, True, "seed=True"),
                                        ("-1", 0, None, "count >= 1"), ("-1,2", 0, None, "non-negative"),
                                        (None, 0, -1, "non-negative"), (2, -1, None, "seed_start=-1"),
                                        (2, 0, 7, "not both"), (",", 0, None, "names no seed"),
                                        (1.5, 0, None, "seeds=1.5"), ([2**63], 0, None, "at most 2\\*\\*63 - 1")):
        with pytest.raises(ValueError, match=message):
            _seeds(seeds, start, seed)
    assert _task_ids("inc-001,inc-003") == ["inc-001", "inc-003"] and len(_task_ids(None)) >= 3
    assert _task_ids("inc-001, inc-001") == ["inc-001"]
    for bad in ("", " , ", []):
        with pytest.raises(ValueError, match="names no task"):
            _task_ids(bad)
    ds = incident_dataset(TASK, 2)
    assert [s.metadata for s in ds] == [{"task_id": TASK, "seed": 0}, {"task_id": TASK, "seed": 1}]
    assert ds[1].input == core_rollout(TASK, 1, []).page
    (path,) = [t.path for t in srezero.list_tasks() if t.id == TASK]
    same = incident_dataset(f"{TASK},{path}", "3,3")  # an id and its file are one task: one sample
    assert [s.id for s in same] == [f"{TASK}-seed-3"]
    with pytest.raises(KeyError):
        incident_dataset("no-such-task", 1)


def test_entry_points_and_openbench_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    eps = {ep.name: ep.value for ep in entry_points(group="inspect_ai")}
    assert eps.get("srezero") == "srezero.adapters.inspect_task"
    (ob,) = [ep for ep in entry_points(group="openbench.benchmarks") if ep.name == "srezero"]

    @dataclass
    class BenchmarkMetadata:  # the fields of openbench.utils.BenchmarkMetadata (openbench 0.5.3)
        name: str
        description: str
        category: str
        tags: list[str]
        module_path: str
        function_name: str
        is_alpha: bool = False
        subtask: bool = False

    stub = types.ModuleType("openbench.utils")
    stub.BenchmarkMetadata = BenchmarkMetadata
    monkeypatch.setitem(sys.modules, "openbench", types.ModuleType("openbench"))
    monkeypatch.setitem(sys.modules, "openbench.utils", stub)
    meta = ob.load()()["srezero"]
    assert not meta.is_alpha  # openbench would hide it behind --alpha
    task_fn = getattr(importlib.import_module(meta.module_path), meta.function_name)  # openbench's lookup
    assert task_fn is incident  # the task `inspect eval srezero/incident` runs


def _own_solver_task(finish: bool) -> Any:
    """A user's own inspect task: their solver, srezero's tools and scorer."""
    from inspect_ai import Task
    from inspect_ai.solver import solver

    from srezero.adapters.inspect_task import episode_tools, finish_episode, incident_scorer

    @solver
    def own_loop():
        async def solve(state, generate):
            seed = int(state.metadata["seed"])
            env = srezero.make(state.metadata["task_id"], seed)
            env.reset(seed=seed)
            state.tools = episode_tools(env)
            state = await generate(state, tool_calls="loop")
            if finish:
                finish_episode(env)
            return state

        return solve

    return Task(dataset=incident_dataset(TASK, seed=SEED), solver=own_loop(), scorer=incident_scorer())


@pytest.mark.parametrize("finish", [True, False])
def test_own_solver_with_episode_tools_is_scored_like_the_core(oracle, tmp_path: Path, finish: bool) -> None:
    resolved = _own_solver_task(finish)
    turns = [*oracle.actions, "done"]  # the loop stops at a reply without a tool call
    log = inspect_eval(resolved, model=get_model(MODEL, custom_outputs=Script({oracle.page: turns})),
                       log_dir=str(tmp_path / "resolved"), display="none")[0]
    assert log.samples[0].scores["incident_scorer"].value["marks"] == oracle.result["marks"]
    # stopped before resolve: scored as truncated only when the solver finishes the episode
    early = [*oracle.actions[:3], "done"]
    ref_env = srezero.make(TASK, SEED)
    ref_env.reset(seed=SEED)
    for action in oracle.actions[:3]:
        ref_env.step(action)
    ref = ref_env.finish()
    log = inspect_eval(_own_solver_task(finish), model=get_model(MODEL, custom_outputs=Script({oracle.page: early})),
                       log_dir=str(tmp_path / "early"), display="none")[0]
    score = log.samples[0].scores["incident_scorer"]
    if finish:
        assert score.metadata["result"]["truncated"] and score.value["marks"] == ref["marks"]
    else:
        assert score.value["marks"] == 0.0 and "finish_episode" in score.explanation


def test_an_inspect_limit_is_scored_as_truncated_and_says_so(oracle, tmp_path: Path) -> None:
    logs = inspect_eval("srezero/incident", task_args={"task": TASK, "seed": SEED}, message_limit=6,
                        model=get_model(MODEL, custom_outputs=Script({oracle.page: oracle.actions})),
                        log_dir=str(tmp_path), display="none")
    score = logs[0].samples[0].scores["incident_scorer"]
    assert score.metadata["result"]["truncated"] and "inspect limit" in score.explanation


def test_calls_after_the_end_in_one_turn_are_answered_as_not_executed(oracle, tmp_path: Path) -> None:
    *head, resolve = oracle.actions
    unparsable = ToolCall(id="bad", function="search_logs", arguments={}, parse_error="Expecting value: line 1")
    turns = [unparsable, *head, [resolve, {"tool": "get_status", "args": {}}, {"tool": "get_alerts", "args": {}}]]
    log = _eval(Script({oracle.page: turns}), TASK, tmp_path, seed=SEED)
    sample = log.samples[0]
    tools = [m for m in sample.messages if isinstance(m, ChatMessageTool)]
    assert tools[0].error.type == "parsing"  # inspect could not parse it: the one parse error
    calls = [c.id for m in sample.messages if isinstance(m, ChatMessageAssistant) for c in m.tool_calls or ()]
    assert [m.tool_call_id for m in tools] == calls  # every call has its tool message
    assert [m.text for m in tools[-2:]] == [NOT_EXECUTED] * 2 and tools[-3].error is None
    result = sample.scores["incident_scorer"].metadata["result"]
    assert result["steps"] == len(oracle.actions) + 1 and result["invalid_actions"] == 1  # the later calls never ran


def test_explanation_names_the_end_and_the_marks_terms_and_answer_tells_no_diagnosis(tmp_path: Path) -> None:
    wrong = [{"tool": "restart", "args": {"target": "database"}}, {"tool": "no_such_tool", "args": {}},
             {"tool": "resolve", "args": {}}]
    budget = srezero.make(TASK, 2).spec.budget.steps
    control = "inc-011"  # no fault: an empty diagnosis is the right answer, no diagnosis is not
    env = srezero.make(control, 1)
    env.reset()
    check = next(a for a in env.oracle_plan() if a["tool"] == "query_metrics")  # what shows the page was noise
    submit_empty = [check, {"tool": "submit_diagnosis", "args": {"root_causes": []}}, {"tool": "resolve", "args": {}}]
    turns = {core_rollout(TASK, 1, []).page: wrong, core_rollout(TASK, 2, []).page: ["get_alerts()"] * budget,
             core_rollout(control, 1, []).page: submit_empty, core_rollout(control, 2, []).page: wrong[2:]}
    log = inspect_eval("srezero/incident", task_args={"task": f"{TASK},{control}", "seeds": "1,2"},
                       model=get_model(MODEL, custom_outputs=Script(turns)), log_dir=str(tmp_path), display="none")[0]
    scores = {s.id: s.scores["incident_scorer"] for s in log.samples}
    premature = scores[f"{TASK}-seed-1"]
    assert premature.explanation.startswith("ended by resolve while a root cause was still active.")
    for term in ("wrong_fix_penalty -10.0", "invalid_penalty -1.0", "premature_penalty -10.0"):
        assert term in premature.explanation
    assert "diagnosis +" not in premature.explanation  # zero terms are left out
    assert premature.answer == NO_DIAGNOSIS
    spent = scores[f"{TASK}-seed-2"]
    assert spent.explanation.startswith(f"the step budget ran out ({budget} steps).")
    assert scores[f"{control}-seed-1"].answer == "[]" and scores[f"{control}-seed-2"].answer == NO_DIAGNOSIS
    assert scores[f"{control}-seed-1"].value["marks"] > scores[f"{control}-seed-2"].value["marks"]


def _react_task() -> Any:
    """The react() recipe of docs/integrations.md: no submit tool, stop once the episode has ended."""
    from inspect_ai import Task
    from inspect_ai.agent import AgentState, as_solver, react
    from inspect_ai.solver import Generate, TaskState, solver

    from srezero.adapters._common import INSTRUCTIONS
    from srezero.adapters.inspect_task import episode_tools, finish_episode, incident_scorer

    @solver
    def react_incident():
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            seed = int(state.metadata["seed"])
            env = srezero.make(state.metadata["task_id"], seed)
            env.reset(seed=seed)

            async def running(agent_state: AgentState) -> bool:  # stop at the end or at a reply without a call
                return env.result is None and bool(agent_state.output.message.tool_calls)

            try:
                agent = react(prompt=INSTRUCTIONS, tools=episode_tools(env), submit=False, on_continue=running)
                return await as_solver(agent)(state, generate)
            finally:
                finish_episode(env)

        return solve

    return Task(dataset=incident_dataset(TASK, seed=SEED), solver=react_incident(), scorer=incident_scorer())


def test_react_recipe_stops_at_the_end_and_inspect_drops_malformed_calls(oracle, tmp_path: Path) -> None:
    # after resolve the script has no turn left: a loop that went on would fail the sample
    turns = [{"tool": "query_metrics", "args": {"target": 3}}, *oracle.actions]
    log = inspect_eval(_react_task(), model=get_model(MODEL, custom_outputs=Script({oracle.page: turns})),
                       log_dir=str(tmp_path), display="none")[0]
    assert log.status == "success", log.error
    score = log.samples[0].scores["incident_scorer"]
    assert score.explanation.startswith("ended by resolve.")
    # the documented caveat: inspect rejected the malformed call itself, so the episode never saw it
    assert score.metadata["result"]["invalid_actions"] == 0 and score.value["marks"] == oracle.result["marks"]
    assert core_rollout(TASK, SEED, turns).result["invalid_actions"] == 1  # incident_agent would count it


def test_every_schema_bound_reaches_the_model_through_inspects_tool_params() -> None:
    """inspect's schema model has no field for some JSON-schema bounds and drops them; those must then
    be in the description, or a model under inspect never learns them."""
    from srezero.adapters._common import tool_declarations
    from srezero.adapters.inspect_task import episode_tools
    from srezero.tools.schema_words import bound_words

    bounds = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minItems", "maxItems", "maxLength")

    def bounded(node: Any, path: str = "") -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        if isinstance(node, dict) and any(k in node for k in bounds):
            found[path] = node
        for key, value in items:
            found.update(bounded(value, f"{path}/{key}"))
        return found

    declared = {d["name"]: bounded(d["parameters"]) for d in tool_declarations()}
    given = {t.name: t.parameters.model_dump(exclude_none=True) for t in episode_tools(srezero.make(TASK, SEED))}
    checked = 0
    for name, nodes in declared.items():
        for path, node in nodes.items():
            for key in bounds:
                if key not in node:
                    continue
                kept = given[name]
                for part in path.strip("/").split("/"):
                    kept = kept[int(part)] if isinstance(kept, list) else kept[part]
                words = bound_words({key: node[key]})[0]
                assert kept.get(key) == node[key] or words in kept.get("description", ""), (name, path, key)
                checked += 1
    assert checked >= 10
