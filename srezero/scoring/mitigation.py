"""The mitigation oracle: judged from the world's true state over a verification window.

After resolve (or when a budget runs out) the world keeps running for the task's
``verify_window_s`` simulated seconds (600 s unless the task says otherwise). Faults that can relapse
declare a ``relapse_probe``: their trigger is replayed once the settling period is over (a
metastable retry storm sees the same surge again). Mitigated means all of:

* **neutralised**: every injected fault's cause is gone at the end of the window (its model state,
  not its alert: silencing an alert changes nothing here);
* **no relapse**: no fault that was neutralised when verification began became active again at any
  tick of the window (a restart that buys ten minutes before the next OOM kill is not a mitigation);
* **SLOs held**: the edge error ratio, the edge p99 latency and the age of the oldest queued message
  stay within the task's SLO on every tick after a *settling period* of a third of the window
  (capped at 180 s), so caches may warm and backlogs drain after a right fix (breach time is
  counted in 30 s ticks, so at most ``window - settle`` seconds can breach);
* **nothing destroyed**: no destructive consequence of a write (``World.destroyed``: a service
  scaled to zero, a healthy release the schema needs rolled back, writes lost in a failover, the
  primary database taken offline), and at the end of the window no service without a single live
  replica, no data lost and no queued messages destroyed.

Every failure is reported as a sentence a person can act on (``reasons``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from srezero.sim.clock import TICK_S

if TYPE_CHECKING:
    from collections.abc import Callable

    from srezero.faults.base import Fault
    from srezero.sim.world import World

SETTLE_FRACTION = 1.0 / 3.0
SETTLE_CAP_S = 180.0
SLO_LABELS = {"error_rate": "edge error ratio", "latency_p99_ms": "edge p99 latency (ms)",
              "queue_age_s": "oldest queued message age (s)"}
_SLO_ROWS = (("error_rate", "load_balancer"), ("latency_p99_ms", "load_balancer"), ("queue_age_s", "message_queue"))


def settle_s(window: float) -> float:
    """Seconds at the start of the verification window during which SLO breaches are forgiven."""
    return min(SETTLE_CAP_S, window * SETTLE_FRACTION)


def slo_limits(w: World) -> dict[str, float]:
    slo = w.spec.slo
    return {"error_rate": slo.error_rate, "latency_p99_ms": slo.latency_p99_ms, "queue_age_s": slo.queue_age_s}


def slo_rows(w: World) -> dict[str, int]:
    return {name: w.row_of[(svc, name)] for name, svc in _SLO_ROWS}


def losses(w: World) -> list[str]:
    """Destruction visible in the end state (beyond what writes reported when they were made)."""
    out = []
    for kind, svc in w.services.items():
        if not any(r.state != "Terminated" for r in svc.replicas):
            out.append(f"{kind} has no replicas left; scale it back up")
    if w.state.data_lost and not any("lost" in d for d in w.destroyed):
        out.append("database writes were lost")
    if w.state.mq_lost > 0.5:
        out.append(f"{w.state.mq_lost:.0f} queued messages were destroyed")
    return out


def start_probes(w: World, faults: list[Fault]) -> list[Fault]:
    """Schedule the relapse probes of the injected faults (they fire after the settling period);
    returns the injected faults."""
    settle = settle_s(w.spec.verify_window_s)
    injected = [f for f in faults if f.injected]
    for f in injected:
        probe = getattr(f, "relapse_probe", None)
        if probe is not None:
            w.env.process(probe(w, settle))
    return injected


def verify(w: World, faults: list[Fault], each_tick: Callable[[], None] | None = None) -> dict[str, Any]:
    """Run the verification window on ``w`` and judge it. Advances the world; ``each_tick`` runs after
    every tick of it (the episode credits remedies whose effect completes there).

    The episode is over, so nothing reads alerts any more: their evaluation stops (their state
    stays as it was at the end of the episode)."""
    w.alerts_live = False
    window = w.spec.verify_window_s
    settle = settle_s(window)
    injected = start_probes(w, faults)
    rows = slo_rows(w)
    limits = slo_limits(w)
    healed_at_start = {id(f) for f in injected if f.neutralised(w)}
    relapsed: dict[int, str] = {}
    t_end = w.now + window
    t_judge = w.now + settle
    worst = dict.fromkeys(limits, 0.0)
    breaches: dict[str, float] = {}
    while w.now < t_end - 1e-9:
        w.advance(TICK_S)
        if each_tick is not None:
            each_tick()
        for f in injected:
            if id(f) in healed_at_start and id(f) not in relapsed and not f.neutralised(w):
                relapsed[id(f)] = f.why_active(w)
        if w.now <= t_judge + 1e-9:  # ticks inside the settling period are forgiven
            continue
        v = w.vals
        for name, row in rows.items():
            worst[name] = max(worst[name], v[row])
            if v[row] > limits[name]:
                breaches[name] = breaches.get(name, 0.0) + TICK_S
    active = [f for f in injected if not f.neutralised(w)]
    reasons = [f"relapsed during verification: {why}" for why in relapsed.values()]
    reasons += [f.why_active(w) for f in active if id(f) not in relapsed]
    for name, secs in breaches.items():
        reasons.append(f"{SLO_LABELS[name]} reached {worst[name]:.4g}, above the SLO of {limits[name]:g}, "
                       f"for {secs:.0f}s of the verification window (after {settle:.0f}s of settling)")
    reasons += [f"destructive: {d}" for d in w.destroyed]
    lost = losses(w)
    reasons += [f"end state: {x}" for x in lost]
    slo_ok = not breaches
    return {
        "mitigated": not active and not relapsed and slo_ok and not w.destroyed and not lost,
        "neutralised": {f"{f.meta.name}@{f.target.name}": (not f.injected) or f.neutralised(w) for f in faults},
        "relapsed": [f"{f.meta.name}@{f.target.name}" for f in injected if id(f) in relapsed],
        "slo_ok": slo_ok,
        "slo_worst": {k: round(v, 6) for k, v in worst.items()},
        "slo_breach_s": {k: round(v, 3) for k, v in breaches.items()},
        "destroyed": list(w.destroyed),
        "losses": lost,
        "reasons": reasons,
        "verify_window_s": window,
        "settle_s": settle,
    }
