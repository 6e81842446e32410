"""The mitigation oracle: neutralised, no relapse, SLOs through the window, nothing destroyed."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from scoring_helpers import crash_loop_spec, oracle_fix, play_script, run, truth_claims

import srezero
from srezero.scoring.mitigation import settle_s


def fix(env):
    return oracle_fix(env)[0]


def test_settling_period() -> None:
    assert settle_s(600) == 180.0 and settle_s(300) == 100.0 and settle_s(3600) == 180.0


def test_right_fix_mitigates() -> None:
    _env, r, _ = run(crash_loop_spec(), [fix])
    m = r["mitigation"]
    assert r["mitigated"] and m["reasons"] == [] and m["slo_ok"] and m["relapsed"] == [] and m["losses"] == []
    assert all(m["neutralised"].values()) and m["verify_window_s"] == 600.0 and m["settle_s"] == 180.0


def test_unfixed_fault_is_reported_in_words() -> None:
    _env, r, _ = run(crash_loop_spec(), ['restart(target="worker")'])
    m = r["mitigation"]
    assert not r["mitigated"] and not any(m["neutralised"].values())
    assert any("env.DATABASE_URL" in x and "safe range" in x for x in m["reasons"]), m["reasons"]


def test_relapse_during_verification_fails_mitigation() -> None:
    env = srezero.make(crash_loop_spec(), 0)
    env.reset()
    env.step(fix(env))
    fault = env.faults[0]

    def relapse_probe(w: Any, delay: float) -> Generator[Any, Any, None]:
        yield w.env.timeout(delay + 60)
        w.services["worker"].config["env.DATABASE_URL"] = ""  # the latent cause comes back

    fault.relapse_probe = relapse_probe
    *_, info = env.step("resolve()")
    r = info["result"]
    assert not r["premature_resolution"] and not r["mitigated"]
    assert r["mitigation"]["relapsed"] == ["crash_loop@worker"]
    assert any(x.startswith("relapsed during verification") for x in r["mitigation"]["reasons"])


def test_slo_must_hold_after_settling() -> None:
    _env, r, _ = run(crash_loop_spec(slo={"latency_p99_ms": 1.0}), [fix])
    m = r["mitigation"]
    assert not r["mitigated"] and not m["slo_ok"] and all(m["neutralised"].values())
    assert m["slo_breach_s"]["latency_p99_ms"] == 600.0 - 180.0
    assert any("edge p99 latency" in x and "SLO of 1" in x for x in m["reasons"])


def test_destroying_something_fails_mitigation_even_when_fixed() -> None:
    _env, r, _ = play_script(crash_loop_spec(), lambda e: [truth_claims(e), fix(e),
                                                           {"tool": "scale", "args": {"service": "worker", "replicas": 0}}])
    m = r["mitigation"]
    assert all(m["neutralised"].values()) and not r["mitigated"]
    assert m["destroyed"] == ["scaled worker to zero replicas"] and "worker has no replicas left; scale it back up" in m["losses"]


def test_alert_silence_is_not_mitigation() -> None:
    # the alert stops firing when nothing is left to measure, but the oracle reads the cause, not the alert
    _env, r, _ = run(crash_loop_spec(), ['scale(service="worker", replicas=0)'])
    assert not r["mitigated"] and not all(r["mitigation"]["neutralised"].values())
