"""Streaming replication behind a long standby query (srezero/sim/replication.py)."""

from __future__ import annotations

import srezero
from srezero.sim.world import World

SEEDS = range(6)


def _lags_after_the_report(seed: int) -> tuple[World, float, list[tuple[float, float]]]:
    """inc-047's world (a report holds replay) to its page: the report's start and (tick time, lag)."""
    w = World.build(srezero.get_task("inc-047"), seed)
    seen: list[tuple[float, float]] = []
    ticker = w.alerts.evaluate

    def watch() -> None:  # runs in every tick, after replicate()
        seen.append((w.now, w.state.replication_lag_s))
        ticker()

    w.alerts.evaluate = watch
    w.page()
    return w, w.state.standby_query_since, [(t, lag) for t, lag in seen if t >= w.state.standby_query_since]


def test_replay_stalls_at_a_conflict_seconds_after_the_report_starts_and_the_lag_grows_by_the_second() -> None:
    stalls = set()
    for seed in SEEDS:
        w, since, lags = _lags_after_the_report(seed)
        stall = w.state.standby_stall_at - since
        assert 5.0 <= stall <= 60.0, stall
        stalls.add(stall)
        held = [(t, lag) for t, lag in lags if t > w.state.standby_stall_at]
        assert len(held) >= 3 and all(lag == 0.0 for t, lag in lags if t <= w.state.standby_stall_at)
        for t, lag in held:  # a paused replay trails by the time since it paused (it trailed by half that)
            assert lag == t - w.state.standby_stall_at, (seed, t, lag)
    assert len(stalls) == len(SEEDS)  # so the page's lag is no constant of the task


def test_terminating_the_report_drains_the_lag_and_its_rerun_stalls_replay_again() -> None:
    env = srezero.make("inc-047", seed=1)
    env.reset()
    w = env.world
    pid = w.state.standby_query_pid
    lag_at_page = w.state.replication_lag_s
    env.step({"tool": "terminate_session", "args": {"pid": pid}})
    assert w.state.standby_query_s == 0.0
    env.step({"tool": "wait", "args": {"seconds": 60}})
    assert w.state.replication_lag_s < lag_at_page  # replay resumed
    for _ in range(20):
        if w.state.standby_query_s > 0:
            break
        env.step({"tool": "wait", "args": {"seconds": 60}})
    assert w.state.standby_query_s > 0 and w.state.standby_query_pid != pid  # the dashboard ran it again
    assert 5.0 <= w.state.standby_stall_at - w.state.standby_query_since <= 60.0


def test_a_bounded_delay_cancels_the_conflicting_query_and_replay_catches_up() -> None:
    """Dogfooding: with the delay set back to 45 s, the lag sat at exactly 45 s and replay kept waiting
    for the report for ever; Postgres cancels it ("conflict with recovery") once the delay is waited out."""
    env = srezero.make("inc-047", seed=11)
    env.reset()
    st = env.world.state
    assert st.standby_query_s > 0 and st.replication_lag_s > 60
    env.step("set_config(service='database', key='max_standby_streaming_delay_s', value=45)")
    env.step("wait(seconds=150)")
    assert st.standby_query_s == 0 and st.replication_lag_s < 5
    logs, *_ = env.step("search_logs(service='database', pattern='conflict with recovery')")
    assert logs.text.count("canceling statement due to conflict with recovery") == 1
    activity, *_ = env.step("inspect_database(view='activity')")
    assert "metabase" not in activity.text
