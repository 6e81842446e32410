"""Message-queue primitives: the symptom is a backlog (the oldest message ages), the causes differ.

Consumer capacity in the model is ``slots / processing_time`` where ``slots = ready workers x
min(concurrency, prefetch)``; poison messages, long jobs duplicated past the visibility timeout and
jobs the full dead-letter queue refuses all occupy slots, and a prefetch below the consumer's ack
batch throttles it to the ack timer.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from srezero.faults.base import FaultMeta, Param, Remedy, RootCause, Signal, register
from srezero.faults.common import CFG, CHANGE, Declared, TunedConfig, baseline, healthy_db_lat, live
from srezero.faults.envelopes import healthy
from srezero.sim.queue import job_seconds
from srezero.sim.rng import stable_int

if TYPE_CHECKING:
    from srezero.sim.world import World

#: the broker's own view of the same rates: PUBLISH/S and DELIVER/S
_BROKER_RATES = Signal("inspect_queue", "any", args=(("view", "queues"),))
#: the head of the queue is its oldest message (inspect_queue messages): ready for 3 minutes or more, the
#: age QueueBacklogGrowing pages at
_HEAD_AGE = Signal("inspect_queue", "any", args=(("view", "messages"),),
                   pattern=r"(?:(?!00)\d\d:\d\d|00:(?:0[3-9]|[1-5]\d)):\d\d\s+ready")
_AGE = Signal("query_metrics", "message_queue", args=(("metric", "queue_age_s"),), description="the backlog ageing",
              alt=(_HEAD_AGE,))
_QUEUE_ALERT = "QueueBacklogGrowing"


def _per_slot_s(w: World) -> float:
    """Seconds one consumer slot spends on a healthy-mix job with the database healthy."""
    return w.state.worker_proc_ms / 1000.0 * (1.0 + healthy_db_lat(w) / 50.0)


def _slots_per_replica(w: World) -> int:
    return min(int(w.services["worker"].config["concurrency"]),
               int(w.services["message_queue"].config["max_inflight"]))


@register
class PoisonMessage(Declared):
    """Malformed messages the consumer cannot parse. The consumer retries them in-process without
    acking, holding its whole prefetch window and extending the message's visibility timeout while it
    works on it (so the broker neither redelivers nor dead-letters it), so each one stalls a worker;
    restarts redeliver them."""

    meta = FaultMeta(
        name="poison_message", layer="queue", category="code_defect", targets=("service:message_queue",),
        description="malformed messages stuck in a consumer retry loop, each stalling a worker",
        params=(Param("count", int, 3, lo=1, hi=8, description="poison messages"),),
        signals=(Signal("search_logs", "worker", pattern="invalid literal", description="the parse failure"),
                 Signal("inspect_queue", "any", args=(("view", "messages"),), pattern="<first>",
                        description="messages held unacked for minutes"),
                 _AGE),
        remedies=(Remedy("dead_letter_message", "move every poison message to jobs.dlq (kept for a fix later)"),),
        wrong_fix_effects="restarting workers redelivers the same messages; scaling adds workers that get stuck "
                          "on them too; purging the queue destroys every pending job",
        example="message_queue", example_params=(("count", 3),), alert=_QUEUE_ALERT,
    )

    def prepare(self, w: World) -> None:
        self.ids = [f"{stable_int(w.seed, 'poison', self.index, i) % 16**6:06x}" for i in range(self.params["count"])]

    def inject(self, w: World) -> None:
        st = w.state
        for i in self.ids:
            st.mq_poison_since[i] = w.now
        st.mq_poison = len(st.mq_poison_ids)

    def subs(self, w: World) -> dict[str, str]:
        return {"first": self.ids[0]}

    def neutralised(self, w: World) -> bool:
        return not any(i in w.state.mq_poison_ids for i in self.ids)

    def why_active(self, w: World) -> str:
        left = [i for i in self.ids if i in w.state.mq_poison_ids]
        return f"poison message(s) {', '.join(left)} still cycle through the consumers"

    def root_cause(self, w: World) -> RootCause:
        return RootCause(entity="worker", category="code_defect",
                         detail=f"poison messages {', '.join(self.ids)} stall consumers in a retry loop",
                         detail_tokens=("poison", "malformed", "invalid literal", *self.ids),
                         aliases=("message_queue",), fault=self.meta.name, layer=self.meta.layer)

    def oracle_fix(self, w: World) -> list[dict[str, Any]]:
        return [{"tool": "dead_letter_message", "args": {"message_id": i}} for i in self.ids]

    def envelope_violations(self, w: World) -> list[list[dict[str, Any]]]:
        out = [[{"tool": "purge_queue", "args": {"queue": "jobs"}}]]
        if len(self.ids) > 1:
            out.append([{"tool": "dead_letter_message", "args": {"message_id": self.ids[0]}}])
        return out


@register
class TooFewConsumers(Declared):
    """The job mix got heavier (month-end invoice rendering) and the consumer pool, sized for the old
    mix, cannot keep up: the backlog grows. Scaling the workers (or their concurrency) is the cure."""

    meta = FaultMeta(
        name="too_few_consumers", layer="queue", category="capacity", targets=("service:worker",),
        description="more queued work than the consumer pool can process",
        params=(Param("capacity_ratio", float, 0.5, lo=0.2, hi=0.9,
                      description="consumer capacity as a share of the incoming work"),),
        signals=(Signal("query_metrics", "message_queue", args=(("metric", "consume_rate"),),
                        description="consumption flat below publishing", alt=(_BROKER_RATES,)),
                 Signal("query_metrics", "message_queue", args=(("metric", "publish_rate"),),
                        description="the incoming rate", alt=(_BROKER_RATES,)),
                 Signal("query_metrics", "worker", args=(("metric", "latency_p50_ms"),),
                        description="jobs taking longer",
                        alt=(Signal("search_logs", "worker", pattern=r"done in \d+ms"),))),
        remedies=(Remedy("scale", "scale worker to at least incoming / per-replica throughput x 1.2 "
                         "(or raise worker concurrency within 4-64)"),),
        wrong_fix_effects="restarting workers drops in-flight jobs; purging the queue destroys them",
        example="worker", example_params=(("capacity_ratio", 0.5),), alert=_QUEUE_ALERT,
    )

    def prepare(self, w: World) -> None:
        self.incoming = max(1.0, baseline(w, "message_queue", "publish_rate"))
        self.cost = 1.0

    def inject(self, w: World) -> None:
        cap = len(live(w, "worker")) * _slots_per_replica(w) / _per_slot_s(w)
        self.cost = max(1.0, cap / (self.incoming * self.params["capacity_ratio"]))
        w.state.worker_job_cost = self.cost

    def _capacity(self, w: World) -> float:
        return len(live(w, "worker")) * _slots_per_replica(w) / (_per_slot_s(w) * w.state.worker_job_cost)

    def neutralised(self, w: World) -> bool:
        return self._capacity(w) >= 1.25 * self.incoming

    def why_active(self, w: World) -> str:
        return f"the workers can process about {self._capacity(w):.0f} jobs/s, less than the queue receives"

    def root_cause(self, w: World) -> RootCause:
        return RootCause(entity="worker", category="capacity",
                         detail="too few consumers for the heavier job mix: the queue backs up",
                         detail_tokens=("consumer", "replica", "scale", "throughput", "backlog"),
                         fault=self.meta.name, layer=self.meta.layer)

    def oracle_fix(self, w: World) -> list[dict[str, Any]]:
        n = len(live(w, "worker"))
        factor = 1.5 * self._capacity_short(w)
        replicas = min(12, math.ceil(n * factor))
        fix = [{"tool": "scale", "args": {"service": "worker", "replicas": replicas}}]
        if replicas < n * factor:  # more replicas than the cluster allows: run more jobs per replica too
            conc = int(w.services["worker"].config["concurrency"])
            fix.append({"tool": "set_config", "args": {"service": "worker", "key": "concurrency",
                                                       "value": min(64, math.ceil(conc * n * factor / replicas))}})
        return fix

    def _capacity_short(self, w: World) -> float:
        """By what factor the consumer pool falls short of the incoming work."""
        return self.incoming / self._capacity(w)

    def envelope_violations(self, w: World) -> list[list[dict[str, Any]]]:
        return [[{"tool": "scale", "args": {"service": "worker", "replicas": len(live(w, "worker")) + 1}}]]


@register
class VisibilityTimeoutLow(TunedConfig):
    """The visibility timeout set below how long the export jobs run: every export is redelivered
    while still running, copies run side by side, and they crowd every other job out."""

    meta = FaultMeta(
        name="visibility_timeout_low", layer="queue", category="misconfiguration", targets=("service:message_queue",),
        description="a visibility timeout shorter than the longest jobs: duplicate processing crowds out the rest",
        params=(Param("long_s", float, 40.0, lo=10.0, hi=55.0, description="how long an export job runs"),
                Param("factor", float, 0.2, lo=0.02, hi=0.7, description="the timeout as a share of that")),
        signals=(replace(CFG, alt=(Signal("inspect_queue", "any", args=(("view", "queues"),),
                                          pattern=r"visibility_timeout <value> s"),)),
                 CHANGE, Signal("search_logs", "worker", pattern="duplicate delivery", description="jobs processed twice"),
                 Signal("query_metrics", "message_queue", args=(("metric", "redeliveries_per_s"),),
                        description="redeliveries",
                        alt=(Signal("inspect_queue", "any", args=(("view", "queues"),),  # REDELIVER/S above 0.0
                                    pattern=r"jobs\s+\d+\s+\d+\s+\d+\s+[\d.]+\s+[\d.]+\s+(?!0\.0\s)\d+\.\d"),))),
        remedies=(Remedy("set_config", "visibility_timeout_s at least 1.5x the longest job and at most 43200"),),
        wrong_fix_effects="scaling adds workers that run more duplicates; restarts redeliver everything in flight",
        example="message_queue", example_params=(("long_s", 40.0), ("factor", 0.2)), alert=_QUEUE_ALERT,
    )
    key = "visibility_timeout_s"
    reason = "retry stuck jobs sooner"

    def prepare(self, w: World) -> None:
        super().prepare(w)
        st = w.state
        slots = len(live(w, "worker")) * _slots_per_replica(w)
        spare = max(0.0, slots - baseline(w, "message_queue", "publish_rate") * _per_slot_s(w))
        st.mq_long_s = self.params["long_s"]
        # healthy exports keep 40% of the slots the normal mix leaves free busy: once the timeout is fixed,
        # a pool that runs near its capacity still has headroom to drain the backlog the duplicates built
        st.mq_long_rate = 0.4 * spare / st.mq_long_s

    def compute_bad(self, w: World) -> Any:
        return max(1, int(self.params["long_s"] * self.params["factor"]))

    def probes(self, w: World) -> tuple[Any, Any]:
        return int(self.params["long_s"] * 0.9), 100_000


@register
class InflightLimitLow(TunedConfig):
    """The per-consumer prefetch cut below the consumer's ack batch: each worker then waits for its
    ack timer before the broker sends more, and throughput collapses to prefetch per second."""

    meta = FaultMeta(
        name="inflight_limit_low", layer="queue", category="misconfiguration", targets=("service:message_queue",),
        description="an in-flight (prefetch) limit below the consumers' ack batch throttles consumption",
        params=(Param("ratio", float, 0.5, lo=0.1, hi=0.9, description="throughput left as a share of the load"),),
        signals=(replace(CFG, alt=(Signal("inspect_queue", "any", args=(("view", "queues"),),
                                          pattern=r"prefetch <value>(?![\w.])"),
                                   Signal("inspect_queue", "any", args=(("view", "consumers"),),
                                          pattern=r"worker-\w+\s+<value>\s"))),
                 CHANGE, Signal("query_metrics", "message_queue", args=(("metric", "consume_rate"),),
                                description="consumption capped", alt=(_BROKER_RATES,)), _AGE),
        remedies=(Remedy("set_config", "max_inflight at least the consumers' ack batch (inspect_queue consumers "
                         "shows it) and at most 5000"),),
        wrong_fix_effects="scaling helps only in proportion; restarts redeliver in-flight work",
        example="message_queue", example_params=(("ratio", 0.5),), alert=_QUEUE_ALERT,
    )
    key = "max_inflight"
    reason = "fairer dispatch across consumers"

    def compute_bad(self, w: World) -> Any:
        incoming = max(1.0, baseline(w, "message_queue", "publish_rate"))
        per = incoming * self.params["ratio"] * w.state.mq_ack_flush_s / max(1, len(live(w, "worker")))
        return max(1, min(w.state.mq_ack_batch - 1, int(per)))

    def probes(self, w: World) -> tuple[Any, Any]:
        return w.state.mq_ack_batch - 1, 100_000


@register
class DeadLetterOverflow(Declared):
    """Nobody drained the dead-letter queue for weeks; it reached its max-length. New dead letters
    are refused and requeued, so every job that exhausts its retries loops through the consumers."""

    meta = FaultMeta(
        name="dlq_overflow", layer="queue", category="resource_exhaustion", targets=("service:message_queue",),
        description="a full dead-letter queue refuses dead letters, which then loop through the consumers",
        params=(Param("fail_pct", float, 3.0, lo=0.5, hi=20.0, description="percent of jobs that always fail"),),
        signals=(Signal("query_metrics", "message_queue", args=(("metric", "dlq_depth"),),
                        description="the dead-letter queue at its cap",
                        alt=(Signal("inspect_queue", "any", args=(("view", "queues"),), pattern=r"jobs\.dlq\s+<cap>\s"),)),
                 Signal("search_logs", "message_queue", pattern="reached max-length", description="refused dead letters"),
                 Signal("get_config", "message_queue", pattern=r"dlq_max_messages = <cap>\b", description="the cap",
                        alt=(Signal("inspect_queue", "any", args=(("view", "queues"),),
                                    pattern=r"\s<cap> \(overflow reject-publish\)"),))),
        remedies=(Remedy("set_config", "dlq_max_messages at least twice the dead letters held plus 10000, at most "
                         "1000000 (the broker keeps them in memory)"),),
        wrong_fix_effects="purging the dead-letter queue destroys the failed jobs; restarts change nothing; "
                          "scaling adds workers for the loop to occupy",
        example="message_queue", example_params=(("fail_pct", 3.0),), alert=_QUEUE_ALERT,
    )

    def prepare(self, w: World) -> None:
        self.cap = int(w.services["message_queue"].config["dlq_max_messages"])

    def inject(self, w: World) -> None:
        w.state.mq_fail_frac = self.params["fail_pct"] / 100.0
        w.state.mq_dlq = max(w.state.mq_dlq, self.cap - 20.0)

    def subs(self, w: World) -> dict[str, str]:
        return {"cap": str(self.cap)}

    def neutralised(self, w: World) -> bool:
        return healthy(w, "message_queue", "dlq_max_messages", self.cap)

    def why_active(self, w: World) -> str:
        c = w.services["message_queue"].config["dlq_max_messages"]
        return f"jobs.dlq holds {w.state.mq_dlq:.0f} of at most {c}; refused dead letters keep looping"

    def root_cause(self, w: World) -> RootCause:
        return RootCause(entity="message_queue.dlq_max_messages", category="resource_exhaustion",
                         detail=f"the dead-letter queue reached its max-length ({self.cap}) and refuses dead letters",
                         detail_tokens=("dlq", "dead-letter", "dead letter", "max-length", "dlq_max_messages"),
                         aliases=("message_queue",), fault=self.meta.name, layer=self.meta.layer)

    def oracle_fix(self, w: World) -> list[dict[str, Any]]:
        return [{"tool": "set_config", "args": {"service": "message_queue", "key": "dlq_max_messages",
                                                "value": 2 * self.cap + 20_000}}]

    def envelope_violations(self, w: World) -> list[list[dict[str, Any]]]:
        def cap(v: int) -> list[dict[str, Any]]:
            return [{"tool": "set_config", "args": {"service": "message_queue", "key": "dlq_max_messages", "value": v}}]

        return [cap(self.cap + 200), cap(5_000_000), [{"tool": "purge_queue", "args": {"queue": "jobs.dlq"}}]]


#: the oracle resolves once the oldest queued message is this share of the SLO's age: still draining then,
#: it is well inside the SLO when verification starts judging
DRAIN_TARGET = 0.75


def drain_wait(w: World) -> list[dict[str, Any]]:
    """After a fix, watch a queue backlog drain before resolving (what a careful engineer does).

    Planned at the page, run after the fix: ``wait`` calls that end at the first sample of the oldest
    message's age under :data:`DRAIN_TARGET` of the SLO (at once if it already is). The backlog at the
    page sizes how many 10-minute watches the plan holds; it is only an estimate (the backlog grows until
    the fix lands, and the healthy pool's spare capacity varies with the day's traffic), which is why
    the watch ends on what the queue shows, not on a fixed time. A short, young queue needs no watch."""
    st = w.state
    slo = w.spec.slo.queue_age_s
    depth = st.mq_depth
    if depth <= 1500 and st.mq_age_s <= slo / 4:
        return []
    workers = w.services["worker"]
    per_replica = min(workers.config["concurrency"], w.services["message_queue"].config["max_inflight"])
    spare = len(workers.replicas) * per_replica / job_seconds(st, st.db_base_lat_ms) - st.base_rps * st.publish_frac
    watches = max(1, min(3, math.ceil((depth / max(spare, 1.0) + 300.0) / 600.0)))
    watch = {"seconds": 600, "target": "message_queue", "metric": "queue_age_s", "below": round(slo * DRAIN_TARGET, 1)}
    return [{"tool": "wait", "args": dict(watch)} for _ in range(watches)]
