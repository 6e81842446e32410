"""srezero compare: paired differences on the shared episodes, with a CI over tasks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from report_helpers import LLM

from srezero.cli import cli
from srezero.report.compare import MIN_TASKS, Side, compare, parse_side, verdict
from srezero.report.load import RunDirError

Run = tuple[Path, list[dict[str, Any]]]


def test_paired_difference_matches_the_records(small_run: Run) -> None:
    run, recs = small_run
    r = compare(Side(run, "oracle"), Side(run, "random"))
    marks = {(x["agent"], x["task_id"], x["seed"]): x["result"]["marks"] for x in recs if x.get("result")}
    cells = [(t, s) for (a, t, s) in marks if a == "oracle"]
    want = sum(marks[("oracle", t, s)] - marks[("random", t, s)] for t, s in cells) / len(cells)
    assert r["episodes"] == 6 and r["tasks"] == 3 and r["marks"]["diff"] == pytest.approx(want, abs=1e-6)
    assert r["wins"] == 3 and r["losses"] == 0
    assert r["marks"]["lo"] is None and r["success"]["hi"] is None  # 3 tasks: no interval, no verdict
    assert verdict(r).startswith("too few tasks to tell (3; a verdict needs at least 5)")
    assert [p["task"] for p in r["per_task"]] and r["per_task"][0]["diff"] >= r["per_task"][-1]["diff"]
    assert compare(Side(run, "oracle"), Side(run, "random")) == r  # deterministic


def test_only_shared_episodes_are_paired(small_run: Run) -> None:
    run, _ = small_run
    r = compare(Side(run, LLM), Side(run, "random"))
    assert r["episodes"] == 3 and r["only_a"] == 0 and r["only_b"] == 3


def test_sides_and_errors(small_run: Run, tmp_path: Path) -> None:
    run, _ = small_run
    assert parse_side(f"{run}:random") == Side(run, "random")
    with pytest.raises(RunDirError, match=rf"holds agents {LLM}, random, oracle \(an upper bound\); name one as"):
        parse_side(str(run))
    with pytest.raises(RunDirError, match=f"no records for agent 'nobody'; it holds {LLM}, oracle, random$"):
        compare(Side(run, "nobody"), Side(run, "random"))
    out = CliRunner().invoke(cli, ["compare", f"{run}:oracle", f"{run}:random"])
    assert out.exit_code == 0 and "too few tasks" in out.output and "A higher on 3" in out.output, out.output
    assert "95% CI n/a" in out.output
    out = CliRunner().invoke(cli, ["compare", f"{run}:oracle", f"{run}:random", "--json"])
    assert orjson.loads(out.output)["wins"] == 3
    out = CliRunner().invoke(cli, ["compare", str(run), f"{run}:random"])
    assert out.exit_code == 1 and "name one as" in out.output and "Traceback" not in out.output


def test_an_agent_label_with_colons_is_parsed(small_run: Run) -> None:
    run, _ = small_run
    assert parse_side(f"{run}:human:ada") == Side(run, "human:ada")
    assert parse_side(f"{run}:llm-react@vendor:model") == Side(run, "llm-react@vendor:model")


def test_episodes_of_another_task_version_are_not_paired(small_run: Run, tmp_path: Path) -> None:
    run, recs = small_run
    other = tmp_path / "other"
    for rec in recs:  # the same records, one task file edited since
        if rec["agent"] != "random":
            continue
        changed = dict(rec, task_hash="sha256:edited") if rec["task_id"] == recs[0]["task_id"] else rec
        path = other / "episodes" / "random" / rec["task_id"] / f"seed-{rec['seed']:04d}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(orjson.dumps(changed))
    r = compare(Side(run, "oracle"), Side(other, "random"))
    assert r["other_version"] == 2 and r["episodes"] == 4 and r["tasks"] == 2
    out = CliRunner().invoke(cli, ["compare", f"{run}:oracle", f"{other}:random"])
    assert "left out 2 shared episode(s) whose task file differs" in out.output


def _copy_run(run: Path, dest: Path, engine: str | None = None) -> Path:
    """A copy of the small run, its manifest saying it was written by ``engine``."""
    import shutil

    shutil.copytree(run, dest)
    if engine is not None:
        manifest = orjson.loads((dest / "manifest.json").read_bytes())
        manifest.update(engine=engine, builds=[{"srezero_version": "0", "git_revision": None, "engine": engine}])
        (dest / "manifest.json").write_bytes(orjson.dumps(manifest))
    return dest


def test_sides_in_folders_of_the_same_name_are_told_apart(small_run: Run, tmp_path: Path) -> None:
    """runs/x/records:random against runs/y/records:random printed "A = records:random  B = records:random"."""
    run, _ = small_run
    x, y = _copy_run(run, tmp_path / "x" / "records"), _copy_run(run, tmp_path / "y" / "records")
    r = compare(Side(x, "random"), Side(y, "random"))
    assert (r["a"], r["b"]) == (f"{x}:random", f"{y}:random")
    assert compare(Side(x, "oracle"), Side(y, "random"))["a"] == "records:oracle"  # distinct names stay short


def test_runs_of_different_builds_are_paired_with_a_warning(small_run: Run, tmp_path: Path) -> None:
    """The same (task, seed) under another simulator or scoring build need not be the same incident, and
    nothing said so: the difference could come from the code change, not from the agents."""
    run, _ = small_run
    old, new = _copy_run(run, tmp_path / "old", "sha256:old"), _copy_run(run, tmp_path / "new", "sha256:new")
    r = compare(Side(old, "oracle"), Side(new, "random"))
    assert r["engines"] == ["sha256:new", "sha256:old"] and r["episodes"] == 6
    out = CliRunner().invoke(cli, ["compare", f"{old}:oracle", f"{new}:random"])
    assert out.exit_code == 0 and "made by 2 different builds of the simulator or scoring" in out.output, out.output
    same = CliRunner().invoke(cli, ["compare", f"{old}:oracle", f"{old}:random"])
    assert compare(Side(old, "oracle"), Side(old, "random"))["engines"] == ["sha256:old"]
    assert "different builds" not in same.output


def test_runs_with_different_step_caps_are_compared_with_a_warning(small_run: Run, tmp_path: Path) -> None:
    """A review compared a --max-steps 4 run with an uncapped one: "-96.9 ... scores higher", no word of the cap."""
    run, _ = small_run
    capped = _copy_run(run, tmp_path / "capped")
    manifest = orjson.loads((capped / "manifest.json").read_bytes())
    (capped / "manifest.json").write_bytes(orjson.dumps({**manifest, "max_steps": 4}))
    assert compare(Side(capped, "oracle"), Side(run, "random"))["max_steps"] == [4, manifest.get("max_steps")]
    out = CliRunner().invoke(cli, ["compare", f"{capped}:oracle", f"{run}:random"])
    assert out.exit_code == 0 and "A ran with --max-steps 4 and B with each task's budget" in out.output, out.output
    assert "--max-steps" not in CliRunner().invoke(cli, ["compare", f"{run}:oracle", f"{run}:random"]).output


REFERENCE = Path(__file__).resolve().parents[2] / "records"


@pytest.mark.skipif(not (REFERENCE / "episodes").is_dir(), reason="records/ has not been generated")
def test_the_interval_depends_on_the_data_not_on_names_or_order(tmp_path: Path) -> None:
    a = compare(Side(REFERENCE, "runbook"), Side(REFERENCE, "greedy"))
    link = tmp_path / "another-name"
    link.symlink_to(REFERENCE, target_is_directory=True)
    renamed = compare(Side(link, "runbook"), Side(link, "greedy"))
    swapped = compare(Side(REFERENCE, "greedy"), Side(REFERENCE, "runbook"))
    # every task both agents ran is paired (the count follows the reference run, not a number here:
    # adding a curated task and regenerating records/ must not break this test)
    shared = set.intersection(*({p.name for p in (REFERENCE / "episodes" / agent).iterdir() if p.is_dir()}
                                for agent in ("runbook", "greedy")))
    assert a["tasks"] == len(shared) >= MIN_TASKS
    assert a["marks"]["lo"] < a["marks"]["hi"]  # a real interval (docs/report.md quotes it), so the checks below bite
    assert (renamed["marks"]["lo"], renamed["marks"]["hi"]) == (a["marks"]["lo"], a["marks"]["hi"])
    assert (swapped["marks"]["lo"], swapped["marks"]["hi"]) == pytest.approx((-a["marks"]["hi"], -a["marks"]["lo"]))


@pytest.mark.parametrize(("x", "digits", "shown"), [
    (-0.4, 0, "-0.4"), (-0.004, 0, "-0.004"), (0.03, 1, "+0.03"), (0.0, 1, "+0.0"), (12.34, 1, "+12.3"), (-0.6, 0, "-1"),
])
def test_an_interval_bound_near_zero_says_which_side_it_is_on(x: float, digits: int, shown: str) -> None:
    """The reference comparison printed "95% CI [-0%, +17%]": is the lower bound below zero or not?"""
    from srezero.commands.compare import _signed

    assert _signed(x, digits) == shown
