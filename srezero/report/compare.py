"""Paired comparison of two agents (in one run or two) on the episodes both ran.

Marginal intervals overlap long before a difference stops being real: two agents on the same tasks
share most of their variance (a hard task is hard for both). Pairing each (task, seed) episode of
one agent with the same episode of the other removes it. The interval of the mean difference
resamples whole tasks, like the summary's agent intervals, because the seeds of a task are correlated.

The resampling is seeded from the paired cells, never from names: the same data gives the same
interval whatever the run directories are called, and swapping A and B mirrors it exactly. Episodes
whose task file differs between the two sides (``task_hash``) are not paired; records made by different
builds of the simulator or scoring (the manifests' ``engine``) are paired, with a warning, since the same
(task, seed) need not be the same incident there.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from srezero.report.load import Ep, Run, RunDirError, engines, load_run

#: Resamples of the paired bootstrap (two metrics only, so more than the summary's 1,000).
RESAMPLES = 10_000
#: Fewer tasks than this give no verdict: a percentile bootstrap over a handful of clusters is not a
#: 95% interval, and one task (or a constant difference) gives a zero-width "interval".
MIN_TASKS = 5


def few_tasks_caveat(tasks: int) -> str | None:
    """What to say about intervals over ``tasks`` tasks when there are too few for them to be 95%
    intervals (the sweep's table and the report both say it); None when there are enough, or none."""
    if not 0 < tasks < MIN_TASKS:
        return None
    return (f"the intervals resample tasks, and over {tasks} task(s) they are not 95% intervals (at least "
            f"{MIN_TASKS} are needed, as srezero compare says): read them as a range, not a verdict")


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a run directory and an agent label in it."""

    run: Path
    agent: str

    @property
    def name(self) -> str:
        return f"{self.run.name}:{self.agent}"


def parse_side(text: str) -> Side:
    """``RUN_DIR:AGENT``, or ``RUN_DIR`` when the run holds one agent that is not an upper bound.

    Agent labels may contain colons (``human:ada``, ``llm-react@vendor:model``), so the run is the
    shortest prefix before a colon that exists on disk."""
    if not Path(text).exists():
        for i, ch in enumerate(text):
            if ch == ":" and i and i < len(text) - 1 and Path(text[:i]).exists():
                return Side(Path(text[:i]), text[i + 1:])
    run = load_run(text)
    ranked = sorted({e.agent for e in run.episodes if not e.upper_bound})
    if len(ranked) != 1:  # name every agent it holds: an upper bound can be compared when named
        bounds = sorted({e.agent for e in run.episodes if e.upper_bound} - set(ranked))
        held = ", ".join(ranked + [f"{a} (an upper bound)" for a in bounds]) or "(none)"
        raise RunDirError(f"{text}: holds agents {held}; name one as {text}:AGENT")
    return Side(Path(text), ranked[0])


def _episodes(side: Side, run: Run) -> dict[tuple[str, int], Ep]:
    eps = {(e.task_id, e.seed): e for e in run.episodes if e.agent == side.agent}
    if not eps:  # a typo: say which labels there are
        raise RunDirError(f"{side.run}: no records for agent {side.agent!r}; it holds {', '.join(run.agents)}")
    return eps


def compare(a: Side, b: Side) -> dict[str, Any]:
    """Means, the paired mean difference (a - b) with its 95% CI over tasks, and per-task wins."""
    from srezero.sweep.stats import bootstrap

    runs = {path: load_run(path) for path in (a.run, b.run)}  # two agents of one run: read it once
    ea, eb = _episodes(a, runs[a.run]), _episodes(b, runs[b.run])
    shared = sorted(set(ea) & set(eb))
    cells = [c for c in shared if ea[c].record.get("task_hash") == eb[c].record.get("task_hash")]
    if not shared:
        raise RunDirError(f"{a.name} and {b.name} share no (task, seed) episode")
    if not cells:
        raise RunDirError(f"{a.name} and {b.name} ran different versions of every shared task (task_hash "
                          "differs): their episodes are not comparable")
    tasks = np.array([t for t, _ in cells])
    n_tasks = len(set(tasks.tolist()))
    # two runs in folders of the same name (runs/x/records, runs/y/records): name them by their paths
    names = (a.name, b.name) if a.name != b.name or a == b else (f"{a.run}:{a.agent}", f"{b.run}:{b.agent}")
    out: dict[str, Any] = {"a": names[0], "b": names[1], "episodes": len(cells), "tasks": n_tasks,
                           "only_a": len(set(ea) - set(eb)), "only_b": len(set(eb) - set(ea)),
                           "other_version": len(shared) - len(cells), "resamples": RESAMPLES,
                           "engines": sorted(engines(runs[a.run].manifest) | engines(runs[b.run].manifest)),
                           # --max-steps of each side (None: each task's budget); a sweep refuses to mix them
                           "max_steps": [runs[side.run].manifest.get("max_steps") for side in (a, b)]}
    # seeded from the cells: independent of names, and swapping A and B mirrors the interval
    key = "compare\x1f" + "\x1f".join(f"{t}\x1e{s}" for t, s in cells)
    for metric, get in (("marks", lambda e: e.marks), ("success", lambda e: float(e.success))):
        va = np.array([get(ea[c]) for c in cells])
        vb = np.array([get(eb[c]) for c in cells])
        diff = bootstrap(va - vb, f"{key}\x1f{metric}", resamples=RESAMPLES, clusters=tasks)
        lo, hi = (diff["lo"], diff["hi"]) if n_tasks >= MIN_TASKS else (None, None)
        out[metric] = {"a": round(float(va.mean()), 6), "b": round(float(vb.mean()), 6),
                       "diff": diff["mean"], "lo": lo, "hi": hi}
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
    if r["tasks"] < MIN_TASKS:
        return (f"too few tasks to tell ({r['tasks']}; a verdict needs at least {MIN_TASKS}): compare over more "
                "tasks, or read the per-task differences")
    if m["lo"] is not None and m["lo"] > 0:
        return f"{r['a']} scores higher: the 95% CI of the difference excludes 0"
    if m["hi"] is not None and m["hi"] < 0:
        return f"{r['b']} scores higher: the 95% CI of the difference excludes 0"
    return "no difference established at this many tasks: the 95% CI of the difference includes 0"
