"""What a fault author gets for free from the base class (docs/extending.md, "Add a fault primitive")."""

from __future__ import annotations

import pytest

import srezero
from srezero.errors import DeclarationError
from srezero.faults.base import REGISTRY, Param, Remedy, RootCause, Signal, load_all
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


# ---------------------------------------------------------------- register() refuses a bad declaration
# A typo in a FaultMeta used to pass the CLI and task validation (a misspelt layer silently changed
# the task's root and complexity); register() now names the primitive, its class and the field.


def _declare(**changes: object) -> type:
    """A fresh copy of FdExhaustion with its meta changed (never left in the registry)."""
    import dataclasses

    meta = dataclasses.replace(FdExhaustion.meta, name="probe_fd_exhaustion", **changes)
    return type("ProbeFd", (FdExhaustion,), {"meta": meta, "__module__": "tests.probe"})


@pytest.mark.parametrize(("changes", "message"), [
    ({"layer": "disks"}, "layer: unknown layer 'disks'; one of application, database, cache, queue, "
                         "load_balancer, kernel, disk, hardware, failure_mode (did you mean 'disk'?)"),
    ({"category": "resource_exaustion"}, "category: unknown category 'resource_exaustion'; one of "),
    ({"params": (Param("ramp_min", float, 5.0, description="minutes to peak"),)},
     "params.ramp_min: a float parameter needs a range (lo= and hi=) or choices="),
    ({"example": "web_server"}, "example: 'web_server' is a service target, which the primitive does not accept; "
                                "targets: node"),
    ({"example": "node(database.primary"}, "example: 'node(database.primary' is not a target selector"),
    ({"targets": ("nodes",)}, "targets: 'nodes' is not a target kind"),
    ({"example_params": (("leak", 1.0),)}, "example_params.leak: no such parameter"),
    # names borrowed from the alert rules and the tool registry (a typo crashed `srezero generate`)
    ({"alert": "DbLatencyHigh"}, "alert: unknown alert 'DbLatencyHigh'; one of HighErrorRate, "),
    ({"signals": (Signal("node_diagnostic", on="node"),)},
     "signals[0].tool: 'node_diagnostic' is not a read tool; one of get_alerts, "),
    ({"signals": (Signal("node_diagnostics", on="nodes"),)}, "signals[0].on: 'nodes'; one of target, "),
    ({"signals": (Signal("node_diagnostics", on="node", args=(("chek", "limits"),)),)},
     "signals[0].args: node_diagnostics has no argument 'chek'; one of node, check (did you mean 'check'?)"),
    ({"remedies": (Remedy("set_sysctls", "raise it"),)},
     "remedies[0].tool: 'set_sysctls' is not a write tool; one of restart, "),
    ({"remedies": (Remedy("get_config", "read it"),)}, "remedies[0].tool: 'get_config' is not a write tool"),
])
def test_register_refuses_a_bad_declaration(changes: dict[str, object], message: str) -> None:
    from srezero.faults.base import register

    cls = _declare(**changes)
    with pytest.raises(DeclarationError) as exc:
        register(cls)
    text = str(exc.value)
    assert text.startswith("fault primitive 'probe_fd_exhaustion' (tests.probe.ProbeFd): "), text
    assert message in text, text
    assert "probe_fd_exhaustion" not in REGISTRY


def test_register_lists_every_problem_at_once() -> None:
    from srezero.faults.base import register

    with pytest.raises(DeclarationError, match=r"layer: .*; params\.x: .*; example: "):
        register(_declare(layer="kernal", params=(Param("x", int, 1),), example="web_server"))
    assert "probe_fd_exhaustion" not in REGISTRY


def test_every_bundled_primitive_declaration_is_clean() -> None:
    from srezero.faults.base import meta_problems

    assert {name: meta_problems(cls.meta) for name, cls in load_all().items() if meta_problems(cls.meta)} == {}


def test_a_good_declaration_registers() -> None:
    from srezero.faults.base import register

    cls = _declare()
    try:
        assert register(cls) is cls and REGISTRY["probe_fd_exhaustion"] is cls
    finally:
        REGISTRY.pop("probe_fd_exhaustion", None)
