"""srezero.replay: a record replays to the episode it records, however it ended, in every front end."""

from __future__ import annotations

import copy
from pathlib import Path

import orjson
import pytest

import srezero
from srezero.agents.runner import run_episode
from srezero.replay import ended_without_resolve, recorded_actions, rerun
from srezero.report.replay import resimulate
from srezero.tools.parse import Action

RECORDS = Path(__file__).resolve().parent.parent / "records" / "episodes"


def _as_saved(rec: dict) -> dict:
    return orjson.loads(orjson.dumps(rec))


@pytest.mark.parametrize("agent", ["runbook", "greedy", "random"])
def test_committed_records_replay_to_their_results(agent: str) -> None:
    paths = sorted((RECORDS / agent).glob("inc-00*/seed-0001.json"))
    assert len(paths) >= 5
    for path in paths:
        rec = orjson.loads(path.read_bytes())
        run = rerun(rec)
        assert run.diverged == "", (path, run.diverged)
        assert orjson.dumps(run.env.trajectory, option=orjson.OPT_SORT_KEYS) == orjson.dumps(rec["trajectory"])


class _Scripted:
    def __init__(self, actions: list) -> None:
        self.script = actions

    def reset(self, *_: object) -> None:
        self.todo = list(self.script)

    def act(self, _obs: object) -> object:
        return self.todo.pop(0) if self.todo else {"tool": "resolve", "args": {}}


def test_action_objects_replay_as_calls_and_invalid_ones_stay_invalid() -> None:
    agent = _Scripted([Action("get_alerts", {"bogus": 1}), Action("get_status", {"service": "database"})])
    rec = _as_saved(run_episode(srezero.make("inc-002", 1), agent, 1))
    assert recorded_actions(rec)[1] == {"tool": "get_status", "args": {"service": "database"}}
    assert recorded_actions(rec)[0] == {"tool": "get_alerts", "args": {"bogus": 1}}  # read back from its repr
    assert rerun(rec).diverged == ""  # step by step: the bad call is refused with the same words


def test_an_over_long_action_is_recorded_clipped_and_replays_to_the_same_refusal() -> None:
    """An agent could make its record megabytes long: every action was recorded whole, whatever its size."""
    from srezero.tools.parse import CLIPPED, MAX_ACTION_CHARS

    huge = [{"tool": "search_logs", "args": {"service": "worker", "pattern": "a" * 10**6}},
            {"tool": "get_alerts", "args": {"x" * 10**6: 1}}, {"tool": "get_alerts" * 10**5, "args": {}},
            "x" * 10**6, " " * 10**6 + "get_alerts()", Action("get_alerts", {"k": "v" * 10**6})]
    rec = _as_saved(run_episode(srezero.make("inc-002", 1), _Scripted([*huge, "get_alerts()"]), 1))
    steps = rec["trajectory"]
    assert all(len(orjson.dumps(step)) < 3 * MAX_ACTION_CHARS for step in steps)
    for step in steps[:len(huge)]:
        assert step["action"].endswith(CLIPPED) and len(step["action"]) == MAX_ACTION_CHARS + len(CLIPPED)
        assert step["error"] == f"the action is longer than the limit of {MAX_ACTION_CHARS:,} characters; send a shorter one"
    assert steps[len(huge)]["ok"]
    assert rerun(rec).diverged == ""


def test_a_replay_that_shows_other_steps_is_flagged_even_when_the_result_matches() -> None:
    """A record whose actions replay to the same result but not the same observations (here an agent's
    None, recorded as the text 'None', which is refused in other words) is not a faithful replay."""
    agent = _Scripted([None, "get_alerts()"])
    rec = _as_saved(run_episode(srezero.make("inc-002", 1), agent, 1))
    assert rec["trajectory"][0]["action"] == "None" and "not NoneType" in rec["trajectory"][0]["error"]
    assert rerun(rec).diverged == "step 1 showed something else than the record holds"


def test_an_episode_stopped_early_is_finished_the_same_way() -> None:
    """A harness that stopped before resolve() called finish(): the replay does so too, and the report's
    replay page no longer flags such a record as diverged."""
    env = srezero.make("inc-001", 4)
    env.reset()
    for action in ("get_alerts()", 'get_status(service="worker")'):
        env.step(action)
    result = env.finish()
    rec = _as_saved({"task_id": "inc-001", "seed": 4, "agent": "x", "status": "ok", "result": result,
                     "trajectory": env.trajectory})
    assert ended_without_resolve(rec)
    run = rerun(rec)
    assert run.diverged == "" and run.result is not None and not run.result["resolved"]
    rep = resimulate(rec)
    assert rep is not None and rep.diverged == "" and rep.marks == result["marks"]


def test_a_record_that_no_longer_matches_names_what_differs() -> None:
    rec = _as_saved(run_episode(srezero.make("inc-003", 0), _Scripted(["get_alerts()"]), 0))
    tampered = copy.deepcopy(rec)
    tampered["result"]["evidence_coverage"] = 0.123
    assert rerun(tampered).diverged == "replay's result differs from the record's in evidence_coverage"
    tampered["result"]["marks"] = 12.5
    assert "12.5" in rerun(tampered).diverged
    longer = copy.deepcopy(rec)
    longer["trajectory"].append(longer["trajectory"][-1])  # a step after resolve cannot be replayed
    assert rerun(longer).diverged == "replayed 2 of 3 recorded steps"


def test_a_record_without_a_result_stays_unfinished() -> None:
    rec = _as_saved(run_episode(srezero.make("inc-003", 0), _Scripted(["get_alerts()"]), 0))
    broken = {**rec, "status": "agent_error", "result": None, "trajectory": rec["trajectory"][:1]}
    run = rerun(broken)
    assert run.result is None and run.diverged == ""
