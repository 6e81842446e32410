"""Re-running the reference sweep reproduces records/ byte for byte.

records/ is the committed run of ``srezero sweep --seeds 5 --out records``. Skipped while it does not
exist. To keep the cost down the test re-runs a deterministic subset (every agent x task at the
smallest recorded seed, plus every agent's episodes of one task) and compares those record files;
the full file set and the summary (recomputed from all records) are checked too.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

import srezero
from srezero.agents.registry import DEFAULT_SWEEP
from srezero.sweep import records, runner

#: SREZERO_REFERENCE_RECORDS points the test at another run directory (to check the test itself).
ROOT = Path(os.environ.get("SREZERO_REFERENCE_RECORDS") or Path(__file__).resolve().parents[2] / "records")
pytestmark = pytest.mark.skipif(not (ROOT / records.EPISODES).is_dir(), reason="records/ has not been generated")
STALE = ("records/ is stale: regenerate it from scratch (a rerun into it would resume, not redo): "
         "`rm -rf records && srezero sweep --seeds 5 --out records`, then "
         "`srezero report records --plots-only --out plots` (docs/records.md)")


def _manifest() -> dict:
    m = records.load_manifest(ROOT)
    assert m is not None, "records/ has episodes but no manifest.json"
    return m


def test_records_match_the_current_tasks_and_grid():
    m = _manifest()
    current = {t.id for t in srezero.list_tasks()}
    assert set(m["tasks"]) == current, STALE
    for tid, info in m["tasks"].items():
        assert records.task_hash(srezero.get_task(tid)) == info["hash"], f"{tid} changed; {STALE}"
    assert set(DEFAULT_SWEEP) <= set(m["agents"]), STALE
    assert m.get("tools") == records.tools_hash(), f"the tool set changed; {STALE}"
    expected = {records.record_path(ROOT, a, t, s) for a in m["agents"] for t in m["tasks"] for s in m["seeds"]}
    found = set(ROOT.joinpath(records.EPISODES).glob("*/*/seed-*.json"))
    assert found == expected, STALE


def test_rerunning_the_reference_sweep_reproduces_records_byte_for_byte():
    m = _manifest()
    agents = {label: runner.AgentSpec(label, info["name"], tuple(sorted(info["options"].items())))
              for label, info in m["agents"].items()}
    tasks = sorted(m["tasks"])
    first, some_task = min(m["seeds"]), tasks[len(tasks) // 2]
    jobs = sorted({(a, t, first) for a in agents for t in tasks} | {(a, some_task, s) for a in agents for s in m["seeds"]})
    specs = {t: srezero.get_task(t) for t in tasks}
    for label, tid, seed in jobs:
        path = records.record_path(ROOT, label, tid, seed)
        rec = runner.episode_record(specs[tid], records.task_hash(specs[tid]), agents[label], seed, None)
        assert records.dumps(rec) == path.read_bytes(), f"{path.relative_to(ROOT.parent)} differs; {STALE}"


def test_reference_summary_reproduces(tmp_path):
    rows = [records.row_of(r) for r in records.iter_records(ROOT)]
    shutil.copy(ROOT / records.MANIFEST, tmp_path)  # episodes.csv takes difficulty and split from it
    runner.write_summary(tmp_path, rows)
    for name in (records.SUMMARY_JSON, records.SUMMARY_CSV, records.EPISODES_CSV):
        assert (tmp_path / name).read_bytes() == (ROOT / name).read_bytes(), f"{name} differs; {STALE}"


def test_docs_quote_the_reference_tables():
    """docs/baselines.md quotes the agent and task-group tables `sweep --summary-only --markdown` prints."""
    from click.testing import CliRunner

    from srezero.cli import cli

    res = CliRunner().invoke(cli, ["sweep", "--summary-only", "--out", str(ROOT), "--markdown"])
    assert res.exit_code == 0, res.output
    printed = [line for line in res.output.splitlines() if line.startswith("| ")]
    assert any(line.startswith("| agent | easy | medium | hard | misleading |") for line in printed)
    doc = set((ROOT.parent / "docs" / "baselines.md").read_text().splitlines())
    quoted = [line for line in printed if not line.startswith("| inc-") and not line.startswith("| task |")]
    stale = [line for line in quoted if line not in doc]
    assert not stale, ("docs/baselines.md does not quote these lines of "
                       "`srezero sweep --summary-only --out records --markdown`:\n" + "\n".join(stale))


def test_records_were_made_by_the_current_engine():
    """A resume of records/ is refused on another engine build, so the committed run names this one."""
    assert _manifest().get("engine") == records.engine_hash(), STALE


def test_report_guide_quotes_the_reference_compare():
    """docs/report.md teaches reading `compare` on the reference run: its example is that run's output."""
    from click.testing import CliRunner

    from srezero.cli import cli

    res = CliRunner().invoke(cli, ["compare", f"{ROOT}:runbook", f"{ROOT}:greedy"])
    assert res.exit_code == 0, res.output
    doc = (ROOT.parent / "docs" / "report.md").read_text()
    block = doc.split("$ srezero compare records:runbook records:greedy\n", 1)[1].split("```", 1)[0]
    assert block.strip() == res.output.replace(str(ROOT), "records").strip(), STALE
    # docs/baselines.md quotes the same difference in words
    diff, ci = re.search(r"^marks .* A - B +(\S+) +95% CI (\[.*?\])", res.output, re.MULTILINE).groups()
    quoted = f"puts the difference at {diff} marks {ci}"
    assert quoted in " ".join((ROOT.parent / "docs" / "baselines.md").read_text().split()), STALE

