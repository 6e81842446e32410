"""The diagnosis oracle: a deterministic checklist of yes/no questions plus entity-level P/R/F1.

Each claim is (entity, category, detail). An entity matches a root cause if it is the root cause's
entity or one of its accepted coarser aliases (a replica's service, a disk's node, a config key's
service). Free text is never scored.

Checklist (each answer 0 or 1, or a fraction for multi-fault incidents):

* localization.origin      every true root cause is named
* localization.no_victim   no claim blames a component that only suffers downstream
* localization.no_healthy  no claim blames a component with no part in the incident
* characterization.mechanism  each named root cause has the right category
* characterization.detail     each named root cause's detail is concrete and right
* characterization.no_contradiction  no root cause is also claimed under a different category
* scope.no_over   no more claims than root causes
* scope.no_under  no root cause missing (matters for multi-fault incidents)

The score is the mean of the answers, and it is zero unless precision at full recall is at least
0.5: listing every entity under every category earns nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from srezero.faults.base import RootCause

QUESTIONS = (
    "localization.origin", "localization.no_victim", "localization.no_healthy",
    "characterization.mechanism", "characterization.detail", "characterization.no_contradiction",
    "scope.no_over", "scope.no_under",
)
MAX_DETAIL_TOKENS_NAMED = 2  # a detail naming more distinct config keys/devices than this is keyword stuffing


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


def _norm(name: str) -> str:
    return name.strip().lower().replace(" ", "").removeprefix("/dev/")


def _matches(claim: Claim, rc: RootCause) -> bool:
    e = _norm(claim.entity)
    if e == _norm(rc.entity) or e in {_norm(a) for a in rc.aliases}:
        return True
    # a disk may be written as "node/device" or "node:/dev/device"
    return e.replace(":/dev/", "/").replace(":", "/") == _norm(rc.entity)


def _detail_ok(detail: str, rc: RootCause, vocabulary: set[str]) -> bool:
    text = detail.lower()
    if not text:
        return False
    named = {v for v in vocabulary if v and re.search(rf"(?<![a-z0-9_]){re.escape(v)}(?![a-z0-9_])", text)}
    if len(named) > MAX_DETAIL_TOKENS_NAMED:
        return False
    return any(tok.lower() in text for tok in rc.detail_tokens if tok)


def score(claims_in: list[Any], truth: list[RootCause], symptomatic: set[str], vocabulary: set[str],
          no_fault: bool = False) -> dict[str, Any]:
    """Score a diagnosis. ``symptomatic`` are entities that suffer downstream (victims)."""
    claims = [Claim.of(c) for c in claims_in]
    if no_fault:
        correct = not claims or all(c.category == "none" for c in claims)
        answers = dict.fromkeys(QUESTIONS, 1.0 if correct else 0.0)
        return {"score": 1.0 if correct else 0.0, "checklist": answers, "precision": 1.0 if correct else 0.0,
                "recall": 1.0, "f1": 1.0 if correct else 0.0, "precision_at_full_recall": 1.0 if correct else 0.0,
                "claims": [c.__dict__ for c in claims]}
    claims = [c for c in claims if c.category != "none"]
    matched: dict[int, list[Claim]] = {i: [c for c in claims if _matches(c, rc)] for i, rc in enumerate(truth)}
    tp_claims = [c for c in claims if any(_matches(c, rc) for rc in truth)]
    fp_claims = [c for c in claims if c not in tp_claims]
    located = [i for i, cs in matched.items() if cs]
    n = len(truth)
    recall = len(located) / n if n else 1.0
    precision = len(tp_claims) / len(claims) if claims else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    pafr = 0.0 if recall < 1.0 else precision
    victims = {_norm(s) for s in symptomatic}
    answers = {
        "localization.origin": recall,
        "localization.no_victim": 0.0 if any(_norm(c.entity) in victims for c in fp_claims) else 1.0,
        "localization.no_healthy": 0.0 if any(_norm(c.entity) not in victims for c in fp_claims) else 1.0,
        "characterization.mechanism": sum(any(c.category == truth[i].category for c in matched[i]) for i in located) / n,
        "characterization.detail": sum(any(c.category == truth[i].category and _detail_ok(c.detail, truth[i], vocabulary)
                                           for c in matched[i]) for i in located) / n,
        "characterization.no_contradiction": 0.0 if any(len({c.category for c in matched[i]}) > 1 for i in located) else 1.0,
        "scope.no_over": 1.0 if len(claims) <= n and not fp_claims else 0.0,
        "scope.no_under": 1.0 if recall == 1.0 else 0.0,
    }
    if not claims:
        answers = dict.fromkeys(QUESTIONS, 0.0)
    raw = sum(answers.values()) / len(answers)
    value = raw if pafr >= 0.5 else 0.0
    return {"score": round(value, 6), "checklist": {k: round(v, 6) for k, v in answers.items()},
            "precision": round(precision, 6), "recall": round(recall, 6), "f1": round(f1, 6),
            "precision_at_full_recall": round(pafr, 6), "claims": [Claim.of(c).__dict__ for c in claims_in]}
