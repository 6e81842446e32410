"""Confidence intervals for the report: the sweep's own, so the report and summary.json agree.

The key of a group is the one ``srezero.sweep.stats.summarise`` uses (``agent, task, metric``
joined by ``\\x1f``, with task ``*`` for an agent's whole run), so a leaderboard CI equals the CI
of the same group in summary.json to the last digit.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def mean_ci(values: Sequence[float], agent: str, metric: str, task: str = "*",
            clusters: Sequence[str] | None = None) -> tuple[float, float, float]:
    """(mean, lo, hi): the mean and its 95% CI as summary.json computes it (``clusters``: the task of each
    value, for an agent's whole run). NaNs when there are no values."""
    from srezero.sweep.stats import PROPORTIONS, bootstrap

    out = bootstrap(np.asarray(values, dtype=np.float64), f"{agent}\x1f{task}\x1f{metric}",
                    clusters=None if clusters is None else np.asarray(clusters), proportion=metric in PROPORTIONS)
    nan = float("nan")
    return tuple(nan if out[k] is None else float(out[k]) for k in ("mean", "lo", "hi"))  # type: ignore[return-value]
