"""The command line: tasks, run, faults, tools."""

from __future__ import annotations

import orjson
from click.testing import CliRunner

from srezero.cli import cli


def test_tasks_json() -> None:
    out = CliRunner().invoke(cli, ["tasks", "--json"])
    assert out.exit_code == 0, out.output
    rows = orjson.loads(out.output)
    assert {"inc-001", "inc-002", "inc-003"} <= {r["id"] for r in rows}


def test_run_oracle_json() -> None:
    out = CliRunner().invoke(cli, ["run", "--task", "inc-002", "--agent", "oracle", "--seed", "1", "--json"])
    assert out.exit_code == 0, out.output
    rec = orjson.loads(out.output)
    assert rec["result"]["success"] is True


def test_run_user_agent_by_path() -> None:
    out = CliRunner().invoke(cli, ["run", "--task", "inc-001", "--agent", "baselines.random_agent:RandomAgent",
                                   "--quiet"])
    assert out.exit_code == 0, out.output
    assert "marks" in out.output


def test_run_out_to_a_bare_file_name_in_the_current_directory() -> None:
    """`--out x.json` (no directory part) writes the record; it used to fail after the episode had run."""
    runner = CliRunner()
    with runner.isolated_filesystem():
        out = runner.invoke(cli, ["run", "--task", "inc-001", "--agent", "oracle", "--quiet", "--out", "x.json"])
        assert out.exit_code == 0, out.output
        with open("x.json", "rb") as fh:
            assert orjson.loads(fh.read())["result"]["success"] is True


def test_sweep_rejects_non_positive_workers_and_step_caps(tmp_path) -> None:
    for option in ("--workers", "--max-steps"):
        for value in ("0", "-2"):
            out = CliRunner().invoke(cli, ["sweep", "--tasks", "inc-001", "--seeds", "1", "--agents", "random",
                                           "--out", str(tmp_path / "run"), "--no-progress", option, value])
            assert out.exit_code == 2 and option in out.output and "x>=1" in out.output, out.output
    assert not (tmp_path / "run").exists()


def test_seed_start_with_named_seeds_is_refused_not_ignored(tmp_path) -> None:
    """A review: --seeds 3,7 --seed-start 100 ran seeds 3 and 7 without a word."""
    for seeds in ("3,7", "0-1"):
        out = CliRunner().invoke(cli, ["sweep", "--tasks", "inc-001", "--seeds", seeds, "--seed-start", "100",
                                       "--agents", "random", "--out", str(tmp_path / "run"), "--no-progress"])
        assert out.exit_code == 2 and "--seed-start shifts a count of seeds" in out.output, out.output
    assert not (tmp_path / "run").exists()


def test_run_unknown_task_and_agent() -> None:
    out = CliRunner().invoke(cli, ["run", "--task", "nope", "--agent", "oracle"])
    assert out.exit_code != 0 and "unknown task" in out.output
    out = CliRunner().invoke(cli, ["run", "--task", "inc-001", "--agent", "nope"])
    assert out.exit_code != 0 and "unknown agent" in out.output
    out = CliRunner().invoke(cli, ["run", "--task", "inc-001", "--agent", "orcale"])
    assert out.exit_code != 0 and "unknown agent 'orcale'; did you mean oracle? (built-in agents:" in out.output


def test_faults_and_tools() -> None:
    out = CliRunner().invoke(cli, ["faults", "--json"])
    assert out.exit_code == 0
    assert len(orjson.loads(out.output)) >= 6
    out = CliRunner().invoke(cli, ["tools"])
    assert out.exit_code == 0 and "search_logs" in out.output


def test_run_writes_the_sweeps_record(tmp_path) -> None:
    """`run --out` writes the record the sweep writes for the same episode, byte for byte (it used to
    lack schema, agent_name and task_hash)."""
    import srezero
    from srezero.sweep import records, runner

    out = CliRunner().invoke(cli, ["run", "--task", "inc-002", "--agent", "runbook", "--seed", "1", "--quiet",
                                   "--out", str(tmp_path / "r.json")])
    assert out.exit_code == 0, out.output
    spec = srezero.get_task("inc-002")
    swept = runner.episode_record(spec, records.task_hash(spec), runner.agent_spec("runbook"), 1, None)
    assert (tmp_path / "r.json").read_bytes() == records.dumps(swept)


AGENT_THAT_FAILS = '''
class Agent:
    def reset(self, briefing, seed, tool_specs):
        pass

    def act(self, observation):
        raise ZeroDivisionError("the agent divided by zero")
'''


def test_run_reports_a_failed_episode_in_one_line_and_exits_1(tmp_path, monkeypatch) -> None:
    (tmp_path / "failing_agent_mod.py").write_text(AGENT_THAT_FAILS)
    monkeypatch.syspath_prepend(str(tmp_path))
    args = ["run", "--task", "inc-001", "--agent", "failing_agent_mod:Agent", "--quiet"]
    out = CliRunner().invoke(cli, [*args, "--out", str(tmp_path / "r.json")])
    assert out.exit_code == 1 and "Traceback" not in out.output
    assert out.output.strip() == ("Error: inc-001 seed=0 agent=failing_agent_mod.Agent: agent_error: ZeroDivisionError: "
                                  f"the agent divided by zero (record written to {tmp_path / 'r.json'})")
    assert orjson.loads((tmp_path / "r.json").read_bytes())["status"] == "agent_error"
    out = CliRunner().invoke(cli, [*args, "--traceback"])
    assert isinstance(out.exception, ZeroDivisionError)  # for debugging an agent: the exception itself


def test_llm_agents_without_an_api_key_fail_before_any_episode(tmp_path, monkeypatch) -> None:
    import pytest

    pytest.importorskip("openai")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    out = CliRunner().invoke(cli, ["run", "--task", "inc-001", "--agent", "llm-react", "--model", "gpt-4o-mini",
                                   "--out", str(tmp_path / "r.json")])
    assert out.exit_code == 1 and "OPENAI_API_KEY is not set" in out.output and "--api-key-env" in out.output
    assert not (tmp_path / "r.json").exists()
    out = CliRunner().invoke(cli, ["sweep", "--agents", "llm-react", "--model", "gpt-4o-mini", "--tasks", "inc-001",
                                   "--seeds", "2", "--no-progress", "--out", str(tmp_path / "run")])
    assert out.exit_code == 1 and "agent llm-react@gpt-4o-mini: the API key variable OPENAI_API_KEY" in out.output
    assert not (tmp_path / "run").exists()  # it used to record every episode as an agent error, exit 0


FORCED_PAGE = '''
id = "forced-page"
title = "A CPU quota cut, paged by an alert it never trips"
description = "The web tier's cgroup CPU quota is halved; the page names replication lag, which never rises."
difficulty = "medium"
rationale = "Replication lag never rises, so the page is forced when the onset budget runs out."
tags = ["kernel", "web_server"]
split = "dev"

[[faults]]
primitive = "cpu_throttling"
target = "web_server"
params = { quota_factor = 0.5 }
at = 60

[alert]
name = "ReplicationLagHigh"
'''


def test_run_tells_the_human_when_the_page_was_forced(tmp_path) -> None:
    path = tmp_path / "forced-page.toml"
    path.write_text(FORCED_PAGE)
    res = CliRunner().invoke(cli, ["run", "--task", str(path), "--agent", "random", "--seed", "0", "--quiet"])
    assert res.exit_code == 0, res.output
    assert "note: ReplicationLagHigh never fired within 900s of the history's end (budget.max_onset_s); the page was forced" in res.output
    real = CliRunner().invoke(cli, ["run", "--task", "inc-002", "--agent", "random", "--seed", "0", "--quiet"])
    assert real.exit_code == 0 and "forced" not in real.output


def test_a_broken_extension_declaration_is_one_error_line_that_blames_no_task_file() -> None:
    """A user review: a mistake in a new primitive surfaced as an error of tasks/inc-002.toml (the task
    whose validation loaded the registry first), and `srezero faults` printed a traceback."""
    import subprocess
    import sys

    setup = ("import sys, srezero.faults.base as base\n"
             "from srezero.errors import DeclarationError\n"
             "def load_all():\n"
             "    raise DeclarationError(\"fault primitive 'io_hog' (mine.IoHog): layer: unknown layer 'disks'\")\n"
             "base.load_all = load_all\n"
             "from srezero.cli import main\n"
             "sys.argv = ['srezero'] + sys.argv[1:]\n"
             "main()\n")
    for args in (["run", "--task", "inc-002", "--agent", "random"], ["faults"]):
        out = subprocess.run([sys.executable, "-c", setup, *args], capture_output=True, text=True, timeout=60)
        assert out.returncode == 1, (args, out.stderr)
        assert out.stderr.strip() == "Error: fault primitive 'io_hog' (mine.IoHog): layer: unknown layer 'disks'", out.stderr


def test_a_seed_out_of_range_is_a_usage_error_not_a_traceback() -> None:
    """Negative seeds, and seeds no record can hold (they used to play, then fail as an 'agent error')."""
    for seed in ("-1", str(2**63), "99999999999999999999"):
        for args in (["run", "--task", "inc-002", "--seed", seed], ["task", "show", "inc-001", "--seed", seed, "--spoilers"],
                     ["play", "inc-001", "--seed", seed], ["mcp", "--task", "inc-001", "--seed", seed]):
            res = CliRunner().invoke(cli, args)
            assert res.exit_code == 2 and f"{seed} is not in the range 0<=x<={2**63 - 1}" in res.output, (args, res.output)


def test_play_takes_the_task_as_run_does_or_positionally(tmp_path) -> None:
    for args in (["--task", "inc-001"], ["inc-001"]):
        res = CliRunner().invoke(cli, ["play", *args, "--record", str(tmp_path / f"{len(args)}.json")], input="resolve()\n")
        assert res.exit_code == 0 and "QueueBacklogGrowing" in res.output and "DEBRIEF" in res.output, res.output
    res = CliRunner().invoke(cli, ["play"])
    assert res.exit_code == 2 and "which task?" in res.output
    res = CliRunner().invoke(cli, ["play", "inc-001", "--task", "inc-002"])
    assert res.exit_code == 2 and "two tasks given" in res.output


def test_a_tool_that_raises_is_named_to_whoever_runs_it_and_traceback_shows_where(monkeypatch) -> None:
    """A tool author's bug reached the agent as "internal error in <tool>"; `run` said nothing more, and
    --traceback did not show it either."""
    from srezero.tools.registry import load_tools

    def broken(ctx, **args):
        raise AttributeError("'Node' object has no attribute 'cpu_usedx'")

    monkeypatch.setattr(load_tools()["get_alerts"], "fn", broken)
    res = CliRunner().invoke(cli, ["run", "--task", "inc-001", "--agent", "oracle", "--seed", "0", "--quiet"])
    assert res.exit_code == 0, res.output
    assert "warning: 1 tool call(s) raised inside the tool" in res.output and "cpu_usedx" in res.output
    res = CliRunner().invoke(cli, ["run", "--task", "inc-001", "--agent", "oracle", "--seed", "0", "--traceback"])
    assert isinstance(res.exception, AttributeError) and "cpu_usedx" in str(res.exception)


def test_an_unknown_task_id_suggests_the_padded_id_and_how_to_add_ones_own() -> None:
    res = CliRunner().invoke(cli, ["run", "--task", "inc-01", "--agent", "random", "--seed", "0"])
    assert res.exit_code != 0 and "did you mean inc-001?" in res.output and "--tasks-dir" in res.output
    res = CliRunner().invoke(cli, ["play"])
    assert "srezero tasks --no-spoilers" in res.output  # a student must not be sent to the titles that name causes


def test_an_output_path_that_cannot_be_written_is_refused_before_the_episode(tmp_path, monkeypatch) -> None:
    """`run --out` used to play the whole episode and then end in a FileNotFoundError traceback."""
    import srezero.agents.runner as runner

    monkeypatch.setattr(runner, "run_episode", lambda *a, **k: (_ for _ in ()).throw(AssertionError("ran")))
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    for out, text in ((blocker / "x.json", f"cannot write the record to {blocker / 'x.json'}: {blocker} is a file, "
                                           "not a directory"), (tmp_path, "is a directory")):
        res = CliRunner().invoke(cli, ["run", "--task", "inc-001", "--agent", "random", "--out", str(out)])
        assert res.exit_code == 2 and text in res.output and "Traceback" not in res.output, res.output


def test_writable_problem_names_what_is_in_the_way(tmp_path) -> None:
    from srezero.sweep.records import writable_problem

    (tmp_path / "f").write_text("x")
    assert writable_problem(tmp_path / "new" / "deeper" / "r.json") == ""
    assert (tmp_path / "new" / "deeper").is_dir() and not list((tmp_path / "new" / "deeper").iterdir())  # no probe left
    assert writable_problem(tmp_path) == f"{tmp_path} is a directory"
    assert writable_problem(tmp_path, directory=True) == ""
    assert writable_problem(tmp_path / "f", directory=True) == f"{tmp_path / 'f'} is a file, not a directory"
    assert writable_problem(tmp_path / "f" / "g" / "r.json") == f"{tmp_path / 'f'} is a file, not a directory"


def test_the_public_api_lists_itself() -> None:
    import srezero

    assert dir(srezero) == sorted(srezero.__all__) and "make" in dir(srezero) and "Any" not in dir(srezero)
