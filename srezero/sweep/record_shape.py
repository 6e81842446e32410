"""The shape of an episode record and of a run's manifest as their readers use them, checked on reading.

srezero writes records itself, atomically, so a record of the wrong shape is always something outside
srezero at work: a hand edit, another tool, a merge. The summary, ``report``, ``compare`` and
``debrief`` read the same fields, and a ``null`` where a number belongs gave each its own traceback.
Checking the shape here turns all of them into one error that names the file and the field.

Only what a reader reads is checked, and every model allows extra keys: a record may carry fields a
later srezero adds (the schema number guards real format changes). floats are strict (``"1"`` is not a
number, ``true`` is not a count) and finite.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

_STRICT = ConfigDict(extra="allow", strict=True, allow_inf_nan=False)

class _Shape(BaseModel):  # a strict float takes an int, never a bool or text
    model_config = _STRICT


class _Diagnosis(_Shape):
    score: float
    claims: list[dict[str, Any]] = []
    checklist: dict[str, float] = {}


class _Mitigation(_Shape):
    reasons: list[str] = []
    neutralised: dict[str, bool] = {}
    slo_worst: dict[str, float] = {}


class _Evidence(_Shape):
    found: list[str] = []
    missed: list[str] = []


class _Write(_Shape):
    step: int = Field(ge=0)
    addresses_root_cause: bool = False


class _Result(_Shape):
    marks: float
    success: bool
    diagnosis: _Diagnosis
    mitigated: bool
    evidence_coverage: float
    invalid_actions: int = Field(ge=0)
    wrong_fixes: int = Field(ge=0)
    steps: int = Field(ge=0)
    ttd_s: float | None = None
    ttm_s: float | None = None
    sim_seconds: float | None = None
    destructive_actions: int = Field(0, ge=0)
    distractor_actions: int = Field(0, ge=0)
    premature_resolution: bool = False
    truncated: bool = False
    resolved: bool = False
    no_fault: bool = False
    summary: str | None = None
    writes: list[_Write] | None = None
    ground_truth: list[dict[str, Any]] | None = None
    mitigation: _Mitigation | None = None
    evidence: _Evidence | None = None
    marks_terms: dict[str, float] | None = None


class _Usage(_Shape):
    prompt_tokens: int = Field(0, ge=0)
    completion_tokens: int = Field(0, ge=0)
    provider_errors: int = Field(0, ge=0)
    cost_usd: float = Field(0.0, ge=0)


class _Step(_Shape):
    step: int = Field(ge=0)
    tool: str | None = None
    ok: bool = False
    text: str | None = None
    error: str | None = None
    sim_time_s: float | None = None
    reward: float | None = None
    args: dict[str, Any] | None = None


class _Record(_Shape):
    agent: str
    task_id: str
    seed: int = Field(ge=0)
    status: Literal["ok", "provider_error", "agent_error", "env_error"]
    privileged: bool = False
    error: str | None = None
    result: _Result | None = None
    usage: _Usage | None = None
    trajectory: list[_Step] | None = None


class _LooseRecord(_Record):
    """A record file read on its own (``srezero run --out``, a play record): older ones lack these two."""

    agent: str | None = None
    status: Literal["ok", "provider_error", "agent_error", "env_error"] | None = None


def shape_problem(data: dict[str, Any], loose: bool = False) -> str | None:
    """The first field of ``data`` that is not what the readers expect, as ``field.path: problem``; or None."""
    return _first_problem(_LooseRecord if loose else _Record, data)


def _first_problem(model: type[BaseModel], data: dict[str, Any]) -> str | None:
    try:
        model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(part) for part in err["loc"]) or "(top level)"
        msg = re.sub(r" or instance of _\w+", "", err["msg"])  # the models are private: name only the JSON type
        return f"{where}: {msg[0].lower()}{msg[1:]}"
    return None


class _TaskMeta(_Shape):
    hash: str
    difficulty: str | None = None
    split: str | None = None
    tags: list[str] = []


class _AgentMeta(_Shape):
    name: str
    options: dict[str, Any] = {}
    settings: dict[str, Any] = {}
    code: str | None = None
    transports: list[dict[str, Any]] | None = None


class _Build(_Shape):
    srezero_version: str | None = None
    git_revision: str | None = None
    engine: str | None = None


class _Manifest(_Shape):
    schema_: int | None = Field(None, alias="schema")  # ``schema`` would shadow a BaseModel attribute
    tasks: dict[str, _TaskMeta] = {}
    agents: dict[str, _AgentMeta] = {}
    seeds: list[int] = []
    builds: list[_Build] | None = None
    engine: str | None = None
    tools: Any = None  # only compared: an older run may hold the tool list itself
    max_steps: int | None = None


def manifest_problem(data: dict[str, Any]) -> str | None:
    """The first field of a run's manifest that is not what the sweep and the report read, or None."""
    return _first_problem(_Manifest, data)
