"""Reading a run directory back: what is not a countable record is refused by name, never counted wrong."""

from __future__ import annotations

import csv
import re
import shutil
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

import srezero
from srezero.cli import cli
from srezero.sweep import records, runner


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("run")
    runner.sweep(out, [runner.agent_spec("random")], {"inc-001": srezero.get_task("inc-001")}, [0, 1], progress=False)
    return out


def _copy(run: Path, tmp_path: Path) -> Path:
    shutil.copytree(run, tmp_path / "run")
    return tmp_path / "run"


def test_a_record_in_another_agents_folder_is_refused_not_counted_twice(run: Path, tmp_path: Path) -> None:
    """Renaming an agent's folder (to keep an old run) and sweeping again left two sets of records that both
    say agent "random": the summary counted each episode twice, while the report refused them."""
    from srezero.report.load import RunDirError, load_run

    out = _copy(run, tmp_path)
    shutil.copytree(out / "episodes" / "random", out / "episodes" / "random-v1")
    moved = records.record_path(out, "random-v1", "inc-001", 0)
    for args in (["--summary-only"], ["--agents", "random", "--tasks", "inc-001", "--seeds", "2", "--no-progress"]):
        res = CliRunner().invoke(cli, ["sweep", "--out", str(out), *args])
        assert res.exit_code == 1 and str(moved) in res.output, res.output
        assert "belongs at episodes/random/inc-001/seed-0000.json" in res.output and "Traceback" not in res.output
    with pytest.raises(RunDirError, match=re.escape("belongs at episodes/random/inc-001/seed-0000.json")):
        load_run(out)
    # a sweep with episodes still to run stops before running them (an LLM sweep would pay for them first)
    fresh = records.record_path(out, "random", "inc-001", 7)
    res = CliRunner().invoke(cli, ["sweep", "--out", str(out), "--agents", "random", "--tasks", "inc-001",
                                   "--seeds", "8", "--no-progress"])
    assert res.exit_code == 1 and str(moved) in res.output and not fresh.exists(), res.output


#: The right keys with the wrong types: each was a different traceback in summary, report, compare, debrief.
WRONG_TYPES = [
    (lambda r: {**r, "result": {**r["result"], "marks": None}}, "result.marks: input should be a valid number"),
    (lambda r: {**r, "result": {**r["result"], "steps": "12"}}, "result.steps: input should be a valid integer"),
    (lambda r: {**r, "result": {**r["result"], "invalid_actions": True}}, "result.invalid_actions: input should"),
    (lambda r: {**r, "result": {**r["result"], "diagnosis": {"score": "x"}}}, "result.diagnosis.score: input"),
    (lambda r: {**r, "result": {**r["result"], "writes": 3}}, "result.writes: input should be a valid list"),
    (lambda r: {**r, "result": {**r["result"], "marks_terms": {"diagnosis": "40"}}}, "result.marks_terms.diagnosis"),
    (lambda r: {**r, "usage": "lots"}, "usage: input should be a valid dictionary"),
    (lambda r: {**r, "trajectory": 5}, "trajectory: input should be a valid list"),
    (lambda r: {**r, "trajectory": [5]}, "trajectory.0: input should be a valid dictionary"),
]


@pytest.mark.parametrize("edit, reason", [
    (lambda r: {"task_id": r["task_id"]}, "no agent, seed, status"),
    (lambda r: {**r, "result": {"marks": 5.0}}, "its result lacks success"),
    (lambda r: {**r, "result": None}, "status ok but no result"),
    (lambda r: {**r, "schema": 99}, "record schema 99, written by another srezero version"),
    (lambda r: {**r, "status": "done"}, "status 'done' is none of ok"),
    (lambda r: {**r, "seed": "1"}, "seed '1' is not an integer"),
    *WRONG_TYPES,
])
def test_a_record_the_summary_cannot_read_is_named_not_a_traceback(run: Path, tmp_path: Path, edit, reason) -> None:
    from srezero.report.load import RunDirError, load_run

    out = _copy(run, tmp_path)
    p = records.record_path(out, "random", "inc-001", 1)
    p.write_bytes(orjson.dumps(edit(orjson.loads(p.read_bytes()))))
    res = CliRunner().invoke(cli, ["sweep", "--summary-only", "--out", str(out)])
    assert res.exit_code == 1 and str(p) in res.output and reason in res.output, res.output
    assert "Traceback" not in res.output and isinstance(res.exception, SystemExit)  # a message, not a crash
    with pytest.raises(RunDirError, match=re.escape(reason)):
        load_run(out)


@pytest.mark.parametrize("edit, reason", WRONG_TYPES)
def test_a_record_file_of_the_wrong_shape_is_named_when_read_on_its_own(run: Path, tmp_path: Path, edit,
                                                                      reason) -> None:
    """debrief (and report) read a record file without its run directory: the same check applies."""
    p = tmp_path / "one.json"
    p.write_bytes(orjson.dumps(edit(orjson.loads(records.record_path(run, "random", "inc-001", 1).read_bytes()))))
    for args in (["debrief", str(p)], ["report", str(p), "--out", str(tmp_path / "report"), "--no-replay"]):
        res = CliRunner().invoke(cli, args)
        assert res.exit_code == 1 and f"{p}: not an episode record" in res.output and reason in res.output, res.output


def test_csv_keeps_every_digit_of_a_large_count(tmp_path: Path) -> None:
    """An LLM episode's token count of 1,501,234 was written as 1.50123e+06, which no longer matches its record."""
    rec = {"agent": "llm", "task_id": "t", "seed": 0, "status": "ok", "schema": 1,
           "result": {"marks": 96.66666667, "success": True, "diagnosis": {"score": 1.0}, "mitigated": True,
                      "evidence_coverage": 1.0, "invalid_actions": 0, "wrong_fixes": 0, "steps": 12},
           "usage": {"prompt_tokens": 1_500_000, "completion_tokens": 1234, "cost_usd": 3.75}}
    runner.write_summary(tmp_path, [records.row_of(rec)])
    row = next(csv.DictReader((tmp_path / records.EPISODES_CSV).open()))
    assert (row["tokens"], row["marks"], row["cost_usd"], row["steps"]) == ("1501234", "96.6667", "3.75", "12")
    group = next(csv.DictReader((tmp_path / records.SUMMARY_CSV).open()))
    assert group["tokens"] == "1501234" and group["tokens_n"] == "1"
    assert group["tokens_lo"] == group["tokens_hi"] == ""  # one episode: no interval (stats.bootstrap)


def test_summary_only_refuses_the_options_it_would_ignore(run: Path) -> None:
    """`--summary-only --agents runbook` printed every agent's table, easily taken for runbook's alone."""
    res = CliRunner().invoke(cli, ["sweep", "--summary-only", "--out", str(run), "--agents", "random", "--seeds", "1"])
    assert res.exit_code == 2 and "--seeds, --agents only say(s) what to run" in res.output, res.output
    ok = CliRunner().invoke(cli, ["sweep", "--summary-only", "--out", str(run), "--markdown", "--no-progress"])
    assert ok.exit_code == 0 and "| random | 2 |" in ok.output, ok.output


@pytest.mark.parametrize("content, reason", [
    (b'{"schema": 1, "tasks"', "unexpected end of data"),
    (b"[1]", "not a JSON object"),
    # a JSON object of the wrong shape: each was a traceback in the sweep, the report or both
    (b'{"schema": 1, "tasks": []}', "tasks: input should be a valid dictionary)"),
    (b'{"schema": 1, "agents": {"random": 5}}', "agents.random: input should be a valid dictionary)"),
    (b'{"schema": 1, "builds": 5}', "builds: input should be a valid list"),
    (b'{"schema": "1"}', "schema: input should be a valid integer"),
])
def test_a_broken_manifest_is_named(run: Path, tmp_path: Path, content: bytes, reason: str) -> None:
    """A truncated manifest gave "Error: unexpected end of data" without naming the file; a list, a traceback."""
    from srezero.report.load import RunDirError, load_run

    out = _copy(run, tmp_path)
    (out / records.MANIFEST).write_bytes(content)
    res = CliRunner().invoke(cli, ["sweep", "--agents", "random", "--tasks", "inc-001", "--seeds", "2", "--out",
                                   str(out), "--no-progress"])
    assert res.exit_code == 1 and f"{out / records.MANIFEST}: not a readable run manifest" in res.output, res.output
    assert reason in res.output and "Traceback" not in res.output
    with pytest.raises(RunDirError, match=re.escape(reason)):  # report and compare read it the same way
        load_run(out)
