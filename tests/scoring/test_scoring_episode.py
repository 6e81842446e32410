"""Episode metrics, write judgements and step rewards, pinned on hand-built trajectories."""

from __future__ import annotations

import re

import pytest
from scoring_helpers import (
    LOOK,
    control_spec,
    crash_loop_spec,
    oracle_fix,
    oracle_reads,
    play_script,
    pool_spec,
    run,
    truth_claims,
)

import srezero
from srezero.scoring import marks as mk


def fix(env):
    return oracle_fix(env)[0]


def fix_with(value):
    def action(env):
        a = fix(env)
        return {"tool": a["tool"], "args": {**a["args"], "value": value}}
    return action


def perfect(env):
    return [*oracle_reads(env), truth_claims(env), *oracle_fix(env)]


# ---------------------------------------------------------------------------- time, steps, invalid
def test_ttd_ttm_steps_and_invalid_actions() -> None:
    # get_status costs 5 s, an invalid action 2 s, submit_diagnosis 5 s, set_config 15 s
    _env, r, _ = run(crash_loop_spec(), [LOOK, "nonsense(", truth_claims, fix])
    assert r["ttd_s"] == 12.0 and r["ttm_s"] == 27.0
    assert r["steps"] == 5 and r["invalid_actions"] == 1 and r["marks_terms"]["invalid_penalty"] == -1.0
    assert r["success"] and not r["premature_resolution"] and r["sim_seconds"] == 27.0


def test_ttd_needs_a_correct_diagnosis_and_ttm_a_mitigation() -> None:
    wrong = {"tool": "submit_diagnosis", "args": {"root_causes": [
        {"entity": "database", "category": "capacity", "detail": "overloaded"}]}}
    _env, r, _ = run(crash_loop_spec(), [wrong])
    assert r["ttd_s"] is None and r["ttm_s"] is None and not r["mitigated"]


def test_invalid_penalty_is_capped() -> None:
    _env, r, _ = run(crash_loop_spec(), ["nonsense("] * 14)
    assert r["invalid_actions"] == 14 and r["marks_terms"]["invalid_penalty"] == -mk.P_INVALID_CAP


# ---------------------------------------------------------------------------- writes
def test_right_fix_is_not_a_wrong_fix() -> None:
    _env, r, _ = play_script(crash_loop_spec(), perfect)
    assert r["wrong_fixes"] == 0 and r["writes"][0]["addresses_root_cause"] and r["marks"] == 100.0


def test_wrong_restart_is_a_wrong_fix_with_collateral() -> None:
    _env, r, _ = run(crash_loop_spec(), ['restart(target="load_balancer")', LOOK, truth_claims, fix])
    assert r["wrong_fixes"] == 1 and r["marks_terms"]["wrong_fix_penalty"] == -mk.P_WRONG_FIX
    assert r["writes"][0]["reason"] == "addresses no root cause" and r["mitigated"]
    assert r["collateral"]["method"] == "counterfactual" and r["collateral"]["writes_removed"] == 1
    assert r["collateral_errors"] == r["collateral"]["errors"] > 100  # the edge dropped requests
    assert r["marks"] == round(100.0 - mk.P_WRONG_FIX - mk.W_EVIDENCE * 2 / 3, 4)  # LOOK: 1 of 3 signals


def test_no_wrong_write_means_no_collateral() -> None:
    _env, r, _ = play_script(crash_loop_spec(), perfect)
    assert r["collateral"]["method"] == "no_wrong_writes" and r["collateral_errors"] == 0.0


def test_right_key_with_unsafe_value_is_a_wrong_fix() -> None:
    _env, r, _ = run(crash_loop_spec(), [truth_claims, fix_with("postgres://nowhere:5432/db")])
    assert r["wrong_fixes"] == 1 and r["writes"][0]["reason"].startswith("right place, unsafe value")
    assert not r["mitigated"]


def test_repeating_a_fix_after_it_worked_is_a_wrong_fix() -> None:
    _env, r, _ = run(pool_spec(), [truth_claims, 'rollback(service="web_server")', 'rollback(service="web_server")'])
    assert [w["addresses_root_cause"] for w in r["writes"]] == [True, False]


def test_destructive_action() -> None:
    _env, r, _ = run(crash_loop_spec(), [truth_claims, fix, 'scale(service="web_server", replicas=0)'])
    assert r["destructive_actions"] == 1 and r["writes"][1]["destructive"] == ["scaled web_server to zero replicas"]
    assert r["marks_terms"]["destructive_penalty"] == -mk.P_DESTRUCTIVE and r["wrong_fixes"] == 1
    assert not r["mitigated"] and not r["success"]
    assert any("zero replicas" in x for x in r["mitigation"]["reasons"])
    assert any("no replicas left" in x for x in r["mitigation"]["losses"])


def test_distractor_action() -> None:
    spec = crash_loop_spec()
    env, r, _ = run(spec, [])
    noise = sorted(e for e in env.world.noise_entities if e in env.world.services and e not in ("worker",))
    assert noise, "the quiet profile always touches some service"
    _env, r, _ = run(spec, [f'restart(target="{noise[0]}")'])
    assert r["distractor_actions"] == 1 and r["writes"][0]["distractor"]


def test_every_write_is_wrong_on_a_control_task() -> None:
    _env, r, _ = run(control_spec(), ['restart(target="cache")', {"tool": "submit_diagnosis", "args": {"root_causes": []}}])
    assert r["wrong_fixes"] == 1 and r["writes"][0]["reason"].startswith("nothing is broken")


# ---------------------------------------------------------------------------- premature, evidence
def test_premature_resolution() -> None:
    _env, r, _ = run(crash_loop_spec(), [])
    assert r["premature_resolution"] and r["premature_end"] and r["marks"] <= 5
    _env, r, _ = run(crash_loop_spec(), [fix])
    assert not r["premature_resolution"] and not r["premature_end"]
    _env, r, _ = run(control_spec(), [])
    assert not r["premature_resolution"] and r["marks"] == 0.0  # no decision on a control task earns nothing


WAIT_OUT = [{"tool": "wait", "args": {"seconds": 600}}] * 10  # crash_loop_spec's 1800 s budget runs out


def test_letting_the_budget_run_out_costs_what_resolving_does() -> None:
    """Ending with the fault active costs the premature penalty however the episode ends, so never calling
    resolve() has no advantage (an adversarial review: runbook 33.2 -> 36.5 by waiting instead)."""
    _env, resolved, _ = run(crash_loop_spec(), [LOOK, truth_claims])
    _env, waited, _ = run(crash_loop_spec(), [LOOK, truth_claims, *WAIT_OUT])
    assert resolved["resolved"] and waited["truncated"] and not waited["resolved"]
    assert waited["premature_end"] and not waited["premature_resolution"]
    assert waited["marks_terms"]["premature_penalty"] == -mk.P_PREMATURE
    assert waited["marks_terms"] == resolved["marks_terms"] and waited["marks"] == resolved["marks"] == round(30.0 + mk.W_EVIDENCE / 3, 4)  # LOOK: 1 of 3 signals


def test_a_harness_stop_with_the_fault_active_is_premature() -> None:
    env = srezero.make(crash_loop_spec(), 0)
    env.reset()
    env.step(truth_claims(env))
    r = env.finish()
    assert r["truncated"] and r["premature_end"] and r["marks_terms"]["premature_penalty"] == -mk.P_PREMATURE


def test_a_fix_that_holds_at_the_budget_end_is_not_premature() -> None:
    _env, waited, _ = run(crash_loop_spec(), [LOOK, truth_claims, fix, *WAIT_OUT])
    _env, resolved, _ = run(crash_loop_spec(), [LOOK, truth_claims, fix, *WAIT_OUT[:2]])
    assert waited["truncated"] and not waited["premature_end"] and waited["marks_terms"]["premature_penalty"] == 0.0
    assert waited["marks"] == resolved["marks"] == round(100.0 - mk.W_EVIDENCE * 2 / 3, 4)


def test_a_control_task_never_ends_with_a_root_cause_active() -> None:
    """Nothing is broken, so no end is premature; what counts is the submitted "no fault" decision."""
    _env, idle, _ = run(control_spec(), [{"tool": "wait", "args": {"seconds": 600}}] * 3)
    assert idle["truncated"] and not idle["premature_end"] and idle["marks"] == 0.0
    look = {"tool": "query_metrics", "args": {"target": "load_balancer", "metric": "error_rate"}}
    _env, decided, _ = run(control_spec(), [look, {"tool": "submit_diagnosis", "args": {"root_causes": []}},
                                            *[{"tool": "wait", "args": {"seconds": 600}}] * 3])
    assert decided["truncated"] and not decided["premature_end"] and decided["success"]


def test_evidence_coverage_counts_surfaced_signals() -> None:
    _env, r, _ = run(crash_loop_spec(), ['get_status(service="worker")'])
    assert r["evidence_coverage"] == pytest.approx(1 / 3) and r["evidence"]["found_at_step"] == [1]
    _env, r, _ = run(crash_loop_spec(), ['get_status(service="cache")', 'search_logs(service="worker", pattern="zzz")'])
    assert r["evidence_coverage"] == 0.0  # wrong place; right place with a pattern that hides the signal
    _env, r, _ = play_script(crash_loop_spec(), perfect)
    assert r["evidence_coverage"] == 1.0 and r["evidence"]["missed"] == []


def test_an_echo_of_the_agent_s_own_pattern_is_not_evidence() -> None:
    """search_logs quotes a pattern that matched nothing ("no log lines matching '<pattern>' ..."): spelling
    the signal's phrase in a pattern that can never match surfaces nothing (an adversarial review's probe)."""
    _env, r, _ = run(crash_loop_spec(), ['search_logs(service="worker", pattern="(?!)DATABASE_URL")'])
    assert r["evidence_coverage"] == 0.0
    # the same phrase in the lines the world returned does count
    _env, r, _ = run(crash_loop_spec(), [{"tool": "wait", "args": {"seconds": 120}},
                                         'search_logs(service="worker", pattern="DATABASE_URL")'])
    assert r["evidence"]["found"] == ["search_logs(worker) showing /DATABASE_URL/"]


@pytest.mark.parametrize("call", [
    {"tool": "search_logs", "args": {"service": "worker", "pattern": "(?!)SIGNAL"}},
    {"tool": "search_logs", "args": {"service": "worker", "pattern": "SIGNAL|INFO|WARN|ERROR"}},
    {"tool": "query_metrics", "args": {"target": "worker", "metric": "error_rate"}},
    {"tool": "get_config", "args": {"service": "worker"}},
    {"tool": "get_changes", "args": {"window_h": 0.0001}},
    {"tool": "node_diagnostics", "args": {"node": "<node>", "check": "dmesg"}},
    {"tool": "inspect_database", "args": {"view": "locks"}},
    {"tool": "inspect_cache", "args": {"section": "memory"}},
    {"tool": "inspect_queue", "args": {"view": "consumers"}},
])
def test_a_tool_s_line_about_the_call_is_not_evidence(call) -> None:
    """Only what the world returned is matched, never the opening lines in which a tool quotes the call
    back (``ToolOutput.echo_lines``): a signal whose pattern is exactly that echo is not surfaced, while
    every line the world returned still counts."""
    from srezero.scoring.evidence import EvidenceTracker

    env = srezero.make("inc-001", 0)
    env.reset()
    args = {k: (env.world.topo.nodes[0].name if v == "<node>" else v) for k, v in call["args"].items()}
    out = env.backend.call(call["tool"], args)
    echo, _, body = out.text.partition("\n")
    assert out.echo_lines == 1 and out.returned == (body if out.text.count("\n") else "")
    ev = EvidenceTracker([(call["tool"], "*", {}, re.escape(echo))], {})
    assert ev.observe(1, call["tool"], args, out.returned) == []
    if body:
        last = body.splitlines()[-1]
        ev = EvidenceTracker([(call["tool"], "*", {}, re.escape(last))], {})
        assert ev.observe(1, call["tool"], args, out.returned) == [0]


def test_summary_is_kept_but_never_needed() -> None:
    def with_summary(text):
        def script(env):
            claims = truth_claims(env)
            return [*oracle_reads(env), {"tool": "submit_diagnosis", "args": {**claims["args"], "summary": text}},
                    *oracle_fix(env)]
        return script

    _env, a, _ = play_script(crash_loop_spec(), with_summary(""))
    _env, b, _ = play_script(crash_loop_spec(), with_summary("the cache is on fire (this text is not scored)"))
    assert a["marks"] == b["marks"] == 100.0 and b["summary"].startswith("the cache")


# ---------------------------------------------------------------------------- step rewards
@pytest.mark.parametrize("script", [
    [], ["get_alerts()", "nonsense("], ['get_status(service="worker")', truth_claims, fix],
    ['restart(target="load_balancer")', 'scale(service="web_server", replicas=0)', truth_claims, fix],
    ["nonsense("] * 40,
])
@pytest.mark.parametrize("reward", ["shaped", "sparse"])
def test_rewards_sum_to_marks(script, reward) -> None:
    _env, r, rewards = run(crash_loop_spec(), script, reward=reward)
    assert sum(rewards) == pytest.approx(r["marks"] / 100.0, abs=1e-12)


def test_the_default_reward_shows_nothing_before_the_end() -> None:
    """``srezero.make`` is what agents are evaluated through: by default no step before the last says
    that a read found evidence or that a write healed the fault (shaping would: the test below)."""
    assert srezero.make("inc-001", 0).reward_mode == "sparse"
    script = ['get_status(service="worker")', 'restart(target="cache")', fix]
    _env, r, rewards = run(crash_loop_spec(), script, reward="sparse")
    _env, _r, shaped = run(crash_loop_spec(), script)
    assert rewards[:-1] == [0.0] * len(script) and rewards[-1] == pytest.approx(r["marks"] / 100.0)
    assert all(shaped[:3]), "the same steps, shaped, pay when they happen"


def test_rewards_are_shaped_when_incurred() -> None:
    _env, _r, rewards = run(crash_loop_spec(), ['get_status(service="worker")', 'restart(target="cache")', fix])
    assert rewards[0] == pytest.approx(mk.W_EVIDENCE / 3 / 100)  # one of three signals surfaced
    assert rewards[1] == pytest.approx(-mk.P_WRONG_FIX / 100)  # a wrong write costs at once
    assert rewards[2] == pytest.approx(mk.W_HEALTH_SHAPING / 100)  # restoring health pays at once


def test_counterfactual_replay_is_exact() -> None:
    # replaying every write (none skipped) must reproduce the episode's series exactly, so the
    # collateral of skipping the wrong writes is due to those writes and nothing else
    import numpy as np

    from srezero.episode import INVALID_COST_S
    from srezero.scoring import collateral

    script = ['get_status(service="worker")', 'restart(target="load_balancer")', "nonsense(", truth_claims, fix,
              'scale(service="web_server", replicas=5)']
    env, _r, _ = run(crash_loop_spec(), script)
    cf = collateral.replay(env.spec, env.seed, env.trajectory, set(), INVALID_COST_S)
    w = env.world
    # the replay stops at the end of the verification window's settling period (6 of its 20 ticks)
    assert cf.col == w.col - 14
    assert np.array_equal(cf.buf[:, : cf.col + 1], w.buf[:, : cf.col + 1])
    assert collateral.compare(w, cf, env.col0) == collateral.ZERO


def test_write_identity_uses_every_argument_but_value() -> None:
    from srezero.scoring.writes import write_key

    assert write_key("failover", {}) == write_key("failover", {"service": "database"})
    assert write_key("set_config", {"service": "web_server", "key": "db_retries", "value": 0}) == \
        write_key("set_config", {"service": "web_server", "key": "db_retries", "value": 3})
    assert write_key("set_config", {"service": "web_server", "key": "db_retries", "value": 0}) != \
        write_key("set_config", {"service": "web_server", "key": "db_timeout_ms", "value": 0})
    assert write_key("cleanup_disk", {"node": "node-a", "device": "nvme1n1"}) != \
        write_key("cleanup_disk", {"node": "node-a", "device": "nvme0n1"})


@pytest.mark.parametrize("detail", ["DATABASE_URL was emptied", "DATABASE_URL got cleared", "it was deleted",
                                    "blanked in the last change", "DATABASE_URL has no value", "is unset"])
def test_the_usual_ways_of_saying_a_setting_is_gone_are_its_detail(detail: str) -> None:
    """A review found "emptied", "cleared", "deleted", "blanked" and "has no value" failed the detail
    of an emptied environment variable while "removed" passed: all say the same thing."""
    env = srezero.make("inc-001", 1)
    env.reset()
    claim_ = {"entity": "worker.env.DATABASE_URL", "category": "misconfiguration", "detail": detail}
    env.step(LOOK)
    env.step({"tool": "submit_diagnosis", "args": {"root_causes": [claim_]}})
    *_, info = env.step("resolve()")
    assert info["result"]["diagnosis"]["per_cause"][0]["detail"] is True


# ---------------------------------------------------------------------------- remedies that take time
def _disk_full(seed: int = 0):
    from srezero.faults.base import load_all
    from tests.faults.harness import start

    env = start(load_all()["disk_full"], seed)
    d = env.world.faults[0].disk
    return env, d, f"expand_volume(node='{d.node.name}', device='{d.device}', size_gb={d.capacity_gb * 2:.0f})"


@pytest.mark.parametrize("then", ["wait(seconds=120)", "resolve()"])
def test_a_remedy_whose_effect_completes_later_is_credited_when_it_heals(then: str) -> None:
    """A volume resizes about a minute after expand_volume: judged when made, it addressed nothing yet
    (a dogfooding review: -10 for the declared remedy). It is credited once the disk is below the line,
    at a later step or in the verification window."""
    env, d, expand = _disk_full()
    env.step(expand)
    assert env.st.writes[-1].reason == "addresses no root cause"  # not yet: the resize is under way
    _, _, done, _, info = env.step(then)
    w = env.st.writes[0]
    assert w.addresses_root_cause and w.reason == "neutralised disk_full" and d.capacity_gb > d.used_gb / 0.9
    if done:
        assert info["result"]["wrong_fixes"] == 0 and info["result"]["writes"][0]["addresses_root_cause"]


def test_a_remedy_is_not_credited_for_a_fault_another_write_healed_or_that_never_healed() -> None:
    env, d, expand = _disk_full()
    other = next(x for n in env.world.topo.nodes for x in n.disks if x is not d)
    env.step(f"expand_volume(node='{other.node.name}', device='{other.device}', size_gb={other.capacity_gb * 2:.0f})")
    env.step(expand)
    env.step(f"cleanup_disk(node='{d.node.name}', device='{d.device}')")  # heals at once, before the resize
    env.step("wait(seconds=400)")
    reasons = [x.reason for x in env.st.writes]
    assert reasons == ["addresses no root cause", "addresses no root cause", "part of the fix of disk_full"]
