"""``srezero sweep --tasks-dir``: tasks of one's own, found as ``run`` and ``play`` find them."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from srezero.cli import cli
from srezero.sweep import records
from srezero.task.loader import load_file

HERE = Path(__file__).resolve().parent
BUNDLED = HERE.parents[1] / "tasks" / "inc-001.toml"


@pytest.fixture
def mine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder holding class-01, a copy of inc-001 under an id no lookup path knows."""
    monkeypatch.delenv("SREZERO_TASKS_PATH", raising=False)
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "class-01.toml").write_text(BUNDLED.read_text().replace('id = "inc-001"', 'id = "class-01"', 1))
    return folder


def _sweep(*args: str) -> object:
    return CliRunner().invoke(cli, ["sweep", "--no-progress", *args])


def test_a_sweep_runs_tasks_from_tasks_dir_in_worker_processes(mine: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SREZERO_MP_START", "spawn")  # fresh interpreters: nothing inherited from this process
    out = tmp_path / "run"
    args = ["--tasks", "class-01", "--seeds", "2", "--agents", "oracle,random", "--workers", "2", "--out", str(out)]
    assert "unknown task 'class-01'" in _sweep(*args).output  # found only through --tasks-dir
    res = _sweep(*args, "--tasks-dir", str(mine))
    assert res.exit_code == 0, res.output
    assert "ran 4, already recorded 0" in res.output
    assert "SREZERO_TASKS_PATH" not in os.environ  # the lookup path is extended for the sweep only
    saved = [orjson.loads(p.read_bytes()) for p in records.record_paths(out)]
    assert sorted((r["agent"], r["task_id"], r["seed"], r["status"]) for r in saved) == [
        ("oracle", "class-01", 0, "ok"), ("oracle", "class-01", 1, "ok"),
        ("random", "class-01", 0, "ok"), ("random", "class-01", 1, "ok")]
    assert {r["result"]["marks"] for r in saved if r["agent"] == "oracle"} == {100.0}
    # the manifest keeps the task's content hash, as for a bundled task: a rerun resumes...
    spec = load_file(mine / "class-01.toml")
    assert records.load_manifest(out)["tasks"]["class-01"]["hash"] == records.task_hash(spec)
    res = _sweep(*args, "--tasks-dir", str(mine))
    assert res.exit_code == 0 and "ran 0, already recorded 4" in res.output, res.output
    # ...and an edited task file is noticed, not mixed into the run
    path = mine / "class-01.toml"
    path.write_text(path.read_text().replace('id = "class-01"', 'id = "class-01"\nverify_window_s = 900.0', 1))
    res = _sweep(*args, "--tasks-dir", str(mine))
    assert res.exit_code != 0 and "task class-01 changed" in res.output, res.output
    # --summary-only reads the records only: a --tasks-dir with it would be silently ignored
    res = _sweep("--summary-only", "--out", str(out), "--tasks-dir", str(mine))
    assert res.exit_code == 2 and "--tasks-dir" in res.output


def test_the_traceback_command_of_a_failed_episode_carries_tasks_dir(mine: Path, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """`srezero run` must find the task the suggested command names."""
    monkeypatch.syspath_prepend(str(HERE))
    res = _sweep("--agents", "slow_agent:DownProvider", "--tasks", "class-01", "--tasks-dir", str(mine), "--seeds", "1",
                 "--workers", "1", "--out", str(tmp_path / "down"))
    assert res.exit_code == 1, res.output
    assert f"srezero run --task class-01 --seed 0 --agent slow_agent:DownProvider --tasks-dir {mine} --traceback" \
        in " ".join(res.output.split())
