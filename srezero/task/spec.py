"""TaskSpec: a task is data. One TOML file per incident, validated by these pydantic models.

See docs/writing-tasks.md for the file format with a worked example. Field docs here are the
reference; ``srezero task schema`` exports them as JSON Schema. Validation happens here, without
building a world, so a broken file is reported with its field and problem before anything runs.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    field_validator,
    model_validator,
)

from srezero.errors import did_you_mean, toml_literal

Difficulty = Literal["easy", "medium", "hard"]
Split = Literal["dev", "test", "private", "generated"]

#: Task ids: curated ids are file names; generated variants are ``gen:`` plus an opaque code.
ID_PATTERN = r"^(?:gen:[0-9a-f]{20}|[a-z0-9][a-z0-9_-]{1,63})$"
#: Services a target selector can name, and how many replicas each has at least (any seed).
SERVICES = ("load_balancer", "web_server", "cache", "database", "message_queue", "worker")
MIN_REPLICAS = {"load_balancer": 1, "web_server": 3, "cache": 1, "database": 2, "message_queue": 1, "worker": 2}
MAX_REPLICAS = {**MIN_REPLICAS, "web_server": 8, "worker": 8}
#: Where a primitive's layer puts the root cause (application-level layers use the target's service).
LAYER_ROOT = {"database": "database", "cache": "cache", "queue": "message_queue", "load_balancer": "load_balancer",
              "kernel": "kernel", "disk": "disk", "hardware": "hardware"}
#: Distractors that put a plausible suspect in the change history; a task tagged ``misleading`` needs one.
RED_HERRINGS = ("benign_config_change", "benign_deploy")
#: Alert fields only a custom rule (one with ``metric``) reads; a built-in rule has its own.
CUSTOM_RULE_FIELDS = ("entity", "op", "threshold", "for_s", "severity", "summary")
_SELECTOR = re.compile(r"^(?:(?P<fn>node|disk|root_disk)\((?P<inner>[^)]*)\)|(?P<svc>[a-z_]+)"
                       r"(?:\.(?P<role>[a-z_]+)|\[(?P<idx>[0-9]+|\*)\])?)$")


#: The [topology] field that fixes each service's replica count, where one does.
SIZE_FIELDS = {"web_server": "web_replicas", "worker": "worker_replicas"}


def _indices(n: int) -> str:
    return "index 0" if n == 1 else f"indices 0-{n - 1}"


def _index_problem(selector: str, svc: str, idx: str, n: int, bound: Literal["min", "max"],
                   fixed: Collection[str]) -> str:
    """Why ``svc[idx]`` (idx >= n) can miss. ``bound`` says what ``n`` is: the most replicas any
    topology has ("max"), or the fewest this task's topology may have ("min")."""
    head = f"target {selector!r}: index {idx}"
    if MIN_REPLICAS[svc] == MAX_REPLICAS[svc]:
        roles = "; use database.primary or database.replica" if svc == "database" else ""
        return f"{head} is out of range: {svc} always has {n} replica(s) ({_indices(n)}){roles}"
    if bound == "max":
        return (f"{head} is out of range: {svc} has at most {n} replicas ({_indices(n)}) in any topology; "
                "use [*] for a seed-chosen one")
    if svc in fixed:
        return (f"{head} is out of range: [topology] {SIZE_FIELDS[svc]} = {n} gives {svc} {n} replicas "
                f"({_indices(n)}); use [*] for a seed-chosen one, or raise {SIZE_FIELDS[svc]}")
    return (f"{head} does not exist on every seed: the seed may give {svc} as few as {n} replicas "
            f"({_indices(n)}); use [*] for a seed-chosen one, or fix the size with [topology] {SIZE_FIELDS[svc]}")


def selector_problem(selector: str, min_replicas: dict[str, int] | None = None, *,
                     bound: Literal["min", "max"] = "min", fixed: Collection[str] = ()) -> str | None:
    """Why a target selector can never resolve (None if it is fine). Mirrors ``faults.base.resolve_target``.

    ``min_replicas`` are replica counts per service: with ``bound="min"`` (default :data:`MIN_REPLICAS`)
    the fewest a seed may give, an index must be below it on every seed; with ``bound="max"``
    (:data:`MAX_REPLICAS`) the most any topology has. ``fixed`` names services whose count the task's
    [topology] sets, for the message."""
    counts = min_replicas or (MAX_REPLICAS if bound == "max" else MIN_REPLICAS)
    if "|" in selector:
        from srezero.faults.base import alternatives, target_kind_of

        options = alternatives(selector)
        for o in options:
            problem = selector_problem(o, min_replicas, bound=bound, fixed=fixed)
            if problem:
                return problem
        kinds = {target_kind_of(o) for o in options}
        if len(kinds) > 1:
            return (f"target {selector!r}: alternatives must name one kind of entity (all nodes, all disks, all "
                    f"replicas or all services), not {', '.join(sorted(kinds))}")
        return None
    m = _SELECTOR.match(selector.strip())
    if not m:
        return (f"bad target selector {selector!r}; use a service (web_server), a replica (web_server[*], "
                "web_server[0], database.primary), node(<replica>), node(*), disk(<replica>) or root_disk(<replica>)")
    if m.group("fn"):
        inner = m.group("inner").strip()
        if inner == "*":
            return None
        if not _SELECTOR.match(inner) or inner.startswith(("node(", "disk(", "root_disk(")):
            return f"bad target selector {selector!r}: {m.group('fn')}() takes a replica selector or *"
        im = _SELECTOR.match(inner)
        if not (im.group("role") or im.group("idx")):
            return (f"bad target selector {selector!r}: {m.group('fn')}() needs a replica such as "
                    f"{inner}[*] or database.primary, not a whole service")
        return selector_problem(inner, counts, bound=bound, fixed=fixed)
    svc = m.group("svc")
    if svc not in SERVICES:
        return (f"unknown service {svc!r} in target {selector!r}{did_you_mean(svc, SERVICES)} "
                f"(services: {', '.join(SERVICES)})")
    role, idx = m.group("role"), m.group("idx")
    if role is not None and (svc != "database" or role not in ("primary", "replica")):
        return f"bad target selector {selector!r}: only database.primary and database.replica have roles"
    if idx is not None and idx != "*" and int(idx) >= counts[svc]:
        return _index_problem(selector, svc, idx, counts[svc], bound, fixed)
    return None


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)  # TOML has nan and inf


class TopologySpec(_Model):
    """How big the simulated system is; unset values are chosen by the seed."""

    nodes: StrictInt | None = Field(None, ge=3, le=8, description="number of nodes (3-8; default: the seed picks 4-5)")
    web_replicas: StrictInt | None = Field(None, ge=2, le=8, description="web_server replicas (2-8; default 3-4)")
    worker_replicas: StrictInt | None = Field(None, ge=1, le=8, description="worker replicas (1-8; default 2-3)")

    def min_replicas(self) -> dict[str, int]:
        out = dict(MIN_REPLICAS)
        if self.web_replicas is not None:
            out["web_server"] = self.web_replicas
        if self.worker_replicas is not None:
            out["worker"] = self.worker_replicas
        return out

    def fixed(self) -> tuple[str, ...]:
        """Services whose replica count this topology sets (the rest are the seed's choice)."""
        return tuple(svc for svc, name in SIZE_FIELDS.items() if getattr(self, name) is not None)


class TrafficSpec(_Model):
    scale: StrictFloat = Field(1.0, gt=0.2, le=2.0, description="multiplier on the seeded base request rate")


class FaultSpec(_Model):
    """One injected cause."""

    primitive: str = Field(description="fault primitive name (see `srezero faults`)")
    target: str = Field(description="target selector, e.g. web_server, web_server[*], disk(database.primary); "
                        "alternatives of one kind separated by | (one chosen per seed)")
    params: dict[str, Any] = Field(default_factory=dict, description="primitive parameters")
    at: StrictFloat = Field(0.0, ge=0.0, le=3600.0, description="seconds after the end of history when it starts")
    visible: StrictBool = Field(True, description="False for a silent concurrent fault (no SLO breach of its own)")

    @model_validator(mode="after")
    def _check_primitive(self) -> FaultSpec:
        from srezero.faults.base import REGISTRY, load_all, target_kind_of, target_services_of

        load_all()
        cls = REGISTRY.get(self.primitive)
        if cls is None:  # a suggestion, not the whole catalogue (50-odd names): `srezero faults` has it
            raise ValueError(f"@primitive: unknown fault primitive {self.primitive!r}"
                             f"{did_you_mean(self.primitive, REGISTRY)} (`srezero faults` lists all {len(REGISTRY)})")
        problems: list[str] = []
        problem = selector_problem(self.target, bound="max")  # the task's own topology: TaskSpec
        if problem:
            problems.append(f"@target: {problem}")
        else:
            kind = target_kind_of(self.target)
            accepted = cls.meta.targets
            for service in target_services_of(self.target) or (None,):
                if not any(t == kind or t == f"{kind}:{service}" for t in accepted):
                    problems.append(f"@target: target {self.target!r} ({kind}{f' of {service}' if service else ''}) "
                                    f"is not compatible with {self.primitive}; it accepts {', '.join(accepted)}")
                    break
        declared = {p.name: p for p in cls.meta.params}
        for name, value in self.params.items():
            p = declared.get(name)
            if p is None:
                problems.append(f"@params.{name}: {self.primitive} has no parameter {name!r}"
                                f"{did_you_mean(name, declared)} (parameters: {', '.join(declared) or 'none'})")
            elif problem := p.type_problem(value):
                problems.append(f"@params.{name}: {problem}; got {toml_literal(value)}")
            elif problem := p.value_problem(value):
                problems.append(f"@params.{name}: {problem}")
        if problems:  # all of them at once; the loader splits them into one line per field
            raise ValueError("\n".join(problems))
        return self

    @property
    def meta(self) -> Any:
        """The primitive's FaultMeta (layer, category, description...)."""
        from srezero.faults.base import REGISTRY, load_all

        load_all()
        return REGISTRY[self.primitive].meta

    @property
    def roots(self) -> tuple[str, ...]:
        """Where the cause lives, from the primitive's layer first (LAYER_ROOT): a database, cache, queue
        or load_balancer layer gives that component and a kernel, disk or hardware layer the layer itself,
        whatever the target (``cpu_throttling`` on web_server: kernel); an application or failure_mode
        layer gives the service the target selector names, one per alternative when the seed chooses
        between services (``web_server | worker``: both, since either may be the one)."""
        from srezero.faults.base import target_services_of

        layer = self.meta.layer
        if layer in LAYER_ROOT:
            return (LAYER_ROOT[layer],)
        return target_services_of(self.target) or (layer,)


class NoiseSpec(_Model):
    profile: Literal["quiet", "default", "noisy"] = Field("default", description="ambient noise level")
    extra: dict[str, StrictInt] = Field(default_factory=dict, description="extra noise items by name, with counts")

    @field_validator("extra")
    @classmethod
    def _known(cls, v: dict[str, int]) -> dict[str, int]:
        _check_noise_names(v, "noise primitive")
        return v


def _check_noise_names(items: dict[str, int], what: str) -> None:
    """Every bad item at once, each at its own field (``distractors.benign_deploys``) like a fault's params."""
    from srezero.faults.noise import NOISE

    problems = []
    for name, n in items.items():
        if name not in NOISE:
            problems.append(f"@{name}: unknown {what} {name!r}{did_you_mean(name, NOISE)} "
                            f"(known: {', '.join(sorted(NOISE))})")
        elif not 0 <= n <= 10:
            problems.append(f"@{name}: count for {name!r} must be 0-10, got {n}")
    if problems:
        raise ValueError("\n".join(problems))


class BudgetSpec(_Model):
    steps: StrictInt = Field(40, ge=5, le=500, description="maximum agent steps")
    time_s: StrictFloat = Field(1800.0, ge=300.0, le=14400.0, description="maximum simulated seconds after the page")
    max_onset_s: StrictFloat = Field(900.0, ge=60.0, le=3600.0, description="longest wait for the page, from the end of the healthy history (as faults' at counts)")


def budget_spent(budget: BudgetSpec | Any, steps: int, elapsed_s: float) -> str | None:
    """Which of ``budget``'s limits (``steps``, ``time_s``) ``steps`` and ``elapsed_s`` (simulated seconds
    after the page) use up, as a result's ``end`` names it: ``"step_budget"`` or ``"time_budget"`` (steps
    first when both run out); None while both last."""
    if steps >= budget.steps:
        return "step_budget"
    return "time_budget" if elapsed_s >= budget.time_s else None


def _summary_problems(summary: str) -> list[str]:
    """What is wrong with a custom alert's summary, which is formatted with the metric's value when the
    alert fires (an error there would crash the episode at the page)."""
    import string

    literal = "write {{ and }} for a literal brace"
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(summary) if f is not None]
    except ValueError as exc:
        return [f"@summary: {exc} ({literal})"]
    unknown = [f for f in fields if f.split(".")[0].split("[")[0] != "value"]
    if unknown:
        return [f"@summary: unknown placeholder {{{unknown[0]}}}: only {{value}} is filled in ({literal})"]
    try:
        summary.format(value=1.0)
    except (ValueError, TypeError, AttributeError) as exc:
        return [f"@summary: {exc} (the value is a number: e.g. {{value:.1%}} or {{value:.0f}})"]
    return []


class AlertSpec(_Model):
    """The paging alert. Without ``metric`` it names one of the built-in rules (HighErrorRate...), which
    bring their own entity, condition, severity and summary; the other fields are for a custom rule
    and are an error on a built-in one. A custom rule needs ``metric`` and ``threshold``."""

    name: str = Field("HighErrorRate", description="built-in rule name, or the name of the custom rule below")
    entity: str = Field("load_balancer", description="custom rule: service whose metric is watched")
    metric: str | None = Field(None, description="custom rule: metric name (see `get_topology`); unset = built-in")
    op: Literal[">", "<", ">=", "<="] = Field(">", description="custom rule: comparison with the threshold")
    threshold: StrictFloat = Field(0.0, description="custom rule (required there): the value that trips it")
    for_s: StrictFloat = Field(60.0, ge=0.0, description="custom rule: how long the condition must hold")
    severity: Literal["critical", "warning"] = Field("critical", description="custom rule: severity shown on the page")
    summary: str = Field("", description="custom rule: summary text, may use {value} (default: '<metric> <value>')")

    @model_validator(mode="after")
    def _check_rule(self) -> AlertSpec:
        from srezero.sim import metrics
        from srezero.telemetry.alerts import DEFAULT_RULES

        if self.metric is None:
            names = [r.name for r in DEFAULT_RULES]
            if self.name not in names:
                raise ValueError(f"@name: unknown alert {self.name!r}{did_you_mean(self.name, names)}; "
                                 f"built-in rules: {', '.join(names)} "
                                 "(or give metric, op, threshold for a custom rule)")
            ignored = [f for f in CUSTOM_RULE_FIELDS if f in self.model_fields_set]
            if ignored:
                raise ValueError("\n".join(
                    f"@{f}: only a custom rule (one with metric) uses {f}; the built-in rule {self.name} has its "
                    "own (see docs/writing-tasks.md), so remove it or add metric for a custom rule" for f in ignored))
            return self
        problems = []
        if self.entity not in SERVICES:
            problems.append(f"@entity: custom alert entity {self.entity!r} must be a service: {', '.join(SERVICES)}")
        else:
            known = metrics.metric_names(self.entity)
            if self.metric not in known:
                problems.append(f"@metric: {self.entity} has no metric {self.metric!r}; metrics: {', '.join(known)}")
        if "threshold" not in self.model_fields_set:
            problems.append("@threshold: a custom rule needs a threshold (the value of the metric that trips it)")
        if self.summary:
            problems += _summary_problems(self.summary)
        if problems:
            raise ValueError("\n".join(problems))
        return self

    @property
    def paged_entity(self) -> str:
        """What the page points at: the custom rule's entity, or the built-in rule's (``*node``: a node,
        ``*service``: whichever service trips it)."""
        if self.metric is not None:
            return self.entity
        from srezero.telemetry.alerts import DEFAULT_RULES

        return next(r.entity for r in DEFAULT_RULES if r.name == self.name)


class SLOSpec(_Model):
    """What healthy means during the verification window."""

    error_rate: StrictFloat = Field(0.02, gt=0.0, le=0.5, description="max edge error ratio")
    latency_p99_ms: StrictFloat = Field(800.0, gt=0.0, description="max edge p99 latency")
    queue_age_s: StrictFloat = Field(120.0, gt=0.0, description="max age of the oldest queued message")


class GroundTruthSpec(_Model):
    """Explicit ground truth. Normally derived from the faults; set ``no_fault`` for a control task."""

    no_fault: StrictBool = Field(False, description="true for a control task: nothing is broken, the page is noise")
    notes: str = Field("", description="notes for instructors (spoiler)")


class TaskSpec(_Model):
    id: str = Field(pattern=ID_PATTERN, description="task id; must equal the file name without .toml")
    title: str = Field(min_length=3, description="human title (spoiler: never shown to the agent)")
    description: str = Field(min_length=10, description="what happened (spoiler: never shown to the agent)")
    difficulty: Difficulty
    rationale: str = Field("", description="why this difficulty: which signals, tools and reasoning it needs")
    tags: tuple[str, ...] = Field((), description="free-form lowercase tags (metastable, concurrent, misleading...)")
    split: Split = Field("dev", description="dev (published), test (published, held for scoring), private, generated")
    topology: TopologySpec = TopologySpec()
    traffic: TrafficSpec = TrafficSpec()
    faults: tuple[FaultSpec, ...] = ()
    noise: NoiseSpec = NoiseSpec()
    distractors: dict[str, StrictInt] = Field(default_factory=dict, description="noise items placed as red herrings")
    budget: BudgetSpec = BudgetSpec()
    alert: AlertSpec = AlertSpec()
    slo: SLOSpec = SLOSpec()
    ground_truth: GroundTruthSpec = GroundTruthSpec()
    verify_window_s: StrictFloat = Field(600.0, ge=120.0, le=3600.0, description="simulated seconds of verification")
    hints: tuple[str, ...] = Field((), description="graded hints for classroom play, mildest first")

    @field_validator("tags")
    @classmethod
    def _tags(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        bad = [tag for tag in v if not re.fullmatch(r"[a-z0-9][a-z0-9_-]*", tag)]
        if bad:
            fixed = [re.sub(r"[^a-z0-9_-]+", "-", tag.lower()).strip("-_") or "tag" for tag in bad]
            raise ValueError(f"{'tag' if len(bad) == 1 else 'tags'} {', '.join(map(repr, bad))} must be lowercase "
                             f"letters, digits, '-' or '_' (e.g. {', '.join(map(repr, fixed))})")
        return v

    @field_validator("distractors")
    @classmethod
    def _distractors(cls, v: dict[str, int]) -> dict[str, int]:
        _check_noise_names(v, "distractor")
        return v

    @field_validator("hints")
    @classmethod
    def _hints(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if any(not h.strip() for h in v):
            raise ValueError("hints must be non-empty sentences")
        return v

    @model_validator(mode="after")
    def _faults_or_control(self) -> TaskSpec:
        if not self.faults and not self.ground_truth.no_fault:
            raise ValueError("@faults: a task needs at least one fault, or ground_truth.no_fault = true for a control task")
        if self.faults and self.ground_truth.no_fault:
            raise ValueError("@ground_truth.no_fault: no_fault = true but the task injects faults")
        if self.faults and not any(f.visible for f in self.faults):
            raise ValueError("@faults: every fault has visible = false; at least one fault must cause the page")
        counts = self.topology.min_replicas()
        for i, f in enumerate(self.faults):
            if f.at >= self.budget.max_onset_s:  # both count from the end of the healthy history
                raise ValueError(f"@faults[{i}].at: the fault starts {f.at:g}s after the history ends, but the page is "
                                 f"forced {self.budget.max_onset_s:g}s after it (budget.max_onset_s), before the fault "
                                 "exists; give it an earlier at or raise budget.max_onset_s")
            problem = selector_problem(f.target, counts, fixed=self.topology.fixed())
            if problem:
                raise ValueError(f"@faults[{i}].target: {problem}")
        if "misleading" in self.tags and not any(self.distractors.get(n, 0) for n in RED_HERRINGS):
            raise ValueError("@tags: a task tagged misleading needs a red herring in [distractors]: "
                             f"{' or '.join(f'{n} = 1' for n in RED_HERRINGS)} (docs/writing-tasks.md)")
        return self

    @property
    def layers(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(f.meta.layer for f in self.faults)) or ("none",)

    @property
    def roots(self) -> tuple[str, ...]:
        """Where the root causes live (see :attr:`FaultSpec.roots`); ("none",) for a control task."""
        return tuple(dict.fromkeys(r for f in self.faults for r in f.roots)) or ("none",)

    @property
    def services(self) -> tuple[str, ...]:
        """Services the faults target (the inner service of node()/disk() selectors)."""
        from srezero.faults.base import target_services_of

        out = [s for f in self.faults for s in target_services_of(f.target)]
        return tuple(dict.fromkeys(s for s in out if s and s != "*")) or ("-",)

    def info(self, path: str = "") -> TaskInfo:
        return TaskInfo(id=self.id, title=self.title, difficulty=self.difficulty, tags=self.tags, split=self.split,
                        layers=self.layers, roots=self.roots, path=path)


class TaskInfo(BaseModel):
    """What ``srezero.list_tasks()`` returns: enough to pick a task (for people; agents never see it).
    ``roots``: where the root causes sit (a service, kernel, disk or hardware; none for a false alarm);
    ``path``: the task file."""

    id: str
    title: str
    difficulty: Difficulty
    tags: tuple[str, ...]
    split: str
    layers: tuple[str, ...]
    roots: tuple[str, ...] = ()
    path: str = ""
