"""srezero compare: paired differences on the shared episodes, with a CI over tasks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from report_helpers import LLM

from srezero.cli import cli
from srezero.report.compare import Side, compare, parse_side
from srezero.report.load import RunDirError

Run = tuple[Path, list[dict[str, Any]]]


def test_paired_difference_matches_the_records(small_run: Run) -> None:
    run, recs = small_run
    r = compare(Side(run, "oracle"), Side(run, "random"))
    marks = {(x["agent"], x["task_id"], x["seed"]): x["result"]["marks"] for x in recs if x.get("result")}
    cells = [(t, s) for (a, t, s) in marks if a == "oracle"]
    want = sum(marks[("oracle", t, s)] - marks[("random", t, s)] for t, s in cells) / len(cells)
    assert r["episodes"] == 6 and r["tasks"] == 3 and r["marks"]["diff"] == pytest.approx(want, abs=1e-6)
    assert r["marks"]["lo"] > 0 and r["wins"] == 3 and r["losses"] == 0
    assert [p["task"] for p in r["per_task"]] and r["per_task"][0]["diff"] >= r["per_task"][-1]["diff"]
    assert compare(Side(run, "oracle"), Side(run, "random")) == r  # deterministic


def test_only_shared_episodes_are_paired(small_run: Run) -> None:
    run, _ = small_run
    r = compare(Side(run, LLM), Side(run, "random"))
    assert r["episodes"] == 3 and r["only_a"] == 0 and r["only_b"] == 3


def test_sides_and_errors(small_run: Run, tmp_path: Path) -> None:
    run, _ = small_run
    assert parse_side(f"{run}:random") == Side(run, "random")
    with pytest.raises(RunDirError, match="name one as"):
        parse_side(str(run))
    with pytest.raises(RunDirError, match="no records for agent 'nobody'"):
        compare(Side(run, "nobody"), Side(run, "random"))
    out = CliRunner().invoke(cli, ["compare", f"{run}:oracle", f"{run}:random"])
    assert out.exit_code == 0 and "scores higher" in out.output and "A higher on 3" in out.output, out.output
    out = CliRunner().invoke(cli, ["compare", f"{run}:oracle", f"{run}:random", "--json"])
    assert orjson.loads(out.output)["wins"] == 3
    out = CliRunner().invoke(cli, ["compare", str(run), f"{run}:random"])
    assert out.exit_code == 1 and "name one as" in out.output and "Traceback" not in out.output
