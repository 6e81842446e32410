"""Alert rules evaluated on metrics each tick, and the alert book the ``get_alerts`` tool reads.

Rules see what the metrics pipeline measured, as a rule engine evaluating scraped series does: each
value carries the measurement noise ``query_metrics`` shows for that sample
(:meth:`srezero.sim.world.World.series`), so an alert's quoted value is one an engineer finds on the
dashboard, and a series hovering at a threshold may flap where its true value would not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from srezero.sim.clock import TICK_S
from srezero.sim.metrics import counted_one

if TYPE_CHECKING:
    import numpy as np

    from srezero.sim.world import World

#: Columns of measurement noise an alert book draws at a time
NOISE_CHUNK = 32

OPS = {">": float.__gt__, "<": float.__lt__, ">=": float.__ge__, "<=": float.__le__}


@dataclass(frozen=True)
class Rule:
    name: str
    severity: str
    entity: str  # service name, or "*node" for one rule per node
    metric: str
    op: str
    threshold: float
    for_s: float
    summary: str


DEFAULT_RULES: tuple[Rule, ...] = (
    Rule("HighErrorRate", "critical", "load_balancer", "error_rate", ">", 0.05, 60, "5xx ratio at the edge is {value:.1%}"),
    Rule("HighLatencyP99", "critical", "load_balancer", "latency_p99_ms", ">", 1200, 90, "p99 latency at the edge is {value:.0f} ms"),
    Rule("QueueBacklogGrowing", "critical", "message_queue", "queue_age_s", ">", 180, 60, "oldest message is {value:.0f} s old"),
    Rule("DatabaseLatencyHigh", "warning", "database", "latency_p99_ms", ">", 250, 60, "database p99 is {value:.0f} ms"),
    Rule("ReplicationLagHigh", "warning", "database", "replication_lag_s", ">", 60, 60, "replica is {value:.0f} s behind"),
    Rule("CacheHitRatioLow", "warning", "cache", "hit_ratio", "<", 0.5, 60, "cache hit ratio is {value:.0%}"),
    Rule("DeadLetterQueueGrowing", "warning", "message_queue", "dlq_depth", ">", 50, 0, "{value:.0f} messages dead-lettered"),
    Rule("WorkerErrors", "warning", "worker", "error_rate", ">", 0.05, 60, "worker error ratio is {value:.1%}"),
    Rule("DiskSpaceLow", "warning", "*node", "data_disk_used_pct", ">", 90, 0, "data disk {value:.0f}% full"),
    Rule("RootDiskSpaceLow", "warning", "*node", "root_disk_used_pct", ">", 90, 0, "root disk {value:.0f}% full"),
    Rule("NodeCPUHigh", "warning", "*node", "cpu_util_pct", ">", 85, 90, "node CPU at {value:.0f}%"),
    Rule("NodeMemoryHigh", "warning", "*node", "memory_used_pct", ">", 92, 60, "node memory at {value:.0f}%"),
    Rule("PodCrashLooping", "warning", "*service", "crashlooping", ">", 0, 0, "{value:.0f} replica(s) in CrashLoopBackOff"),
)


@dataclass
class AlertInstance:
    name: str
    severity: str
    entity: str
    summary: str
    started_at: float
    resolved_at: float | None = None

    @property
    def firing(self) -> bool:
        return self.resolved_at is None


class AlertBook:
    """Evaluates rules each tick; keeps firing and recently resolved alerts."""

    def __init__(self, world: World) -> None:
        self.world = world
        rules = {r.name: r for r in DEFAULT_RULES}
        spec_alert = world.spec.alert
        if spec_alert.metric:
            rules[spec_alert.name] = Rule(spec_alert.name, spec_alert.severity, spec_alert.entity, spec_alert.metric,
                                          spec_alert.op, spec_alert.threshold, spec_alert.for_s,
                                          spec_alert.summary or f"{spec_alert.metric} {{value:.3g}}")
        self._targets: list[tuple[Rule, str, int | None]] = []
        for rule in rules.values():
            if rule.entity == "*node":
                ents = [n.name for n in world.topo.nodes]
            elif rule.entity == "*service":
                ents = list(world.services)
            else:
                ents = [rule.entity]
            for ent in ents:
                row = world.row_of.get((ent, rule.metric))
                self._targets.append((rule, ent, row))
        import numpy as np

        self._np = np
        self._rows = np.array([row if row is not None else 0 for _, _, row in self._targets], dtype=np.intp)
        self._thr = np.array([r.threshold for r, _, _ in self._targets])
        # one comparison for every rule: value * sign > threshold * sign (negation is exact)
        self._sign = np.array([1.0 if r.op in (">", ">=") else -1.0 for r, _, _ in self._targets])
        self._sthr = self._thr * self._sign
        self._computed = [i for i, (_, _, row) in enumerate(self._targets) if row is None]
        self._computed_idx = np.array(self._computed, dtype=np.intp)  # a list index is converted on every use
        # measurement noise, as World.series draws it: a sample's normal is indexed by column and row
        from srezero.sim.readings import NOISE_TABLE_SIZE, noise_table

        self._z = noise_table()[0]
        self._n_table = NOISE_TABLE_SIZE
        self._row_key = self._rows * 104729 + world.noise_offset
        self._chunk0 = -NOISE_CHUNK  # the first column of the noise drawn ahead (none yet)
        measured = np.array([row is not None for _, _, row in self._targets])
        self._sigma = np.where(measured, world._sigma[self._rows], 0.0)
        ceiling = np.where(measured, world._ceiling[self._rows], np.inf)
        self._ceiling = ceiling if np.isfinite(ceiling).any() else None
        #: counted ratios (error rates): (target index, its row, the row of its request rate)
        self._counted = [(int(i), int(self._rows[i]), int(self._rows[i]) - 1)
                         for i in np.flatnonzero(measured & (world._counted[self._rows] > 0))]
        self._keys = [(r.name, e) for r, e, _ in self._targets]
        self._pending_i: dict[int, float] = {}
        self.active: dict[tuple[str, str], AlertInstance] = {}
        self.history: list[AlertInstance] = []

    def _computed_value(self, ent: str, metric: str) -> float:
        """A rule's value that no series holds (crash-looping pods)."""
        if metric == "crashlooping":
            return float(sum(1 for r in self.world.services[ent].replicas if r.state == "CrashLoopBackOff"))
        return 0.0

    def values(self) -> np.ndarray:
        """Every rule target's value this tick, as measured (:meth:`World.series` of its row at the
        current column, to the bit), or computed from pod states."""
        np = self._np
        w = self.world
        values = np.frombuffer(w.vals)[self._rows]
        k = w.col - self._chunk0
        if not 0 <= k < NOISE_CHUNK:
            self._draw_ahead(w.col)
            k = 0
        if self._counted:
            vals = w.vals
            for (i, row, rps_row), z in zip(self._counted, self._counted_z[k]):
                values[i] = counted_one(vals[row], vals[rps_row], z)
        values *= self._factor_ahead[k]  # as World.series: value * (1 + sigma * z), then the ceiling
        if self._ceiling is not None:
            np.minimum(values, self._ceiling, out=values)
        if self._computed:  # crash-loop counts: usually zero everywhere, so check once, not per service
            for r in w.replica_list:  # a plain loop: any() over a generator costs three times as much
                if r.state == "CrashLoopBackOff":
                    for i in self._computed:
                        rule, ent, _ = self._targets[i]
                        values[i] = self._computed_value(ent, rule.metric)
                    break
            else:
                values[self._computed_idx] = 0.0
        return values

    def _draw_ahead(self, col: int) -> None:
        """Each target's normals and noise factors for :data:`NOISE_CHUNK` columns from ``col``: one
        vectorised draw instead of one per tick."""
        np = self._np
        cols = np.arange(col, col + NOISE_CHUNK)[:, None]
        z_ahead = self._z[(cols * 7919 + self._row_key[None, :]) % self._n_table]
        self._factor_ahead = 1.0 + z_ahead * self._sigma
        self._counted_z = z_ahead[:, [i for i, _, _ in self._counted]].tolist()
        self._chunk0 = col

    def evaluate(self) -> None:
        """Vectorised: compare every rule's value at once, then walk only breached or pending rules."""
        now = self.world.env.now
        values = self.values()
        hot = ((values * self._sign) > self._sthr).nonzero()[0].tolist()
        pending = self._pending_i
        active = self.active
        keys = self._keys
        hot_set = set(hot)
        for i in [i for i in pending if i not in hot_set]:
            del pending[i]
            inst = active.pop(keys[i], None)
            if inst is not None:
                inst.resolved_at = now
        for i in hot:
            since = pending.setdefault(i, now)
            key = keys[i]
            if key not in active:
                rule = self._targets[i][0]
                if now - since >= rule.for_s:
                    inst = AlertInstance(rule.name, rule.severity, key[1], rule.summary.format(value=float(values[i])), now)
                    active[key] = inst
                    self.history.append(inst)
        if len(active) > len(pending):  # a forced page clears once its condition is evaluated healthy
            live = {keys[i] for i in pending}
            for key in [k for k in active if k not in live]:
                active.pop(key).resolved_at = now

    def backdate(self, row: int) -> None:
        """``row``'s recorded past was rewritten (:func:`srezero.sim.readings.backdate_ramp`): a rule on it that the latest
        sample breaches has been pending since that past first crossed its threshold, and fires from then."""
        w = self.world
        for i, (rule, ent, r) in enumerate(self._targets):
            if r != row or i in self._pending_i:
                continue
            measured = w.series(row, 0, w.col)
            past = measured * self._sign[i] > self._sthr[i]
            if not past[-1]:
                continue
            calm = self._np.flatnonzero(~past)
            first = int(calm[-1]) + 1 if calm.size else 0
            since = first * TICK_S
            self._pending_i[i] = since
            fired = first + int(-(-rule.for_s // TICK_S))  # the first evaluation at least for_s later
            if fired <= w.col:
                value = float(measured[fired])  # what the rule saw when it fired
                inst = AlertInstance(rule.name, rule.severity, ent, rule.summary.format(value=value), fired * TICK_S)
                self.active[self._keys[i]] = inst
                self.history.append(inst)

    def is_firing(self, name: str) -> bool:
        return any(k[0] == name for k in self.active)

    def force(self, name: str) -> None:
        """Make sure the paging alert is firing when the page goes out."""
        if self.is_firing(name):
            return
        rule, ent = next(((r, e) for r, e, _ in self._targets if r.name == name), (None, None))
        if rule is None:
            rule = Rule(name, "critical", "load_balancer", "error_rate", ">", 0.0, 0, "alert fired")
            ent = "load_balancer"
        row = self.world.row_of.get((ent, rule.metric))
        value = self.world.measured(row) if row is not None else self._computed_value(ent, rule.metric)
        inst = AlertInstance(name, rule.severity, ent, rule.summary.format(value=value), self.world.env.now)
        self.active[(name, ent)] = inst
        self.history.append(inst)

    def listing(self, since: float) -> list[AlertInstance]:
        return [a for a in self.history if a.firing or (a.resolved_at or 0) >= since]
