"""``wait`` with a watch: it ends at the first sample of a metric past a bound, as an engineer watching
a graph would, and changes nothing else about how time passes."""

from __future__ import annotations

import numpy as np
import pytest

import srezero
from srezero.episode import Episode

AGE = {"target": "message_queue", "metric": "queue_age_s"}


def _after_the_fix() -> Episode:
    """inc-024 seed 146: a lock holder stalls the workers; once it is ended the backlog drains over minutes."""
    env = srezero.make("inc-024", seed=146)
    env.reset()
    pid = next(s["args"]["pid"] for s in env.oracle_plan() if s["tool"] == "terminate_session")
    assert env.step({"tool": "terminate_session", "args": {"pid": pid}})[0].ok
    return env


def _series(env: Episode, window_s: int = 900) -> list[float]:
    obs, *_ = env.step({"tool": "query_metrics", "args": {**AGE, "window_s": window_s}})
    return obs.data["values"]


def test_the_watch_ends_at_the_first_sample_past_the_bound() -> None:
    env = _after_the_fix()
    before = _series(env)[-1]
    assert before > 90
    t0 = env.world.now
    obs, *_ = env.step({"tool": "wait", "args": {"seconds": 600, **AGE, "below": 90}})
    waited = obs.data["waited_s"]
    assert obs.ok and obs.data["met"] and 0 < waited < 600 and env.world.now - t0 == waited
    assert obs.text.startswith(f"waited {waited} s of 600: queue_age_s of message_queue is ")
    assert obs.text.split(";")[0].endswith(", below 90")
    values = _series(env, 60 * ((waited + 120) // 60 + 1))
    # what the agent would see: the last sample is the one that ended the watch, the one before it was not below
    assert values[-1] == obs.data["value"] < 90 <= values[-2]


def test_a_watch_already_met_ends_at_once_and_one_never_met_runs_its_course() -> None:
    env = _after_the_fix()
    t0 = env.world.now
    obs, *_ = env.step({"tool": "wait", "args": {"seconds": 300, **AGE, "above": 0}})
    assert obs.data == {"waited_s": 0, "met": True, "value": obs.data["value"]} and env.world.now == t0
    obs, *_ = env.step({"tool": "wait", "args": {"seconds": 120, "target": "load_balancer", "metric": "error_rate",
                                                 "above": 0.99}})
    assert not obs.data["met"] and obs.data["waited_s"] == 120 and env.world.now == t0 + 120
    assert "waited 120 s of 120 (the watch ran out): error_rate of load_balancer is " in obs.text
    assert ", not above 0.99;" in obs.text


def test_a_watched_wait_runs_the_world_exactly_as_a_plain_one() -> None:
    """Stopping at each sample to look is not an event: the world after a watch that never ends early is
    byte for byte the world after a plain wait of the same length."""
    plain, watched = _after_the_fix(), _after_the_fix()
    plain.step({"tool": "wait", "args": {"seconds": 250}})
    watched.step({"tool": "wait", "args": {"seconds": 250, **AGE, "below": -1}})
    assert plain.world.now == watched.world.now and plain.world.col == watched.world.col
    assert np.array_equal(plain.world.buf, watched.world.buf)
    assert plain.step("get_alerts()")[0].text == watched.step("get_alerts()")[0].text


@pytest.mark.parametrize(("args", "error"), [
    ({"target": "message_queue"}, "a watch needs target and metric, and below or above"),
    ({"below": 5}, "a watch needs target and metric"),
    ({**AGE}, "a watch needs exactly one bound"),
    ({**AGE, "below": 5, "above": 1}, "a watch needs exactly one bound"),
    ({"target": "mq", "metric": "queue_age_s", "below": 5}, "unknown target 'mq'"),
    ({"target": "message_queue", "metric": "age", "below": 5}, "message_queue has no metric 'age'; available: "),
    ({**AGE, "below": float("nan")}, "the watch's bound must be a finite number"),
])
def test_half_a_watch_is_an_invalid_action_that_costs_no_wait(args: dict, error: str) -> None:
    env = _after_the_fix()
    t0 = env.world.now
    obs, *_ = env.step({"tool": "wait", "args": {"seconds": 600, **args}})
    assert not obs.ok and error in obs.error and env.st.invalid == 1
    assert env.world.now - t0 == 2.0  # an invalid action's cost, not the wait


def test_a_watch_stops_where_the_time_budget_does() -> None:
    env = srezero.make("inc-004", seed=0)
    env.reset()
    budget = env.spec.budget.time_s
    env.step("get_alerts()")
    while budget - (env.world.now - env.t0) > 600:
        env.step({"tool": "wait", "args": {"seconds": 600}})
    obs, _r, _term, truncated, info = env.step({"tool": "wait", "args": {
        "seconds": 600, "target": "load_balancer", "metric": "error_rate", "below": -1}})
    assert "of 600 (the time budget ran out): error_rate of load_balancer" in obs.text and truncated
    assert budget <= info["sim_time_s"] < budget + 1.0
