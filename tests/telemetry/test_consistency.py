"""Telemetry that agrees with itself: findings of a blind play-through (dogfooding review), each
pinned on the world it was found in."""

from __future__ import annotations

import re

import numpy as np

import srezero
from srezero.sim import metrics as M
from srezero.sim.clock import TICK_S


def _play(task: str, seed: int, *actions: str) -> tuple[srezero.Env, list[str]]:
    env = srezero.make(task, seed=seed)
    env.reset()
    return env, [env.step(a)[0].text for a in actions]


def test_a_finished_job_s_logged_duration_is_about_its_worker_s_median() -> None:
    # inc-040 seed 13: heavier jobs; the logs said "done in 35-41ms" beside a p50 of 600 ms
    env, (text,) = _play("inc-040", 13, "search_logs(service='worker', pattern='done in', window_s=300)")
    w = env.world
    stamps = re.findall(r"^(\S+) INFO  (\S+) job \w+ done in (\d+)ms", text, re.M)
    assert len(stamps) >= 3
    for _, name, ms in stamps:
        p50s = w.buf[w.topo.replicas[name].row + M.R_P50, w.col - 12 : w.col + 1]
        assert 0.5 * p50s.min() <= int(ms) <= 1.5 * p50s.max() + 1


def test_the_queue_s_head_message_is_as_old_as_the_backlog() -> None:
    env, _ = _play("inc-040", 13)
    oldest = env.world.state.mq_age_s  # as the read sees it (the step then advances the world)
    text = env.step("inspect_queue(view='messages')")[0].text
    h, m, s = map(int, re.search(r"(\d\d):(\d\d):(\d\d) ready", text).groups())
    assert oldest > 60 and abs(h * 3600 + m * 60 + s - oldest) <= 1


def test_open_files_never_read_past_the_kernel_s_table() -> None:
    # inc-013 seed 12: the shipper's leak; samples read 1,100,598 against fs.file-max 1048576
    env, _ = _play("inc-013", 12)
    w = env.world
    node = max(w.topo.nodes, key=lambda n: n.fds_used / n.fd_max)
    assert node.fds_used > node.fd_max  # demand is past the table ...
    series = w.series(w.row_of[(node.name, "open_fds")], 0, w.col)
    assert series.max() <= node.fd_max  # ... what the kernel counts is not
    out = env.step(f"node_diagnostics(node='{node.name}', check='limits')")[0].text
    held = int(re.search(r"fluent-bit (\d+)", out).group(1))
    assert held <= node.fd_max and "nofile=0/" not in out


def test_what_built_up_before_the_onset_climbs_in_the_history_and_its_alert_fires_from_then() -> None:
    # inc-019 seed 13: the disk read 36% then 98% one scrape later (590 GB in 30 s)
    env, (alerts,) = _play("inc-019", 13, "get_alerts()")
    w = env.world
    fault = w.faults[0]
    disk = fault.disk
    row = w.row_of[(disk.node.name, "data_disk_used_pct")]
    series = w.series(row, 0, w.col)
    per_tick = fault.params["fill_gb_per_h"] * TICK_S / 3600.0 / disk.capacity_gb * 100.0
    growth = disk.growth_gb_per_h * TICK_S / 3600.0 / disk.capacity_gb * 100.0  # its usual growth besides
    assert np.diff(series).max() <= per_tick + growth + 1e-6
    crossed = int(np.flatnonzero(series > 90.0)[0]) * TICK_S
    since = next(a.started_at for a in w.alerts.history if a.name == "DiskSpaceLow")
    assert since == crossed and "DiskSpaceLow" in alerts


def test_traces_say_why_none_were_sampled_and_timeouts_take_their_time() -> None:
    _env, (worker, failed) = _play("inc-051", 12, "get_traces(service='worker')", "get_traces(errors_only=true, limit=20)")
    assert "workers are not on the request path" in worker
    timeouts = re.findall(r"(\d+\.\d) ms  ERROR 500\n.*\n.*error: (?:publish failed: )?i/o timeout", failed)
    assert timeouts and all(float(ms) >= 1000.0 for ms in timeouts)
    _, (edge,) = _play("inc-005", 11, "get_traces(errors_only=true)")
    assert edge.startswith("no failed requests among the traces sampled")


def test_the_edge_s_timeout_tail_grows_with_the_time_requests_have_waited() -> None:
    # inc-051 seed 12: the edge p99 read 255 s thirty seconds after the onset
    env, _ = _play("inc-051", 12)
    w = env.world
    p99 = w.buf[w.row_of[("load_balancer", "latency_p99_ms")], : w.col + 1]
    bad = np.flatnonzero(p99 > 5000.0)
    assert bad.size
    start = int(bad[0])
    for k, col in enumerate(range(start, w.col + 1)):
        assert p99[col] <= (k + 1) * TICK_S * 1000.0 + 1.0
    assert p99.max() <= 60_000.0


def test_the_edge_holds_no_more_connections_than_its_limit_of_the_time() -> None:
    # inc-005 seed 11: max_connections cut to 53 while active_connections kept reading 130
    env, _ = _play("inc-005", 11)
    w = env.world
    cfg = w.services["load_balancer"].config
    row = w.row_of[("load_balancer", "active_connections")]
    series = w.series(row, 0, w.col)
    limits = np.array([cfg.at("max_connections", c * TICK_S) for c in range(w.col + 1)])
    assert (series <= limits).all() and series.max() > cfg["max_connections"]  # it held more before the cut


def test_the_conntrack_count_never_reads_past_the_table_of_its_time() -> None:
    # inc-014 seed 15: conntrack_used read 12,411-13,323 beside "nf_conntrack_count: 4096 / nf_conntrack_max
    # 4096 (table full)"; the kernel drops new flows instead of tracking them
    env, _ = _play("inc-014", 15)
    w = env.world
    node = next(n for n in w.topo.nodes if n.limit_log)
    (changed_at, _, before), = node.limit_log
    assert node.conntrack_used > node.conntrack_max  # demand is past the table ...
    row = w.row_of[(node.name, "conntrack_used")]
    cols = np.arange(w.col + 1)
    series = w.series(row, 0, w.col)
    after = cols * TICK_S >= changed_at
    assert series[after].max() <= node.conntrack_max  # ... what the kernel tracks is not
    assert series[~after].max() > node.conntrack_max  # the past read the normal count, under the old table
    assert series[~after].max() <= before
    narrowed, col = node.conntrack_max, w.col
    env.step(f"set_sysctl(node='{node.name}', key='net.netfilter.nf_conntrack_max', value=2048)")
    env.step("wait(seconds=120)")
    series = w.series(row, 0, w.col)  # a smaller table later leaves the past under the one of its time
    assert series[: col + 1][after].max() <= narrowed and series[col + 2 :].max() <= 2048


def test_the_oldest_message_ages_no_faster_than_time() -> None:
    # inc-018 seed 16: queue_age_s read 0, 76.6, 117.7, 298.6 at 30 s steps after the queue had been empty
    env, _ = _play("inc-018", 16, "wait(seconds=600)")
    w = env.world
    ages = w.buf[w.row_of[("message_queue", "queue_age_s")], : w.col + 1]
    assert ages.max() > 60  # the backlog did grow old ...
    assert np.diff(ages).max() <= TICK_S + 1e-9  # ... a tick at a time


def test_every_lock_waiter_waits_on_the_blocker_s_one_transaction() -> None:
    # inc-024 seed 14: waiters named transactions 87158, 89707, 83850 ... all held by backend 53698
    _, (text,) = _play("inc-024", 14, "search_logs(service='database', pattern='ShareLock')")
    waits = re.findall(r"ShareLock on transaction (\d+) .* Process holding the lock: (\d+)\.", text)
    assert len(waits) >= 3
    assert len(set(waits)) == 1


def test_a_query_span_ends_by_its_client_timeout_and_a_timed_out_request_shows_each_attempt() -> None:
    # inc-003 seed 14: "database SELECT orders 115.6 ms ok" beside db_timeout_ms = 7, and a request whose
    # logs said "attempt 5/5" showed one 7 ms span
    env, _ = _play("inc-003", 14)
    w = env.world
    cfg = w.services["web_server"].config
    timeout, tries = float(cfg["db_timeout_ms"]), int(cfg["db_retries"]) + 1
    traces = env.step("get_traces(service='database', limit=20)")[0].data
    spans = [s for t in traces for s in t["spans"] if s["service"] == "database"]
    assert spans and all(s["ms"] <= timeout for s in spans)
    timed_out = [t for t in env.step("get_traces(service='database', errors_only=True)")[0].data
                 if t["error"] == "db query timeout"]
    assert timed_out
    for t in timed_out:
        attempts = [s for s in t["spans"] if s["service"] == "database"]
        assert len(attempts) == tries and all(s["status"] == "timeout" for s in attempts)
        assert t["total_ms"] >= tries * timeout


def _request_ids(task: str, seed: int) -> list[str]:
    _, (text,) = _play(task, seed, "search_logs(service='web_server', pattern='rid=', window_s=3600, limit=200)")
    return re.findall(r"rid=([0-9a-f]+)", text)


def test_request_ids_do_not_repeat_within_or_across_episodes() -> None:
    # a blind player met rid=ba097461 in inc-024 seed 14 and again in inc-036 seed 16: ids were drawn from
    # a shared table of 4,099 values
    first, second = _request_ids("inc-024", 14), _request_ids("inc-036", 16)
    assert len(first) >= 100 and len(second) >= 100
    assert len(set(first)) == len(first) and len(set(second)) == len(second)
    assert not set(first) & set(second)
