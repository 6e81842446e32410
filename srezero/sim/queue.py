"""The message queue and its workers each tick: publish, consume capacity, poison messages,
redelivery, dead letters, backlog and its age (Little's law), and per-worker metrics.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from srezero.sim.clock import TICK_S
from srezero.sim.metrics import PACK10
from srezero.sim.nodes import link_loss

if TYPE_CHECKING:
    from srezero.sim.components import Replica
    from srezero.sim.state import ModelState
    from srezero.sim.world import World


def job_seconds(st: ModelState, db_lat: float) -> float:
    """Seconds a worker spends on one job when the database answers in ``db_lat`` ms."""
    return st.worker_proc_ms / 1000.0 * (1.0 + db_lat / 50.0) * st.worker_job_cost


def queue_tick(w: World, published: float, db_lat: float, db_err_prev: float, db_up: bool, db_hosts_ok: bool,
               cache_timeouts: float):
    """Advance the queue and workers by one tick; returns what the database and aggregates need.
    ``cache_timeouts``: the share of the workers' cache reads that timed out this tick (0 unless a
    worker release reads the cache)."""
    st = w.state
    S = w.services
    vals = w.vals
    mq = S["message_queue"]
    mqc = mq.config
    mq_rep = mq.replicas[0]
    mq_up = mq_rep.state == "Running" and mq_rep.node.up
    wk = S["worker"]
    wkc = wk.config
    workers_ready = wk.ready_replicas()
    proc_s = job_seconds(st, db_lat)
    per_rep = min(wkc["concurrency"], mqc["max_inflight"])
    # a worker behind a lossy link spends its slots waiting out timeouts on the broker and the database
    lossy = {r.name: link_loss(r.node) for r in workers_ready if r.node.nic_loss > 0 or r.node.nic_flapping}
    working = len(workers_ready) - sum(lossy.values())
    slots = working * per_rep
    vt = mqc["visibility_timeout_s"]
    # a poison message pins the consumer that took it (it retries in-process, holding its prefetch);
    # jobs the full dead-letter queue refused loop through the consumers forever
    busy = st.mq_poison * per_rep + st.mq_cycling
    copies = 1.0
    if st.mq_long_rate:  # long jobs hold slots; past the visibility timeout, copies run side by side
        copies = st.mq_long_s / (vt if vt > 1 else 1) if vt < st.mq_long_s else 1.0
        busy += st.mq_long_rate * st.mq_long_s * copies
    poison_slots = min(slots, busy)
    consume_cap = max(0.0, slots - poison_slots) / proc_s if mq_up else 0.0
    if mqc["max_inflight"] < st.mq_ack_batch:  # a prefetch below the ack batch waits for the ack flush timer
        ack_cap = working * mqc["max_inflight"] / st.mq_ack_flush_s
        consume_cap = ack_cap if ack_cap < consume_cap else consume_cap
    redeliver = 0.0
    if vt < proc_s * 3:
        redeliver = min(1.0, (proc_s * 3 - vt) / (proc_s * 3))
    incoming = published if mq_up else 0.0
    depth = st.mq_depth + incoming * TICK_S
    consumed = min(depth / TICK_S, consume_cap / (1.0 + redeliver * 0.5)) if consume_cap > 0 else 0.0
    depth = max(0.0, depth - consumed * TICK_S)
    st.mq_depth = depth
    st.mq_consumed = consumed
    if st.mq_fail_frac or st.mq_cycling:  # jobs out of attempts go to the dead-letter queue while it has room
        room = mqc["dlq_max_messages"] - st.mq_dlq
        dead = consumed * st.mq_fail_frac * TICK_S + st.mq_cycling
        moved = dead if dead < room else (room if room > 0 else 0.0)
        st.mq_dlq += moved
        st.mq_cycling = dead - moved
    # Little's law: the backlog over its drain rate, or over its fill rate while nothing drains. With
    # neither (no consumers and no publishers), the oldest message just grows a tick older, and it never
    # grows faster than that.
    if consumed > 0.5:
        age = depth / consumed
    elif depth <= 1:
        age = 0.0
    elif incoming >= 1.0:
        age = depth / incoming
    else:
        age = st.mq_age_s + TICK_S
    if age > st.mq_age_s + TICK_S:  # the oldest message ages a tick per tick, however fast the backlog grows
        age = st.mq_age_s + TICK_S
    st.mq_age_s = age
    worker_db_writes = consumed * 1.0
    wk_err = db_err_prev if db_up and db_hosts_ok else 1.0
    wk_cpu_limit = float(wkc["cpu_limit"])
    wk.note_quota(w.env.now, wk_cpu_limit)
    proc_ms = proc_s * 1000.0
    dup = redeliver if redeliver > 0.05 and vt < proc_s * 3 else 0.0
    if copies > 1.0:
        dup = 0.3
    wk_conns = float(min(wkc["concurrency"], 4))
    wk_mem_limit = float(wkc["memory_limit_mb"])
    failed = 0.0  # jobs failed per second, when some worker's link loses them or its code fails them
    faulty = False
    for rep in wk.replicas:
        base = rep.row
        if rep.state != "Running":
            rep.rps = rep.err = rep.cpu = 0.0
            rep.err_causes = {"crash": 1.0} if rep.state == "CrashLoopBackOff" else {}
            PACK10(vals, base * 8, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, rep.restarts)
            continue
        net = lossy.get(rep.name, 0.0) if lossy else 0.0
        share = consumed * (1.0 - net) / working if working > 0 else 0.0
        causes = {}
        if net:
            causes["net_loss"] = net
        if st.mq_poison and rep is workers_ready[0]:
            causes["poison"] = 1.0
        if wk_err > 0:
            causes["db_error"] = wk_err
        if dup:
            causes["duplicate"] = dup
        if st.mq_cycling > 0.5:
            causes["dlq_rejected"] = 0.5
        if cache_timeouts:
            causes["cache_timeout"] = cache_timeouts
        # a release with a code defect fails that share of the jobs its pods run (a rollout spreads it)
        release = wk.release_of(rep)
        defect = release.defect_rate if release.defect == "endpoint_errors" else 0.0
        if defect:
            causes["code_defect"] = defect
            faulty = True
        if rep.mem_mb > rep.base_mem_mb * 1.5 and rep.mem_mb > 0.7 * wk_mem_limit:  # a heap near its limit thrashes
            causes["gc_pressure"] = 4.0 * (rep.mem_mb / wk_mem_limit - 0.7)  # as the web tier's (model.tick)
        cpu = share * st.worker_proc_ms / 1000.0 * 0.4 * st.worker_job_cost + 0.03
        err = 1.0 - (1.0 - wk_err) * (1.0 - net) * (1.0 - defect) if net or defect else wk_err
        failed += share * err
        rep.rps = share
        rep.err = err
        rep.cpu = cpu if cpu < wk_cpu_limit else wk_cpu_limit
        rep.err_causes = causes
        PACK10(vals, base * 8, share, err, proc_ms * 0.8, proc_ms * 1.9, proc_ms * 2.8, rep.cpu,
               rep.mem_mb, wk_conns, 120.0, rep.restarts)
    if (lossy or faulty) and consumed > 0:
        wk_err = failed / consumed
    return (mq, mq_rep, mq_up, wk, workers_ready, incoming, depth, age, consumed, redeliver, copies, proc_s,
            worker_db_writes, wk_err)


def poison_held_by(w: World, rep: Replica) -> list[str]:
    """The poison messages a running worker holds: stuck message k sits with running worker k (modulo their
    number), as the broker's consumers view shows it."""
    running = [r for r in w.services["worker"].replicas if r.state == "Running"]
    if rep not in running:
        return []
    at = running.index(rep)
    return [pid for k, pid in enumerate(w.state.mq_poison_ids) if k % len(running) == at]


def release_held(w: World, rep: Replica) -> None:
    """A worker going away (restart, crash, eviction, scale-down) closes its channel: the broker redelivers
    the poison messages it held, at once, to another consumer, where each gets stuck again."""
    if rep.kind != "worker" or not w.state.mq_poison:
        return
    for pid in poison_held_by(w, rep):
        w.state.mq_poison_redelivered[pid] = w.state.mq_poison_redelivered.get(pid, 0) + 1
