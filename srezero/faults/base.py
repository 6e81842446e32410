"""The fault-primitive mechanism: declarative metadata, a registry, target selectors, ground truth.

A fault primitive is a *cause*: ``inject`` changes the model (a config value, a disk's sectors, a
deploy's code), ``evolve`` runs its dynamics as a SimPy generator, and ``neutralised`` says from the
world's true state whether the cause is gone. Symptoms are never written by a fault; they emerge
from the tick model.

Adding a primitive is one class in one module plus the ``@register`` decorator::

    @register
    class MissingIndex(Fault):
        meta = FaultMeta(name="missing_index", layer="database", category="code_defect", ...)

        def inject(self, w): w.state.db_query_cost = self.params["cost"]
        def neutralised(self, w): return w.state.db_query_cost <= 1.5
"""

from __future__ import annotations

import math
import re
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from srezero.errors import DeclarationError, did_you_mean, toml_literal

# re-exported: fault modules build detail tokens with these, next to the rest of this module's API
from srezero.faults.detail_words import direction_tokens as direction_tokens
from srezero.faults.detail_words import value_tokens as value_tokens
from srezero.sim.rng import stable_int

if TYPE_CHECKING:
    from srezero.sim.world import World
    from srezero.task.spec import FaultSpec

#: The published fault taxonomy. A diagnosis names one of these per root cause.
CATEGORIES: dict[str, str] = {
    "misconfiguration": "a configuration value is wrong (timeouts, pools, limits, hosts, paths, policies)",
    "resource_exhaustion": "a finite resource ran out or is held (memory, connections, file descriptors, disk "
                           "space, ports, queue room, row locks an open transaction holds)",
    "code_defect": "a bug in deployed code (errors, leaks, crashes, slow queries from code)",
    "dependency_failure": "a dependency is down or unreachable and this component suffers for it",
    "hardware": "a physical component is failing (disk sectors, ECC memory, thermal throttling, a dead node)",
    "network": "packets are lost, links flap, or connection tracking drops traffic",
    "authentication": "credentials, certificates or clocks make authentication fail",
    "capacity": "not enough replicas, consumers or throughput for the load",
    "none": "no fault to fix: the alert was noise, or a transient that passed by itself (a blip, a link flap "
            "that settled) and nothing needs fixing",
}
LAYERS = ("application", "database", "cache", "queue", "load_balancer", "kernel", "disk", "hardware", "failure_mode")


#: How a parameter's type is asked for in an error, as one writes it in TOML.
TYPE_WORDS: dict[type, str] = {bool: "true or false", int: "an integer (a whole number, without quotes)",
                               float: "a number (write a number, without quotes)", str: "text (a quoted string)"}


def has_type(value: Any, typ: type) -> bool:
    """Whether ``value`` (as TOML gives it) is of ``typ``, one of :data:`TYPE_WORDS` (any other type takes
    anything). An integer stands in for a float; nothing else is converted (``"8"`` or ``true`` for a
    number would be read some way the author did not mean)."""
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    return {bool: isinstance(value, bool), int: is_number and isinstance(value, int), float: is_number,
            str: isinstance(value, str)}.get(typ, True)


@dataclass(frozen=True)
class Param:
    name: str
    type: type
    default: Any
    lo: float | None = None
    hi: float | None = None
    description: str = ""
    choices: tuple[Any, ...] = ()
    #: How far each world moves the task's value, as a share of it (0.3: from 0.7x to 1.3x, kept in
    #: [lo, hi]). For parameters the world's workload sets, such as the share of requests that reach a
    #: bug: it depends on the traffic mix, and a value read off the page must not name the task.
    spread: float = 0.0
    #: For a parameter with ``choices``: when a task leaves it unset, each world picks one of them (a
    #: stable hash, like ``spread``), so what one world shows (which index is gone) names no other.
    per_world: bool = False

    def pick_in_world(self, *key: object) -> Any:
        """The choice a world keyed by ``key`` makes for a :attr:`per_world` parameter a task left unset."""
        return self.choices[stable_int(*key, "choice", self.name) % len(self.choices)]

    def in_world(self, value: Any, *key: object) -> Any:
        """``value`` as the world keyed by ``key`` sees it: moved by a seeded factor within ``spread``.
        The factor is a stable hash, not a draw, so it shifts no random stream."""
        if not self.spread or not isinstance(value, float | int) or isinstance(value, bool):
            return value
        u = stable_int(*key, "param", self.name) % 10_001 / 10_000.0
        v = value * (1.0 + self.spread * (2.0 * u - 1.0))
        if self.lo is not None:
            v = max(v, self.lo)
        if self.hi is not None:
            v = min(v, self.hi)
        return round(v) if self.type is int else round(v, 4)

    def type_problem(self, value: Any) -> str | None:
        """What is wrong with the type of ``value`` (as TOML gives it) for this parameter, or None."""
        return None if has_type(value, self.type) else f"must be {TYPE_WORDS[self.type]}"

    def value_problem(self, value: Any) -> str | None:
        """What is wrong with ``value`` for this parameter: not one of its choices, or a number outside
        its range. None when it fits, and for a value of another type (callers word that themselves)."""
        if self.choices:
            return None if value in self.choices else f"must be one of {list(self.choices)}, got {value!r}"
        if isinstance(value, float) and not math.isfinite(value):  # nan passes every range check: say so
            return f"must be a finite number, not {toml_literal(value)}"
        if isinstance(value, int | float) and not isinstance(value, bool) and (
                (self.lo is not None and value < self.lo) or (self.hi is not None and value > self.hi)):
            return f"{value} is outside its range [{self.lo}, {self.hi}]"
        return None


@dataclass(frozen=True)
class Signal:
    """Evidence: calling ``tool`` on the fault's target (with ``args``) surfaces text matching ``pattern``."""

    tool: str
    on: str = "target"  # "target" | "service" | "node" | "disk" | "any" | a service kind
    args: tuple[tuple[str, Any], ...] = ()
    pattern: str = ""
    description: str = ""
    #: other reads that show the same fact (``inspect_queue``'s rates for a rate metric): any of them
    #: surfaces this signal; coverage still counts it once
    alt: tuple[Signal, ...] = ()


@dataclass(frozen=True)
class Remedy:
    """A write that cures the fault, with its safe envelope described in words."""

    tool: str
    description: str


@dataclass(frozen=True)
class FaultMeta:
    name: str
    layer: str
    category: str
    targets: tuple[str, ...]  # target kinds this primitive accepts: "service:web_server", "disk", "node", ...
    description: str
    params: tuple[Param, ...] = ()
    signals: tuple[Signal, ...] = ()
    remedies: tuple[Remedy, ...] = ()
    wrong_fix_effects: str = ""
    silent: bool = False  # produces a signal but breaches no SLO on its own
    # --- used by the per-primitive test harness and the variant generator
    example: str = ""  # a representative target selector, e.g. "disk(database.primary)"
    example_params: tuple[tuple[str, Any], ...] = ()
    alert: str = "HighErrorRate"  # the built-in alert this fault normally pages with
    restart_heals: bool = False  # True only if the cause dies with the process (then a restart is a cure)


@dataclass
class RootCause:
    """A ground-truth root cause, resolved to concrete names for one seed."""

    entity: str
    category: str
    detail: str  # human description of the concrete detail
    detail_tokens: tuple[str, ...]  # any of these in a submitted detail counts as "detail right"
    aliases: tuple[str, ...] = ()  # coarser names accepted for the entity
    fault: str = ""  # the primitive's name; filled from meta when left empty (Fault.truth)
    layer: str = ""  # the primitive's layer; filled from meta when left empty
    visible: bool = True  # False for a silent concurrent fault
    #: Other categories that describe this cause as well: the taxonomy overlaps where deployed code leaks
    #: a finite resource (a code defect and a resource exhaustion both); claiming one of them is claiming
    #: ``category``, and claiming both is one category, not a hedge.
    also: tuple[str, ...] = ()

    def categories(self) -> frozenset[str]:
        """Every category a claim on this cause may name."""
        return frozenset((self.category, *self.also))


@dataclass
class Target:
    kind: str  # service | replica | node | disk
    name: str
    obj: Any


REGISTRY: dict[str, type[Fault]] = {}


class ParamError(ValueError):
    """A parameter value the world cannot use (found only once the topology exists); ``param`` names it."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param


_TARGET_KINDS = ("service", "replica", "node", "disk")


def register(cls: type[Fault]) -> type[Fault]:
    """Add a primitive to the registry; refuse a declaration with problems, naming the primitive, its
    class and each field (:func:`~srezero.faults.declaration.meta_problems`)."""
    name = cls.meta.name
    where = f"{cls.__module__}.{cls.__qualname__}"
    if name in REGISTRY and REGISTRY[name] is not cls:
        first = f"{REGISTRY[name].__module__}.{REGISTRY[name].__qualname__}"
        why = ("the same class was imported twice (a reloaded module, or one run as a script)" if first == where
               else "meta.name is the id tasks use: rename one")
        raise DeclarationError(f"fault primitive {name!r} registered twice: first by {first}, again by {where}; {why}")
    # imported here: the checks read the tool registry, which imports the simulator
    from srezero.faults.declaration import meta_problems

    problems = meta_problems(cls.meta)
    if problems:
        raise DeclarationError(f"fault primitive {name!r} ({where}): " + "; ".join(problems))
    REGISTRY[name] = cls
    return cls


def load_all() -> dict[str, type[Fault]]:
    """Import every primitive module so the registry is complete."""
    from srezero.faults import catalog  # noqa: F401

    return REGISTRY


_SELECTOR = re.compile(r"^(?:(?P<fn>node|disk|root_disk)\((?P<inner>[^)]*)\)|(?P<plain>[a-z_]+(?:\.[a-z_]+|\[[0-9*]+\])?))$")


def resolve_target(w: World, selector: str, salt: int) -> Target:
    """Resolve a task's target selector to a concrete entity for this world's seed.

    Grammar: ``web_server`` (a service), ``web_server[*]`` (a seed-chosen replica), ``web_server[1]``,
    ``database.primary`` / ``database.replica``, ``node(<replica selector>)``, ``node(*)`` (a
    seed-chosen node), ``disk(<replica selector>)`` (that node's data disk), ``root_disk(...)``, and
    ``A | B`` (alternatives of one kind, one chosen per seed: where the fault strikes varies).
    """
    if "|" in selector:
        options = alternatives(selector)
        return resolve_target(w, options[int(w.rng_world.integers(0, len(options)))], salt)
    m = _SELECTOR.match(selector.strip())
    if not m:
        raise ValueError(f"bad target selector {selector!r}")
    if m.group("fn"):
        fn, inner = m.group("fn"), m.group("inner").strip()
        if inner == "*":
            nodes = w.topo.nodes
            node = nodes[int(w.rng_world.integers(0, len(nodes)))]
        else:
            rep = resolve_target(w, inner, salt)
            if rep.kind != "replica":
                raise ValueError(f"{selector!r}: {fn}() needs a replica selector such as database.primary")
            node = rep.obj.node
        if fn == "node":
            return Target("node", node.name, node)
        disk = node.data_disk if fn == "disk" else node.disks[0]
        return Target("disk", disk.name, disk)
    plain = m.group("plain")
    if "." in plain:
        svc, role = plain.split(".", 1)
        if svc != "database" or role not in ("primary", "replica"):
            raise ValueError(f"bad target selector {selector!r}: only database.primary and database.replica have roles")
        rep = w.topo.db_primary() if role == "primary" else w.topo.db_standby()
        return Target("replica", rep.name, rep)
    if "[" in plain:
        svc, idx = plain[:-1].split("[")
        if svc not in w.services:
            raise ValueError(f"bad target selector {selector!r}: unknown service {svc!r}")
        reps = w.services[svc].replicas
        i = int(w.rng_world.integers(0, len(reps))) if idx == "*" else int(idx)
        if i >= len(reps):
            raise ValueError(f"bad target selector {selector!r}: {svc} has {len(reps)} replicas")
        return Target("replica", reps[i].name, reps[i])
    if plain not in w.services:
        raise ValueError(f"bad target selector {selector!r}: unknown service {plain!r}")
    return Target("service", plain, w.services[plain])


def alternatives(selector: str) -> list[str]:
    """The alternatives of a selector (``A | B``; one chosen per seed), or the selector alone."""
    return [o.strip() for o in selector.split("|")]


def target_kind_of(selector: str) -> str:
    """The kind of entity a selector names, without building a world (for validation); alternatives
    (``A | B``) are of one kind, so the first one's."""
    s = alternatives(selector)[0]
    if s.startswith("node("):
        return "node"
    if s.startswith(("disk(", "root_disk(")):
        return "disk"
    if "[" in s or s.startswith("database."):
        return "replica"
    return "service"


def target_services_of(selector: str) -> tuple[str, ...]:
    """The service named inside each alternative of a selector (``node(database.primary) | node(cache[0])``:
    database, cache)."""
    return tuple(dict.fromkeys(s for o in alternatives(selector) if (s := target_service_of(o))))


def target_service_of(selector: str) -> str | None:
    """The service a selector names inside (the first alternative's)."""
    s = alternatives(selector)[0]
    inner = s[s.find("(") + 1 : -1] if "(" in s else s
    head = re.split(r"[.\[]", inner, maxsplit=1)[0]
    return head or None


class Fault:
    """Base class of fault primitives. Subclasses set ``meta`` and implement ``inject``/``neutralised``."""

    meta: ClassVar[FaultMeta]

    def __init__(self, w: World, spec: FaultSpec, index: int) -> None:
        self.spec = spec
        self.index = index
        self.target = resolve_target(w, spec.target, index)
        self.params = self.resolve_params(spec.params)
        for p in self.meta.params:
            if p.per_world and p.name not in spec.params:
                self.params[p.name] = p.pick_in_world(w.spec.id, w.seed, index)
            self.params[p.name] = p.in_world(self.params[p.name], w.spec.id, w.seed, index)
        self.onset = spec.at
        self.injected = False
        self.injected_at: float | None = None
        self.prepare(w)

    @classmethod
    def resolve_params(cls, given: dict[str, Any]) -> dict[str, Any]:
        params = {p.name: p.default for p in cls.meta.params}
        params.update(given)
        return params

    # -- lifecycle ---------------------------------------------------------------------------------
    def prepare(self, w: World) -> None:
        """Called at build time, before history is recorded (latent preconditions go here)."""

    def process(self, w: World) -> Generator[Any, Any, None]:
        start = w.env.now
        if self.onset > 0:
            yield w.env.timeout(self.onset)
        self.inject(w)
        self.injected = True
        self.injected_at = w.env.now
        del start
        yield from self.evolve(w)

    def inject(self, w: World) -> None:
        raise NotImplementedError

    def evolve(self, w: World) -> Generator[Any, Any, None]:
        return
        yield  # pragma: no cover - makes this a generator

    def neutralised(self, w: World) -> bool:
        raise NotImplementedError

    def why_active(self, w: World) -> str:
        """A sentence a person can act on, used when mitigation fails."""
        return f"{self.meta.description} on {self.target.name} is still in effect"

    # -- ground truth and oracle knowledge -------------------------------------------------------
    def root_cause(self, w: World) -> RootCause:
        """The ground truth for this seed: ``RootCause(entity, category, detail, detail_tokens)``.
        ``fault`` and ``layer`` may be left out: :meth:`truth` fills them from ``meta``."""
        raise NotImplementedError

    def truth(self, w: World) -> RootCause:
        """:meth:`root_cause` with ``fault`` and ``layer`` filled from ``meta`` when it left them empty
        (the detail check reads the primitive's metadata through ``fault``; the debrief shows the layer)."""
        rc = self.root_cause(w)
        rc.fault = rc.fault or self.meta.name
        rc.layer = rc.layer or self.meta.layer
        return rc

    def oracle_reads(self, w: World) -> list[dict[str, Any]]:
        """Read actions that surface this fault's evidence (used only by the oracle agent), as
        ``[{"tool": name, "args": {...}}]``. The default reads each resolved signal once, in order:
        the entity goes into the tool's declared ``target_arg`` and ``search_logs`` searches for
        the signal's pattern (:func:`read_action`)."""
        return [read_action(*sig) for sig in self.signals(w)]

    def oracle_fix(self, w: World) -> list[dict[str, Any]]:
        """Write actions that cure this fault with minimal collateral (used only by the oracle)."""
        return []

    def envelope_violations(self, w: World) -> list[list[dict[str, Any]]]:
        """Write sequences that *look* like the cure but fall outside its safe envelope (too small a
        value, too large a value). Tests assert that none of them heals the world."""
        return []

    def subs(self, w: World) -> dict[str, str]:
        """Placeholder values for signal patterns and arguments, e.g. ``{"key": "db_timeout_ms"}``."""
        return {}

    def signals(self, w: World) -> list[tuple[str, str, dict[str, Any], str]]:
        """Resolved evidence signals: (tool, entity, args, pattern)."""
        subs = self.subs(w)
        return [resolve_signal(w, self.target, sig, subs) for sig in self.meta.signals]

    def signal_alternatives(self, w: World, resolved: list[tuple[str, str, dict[str, Any], str]] | None = None
                            ) -> list[tuple[tuple[str, str, dict[str, Any], str], ...]]:
        """(a declared signal as :meth:`signals` resolves it, another read that shows the same fact), for
        every ``Signal.alt``; the evidence scorer credits the signal for either. ``resolved``: what
        :meth:`signals` returned, when the caller has it already."""
        if not any(sig.alt for sig in self.meta.signals):
            return []
        subs = self.subs(w)
        mine = self.signals(w) if resolved is None else resolved
        # a primitive that resolves its signals itself (a service's log read on a disk's victim) lists them
        # in declaration order: the alternative then belongs to its own resolution of the signal
        same = len(mine) == len(self.meta.signals) and all(m[0] == s.tool for m, s in zip(mine, self.meta.signals, strict=True))
        return [(mine[i] if same else resolve_signal(w, self.target, sig, subs), resolve_signal(w, self.target, alt, subs))
                for i, sig in enumerate(self.meta.signals) for alt in sig.alt]


def read_action(tool: str, entity: str, args: dict[str, Any], pattern: str, limit: int | None = 50) -> dict[str, Any]:
    """The read call that surfaces one resolved signal (what an engineer who knew would run).

    The entity goes into the argument the tool declares with ``@tool(..., target_arg=...)`` (nowhere
    for ``*``, any entity: the tool's default then covers every entity); ``search_logs`` searches for
    the signal's pattern (with ``limit`` lines, None for the tool's default)."""
    from srezero.tools.registry import target_arg

    a = dict(args)
    key = target_arg(tool)
    if key and entity != "*":
        a[key] = entity
    if tool == "search_logs":
        a.setdefault("pattern", pattern)
        if limit is not None:
            a.setdefault("limit", limit)
    return {"tool": tool, "args": a}


def resolve_signal(w: World, target: Target, sig: Signal, subs: dict[str, str]) -> tuple[str, str, dict[str, Any], str]:
    """``sig`` for this world and target: (tool, entity, args, pattern), ``<name>`` placeholders filled from ``subs``."""
    ent = _signal_entity(w, target, sig.on)
    pattern = re.sub(r"<(\w+)>", lambda m: subs.get(m.group(1), m.group(0)), sig.pattern)
    args = {k: (subs.get(v[1:-1], v) if isinstance(v, str) and v.startswith("<") else v) for k, v in sig.args}
    return (sig.tool, ent, args, pattern)


def _signal_entity(w: World, target: Target, on: str) -> str:
    if on == "target":
        return target.name
    if on == "any":
        return "*"
    if on == "service":
        if target.kind == "service":
            return target.name
        if target.kind == "replica":
            return target.obj.service.kind
        return "*"
    if on == "node":
        if target.kind == "node":
            return target.name
        if target.kind == "disk":
            return target.obj.node.name
        if target.kind == "replica":
            return target.obj.node.name
        return "*"
    if on == "disk":
        return target.name if target.kind == "disk" else "*"
    return on  # a literal service kind


@dataclass
class FaultInfo:
    """A JSON-friendly view of a primitive's metadata (for docs and ``srezero faults``)."""

    name: str
    layer: str
    category: str
    targets: list[str]
    description: str
    params: list[dict[str, Any]] = field(default_factory=list)
    signals: list[dict[str, Any]] = field(default_factory=list)
    remedies: list[dict[str, str]] = field(default_factory=list)
    wrong_fix_effects: str = ""
    silent: bool = False
    example: str = ""  # a target selector that works, with example_params and the alert it pages with
    example_params: dict[str, Any] = field(default_factory=dict)
    alert: str = ""
    restart_heals: bool = False


def info(cls: type[Fault]) -> FaultInfo:
    m = cls.meta
    return FaultInfo(
        name=m.name, layer=m.layer, category=m.category, targets=list(m.targets), description=m.description,
        params=[{"name": p.name, "type": p.type.__name__, "default": p.default, "min": p.lo, "max": p.hi,
                 "choices": list(p.choices), "spread": p.spread, "per_world": p.per_world, "description": p.description} for p in m.params],
        signals=[{"tool": s.tool, "on": s.on, "args": dict(s.args), "pattern": s.pattern, "description": s.description}
                 for s in m.signals],
        remedies=[{"tool": r.tool, "description": r.description} for r in m.remedies],
        wrong_fix_effects=m.wrong_fix_effects, silent=m.silent, example=m.example,
        example_params=dict(m.example_params), alert=m.alert, restart_heals=m.restart_heals,
    )


def instantiate(spec: FaultSpec, w: World, index: int) -> Fault:
    load_all()
    cls = REGISTRY.get(spec.primitive)
    if cls is None:
        raise ValueError(f"unknown fault primitive {spec.primitive!r}{did_you_mean(spec.primitive, REGISTRY)} "
                         f"(`srezero faults` lists all {len(REGISTRY)})")
    return cls(w, spec, index)
