"""Summary statistics with 95% confidence intervals.

Computed once per sweep from the compact per-episode rows (``records.row_of``), so the cost is
linear in the number of episodes: rows are grouped in one pass, and each group's bootstrap costs
``RESAMPLES x n``. Every group x metric draws from its own numpy Generator seeded from its key, so
the numbers do not depend on episode order, on worker count, or on which other groups exist.

The unit of resampling is what is independent. Within one task the seeds are; across a run the
tasks are, not the episodes (the seeds of one task are strongly correlated), so an agent's interval
resamples whole tasks (a cluster bootstrap). When every value is the same 0 or 1 the bootstrap has
no spread, and the Wilson score interval over the independent units is reported instead. A single
independent value gets no interval at all (``lo`` and ``hi`` are None), not a zero-width one, unless it
is a 0/1 value (Wilson).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from srezero.sim.rng import stable_int
from srezero.sweep.records import METRICS

RESAMPLES = 1000
#: The 0/1 metrics (proportions).
PROPORTIONS = ("success", "diagnosis", "mitigation")
CONFIDENCE = 0.95
_Z = 1.959963984540054  # the normal quantile of CONFIDENCE, for the Wilson interval
#: Resample rows per chunk, to bound memory for large groups (RESAMPLES x n indices otherwise).
_CHUNK_CELLS = 2_000_000
METHOD = ("percentile bootstrap: over seeds for an agent x task group, over tasks (clusters) for an agent's "
          "whole run; Wilson score interval over the same units when every value is the same 0 or 1")


def bootstrap(values: np.ndarray, key: str, resamples: int = RESAMPLES,
              clusters: np.ndarray | None = None, proportion: bool = False) -> dict[str, Any]:
    """Mean and 95% CI of ``values`` (NaN = undefined, left out; ``n`` counts the rest).

    With ``clusters`` (a label per value, e.g. the task), whole clusters are resampled and the CI is
    of the episode-weighted mean; without (or with a single cluster, whose values are then the
    units), the values are resampled as independent. ``proportion`` marks 0/1 values, whose constant
    samples get the Wilson interval. Any other single unit (one defined value, or one cluster holding a
    single value) has no interval: ``lo`` and ``hi`` are None. One cluster of several values is resampled
    over its values, as above."""
    defined = ~np.isnan(values)
    v = values[defined]
    n = int(v.size)
    if n == 0:
        return {"mean": None, "lo": None, "hi": None, "n": 0}
    mean = float(v.mean())
    sums, counts = v, np.ones(n)
    if clusters is not None:
        _, codes = np.unique(np.asarray(clusters)[defined], return_inverse=True)
        if codes.max() > 0:  # one task's run: its seeds are the independent units
            sums = np.bincount(codes, weights=v)
            counts = np.bincount(codes).astype(float)
    units = int(sums.size)
    constant = float(v.min()) == float(v.max())
    if constant and proportion:
        lo, hi = wilson(mean * units, units)
        return {"mean": _r(mean), "lo": _r(lo), "hi": _r(hi), "n": n}
    if units == 1:  # one independent unit says nothing about its spread: no interval, rather than a false one
        return {"mean": _r(mean), "lo": None, "hi": None, "n": n}
    if constant:
        return {"mean": _r(mean), "lo": _r(mean), "hi": _r(mean), "n": n}
    rng = np.random.Generator(np.random.PCG64(stable_int("bootstrap", key)))
    means = np.empty(resamples)
    rows = max(1, _CHUNK_CELLS // units)
    for start in range(0, resamples, rows):
        stop = min(resamples, start + rows)
        idx = rng.integers(0, units, size=(stop - start, units))
        means[start:stop] = sums[idx].sum(axis=1) / counts[idx].sum(axis=1)
    tail = (1.0 - CONFIDENCE) / 2 * 100
    lo, hi = np.percentile(means, [tail, 100 - tail])
    return {"mean": _r(mean), "lo": _r(float(lo)), "hi": _r(float(hi)), "n": n}


def wilson(successes: float, n: int) -> tuple[float, float]:
    """The Wilson score interval of a proportion (informative at 0 of n and n of n, unlike the bootstrap)."""
    p = successes / n
    z2 = _Z * _Z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = _Z * np.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, float(centre - half)), min(1.0, float(centre + half))


def _r(x: float) -> float:
    """Round so tiny summation-order differences never reach the bytes of a summary."""
    return round(x, 6)


def consistency(members: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """pass^k: the share of tasks solved on every seed run (with its CI over tasks), next to the
    per-episode success rate; k is the fewest seeds any task has."""
    by_task: dict[str, list[float]] = defaultdict(list)
    for m in members:
        by_task[m["task"]].append(m["success"] or 0.0)
    solved = np.array([float(all(x == 1.0 for x in xs)) for xs in by_task.values()])
    out = bootstrap(solved, key, proportion=True)
    out["k"] = min(len(xs) for xs in by_task.values())
    return out


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Groups per agent (``task = "*"``) and per agent x task, sorted; see docs/records.md."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in sorted(rows, key=lambda r: (r["agent"], r["task"], r["seed"])):
        groups[(row["agent"], "*")].append(row)
        groups[(row["agent"], row["task"])].append(row)
    out = []
    for (agent, task), members in sorted(groups.items()):
        # every episode counts: a failed one is a zero for the outcome metrics (records.FAILED_AS_ZERO)
        table = np.array([[np.nan if m[k] is None else m[k] for k in METRICS] for m in members], dtype=float)
        table = table.reshape(len(members), len(METRICS))
        clusters = np.array([m["task"] for m in members]) if task == "*" else None
        metrics = {k: bootstrap(table[:, i], f"{agent}\x1f{task}\x1f{k}", clusters=clusters,
                                proportion=k in PROPORTIONS) for i, k in enumerate(METRICS)}
        group = {"agent": agent, "task": task, "n": len(members),
                 # handed the ground truth (the oracle, or any agent that asks): an upper bound
                 "privileged": any(m.get("privileged") for m in members),
                 "provider_errors": sum(1 for m in members if m["status"] == "provider_error"),
                 "agent_errors": sum(1 for m in members if m["status"] == "agent_error"),
                 "env_errors": sum(1 for m in members if m["status"] == "env_error"),
                 "metrics": metrics}
        if task == "*":
            group["tasks"] = len({m["task"] for m in members})
            group["consistency"] = consistency(members, f"{agent}\x1f*\x1fconsistency")
        out.append(group)
    return {"schema": 2, "bootstrap": {"method": METHOD, "resamples": RESAMPLES, "confidence": CONFIDENCE},
            "metrics": list(METRICS), "groups": out}


def csv_rows(summary: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    header = ["agent", "task", "n", "privileged", "provider_errors", "agent_errors", "env_errors"]
    for k in METRICS:
        header += [k, f"{k}_lo", f"{k}_hi", f"{k}_n"]
    header += ["tasks", "consistency", "consistency_lo", "consistency_hi", "consistency_k"]  # per agent only
    rows = []
    for g in summary["groups"]:
        row = [g["agent"], g["task"], g["n"], int(g["privileged"]), g["provider_errors"], g["agent_errors"],
               g["env_errors"]]
        for k in METRICS:
            m = g["metrics"][k]
            row += [m["mean"], m["lo"], m["hi"], m["n"]]
        c = g.get("consistency")
        row += [g["tasks"], c["mean"], c["lo"], c["hi"], c["k"]] if c else [None] * 5
        rows.append(row)
    return header, rows
