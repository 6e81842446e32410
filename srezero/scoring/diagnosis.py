"""The diagnosis oracle: a deterministic checklist of yes/no questions plus entity-level P/R/F1.

A diagnosis is a list of claims ``(entity, category, detail)``. A claim *localises* a root cause
when its entity is the root cause's entity or one of its accepted coarser aliases
(:mod:`srezero.scoring.naming`). The free-text summary is kept in the record and never scored.

Checklist (each answer is 0 or 1; answers about "each root cause" are the share of root causes for
which it holds, so a multi-fault incident earns partial credit):

=======================================  ============================================================
localization.origin                      each root cause is named (its entity or an accepted alias)
localization.no_victim                   no claim blames a downstream victim (a component visibly
                                         suffering at page time that is not a root cause)
localization.no_healthy                  no claim blames a component with no part in the incident
characterization.mechanism               each root cause is claimed with its category, and the agent
                                         had seen evidence of it (see *grounding* below)
characterization.detail                  ... and with the right concrete detail (:mod:`.detail`)
characterization.no_contradiction        no root cause is claimed under two different categories
                                         (a "no" here is a category hedge: it also gates D to 0)
scope.no_over                            nothing but root causes is blamed, and no root cause is
                                         padded with more than ``MAX_CLAIMS_PER_CAUSE`` claims
scope.no_under                           no root cause is missing (matters for multi-fault incidents)
=======================================  ============================================================

Score ``D`` is the mean of the eight answers, with one guard: **D = 0** when there is no claim,
when entity precision is at most ``MIN_PRECISION`` (blaming as many innocents as culprits), or when
one root cause is claimed under ``HEDGE_CATEGORIES`` (two) or more categories (hedging: a blind
guesser naming the right entity under two categories covers far more faults than under one, so the
second category must cost the whole diagnosis, not one answer in eight). Listing every entity under
every category therefore earns nothing. A claim whose category is the right one of *another* root
cause it also localises (two faults behind one service name) is that cause's claim, not a hedge.
And D is at most ``MECHANISM_CAP`` when no root cause is claimed with its right category: the right
entity alone is not a diagnosis.

**Grounding.** A root cause's category and detail count only when the agent's reads showed evidence
of that root cause before it submitted the diagnosis it is scored on: one of its evidence signals
surfaced, or a signal's pattern in the same tool's output elsewhere (:mod:`srezero.scoring.evidence`). A diagnosis nobody looked for is a guess: a policy that
never reads a symptom can still name the usual suspect (the database primary's node, the release,
the certificate) where the suite's priors make it likely, and the right guess must not score as a
diagnosis. Naming the right entity still counts (localization), so an ungrounded right claim is held
at ``MECHANISM_CAP``. On a control task, "no fault" counts only after the agent read one of the
metrics that show the page was noise.

Entity precision = root causes localised / (root causes localised + distinct claimed entities that
localise none). The names that localise one root cause (its entity, its aliases, other spellings)
count once: padding the culprit with its own service name cannot outweigh an innocent, so the
culprit's key, its service and one innocent are precision 1/2, as the key and the innocent alone
are. Recall = root causes localised / root causes; precision at full recall is 0 when any root cause
is missing, otherwise the precision.

On a control task (no fault) the right diagnosis is an empty list or only ``none`` claims: every
answer is 1; any other claim makes every answer 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from srezero.faults.base import RootCause
from srezero.scoring import detail as detail_mod
from srezero.scoring.naming import norm

QUESTIONS = (
    "localization.origin", "localization.no_victim", "localization.no_healthy",
    "characterization.mechanism", "characterization.detail", "characterization.no_contradiction",
    "scope.no_over", "scope.no_under",
)
DIMENSIONS = ("localization", "characterization", "scope")
MIN_PRECISION = 0.5
#: Ceiling on D when no root cause is claimed with its right category (the right entity alone).
MECHANISM_CAP = 0.25
HEDGE_CATEGORIES = 2
MAX_CLAIMS_PER_CAUSE = 2
#: Why a right category and detail did not count (a per-cause ``detail_reason``).
UNSUPPORTED = "no evidence of this cause was read before the diagnosis (a right guess is not a diagnosis)"


@dataclass
class Claim:
    entity: str
    category: str
    detail: str = ""

    @classmethod
    def of(cls, item: Any) -> Claim:
        if isinstance(item, Claim):
            return item
        if isinstance(item, dict):
            return cls(str(item.get("entity", "")), str(item.get("category", "")), str(item.get("detail", "")))
        return cls(str(item.entity), str(item.category), str(item.detail))


def _round(x: float) -> float:
    return round(float(x), 6)


def _result(answers: dict[str, float], precision: float, recall: float, pafr: float, score: float,
            claims_in: Sequence[Any], **extra: Any) -> dict[str, Any]:
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    dims = {d: _round(sum(v for k, v in answers.items() if k.startswith(d + ".")) /
                      sum(1 for k in answers if k.startswith(d + "."))) for d in DIMENSIONS}
    return {"score": _round(score), "checklist": {k: _round(v) for k, v in answers.items()}, "dimensions": dims,
            "precision": _round(precision), "recall": _round(recall), "f1": _round(f1),
            "precision_at_full_recall": _round(pafr), "claims": [dict(Claim.of(c).__dict__) for c in claims_in],
            **extra}


def score_no_fault(claims_in: Sequence[Any] | None, grounded: bool = True) -> dict[str, Any]:
    """A control task: the right answer is "no fault" (no claims, or only ``none`` claims), given after
    reading what shows the page was noise (``grounded``)."""
    submitted = claims_in is not None
    claims = [Claim.of(c) for c in claims_in or ()]
    said_none = submitted and all(c.category == "none" for c in claims)
    correct = said_none and grounded
    v = 1.0 if correct else 0.0
    gate = (None if correct else "not_submitted" if not submitted else "unsupported" if said_none
            else "blamed_a_healthy_system")
    return _result(dict.fromkeys(QUESTIONS, v), v, 1.0, v, v, claims_in or (), gate=gate,
                   per_cause=[], victim_claims=[], healthy_claims=[norm(c.entity) for c in claims if c.category != "none"],
                   distractor_claims=[])


def score(claims_in: Sequence[Any] | None, truth: Sequence[RootCause], accepted: Sequence[frozenset[str]],
          victims: frozenset[str], vocabulary: dict[str, str], noise: frozenset[str] = frozenset(),
          service_of: dict[str, str] | None = None, grounded: Sequence[bool] | None = None) -> dict[str, Any]:
    """Score a diagnosis of a faulty task.

    ``accepted[i]`` are the normalised names that localise ``truth[i]``; ``victims`` the normalised
    names of components suffering downstream; ``vocabulary`` the world's concrete items
    (:func:`srezero.scoring.naming.concrete_vocabulary`); ``noise`` names touched by noise and
    distractors; ``service_of`` maps names (replicas, keys) to their service for victim checks;
    ``grounded[i]`` whether the agent had surfaced evidence of ``truth[i]`` (default: all had).
    """
    claims = [Claim.of(c) for c in claims_in or ()]
    claims = [c for c in claims if c.category != "none"]
    n = len(truth)
    ents = list(dict.fromkeys(norm(c.entity) for c in claims))
    hits = {e: [i for i in range(n) if e in accepted[i]] for e in ents}
    matched: list[list[Claim]] = [[c for c in claims if i in hits[norm(c.entity)]] for i in range(n)]
    fp = [e for e in ents if not hits[e]]
    services = service_of or {}
    victim_fp = [e for e in fp if e in victims or services.get(e) in victims]
    healthy_fp = [e for e in fp if e not in victim_fp]
    located = [i for i in range(n) if matched[i]]
    recall = len(located) / n if n else 1.0
    # names of one root cause count once, so alias padding cannot dilute an innocent claim
    precision = len(located) / (len(located) + len(fp)) if ents else 0.0
    pafr = precision if recall >= 1.0 else 0.0

    accepted_cats = [rc.categories() for rc in truth]

    def claimed_categories(i: int) -> set[str]:
        """The categories root cause ``i`` is claimed under (its accepted ones counted as its own). A claim
        through a name that also localises another root cause, with that cause's right category,
        characterises that cause instead."""
        return {truth[i].category if c.category in accepted_cats[i] else c.category for c in matched[i]
                if c.category in accepted_cats[i]
                or not any(c.category in accepted_cats[j] for j in hits[norm(c.entity)] if j != i)}

    per_cause = []
    mech = det = 0
    for i, rc in enumerate(truth):
        seen = grounded is None or bool(grounded[i])
        right = [c for c in matched[i] if c.category in accepted_cats[i]]
        ok_detail, why = False, "not named" if not matched[i] else "wrong category"
        if right and not seen:  # a right guess with no evidence read: named, not characterised
            right, why = [], UNSUPPORTED
        for c in right:
            ok_detail, why = detail_mod.check(c.detail, c.entity, rc, vocabulary)
            if ok_detail:
                break
        mech += bool(right)
        det += ok_detail
        per_cause.append({"entity": rc.entity, "named": bool(matched[i]), "grounded": seen, "mechanism": bool(right),
                          "detail": ok_detail, "detail_reason": why,
                          "categories_claimed": sorted(claimed_categories(i))})
    categories = [len(claimed_categories(i)) for i in range(n)]
    answers = {
        "localization.origin": recall,
        "localization.no_victim": 0.0 if victim_fp else 1.0,
        "localization.no_healthy": 0.0 if healthy_fp else 1.0,
        "characterization.mechanism": mech / n if n else 1.0,
        "characterization.detail": det / n if n else 1.0,
        "characterization.no_contradiction": 0.0 if any(k > 1 for k in categories) else 1.0,
        "scope.no_over": 1.0 if not fp and all(len(m) <= MAX_CLAIMS_PER_CAUSE for m in matched) else 0.0,
        "scope.no_under": 1.0 if recall >= 1.0 else 0.0,
    }
    gate = None
    if not claims:
        gate = "no_claims"
        answers = dict.fromkeys(QUESTIONS, 0.0)
    elif precision <= MIN_PRECISION:
        gate = "low_precision"
    elif any(k >= HEDGE_CATEGORIES for k in categories):
        gate = "hedged_categories"
    raw = sum(answers.values()) / len(answers)
    if not gate and answers["characterization.mechanism"] == 0.0:
        raw = min(raw, MECHANISM_CAP)  # naming where, without knowing what, is at most a quarter
    return _result(answers, precision, recall, pafr, 0.0 if gate else raw, claims_in or (), gate=gate,
                   per_cause=per_cause, victim_claims=victim_fp, healthy_claims=healthy_fp,
                   distractor_claims=[e for e in fp if e in noise])
