"""TaskSpec: a task is data. One TOML file per incident, validated by these pydantic models.

See docs/writing-tasks.md for the file format with a worked example. Field docs here are the
reference; ``srezero task schema`` exports them as JSON Schema.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Difficulty = Literal["easy", "medium", "hard"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TopologySpec(_Model):
    """How big the simulated system is; unset values are chosen by the seed."""

    nodes: int | None = Field(None, ge=3, le=8, description="number of nodes (3-8)")
    web_replicas: int | None = Field(None, ge=2, le=8, description="web_server replicas (2-8)")
    worker_replicas: int | None = Field(None, ge=1, le=8, description="worker replicas (1-8)")


class TrafficSpec(_Model):
    scale: float = Field(1.0, gt=0.2, le=2.0, description="multiplier on the seeded base request rate")


class FaultSpec(_Model):
    """One injected cause."""

    primitive: str = Field(description="fault primitive name (see `srezero faults`)")
    target: str = Field(description="target selector, e.g. web_server, web_server[*], disk(database.primary)")
    params: dict[str, Any] = Field(default_factory=dict, description="primitive parameters")
    at: float = Field(0.0, ge=0.0, le=3600.0, description="seconds after the end of history when it starts")
    visible: bool = Field(True, description="False for a silent concurrent fault (no SLO breach of its own)")

    @model_validator(mode="after")
    def _check_primitive(self) -> FaultSpec:
        from srezero.faults.base import REGISTRY, load_all, target_kind_of, target_service_of

        load_all()
        cls = REGISTRY.get(self.primitive)
        if cls is None:
            known = ", ".join(sorted(REGISTRY))
            raise ValueError(f"unknown fault primitive {self.primitive!r}; known primitives: {known}")
        kind = target_kind_of(self.target)
        service = target_service_of(self.target)
        accepted = cls.meta.targets
        ok = any(t == kind or t == f"{kind}:{service}" or (t.startswith(f"{kind}:") and t.split(":", 1)[1] == service)
                 for t in accepted)
        if not ok:
            raise ValueError(f"target {self.target!r} ({kind}) is not compatible with {self.primitive}; "
                             f"it accepts {', '.join(accepted)}")
        declared = {p.name: p for p in cls.meta.params}
        for name, value in self.params.items():
            p = declared.get(name)
            if p is None:
                raise ValueError(f"{self.primitive} has no parameter {name!r}; parameters: {', '.join(declared) or 'none'}")
            if p.choices and value not in p.choices:
                raise ValueError(f"parameter {name!r} must be one of {list(p.choices)}, got {value!r}")
            if p.lo is not None or p.hi is not None:
                if not isinstance(value, int | float) or isinstance(value, bool):
                    raise ValueError(f"parameter {name!r} must be a number, got {value!r}")
                if (p.lo is not None and value < p.lo) or (p.hi is not None and value > p.hi):
                    raise ValueError(f"parameter {name!r}={value} is outside its range [{p.lo}, {p.hi}]")
        return self


class NoiseSpec(_Model):
    profile: Literal["quiet", "default", "noisy"] = "default"
    extra: dict[str, int] = Field(default_factory=dict, description="extra noise items by name, with counts")

    @field_validator("extra")
    @classmethod
    def _known(cls, v: dict[str, int]) -> dict[str, int]:
        from srezero.faults.noise import NOISE

        for name, n in v.items():
            if name not in NOISE:
                raise ValueError(f"unknown noise primitive {name!r}; known: {', '.join(sorted(NOISE))}")
            if not 0 <= n <= 10:
                raise ValueError(f"noise count for {name!r} must be 0-10, got {n}")
        return v


class BudgetSpec(_Model):
    steps: int = Field(40, ge=5, le=500, description="maximum agent steps")
    time_s: float = Field(1800.0, ge=300.0, le=14400.0, description="maximum simulated seconds after the page")
    max_onset_s: float = Field(900.0, ge=60.0, le=3600.0, description="longest wait from start to the page")


class AlertSpec(_Model):
    """The paging alert. Without ``metric`` it names one of the built-in rules (HighErrorRate...)."""

    name: str = "HighErrorRate"
    entity: str = "load_balancer"
    metric: str | None = None
    op: Literal[">", "<", ">=", "<="] = ">"
    threshold: float = 0.0
    for_s: float = Field(60.0, ge=0.0)
    severity: Literal["critical", "warning"] = "critical"
    summary: str = ""


class SLOSpec(_Model):
    """What healthy means during the verification window."""

    error_rate: float = Field(0.02, gt=0.0, le=0.5, description="max edge error ratio")
    latency_p99_ms: float = Field(800.0, gt=0.0, description="max edge p99 latency")
    queue_age_s: float = Field(120.0, gt=0.0, description="max age of the oldest queued message")


class GroundTruthSpec(_Model):
    """Explicit ground truth. Normally derived from the faults; set ``no_fault`` for a control task."""

    no_fault: bool = False
    notes: str = ""


class TaskSpec(_Model):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{1,63}$")
    title: str = Field(min_length=3, description="human title (spoiler: never shown to the agent)")
    description: str = Field(min_length=10, description="what happened (spoiler: never shown to the agent)")
    difficulty: Difficulty
    tags: tuple[str, ...] = ()
    split: Literal["dev", "test", "private"] = "dev"
    topology: TopologySpec = TopologySpec()
    traffic: TrafficSpec = TrafficSpec()
    faults: tuple[FaultSpec, ...] = ()
    noise: NoiseSpec = NoiseSpec()
    distractors: dict[str, int] = Field(default_factory=dict, description="noise items placed as red herrings")
    budget: BudgetSpec = BudgetSpec()
    alert: AlertSpec = AlertSpec()
    slo: SLOSpec = SLOSpec()
    ground_truth: GroundTruthSpec = GroundTruthSpec()
    verify_window_s: float = Field(600.0, ge=120.0, le=3600.0)
    hints: tuple[str, ...] = Field((), description="graded hints for classroom play, mildest first")

    @model_validator(mode="after")
    def _faults_or_control(self) -> TaskSpec:
        if not self.faults and not self.ground_truth.no_fault:
            raise ValueError("a task needs at least one fault, or ground_truth.no_fault = true for a control task")
        if self.faults and self.ground_truth.no_fault:
            raise ValueError("ground_truth.no_fault = true but the task injects faults")
        from srezero.faults.noise import NOISE

        for name in self.distractors:
            if name not in NOISE:
                raise ValueError(f"unknown distractor {name!r}; known: {', '.join(sorted(NOISE))}")
        return self

    @property
    def layers(self) -> tuple[str, ...]:
        from srezero.faults.base import REGISTRY, load_all

        load_all()
        return tuple(dict.fromkeys(REGISTRY[f.primitive].meta.layer for f in self.faults)) or ("none",)


class TaskInfo(BaseModel):
    """What ``srezero.list_tasks()`` returns: enough to pick a task, nothing that spoils it."""

    id: str
    title: str
    difficulty: Difficulty
    tags: tuple[str, ...]
    split: str
    layers: tuple[str, ...]
    path: str = ""
