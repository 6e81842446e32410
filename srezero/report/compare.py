"""Paired comparison of two agents (in one run or two) on the episodes both ran.

Marginal intervals overlap long before a difference stops being real: two agents on the same tasks
share most of their variance (a hard task is hard for both). Pairing each (task, seed) episode of
one agent with the same episode of the other removes it. The interval of the mean difference
resamples whole tasks, like the summary's agent intervals, because the seeds of a task are correlated.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from srezero.report.load import Ep, Run, RunDirError, load_run


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a run directory and an agent label in it."""

    run: Path
    agent: str

    @property
    def name(self) -> str:
        return f"{self.run.name}:{self.agent}"


def parse_side(text: str) -> Side:
    """``RUN_DIR:AGENT``, or ``RUN_DIR`` when the run holds one agent that is not an upper bound."""
    path, sep, agent = text.rpartition(":")
    if sep and path and Path(path).exists():
        return Side(Path(path), agent)
    run = load_run(text)
    ranked = sorted({e.agent for e in run.episodes if not e.upper_bound})
    if len(ranked) != 1:
        raise RunDirError(f"{text}: holds agents {', '.join(ranked) or '(none)'}; name one as {text}:AGENT")
    return Side(Path(text), ranked[0])


def _episodes(side: Side, run: Run) -> dict[tuple[str, int], Ep]:
    eps = {(e.task_id, e.seed): e for e in run.episodes if e.agent == side.agent}
    if not eps:
        raise RunDirError(f"{side.run}: no records for agent {side.agent!r}")
    return eps


def compare(a: Side, b: Side) -> dict[str, Any]:
    """Means, the paired mean difference (a - b) with its 95% CI over tasks, and per-task wins."""
    from srezero.sweep.stats import bootstrap

    runs = {path: load_run(path) for path in (a.run, b.run)}  # two agents of one run: read it once
    ea, eb = _episodes(a, runs[a.run]), _episodes(b, runs[b.run])
    cells = sorted(set(ea) & set(eb))
    if not cells:
        raise RunDirError(f"{a.name} and {b.name} share no (task, seed) episode")
    tasks = np.array([t for t, _ in cells])
    out: dict[str, Any] = {"a": a.name, "b": b.name, "episodes": len(cells), "tasks": len(set(tasks.tolist())),
                           "only_a": len(set(ea) - set(eb)), "only_b": len(set(eb) - set(ea))}
    key = f"compare\x1f{a.name}\x1f{b.name}"
    for metric, get in (("marks", lambda e: e.marks), ("success", lambda e: float(e.success))):
        va = np.array([get(ea[c]) for c in cells])
        vb = np.array([get(eb[c]) for c in cells])
        diff = bootstrap(va - vb, f"{key}\x1f{metric}", clusters=tasks)
        out[metric] = {"a": round(float(va.mean()), 6), "b": round(float(vb.mean()), 6),
                       "diff": diff["mean"], "lo": diff["lo"], "hi": diff["hi"]}
    per_task: dict[str, list[float]] = {}
    for c in cells:
        per_task.setdefault(c[0], []).append(ea[c].marks - eb[c].marks)
    means = {t: sum(v) / len(v) for t, v in per_task.items()}
    out["wins"] = sum(1 for m in means.values() if m > 0)
    out["ties"] = sum(1 for m in means.values() if m == 0)
    out["losses"] = sum(1 for m in means.values() if m < 0)
    out["per_task"] = [{"task": t, "diff": round(m, 6)} for t, m in sorted(means.items(), key=lambda x: (-x[1], x[0]))]
    return out


def verdict(r: dict[str, Any]) -> str:
    m = r["marks"]
    if m["lo"] is not None and m["lo"] > 0:
        return f"{r['a']} scores higher: the 95% CI of the difference excludes 0"
    if m["hi"] is not None and m["hi"] < 0:
        return f"{r['b']} scores higher: the 95% CI of the difference excludes 0"
    return "no difference established at this many tasks: the 95% CI of the difference includes 0"
