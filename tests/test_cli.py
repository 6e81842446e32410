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


def test_run_unknown_task_and_agent() -> None:
    out = CliRunner().invoke(cli, ["run", "--task", "nope", "--agent", "oracle"])
    assert out.exit_code != 0 and "unknown task" in out.output
    out = CliRunner().invoke(cli, ["run", "--task", "inc-001", "--agent", "nope"])
    assert out.exit_code != 0 and "unknown agent" in out.output


def test_faults_and_tools() -> None:
    out = CliRunner().invoke(cli, ["faults", "--json"])
    assert out.exit_code == 0
    assert len(orjson.loads(out.output)) >= 6
    out = CliRunner().invoke(cli, ["tools"])
    assert out.exit_code == 0 and "search_logs" in out.output
