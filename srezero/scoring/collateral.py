"""Collateral impact: the errors and latency the agent's own wrong actions caused, by counterfactual.

The simulation is deterministic in (task, seed, actions), so "what would have happened without
those writes" is not a guess: the episode is replayed in a fresh world with every wrong write (a
write that addressed no root cause, :mod:`srezero.scoring.writes`) replaced by waiting for the
same simulated time, and both worlds run on through the verification window's settling period
(with the same relapse probes), where the consequences of the last actions show. Collateral impact
is the difference at the edge, from the page to the end of that settling period:

* ``errors``: extra failed client requests (error ratio x request rate, integrated over time);
* ``slo_breach_s``: seconds during which the real world breached an edge SLO and the counterfactual
  did not;
* ``p99_excess_ms``: the mean amount by which edge p99 latency exceeded the counterfactual's.

Right fixes are kept in the counterfactual, so the unavoidable cost of a right fix (a failover's
write pause, a rollback's restarts) is not collateral; a restart of the wrong service is. Episodes
without wrong writes need no replay and report zeros. Reads never change the world, so the replay
skips them and only advances their simulated cost.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import numpy as np

from srezero.scoring.mitigation import settle_s, slo_limits, slo_rows, start_probes
from srezero.sim.clock import TICK_S
from srezero.sim.dispose import dispose

if TYPE_CHECKING:
    from srezero.sim.world import World
    from srezero.task.spec import TaskSpec

ZERO = {"errors": 0.0, "slo_breach_s": 0.0, "p99_excess_ms": 0.0}


def replay(spec: TaskSpec, seed: int, steps: list[dict[str, Any]], skip: set[int], invalid_cost_s: float) -> World:
    """Rebuild the world and replay the episode's writes (except those in ``skip``), keeping time.

    ``steps`` are trajectory entries (step, tool, args, ok). Returns the world at the end of the
    verification window's settling period (the rest of the window would only cost time: nothing the
    agent did is left to show there that the settling period has not shown)."""
    from srezero.sim.world import World
    from srezero.tools.context import ToolContext
    from srezero.tools.registry import ToolError, load_tools

    tools = load_tools()
    w = World.build(spec, seed)
    w.page()
    w.alerts_live = False  # nobody reads the replay's alerts; only its page time matters
    ctx = ToolContext(w, None)
    for s in steps:
        name = s.get("tool")
        if not s.get("ok") or name not in tools:
            w.advance(invalid_cost_s)
            continue
        t = tools[name]
        if name == "resolve":
            break
        if t.kind == "write" and s["step"] not in skip:
            # a write that depended on a skipped one fails here; its time still passes
            with contextlib.suppress(ToolError, TypeError, ValueError, KeyError):
                t.fn(ctx, **s["args"])
        w.advance(t.cost_s)
    start_probes(w, w.faults)
    w.advance(settle_s(spec.verify_window_s))
    return w


def compare(actual: World, cf: World, col0: int) -> dict[str, float]:
    """Edge impact of ``actual`` beyond ``cf`` over the columns both have, from ``col0``."""
    c1 = min(actual.col, cf.col)
    if c1 <= col0:
        return dict(ZERO)
    rps = actual.row_of[("load_balancer", "request_rate")]
    err = actual.row_of[("load_balancer", "error_rate")]
    rows = slo_rows(actual)
    limits = slo_limits(actual)
    a, b = actual.buf[:, col0 : c1 + 1], cf.buf[:, col0 : c1 + 1]
    failed = float(np.sum(a[err] * a[rps]) - np.sum(b[err] * b[rps])) * TICK_S
    breach_a = np.zeros(a.shape[1], dtype=bool)
    breach_b = np.zeros(b.shape[1], dtype=bool)
    for name, row in rows.items():
        breach_a |= a[row] > limits[name]
        breach_b |= b[row] > limits[name]
    p99 = rows["latency_p99_ms"]
    return {"errors": round(max(0.0, failed), 3),
            "slo_breach_s": round(float(np.sum(breach_a & ~breach_b)) * TICK_S, 3),
            "p99_excess_ms": round(float(np.mean(np.maximum(0.0, a[p99] - b[p99]))), 3)}


def measure(actual: World, spec: TaskSpec, seed: int, steps: list[dict[str, Any]], wrong_steps: list[int],
            col0: int, invalid_cost_s: float) -> dict[str, Any]:
    """Collateral impact of the wrong writes at ``wrong_steps`` (empty: nothing to measure)."""
    if not wrong_steps:
        return {"method": "no_wrong_writes", **ZERO, "writes_removed": 0}
    cf = replay(spec, seed, steps, set(wrong_steps), invalid_cost_s)
    impact = compare(actual, cf, col0)
    dispose(cf)  # nobody else holds the counterfactual: freed now, not by a later garbage collection
    return {"method": "counterfactual", **impact, "writes_removed": len(wrong_steps)}
