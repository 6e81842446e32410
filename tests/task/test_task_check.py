"""`srezero task check`: per-seed numbers, and a failure for an oracle that is not clean."""

from __future__ import annotations

import dataclasses

import pytest
from click.testing import CliRunner

import srezero
from srezero.cli import cli
from srezero.faults.base import Signal
from srezero.faults.kernel import FdExhaustion
from srezero.task import generate as gen
from srezero.task.validate import MIN_MARKS, MIN_MARKS_GENERATED, check_seed, min_marks_for


def _check(*args: str):
    return CliRunner().invoke(cli, ["task", "check", *args])


def test_check_prints_the_numbers_per_seed() -> None:
    res = _check("inc-013", "--seeds", "2")
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0].startswith("ok") and "oracle needs 98 marks" in lines[0]
    assert lines[1].split() == ["seed", "page", "oracle", "evidence", "invalid", "random"]
    seed0 = lines[2].split()
    assert seed0[0] == "0" and seed0[1].startswith("+") and seed0[1].endswith("s")
    assert seed0[2:5] == ["100.0", "1.00", "0"] and float(seed0[5]) < 10


def test_seed_start_checks_a_held_out_range() -> None:
    res = _check("inc-013", "--seeds", "2", "--seed-start", "7")
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert "(2 seed(s) from 7, oracle needs 98 marks)" in lines[0]
    assert [line.split()[0] for line in lines[2:4]] == ["7", "8"]
    assert _check("inc-013", "--seed-start", "-1").exit_code == 2  # seeds are non-negative


def test_check_help_says_id_or_path() -> None:
    assert "ID_OR_PATH" in _check("--help").output


def test_a_directory_is_checked_file_by_file_as_validate_reads_it(tmp_path) -> None:
    from pathlib import Path

    bundled = Path(__file__).resolve().parents[2] / "tasks"
    for tid in ("inc-013", "inc-004"):
        (tmp_path / f"own-{tid}.toml").write_text((bundled / f"{tid}.toml").read_text().replace(
            f'id = "{tid}"', f'id = "own-{tid}"', 1))
    res = _check(str(tmp_path), "--seeds", "1")
    assert res.exit_code == 0, res.output
    assert [line.split()[1] for line in res.output.splitlines() if line.startswith("ok")] == ["own-inc-004",
                                                                                              "own-inc-013"]
    (tmp_path / "empty").mkdir()
    res = _check(str(tmp_path / "empty"))
    assert res.exit_code == 1 and "no .toml task files" in res.output


def test_bars_curated_and_generated() -> None:
    assert min_marks_for(srezero.get_task("inc-013")) == MIN_MARKS == 98
    assert min_marks_for(srezero.get_task(gen.sample(1, 0)[0].id)) == MIN_MARKS_GENERATED == 95


def _add_signal(monkeypatch: pytest.MonkeyPatch, sig: Signal) -> None:
    meta = FdExhaustion.meta
    monkeypatch.setattr(FdExhaustion, "meta", dataclasses.replace(meta, signals=(*meta.signals, sig)))


def test_missed_evidence_fails_the_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """A signal that no read surfaces costs the oracle only a few marks (it used to pass at >= 95)."""
    _add_signal(monkeypatch, Signal("node_diagnostics", "node", (("check", "top"),), "no such line anywhere"))
    c = check_seed(srezero.get_task("inc-013"), 0)
    assert c.evidence < 1.0 and c.invalid == 0 and c.oracle_marks >= 95
    assert any("evidence" in p for p in c.problems)
    res = _check("inc-013", "--seeds", "1")
    assert res.exit_code == 1 and res.output.startswith("FAIL")
    assert "seed 0: the oracle's reads surfaced evidence 0.75 < 1.0; missed node_diagnostics(" in res.output


def test_an_invalid_oracle_action_fails_the_check(monkeypatch: pytest.MonkeyPatch) -> None:
    _add_signal(monkeypatch, Signal("node_diagnostics", "node", (("check", "iostat"),), "await"))
    c = check_seed(srezero.get_task("inc-013"), 0)
    assert c.invalid == 1 and any("invalid action" in p for p in c.problems)
    res = _check("inc-013", "--seeds", "1", "--min-marks", "0")
    assert res.exit_code == 1 and "oracle needs 0 marks" in res.output and "1 invalid action(s)" in res.output


def test_the_bar_is_an_option() -> None:
    assert _check("inc-013", "--seeds", "1", "--min-marks", "100").exit_code == 0
    assert _check("inc-013", "--min-marks", "101").exit_code == 2


NOISE_PAGED = '''
id = "noise-paged"
title = "The web tier's CPU quota is cut, paged by the wrong alert"
description = "A cut cgroup CPU quota throttles the web tier; the page is a distractor's CPU spike."
difficulty = "medium"
rationale = "Only a distractor's node CPU spike fires NodeCPUHigh; the throttled web tier never does."
tags = ["kernel", "web_server", "capacity"]
split = "dev"

[[faults]]
primitive = "cpu_throttling"
target = "web_server"
params = { quota_factor = 0.2 }
at = 60

[noise]
profile = "quiet"

[distractors]
unrelated_alert = 1

[alert]
name = "NodeCPUHigh"
'''


def test_a_page_fired_only_by_a_distractor_fails_the_check(tmp_path) -> None:
    """The oracle solves it and the alert fires, but only because a distractor spikes a node's CPU."""
    path = tmp_path / "noise-paged.toml"
    path.write_text(NOISE_PAGED)
    res = _check(str(path), "--seeds", "1")
    assert res.exit_code == 1 and res.output.startswith("FAIL"), res.output
    assert "NodeCPUHigh fires only with noise or distractors on" in res.output
    seed0 = res.output.splitlines()[2].split()
    assert seed0[1].startswith("+") and seed0[2] == "100.0"  # it paged, and the oracle scored full marks


def test_a_control_task_may_be_paged_by_noise() -> None:
    control = next(t for t in srezero.list_tasks() if srezero.get_task(t.id).ground_truth.no_fault)
    c = check_seed(srezero.get_task(control.id), 0)
    assert c.page_s is not None and c.quiet_page_s is None and c.problems == []


def test_a_fault_that_begins_after_the_page_fails_the_check() -> None:
    """Its ground truth would be taken at the page, before it exists: a late memory_leak's detail named
    no release at all ('release  leaks memory')."""
    from srezero.task.spec import FaultSpec

    spec = srezero.get_task("inc-001")
    late = FaultSpec(primitive="memory_leak", target="web_server", at=3000, params={"minutes_to_oom": 4})
    c = check_seed(spec.model_copy(update={"faults": (*spec.faults, late)}), 0)
    assert c.late == ["faults[1] (memory_leak)"]
    assert any(p.startswith("faults[1] (memory_leak) had not begun when the page fired (") for p in c.problems)
    assert check_seed(spec, 0).late == []


def test_a_page_forced_soon_after_a_late_onset_names_both_times() -> None:
    """max_onset_s counts from the end of the history, as at does: a fault at 850 s has 50 s to page, and
    the check says so rather than only "no symptoms"."""
    spec = srezero.get_task("inc-001")
    late = spec.model_copy(update={"faults": (spec.faults[0].model_copy(update={"at": 850.0}),)})
    c = check_seed(late, 0)
    assert c.page_s is None
    assert any("never fired within 900s of the history's end (budget.max_onset_s, the first fault 850s after it)"
               in p for p in c.problems), c.problems


def test_seeds_take_a_list_or_a_range_as_sweep_does() -> None:
    res = _check("inc-013", "--seeds", "3,9")
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert "(seeds 3,9, oracle needs 98 marks)" in lines[0] and [ln.split()[0] for ln in lines[2:4]] == ["3", "9"]
    assert "(2 seed(s) from 4," in _check("inc-013", "--seeds", "4-5").output


@pytest.mark.parametrize(("args", "text"), [
    (("--seeds", "2", "--seed-start", str(2**63 - 1)), "'2' from --seed-start 9223372036854775807: seeds are integers"),
    (("--seeds", "0-2000"), "is 2001 seeds; check at most 1000 at a time"),
    (("--seeds", "1-3", "--seed-start", "4"), "--seed-start shifts a count of seeds"),
    (("--seeds", "x"), "give a count (5), a list (3,7) or a range (0-9)"),
])
def test_bad_seeds_are_usage_errors_not_tracebacks(args: tuple[str, ...], text: str) -> None:
    res = _check("inc-013", *args)
    assert res.exit_code == 2 and text in res.output and "Invalid value for --seeds" in res.output, res.output
