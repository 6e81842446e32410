"""Summary statistics with percentile-bootstrap 95% confidence intervals.

Computed once per sweep from the compact per-episode rows (``records.row_of``), so the cost is
linear in the number of episodes: rows are grouped in one pass, and each group's bootstrap costs
``RESAMPLES x n``. Every group x metric draws from its own numpy Generator seeded from its key, so
the numbers do not depend on episode order, on worker count, or on which other groups exist.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from srezero.sim.rng import stable_int
from srezero.sweep.records import METRICS

RESAMPLES = 1000
CONFIDENCE = 0.95
#: Resample rows per chunk, to bound memory for large groups (RESAMPLES x n indices otherwise).
_CHUNK_CELLS = 2_000_000


def bootstrap(values: np.ndarray, key: str, resamples: int = RESAMPLES) -> dict[str, Any]:
    """Mean and percentile-bootstrap CI of ``values`` (NaN = undefined, left out; ``n`` counts the rest)."""
    v = values[~np.isnan(values)]
    n = int(v.size)
    if n == 0:
        return {"mean": None, "lo": None, "hi": None, "n": 0}
    mean = float(v.mean())
    if n == 1 or float(v.min()) == float(v.max()):
        return {"mean": _r(mean), "lo": _r(mean), "hi": _r(mean), "n": n}
    rng = np.random.Generator(np.random.PCG64(stable_int("bootstrap", key)))
    means = np.empty(resamples)
    rows = max(1, _CHUNK_CELLS // n)
    for start in range(0, resamples, rows):
        stop = min(resamples, start + rows)
        idx = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = v[idx].mean(axis=1)
    tail = (1.0 - CONFIDENCE) / 2 * 100
    lo, hi = np.percentile(means, [tail, 100 - tail])
    return {"mean": _r(mean), "lo": _r(float(lo)), "hi": _r(float(hi)), "n": n}


def _r(x: float) -> float:
    """Round so tiny summation-order differences never reach the bytes of a summary."""
    return round(x, 6)


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
        metrics = {k: bootstrap(table[:, i], f"{agent}\x1f{task}\x1f{k}") for i, k in enumerate(METRICS)}
        out.append({"agent": agent, "task": task, "n": len(members),
                    # handed the ground truth (the oracle, or any agent that asks): an upper bound
                    "privileged": any(m.get("privileged") for m in members),
                    "provider_errors": sum(1 for m in members if m["status"] == "provider_error"),
                    "agent_errors": sum(1 for m in members if m["status"] == "agent_error"),
                    "env_errors": sum(1 for m in members if m["status"] == "env_error"),
                    "metrics": metrics})
    return {"schema": 1, "bootstrap": {"method": "percentile", "resamples": RESAMPLES, "confidence": CONFIDENCE},
            "metrics": list(METRICS), "groups": out}


def csv_rows(summary: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    header = ["agent", "task", "n", "provider_errors", "agent_errors", "env_errors"]
    for k in METRICS:
        header += [k, f"{k}_lo", f"{k}_hi"]
    rows = []
    for g in summary["groups"]:
        row = [g["agent"], g["task"], g["n"], g["provider_errors"], g["agent_errors"], g["env_errors"]]
        for k in METRICS:
            m = g["metrics"][k]
            row += [m["mean"], m["lo"], m["hi"]]
        rows.append(row)
    return header, rows
