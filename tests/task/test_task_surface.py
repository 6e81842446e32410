"""Seeds vary the surface of every curated task; the ground-truth class stays fixed (DESIGN principle 5)."""

from __future__ import annotations

import pytest

import srezero
from srezero.task.loader import load_specs

SPECS = [s for s, _ in load_specs()]


def _surface(env) -> dict:
    w = env.world
    return {
        "replicas": sorted(w.topo.replicas),
        "placement": sorted((r.name, r.node.name) for r in w.replica_list),
        "healthy": {k: dict(sorted(s.config.items())) for k, s in w.services.items()},
        "base_rps": round(w.state.base_rps, 6),
    }


def _truth_class(env) -> list[tuple]:
    w = env.world
    out = []
    for rc in env.ground_truth():
        kind = w.entity_kind(rc["entity"]) or ("config" if "." in rc["entity"] else "?")
        out.append((rc["fault"], rc["category"], rc["layer"], kind, rc["visible"]))
    return out


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_surface_varies_and_truth_class_does_not(spec) -> None:
    envs = []
    for seed in (0, 1):
        env = srezero.make(spec, seed)
        env.reset()
        envs.append(env)
    a, b = (_surface(e) for e in envs)
    for key in a:
        assert a[key] != b[key], (spec.id, key)
    assert _truth_class(envs[0]) == _truth_class(envs[1])
    assert len(_truth_class(envs[0])) == len(spec.faults)


def test_wildcard_targets_pick_different_entities() -> None:
    """Where a task allows any replica or node ([*], node(*)), the seed chooses which one is faulty."""
    wild = [s for s in SPECS if any("*" in f.target for f in s.faults)]
    assert len(wild) >= 5, [s.id for s in wild]
    for spec in wild:
        picked = set()
        for seed in range(5):
            env = srezero.make(spec, seed)
            env.reset()
            picked |= {f.target.name for f in env.world.faults if "*" in f.spec.target}
        assert len(picked) >= 2, (spec.id, picked)
