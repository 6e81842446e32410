"""Statistics, record helpers and the ``srezero sweep`` command."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import orjson
import pytest
from click.testing import CliRunner

import srezero
from srezero.cli import cli
from srezero.sweep import records, stats
from srezero.sweep.progress import Progress


def _rows(n: int, agent: str = "a", task: str = "t") -> list[dict]:
    rng = np.random.default_rng(0)
    out = []
    for seed in range(n):
        row = {"agent": agent, "task": task, "seed": seed, "status": "ok"}
        row.update(dict.fromkeys(records.METRICS, 0.0))
        row["marks"] = float(rng.uniform(0, 100))
        row["success"] = float(seed % 2)
        row["ttd_s"] = None if seed % 3 == 0 else float(seed * 10)
        out.append(row)
    return out


def test_bootstrap_ci_brackets_the_mean_and_narrows_with_n():
    small = stats.bootstrap(np.array([r["marks"] for r in _rows(10)]), "k")
    big = stats.bootstrap(np.array([r["marks"] for r in _rows(400)]), "k")
    for m in (small, big):
        assert m["lo"] < m["mean"] < m["hi"]
    assert (big["hi"] - big["lo"]) < (small["hi"] - small["lo"]) / 3
    assert stats.bootstrap(np.array([5.0, 5.0, 5.0]), "k") == {"mean": 5.0, "lo": 5.0, "hi": 5.0, "n": 3}
    assert stats.bootstrap(np.array([np.nan, np.nan]), "k")["mean"] is None
    # a proportion's interval for 50/100 successes is close to the normal approximation (+-0.098)
    half = stats.bootstrap(np.array([1.0] * 50 + [0.0] * 50), "p")
    assert half["lo"] == pytest.approx(0.40, abs=0.02) and half["hi"] == pytest.approx(0.60, abs=0.02)


def test_an_agents_interval_resamples_tasks_not_correlated_episodes():
    """Seeds of one task move together: 20 tasks x 5 identical seeds hold 20 independent values, not 100,
    so the agent's CI must be as wide as the CI of the 20 task means (and wider than an episode bootstrap)."""
    task_means = np.random.default_rng(1).uniform(0, 100, 20)
    values = np.repeat(task_means, 5)
    tasks = np.repeat([f"t{i:02d}" for i in range(20)], 5)
    clustered = stats.bootstrap(values, "k", clusters=tasks)
    naive = stats.bootstrap(values, "k")
    per_task = stats.bootstrap(task_means, "k")
    width = lambda m: m["hi"] - m["lo"]  # noqa: E731
    assert clustered["mean"] == naive["mean"] and clustered["n"] == 100
    assert width(clustered) > 1.8 * width(naive)
    assert width(clustered) == pytest.approx(width(per_task), rel=0.15)
    # an agent that ran one task: its seeds are the units, not a single cluster with a zero-width CI
    one = stats.bootstrap(np.array([10.0, 30.0, 50.0, 70.0]), "k", clusters=np.array(["t"] * 4))
    assert one["lo"] < one["mean"] < one["hi"] and one == stats.bootstrap(np.array([10.0, 30.0, 50.0, 70.0]), "k")


def test_a_constant_proportion_gets_the_wilson_interval_not_zero_width():
    none = stats.bootstrap(np.zeros(43), "s", proportion=True)
    assert none["mean"] == 0.0 and none["lo"] == 0.0 and none["hi"] == pytest.approx(0.082, abs=0.001)
    every = stats.bootstrap(np.ones(5), "s", proportion=True)
    assert every["hi"] == 1.0 and every["lo"] == pytest.approx(0.566, abs=0.001)
    # over tasks, the units are the 43 tasks however many seeds each has
    tasks = np.repeat([f"t{i}" for i in range(43)], 5)
    assert stats.bootstrap(np.zeros(215), "s", clusters=tasks, proportion=True)["hi"] == none["hi"]
    assert stats.bootstrap(np.zeros(3), "m") == {"mean": 0.0, "lo": 0.0, "hi": 0.0, "n": 3}  # marks: no Wilson


def test_a_single_independent_unit_has_no_interval_not_a_zero_width_one():
    """One episode (or one task's cluster when the clusters are tasks with one defined value) says nothing
    about spread; lo = hi = mean would read as certainty."""
    assert stats.bootstrap(np.array([298.0]), "ttm") == {"mean": 298.0, "lo": None, "hi": None, "n": 1}
    assert stats.bootstrap(np.array([np.nan, 7.0, np.nan]), "ttd") == {"mean": 7.0, "lo": None, "hi": None, "n": 1}
    # a 0/1 proportion of one unit keeps its (wide) Wilson interval, which is honest about it
    one = stats.bootstrap(np.array([1.0]), "s", proportion=True)
    assert one["hi"] == 1.0 and one["lo"] < 0.25
    summary = stats.summarise([r for r in _rows(3) if r["seed"] == 1])
    header, table = stats.csv_rows(summary)
    row = dict(zip(header, table[0]))
    assert (row["ttd_s"], row["ttd_s_lo"], row["ttd_s_hi"], row["ttd_s_n"]) == (10.0, None, None, 1)
    assert row["privileged"] == 0 and row["marks_n"] == 1


def test_consistency_counts_tasks_solved_on_every_seed():
    rows = []
    for task, successes in (("a", [1, 1, 1]), ("b", [1, 0, 1]), ("c", [0, 0, 0]), ("d", [1, 1, 1])):
        rows += [{**r, "task": task, "success": float(x)} for r, x in zip(_rows(3), successes)]
    group = next(g for g in stats.summarise(rows)["groups"] if g["task"] == "*")
    assert group["tasks"] == 4 and group["metrics"]["success"]["mean"] == pytest.approx(8 / 12, abs=1e-6)
    assert group["consistency"]["mean"] == 0.5 and group["consistency"]["k"] == 3


def test_summary_is_order_independent_and_skips_undefined_values():
    rows = _rows(12) + _rows(5, agent="b") + _rows(6, task="u")
    rows.append({"agent": "b", "task": "t", "seed": 99, "status": "provider_error", **dict.fromkeys(records.METRICS)})
    shuffled = list(rows)
    random.Random(3).shuffle(shuffled)
    s1, s2 = stats.summarise(rows), stats.summarise(shuffled)
    assert orjson.dumps(s1) == orjson.dumps(s2)
    groups = {(g["agent"], g["task"]): g for g in s1["groups"]}
    assert set(groups) == {("a", "*"), ("a", "t"), ("a", "u"), ("b", "*"), ("b", "t")}
    assert groups[("a", "*")]["n"] == 18 and groups[("b", "t")]["provider_errors"] == 1
    assert groups[("b", "t")]["n"] == 6  # every episode counts, the failed one too
    assert groups[("a", "t")]["metrics"]["ttd_s"]["n"] == 8  # seeds 0, 3, 6, 9 have no TTD
    header, table = stats.csv_rows(s1)
    assert header[:3] == ["agent", "task", "n"] and "marks_lo" in header and len(table) == 5


def test_a_failed_episode_counts_as_zero_not_as_missing():
    """Raising an exception must not let an agent drop the episodes it would fail."""
    ok = {"agent": "a", "task_id": "t", "seed": 0, "status": "ok",
          "result": {"marks": 90.0, "success": True, "diagnosis": {"score": 1.0}, "mitigated": True,
                     "evidence_coverage": 1.0, "steps": 5, "invalid_actions": 0, "wrong_fixes": 0, "writes": [],
                     "ttd_s": 10.0, "ttm_s": 20.0}}
    failed = {"agent": "a", "task_id": "t", "seed": 1, "status": "agent_error", "result": None}
    row = records.row_of(failed)
    assert row["marks"] == 0.0 and row["success"] == 0.0 and row["ttd_s"] is None
    group = next(g for g in stats.summarise([records.row_of(ok), row])["groups"] if g["task"] == "*")
    assert group["metrics"]["marks"]["mean"] == 45.0 and group["agent_errors"] == 1 and group["n"] == 2
    # what a failed LLM episode cost was still paid: spend is counted, not dropped
    outage = {**failed, "status": "provider_error",
              "usage": {"prompt_tokens": 900, "completion_tokens": 100, "cost_usd": 0.02}}
    row = records.row_of(outage)
    assert (row["tokens"], row["cost_usd"], row["marks"]) == (1000.0, 0.02, 0.0)


def test_record_paths_hashes_and_atomic_writes(tmp_path):
    p = records.record_path(tmp_path, "llm-react@org/model", "gen:x/y", 7)
    assert p.relative_to(tmp_path).as_posix() == "episodes/llm-react@org_model/gen_x_y/seed-0007.json"
    spec = srezero.get_task("inc-001")
    assert records.task_hash(spec) == records.task_hash(spec.model_copy())
    assert records.task_hash(spec) != records.task_hash(spec.model_copy(update={"verify_window_s": 700.0}))
    records.write_atomic(p, records.dumps({"b": 1, "a": {"d": 2, "c": np.int64(3)}}))
    assert p.read_bytes() == b'{"a":{"c":3,"d":2},"b":1}\n'
    assert [x.name for x in p.parent.iterdir()] == ["seed-0007.json"]
    (p.parent / "seed-0008.json.77.tmp").write_bytes(b"{")
    assert records.clean_tmp(tmp_path) == 1


def test_progress_reports_done_rate_and_eta():
    import io

    out = io.StringIO()
    bar = Progress(10, initial=2, enabled=True, stream=out)
    bar.update(4)
    bar.close()
    text = out.getvalue()
    assert "6/10" in text and "ep/s" in text and "ETA" in text


def test_sweep_command_runs_resumes_and_summarises(tmp_path):
    out = str(tmp_path / "run")
    args = ["sweep", "--agents", "random,greedy", "--tasks", "inc-001", "--seeds", "0-1", "--workers", "1",
            "--out", out, "--no-progress"]
    first = CliRunner().invoke(cli, args)
    assert first.exit_code == 0, first.output
    assert "greedy" in first.output and "MARKS" in first.output
    assert "ran 4, already recorded 0" in first.output
    again = CliRunner().invoke(cli, args)
    assert "ran 0, already recorded 4" in again.output
    only = CliRunner().invoke(cli, ["sweep", "--summary-only", "--out", out])
    assert only.exit_code == 0 and "random" in only.output
    csv = (tmp_path / "run" / "summary.csv").read_text().splitlines()
    assert csv[0].startswith("agent,task,n,") and len(csv) == 1 + 4


@pytest.mark.parametrize("args, message", [
    (["--agents", "nosuch"], "unknown agent"),
    (["--agents", "llm-react"], "--model"),
    (["--tasks", "inc-999"], "unknown task"),
    (["--seeds", "a-b"], "give a count"),
    (["--seeds", "0"], "no seeds to run"),
    (["--seeds", "3-1"], "is empty"),
    # seeds no record can hold, and runs too large to list, are refused before anything is built
    (["--seeds", "18446744073709551616,1"], "from 0 to 2**63 - 1"),
    (["--seeds", "18446744073709551616"], "from 0 to 2**63 - 1"),
    (["--seeds", "2", "--seed-start", str(2**63 - 1)], "from 0 to 2**63 - 1"),
    (["--seeds", "0-2000000"], "at most 1,000,000 seeds"),
    (["--seed-start", "-1"], "-1 is not in the range"),
    (["--agents", "random,random"], "used twice"),
    (["--agents", "random,oracle", "--label", "a"], "gives 1 label(s) for 2 agent(s)"),
    (["--difficulty", "hard", "--split", "private"], "no task matches"),
    # an option given empty (an unset variable in a script) named nothing: it meant some, not all
    (["--tasks", ""], "--tasks was given but names nothing"),
    (["--agents", " , "], "--agents was given but names nothing"),
    (["--tasks", "inc-001", "--label", ""], "--label was given but names nothing"),
    # a ValueError from the variant decoder was a traceback; its message starts with a quoted id
    (["--tasks", "gen:nonsense"], "Error: 'gen:nonsense' is not a valid generated task id"),
])
def test_sweep_command_rejects_bad_input(tmp_path, args, message):
    res = CliRunner().invoke(cli, ["sweep", "--out", str(tmp_path / "x"), "--no-progress", *args])
    assert res.exit_code != 0 and message in res.output


def test_two_different_tasks_with_one_id_are_refused_not_one_silently_dropped(tmp_path):
    """Records are kept by task id, so a sweep keyed its tasks by id and ran only the last of the two."""
    copy = tmp_path / "mine" / "inc-001.toml"
    copy.parent.mkdir()
    from srezero.task.loader import task_file

    text = task_file("inc-001").read_text()
    copy.write_text(text.replace('title = "', 'title = "my copy: ', 1))
    res = CliRunner().invoke(cli, ["sweep", "--tasks", f"inc-001,{copy}", "--out", str(tmp_path / "x")])
    assert res.exit_code == 2 and f"inc-001 and {copy} are different tasks with the same id" in res.output
    assert not (tmp_path / "x").exists()
    same = CliRunner().invoke(cli, ["sweep", "--tasks", "inc-001,inc-001", "--agents", "random", "--seeds", "1",
                                    "--out", str(tmp_path / "y"), "--no-progress"])
    assert same.exit_code == 0 and len(records.record_paths(tmp_path / "y")) == 1, same.output


def test_an_error_line_keeps_the_quotes_of_a_message_that_starts_with_a_name():
    res = CliRunner().invoke(cli, ["run", "--task", "gen:nonsense"])
    assert res.exit_code == 1 and "Error: 'gen:nonsense' is not" in res.output, res.output
    res = CliRunner().invoke(cli, ["run", "--task", "nosuch"])
    assert "Error: unknown task 'nosuch'" in res.output and '"' not in res.output, res.output


def test_an_agent_given_the_ground_truth_is_marked_an_upper_bound():
    """Any agent that asks for the ground truth (not only one named "oracle") is reported apart."""
    base = {"task_id": "t", "status": "ok", "result": None}
    rows = [records.row_of({**base, "agent": "mine", "seed": 0, "privileged": True}),
            records.row_of({**base, "agent": "runbook", "seed": 0})]
    groups = {g["agent"]: g for g in stats.summarise(rows)["groups"] if g["task"] == "*"}
    assert groups["mine"]["privileged"] is True and groups["runbook"]["privileged"] is False


def test_a_run_directory_that_cannot_be_written_is_an_error_line_and_keeps_its_records(tmp_path, monkeypatch):
    """--out under a file, and a disk that fills up mid-run, were tracebacks."""
    (tmp_path / "afile").write_text("")
    args = ["sweep", "--tasks", "inc-001", "--agents", "random", "--workers", "1", "--no-progress"]
    res = CliRunner().invoke(cli, [*args, "--seeds", "1", "--out", str(tmp_path / "afile" / "run")])
    assert res.exit_code == 1 and "cannot write the run directory" in res.output and "Not a directory" in res.output

    real = records.write_atomic

    def fill_up(path, data):
        if str(path).endswith("seed-0002.json"):
            raise OSError(28, "No space left on device", str(path))
        real(path, data)

    monkeypatch.setattr(records, "write_atomic", fill_up)
    out = tmp_path / "run"
    res = CliRunner().invoke(cli, [*args, "--seeds", "4", "--out", str(out)])
    assert res.exit_code == 1 and "No space left on device" in res.output and "rerun the same command" in res.output
    assert "Traceback" not in res.output and len(records.record_paths(out)) == 2  # seeds 0 and 1 kept
    monkeypatch.setattr(records, "write_atomic", real)
    res = CliRunner().invoke(cli, [*args, "--seeds", "4", "--out", str(out)])
    assert res.exit_code == 0 and "ran 2, already recorded 2" in res.output, res.output


def test_a_directory_named_like_a_temp_file_is_left_alone(tmp_path):
    """clean_tmp removes a killed writer's leftovers; a directory called x.tmp made it raise IsADirectoryError."""
    folder = tmp_path / records.EPISODES / "random" / "inc-001"
    (folder / "notes.tmp").mkdir(parents=True)
    (folder / "seed-0000.json.123.tmp").write_bytes(b"{")
    assert records.clean_tmp(tmp_path) == 1
    assert (folder / "notes.tmp").is_dir() and not (folder / "seed-0000.json.123.tmp").exists()


def test_a_second_sweep_into_a_busy_run_directory_is_refused_and_the_lock_goes_with_the_sweep(tmp_path):
    """Two sweeps into one --out ran every pending episode twice and raced on the manifest and summary."""
    from srezero.sweep.lock import LOCK, locked

    args = ["sweep", "--tasks", "inc-001", "--agents", "random", "--seeds", "1", "--out", str(tmp_path),
            "--no-progress"]
    with locked(tmp_path):
        res = CliRunner().invoke(cli, args)
        assert res.exit_code == 1 and f"another sweep (process {os.getpid()}) is writing to {tmp_path}" in res.output
        assert not records.record_paths(tmp_path)
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0 and len(records.record_paths(tmp_path)) == 1, res.output
    assert not (tmp_path / LOCK).exists()  # a finished sweep leaves no lock file in the run directory


def test_two_tasks_whose_record_folders_would_coincide_are_refused(tmp_path):
    """Folder names map ':' to '_', so a generated variant and a file task named like it shared a folder,
    and each resumed from the other's records."""
    from srezero.sweep import runner
    from srezero.task.generate import variants
    from srezero.task.loader import task_file

    gen_id = next(variants()).id
    twin = tmp_path / (gen_id.replace(":", "_") + ".toml")
    twin.write_text(task_file("inc-001").read_text().replace('id = "inc-001"', f'id = "{twin.stem}"', 1))
    specs = {gen_id: srezero.get_task(gen_id), twin.stem: srezero.get_task(str(twin))}
    with pytest.raises(ValueError, match=f"task ids '{gen_id}' and '{twin.stem}' would share the record folder"):
        runner.plan(tmp_path / "out", [runner.agent_spec("random")], specs, [0])
    labels = [runner.AgentSpec("a:b", "random"), runner.AgentSpec("a_b", "random")]
    with pytest.raises(ValueError, match="agent labels 'a:b' and 'a_b' would share the record folder 'a_b'"):
        runner.plan(tmp_path / "out", labels, {"inc-001": srezero.get_task("inc-001")}, [0])
    assert not (tmp_path / "out").exists()  # refused before any folder was made


def test_a_worker_whose_sweep_process_died_stops_instead_of_racing_a_rerun():
    """SIGKILL of the sweep leaves its pool workers running; they must not keep writing records that
    a rerun is also writing. A worker checks that its sweep process is still its parent."""
    import os

    import srezero
    from srezero.sweep import runner

    job = dict(specs={"inc-001": srezero.get_task("inc-001")}, agents={"random": runner.agent_spec("random")},
               jobs=[("random", "inc-001", 0)], out=None)
    assert len(runner.run_batch(runner.Batch(**job, owner=os.getpid()))) == 1  # in process: runs
    assert len(runner.run_batch(runner.Batch(**job, owner=os.getppid()))) == 1  # a live parent: runs
    assert runner.run_batch(runner.Batch(**job, owner=-1)) == []  # the sweep process is gone: stops


def test_an_unreadable_record_is_named_with_the_way_out(tmp_path):
    from srezero.sweep import runner

    runner.sweep(tmp_path, [runner.agent_spec("random")], {"inc-001": srezero.get_task("inc-001")}, [0, 1],
                 progress=False)
    p = records.record_path(tmp_path, "random", "inc-001", 1)
    p.write_bytes(p.read_bytes()[:100])
    for args in (["--summary-only"], ["--tasks", "inc-001", "--agents", "random", "--seeds", "2", "--no-progress"]):
        out = CliRunner().invoke(cli, ["sweep", "--out", str(tmp_path), *args])
        assert out.exit_code == 1 and str(p) in out.output and "delete it and rerun" in out.output, out.output
        assert "Traceback" not in out.output


def test_labels_may_be_comma_separated_like_agents(tmp_path):
    out = CliRunner().invoke(cli, ["sweep", "--agents", "random,oracle", "--label", "floor,ceiling", "--tasks", "inc-001",
                                   "--seeds", "1", "--out", str(tmp_path), "--no-progress"])
    assert out.exit_code == 0, out.output
    assert records.record_path(tmp_path, "floor", "inc-001", 0).is_file()
    assert records.record_path(tmp_path, "ceiling", "inc-001", 0).is_file()


def test_a_record_json_cannot_hold_becomes_that_agents_error_not_a_crash():
    record = {"agent": "mine", "task_id": "inc-001", "seed": 0, "status": "ok", "error": None,
              "result": {"marks": 50.0}, "trajectory": [], "usage": {"tokens": object()}}
    kept, data = records.dumps_episode(record)
    assert orjson.loads(data) == kept and kept["status"] == "agent_error" and kept["result"] is None
    assert kept["usage"] == {"tokens": "<object>"} and "could not be written" in kept["error"]
    fine = {**record, "usage": {"tokens": 3}}
    assert records.dumps_episode(fine) == (fine, records.dumps(fine))


class SurrogateAgent:
    """Sends a lone surrogate as an argument's key and as its value (an audit's crash: the record could
    not be written, and every resume crashed again at the same episode)."""

    def reset(self, briefing, seed, tool_specs):
        self.actions = iter([{"tool": "get_status", "args": {"\udcff": 1}},
                             {"tool": "get_status", "args": {"service": "\udcff"}}])

    def act(self, observation):
        return next(self.actions, {"tool": "resolve", "args": {}})


class UnreadableError(Exception):
    def __str__(self):
        raise RuntimeError("str boom")


class BadExitAgent:
    """Ends its act() the ways an agent must not: an exception whose message raises, sys.exit, Ctrl-C."""

    def __init__(self, how="message"):
        self.how = how

    def reset(self, briefing, seed, tool_specs):
        pass

    def act(self, observation):
        if self.how == "exit":
            raise SystemExit(3)
        if self.how == "interrupt":
            raise KeyboardInterrupt
        if self.how == "os_exit":
            os._exit(7)
        raise UnreadableError()


class BadSettingsAgent(BadExitAgent):
    """An agent whose settings() the manifest cannot hold."""

    def settings(self):
        if self.how == "raise":
            raise RuntimeError("no settings today")
        return ["model"] if self.how == "list" else {"client": object()}


@pytest.mark.parametrize("how, problem", [("raise", "RuntimeError: no settings today"),
                                          ("list", "ValueError: dictionary update sequence"),
                                          ("object", "TypeError: Type is not JSON serializable: object")])
def test_an_agent_whose_settings_cannot_be_recorded_is_named_before_anything_runs(tmp_path, how, problem):
    res = CliRunner().invoke(cli, ["sweep", "--tasks", "inc-001", "--seeds", "1", "--out", str(tmp_path),
                                   "--agents", f"{__name__}:BadSettingsAgent", "--agent-arg", f"how={how}"])
    assert res.exit_code == 1 and "Traceback" not in res.output, res.output
    assert "BadSettingsAgent: its settings() must return a mapping of JSON values" in res.output and problem in res.output
    assert not records.record_paths(tmp_path)


def test_text_json_cannot_encode_is_escaped_and_the_episode_stands():
    from srezero.agents.runner import run_episode
    from srezero.episode import Episode

    record = run_episode(Episode(srezero.get_task("inc-001"), 0), SurrogateAgent(), 0, catch=True)
    kept, data = records.dumps_episode(record)
    assert kept["status"] == "ok" and kept["result"]["invalid_actions"] == 2 and orjson.loads(data) == kept
    assert [step["args"] for step in kept["trajectory"][:2]] == [{}, {"service": "\\udcff"}]
    assert kept["trajectory"][0]["action"]["args"] == {"\\udcff": 1}


@pytest.mark.parametrize("how", ["message", "exit"])
def test_an_agent_that_exits_or_raises_an_unprintable_error_is_its_failure(how):
    from srezero.agents.runner import run_episode
    from srezero.episode import Episode

    record = run_episode(Episode(srezero.get_task("inc-001"), 0), BadExitAgent(how), 0, catch=True)
    assert record["status"] == "agent_error"
    assert record["error"] == ("UnreadableError: <its message could not be read>" if how == "message"
                               else "SystemExit: 3")


def test_in_a_worker_an_agents_keyboard_interrupt_is_its_failure_not_a_hung_sweep(tmp_path):
    """Workers ignore SIGINT, so a KeyboardInterrupt there is the agent's own; before, it killed the worker
    and the pool waited for ever. In the sweep's own process it still interrupts (a person's Ctrl-C)."""
    from srezero.agents.runner import run_episode
    from srezero.episode import Episode
    from srezero.sweep import runner

    with pytest.raises(KeyboardInterrupt):
        run_episode(Episode(srezero.get_task("inc-001"), 0), BadExitAgent("interrupt"), 0, catch=True)
    agents = [runner.agent_spec(f"{__name__}:BadExitAgent", agent_args={"how": "interrupt"}), runner.agent_spec("random")]
    runner.sweep(tmp_path, agents, {"inc-001": srezero.get_task("inc-001")}, [0, 1], workers=2, progress=False)
    statuses = sorted((r["agent"], orjson.loads(p.read_bytes())["status"]) for p in tmp_path.rglob("seed-*.json")
                      for r in [orjson.loads(p.read_bytes())])
    assert statuses == [("random", "ok")] * 2 + [(f"{__name__}.BadExitAgent", "agent_error")] * 2


def test_a_worker_that_dies_stops_the_sweep_with_a_message_instead_of_hanging_it(tmp_path):
    """An agent calling os._exit killed its worker, and multiprocessing.Pool waited for ever for the batch
    that worker took. The sweep now stops, names the agents, keeps what was recorded and resumes."""
    script = (f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
              "from srezero.cli import main; main()")
    args = [sys.executable, "-c", script, "sweep", "--tasks", "inc-001", "--seeds", "2", "--workers", "2",
            "--agents", f"random,{Path(__file__).stem}:BadExitAgent", "--agent-arg", "how=os_exit",
            "--out", str(tmp_path), "--no-progress", "--no-probe"]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "a worker process died" in proc.stderr and "BadExitAgent" in proc.stderr, proc.stderr
    assert (tmp_path / "summary.json").exists()


def test_the_sweep_table_warns_when_it_is_not_a_ranking():
    """A reviewer's interrupted sweep printed a ranking over unequal episodes, and CIs over 3 tasks that
    `srezero compare` refuses to call 95% intervals; both now come with a note."""
    from srezero.commands.sweep import caveats

    def summary(cells: dict[str, list[str]]) -> dict:
        return {"groups": [{"agent": a, "task": t, "n": 2} for a, ts in cells.items() for t in ts]
                + [{"agent": "oracle", "task": "t0", "n": 1}]}  # an upper bound is never ranked

    five = [f"t{i}" for i in range(5)]
    assert caveats(summary({"a": five, "b": five})) == []
    partial = caveats(summary({"a": five, "b": five[:4]}))
    assert len(partial) == 1 and partial[0].startswith("the agents ran different episodes (a 10, b 8)")
    few = caveats(summary({"a": five[:3], "b": five[:3]}))
    assert len(few) == 1 and "over 3 task(s) they are not 95% intervals" in few[0]
