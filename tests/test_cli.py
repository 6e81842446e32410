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
