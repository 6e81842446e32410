"""A per-primitive test harness: a synthetic one-fault task per primitive, and cheap ways to play it.

Every registered primitive declares a representative target (``meta.example``), parameters
(``meta.example_params``) and its paging alert (``meta.alert``). :func:`spec_for` turns that into a
quiet-noise :class:`TaskSpec`, so the same checks run over the whole catalogue, including primitives
added later, without a task file per primitive.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import srezero
from srezero.episode import Episode
from srezero.faults.base import Fault
from srezero.task.spec import AlertSpec, BudgetSpec, FaultSpec, NoiseSpec, TaskSpec

ONSET_S = 60.0
BUDGET_S = 1800.0


def spec_for(cls: type[Fault], params: dict[str, Any] | None = None, target: str | None = None) -> TaskSpec:
    """A quiet, single-fault task for one primitive, built from its declared example."""
    m = cls.meta
    fault = FaultSpec(primitive=m.name, target=target or m.example or _default_target(m.targets[0]),
                      params=dict(m.example_params) if params is None else params, at=ONSET_S,
                      visible=True)
    return TaskSpec(id=f"prim-{m.name.replace('_', '-')}", title=f"primitive {m.name}",
                    description=f"harness task for the {m.name} primitive", difficulty="easy",
                    faults=(fault,), noise=NoiseSpec(profile="quiet"), alert=AlertSpec(name=m.alert),
                    budget=BudgetSpec(steps=60, time_s=BUDGET_S, max_onset_s=1800.0))


def _default_target(kind: str) -> str:
    """A selector for a primitive that declares no example (prefer declaring one)."""
    if ":" in kind:
        return kind.split(":", 1)[1]
    return {"service": "web_server", "replica": "web_server[*]", "node": "node(*)",
            "disk": "disk(database.primary)"}.get(kind, kind)


def start(cls: type[Fault], seed: int) -> Episode:
    """A reset episode (paged, the fault injected) for ``cls`` under ``seed``."""
    env = srezero.make(spec_for(cls), seed)
    env.reset(seed=seed)
    return env


def play(env: Episode, actions: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Step through ``actions`` then resolve; return the episode result."""
    info: dict[str, Any] = {}
    for action in [*actions, {"tool": "resolve", "args": {}}]:
        _, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    return info["result"]


def play_oracle(cls: type[Fault], seed: int) -> dict[str, Any]:
    env = start(cls, seed)
    return play(env, [a for a in env.oracle_plan() if a["tool"] != "resolve"])


def slo_breach(env: Episode) -> dict[str, float]:
    """The SLOs breached on any tick between injection and now, with their worst values."""
    w = env.world
    slo = env.spec.slo
    c0 = max(0, int((w.faults[0].injected_at or w.now) // 30.0))
    out = {}
    for metric, limit in (("error_rate", slo.error_rate), ("latency_p99_ms", slo.latency_p99_ms)):
        worst = float(w.buf[w.row_of[("load_balancer", metric)], c0 : w.col + 1].max())
        if worst > limit:
            out[metric] = worst
    age = float(w.buf[w.row_of[("message_queue", "queue_age_s")], c0 : w.col + 1].max())
    if age > slo.queue_age_s:
        out["queue_age_s"] = age
    return out


def restart_actions(env: Episode) -> list[dict[str, Any]]:
    """A plain restart of the target's service, plus the database when the fault involves it."""
    f = env.world.faults[0]
    t = f.target
    if t.kind == "service":
        services = [t.name]
    elif t.kind == "replica":
        services = [t.obj.service.kind]
    elif t.kind == "disk":
        services = [r.kind for r in t.obj.node.replicas if r.state != "Terminated"][:1]
    else:
        services = [r.kind for r in t.obj.replicas if r.state != "Terminated"][:1]
    if f.meta.layer == "database" or "database" in services:
        services = [s for s in services if s != "database"] + ["database"]
    return [{"tool": "restart", "args": {"target": s}} for s in dict.fromkeys(services)]
