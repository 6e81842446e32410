"""Telemetry is generated from the world's state (srezero/telemetry/): alerts, logs, traces, kernel
messages and disk health each follow a cause injected into one of two twin worlds, and stay quiet in
the other (see tests/sim/test_model.py for the twins)."""

from __future__ import annotations

import itertools
import re

import pytest

from srezero.sim.clock import TICK_S
from srezero.telemetry import logs, traces
from srezero.telemetry import node as node_telemetry
from srezero.telemetry.alerts import DEFAULT_RULES
from tests.sim.test_model import SEEDS, advance, at, twins
from tests.sim.twins import act

STAMP = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ) (DEBUG|INFO|WARN|ERROR)\s+(\S+) ")


def _firing(w, name: str) -> list:
    return [a for a in w.alerts.listing(w.now) if a.name == name and a.firing]


@pytest.mark.parametrize("seed", SEEDS)
def test_an_alert_fires_only_after_its_condition_held_for_its_duration_and_resolves_when_it_clears(seed: int) -> None:
    plain, touched = twins(seed)
    rule = next(r for r in DEFAULT_RULES if r.name == "CacheHitRatioLow")
    cache = touched.services["cache"].config
    healthy = cache["maxmemory_mb"]
    cache["maxmemory_mb"] = touched.state.cache_ws_mb / 10
    breached_at = None
    for _ in range(6):
        advance(TICK_S, plain, touched)
        if breached_at is None and at(touched, "cache", "hit_ratio") < rule.threshold:
            breached_at = touched.col
        held = (touched.col - breached_at) * TICK_S if breached_at is not None else -1.0
        assert bool(_firing(touched, "CacheHitRatioLow")) == (held >= rule.for_s), held
    assert not _firing(plain, "CacheHitRatioLow")
    alert = _firing(touched, "CacheHitRatioLow")[0]
    assert alert.entity == "cache" and re.fullmatch(r"cache hit ratio is \d+%", alert.summary)
    cache["maxmemory_mb"] = healthy
    for _ in range(20):
        advance(TICK_S, plain, touched)
        if at(touched, "cache", "hit_ratio") >= rule.threshold:
            break
    assert not _firing(touched, "CacheHitRatioLow")
    assert alert.resolved_at == touched.col * TICK_S  # the tick that read the ratio back above the threshold
    assert alert in touched.alerts.listing(touched.now - 60.0)  # recently resolved alerts are still listed


@pytest.mark.parametrize("seed", SEEDS)
def test_logs_are_per_replica_timestamped_in_order_and_speak_of_the_failing_dependency(seed: int) -> None:
    plain, touched = twins(seed)
    touched.topo.db_primary().state = "Terminated"
    advance(120.0, plain, touched)
    web = touched.services["web_server"].replicas
    names = {r.name for r in web}
    for w, errors_expected in ((plain, False), (touched, True)):
        lines, scanned, _ = logs.search(w, w.services["web_server"].replicas, "", "", 120.0, 200)
        assert lines and scanned >= len(lines)
        parsed = [STAMP.match(line) for line in lines]
        assert all(parsed), [ln for ln, m in zip(lines, parsed) if not m][:3]
        stamps = [m.group(1) for m in parsed]
        assert stamps == sorted(stamps)
        assert {m.group(3) for m in parsed} <= names
        assert stamps[0] >= w.stamp(w.now - 120.0 - TICK_S)  # nothing older than the window
        errors, _, _ = logs.search(w, w.services["web_server"].replicas, "", "error", 120.0, 200)
        assert all(" ERROR " in line for line in errors)
        about_db = [line for line in errors if re.search(r"db|database", line, re.IGNORECASE)]
        assert bool(about_db) == errors_expected
        assert len({line.split()[2] for line in about_db}) == (len(web) if errors_expected else 0)


@pytest.mark.parametrize("seed", SEEDS)
def test_crash_looping_workers_log_their_crash_and_no_finished_jobs(seed: int) -> None:
    plain, touched = twins(seed)
    act(plain, touched, "set_config", service="worker", key="env.DATABASE_URL", value="")
    advance(600.0, plain, touched)
    down = {r.name for r in touched.services["worker"].replicas if r.state == "CrashLoopBackOff"}
    assert down  # the rollout halts at the first pod that cannot start
    for w, crashed in ((plain, False), (touched, True)):
        pods = [r for r in w.services["worker"].replicas if r.name in down]
        lines, _, _ = logs.search(w, pods, "", "", 300.0, 500)
        finished = [ln for ln in lines if re.search(r"done in|took \d+ms", ln)]
        assert bool(finished) != crashed, finished[:3]
        assert any("DATABASE_URL" in ln for ln in lines) == crashed


@pytest.mark.parametrize("seed", SEEDS)
def test_traces_follow_the_call_path_and_carry_the_databases_latency_and_errors(seed: int) -> None:
    plain, slow = twins(seed)
    slow.topo.db_primary().node.data_disk.latency_mult = 30.0
    advance(300.0, plain, slow)

    def db_spans(w):
        return [s["ms"] for t in traces.sample(w, "database", False, 20) for s in t["spans"] if s["service"] == "database"]

    assert db_spans(plain) and db_spans(slow)
    assert min(db_spans(slow)) > max(db_spans(plain))
    for trace in traces.sample(slow, None, False, 20):
        assert trace["total_ms"] >= sum(s["ms"] for s in trace["spans"])
        assert trace["web_replica"] in {r.name for r in slow.services["web_server"].replicas}

    plain, down = twins(seed)
    down.topo.db_primary().state = "Terminated"
    advance(120.0, plain, down)
    failed = traces.sample(down, None, True, 10)
    assert failed and all(t["status"] >= 500 and t["error"] for t in failed)
    assert all(any(s["service"] == "database" and s["status"] == "error" for s in t["spans"]) for t in failed)
    assert traces.sample(plain, None, True, 10) == []


@pytest.mark.parametrize("seed", SEEDS)
def test_unreadable_sectors_show_in_dmesg_and_smart_of_that_disk_only(seed: int) -> None:
    plain, touched = twins(seed)
    primary = touched.topo.db_primary()
    disk = primary.node.data_disk
    disk.read_error_rate = 0.01
    advance(120.0, plain, touched)
    errors = [ln for ln in node_telemetry.dmesg(touched, primary.node, 40).splitlines() if "I/O error" in ln]
    assert errors and all(f"dev {disk.device}," in ln for ln in errors)
    for w in (plain, touched):
        for n in w.topo.nodes:
            if w is plain or n.name != primary.node.name:
                assert "I/O error" not in node_telemetry.dmesg(w, n, 40)
    media = re.compile(rf"/dev/{disk.device} .*?Media and Data Integrity Errors:\s+(\d+)", re.DOTALL)
    assert int(media.search(node_telemetry.disk_health(touched, primary.node)).group(1)) == disk.io_errors > 0
    assert int(media.search(node_telemetry.disk_health(plain, plain.topo.db_primary().node)).group(1)) == 0
    assert at(touched, primary.node.name, "disk_io_errors") > 0 == at(plain, primary.node.name, "disk_io_errors")


DMESG_STAMP = re.compile(r"^\[\s*(\d+\.\d{6})\] (.*)$")


@pytest.mark.parametrize("seed", SEEDS)
def test_kernel_stamps_scatter_like_a_kernels_but_keep_order_bursts_and_the_boot(seed: int) -> None:
    _, touched = twins(seed)
    primary = touched.topo.db_primary()
    primary.node.data_disk.read_error_rate = 0.01
    advance(300.0, touched)
    text = node_telemetry.dmesg(touched, primary.node, 40)
    stamps = [(float(m.group(1)), m.group(2)) for m in map(DMESG_STAMP.match, text.splitlines())]
    assert all(stamps) and len(stamps) > 8
    times = [t for t, _ in stamps]
    assert times == sorted(times) and times[0] == 0.0 and stamps[0][1].startswith("Linux version")
    live = [t for t, line in stamps if "I/O error" in line]
    # the model logs them on the tick; shown, each burst moves back by under a second, differently
    assert len({round(t % 1.0, 6) for t in live}) == len(live) > 3
    assert all(TICK_S - 1 < b - a < TICK_S + 1 for a, b in itertools.pairwise(live) if b - a > 1)
    assert text == node_telemetry.dmesg(touched, primary.node, 40)
    # a burst's lines (written at one moment) stay together and in the order the kernel wrote them
    burst = ["nvme nvme1: I/O 417 QID 3 timeout, aborting", "blk_update_request: I/O error, dev nvme1n1",
             "nvme nvme1: resetting controller"]
    touched.dmesg_lines[primary.node.name] += [(touched.now, line) for line in burst]
    tail = [(float(m.group(1)), m.group(2)) for m in map(DMESG_STAMP.match, node_telemetry.dmesg(
        touched, primary.node, 40).splitlines()[-3:])]
    assert [line for _, line in tail] == burst
    assert all(0 < b - a < 0.002 for (a, _), (b, _) in itertools.pairwise(tail))


def _change_stamps(acts: list[str], task: str = "inc-014", seed: int = 7) -> dict[str, float]:
    """Every change's detail -> its stamp (seconds after the page) after playing ``acts``, then a minute."""
    import srezero

    env = srezero.make(task, seed)
    env.reset()
    for a in [*acts, "wait(60)"]:
        env.step(a)
    return {c.detail: c.at - env.t0 for c in env.world.changes}


def test_the_agents_own_changes_do_not_move_the_stamps_of_anyone_elses() -> None:
    """A review: restarting an unrelated pod re-stamped a noise change made seconds before it (the lead
    of each change was drawn from how many changes came before it, the agent's included)."""
    import srezero

    pod = srezero.make("inc-014", 7)
    pod.reset()
    name = pod.world.services["web_server"].replicas[1].name
    quiet = _change_stamps(["get_alerts()", "get_changes()", "get_alerts()"])
    acted = _change_stamps(["get_alerts()", "get_changes()", f'restart("{name}")'])
    live = {d: t for d, t in quiet.items() if t > -600}  # made during the onset or the episode
    assert live, "no change near the page: the test would check nothing"
    assert {d: acted[d] for d in quiet} == quiet


def test_the_agents_own_change_is_stamped_when_it_made_it() -> None:
    import srezero

    env = srezero.make("inc-003", 1)
    env.reset()
    env.step("get_alerts()")
    began = env.world.now
    env.step('set_config("web_server", "db_retries", 1)')
    mine = [c for c in env.world.changes if c.author == "you (on-call)"]
    assert len(mine) == 1 and mine[0].at == began


SERVICES = ("load_balancer", "web_server", "cache", "database", "message_queue", "worker")


def _logs_after(task: str, seed: int, writes: list[dict]) -> tuple[dict[str, list[str]], float]:
    """Every service's log lines of the last 15 minutes, read after ``writes`` (made a minute after the
    page); and the time of the first write."""
    import srezero

    env = srezero.make(task, seed)
    env.reset()
    env.step("wait(seconds=60)")
    first = env.world.now
    for action in writes:
        env.step(action)
    out = {}
    for svc in SERVICES:
        obs, *_ = env.step({"tool": "search_logs", "args": {"service": svc, "window_s": 900, "limit": 200}})
        out[svc] = obs.text.splitlines()[1:]
    return out, first


@pytest.mark.parametrize("task", [t.id for t in __import__("srezero").list_tasks() if t.id not in ("inc-011", "inc-044")])
def test_a_past_log_line_reads_the_same_whatever_was_written_since(task: str) -> None:
    """A line is rendered when first read, from the state at its own time: a dogfooding review found
    inc-037's old worker lines naming other poison messages once the first ones were dead-lettered,
    and a dead-letter of a message the logs named then failed."""
    import srezero

    env = srezero.make(task, 3)
    env.reset()
    kinds = {spec["name"]: spec["kind"] for spec in env.tool_specs()}
    writes = [a for a in env.oracle_plan() if kinds[a["tool"]] == "write"]
    assert writes
    plain, first = _logs_after(task, 3, [])
    fixed, _ = _logs_after(task, 3, writes)
    cut = env.world.stamp(first)  # ISO stamps sort as text
    for svc in SERVICES:
        older = lambda lines: [ln for ln in lines if ln[:20] < cut]  # noqa: E731
        a, b = older(plain[svc]), older(fixed[svc])
        n = min(len(a), len(b))  # the later read's 15 minutes start later
        assert a[len(a) - n:] == b[len(b) - n:], svc


def test_a_pool_timeout_trace_waits_in_the_pool_and_never_reaches_the_database() -> None:
    """A dogfooding review: inc-009's traces showed a 2.8 s failed database span under "timeout acquiring
    db connection", pointing at a slow database whose p99 was 12 ms."""
    import srezero

    env = srezero.make("inc-009", 8)
    env.reset()
    obs, *_ = env.step("get_traces(errors_only=True, limit=10)")
    blocks = obs.text.split("\ntrace ")
    pool = [b for b in blocks if "timeout acquiring db connection" in b]
    assert pool and all("db pool acquire" in b and "database SELECT" not in b for b in pool)
