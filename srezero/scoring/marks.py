"""Marks: one composite 0-100 score per episode. This docstring is the specification.

    base  = 40 * D  +  40 * M  +  10 * E  +  10 * S
    marks = clamp(base - penalties, 0, 100)

* D, diagnosis: the checklist score from :mod:`srezero.scoring.diagnosis` (0 unless precision at
  full recall is at least 0.5).
* M, mitigation: 1 if the mitigation oracle passes (every fault neutralised, SLOs held through the
  verification window, nothing destroyed), else 0. On a no-fault task, M also needs a correct
  "no fault" diagnosis: leaving a healthy system alone only counts when it was a decision.
* E, evidence coverage: the share of the task's evidence signals the agent's reads surfaced.
  Worth at most 10, so gathering evidence never outweighs solving the incident (80).
* S, success: 1 when D >= 0.99 and M = 1 in the same episode.

Penalties (each write is judged when it is made):

* wrong fix: 10 per write that addresses no root cause (restarts, scaling or rollbacks aimed at the
  wrong thing; on a no-fault task every write is a wrong fix);
* destructive action: 20 per destruction (scaling a service to zero, rolling back a release the
  schema needs, a failover that loses writes, draining the primary database's node);
* invalid action: 1 per invalid action, at most 10;
* premature resolution: 10 when resolve is called while a root cause is still active.

Perfect play (full evidence, right diagnosis, minimal right fix, resolve) scores 100. Doing nothing
and resolving scores 0 (no diagnosis, no mitigation, no evidence). A shotgun agent loses 10 per
wrong write and 20 per destruction, and a diagnosis blaming everything scores D = 0.

Step rewards are potential-based: with potential

    phi_t = (10 * E_t + 20 * H_t - P_t) / 100

(E_t evidence so far, H_t the share of faults neutralised now, P_t penalties so far), each step's
reward is phi_t - phi_{t-1}, and the final step's reward is marks/100 - phi_{T-1}, so the rewards
of an episode sum exactly to marks / 100.
"""

from __future__ import annotations

from dataclasses import dataclass

W_DIAGNOSIS = 40.0
W_MITIGATION = 40.0
W_EVIDENCE = 10.0
W_SUCCESS = 10.0
P_WRONG_FIX = 10.0
P_DESTRUCTIVE = 20.0
P_INVALID = 1.0
P_INVALID_CAP = 10.0
P_PREMATURE = 10.0
SUCCESS_DIAGNOSIS = 0.99


@dataclass(frozen=True)
class Components:
    diagnosis: float
    mitigation: float
    evidence: float
    success: bool
    wrong_fixes: int
    destructive: int
    invalid: int
    premature: bool


def penalties(wrong_fixes: int, destructive: int, invalid: int, premature: bool) -> float:
    return (P_WRONG_FIX * wrong_fixes + P_DESTRUCTIVE * destructive
            + min(P_INVALID_CAP, P_INVALID * invalid) + (P_PREMATURE if premature else 0.0))


def marks(c: Components) -> tuple[float, dict[str, float]]:
    """The marks and the breakdown of each term (positive terms and penalties)."""
    terms = {
        "diagnosis": W_DIAGNOSIS * c.diagnosis,
        "mitigation": W_MITIGATION * c.mitigation,
        "evidence": W_EVIDENCE * c.evidence,
        "success": W_SUCCESS if c.success else 0.0,
        "wrong_fix_penalty": -P_WRONG_FIX * c.wrong_fixes,
        "destructive_penalty": -P_DESTRUCTIVE * c.destructive,
        "invalid_penalty": -min(P_INVALID_CAP, P_INVALID * c.invalid),
        "premature_penalty": -P_PREMATURE if c.premature else 0.0,
    }
    total = max(0.0, min(100.0, sum(terms.values())))
    return round(total, 4), {k: round(v, 4) for k, v in terms.items()}


def potential(evidence: float, healed: float, penalty_so_far: float) -> float:
    return (W_EVIDENCE * evidence + 20.0 * healed - penalty_so_far) / 100.0
