"""The public episode API: shapes, action forms, budgets, the end of an episode."""

from __future__ import annotations

import orjson
import pytest

import srezero
from srezero.tools.parse import Action


def test_list_tasks_and_make() -> None:
    infos = srezero.list_tasks()
    assert len(infos) >= 3
    info = infos[0]
    assert info.id and info.title and info.difficulty in ("easy", "medium", "hard")
    env = srezero.make(info.id, seed=3)
    obs, info_d = env.reset()
    assert "PAGE" in obs.text and obs.ok and obs.steps_left == env.spec.budget.steps
    assert info_d["briefing"]["episode_id"].startswith("ep-")


def test_an_unknown_task_id_is_a_key_error_with_a_readable_message() -> None:
    with pytest.raises(KeyError) as err:
        srezero.make("inc-0001", seed=0)
    assert str(err.value).startswith("unknown task 'inc-0001'; did you mean inc-001")  # no KeyError quotes


def test_tool_specs_have_schemas() -> None:
    env = srezero.make("inc-001", 0)
    specs = env.tool_specs()
    names = {s["name"] for s in specs}
    for required in ("get_alerts", "get_topology", "get_status", "query_metrics", "search_logs", "get_traces",
                     "get_events", "get_config", "get_changes", "node_diagnostics", "restart", "rollback", "scale",
                     "set_config", "failover", "drain_node", "submit_diagnosis", "resolve"):
        assert required in names
    for s in specs:
        assert s["kind"] in ("read", "write", "submit")
        assert s["parameters"]["type"] == "object"
        assert s["description"]


def test_three_action_forms_are_equivalent() -> None:
    texts = []
    for action in ({"tool": "get_status", "args": {"service": "database"}}, 'get_status(service="database")',
                   Action("get_status", {"service": "database"}), "get_status('database')"):
        env = srezero.make("inc-002", 1)
        env.reset()
        obs, *_ = env.step(action)
        assert obs.ok, obs.error
        texts.append(obs.text)
    assert len(set(texts)) == 1


def test_step_budget_truncates_and_result_is_complete() -> None:
    env = srezero.make("inc-001", 0)
    env.reset()
    for i in range(env.spec.budget.steps):
        _obs, _reward, terminated, truncated, info = env.step("get_alerts()")
        if i < env.spec.budget.steps - 1:
            assert not truncated
    assert truncated and not terminated
    result = info["result"]
    for key in ("marks", "success", "diagnosis", "mitigated", "evidence_coverage", "invalid_actions", "steps",
                "sim_seconds", "ground_truth"):
        assert key in result
    assert result["steps"] == env.spec.budget.steps
    after, r, _terminated2, _, _ = env.step("get_alerts()")
    assert not after.ok and "ended" in after.text and r == 0.0


def test_time_budget_truncates() -> None:
    from srezero.task.spec import BudgetSpec

    spec = srezero.get_task("inc-001")
    env = srezero.make(spec.model_copy(update={"budget": BudgetSpec(steps=100, time_s=300)}), 0)
    env.reset()
    truncated = False
    steps = 0
    while not truncated:
        _, _, terminated, truncated, info = env.step('restart(target="load_balancer")')
        steps += 1
        assert not terminated
    assert steps < env.spec.budget.steps
    assert info["result"]["sim_seconds"] >= env.spec.budget.time_s


def test_resolve_terminates() -> None:
    env = srezero.make("inc-001", 0)
    env.reset()
    _, _, terminated, truncated, info = env.step("resolve()")
    assert terminated and not truncated
    assert info["result"]["resolved"] is True
    assert info["result"]["premature_resolution"] is True


def test_rewards_sum_to_marks() -> None:
    from tests.conftest import play

    for agent in ("oracle", "random"):
        rec = play("inc-002", 1, agent)
        total = sum(t["reward"] for t in rec["trajectory"])
        assert abs(total - rec["result"]["marks"] / 100.0) < 1e-9


def test_wait_passes_time_and_finish_scores_an_unfinished_episode() -> None:
    env = srezero.make("inc-002", 1)
    env.reset()
    obs, *_ = env.step("wait(seconds=120)")
    assert obs.ok and obs.sim_time_s == 120.0 and "edge error ratio" in obs.text
    result = env.finish()
    assert result["truncated"] is True and result["steps"] == 1
    assert env.finish() is result
    after, *_ = env.step("get_alerts()")
    assert not after.ok


def test_sparse_rewards_hide_progress_and_sum_to_marks() -> None:
    from srezero.agents import registry

    env = srezero.make("inc-002", 1, reward="sparse")
    obs, _ = env.reset()
    agent = registry.create("oracle")
    agent.reset(env.briefing, 1, env.tool_specs())
    agent.bind_oracle(env.oracle_plan())
    rewards = []
    done = False
    while not done:
        obs, r, terminated, truncated, info = env.step(agent.act(obs))
        rewards.append(r)
        done = terminated or truncated
    assert all(r == 0.0 for r in rewards[:-1])
    assert rewards[-1] == info["result"]["marks"] / 100.0


def test_a_tool_bug_is_an_error_observation_not_a_crash(monkeypatch) -> None:
    from srezero.tools.registry import load_tools

    def broken(ctx, **kwargs):
        raise AttributeError("secret internals")

    monkeypatch.setattr(load_tools()["get_alerts"], "fn", broken)
    env = srezero.make("inc-001", 0)
    env.reset()
    obs, *_ = env.step("get_alerts()")
    assert not obs.ok and "internal error in get_alerts" in obs.text and "secret" not in obs.text
    assert env.finish()["internal_errors"] == ["AttributeError: secret internals"]


def test_array_arguments_sent_as_json_text_are_decoded_in_the_core() -> None:
    """Model hosts often send arrays as JSON text; every front end gets the same answer (the core's)."""
    claims = [{"entity": "database", "category": "hardware", "detail": "x"}]
    as_list, as_text = srezero.make("inc-002", 0), srezero.make("inc-002", 0)
    for env, value in ((as_list, claims), (as_text, orjson.dumps(claims).decode())):
        env.reset()
        obs, *_ = env.step({"tool": "submit_diagnosis", "args": {"root_causes": value}})
        assert obs.ok, obs.text
    assert as_list.st.claims == as_text.st.claims
    obs, *_ = as_text.step({"tool": "submit_diagnosis", "args": {"root_causes": "not json"}})
    assert not obs.ok and "root_causes: must be a list, not the text" in obs.text  # text that is not an array is still rejected


def test_end_cause_and_diagnosis_submitted() -> None:
    env = srezero.make("inc-001", 0)
    env.reset(seed=0)
    assert env.end_cause() is None and not env.diagnosis_submitted
    env.step({"tool": "submit_diagnosis", "args": {"root_causes": [], "summary": "no fault"}})
    assert env.diagnosis_submitted  # an empty diagnosis is a submission
    env.step("resolve()")
    assert env.end_cause() == "resolve"
    stopped = srezero.make("inc-001", 0)
    stopped.reset(seed=0)
    stopped.step("get_alerts()")
    stopped.finish()
    assert stopped.end_cause() == "stopped" and not stopped.diagnosis_submitted
    spent = srezero.make("inc-001", 0)
    spent.reset(seed=0)
    for _ in range(spent.spec.budget.steps):
        spent.step("get_alerts()")
    assert spent.end_cause() == "step_budget"
    # the record says it too, so a report tells a quit from a budget running out without the task file
    ends = [(e.result["end"], e.result["truncated"]) for e in (env, stopped, spent)]
    assert ends == [("resolve", False), ("stopped", True), ("step_budget", True)]


def test_a_seed_is_an_integer_a_record_can_hold() -> None:
    """A bad seed is refused up front, never truncated (1.7 silently playing seed 1) or wrapped, and never
    played and then lost because no record can hold it."""
    import numpy as np

    for bad in (-1, 1.7, "3", True, None, 2**63, 10**20):
        with pytest.raises(ValueError, match="seed must be an integer from 0 to 2\\*\\*63 - 1"):
            srezero.make("inc-001", seed=bad)
    env = srezero.make("inc-001", seed=np.int64(2))  # numpy integers are integers
    env.reset()
    assert env.seed == 2 and type(env.seed) is int
    with pytest.raises(ValueError, match="seed must be an integer from 0"):
        env.reset(seed=-5)
    assert env.seed == 2 and env.step("get_alerts()")[0].ok  # the episode in play is untouched
    from srezero.commands import SEED
    from srezero.episode import MAX_SEED

    assert SEED.max == MAX_SEED and SEED.min == 0  # every CLI --seed takes the API's range
    top = srezero.make("inc-001", seed=MAX_SEED)
    top.reset()
    top.step("resolve()")
    assert orjson.loads(orjson.dumps(top.result))["seed"] == MAX_SEED  # the largest seed plays and is recorded


def test_wait_stops_where_the_time_budget_does() -> None:
    env = srezero.make("inc-004", seed=0)
    env.reset()
    budget = env.spec.budget.time_s
    env.step("get_alerts()")  # a few seconds, so the budget left is no multiple of a full wait
    while budget - (env.world.now - env.t0) > 600:
        env.step({"tool": "wait", "args": {"seconds": 600}})
    left = budget - (env.world.now - env.t0)
    assert 0 < left < 600
    obs, _r, terminated, truncated, info = env.step({"tool": "wait", "args": {"seconds": 600}})
    assert "of 600 (the time budget ran out)" in obs.text and truncated and not terminated
    assert budget <= info["sim_time_s"] < budget + 1.0  # not 600 s past the budget
    assert env.end_cause() == "time_budget" == info["result"]["end"]
