"""Sweeps: resumable after a kill, identical for any worker count or executor, byte-reproducible."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

import srezero
from srezero.cli import cli
from srezero.sweep import records, runner

HERE = Path(__file__).resolve().parent
TASKS = ("inc-001", "inc-002", "inc-003")


def specs(ids=TASKS) -> dict:
    return {t: srezero.get_task(t) for t in ids}


def files(out: Path) -> dict[str, bytes]:
    """Every record plus the deterministic summary files, as bytes (the manifest is machine-specific)."""
    found = {str(p.relative_to(out)): p.read_bytes() for p in sorted((out / "episodes").rglob("*")) if p.is_file()}
    for name in (records.SUMMARY_JSON, records.SUMMARY_CSV, records.EPISODES_CSV):
        found[name] = (out / name).read_bytes()
    return found


def _slow_sweep(out: Path, args: list[str], slow: str, extra_env: dict[str, str] | None = None,
                **popen) -> subprocess.Popen:
    """``srezero sweep`` of the slow runbook over TASKS into ``out``, in a child process (``popen``: how)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
           "SREZERO_TEST_SLOW": slow, **(extra_env or {})}
    cmd = [sys.executable, "-c", "from srezero.cli import main; main()", "sweep", "--agents", "slow_agent:SlowRunbook",
           "--tasks", ",".join(TASKS), "--out", str(out), "--no-progress", *args]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, **popen)


def _wait_for_records(proc: subprocess.Popen, out: Path, n: int) -> None:
    """Wait until the running sweep has written ``n`` records."""
    deadline = time.monotonic() + 120
    while len(list((out / "episodes").rglob("seed-*.json"))) < n:
        assert proc.poll() is None, "the sweep ended before it could be stopped"
        assert time.monotonic() < deadline, "the sweep made no progress"
        time.sleep(0.01)


def test_killed_sweep_resumes_to_the_same_records(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(HERE))
    seeds = [0, 1, 2, 3]
    agent = runner.agent_spec("slow_agent:SlowRunbook", label="runbook")
    whole = tmp_path / "whole"
    runner.sweep(whole, [agent], specs(), seeds, workers=1, progress=False)

    killed = tmp_path / "killed"
    proc = _slow_sweep(killed, ["--label", "runbook", "--seeds", "4", "--workers", "1"], slow="0.15",
                       extra_env={"PYTHONHASHSEED": "12345"}, start_new_session=True, stderr=subprocess.DEVNULL)
    try:
        _wait_for_records(proc, killed, 3)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    done = list((killed / "episodes").rglob("seed-*.json"))
    assert 3 <= len(done) < len(TASKS) * len(seeds)
    stale = done[0].with_name(done[0].name + ".999.tmp")  # what a writer killed mid-write leaves
    stale.write_bytes(b'{"half": ')

    res = runner.sweep(killed, [agent], specs(), seeds, workers=2, progress=False)
    assert res.skipped == len(done) and res.ran == len(TASKS) * len(seeds) - len(done)
    assert not stale.exists()
    assert files(killed) == files(whole)
    again = runner.sweep(killed, [agent], specs(), seeds, workers=2, progress=False)
    assert again.ran == 0 and files(killed) == files(whole)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signalled_sweep_summarises_every_record_its_workers_wrote(tmp_path, sig):
    """A review interrupted a 2-worker sweep: 540 records on disk, 511 in the summary (workers write each
    record as it finishes; a batch cut off midway never reported its rows), and SIGTERM left no summary
    and a traceback per worker. Both signals now stop it cleanly, with the summary matching the disk."""
    out = tmp_path / "run"
    proc = _slow_sweep(out, ["--seeds", "8", "--workers", "2"], slow="0.05", stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_records(proc, out, 3)
        proc.send_signal(sig)  # the sweep process only, as a scheduler or `kill` does
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    recorded = len(list(records.record_paths(out)))
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, err
    assert recorded < len(TASKS) * 8
    summary = orjson.loads((out / records.SUMMARY_JSON).read_bytes())
    assert [g["n"] for g in summary["groups"] if g["task"] == "*"] == [recorded]
    assert len((out / records.EPISODES_CSV).read_text().splitlines()) == recorded + 1


def test_one_and_two_workers_give_identical_records_and_summary(tmp_path):
    agents = [runner.agent_spec(n) for n in ("random", "runbook", "greedy")]
    one, two = tmp_path / "one", tmp_path / "two"
    r1 = runner.sweep(one, agents, specs(), [0, 1], workers=1, progress=False)
    r2 = runner.sweep(two, agents, specs(), [0, 1], workers=2, progress=False)
    assert r1.summary == r2.summary
    assert files(one) == files(two)
    assert len([k for k in files(one) if k.startswith("episodes/")]) == 3 * len(TASKS) * 2


def test_manifest_and_a_changed_task_are_detected(tmp_path):
    agent = runner.agent_spec("greedy")
    runner.sweep(tmp_path, [agent], specs(("inc-001",)), [0], progress=False)
    m = records.load_manifest(tmp_path)
    assert m["seeds"] == [0] and m["tasks"]["inc-001"]["hash"] == records.task_hash(srezero.get_task("inc-001"))
    assert m["agents"]["greedy"]["name"] == "greedy" and m["srezero_version"] == srezero.__version__
    # adding seeds and tasks extends the run
    runner.sweep(tmp_path, [agent], specs(("inc-001", "inc-002")), [0, 1], progress=False)
    assert records.load_manifest(tmp_path)["seeds"] == [0, 1]
    # a rerun that asks for less (another agent, one seed) runs that, but summarises the whole directory
    res = runner.sweep(tmp_path, [runner.agent_spec("random")], specs(("inc-001",)), [0], progress=False)
    assert res.ran == 1 and len(res.rows) == 1
    whole = {(g["agent"], g["task"]): g["n"] for g in res.summary["groups"]}
    assert whole == {("greedy", "*"): 4, ("greedy", "inc-001"): 2, ("greedy", "inc-002"): 2,
                     ("random", "*"): 1, ("random", "inc-001"): 1}
    assert res.summary == runner.summarise_dir(tmp_path)  # exactly what --summary-only computes
    changed = srezero.get_task("inc-001").model_copy(update={"verify_window_s": 900.0})
    with pytest.raises(ValueError, match="task inc-001 changed"):
        runner.sweep(tmp_path, [agent], {"inc-001": changed}, [0], progress=False)
    with pytest.raises(ValueError, match=r"agent greedy has different settings from the recorded run \(name: "
                                         r"'greedy' -> 'random'; settings\.order: .*settings\.resolve_p: None -> "):
        runner.sweep(tmp_path, [runner.agent_spec("random", label="greedy")], specs(("inc-001",)), [0],
                     progress=False)


def test_how_an_agent_reaches_its_model_is_not_part_of_its_identity():
    """A resumed LLM run may use localhost for 127.0.0.1 or the same prices from another file; a
    different model or temperature is another agent. The error names only what differs."""
    old = {"name": "llm-react", "options": {"model": "m", "base_url": "http://127.0.0.1:1/v1", "price_table": "a.json"},
           "settings": {"model": "m", "temperature": 0.0, "timeout_s": 60, "price_per_mtok": [1.0, 2.0]}}
    same = {"name": "llm-react", "options": {"model": "m", "base_url": "http://localhost:1/v1", "price_table": "/x/a.json"},
            "settings": {"model": "m", "temperature": 0.0, "timeout_s": 30, "price_per_mtok": [1.0, 2.0]}}
    assert records.agent_differences(old, same) == []
    other = {**same, "settings": {**same["settings"], "temperature": 0.7, "price_per_mtok": [3.0, 2.0]}}
    assert records.agent_differences(old, other) == ["settings.price_per_mtok: [1.0, 2.0] -> [3.0, 2.0]",
                                                     "settings.temperature: 0.0 -> 0.7"]
    # resuming through another endpoint keeps the manifest's account of every endpoint the run used
    manifest = {"engine": "e", "tasks": {}, "seeds": [0], "agents": {"llm": old}}
    once = records.merge_manifest(manifest, {**manifest, "agents": {"llm": same}})
    assert once["agents"]["llm"]["options"]["base_url"] == "http://localhost:1/v1"
    used = once["agents"]["llm"]["transports"]
    assert [t["options.base_url"] for t in used] == ["http://127.0.0.1:1/v1", "http://localhost:1/v1"]
    back = records.merge_manifest(once, {**manifest, "agents": {"llm": old}})
    assert back["agents"]["llm"]["transports"] == used  # back to the first endpoint: nothing new, nothing lost
    assert records.merge_manifest(manifest, manifest)["agents"]["llm"] == old  # unchanged: no transports entry


def test_the_step_cap_truncates_and_scores_and_is_part_of_the_run(tmp_path):
    """--max-steps ends an episode as truncated and scores it (not an environment error); a rerun
    with another cap, or after the tool set changed, is refused rather than mixed into the run."""
    res = runner.sweep(tmp_path, [runner.agent_spec("oracle")], specs(("inc-001",)), [0], max_steps=3,
                       progress=False)
    (row,) = res.rows
    record = orjson.loads(records.record_path(tmp_path, "oracle", "inc-001", 0).read_bytes())
    assert row["status"] == "ok" and record["result"]["truncated"] and record["result"]["steps"] == 3
    assert records.load_manifest(tmp_path)["max_steps"] == 3
    with pytest.raises(ValueError, match=r"this sweep has no --max-steps \(each task's own step budget\), the recorded run --max-steps 3"):
        runner.sweep(tmp_path, [runner.agent_spec("oracle")], specs(("inc-001",)), [0], progress=False)
    m = records.load_manifest(tmp_path)
    records.write_json(tmp_path / records.MANIFEST, {**m, "tools": "sha256:0000000000000000"})
    with pytest.raises(ValueError, match="tool set changed"):
        runner.sweep(tmp_path, [runner.agent_spec("oracle")], specs(("inc-001",)), [0], max_steps=3,
                     progress=False)


def test_a_run_recorded_by_another_build_is_not_extended_silently(tmp_path):
    """Records made by another simulator/scoring build are not comparable: resuming is refused unless
    --allow-mixed, and the manifest then lists both builds instead of forgetting the first."""
    runner.sweep(tmp_path, [runner.agent_spec("random")], specs(("inc-001",)), [0], progress=False)
    m = records.load_manifest(tmp_path)
    assert m["engine"] == records.engine_hash() and m["builds"] == [
        {"srezero_version": m["srezero_version"], "git_revision": m["git_revision"], "engine": m["engine"]}]
    old = {**m, "engine": "sha256:0000000000000000", "srezero_version": "0.0.1", "git_revision": "abc1234"}
    old["builds"] = [{"srezero_version": "0.0.1", "git_revision": "abc1234", "engine": "sha256:0000000000000000"}]
    records.write_json(tmp_path / records.MANIFEST, old)
    with pytest.raises(ValueError, match=r"code changed .*0\.0\.1 at abc1234.*--allow-mixed"):
        runner.sweep(tmp_path, [runner.agent_spec("random")], specs(("inc-001",)), [1], progress=False)
    assert not records.record_path(tmp_path, "random", "inc-001", 1).exists()
    runner.sweep(tmp_path, [runner.agent_spec("random")], specs(("inc-001",)), [1], progress=False, allow_mixed=True)
    builds = records.load_manifest(tmp_path)["builds"]
    assert [b["engine"] for b in builds] == ["sha256:0000000000000000", records.engine_hash()]
    assert records.record_path(tmp_path, "random", "inc-001", 1).exists()


def test_allow_mixed_is_only_suggested_when_it_would_help(tmp_path):
    """A user review: a changed build and a changed tool set were refused with advice to pass
    --allow-mixed, which was then refused too (a changed tool set cannot be mixed)."""
    runner.sweep(tmp_path, [runner.agent_spec("random")], specs(("inc-001",)), [0], progress=False)
    old = {**records.load_manifest(tmp_path), "engine": "sha256:0000000000000000", "tools": ["get_alerts"]}
    records.write_json(tmp_path / records.MANIFEST, old)
    for allow_mixed in (False, True):
        with pytest.raises(ValueError, match="tool set changed") as exc:
            runner.sweep(tmp_path, [runner.agent_spec("random")], specs(("inc-001",)), [1], progress=False,
                         allow_mixed=allow_mixed)
        assert "--allow-mixed" not in str(exc.value) and str(exc.value).endswith("use a fresh --out directory")


def test_a_down_endpoint_stops_the_sweep_and_failures_fail_the_command(tmp_path, monkeypatch):
    """Ten provider errors in a row stop the sweep (the rest would only wait out retries), keeping what was
    recorded and writing its summary (a review found none); a command whose episodes failed exits non-zero after printing the table."""
    monkeypatch.syspath_prepend(str(HERE))
    down = runner.agent_spec("slow_agent:DownProvider", label="down")
    with pytest.raises(ValueError, match=r"stopped after 3 provider errors in a row .*--retry-errors"):
        runner.sweep(tmp_path / "a", [down], specs(TASKS), [0, 1, 2], progress=False, max_provider_errors=3)
    recorded = len(list(records.record_paths(tmp_path / "a")))
    assert 3 <= recorded < 9  # every episode that ran is kept, and the summary on disk counts them
    summary = orjson.loads((tmp_path / "a" / records.SUMMARY_JSON).read_bytes())
    assert [g["n"] for g in summary["groups"] if g["task"] == "*"] == [recorded]
    res = runner.sweep(tmp_path / "b", [down], specs(("inc-001",)), [0, 1], progress=False)
    assert res.errors == 2 and res.ran == 2
    out = CliRunner().invoke(cli, ["sweep", "--agents", "slow_agent:DownProvider", "--tasks", "inc-001", "--seeds", "1",
                                   "--out", str(tmp_path / "c"), "--no-progress", "--workers", "1"])
    assert out.exit_code == 1 and "1 of the 1 episode(s) run ended in a provider" in out.output, out.output
    out = CliRunner().invoke(cli, ["sweep", "--agents", "slow_agent:DownProvider", "--tasks", ",".join(TASKS),
                                   "--seeds", "4", "--out", str(tmp_path / "d"), "--no-progress", "--workers", "1"])
    assert out.exit_code == 1 and "stopped after 10 provider errors in a row" in out.output, out.output
    assert "MARKS [95% CI]" in out.output  # the table of what was recorded comes first, as for any failed run


def test_records_are_canonical_and_ground_truth_stays_in_the_result(tmp_path):
    runner.sweep(tmp_path, [runner.agent_spec("oracle")], specs(("inc-002",)), [4], progress=False)
    path = tmp_path / "episodes" / "oracle" / "inc-002" / "seed-0004.json"
    data = path.read_bytes()
    rec = orjson.loads(data)
    assert data == records.dumps(rec) and data.endswith(b"\n")
    assert rec["status"] == "ok" and rec["schema"] == records.SCHEMA and rec["agent"] == "oracle"
    assert "usage" not in rec  # deterministic agents have no wall-clock field at all
    assert rec["result"]["ground_truth"]
    assert not list(tmp_path.rglob("*.tmp"))


#: A user's agent in a module that is only in the sweep's working directory (not installed).
CWD_AGENT = """
class LooksThenResolves:
    def reset(self, briefing, seed, tool_specs):
        self.todo = ["get_alerts()", "resolve()"]

    def act(self, observation):
        return self.todo.pop(0)
"""


def test_ray_executor_matches_the_process_pool(tmp_path, monkeypatch):
    ray = pytest.importorskip("ray")
    project = tmp_path / "project"
    project.mkdir()
    (project / "cwd_only_agent_mod.py").write_text(CWD_AGENT)
    monkeypatch.chdir(project)  # Ray's workers run elsewhere: the module must be shipped to them
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "cwd_only_agent_mod", raising=False)
    agents = [runner.agent_spec(n) for n in ("runbook", "greedy", "cwd_only_agent_mod:LooksThenResolves")]
    task = specs(("inc-001",))
    runner.sweep(tmp_path / "proc", agents, task, [0, 1], workers=2, progress=False)
    monkeypatch.setenv("PYTHONHASHSEED", "7")  # Ray's workers, started by the sweep, inherit it
    try:
        runner.sweep(tmp_path / "ray", agents, task, [0, 1], workers=2, executor="ray", progress=False)
        assert ray.get_runtime_context().runtime_env.get("py_modules")  # the sweep shipped the module
    finally:
        ray.shutdown()
    assert files(tmp_path / "ray") == files(tmp_path / "proc")
    user = [orjson.loads(p.read_bytes()) for p in (tmp_path / "ray" / "episodes").rglob("seed-*.json")
            if p.parent.parent.name.startswith("cwd_only")]
    assert len(user) == 2 and all(r["status"] == "ok" for r in user)


def test_an_interrupted_sweep_leaves_a_summary_of_what_it_recorded(tmp_path):
    """Ctrl-C keeps every record written and rewrites the summary to match them, so summary.json never
    describes an older state of the run directory; a review's interrupted run had no (task, seed) that
    all its agents had played, so none of them could be compared."""
    batches = []

    def interrupt(n: int) -> None:
        batches.append(n)
        raise KeyboardInterrupt

    agents = [runner.agent_spec(n) for n in ("random", "greedy", "runbook")]
    with pytest.raises(KeyboardInterrupt):
        runner.sweep(tmp_path, agents, specs(), [0, 1, 2], progress=False, on_batch=interrupt)
    recorded = len(list(records.record_paths(tmp_path)))
    assert recorded == batches[0] < 27
    # the first episodes to run are whole cells, first seed first: the agents can be compared on them
    cells: dict[tuple[str, str], set[str]] = {}
    for path in records.record_paths(tmp_path):
        rec = records.read_record(path)
        cells.setdefault((rec["task_id"], rec["seed"]), set()).add(rec["agent"])
    assert all(got == {"random", "greedy", "runbook"} for got in cells.values()), cells
    assert {seed for _, seed in cells} == {0}  # 27 jobs, 4 batches of 9: the first is seed 0, all of it
    summary = orjson.loads((tmp_path / records.SUMMARY_JSON).read_bytes())
    assert sum(g["n"] for g in summary["groups"] if g["task"] == "*") == recorded


def test_the_manifest_names_the_library_versions_a_run_depends_on(tmp_path):
    """A review could not tell from a manifest which numpy drew the bootstrap or which simpy ran episodes."""
    from importlib.metadata import version

    runner.sweep(tmp_path, [runner.agent_spec("random")], specs(("inc-001",)), [0], progress=False)
    packages = records.load_manifest(tmp_path)["packages"]
    assert packages["numpy"] == version("numpy") and packages["simpy"] == version("simpy")
    assert set(packages) == set(records.PACKAGES)


def test_episodes_csv_carries_each_tasks_difficulty_and_split(tmp_path):
    """A review had to join manifest.json to break episodes down by difficulty or by split."""
    import csv

    ids = ("inc-001", "inc-008")  # easy and dev, medium and test
    runner.sweep(tmp_path, [runner.agent_spec("random")], specs(ids), [0, 1], progress=False)
    with open(tmp_path / records.EPISODES_CSV, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 4
    for row in rows:
        spec = srezero.get_task(row["task"])
        assert (row["difficulty"], row["split"]) == (spec.difficulty, spec.split)
    # summarised again from disk (--summary-only) it is the same file
    before = (tmp_path / records.EPISODES_CSV).read_bytes()
    runner.summarise_dir(tmp_path)
    assert (tmp_path / records.EPISODES_CSV).read_bytes() == before
