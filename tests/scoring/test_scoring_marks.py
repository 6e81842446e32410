"""The marks formula (srezero/scoring/marks.py is the spec) and the worked example in docs/scoring.md."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from srezero.scoring import marks as mk

C = mk.Components


def test_perfect_play_is_100_and_nothing_is_0() -> None:
    assert mk.marks(C(1.0, 1.0, 1.0, True, 0, 0, 0, False))[0] == 100.0
    assert mk.marks(C(0.0, 0.0, 0.0, False, 0, 0, 0, True))[0] == 0.0


def test_worked_example_matches_the_docs() -> None:
    total, terms = mk.marks(C(diagnosis=7 / 8, mitigation=1.0, evidence=2 / 3, success=False, wrong_fixes=1,
                              destructive=0, invalid=1, premature=False))
    assert total == 70.6667
    assert terms == {"diagnosis": 35.0, "mitigation": 40.0, "evidence": 6.6667, "success": 0.0,
                     "wrong_fix_penalty": -10.0, "destructive_penalty": 0.0, "invalid_penalty": -1.0,
                     "premature_penalty": 0.0}
    assert all(math.copysign(1.0, v) == 1.0 for v in terms.values() if v == 0.0)  # no "-0.0" in records
    doc = (Path(__file__).resolve().parents[2] / "docs" / "scoring.md").read_text()
    assert "70.67" in doc and "35 + 40 + 6.67 + 0 - 10 - 1" in doc


def test_ending_with_the_fault_active_example_matches_the_docs() -> None:
    total, terms = mk.marks(C(diagnosis=1.0, mitigation=0.0, evidence=1 / 3, success=False, wrong_fixes=0,
                              destructive=0, invalid=0, premature=True))
    assert total == 33.3333 and terms["premature_penalty"] == -mk.P_PREMATURE
    doc = (Path(__file__).resolve().parents[2] / "docs" / "scoring.md").read_text()
    assert "40 + 0 + 3.33 + 0 - 10" in doc and "= 33.33" in doc


def test_success_needs_both_diagnosis_and_mitigation() -> None:
    assert mk.is_success(1.0, True)
    assert not mk.is_success(7 / 8, True) and not mk.is_success(1.0, False)


def test_evidence_never_outweighs_solving() -> None:
    all_evidence = mk.marks(C(0.0, 0.0, 1.0, False, 0, 0, 0, False))[0]
    solved_blind = mk.marks(C(1.0, 1.0, 0.0, True, 0, 0, 0, False))[0]
    assert all_evidence == mk.W_EVIDENCE < mk.W_DIAGNOSIS and solved_blind == 90.0


@pytest.mark.parametrize("base", [C(1.0, 1.0, 1.0, True, 0, 0, 0, False), C(0.875, 1.0, 0.5, False, 2, 0, 3, False),
                                  C(1.0, 0.0, 1.0, False, 1, 1, 0, False)])
def test_every_wrong_or_destructive_write_costs_marks(base: mk.Components) -> None:
    m0 = mk.marks(base)[0]
    more_wrong = mk.marks(C(**{**base.__dict__, "wrong_fixes": base.wrong_fixes + 1}))[0]
    more_destructive = mk.marks(C(**{**base.__dict__, "destructive": base.destructive + 1}))[0]
    assert more_wrong == pytest.approx(max(0.0, m0 - mk.P_WRONG_FIX * (base.wrong_fixes + 1)))
    assert more_destructive == pytest.approx(max(0.0, m0 - mk.P_DESTRUCTIVE))


def test_wrong_fixes_escalate() -> None:
    perfect = C(1.0, 1.0, 1.0, True, 0, 0, 0, False)
    got = [mk.marks(C(**{**perfect.__dict__, "wrong_fixes": n}))[0] for n in range(5)]
    assert got == [100.0, 90.0, 70.0, 40.0, 0.0]  # three wrong restarts before the right fix: 40


def test_marks_are_clamped() -> None:
    assert mk.marks(C(0.0, 0.0, 0.0, False, 30, 5, 40, True))[0] == 0.0


def test_potential() -> None:
    assert mk.potential(0.0, 0.0, 0.0) == 0.0
    assert mk.potential(1.0, 1.0, 10.0) == pytest.approx((10 + 20 - 10) / 100)
