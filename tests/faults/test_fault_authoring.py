"""What a fault author gets for free from the base class (docs/extending.md, "Add a fault primitive")."""

from __future__ import annotations

import pytest

import srezero
from srezero.faults.base import REGISTRY, RootCause, load_all
from srezero.faults.kernel import FdExhaustion


class _Sketch(FdExhaustion):
    """As the docs' sketch writes it: a RootCause without ``fault`` and ``layer``."""

    def root_cause(self, w):
        return RootCause(self.node.name, "resource_exhaustion", "a shipper leaks descriptors", ("file-max",))


def test_root_cause_fault_and_layer_come_from_meta(monkeypatch: pytest.MonkeyPatch) -> None:
    load_all()
    monkeypatch.setitem(REGISTRY, "fd_exhaustion", _Sketch)
    env = srezero.make("inc-013", 0)
    env.reset()
    rc = env.ground_truth()[0]
    assert (rc["fault"], rc["layer"]) == ("fd_exhaustion", "kernel")


def test_declared_values_are_kept() -> None:
    env = srezero.make("inc-013", 0)
    env.reset()
    f = env.faults[0]
    rc = f.root_cause(env.world)
    rc.fault, rc.layer = "custom", "disk"
    f.root_cause = lambda w: rc
    assert (f.truth(env.world).fault, f.truth(env.world).layer) == ("custom", "disk")


def test_faults_json_has_the_working_example() -> None:
    import orjson
    from click.testing import CliRunner

    from srezero.cli import cli

    rows = {r["name"]: r for r in orjson.loads(CliRunner().invoke(cli, ["faults", "--json"]).output)}
    assert set(rows) == set(load_all())
    for name, cls in load_all().items():
        m = cls.meta
        assert (rows[name]["example"], rows[name]["example_params"], rows[name]["alert"], rows[name]["restart_heals"]) \
            == (m.example, dict(m.example_params), m.alert, m.restart_heals)
