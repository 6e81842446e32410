"""Marks: one composite 0-100 score per episode. This docstring is the specification.

    base  = 40 * D  +  40 * M  +  10 * E  +  10 * S
    marks = clamp(base - penalties, 0, 100)

* D, diagnosis (0-1): the checklist score of :mod:`srezero.scoring.diagnosis` (the mean of eight
  yes/no answers; 0 when the diagnosis blames as many innocents as culprits, the names of one root
  cause counting once, or hedges categories, claiming one root cause under two or more).
  On a control task (no fault) D is 1 for a submitted "no fault" diagnosis, else 0.
* M, mitigation (0 or 1): the mitigation oracle (:mod:`srezero.scoring.mitigation`) passes: every
  fault neutralised, no relapse, SLOs held through the verification window, nothing destroyed.
  On a control task M also needs D = 1: leaving a healthy system alone only counts as a decision.
* E, evidence coverage (0-1): the share of the task's evidence signals the agent's reads surfaced.
  Worth at most 10, so gathering evidence never outweighs solving the incident (D and M: 80).
* S, success (0 or 1): D >= ``SUCCESS_DIAGNOSIS`` and M = 1 in the same episode.

Penalties (each write is judged when it is made, :mod:`srezero.scoring.writes`):

* wrong fix: the k-th write that addresses no root cause costs 10 * k (one: 10, two: 30, three: 60,
  four: 100). A wrong fix is a restart, scale, rollback or config change aimed at the wrong thing or
  with an unsafe value; on a control task every write is one. The escalation is the lesson of the
  static-fixture predecessor, where three wrong restarts before the right fix still earned half
  marks: one honest mistake is cheap, trial-and-error remediation is not;
* destructive action: 20 per destructive consequence recorded by the world (scaling to zero, rolling
  back a release the schema needs, a failover that loses writes, draining the primary's node);
* invalid action: 1 per invalid action (unknown tool, bad argument), at most 10 in all;
* premature end: 10 when the episode ends while a root cause is still active, however it ends:
  ``resolve()`` (a premature resolution), a step or time budget running out, or the harness stopping
  it. When to stop is the agent's decision either way, and verification judges the same end state,
  so waiting out the budget instead of resolving saves nothing: an agent that wants a slow fix to
  take hold can ``wait`` and then resolve. "Active" is the fault's cause (its model state, not its
  alert) at the last step, before the verification window; a fault neutralised by then is not
  active even if it relapses later (that fails M instead). A control task has no fault, so it never
  ends with one active: there the decision that counts is the submitted "no fault" diagnosis, which
  D and M already require.

Properties: perfect play (full evidence, right diagnosis, minimal right fix, resolve) scores 100.
Doing nothing scores 0 whether the agent resolves at once or lets the budget run out (no
diagnosis, no mitigation, premature end); a right diagnosis without a fix scores 40 + 10 E - 10
either way. Three wrong restarts before an otherwise perfect fix score 40; a shotgun agent's fourth
wrong write alone cancels everything a lucky hit can earn.

Step rewards (for learning agents) are potential-based. With the potential

    phi_t = (10 * E_t + 20 * H_t - P_t) / 100

(E_t evidence coverage so far, 0 throughout a control task with no fault, whose evidence is the
generic reads every agent makes first; H_t the share of faults neutralised now, P_t the penalties
incurred so far), every non-final step returns phi_t - phi_{t-1} (phi_0 = 0 at reset) and the final step
returns marks/100 minus the sum of all earlier rewards. The rewards of an episode therefore sum to
marks / 100 exactly; the shaping only moves credit earlier in time (surfacing evidence and restoring
health pay at once, wrong writes cost at once), never changes the total.
"""

from __future__ import annotations

from dataclasses import dataclass

W_DIAGNOSIS = 40.0
W_MITIGATION = 40.0
W_EVIDENCE = 10.0
W_SUCCESS = 10.0
W_HEALTH_SHAPING = 20.0  # weight of H_t in the step-reward potential (not part of the marks)
P_WRONG_FIX = 10.0
P_DESTRUCTIVE = 20.0
P_INVALID = 1.0
P_INVALID_CAP = 10.0
P_PREMATURE = 10.0
SUCCESS_DIAGNOSIS = 0.99

#: Each marks term in words, for every report and debrief that lists ``marks_terms``.
TERM_LABELS = {"diagnosis": f"diagnosis ({W_DIAGNOSIS:g} x checklist score)",
               "mitigation": f"mitigation ({W_MITIGATION:g} if verified)",
               "evidence": f"evidence ({W_EVIDENCE:g} x coverage)", "success": f"success ({W_SUCCESS:g} if solved)",
               "wrong_fix_penalty": f"wrong fixes (the k-th costs {P_WRONG_FIX:g} x k)",
               "destructive_penalty": f"destructive actions (-{P_DESTRUCTIVE:g} each)",
               "invalid_penalty": f"invalid actions (-{P_INVALID:g} each, at most -{P_INVALID_CAP:g})",
               "premature_penalty": f"root cause active at the end (-{P_PREMATURE:g})"}

@dataclass(frozen=True)
class Components:
    diagnosis: float
    mitigation: float
    evidence: float
    success: bool
    wrong_fixes: int
    destructive: int
    invalid: int
    premature: bool  # the episode ended (resolve, budget or stop) with a root cause still active


def wrong_fix_penalty(n: int) -> float:
    """The total cost of ``n`` wrong fixes: 10 + 20 + ... + 10 n."""
    return P_WRONG_FIX * n * (n + 1) / 2


def penalties(wrong_fixes: int, destructive: int, invalid: int, premature: bool) -> float:
    return (wrong_fix_penalty(wrong_fixes) + P_DESTRUCTIVE * destructive
            + min(P_INVALID_CAP, P_INVALID * invalid) + (P_PREMATURE if premature else 0.0))


def is_success(diagnosis: float, mitigated: bool) -> bool:
    return diagnosis >= SUCCESS_DIAGNOSIS and mitigated


def marks(c: Components) -> tuple[float, dict[str, float]]:
    """The marks and the breakdown of each term (positive terms and penalties)."""
    terms = {
        "diagnosis": W_DIAGNOSIS * c.diagnosis,
        "mitigation": W_MITIGATION * c.mitigation,
        "evidence": W_EVIDENCE * c.evidence,
        "success": W_SUCCESS if c.success else 0.0,
        "wrong_fix_penalty": -wrong_fix_penalty(c.wrong_fixes),
        "destructive_penalty": -P_DESTRUCTIVE * c.destructive,
        "invalid_penalty": -min(P_INVALID_CAP, P_INVALID * c.invalid),
        "premature_penalty": -P_PREMATURE if c.premature else 0.0,
    }
    total = max(0.0, min(100.0, sum(terms.values())))
    return round(total, 4), {k: round(v, 4) + 0.0 for k, v in terms.items()}  # + 0.0: no -0.0 penalties


def potential(evidence: float, healed: float, penalty_so_far: float) -> float:
    """The shaping potential phi (see the module docstring)."""
    return (W_EVIDENCE * evidence + W_HEALTH_SHAPING * healed - penalty_so_far) / 100.0
