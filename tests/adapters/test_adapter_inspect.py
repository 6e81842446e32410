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
    ChatMessageTool,
    ChatMessageUser,
    ModelOutput,
    ModelUsage,
    get_model,
)

from srezero.adapters.inspect_task import COMPONENTS, _seeds, _task_ids, incident, incident_dataset
from tests.adapters.conftest import SEED, TASK, core_rollout

MODEL = "mockllm/model"


def _output(action: dict[str, Any] | str) -> ModelOutput:
    """A scripted model turn: a tool call for a dict action, a plain reply for a string."""
    if isinstance(action, str):
        out = ModelOutput.from_content(MODEL, action)
    else:
        out = ModelOutput.for_tool_call(MODEL, action["tool"], action["args"])
    out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)  # keeps mockllm off the tokenizer
    return out


@dataclass
class Script:
    """Plays a fixed list of turns per sample, keyed by the sample's page (its first user message)."""

    turns: dict[str, list[Any]] = field(default_factory=dict)

    def __call__(self, messages: list[Any], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        page = next(m.text for m in messages if isinstance(m, ChatMessageUser))
        done = sum(isinstance(m, ChatMessageTool) for m in messages)
        done += sum(isinstance(m, ChatMessageUser) for m in messages) - 1  # replies read as text actions
        return _output(self.turns[page][done])


def _eval(script: Script, task: str, seeds: str, tmp_path: Path) -> Any:
    logs = inspect_eval("srezero/incident", task_args={"task": task, "seeds": seeds},
                        model=get_model(MODEL, custom_outputs=script), log_dir=str(tmp_path), display="none")
    assert logs[0].status == "success", logs[0].error
    return logs[0]


def test_registered_task_with_scripted_oracle_scores_the_core_marks(oracle, tmp_path: Path) -> None:
    other = core_rollout(TASK, SEED + 1)
    refs = {oracle.page: oracle, other.page: other}
    log = _eval(Script({p: r.actions for p, r in refs.items()}), TASK, f"{SEED},{SEED + 1}", tmp_path)
    assert sorted(s.id for s in log.samples) == [f"{TASK}-seed-{SEED}", f"{TASK}-seed-{SEED + 1}"]
    for sample in log.samples:
        ref = refs[sample.input]
        score = sample.scores["incident_scorer"]
        assert score.value["marks"] == ref.result["marks"]
        assert score.value["diagnosis"] == ref.result["diagnosis"]["score"]
        assert score.metadata["result"]["steps"] == ref.result["steps"]
        tool_msgs = [m for m in sample.messages if isinstance(m, ChatMessageTool)]
        assert [m.text for m in tool_msgs] == ref.texts  # tool results are the core observations
    metrics = {s.name: s.metrics for s in log.results.scores}
    assert set(metrics) == set(COMPONENTS)
    for name in COMPONENTS:
        assert {"mean", "stderr"} <= set(metrics[name])


def test_bad_calls_and_text_replies_step_the_episode_like_the_core(oracle, tmp_path: Path) -> None:
    turns = [{"tool": "query_metrics", "args": {"target": 3}}, {"tool": "no_such_tool", "args": {}},
             "get_topology()", "I will look at the database next.", *oracle.actions]
    ref = core_rollout(TASK, SEED, turns)
    log = _eval(Script({oracle.page: turns}), TASK, str(SEED), tmp_path)
    result = log.samples[0].scores["incident_scorer"].metadata["result"]
    assert result["invalid_actions"] == 3 == ref.result["invalid_actions"]
    assert result["marks"] == ref.result["marks"] and result["steps"] == ref.result["steps"]


def test_dataset_arguments() -> None:
    assert _seeds(3, 10) == [10, 11, 12]
    assert _seeds("4, 9", 0) == [4, 9] and _seeds([1, 2], 0) == [1, 2]
    for bad in (0, "a,b"):
        with pytest.raises(ValueError, match="seeds="):
            _seeds(bad, 0)
    assert _task_ids("inc-001,inc-003") == ["inc-001", "inc-003"] and len(_task_ids(None)) >= 3
    ds = incident_dataset(TASK, 2)
    assert [s.metadata for s in ds] == [{"task_id": TASK, "seed": 0}, {"task_id": TASK, "seed": 1}]
    assert ds[1].input == core_rollout(TASK, 1, []).page
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

    import srezero
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

    return Task(dataset=incident_dataset(TASK, str(SEED)), solver=own_loop(), scorer=incident_scorer())


@pytest.mark.parametrize("finish", [True, False])
def test_own_solver_with_episode_tools_is_scored_like_the_core(oracle, tmp_path: Path, finish: bool) -> None:
    resolved = _own_solver_task(finish)
    turns = [*oracle.actions, "done"]  # the loop stops at a reply without a tool call
    log = inspect_eval(resolved, model=get_model(MODEL, custom_outputs=Script({oracle.page: turns})),
                       log_dir=str(tmp_path / "resolved"), display="none")[0]
    assert log.samples[0].scores["incident_scorer"].value["marks"] == oracle.result["marks"]
    # stopped before resolve: scored as truncated only when the solver finishes the episode
    early = [*oracle.actions[:3], "done"]
    import srezero

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
    logs = inspect_eval("srezero/incident", task_args={"task": TASK, "seeds": str(SEED)}, message_limit=6,
                        model=get_model(MODEL, custom_outputs=Script({oracle.page: oracle.actions})),
                        log_dir=str(tmp_path), display="none")
    score = logs[0].samples[0].scores["incident_scorer"]
    assert score.metadata["result"]["truncated"] and "inspect limit" in score.explanation
