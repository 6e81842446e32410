"""Noise never breaches an SLO on its own and never changes the ground truth."""

from __future__ import annotations

import numpy as np
import pytest

import srezero
from srezero.faults.base import load_all
from srezero.faults.noise import FALSE_ALARMS, NOISE, PROFILES
from srezero.scoring.mitigation import verify
from srezero.sim.world import World
from srezero.task.spec import AlertSpec, BudgetSpec, FaultSpec, GroundTruthSpec, NoiseSpec, TaskSpec
from tests.faults.harness import spec_for

SEEDS = range(8)
RUN_S = 1500.0  # every noise item is scheduled within 900 s and lasts at most 7 min


def control(profile: str, extra: dict[str, int] | None = None) -> TaskSpec:
    return TaskSpec(id="noise-control", title="noise only", description="no fault, only noise", difficulty="easy",
                    noise=NoiseSpec(profile=profile, extra=extra or {}), ground_truth=GroundTruthSpec(no_fault=True),
                    budget=BudgetSpec(max_onset_s=600.0))


def worst_slo(w: World, spec: TaskSpec) -> dict[str, float]:
    """Every SLO row over every tick since the end of history, beyond its limit."""
    c0 = w.history_cols
    out = {}
    for metric, entity, limit in (("error_rate", "load_balancer", spec.slo.error_rate),
                                  ("latency_p99_ms", "load_balancer", spec.slo.latency_p99_ms),
                                  ("queue_age_s", "message_queue", spec.slo.queue_age_s)):
        worst = float(w.buf[w.row_of[(entity, metric)], c0 : w.col + 1].max())
        if worst > limit:
            out[metric] = worst
    return out


@pytest.mark.parametrize("profile", list(PROFILES))
def test_profiles_never_breach_an_slo(profile: str) -> None:
    for seed in SEEDS:
        spec = control(profile)
        w = World.build(spec, seed)
        w.advance(RUN_S)
        assert worst_slo(w, spec) == {}, (profile, seed)
        judged = verify(w, [])
        assert judged["slo_ok"] and judged["mitigated"], (profile, seed, judged["reasons"])


@pytest.mark.parametrize("name", sorted(n for n in NOISE if n not in FALSE_ALARMS))
def test_each_noise_item_alone_never_breaches_an_slo(name: str) -> None:
    for seed in range(4):
        spec = control("quiet", {name: 3})
        w = World.build(spec, seed)
        w.advance(RUN_S)
        assert worst_slo(w, spec) == {}, (name, seed)


@pytest.mark.parametrize(("name", "alert", "metric", "floor"), [
    ("false_alarm_blip", "DatabaseLatencyHigh", ("load_balancer", "latency_p99_ms"), 300.0),
    ("false_alarm_link", "HighErrorRate", ("load_balancer", "error_rate"), 0.05),
])
def test_false_alarm_spikes_then_clears_itself(name: str, alert: str, metric: tuple[str, str], floor: float) -> None:
    """The distractors meant to page (never part of a profile): a breach of a few minutes that fires
    the alert real faults page with, then a healthy verification window without anyone doing anything."""
    spec = control("quiet", {name: 1})
    for seed in range(4):
        w = World.build(spec, seed)
        w.advance(600.0)
        spike = float(w.buf[w.row_of[metric], w.history_cols : w.col + 1].max())
        assert spike > floor, (seed, spike)
        assert float(w.buf[w.row_of[metric], w.col]) < floor, seed  # over by itself
        assert any(a.name == alert for a in w.alerts.history), seed
        judged = verify(w, [])
        assert judged["slo_ok"], (seed, judged["reasons"])


def test_every_false_alarm_declares_its_evidence() -> None:
    """A control task's evidence is what its false alarm declares: metrics that exist."""
    from srezero.sim import metrics as M

    for name, reads in FALSE_ALARMS.items():
        assert name in NOISE and name not in {n for p in PROFILES.values() for n in p}, name
        for entity, metric in reads:
            assert metric in M.metric_names(entity), (name, entity, metric)


def _with_profile(spec: TaskSpec, profile: str) -> TaskSpec:
    return spec.model_copy(update={"noise": NoiseSpec(profile=profile)})


def _truth(spec: TaskSpec, seed: int) -> tuple[list[dict], list[bool], list[bool]]:
    """Ground truth, neutralised() at the page, and neutralised() after the oracle's fix."""
    env = srezero.make(spec, seed)
    env.reset(seed=seed)
    truth = env.ground_truth()
    w = env.world
    at_page = [f.neutralised(w) for f in w.faults]
    for action in env.oracle_plan():
        if action["tool"] in ("resolve", "submit_diagnosis") or env._tools[action["tool"]].kind != "write":
            continue
        env.step(action)
    w.advance(300.0)
    return truth, at_page, [f.neutralised(w) for f in w.faults]


def _specs() -> list[TaskSpec]:
    """Every task file, one synthetic task per primitive, and a concurrent (visible plus silent) pair."""
    specs = [srezero.get_task(t.id) for t in srezero.list_tasks()]
    specs += [spec_for(cls) for _, cls in sorted(load_all().items())]
    specs.append(TaskSpec(
        id="noise-concurrent", title="visible plus silent", description="a conntrack fault and a filling disk",
        difficulty="medium", alert=AlertSpec(name="HighErrorRate"),
        faults=(FaultSpec(primitive="conntrack_full", target="node(web_server[*])", at=60.0),
                FaultSpec(primitive="disk_filling", target="disk(worker[*])", at=30.0, visible=False))))
    return specs


@pytest.mark.parametrize("spec", _specs(), ids=lambda s: s.id)
def test_noise_never_changes_the_ground_truth(spec: TaskSpec) -> None:
    for seed in (1, 2):
        quiet = _truth(_with_profile(spec, "quiet"), seed)
        noisy = _truth(_with_profile(spec, "noisy"), seed)
        assert quiet[0] == noisy[0], (spec.id, seed, "ground truth")
        assert quiet[1] == noisy[1], (spec.id, seed, "neutralised at the page")
        assert quiet[2] == noisy[2], (spec.id, seed, "neutralised after the oracle's fix")


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.removeprefix("deployed v").split(":", 1)[0].split("."))


@pytest.mark.parametrize("profile", ["default", "noisy"])
def test_the_change_history_tells_one_consistent_story(profile: str) -> None:
    """Read in time order, each service's releases go up and each key's edits chain (60 -> 75, 75 -> 90)."""
    extra = {"benign_deploy": 3, "benign_config_change": 4}
    for seed in SEEDS:
        w = World.build(control(profile, extra), seed)
        w.page()
        w.advance(900.0)
        history = sorted(w.changes, key=lambda c: c.at)
        last_version: dict[str, tuple[int, ...]] = {}
        last_value: dict[tuple[str, str], str] = {}
        for c in history:
            if c.kind == "deploy":
                v = _version(c.detail)
                assert v > last_version.get(c.service, ()), (seed, c)
                last_version[c.service] = v
            elif c.kind == "config" and ": " in c.detail:  # a key edit (a rotation names its secret instead)
                key, edit = c.detail.split(": ", 1)
                old, new = edit.split(" (", 1)[0].split(" -> ")
                if (c.service, key) in last_value:
                    assert old == last_value[c.service, key], (seed, c)
                last_value[c.service, key] = new


@pytest.mark.parametrize("name", ["unrelated_alert", "batch_cpu_spike"])
def test_cpu_noise_lands_on_any_node_the_database_and_cache_nodes_too(name: str, monkeypatch) -> None:
    """Round-2 audit L4: when CPU noise avoided the database and cache nodes, a NodeCPUHigh alert (or a
    hot ``top``) on one of them could only be a cause. Over seeds it reaches every kind of node."""
    from srezero.faults import noise

    busy = []
    real = noise._host_job
    monkeypatch.setattr(noise, "_host_job", lambda w, node, *a: (busy.append(node), real(w, node, *a)))
    kinds: set[str] = set()
    for seed in range(30):
        busy.clear()
        World.build(control("quiet", {name: 1}), seed)
        (node,) = busy
        kinds |= {r.kind for r in node.replicas}
    assert {"database", "cache", "web_server"} <= kinds, kinds


def test_live_config_edits_reach_tuned_settings_of_every_service_and_stay_in_their_envelopes() -> None:
    """Red-team finding: when noise edited only four keys during an incident (log level, shared buffers,
    two headroom limits), any other change after the onset was the fault (the "revert everything after
    the onset except the noise keys" agent beat the runbook). Live edits now reach tuned settings of every
    service, in both directions where the envelope follows the load, and never leave the envelope."""
    from srezero.faults.envelopes import within

    seen: set[tuple[str, str]] = set()
    lowered = 0
    for seed in range(24):
        w = World.build(control("quiet", {"benign_config_change": 8}), seed)
        w.advance(RUN_S)
        start = (w.history_cols - 1) * 30.0  # the first live tick: earlier edits are history
        for c in w.changes:
            if c.at <= start or c.kind != "config":
                continue
            key, edit = c.detail.split(": ", 1)
            old, new = edit.split(" (", 1)[0].split(" -> ")
            seen.add((c.service, key.split(".")[0]))
            assert within(w, c.service, key, w.services[c.service].config[key]) is not False, (seed, c)
            if old.lstrip("-").replace(".", "", 1).isdigit() and new.replace(".", "", 1).isdigit():
                lowered += float(new) < float(old)
        assert worst_slo(w, control("quiet")) == {}, seed
    assert {s for s, _ in seen} >= {"web_server", "load_balancer", "cache", "database", "message_queue", "worker"}, seen
    assert len(seen) >= 15 and ("web_server", "feature_flag") in seen, seen
    assert lowered >= 3  # not a rule that a live edit only ever raises a limit


@pytest.mark.parametrize("task", ["inc-025", "inc-020", "inc-023", "inc-001", "inc-031"])
def test_live_config_edits_neither_hide_nor_worsen_a_faults_symptoms(task: str) -> None:
    """A review found tuned live edits that changed what a fault does: a raised cache TTL halved a missing
    index's edge errors, a raised web timeout under a lossy NIC more than doubled them, a raised CPU limit
    eased a thermally throttled node. With many live edits added, the edge reads as without them."""
    spec = srezero.get_task(task)
    for seed in range(4):
        worlds = []
        for extra in ({}, {"benign_config_change": 8}):
            w = World.build(spec.model_copy(update={"noise": NoiseSpec(profile="quiet", extra=extra)}), seed)
            w.advance(1500.0)
            worlds.append(w)
        plain, edited = worlds
        assert any(c.noise and c.at > (edited.history_cols - 1) * 30.0 for c in edited.changes), (task, seed)
        c0 = plain.history_cols
        for metric, tol in (("error_rate", 0.01), ("latency_p99_ms", 0.1)):  # a harmless raise may speed things a little
            a = plain.buf[plain.row_of[("load_balancer", metric)], c0 : plain.col + 1]
            b = edited.buf[edited.row_of[("load_balancer", metric)], c0 : edited.col + 1]
            assert np.allclose(a, b, rtol=tol, atol=tol), (task, seed, metric, float(abs(a - b).max()))


def test_live_noise_sets_in_gradually_after_the_start() -> None:
    """History has no restarts, so live restarts that set in at full rate would bunch right after the
    first live tick and date it (and with it the onset): their rate rises over the first minutes
    instead. With a uniform delay over the same ten minutes a tenth of them land in the first one."""
    delays = []
    for seed in range(40):
        w = World.build(control("noisy"), seed)
        start = w.now
        w.advance(900.0)
        delays += [e.at - start for e in w.events if e.reason == "Unhealthy" and e.at >= start]
    assert len(delays) >= 60
    assert np.mean(np.array(delays) < 60.0) < 0.04
    assert np.mean(np.array(delays) < 400.0) > 0.5  # most still land within the usual time to the page
    assert max(delays) > 500.0
