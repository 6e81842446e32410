"""The diagnosis checklist, answer by answer, on hand-built root causes (no world needed)."""

from __future__ import annotations

import pytest

from srezero.faults.base import CATEGORIES, RootCause
from srezero.scoring import detail, naming
from srezero.scoring import diagnosis as diag

KEY = RootCause(entity="web_server.db_timeout_ms", category="misconfiguration", detail="db_timeout_ms set to 40",
                detail_tokens=("db_timeout_ms", "40"), aliases=("web_server",), fault="bad_config", layer="application")
DISK = RootCause(entity="node-ab12/nvme1n1", category="hardware", detail="latent sector errors on nvme1n1",
                 detail_tokens=("sector", "I/O error", "nvme1n1", "smart"), aliases=("node-ab12",),
                 fault="latent_sector_errors", layer="disk")
LEAK = RootCause(entity="web_server", category="code_defect", detail="release v1.25.2 leaks memory",
                 detail_tokens=("leak", "v1.25.2", "memory"), fault="memory_leak", layer="application")
VOCAB = {"db_timeout_ms": "db_timeout_ms", "db_retries": "db_retries", "db_pool_size": "db_pool_size",
         "max_connections": "max_connections", "statement_timeout_ms": "statement_timeout_ms",
         "nvme0n1": "nvme0n1", "nvme1n1": "nvme1n1", "v1.25.2": "v1.25.2", "v1.25.1": "v1.25.1",
         "v3.19.0": "v3.19.0", "node-ab12": "node-ab12", "node-cd34": "node-cd34", "web-aaaaa": "web-aaaaa"}
VICTIMS = frozenset({"load_balancer", "database", "web-aaaaa"})


def score(claims, truth=(KEY,), **kw):
    accepted = [naming.accepted_names(None, rc) for rc in truth]
    return diag.score(claims, list(truth), accepted, kw.pop("victims", VICTIMS), VOCAB, **kw)


def claim(entity, category="misconfiguration", detail_text="db_timeout_ms is 40 ms, far too low"):
    return {"entity": entity, "category": category, "detail": detail_text}


def test_perfect_diagnosis_answers_every_question_yes() -> None:
    d = score([claim("web_server.db_timeout_ms")])
    assert d["score"] == 1.0 and d["gate"] is None
    assert set(d["checklist"].values()) == {1.0}
    assert d["dimensions"] == {"localization": 1.0, "characterization": 1.0, "scope": 1.0}
    assert (d["precision"], d["recall"], d["f1"], d["precision_at_full_recall"]) == (1.0, 1.0, 1.0, 1.0)


@pytest.mark.parametrize("entity", ["web_server.db_timeout_ms", "WEB_SERVER.DB_TIMEOUT_MS", " web_server:db_timeout_ms ",
                                    "web_server/db_timeout_ms", "web_server"])
def test_config_key_names_and_coarser_alias_localise(entity: str) -> None:
    assert score([claim(entity)])["checklist"]["localization.origin"] == 1.0


@pytest.mark.parametrize("entity", ["node-ab12/nvme1n1", "node-ab12:/dev/nvme1n1", "node-ab12:nvme1n1", "node-ab12"])
def test_disk_names_and_node_alias_localise(entity: str) -> None:
    d = score([claim(entity, "hardware", "pending sectors on nvme1n1")], truth=(DISK,))
    assert d["score"] == 1.0, d


def test_finer_name_is_not_an_alias() -> None:
    # blaming one replica for a service-wide leak does not localise it (and replicas cannot multiply credit)
    d = score([claim("web-aaaaa", "code_defect", "release v1.25.2 leaks memory")], truth=(LEAK,))
    assert d["checklist"]["localization.origin"] == 0.0 and d["score"] == 0.0


def test_blaming_a_victim_too() -> None:
    d = score([claim("web_server.db_timeout_ms"), claim("database", "capacity", "overloaded")])
    c = d["checklist"]
    assert c["localization.no_victim"] == 0.0 and c["localization.no_healthy"] == 1.0 and c["scope.no_over"] == 0.0
    assert d["precision"] == 0.5 and d["recall"] == 1.0 and d["precision_at_full_recall"] == 0.5
    # as many innocents as culprits: the checklist answers stay reported, but D is gated to 0
    assert d["score"] == 0.0 and d["gate"] == "low_precision" and d["victim_claims"] == ["database"]


def test_victim_config_key_and_replica_count_as_victims() -> None:
    d = score([claim("web_server.db_timeout_ms"), claim("database.max_connections")],
              service_of={"database.max_connections": "database"})
    assert d["checklist"]["localization.no_victim"] == 0.0


def test_blaming_a_healthy_component_too() -> None:
    d = score([claim("web_server.db_timeout_ms"), claim("cache", "capacity", "too small")])
    assert d["checklist"]["localization.no_healthy"] == 0.0 and d["checklist"]["localization.no_victim"] == 1.0
    assert d["healthy_claims"] == ["cache"]


def test_distractor_claims_are_reported() -> None:
    d = score([claim("web_server.db_timeout_ms"), claim("cache")], noise=frozenset({"cache"}))
    assert d["distractor_claims"] == ["cache"]


def test_wrong_category() -> None:
    c = score([claim("web_server.db_timeout_ms", "capacity")])["checklist"]
    assert c["characterization.mechanism"] == 0.0 and c["characterization.detail"] == 0.0
    assert c["characterization.no_contradiction"] == 1.0 and c["localization.origin"] == 1.0


def test_two_categories_are_a_hedge() -> None:
    """One cause under two categories is a category hedge (an adversarial review: the right entity under
    the two commonest categories kept D = 0.875), so it earns nothing, like three categories."""
    d = score([claim("web_server.db_timeout_ms"), claim("web_server", "capacity")])
    assert d["checklist"]["characterization.no_contradiction"] == 0.0
    assert d["checklist"]["characterization.mechanism"] == 1.0
    assert d["score"] == 0.0 and d["gate"] == "hedged_categories"
    same_name = score([claim("web_server.db_timeout_ms", c) for c in ("misconfiguration", "resource_exhaustion")])
    assert same_name["score"] == 0.0 and same_name["gate"] == "hedged_categories"


def test_two_faults_behind_one_name_are_not_a_hedge() -> None:
    """A service name localises both a leak in its release and its own misconfigured key: claiming the
    service with the leak's category characterises the leak, not a second category for the key."""
    d = score([claim("web_server", "code_defect", "release v1.25.2 leaks memory"), claim("web_server.db_timeout_ms")],
              truth=(KEY, LEAK))
    assert d["gate"] is None and d["score"] == 1.0, d
    assert [p["categories_claimed"] for p in d["per_cause"]] == [["misconfiguration"], ["code_defect"]]


def test_hedging_three_categories_earns_nothing() -> None:
    d = score([claim("web_server.db_timeout_ms", c) for c in ("misconfiguration", "capacity", "network")])
    assert d["gate"] == "hedged_categories" and d["score"] == 0.0


def test_alias_padding_cannot_let_an_innocent_through() -> None:
    """The names of one root cause count once for precision: the culprit's key plus its service plus an
    innocent is 1 culprit against 1 innocent (gated), as the key and the innocent alone are."""
    alone = score([claim("web_server.db_timeout_ms"), claim("cache.ttl_s")])
    padded = score([claim("web_server.db_timeout_ms"), claim("web_server"), claim("cache.ttl_s")])
    spelled = score([claim("web_server.db_timeout_ms"), claim("web_server:db_timeout_ms"),
                     claim("web_server/db_timeout_ms"), claim("cache.ttl_s")])
    for d in (alone, padded, spelled):
        assert d["precision"] == 0.5 and d["score"] == 0.0 and d["gate"] == "low_precision", d
    # two root causes each named (one of them twice) beside one innocent: 2 of 3, not gated
    two = score([claim("web_server.db_timeout_ms"), claim("web_server"),
                 claim("node-ab12", "hardware", "bad sectors on nvme1n1"), claim("cache.ttl_s")], truth=(KEY, DISK))
    assert two["precision"] == pytest.approx(2 / 3) and two["gate"] is None


def test_padding_one_cause_is_over_attribution() -> None:
    d = score([claim("web_server.db_timeout_ms")] * 3)
    assert d["checklist"]["scope.no_over"] == 0.0 and d["score"] == pytest.approx(7 / 8)
    assert score([claim("web_server.db_timeout_ms")] * 2)["checklist"]["scope.no_over"] == 1.0


def test_multi_fault_partial_credit_and_under_attribution() -> None:
    both = (KEY, DISK)
    d = score([claim("web_server.db_timeout_ms")], truth=both)
    c = d["checklist"]
    assert c["localization.origin"] == 0.5 and c["scope.no_under"] == 0.0 and c["characterization.mechanism"] == 0.5
    assert d["recall"] == 0.5 and d["precision"] == 1.0 and d["precision_at_full_recall"] == 0.0
    assert d["f1"] == pytest.approx(2 / 3)
    full = score([claim("web_server.db_timeout_ms"), claim("node-ab12", "hardware", "bad sectors on nvme1n1")], truth=both)
    assert full["score"] == 1.0


def test_every_entity_under_every_category_scores_zero() -> None:
    entities = ["load_balancer", "web_server", "cache", "database", "message_queue", "worker", "web-aaaaa",
                "node-ab12", "node-cd34", "node-ab12/nvme1n1", "web_server.db_timeout_ms", "web_server.db_retries"]
    claims = [claim(e, c, "everything") for e in entities for c in CATEGORIES if c != "none"]
    for truth in ((KEY,), (DISK,), (LEAK,), (KEY, DISK)):
        d = score(claims, truth=truth)
        assert d["score"] == 0.0 and d["gate"] == "low_precision", truth


def test_no_claims_scores_zero() -> None:
    for claims in ([], None, [claim("web_server", "none")]):
        d = score(claims)
        assert d["score"] == 0.0 and d["gate"] == "no_claims" and set(d["checklist"].values()) == {0.0}


def test_control_task() -> None:
    assert diag.score_no_fault([])["score"] == 1.0
    assert diag.score_no_fault([{"entity": "load_balancer", "category": "none", "detail": "noise"}])["score"] == 1.0
    assert diag.score_no_fault(None)["score"] == 0.0  # never submitted: not a decision
    wrong = diag.score_no_fault([claim("database", "capacity")])
    assert wrong["score"] == 0.0 and set(wrong["checklist"].values()) == {0.0}


# ---------------------------------------------------------------------------- the concrete detail
def detail_ok(text: str, rc: RootCause = KEY, entity: str | None = None) -> bool:
    return detail.check(text, entity or rc.entity, rc, VOCAB)[0]


def test_honest_details_pass() -> None:
    assert detail_ok("db_timeout_ms was set to 40 ms; queries time out and retries exhaust the connection pool")
    assert detail_ok("v1.25.2 leaks memory until the OOM killer restarts the pods", LEAK)
    assert detail_ok("SMART shows pending sectors and dmesg I/O errors on nvme1n1", DISK)


def test_detail_must_name_the_cause_concretely() -> None:
    assert not detail_ok("")
    assert not detail_ok("a timeout is wrong")  # no key
    assert not detail_ok("the new release leaks memory", LEAK)  # no release named
    # the device may be named by the claim's entity instead
    assert detail_ok("latent sector errors", DISK, entity="node-ab12/nvme1n1")
    assert not detail_ok("latent sector errors", DISK, entity="node-ab12")


def test_repeating_the_entity_is_not_a_detail() -> None:
    """The detail must say what is wrong, not only where: the key's value, the disk's kind of failure."""
    assert not detail_ok("web_server.db_timeout_ms")
    assert not detail_ok("db_timeout_ms", entity="web_server")  # the key without its value
    assert not detail_ok("db_timeout_ms is wrong")
    assert not detail_ok("node-ab12/nvme1n1", DISK)
    assert not detail_ok("nvme1n1", DISK, entity="node-ab12")  # which disk, not what is wrong with it
    assert detail.check("web_server.db_timeout_ms", KEY.entity, KEY, VOCAB)[1].startswith("the detail only repeats")
    assert detail_ok("db_timeout_ms=40")
    assert detail_ok("set to 40ms")  # the claim's entity names the key


def test_which_way_a_number_is_wrong_is_a_detail_but_not_both_ways() -> None:
    from srezero.faults.base import direction_tokens

    low = RootCause(**{**KEY.__dict__, "detail_tokens": ("db_timeout_ms", "40", *direction_tokens(2500, 40))})
    assert detail_ok("db_timeout_ms is too low", low, entity="web_server")
    assert detail_ok("set too low", low)
    assert not detail_ok("db_timeout_ms is too high", low, entity="web_server")
    assert not detail_ok("db_timeout_ms is too low or too high", low, entity="web_server")
    assert direction_tokens(10, 40) != direction_tokens(40, 10) and direction_tokens("a", "b") == ()
    assert direction_tokens(True, False) == () and direction_tokens(5, 5) == ()


def test_a_value_is_matched_as_a_whole_number() -> None:
    assert not detail_ok("db_timeout_ms is 4000")
    assert not detail_ok("db_timeout_ms is 40.5")
    assert not detail_ok("db_timeout_ms is 140")
    assert not detail_ok("db_timeout_ms on web-40")
    assert detail_ok("db_timeout_ms is 40.")
    # a detail listing many numbers gets no credit for containing the right one
    assert not detail_ok("db_timeout_ms is one of 10 20 30 40 50 60")
    assert detail_ok("db_timeout_ms 40 (was 2500) at 09:31:07, p99 1200 ms")


def test_value_tokens_are_written_as_the_config_tools_show_them() -> None:
    from srezero.faults.detail_words import MISSING_WORDS, value_tokens

    assert value_tokens(40) == ("40",)
    assert value_tokens(2.0) == ("2.0", "2")
    assert value_tokens("pgbouncer:6432") == ("pgbouncer:6432",)
    assert value_tokens(False) == ("false", "off", "disabled")
    assert value_tokens("") == MISSING_WORDS


def test_keyword_stuffing_earns_nothing() -> None:
    every_key = " ".join(VOCAB)
    every_mechanism = ("memory leak OOM sector I/O error SMART certificate expired clock skew packet loss conntrack "
                       "connection pool retry timeout crash loop capacity queue backlog cache eviction slow query "
                       "index lock release regression")
    for rc in (KEY, DISK, LEAK):
        assert not detail_ok(every_key + " " + every_mechanism, rc)
        assert not detail_ok(f"{rc.detail} {every_key}", rc)  # the right detail plus every other key
        assert not detail_ok(f"{rc.detail} {every_mechanism}", rc)  # the right detail plus every mechanism
    d = score([claim("web_server.db_timeout_ms", detail_text=every_key + " " + every_mechanism)])
    assert d["checklist"]["characterization.detail"] == 0.0 and d["per_cause"][0]["detail_reason"]


def test_a_service_claim_cannot_hedge_across_keys() -> None:
    """At most one foreign concrete item: the service with "one of k1, k2, k3" is a three-way hedge over
    keys and fails the detail; one victim named beside the right key is still an honest detail."""
    assert not detail_ok("one of db_timeout_ms, db_retries, db_pool_size is wrong", entity="web_server")
    assert not detail_ok("db_timeout_ms or db_retries or db_pool_size", entity="web_server.db_timeout_ms")
    assert detail_ok("db_timeout_ms is 40 ms, so web-aaaaa times out", entity="web_server")
    d = score([claim("web_server", detail_text="one of db_timeout_ms, db_retries, db_pool_size is wrong")])
    assert d["checklist"]["characterization.detail"] == 0.0 and d["score"] == pytest.approx(7 / 8)


def test_summary_is_never_needed() -> None:
    # the checklist takes no summary at all; a claim's detail is the only text that is scored
    with_detail = score([claim("web_server.db_timeout_ms")])
    assert with_detail["score"] == 1.0


def test_the_right_entity_with_the_wrong_mechanism_is_capped() -> None:
    """Naming where without knowing what: 6 of 8 answers are yes, but D is capped at a quarter."""
    d = score([claim("web_server.db_timeout_ms", "hardware", "")])
    assert d["checklist"]["characterization.mechanism"] == 0.0
    assert sum(d["checklist"].values()) == 6.0 and d["score"] == 0.25


def test_a_right_guess_without_evidence_is_named_but_not_characterised() -> None:
    """Grounding: the right entity, category and detail with no evidence of the cause read first is a
    guess. It still localises, but the category and detail do not count, so D stays at the cap."""
    seen = score([claim("web_server.db_timeout_ms")], grounded=[True])
    blind = score([claim("web_server.db_timeout_ms")], grounded=[False])
    assert seen["score"] == 1.0
    assert blind["checklist"]["localization.origin"] == 1.0
    assert blind["checklist"]["characterization.mechanism"] == blind["checklist"]["characterization.detail"] == 0.0
    assert blind["score"] == diag.MECHANISM_CAP and blind["per_cause"][0]["grounded"] is False
    assert blind["per_cause"][0]["detail_reason"] == diag.UNSUPPORTED


def test_grounding_counts_per_root_cause() -> None:
    claims = [claim("web_server.db_timeout_ms"), claim("web_server", "code_defect", "release v1.25.2 leaks memory")]
    d = score(claims, truth=(KEY, LEAK), grounded=[True, False])
    assert d["checklist"]["characterization.mechanism"] == 0.5 and d["checklist"]["characterization.detail"] == 0.5
    assert [c["grounded"] for c in d["per_cause"]] == [True, False]


def test_no_fault_unchecked_is_not_a_decision() -> None:
    blind = diag.score_no_fault([], grounded=False)
    assert blind["score"] == 0.0 and blind["gate"] == "unsupported"
    assert diag.score_no_fault([], grounded=True)["score"] == 1.0
    assert diag.score_no_fault([claim("database", "capacity")], grounded=True)["gate"] == "blamed_a_healthy_system"


def test_a_leak_in_deployed_code_is_a_code_defect_and_a_resource_exhaustion() -> None:
    """A dogfooding review: inc-009's connection leak was graded resource_exhaustion only, inc-012's
    memory leak code_defect only, though the taxonomy's words put every leak under both."""
    import srezero

    for task, seed in (("inc-009", 8), ("inc-012", 7)):
        env = srezero.make(task, seed)
        env.reset()
        leak = next(rc for rc in env.truth if "leak" in rc.detail)
        assert leak.categories() == {"code_defect", "resource_exhaustion"}
        for categories in (["code_defect"], ["resource_exhaustion"], ["code_defect", "resource_exhaustion"]):
            claims = [{"entity": leak.entity, "category": c, "detail": leak.detail} for c in categories]
            claims += [{"entity": rc.entity, "category": rc.category, "detail": rc.detail}
                       for rc in env.truth if rc is not leak]
            d = diag.score(claims, env.truth, [frozenset(naming.accepted_names(env.world, rc)) for rc in env.truth],
                           frozenset(), naming.concrete_vocabulary(env.world))
            assert d["score"] == 1.0 and d["gate"] is None, (task, categories, d)
        wrong = [{"entity": leak.entity, "category": c, "detail": leak.detail} for c in ("code_defect", "capacity")]
        d = diag.score(wrong, [leak], [frozenset(naming.accepted_names(env.world, leak))], frozenset(),
                       naming.concrete_vocabulary(env.world))
        assert d["gate"] == "hedged_categories"  # a wrong second category is still a hedge


def test_a_detail_naming_the_pods_on_the_cause_and_where_it_failed_over_is_not_stuffing() -> None:
    """A blind player's inc-018 detail named the primary on the fail-slow disk, the replica it failed over
    to and that replica's node: three pod and node names that are one victim on the cause's node and one
    place elsewhere, not stuffing. Naming every node and pod still is."""
    import srezero
    from srezero.scoring import detail

    env = srezero.make("inc-018", 16)
    env.reset()
    w, rc = env.world, env.truth[0]
    vocab = naming.concrete_vocabulary(w)
    disk_node = rc.entity.split("/")[0]
    on_cause = next(r.name for r in w.services["database"].replicas if r.node.name == disk_node)
    other = next(r for r in w.services["database"].replicas if r.node.name != disk_node)
    honest = (f"data disk {rc.entity} ({on_cause}'s volume) became slow: I/O latency 0.27 -> 8 ms; "
              f"failed over to {other.name} on {other.node.name}")
    assert detail.check(honest, rc.entity, rc, vocab) == (True, "")
    everything = " ".join([*(n.name for n in w.topo.nodes), *w.topo.replicas])
    ok, why = detail.check(f"{rc.detail}: {everything}", rc.entity, rc, vocab)
    assert not ok and "stuffing" in why
