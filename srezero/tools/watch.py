"""``wait``'s optional watch: the wait ends at the first sample of a metric past a bound.

An engineer who has applied a fix watches a graph until it comes back, rather than guessing how long
that takes. The simulator's ``wait`` (:mod:`srezero.tools.read`) and the live backend's
(:mod:`srezero.backends.k8s`) both take the watch, so they check and word it alike from here.
"""

from __future__ import annotations

import math

#: how often a watch looks at its metric: the simulator's tick, and a common Prometheus scrape interval
SAMPLE_S = 30.0


def watch_bound(target: str, metric: str, below: float | None, above: float | None) -> tuple[float, bool] | None:
    """The watch's ``(bound, below?)``, None for a plain wait; a ToolError for half a watch."""
    from srezero.tools.registry import ToolError

    if not (target or metric or below is not None or above is not None):
        return None
    if not target or not metric:
        raise ToolError("a watch needs target and metric, and below or above (e.g. target='message_queue', "
                        "metric='queue_age_s', below=60); leave all four out for a plain wait")
    if (below is None) == (above is None):
        raise ToolError("a watch needs exactly one bound: below (wait for the metric to fall under it) "
                        "or above (to rise over it)")
    bound = float(below if below is not None else above)  # type: ignore[arg-type]
    if not math.isfinite(bound):
        raise ToolError(f"the watch's bound must be a finite number, not {bound}")
    return bound, below is not None


def is_met(value: float | None, bound: float, below: bool) -> bool:
    """Has the watched metric crossed its bound? Never without a sample."""
    if value is None:
        return False
    return value < bound if below else value > bound


def watch_answer(waited: float, asked: int, budget_cut: bool, target: str, metric: str, value: float | None,
                 bound: float, below: bool) -> tuple[str, dict[str, object]]:
    """A watched wait's first words and its data, e.g. ``waited 90 s of 600: queue_age_s of message_queue is
    41.2, below 60`` and ``{"waited_s": 90, "met": True, "value": 41.2}``."""
    met = is_met(value, bound, below)
    spent = int(waited) if float(waited).is_integer() else waited
    why = "" if met else " (the time budget ran out)" if budget_cut else " (the watch ran out)"
    seen = "no data" if value is None else f"{value:.4g}"
    side = "below" if below else "above"
    head = f"waited {spent} s of {asked}{why}: {metric} of {target} is {seen}, {'' if met else 'not '}{side} {bound:g}"
    return head, {"waited_s": spent, "met": met, "value": value}
