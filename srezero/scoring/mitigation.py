"""The mitigation oracle: judged from the world's true state over a verification window.

After resolve (or when a budget runs out) the world keeps running for ``verify_window_s`` simulated
seconds. Faults that can relapse get their trigger replayed (a metastable retry storm sees the same
surge again). Mitigated means all of:

* every injected fault is neutralised at the end of the window (its cause is gone, not its alert);
* the SLOs (edge error ratio, edge p99, oldest queued message) hold on every tick after a settling
  period of a third of the window (capped at 180 s), so caches may warm and backlogs drain;
* nothing was destroyed (no service scaled to zero, no writes lost, no healthy release rolled back,
  no primary database taken offline).

Every failure is reported in words a person can act on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from srezero.sim.model import TICK_S

if TYPE_CHECKING:
    from srezero.faults.base import Fault
    from srezero.sim.world import World


def verify(w: World, faults: list[Fault]) -> dict[str, Any]:
    spec = w.spec
    window = spec.verify_window_s
    settle = min(180.0, window / 3.0)
    for f in faults:
        probe = getattr(f, "relapse_probe", None)
        if probe is not None and f.injected:
            w.env.process(probe(w, settle))
    err_row = w.row_of[("load_balancer", "error_rate")]
    p99_row = w.row_of[("load_balancer", "latency_p99_ms")]
    age_row = w.row_of[("message_queue", "queue_age_s")]
    t_end = w.now + window
    t_judge = w.now + settle
    worst = {"error_rate": 0.0, "latency_p99_ms": 0.0, "queue_age_s": 0.0}
    breaches: dict[str, float] = {}
    while w.now < t_end - 1e-9:
        w.advance(TICK_S)
        if w.now < t_judge:
            continue
        v = w.vals
        for name, row, limit in (("error_rate", err_row, spec.slo.error_rate),
                                 ("latency_p99_ms", p99_row, spec.slo.latency_p99_ms),
                                 ("queue_age_s", age_row, spec.slo.queue_age_s)):
            worst[name] = max(worst[name], v[row])
            if v[row] > limit:
                breaches[name] = breaches.get(name, 0.0) + TICK_S
    active = [f for f in faults if f.injected and not f.neutralised(w)]
    reasons = [f.why_active(w) for f in active]
    limits = {"error_rate": spec.slo.error_rate, "latency_p99_ms": spec.slo.latency_p99_ms,
              "queue_age_s": spec.slo.queue_age_s}
    labels = {"error_rate": "edge error ratio", "latency_p99_ms": "edge p99 latency (ms)",
              "queue_age_s": "oldest queued message age (s)"}
    for name, secs in breaches.items():
        reasons.append(f"{labels[name]} reached {worst[name]:.4g}, above the SLO of {limits[name]:g}, "
                       f"for {secs:.0f}s of the verification window")
    reasons += [f"destructive: {d}" for d in w.destroyed]
    slo_ok = not breaches
    return {
        "mitigated": not active and slo_ok and not w.destroyed,
        "neutralised": {f"{f.meta.name}@{f.target.name}": (not f.injected) or f.neutralised(w) for f in faults},
        "slo_ok": slo_ok,
        "slo_worst": {k: round(v, 6) for k, v in worst.items()},
        "destroyed": list(w.destroyed),
        "reasons": reasons,
        "verify_window_s": window,
    }
