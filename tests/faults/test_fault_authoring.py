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
    ({"params": (Param("process", str, "nodexporter", per_world=True),)},
     "params.process: per_world=True picks one of the choices in each world; give choices= or drop per_world"),
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
    # argument values, checked with the tool's own validator (they failed only when the read first ran)
    ({"signals": (Signal("search_logs", "web_server", args=(("limit", "ten"),)),)},
     "signals[0].args.limit: must be a whole number (without quotes), not the text 'ten'"),
    ({"signals": (Signal("search_logs", "web_server", args=(("limit", 500),)),)},
     "signals[0].args.limit: Input should be less than or equal to 200"),
    ({"signals": (Signal("node_diagnostics", on="node", args=(("check", "dmsg"),)),)},
     "signals[0].args.check: Input should be 'dmesg', 'disk', 'top' or 'limits', not 'dmsg' (did you mean 'dmesg'?)"),
    ({"signals": (Signal("node_diagnostics", on="node"),)},
     "signals[0].args: node_diagnostics needs check (without it the read of this signal is an invalid action)"),
    # a metric is free text to the schema; the tool checks it against the entity it reads
    ({"signals": (Signal("query_metrics", on="node", args=(("metric", "cpu_util"),)),)},
     "signals[0].args.metric: 'cpu_util' is not a metric of node or replica (where this signal reads); one of "
     "cpu_util_pct, "),
    ({"signals": (Signal("query_metrics", on="node", args=(("metric", "cpu_util"),)),)}, "(did you mean 'cpu_util_pct'?)"),
    ({"signals": (Signal("query_metrics", on="cache", args=(("metric", "queue_depth"),)),)},
     "signals[0].args.metric: 'queue_depth' is not a metric of cache or replica"),
    # a <placeholder> is filled at run time: only its type can be checked now
    ({"signals": (Signal("search_logs", "web_server", args=(("limit", "<lines>"),)),)},
     "signals[0].args.limit: '<lines>' is a placeholder, filled with text when the signal is resolved, but "
     "search_logs takes limit as integer, not text"),
    # a signal's alternatives (Signal.alt) are reads, checked alike
    ({"signals": (Signal("search_logs", "web_server", alt=(Signal("inspect_queue", "any", args=(("view", "queue"),)),)),)},
     "signals[0].alt[0].args.view: Input should be 'queues', 'messages' or 'consumers', not 'queue'"),
    ({"signals": (Signal("search_logs", "web_server", alt=(Signal("node_diagnostics", "node"),)),)},
     "signals[0].alt[0].args: node_diagnostics needs check"),
    ({"example_params": (("leak", 1.0),)}, "example_params.leak: no such parameter; parameters: leak_per_min, "
                                           "minutes_to_full, overshoot (did you mean 'leak_per_min'?)"),
    ({"remedies": (Remedy("set_sysctls", "raise it"),)},
     "remedies[0].tool: 'set_sysctls' is not a write tool; one of restart, "),
    ({"remedies": (Remedy("get_config", "read it"),)}, "remedies[0].tool: 'get_config' is not a write tool"),
])
def test_register_refuses_a_bad_declaration(changes: dict[str, object], message: str) -> None:
    from srezero.faults.base import register

    cls = _declare(**changes)
    try:
        with pytest.raises(DeclarationError) as exc:
            register(cls)
    finally:  # a declaration wrongly accepted must not leak into the other tests' registry
        leaked = REGISTRY.pop("probe_fd_exhaustion", None)
    text = str(exc.value)
    assert text.startswith("fault primitive 'probe_fd_exhaustion' (tests.probe.ProbeFd): "), text
    assert message in text, text
    assert leaked is None


def test_register_lists_every_problem_at_once() -> None:
    from srezero.faults.base import register

    with pytest.raises(DeclarationError, match=r"layer: .*; params\.x: .*; example: "):
        register(_declare(layer="kernal", params=(Param("x", int, 1),), example="web_server"))
    assert "probe_fd_exhaustion" not in REGISTRY


@pytest.mark.parametrize("signal", [
    Signal("query_metrics", on="node", args=(("metric", "<metric>"),)),  # resolved by Declared.subs at run time
    Signal("query_metrics", on="node", args=(("metric", "memory_mb"),)),  # a replica's metric: reading one counts
    Signal("query_metrics", on="node", args=(("metric", "disk_latency_ms"), ("window_s", 3600))),
    Signal("get_traces", on="service", args=(("errors_only", True), ("limit", 20))),
    Signal("search_logs", on="web_server", args=(("level", "error"),)),  # pattern comes from the signal
    Signal("query_metrics", on="any", args=(("metric", "hit_ratio"),)),  # "*": any entity's metrics
])
def test_register_accepts_good_signal_arguments(signal: Signal) -> None:
    from srezero.faults.declaration import meta_problems

    cls = _declare(signals=(signal,))
    assert meta_problems(cls.meta) == []


def test_a_name_registered_twice_names_both_classes() -> None:
    from srezero.faults.base import register

    load_all()
    other = type("OtherFd", (FdExhaustion,), {"__module__": "tests.probe"})  # inherits meta.name "fd_exhaustion"
    with pytest.raises(DeclarationError) as exc:
        register(other)
    assert str(exc.value) == ("fault primitive 'fd_exhaustion' registered twice: first by "
                              "srezero.faults.kernel.FdExhaustion, again by tests.probe.OtherFd; "
                              "meta.name is the id tasks use: rename one")
    assert REGISTRY["fd_exhaustion"] is FdExhaustion


def test_an_unknown_primitive_at_instantiation_gets_a_hint() -> None:
    from srezero.faults.base import instantiate
    from srezero.task.spec import FaultSpec

    spec = FaultSpec.model_construct(primitive="fd_exhaustio", target="node(*)", params={}, at=0.0, visible=True)
    with pytest.raises(ValueError, match=r"unknown fault primitive 'fd_exhaustio'; did you mean fd_exhaustion or "):
        instantiate(spec, None, 0)  # type: ignore[arg-type]  # refused before the world is used


def test_every_bundled_primitive_declaration_is_clean() -> None:
    from srezero.faults.declaration import meta_problems

    assert {name: meta_problems(cls.meta) for name, cls in load_all().items() if meta_problems(cls.meta)} == {}


def test_a_good_declaration_registers() -> None:
    from srezero.faults.base import register

    cls = _declare()
    try:
        assert register(cls) is cls and REGISTRY["probe_fd_exhaustion"] is cls
    finally:
        REGISTRY.pop("probe_fd_exhaustion", None)


def test_the_guides_helpers_exist_where_it_says() -> None:
    """Every helper in extending.md's "Helpers the templates use" table is in the module its row names."""
    import importlib
    import re
    from pathlib import Path

    guide = (Path(__file__).resolve().parents[2] / "docs" / "extending.md").read_text()
    table = guide[guide.index("### Helpers the templates use"):guide.index("### `FaultMeta`")]
    rows = [line.split("|")[1:3] for line in table.splitlines() if line.startswith("| `")]
    assert len(rows) >= 10, rows
    for names, where in rows:
        module = importlib.import_module("srezero." + where.strip().strip("`").removesuffix(".py").replace("/", "."))
        for name in re.findall(r"`([\w.]+)", names):
            obj = module
            for part in name.split("."):
                assert hasattr(obj, part), f"extending.md: {name} is not in {module.__name__}"
                obj = getattr(obj, part)


def test_every_module_that_registers_primitives_is_in_the_catalogue() -> None:
    """A new primitive module must be imported by faults/catalog.py, or its primitives do not exist. In a
    fresh interpreter (another test may have imported the module already), load_all must reach every
    module under srezero/faults that applies ``@register`` to a class."""
    import re
    import subprocess
    import sys
    from pathlib import Path

    package = Path(srezero.__file__).parent / "faults"
    registering = sorted(f"srezero.faults.{p.stem}" for p in package.glob("*.py")
                         if re.search(r"^@register\s*\nclass ", p.read_text(), re.M))
    probe = ("from srezero.faults.base import REGISTRY, load_all; load_all(); "
             "print(*sorted({c.__module__ for c in REGISTRY.values()}))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert len(registering) >= 10 and registering == loaded, "add the module to srezero/faults/catalog.py"
