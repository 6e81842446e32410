"""Runbook, greedy and replay: observation-only, hurt where they should be, and replayable."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any
from unittest import mock

import numpy as np
import orjson
import pytest

import srezero
from srezero.agents import registry
from srezero.agents.runner import run_episode
from srezero.episode import Episode
from srezero.faults.base import Fault, load_all
from srezero.sweep import runner


def _forbidden(*_a: Any, **_k: Any) -> Any:
    raise AssertionError("ground truth touched")


@contextlib.contextmanager
def no_ground_truth() -> Iterator[None]:
    """Every privileged accessor raises: the episode's plan and truth, the faults, the task files."""
    with contextlib.ExitStack() as stack:
        for name in ("oracle_plan", "ground_truth", "_finish", "_healed_count"):
            stack.enter_context(mock.patch.object(Episode, name, _forbidden))
        classes = {c for cls in load_all().values() for c in cls.__mro__ if issubclass(c, Fault)}
        for cls in sorted(classes, key=lambda c: c.__qualname__):
            for name in ("root_cause", "oracle_reads", "oracle_fix", "signals", "neutralised", "why_active"):
                if name in vars(cls):
                    stack.enter_context(mock.patch.object(cls, name, _forbidden))
        for target in ("srezero.task.loader.get_task", "srezero.task.loader.list_tasks",
                       "srezero.task.loader.load_file", "srezero.sim.world.World.build"):
            stack.enter_context(mock.patch(target, _forbidden))
        for name in ("get_task", "list_tasks", "load_task", "make"):  # the lazy public API caches these
            stack.enter_context(mock.patch(f"srezero.{name}", _forbidden, create=True))
        yield


class Guarded:
    """Wraps an agent so that ground truth is out of reach whenever the agent itself runs."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def reset(self, *args: Any) -> None:
        with no_ground_truth():
            self.inner.reset(*args)

    def act(self, obs: Any) -> Any:
        with no_ground_truth():
            return self.inner.act(obs)


class Cheater:
    """Reads the task file: the guard must catch it (so the guard can fail)."""

    def reset(self, *args: Any) -> None:
        pass

    def act(self, obs: Any) -> Any:
        srezero.get_task("inc-001")
        return "resolve()"


def test_runbook_never_touches_ground_truth():
    for task, seed in (("inc-001", 0), ("inc-002", 1), ("inc-003", 2)):
        free = run_episode(srezero.make(task, seed), registry.create("runbook"), seed)
        guarded = run_episode(srezero.make(task, seed), Guarded(registry.create("runbook")), seed, catch=True)
        assert guarded["status"] == "ok", guarded["error"]
        assert orjson.dumps(guarded, option=orjson.OPT_SORT_KEYS) == orjson.dumps(free, option=orjson.OPT_SORT_KEYS)
    caught = run_episode(srezero.make("inc-001", 0), Guarded(Cheater()), 0, catch=True)
    assert caught["status"] == "agent_error" and "ground truth touched" in caught["error"]


def _marks(agent: str, spec: Any, seeds: range) -> list[float]:
    return [run_episode(Episode(spec, s), registry.create(agent), s)["result"]["marks"] for s in seeds]


def test_runbook_does_well_on_easy_and_badly_on_misleading():
    easy = np.mean(_marks("runbook", srezero.get_task("inc-001"), range(3)))
    misleading = np.mean(_marks("runbook", srezero.get_task("inc-002"), range(3)))
    assert easy >= 80 and misleading <= 20


def test_greedy_is_hurt_by_distractors():
    base = srezero.get_task("inc-001")
    clean = base.model_copy(update={"distractors": {}})
    noisy = base.model_copy(update={"distractors": {"transient_restart": 2, "unrelated_alert": 1}})
    seeds = range(10)  # noise alone lures it now and then too (a release rolling out at the page)
    calm = _marks("greedy", clean, seeds)
    hurt = [run_episode(Episode(noisy, s), registry.create("greedy"), s)["result"] for s in seeds]
    assert np.mean(calm) >= 80
    assert np.mean([r["marks"] for r in hurt]) <= np.mean(calm) - 40
    assert sum(r["distractor_actions"] for r in hurt) >= 3  # it acted on the red herrings
    # the runbook, which reads logs before acting, is not fooled by the same distractors
    assert np.mean(_marks("runbook", noisy, range(3))) >= 80


def test_replay_reproduces_a_recorded_episode(tmp_path):
    rec = run_episode(srezero.make("inc-002", 3), registry.create("greedy"), 3)
    path = tmp_path / "greedy.json"
    path.write_bytes(orjson.dumps(rec))
    again = run_episode(srezero.make("inc-002", 3), registry.create("replay", path=str(path)), 3)
    assert again["result"] == rec["result"] and again["trajectory"] == rec["trajectory"]


def test_replay_of_an_episode_stopped_early_stops_too(tmp_path):
    # a harness's step cap (like an abandoned MCP session) ends the episode truncated, with no resolve
    rec = run_episode(srezero.make("inc-002", 3), registry.create("runbook"), 3, max_steps=4)
    assert rec["result"]["truncated"] and not rec["result"]["resolved"]
    path = tmp_path / "stopped.json"
    path.write_bytes(orjson.dumps(rec))
    again = run_episode(srezero.make("inc-002", 3), registry.create("replay", path=str(path)), 3)
    assert again["status"] == "ok" and len(again["trajectory"]) == 4
    assert again["result"] == rec["result"] and again["trajectory"] == rec["trajectory"]


def test_replay_of_action_objects_keeps_valid_and_invalid_calls_apart(tmp_path):
    from srezero.tools.parse import Action

    class Scripted:
        def reset(self, *_):
            self.todo = [Action("get_alerts", {"bogus": 1}), Action("get_status", {"service": "database"})]

        def act(self, _obs):
            return self.todo.pop(0) if self.todo else {"tool": "resolve", "args": {}}

    rec = run_episode(srezero.make("inc-002", 1), Scripted(), 1)
    assert [(t["tool"], t["ok"]) for t in rec["trajectory"]] == [
        ("get_alerts", False), ("get_status", True), ("resolve", True)]
    path = tmp_path / "objects.json"
    path.write_bytes(orjson.dumps(rec))
    again = run_episode(srezero.make("inc-002", 1), registry.create("replay", path=str(path)), 1)
    assert [t["ok"] for t in again["trajectory"]] == [False, True, True]  # the bad call stays bad
    assert again["result"] == rec["result"]


def test_replay_from_action_file_and_env_var(tmp_path, monkeypatch):
    actions = tmp_path / "actions.txt"
    actions.write_text('# a hand-written session\nget_alerts()\n{"tool": "get_status", "args": {}}\n\nnot a call\n')
    monkeypatch.setenv("SREZERO_REPLAY", str(actions))
    rec = run_episode(srezero.make("inc-001", 0), registry.create("replay"), 0)
    assert [t["tool"] for t in rec["trajectory"]] == ["get_alerts", "get_status", None, "resolve"]
    monkeypatch.delenv("SREZERO_REPLAY")
    with pytest.raises(ValueError, match="SREZERO_REPLAY"):
        registry.create("replay")


def test_replay_of_a_run_directory_matches_episodes(tmp_path):
    specs = {"inc-001": srezero.get_task("inc-001"), "inc-003": srezero.get_task("inc-003")}
    src = tmp_path / "src"
    runner.sweep(src, [runner.agent_spec("runbook")], specs, [0, 1], progress=False)
    out = tmp_path / "replayed"
    res = runner.sweep(out, [runner.agent_spec("replay", path=str(src))], specs, [0, 1, 2], progress=False)
    by_key = {(r["task"], r["seed"]): r for r in res.rows}
    assert by_key[("inc-001", 2)]["status"] == "agent_error"  # no recorded episode for seed 2
    for tid in specs:
        for seed in (0, 1):
            a = orjson.loads((src / "episodes" / "runbook" / tid / f"seed-{seed:04d}.json").read_bytes())
            b = orjson.loads((out / "episodes" / "replay" / tid / f"seed-{seed:04d}.json").read_bytes())
            assert a["result"] == b["result"] and a["trajectory"] == b["trajectory"]


def _handled(signature: str, edits: list[tuple[str, str, str, str]]) -> Any:
    """The Finding a runbook signature's handler returns when the history holds ``edits`` (oldest first:
    service, key, old, new) and the configs are already read (so it needs no further observation)."""
    from baselines import runbook
    from baselines._observe import Change, View

    agent = runbook.RunbookAgent()
    agent.view = View(changes=[Change("", svc, "config", f"{key}: {old} -> {new}", {key: (old, new)})
                               for svc, key, old, new in edits],
                      configs={s: {} for s in ("web_server", "database", "load_balancer", "message_queue")})
    sig = next(s for s in runbook.SIGNATURES if s.name == signature)
    script = sig.handler(agent, "database", "db-x", sig.pattern.search("FATAL:  sorry, too many clients already"
                                                                      " worker pool saturated (8 busy)"))
    with pytest.raises(StopIteration) as done:
        next(script)
    return done.value.value


def test_runbook_reverts_the_setting_last_changed_in_the_harmful_direction():
    """"Too many clients" follows a larger web pool or a smaller max_connections: a later raise of
    max_connections is no suspect, so the pool change is undone; a later cut of it is."""
    pool_raised = ("web_server", "db_pool_size", "12", "220")
    finding = _handled("too_many_clients", [pool_raised, ("database", "max_connections", "430", "550")])
    assert finding.entity == "web_server.db_pool_size" and "220" in finding.detail
    assert finding.fixes == [{"tool": "set_config", "args": {"service": "web_server", "key": "db_pool_size",
                                                             "value": "12"}}]
    finding = _handled("too_many_clients", [pool_raised, ("database", "max_connections", "550", "40")])
    assert finding.entity == "database.max_connections" and finding.fixes[0]["args"]["value"] == "550"
    # with only a raise in the history nothing is reverted: the limit goes up (500 with no live value read)
    finding = _handled("too_many_clients", [("database", "max_connections", "430", "550")])
    assert finding.fixes[0]["args"] == {"service": "database", "key": "max_connections", "value": 500}
    # load shedding with no harmful change in the history falls back to scaling out
    finding = _handled("overload", [("web_server", "workers", "8", "24")])
    assert finding.category == "capacity" and finding.fixes[0]["tool"] == "scale"
