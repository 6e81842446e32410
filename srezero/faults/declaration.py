"""Checks of a fault primitive's declaration, run by ``@register`` when its module is imported.

Each problem is one ``field: problem`` line naming what to write instead, so a typo in a primitive
fails at import with its fix, not later in a task, the variant generator or the oracle's first read.
Besides the fields themselves, the names a declaration borrows from elsewhere are checked: the paging
alert, each signal's read tool with its arguments (names and values, through the tool's own
validator), and each remedy's write tool.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from srezero.errors import near_misses
from srezero.faults.base import (
    _SELECTOR,
    _TARGET_KINDS,
    CATEGORIES,
    LAYERS,
    target_kind_of,
    target_service_of,
)

if TYPE_CHECKING:
    from srezero.faults.base import FaultMeta
    from srezero.tools.registry import ToolSpec


def _did_you_mean(value: str, allowed: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` when ``value`` is a near miss of one of ``allowed``, else ``""``."""
    close = near_misses(value, allowed, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _one_of(value: str, allowed: tuple[str, ...] | list[str]) -> str:
    """``one of a, b, c`` plus a did-you-mean hint when ``value`` is a near miss."""
    return f"one of {', '.join(allowed)}{_did_you_mean(value, allowed)}"


def meta_problems(meta: FaultMeta) -> list[str]:
    """What is wrong with a primitive's declaration, one ``field: problem`` line each (empty when
    nothing is). ``register`` refuses a primitive with any, so a typo fails at import, not in a test."""
    from srezero.sim.components import SERVICE_KINDS

    problems: list[str] = []
    if meta.category not in CATEGORIES:
        problems.append(f"category: unknown category {meta.category!r}; {_one_of(meta.category, list(CATEGORIES))}")
    if meta.layer not in LAYERS:
        problems.append(f"layer: unknown layer {meta.layer!r}; {_one_of(meta.layer, LAYERS)} (the layer decides "
                        "the task's root, a complexity point and the misleading rule)")
    for kind in meta.targets:
        base, _, service = kind.partition(":")
        if base not in _TARGET_KINDS or (service and service not in SERVICE_KINDS):
            problems.append(f"targets: {kind!r} is not a target kind; use one of {', '.join(_TARGET_KINDS)}, "
                            f"optionally narrowed to a service ('service:web_server', 'replica:database')")
    declared = {p.name: p for p in meta.params}
    for p in meta.params:
        if not p.choices and p.type not in (str, bool, object) and (p.lo is None or p.hi is None):
            problems.append(f"params.{p.name}: a {p.type.__name__} parameter needs a range (lo= and hi=) or "
                            "choices=; task validation checks values against it")
        if p.per_world and not p.choices:
            problems.append(f"params.{p.name}: per_world=True picks one of the choices in each world; "
                            "give choices= or drop per_world")
    if meta.example:
        if not _SELECTOR.match(meta.example.strip()):
            problems.append(f"example: {meta.example!r} is not a target selector (e.g. web_server, "
                            "web_server[*], database.primary, node(database.primary), disk(database.primary))")
        else:
            kind, service = target_kind_of(meta.example), target_service_of(meta.example)
            if not any(t == kind or t == f"{kind}:{service}" for t in meta.targets):
                problems.append(f"example: {meta.example!r} is a {kind} target, which the primitive does not accept; "
                                f"targets: {', '.join(meta.targets) or 'none'}")
    problems += _reference_problems(meta)
    for pname, value in meta.example_params:
        p = declared.get(pname)
        if p is None:
            problems.append(f"example_params.{pname}: no such parameter; parameters: {', '.join(declared) or 'none'}"
                            f"{_did_you_mean(pname, declared)}")
        elif problem := p.value_problem(value):
            problems.append(f"example_params.{pname}: {problem}")
    return problems


_SIGNAL_ON = ("target", "service", "node", "disk", "any", "*")


def _reference_problems(meta: FaultMeta) -> list[str]:
    """Names a declaration borrows from elsewhere: the paging alert, each signal's read tool, where it
    looks and its arguments, each remedy's write tool. A typo here would otherwise surface only when a
    task, the variant generator or the oracle first used it."""
    from srezero.sim.components import SERVICE_KINDS
    from srezero.telemetry.alerts import DEFAULT_RULES
    from srezero.tools.registry import load_tools

    tools = load_tools()
    problems = []
    alerts = [r.name for r in DEFAULT_RULES]
    if meta.alert not in alerts:
        problems.append(f"alert: unknown alert {meta.alert!r}; {_one_of(meta.alert, alerts)}")
    reads = [n for n, t in tools.items() if t.kind == "read"]
    # a signal's alternatives (Signal.alt) are reads too, checked alike
    every = [(f"signals[{i}]", sig) for i, sig in enumerate(meta.signals)]
    every += [(f"signals[{i}].alt[{j}]", alt) for i, sig in enumerate(meta.signals) for j, alt in enumerate(sig.alt)]
    for where, sig in every:
        spec = tools.get(sig.tool)
        if spec is None or spec.kind != "read":
            problems.append(f"{where}.tool: {sig.tool!r} is not a read tool; {_one_of(sig.tool, reads)}")
        if sig.on not in _SIGNAL_ON and sig.on not in SERVICE_KINDS:
            problems.append(f"{where}.on: {sig.on!r}; {_one_of(sig.on, [*_SIGNAL_ON, *SERVICE_KINDS])}")
        if spec is None:
            continue
        for arg, value in sig.args:
            if arg not in spec.arg_names:
                problems.append(f"{where}.args: {sig.tool} has no argument {arg!r}; "
                                f"{_one_of(arg, list(spec.arg_names))}")
            else:
                problem = _arg_value_problem(spec, arg, value, meta, sig.on)
                if problem:
                    problems.append(f"{where}.args.{arg}: {problem}")
        # what the default read fills in itself: the entity (target_arg) and search_logs' pattern
        given = {a for a, _ in sig.args} | {spec.target_arg} | ({"pattern"} if sig.tool == "search_logs" else set())
        missing = [a for a in spec.schema.get("required", ()) if a not in given]
        if missing:
            problems.append(f"{where}.args: {sig.tool} needs {', '.join(missing)} (without it the read of "
                            "this signal is an invalid action)")
    writes = [n for n, t in tools.items() if t.kind == "write"]
    for i, rem in enumerate(meta.remedies):
        spec = tools.get(rem.tool)
        if spec is None or spec.kind != "write":
            problems.append(f"remedies[{i}].tool: {rem.tool!r} is not a write tool; {_one_of(rem.tool, writes)}")
    return problems


#: A signal argument that is a whole ``<name>`` is a placeholder :class:`~srezero.faults.common.Declared`
#: fills from ``subs(w)`` at run time, as it does in patterns.
_PLACEHOLDER = re.compile(r"<\w+>")


def _arg_types(spec: ToolSpec, arg: str) -> set[str]:
    """An argument's JSON types in the tool's schema (``anyOf`` for a union)."""
    prop = spec.schema.get("properties", {}).get(arg, {})
    return {t for t in [prop.get("type"), *(p.get("type") for p in prop.get("anyOf", ()))] if t}


def _filler(spec: ToolSpec, arg: str) -> Any:
    """A value the tool's validator accepts for a required argument (to check another one on its own):
    the first choice of a ``Literal``, else the least value of its type."""
    prop = spec.schema.get("properties", {}).get(arg, {})
    if prop.get("enum"):
        return prop["enum"][0]
    types = _arg_types(spec, arg)
    if "string" in types:
        return "x"
    if "boolean" in types:
        return False
    for key in ("minimum", "exclusiveMinimum"):
        if key in prop:
            low = prop[key] + (1 if key == "exclusiveMinimum" else 0)
            return int(low) if "integer" in types else float(low)
    return 1 if "integer" in types else 1.0


def _arg_value_problem(spec: ToolSpec, arg: str, value: Any, meta: FaultMeta, on: str) -> str | None:
    """What the tool would say about one signal argument's value, checked now rather than when the read
    first runs (an invalid action that costs every agent the signal's evidence).

    Checked through the tool's own validator (its types, ``Literal`` choices and ``Field`` ranges), one
    argument at a time, the tool's other required arguments filled with values it accepts. A
    ``<placeholder>`` is only resolved at run time, so only its type is checked: it becomes text. A
    ``query_metrics`` metric is checked against the metrics of the entity kinds the signal can read
    (its schema says only "text": the tool checks it against the entity when it runs)."""
    from srezero.sim.metrics import metric_names
    from srezero.tools.registry import ToolError

    if isinstance(value, str) and _PLACEHOLDER.fullmatch(value):
        if "string" in _arg_types(spec, arg):
            return None
        return (f"{value!r} is a placeholder, filled with text when the signal is resolved, but {spec.name} "
                f"takes {arg} as {' or '.join(sorted(_arg_types(spec, arg)))}, not text")
    probe = {a: _filler(spec, a) for a in spec.schema.get("required", ()) if a != arg}
    probe[arg] = value
    try:
        spec.validate(probe)
    except ToolError as exc:
        text = str(exc).removeprefix(f"invalid arguments for {spec.name}: ")
        return text.removeprefix(f"{arg}: ")
    if (spec.name, arg) == ("query_metrics", "metric"):
        kinds = _metric_kinds(meta, on)
        names = list(dict.fromkeys(m for k in kinds for m in metric_names(k)))
        if value not in names:
            where = "any entity" if kinds == _every_metric_kind() else " or ".join(kinds)
            return f"{value!r} is not a metric of {where} (where this signal reads); {_one_of(value, names)}"
    return None


def _every_metric_kind() -> tuple[str, ...]:
    from srezero.sim.components import SERVICE_KINDS

    return (*SERVICE_KINDS, "replica", "node")


def _metric_kinds(meta: FaultMeta, on: str) -> tuple[str, ...]:
    """The entity kinds (a service kind, ``replica`` or ``node``: what ``metric_names`` takes) whose
    metrics can surface a signal: the kinds its ``on`` resolves to for the primitive's targets (as
    :func:`_signal_entity` resolves it) and ``replica``, since a read of one of the entity's replicas
    counts as evidence too; every kind where that is left to code (``*``, a disk)."""
    from srezero.sim.components import SERVICE_KINDS

    every = _every_metric_kind()
    if on in SERVICE_KINDS or on == "node":
        return (on, "replica")
    kinds: list[str] = []
    for t in meta.targets:
        base, _, service = t.partition(":")
        services = (service,) if service else SERVICE_KINDS
        if on == "target" and base in ("replica", "node"):
            kinds.append(base)
        elif (on == "target" and base == "service") or (on == "service" and base in ("service", "replica")):
            kinds += services
        else:
            return every
    return tuple(dict.fromkeys([*kinds, "replica"])) if kinds else every
