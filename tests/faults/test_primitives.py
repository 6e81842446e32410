"""Every registered fault primitive, on a fresh world, through its declared metadata.

For each primitive (the registry is loaded, so primitives added later are covered too):

1. after injection its paging alert fires on its own, an SLO is breached (or, for a silent
   fault, none is and the declared signals still appear), and every declared signal is surfaced;
2. the oracle's fix heals the world within the verification window (success, marks >= 95,
   evidence coverage 1.0) for seeds 0-2;
3. unless the cause dies with the process, a plain restart of the target's service (and the
   database when it is involved) leaves the fault active;
4. every write sequence just outside the safe envelope fails to mitigate.
"""

from __future__ import annotations

import pytest

from srezero.faults.base import CATEGORIES, LAYERS, load_all
from srezero.telemetry.alerts import DEFAULT_RULES
from tests.faults.harness import ONSET_S, play, play_oracle, restart_actions, slo_breach, spec_for, start

PRIMITIVES = sorted(load_all())
RULES = {r.name for r in DEFAULT_RULES}


@pytest.mark.parametrize("name", PRIMITIVES)
def test_metadata_is_complete(name: str) -> None:
    m = load_all()[name].meta
    assert m.layer in LAYERS and m.category in CATEGORIES and m.category != "none"
    assert m.targets and m.description and m.wrong_fix_effects
    assert m.signals and m.remedies and m.example and m.alert in RULES
    for p in m.params:
        assert p.choices or p.type in (str, bool, object) or (p.lo is not None and p.hi is not None), (name, p.name)
    spec_for(load_all()[name])  # example target and params validate against the declaration


@pytest.mark.parametrize("name", PRIMITIVES)
def test_injection_pages_breaches_and_shows_its_signals(name: str) -> None:
    cls = load_all()[name]
    env = start(cls, 0)
    w = env.world
    fault = w.faults[0]
    assert fault.injected
    assert w.t_page < (w.history_cols - 1) * 30.0 + spec_for(cls).budget.max_onset_s - 30.0, \
        f"{name}: the paging alert {cls.meta.alert} never fired on its own"
    breached = slo_breach(env)
    if cls.meta.silent:
        assert not breached, f"{name} is declared silent but breached {breached}"
    else:
        assert breached, f"{name}: no SLO breached after injection"
    for action in fault.oracle_reads(w):
        env.step(action)
    assert env.evidence.coverage == 1.0, env.evidence.report()["missed"]


@pytest.mark.parametrize("name", PRIMITIVES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_declared_remedy_heals(name: str, seed: int) -> None:
    r = play_oracle(load_all()[name], seed)
    assert r["success"], (name, seed, r["mitigation"]["reasons"], r["diagnosis"]["checklist"])
    assert r["marks"] >= 95, (name, seed, r["marks_terms"])
    assert r["evidence_coverage"] == 1.0, r["evidence"]["missed"]


@pytest.mark.parametrize("name", [n for n in PRIMITIVES if not load_all()[n].meta.restart_heals])
def test_plain_restart_does_not_heal(name: str) -> None:
    env = start(load_all()[name], 0)
    r = play(env, restart_actions(env))
    assert not r["mitigated"]
    assert not all(r["mitigation"]["neutralised"].values()), f"{name}: a restart removed the cause"


@pytest.mark.parametrize("name", PRIMITIVES)
def test_values_outside_the_envelope_do_not_heal(name: str) -> None:
    cls = load_all()[name]
    probe = start(cls, 0)
    sequences = probe.world.faults[0].envelope_violations(probe.world)
    for i, seq in enumerate(sequences):
        env = start(cls, 0)
        r = play(env, seq)
        assert not r["mitigated"], (name, i, seq)


def test_harness_covers_every_layer_of_the_issue() -> None:
    layers = {load_all()[n].meta.layer for n in PRIMITIVES}
    assert {"application", "database", "cache", "queue", "load_balancer"} <= layers
    assert len(PRIMITIVES) >= 30
    assert ONSET_S > 0
