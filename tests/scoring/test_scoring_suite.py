"""Anti-gaming properties on every task in the suite (reruns as tasks are added)."""

from __future__ import annotations

import srezero
from srezero.agents import registry
from srezero.agents.runner import run_episode
from srezero.faults.base import CATEGORIES


def tasks() -> list[str]:
    return [t.id for t in srezero.list_tasks()]


def play(task: str, seed: int, agent: str) -> dict:
    return run_episode(srezero.make(task, seed), registry.create(agent), seed)["result"]


def test_oracle_scores_at_least_98_with_a_perfect_diagnosis() -> None:
    """Perfect play scores 100 by the formula; less means a primitive's oracle plan is not perfect
    (a read that errors or misses its signal, a fix that is slow or incomplete, a RootCause.detail
    that fails the detail check: see docs/scoring.md, "For primitive authors")."""
    problems = []
    for task in tasks():
        for seed in range(5):
            r = play(task, seed, "oracle")
            d = r["diagnosis"]
            if r["marks"] < 98 or d["score"] < 1.0 or r["ttd_s"] is None or (not r["no_fault"] and r["ttm_s"] is None):
                problems.append((task, seed, r["marks"], {k: v for k, v in r["marks_terms"].items() if v and k not in
                                 ("diagnosis", "mitigation", "success")}, r["evidence"]["missed"],
                                 [p["detail_reason"] for p in d.get("per_cause", ()) if not p["detail"]],
                                 r["mitigation"]["reasons"][:2]))
    assert not problems, "\n".join(map(repr, problems))


def test_shotgun_averages_at_most_10() -> None:
    marks = []
    for task in tasks():
        for seed in range(3):
            r = play(task, seed, "shotgun")
            assert not r["success"], (task, seed)
            assert r["diagnosis"]["score"] == 0.0, (task, seed, r["diagnosis"]["gate"])
            marks.append(r["marks"])
    assert sum(marks) / len(marks) <= 10, marks


def test_blaming_every_entity_under_every_category_earns_no_diagnosis_credit() -> None:
    categories = [c for c in CATEGORIES if c != "none"]
    for task in tasks():
        for seed in range(2):
            env = srezero.make(task, seed)
            env.reset()
            w = env.world
            names = w.entity_names()
            entities = [*names["service"], *names["replica"], *names["node"], *names["disk"],
                        *(f"{s}.{k}" for s, svc in w.services.items() for k in svc.config)]
            claims = [{"entity": e, "category": c, "detail": "everything is broken"} for e in entities for c in categories]
            env.record_diagnosis(claims, "")  # bypasses the tool's 20-claim limit on purpose
            *_, info = env.step("resolve()")
            d = info["result"]["diagnosis"]
            assert d["score"] == 0.0 and d["recall"] in (0.0, 1.0), (task, seed, d["gate"])
            assert info["result"]["marks_terms"]["diagnosis"] == 0.0


def test_doing_nothing_and_resolving_at_once() -> None:
    for task in tasks():
        for seed in range(5):
            env = srezero.make(task, seed)
            env.reset()
            *_, info = env.step("resolve()")
            r = info["result"]
            assert r["marks"] <= 5, (task, seed, r["marks_terms"])
            assert r["premature_resolution"] == (not r["no_fault"]), (task, seed)


def test_how_an_episode_ends_never_changes_its_marks() -> None:
    """resolve() and a harness stop at the same moment score the same, with the fault active (premature
    either way) or fixed: never resolving buys nothing (an adversarial review found it did)."""
    for task in tasks():
        for fixed in (False, True):
            ends = []
            for stop in (False, True):
                env = srezero.make(task, 0, reward="sparse")
                env.reset()
                plan = [a for a in env.oracle_plan() if a["tool"] != "resolve"]
                for a in plan if fixed else [a for a in plan if a["tool"] == "submit_diagnosis"]:
                    env.step(a)
                if stop:
                    ends.append(env.finish())
                else:
                    *_, info = env.step("resolve()")
                    ends.append(info["result"])
            resolved, stopped = ends
            assert stopped["truncated"] and resolved["resolved"], task
            assert stopped["premature_end"] == resolved["premature_end"] == resolved["premature_resolution"], task
            assert stopped["marks_terms"] == resolved["marks_terms"], (task, fixed)
            if not resolved["no_fault"]:
                assert resolved["premature_end"] == (not fixed), (task, fixed)


#: A detail stuffed with the mechanism words of many faults (found by an adversarial review).
STUFFED = ("cpu slow latency dead power fan link nic network full space disk lock transaction wal slot flag "
           "session weight sticky affinity cert dimm edac uncorrectable chrony ephemeral eaddrnotavail enfile "
           "runaway quota hot key promo coalesc standby replay conflict pending sequential seq scan blocking "
           "credential rotat hotkey AUTH WRONGPASS psu unreachable is down not ready notready")


def test_one_stuffed_detail_matches_no_root_cause() -> None:
    """Even with the right entity, its key and the current release spelled out, a detail stuffed with
    every mechanism's words is never the concrete detail of any root cause in the suite."""
    from srezero.scoring import detail, naming

    passed = total = 0
    for t in srezero.list_tasks():
        env = srezero.make(t.id, 0, reward="sparse")
        env.reset()
        w = env.world
        vocab = naming.concrete_vocabulary(w)
        for rc in env.truth:
            svc = naming.service_of(w, rc.entity) or rc.entity.split("/")[0]
            version = w.services[svc].deploys[-1].version if svc in w.services else ""
            key = rc.entity.split(".", 1)[1] if "." in rc.entity else ""
            ok, _ = detail.check(f"{rc.entity} {key} {version} {STUFFED}", rc.entity, rc, vocab)
            passed += ok
            total += 1
    assert total >= 40 and passed == 0


def test_a_detail_that_repeats_the_entity_or_category_passes_for_no_root_cause() -> None:
    """Round-2 audit L2: a claim that localises a cause and then repeats its entity (or names only the
    category) must not pass the detail check; the ground truth's own detail still must."""
    from srezero.scoring import detail, naming

    for task in tasks():
        for seed in range(2):
            env = srezero.make(task, seed)
            env.reset()
            vocab = naming.concrete_vocabulary(env.world)
            for rc in env.truth:
                assert detail.check(rc.detail, rc.entity, rc, vocab)[0], (task, seed, rc.detail)
                for parrot in (rc.entity, f"{rc.entity} {rc.category}", rc.category.replace("_", " "),
                               f"{rc.entity} is broken"):
                    assert not detail.check(parrot, rc.entity, rc, vocab)[0], (task, seed, parrot)


#: One phrase for each way a machine or its disk fails, and for each way authentication fails (a
#: fourth adversarial review: with "hardware" one family, the first passed 25 of 25 hardware details).
EVERY_WAY = {"hardware": "pending sector errors / ECC memory errors / thermal throttling / power supply dead, "
                         "node NotReady / fail-slow disk latency",
             "authentication": "expired TLS certificate, clock skew (NTP), stale rotated credential / password"}


def test_a_detail_listing_every_way_one_kind_of_thing_fails_passes_for_none() -> None:
    from srezero.scoring import detail, naming

    checked = 0
    for t in srezero.list_tasks():
        env = srezero.make(t.id, 0, reward="sparse")
        env.reset()
        vocab = naming.concrete_vocabulary(env.world)
        for rc in env.truth:
            if rc.category in EVERY_WAY:
                checked += 1
                # the honest detail with every other way appended: the strongest form of the stuffing
                ok, why = detail.check(f"{rc.detail}; or {EVERY_WAY[rc.category]}", rc.entity, rc, vocab)
                assert not ok, (t.id, rc.fault)
                assert "stuffing" in why
                assert detail.check(f"{rc.entity}: {rc.detail}", rc.entity, rc, vocab)[0]  # the honest one passes
    assert checked >= 8
