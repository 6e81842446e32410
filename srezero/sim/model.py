"""The fluid model: one tick turns capacity, load and component state into telemetry.

Nothing simulates individual requests. Each tick computes rates and fractions per replica from the
previous tick's state (that one-tick lag is what lets retry storms latch into a metastable state;
only a saturated database's latency is solved within the tick, srezero.sim.database), records a
column of metrics, and emits discrete events (OOM kills, crash-loop restarts, kernel messages) when
thresholds are crossed. Dependencies propagate downstream to upstream: cache misses load the
database, a slow database slows the web tier, a stalled consumer grows the queue.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from srezero.sim import metrics as M
from srezero.sim.cache import cache_reads, cache_server
from srezero.sim.clock import TICK_S
from srezero.sim.database import (
    SATURATED,
    pool_shortfall,
    queueing_latency,
    settle_latency,
    thread_load,
    with_inertia,
)
from srezero.sim.lifecycle import lifecycle
from srezero.sim.metrics import PACK3, PACK10
from srezero.sim.nodes import link_loss, node_limits, proxy_failures, update_nodes
from srezero.sim.queue import queue_tick
from srezero.sim.replication import replicate

if TYPE_CHECKING:
    from srezero.sim.world import World

#: How long a client waits for the edge before it gives up (the proxy logs the request then, as a 499).
CLIENT_GIVE_UP_MS = 60_000.0


def tick(w: World) -> None:
    """Compute one tick of the whole system and record it."""
    t = w.env.now
    st = w.state
    S = w.services
    vals = w.vals
    lifecycle(w, t)

    # --- clients and load balancer ------------------------------------------------------------
    rps_in = st.base_rps * st.diurnal(t) * st.surge * w.traffic_noise[w.col]
    lb = S["load_balancer"]
    lbc = lb.config
    web = S["web_server"]
    webc = web.config
    lb_rep = lb.replicas[0]
    lb_up = lb_rep.state == "Running"
    hc_ok = lbc["health_check_path"] == st.health_path
    backends = []
    weights = []
    if hc_ok:
        for r in web.replicas:
            if r.state == "Running" and r.node.nic_loss < 0.9:
                backends.append(r)
                wt = float(lbc.get("backend_weight." + r.name, 1))
                weights.append(wt if wt > 0.0 else 0.0)
    wsum = sum(weights)
    share_of = {r.name: wt / wsum for r, wt in zip(backends, weights)} if wsum > 0 else {}
    if share_of and lbc["sticky_sessions"]:
        first = backends[0].name
        skew = st.sticky_skew
        share_of = {k: v * (1.0 - skew) + (skew if k == first else 0.0) for k, v in share_of.items()}
    lb_causes: dict[str, float] = {}
    if not hc_ok:
        lb_causes["hc_fail"] = 1.0
    tls_fail = 1.0 if lbc["tls_cert_days_left"] <= 0 else 0.0
    if tls_fail:
        lb_causes["tls_expired"] = 1.0
    active = rps_in * (st.lb_lat_ms / 1000.0 + 0.25)
    conn_reject = max(0.0, 1.0 - lbc["max_connections"] / active) if active > 0 else 0.0
    if conn_reject > 0.001:
        lb_causes["conn_limit"] = conn_reject
    accepted = rps_in * (1.0 - tls_fail) * (1.0 - conn_reject) if lb_up else 0.0
    no_backend = 1.0 if (wsum <= 0.0 or not lb_up) else 0.0
    if no_backend:
        lb_causes["no_upstream"] = 1.0
    idle_to = lbc["idle_timeout_s"] * 1000.0
    # the slow tail of requests (exports, reports) is cut when it outlives the idle timeout
    idle_cut = st.slow_req_frac * math.exp(-idle_to / st.slow_req_ms) if idle_to < 20.0 * st.slow_req_ms else 0.0
    if idle_cut > 1e-4:
        lb_causes["upstream_timeout"] = idle_cut
    else:
        idle_cut = 0.0
    # what the balancer's node does to the requests it proxies (its NIC and kernel tables)
    lb_fail, lb_wait = proxy_failures(lb_rep.node, lb_causes) if lb_up else (0.0, 0.0)

    # --- database (reads last tick's latency for client-side behaviour) --------------------------
    db = S["database"]
    dbc = db.config
    primary = w.topo.db_primary()
    db_up = primary.state == "Running" and primary.node.up
    db_lat = st.db_lat_ms
    # queries to a primary behind a lossy NIC time out at the client, and each retry is another draw
    db_net = link_loss(primary.node) if db_up else 0.0
    timeout_ms = float(webc["db_timeout_ms"])
    retries = int(webc["db_retries"])
    pool = int(webc["db_pool_size"])
    db_hosts_ok = webc["db_host"] == st.db_addr

    # --- cache ---------------------------------------------------------------------------------
    cache = S["cache"]
    cc = cache.config
    cache_rep = cache.replicas[0]
    cache_up = cache_rep.state == "Running" and cache_rep.node.up
    auth_ok = st.cache_password_ok and webc["cache_auth_secret"] == cc["auth_secret"]
    cache_reachable = cache_up and webc["cache_host"] == st.cache_addr and auth_ok
    # a miss refills the cache only when its database read succeeds (last tick's outcome)
    fills = max(0.0, 1.0 - st.db_err - st.db_timeout_frac - db_net ** (retries + 1)) if db_up and db_hosts_ok else 0.0
    hit, cache_lat, cache_to, served_hit, served_lat, cover, warm = cache_reads(
        st, t, cc, cache_rep, web.rps, cache_reachable, cache_up, fills)

    # --- web replicas -------------------------------------------------------------------------
    webs = web.replicas
    web_rps_total = web_err_w = web_lat_w = 0.0
    db_reads = db_writes = pool_used_total = 0.0
    db_offered = 0.0  # queries the web tier would send if its pools were not exhausted
    published = 0.0
    db_err_prev = st.db_err
    p_slow = st.db_timeout_frac  # queries too slow for the client's timeout (last tick's latency)
    p_to = 1.0 - (1.0 - p_slow) * (1.0 - db_net) if db_net else p_slow  # ... or lost on the primary's NIC
    read_q = st.read_queries
    if warm < 0.97 and cache_reachable and not webc.get("cache_coalescing", True):
        # no request coalescing: every request that misses a cold key while its fill is in flight queries
        # the database too, so the herd grows with database latency (the feedback loop). A fill lands only
        # if its request succeeds; while the database or the pool sheds or times out queries, cold keys
        # stay cold and warm ones expire unrefilled (a stall above 1 cools the cache)
        herd = 12.0 * (1.0 - warm) * st.db_lat_ms / st.db_base_lat_ms
        read_q *= 1.0 + (herd if herd < 8.0 else 8.0)
        fail = p_to + db_err_prev + web.err
        if fail > 0.05 and st.cache_ready_since < t:
            stall = 4.0 * fail
            st.cache_ready_since = min(t, st.cache_ready_since + TICK_S * (stall if stall < 1.5 else 1.5))
    q_per_req = (1.0 - hit) * read_q + st.write_frac
    cpu_ms = st.web_cpu_ms
    mem_limit = float(webc["memory_limit_mb"])
    threads = webc["workers"]
    rate_limit = webc["rate_limit_rps"]
    fd_limit = webc["max_open_files"]
    shared_defect = st.endpoint_defect_rate
    if st.flag_bug_key and webc.get(st.flag_bug_key):  # a flag that exercises a broken code path
        shared_defect += st.flag_bug_rate
    mq_rep = S["message_queue"].replicas[0]
    mq_wrong = webc["queue_host"] != st.mq_addr
    # publishes to a broker behind a lossy NIC time out; to a wrong address they are refused
    mq_net = link_loss(mq_rep.node) if not mq_wrong and mq_rep.state == "Running" else 0.0
    pub_fail = st.publish_frac if mq_wrong else st.publish_frac * mq_net
    # loop invariants: what every web replica sees of its dependencies this tick
    db_part = (1.0 - hit) * read_q + st.write_frac
    touches_db = db_part if db_part < 1.0 else 1.0
    amp = 1.0 + retries * p_to  # retried queries hit the database again: the retry-storm amplifier
    # each attempt lost on the primary's NIC waits out the client timeout first
    lost_ms = timeout_ms * sum(db_net ** k for k in range(1, retries + 2)) if db_net else 0.0
    dep_causes: dict[str, float] = {}
    db_fail = 0.0
    if not db_hosts_ok or not db_up:
        db_fail = touches_db
        dep_causes["db_unavailable"] = db_fail
    else:
        if db_err_prev > 0:
            for k, v in st.db_err_causes.items():
                dep_causes[k] = v * touches_db
            db_fail = db_err_prev * touches_db
        if p_to > 0.001:
            after_retries = p_to ** (retries + 1) * touches_db
            lost = db_net / (db_net + p_slow)  # 0 unless the primary's link loses packets
            if lost < 1.0:
                dep_causes["db_timeout"] = after_retries * (1.0 - lost)
            if lost > 0.0:
                dep_causes["db_net"] = after_retries * lost
            db_fail += after_retries
    if db_fail > 1.0:
        db_fail = 1.0
    if cache_to > 0:
        dep_causes["cache_timeout"] = cache_to
    if not cache_reachable:
        bad_client = not auth_ok or webc["cache_host"] != st.cache_addr
        dep_causes["cache_unavailable" if bad_client else "cache_down"] = 0.0
    if pub_fail:  # requests that enqueue a job fail when the broker cannot be reached
        dep_causes["mq_unavailable" if mq_wrong else "mq_timeout"] = pub_fail
    if idle_cut:
        dep_causes["upstream_timeout"] = idle_cut
    cpu_limit = float(webc["cpu_limit"])
    web.note_quota(t, cpu_limit)
    web_own = st.web_own_ms
    write_frac = st.write_frac
    publish_frac = 0.0 if mq_wrong else st.publish_frac
    pub_wait = 0.0 if mq_wrong else pub_fail  # a refused publish fails at once, a lost one times out
    idle_rows = (0.0, 0.0, 0.0, 0.0, 0.0)
    # each running replica: (replica, its requests, causes, code-defect rate, rate-limited share, served,
    # CPU cap, CPU-bound rate, own ms, GC factor)
    running = []
    for rep in webs:
        if rep.state != "Running":
            rep.rps = rep.err = 0.0
            rep.cpu = 0.02 if rep.state != "Terminated" else 0.0
            rep.conns = 0.0
            rep.err_causes = {"crash": 1.0} if rep.state == "CrashLoopBackOff" else {}
            PACK10(vals, rep.row * 8, *idle_rows, rep.cpu, rep.mem_mb if rep.state != "Terminated" else 0.0,
                   0.0, 0.0, rep.restarts)
            continue
        node = rep.node
        r = accepted * share_of.get(rep.name, 0.0) * (1.0 - no_backend)
        causes = dict(dep_causes) if dep_causes else {}
        # a release's code defect fails requests only on the pods that run it: a rollout spreads it pod by pod
        release = web.release_of(rep)
        defect = (release.defect_rate if release.defect in ("endpoint_errors", "flag_bug") else 0.0) + shared_defect
        if defect > 0:
            causes["code_defect"] = defect
        limited = 0.0
        if rate_limit > 0 and r > rate_limit:
            limited = 1.0 - rate_limit / r
            causes["rate_limited"] = limited
        thermal = node.thermal_factor
        free = node.cores - node.cpu_used * 0.5
        cpu_cap = (cpu_limit if cpu_limit < free else free) * thermal
        gc = 1.0
        if rep.mem_mb > rep.base_mem_mb * 1.5 and rep.mem_mb > 0.7 * mem_limit:  # a heap near its limit thrashes in GC
            gc = 1.0 + 20.0 * (rep.mem_mb / mem_limit - 0.7)
        cap_cpu = (cpu_cap if cpu_cap > 0.05 else 0.05) * 1000.0 / (cpu_ms * gc)
        if gc > 1.0:
            causes["gc_pressure"] = (gc - 1.0) / 5.0
        running.append((rep, r, causes, defect, limited, r * (1.0 - limited), cpu_cap, cap_cpu,
                        web_own / thermal * gc, gc))

    # --- the database's cost this tick, and the latency the web tier sees ------------------------
    conns_total = float(pool * len(running) + len(S["worker"].ready_replicas()) * 4 + 6)
    dbd = primary.node.data_disk
    max_conns = dbc["max_connections"]
    db_causes: dict[str, float] = {}
    refused = 0.0
    if conns_total > max_conns:
        refused = 1.0 - max_conns / conns_total
        db_causes["too_many_conns"] = refused
    conn_overhead = 1.0 + min(conns_total, max_conns) / 2500.0
    disk_f = 1.0 + max(0.0, dbd.latency_ms / 0.3 - 1.0) * 0.35
    bloat_f = 1.0 + max(0.0, st.db_dead_tuple_pct - 5.0) / 15.0
    cost = st.db_query_cost * bloat_f * disk_f * conn_overhead
    lock_ms = st.db_lock_ms
    if st.db_missing_index:  # reads that needed the index scan the table
        cost *= st.db_scan_cost
        db_causes["slow_query"] = 0.05
    elif st.db_dead_tuple_pct > 20.0:
        db_causes["slow_query"] = 0.02
    if t < st.index_build_until or t < st.vacuum_until:  # maintenance competes for I/O
        cost *= 1.15
        if st.vacuum_full and t < st.vacuum_until:  # VACUUM FULL holds an exclusive lock on the table
            lock_ms += 0.6 * float(dbc["statement_timeout_ms"])
    cap = st.db_capacity_qps * primary.node.thermal_factor / cost
    base_lat = st.db_base_lat_ms * cost + lock_ms
    stmt_to = float(dbc["statement_timeout_ms"])

    def web_downstream(lat: float) -> tuple[float, float]:
        """Milliseconds a request spends below the web tier, and a query holds its pool connection."""
        eff = lat if lat < timeout_ms else timeout_ms
        return cache_lat + db_part * eff * amp + (1.0 if not cache_up else 0.0) + db_part * lost_ms, eff + lost_ms

    if st.db_util > SATURATED and db_up and db_hosts_ok:  # solve the closed loop instead of reading last tick
        def demand(lat: float) -> tuple[float, float]:
            down, hold = web_downstream(lat)
            kept = offered = st.db_worker_q
            for rep, _, _, _, _, served, _, cap_cpu, own_ms, _ in running:  # as the pass below sends them
                work = served * (1.0 - thread_load(served, cap_cpu, own_ms, down, threads, rep.load_prev)[3])
                offered += work * amp * q_per_req
                kept += work * amp * (1.0 - pool_shortfall(work * q_per_req * (hold / 1000.0),
                                                           pool - rep.leaked_conns)) * q_per_req
            return kept, offered
        db_lat = settle_latency(demand, db_lat, cap, base_lat, conns_total, max_conns, stmt_to)

    base_down, hold_db = web_downstream(db_lat)
    for rep, r, causes, defect, limited, served, cpu_cap, cap_cpu, own_ms, gc in running:
        base = rep.row
        node = rep.node
        lat_s, u_raw, u, shed = thread_load(served, cap_cpu, own_ms, base_down, threads, rep.load_prev)
        rep.load_prev = u_raw  # queued requests carry over: utilisation moves halfway to its new level each tick
        if shed > 0:
            causes["overload"] = shed
        qf = 1.0 / (1.0 - (u if u < 0.95 else 0.95))
        work = served * (1.0 - shed)
        # a connection is held until the query returns or the client gives up
        need = work * q_per_req * (hold_db / 1000.0)
        pool_wait = pool_shortfall(need, pool - rep.leaked_conns)  # leaked connections never come back
        need += rep.leaked_conns
        if pool_wait > 0.001:
            causes["db_pool_timeout"] = pool_wait
        in_use = need if need < pool else float(pool)
        pool_used_total += in_use
        fds = 180.0 + in_use + served * lat_s * 1.2
        emfile = 0.0
        if fds > fd_limit:
            emfile = 1.0 - fd_limit / fds
            causes["emfile"] = emfile
            fds = float(fd_limit)
        net = 0.0
        if node.nic_loss > 0 or node.nic_flapping:
            net = causes["net_loss"] = link_loss(node)
        skew = 0.0
        if node.clock_skew_s > 30.0 or node.clock_skew_s < -30.0:
            skew = 0.6
            causes["clock_skew"] = skew
        conntrack_drop = 0.0
        if node.conntrack_used > node.conntrack_max:
            conntrack_drop = 1.0 - node.conntrack_max / node.conntrack_used
            causes["conntrack"] = conntrack_drop
        sysf = 0.0
        if node.fds_used > node.fd_max or node.ports_used > node.ephemeral_ports or node.root_full:
            sysf = node_limits(node, causes)
        pw = pool_wait * touches_db
        err = 1.0 - (1.0 - limited) * (1.0 - shed) * (1.0 - (pw if pw < 1.0 else 1.0)) * (1.0 - db_fail) \
            * (1.0 - emfile) * (1.0 - net) * (1.0 - skew) * (1.0 - conntrack_drop) * (1.0 - defect) \
            * (1.0 - pub_fail) * (1.0 - idle_cut) * (1.0 - sysf)
        mean_ms = own_ms * qf + base_down + (timeout_ms * pool_wait if pool_wait > 0 else 0.0)
        if mean_ms > idle_to:
            causes["upstream_timeout"] = 0.5
            err = err if err > 0.5 else 0.5
        to_frac = p_to * touches_db
        if pw > to_frac:
            to_frac = pw
        if shed > to_frac:
            to_frac = shed
        # lost packets and dropped SYNs fail as i/o and connect timeouts: those requests wait before they fail
        if net > to_frac:
            to_frac = net
        if conntrack_drop > to_frac:
            to_frac = conntrack_drop
        if pub_wait > to_frac:
            to_frac = pub_wait
        # M.pcts, inlined: this loop is the hottest code in the simulator
        uc = 0.98 if u > 0.98 else u
        p50 = mean_ms * 0.8
        p95 = mean_ms * (1.7 + 1.5 * uc)
        p99 = mean_ms * (2.4 + 3.0 * uc)
        if to_frac > 0.01:
            tail = timeout_ms if timeout_ms > mean_ms else mean_ms
            p99 = tail if tail > p99 else p99
            if to_frac > 0.05:
                p95 = tail if tail > p95 else p95
            if to_frac > 0.5:
                p50 = tail if tail > p50 else p50
        cpu = work * cpu_ms * gc / 1000.0
        rep.rps = r
        rep.err = err
        rep.lat_ms = mean_ms
        rep.cpu = (cpu if cpu < cpu_cap else cpu_cap) + 0.05
        rep.conns = in_use
        rep.fds = int(fds)
        rep.err_causes = causes
        PACK10(vals, base * 8, r, err, p50, p95, p99, rep.cpu, rep.mem_mb, in_use, fds, rep.restarts)
        web_rps_total += r
        web_err_w += r * err
        web_lat_w += r * mean_ms
        keep = work * amp * (1.0 - pool_wait)
        db_offered += work * amp * q_per_req
        db_reads += keep * (1.0 - hit) * read_q
        db_writes += keep * write_frac
        published += served * (1.0 - err) * publish_frac
    web_err = web_err_w / web_rps_total if web_rps_total > 0 else (1.0 if accepted > 0 else 0.0)
    web_lat = web_lat_w / web_rps_total if web_rps_total > 0 else 0.0
    ready_webs = len(running)
    if accepted > 0 and web_rps_total <= 0:
        lb_causes["no_upstream"] = 1.0

    # --- workers and queue (srezero.sim.queue) ---------------------------------------------------
    # a worker's query lost on the primary's link fails its job (workers do not retry in-process)
    worker_db_err = 1.0 - (1.0 - db_err_prev) * (1.0 - db_net) if db_net else db_err_prev
    (mq, mq_rep, mq_up, wk, workers_ready, incoming, depth, age, consumed, redeliver, copies, proc_s,
     worker_db_writes, wk_err) = queue_tick(w, published, db_lat, worker_db_err, db_up, db_hosts_ok,
                                  cache_to if st.workers_read_cache else 0.0)

    # --- database -----------------------------------------------------------------------------
    total_q = db_reads + db_writes + worker_db_writes
    new_lat, db_u = queueing_latency(total_q, db_offered + worker_db_writes, cap, base_lat, conns_total, max_conns,
                                     stmt_to)
    overload = 1.0 - 1.0 / db_u if db_u > 1.0 else 0.0
    if overload > 0.001:
        db_causes["statement_timeout"] = overload
    if lock_ms > 50:
        db_causes["lock_wait"] = min(1.0, lock_ms / stmt_to)
    io_err = dbd.read_error_rate
    if io_err > 0 and db_up:
        db_causes["io_error"] = io_err
        dbd.io_errors += int(db_reads * io_err * TICK_S)
        if dbd.io_errors > 0:
            w.dmesg(primary.node, f"blk_update_request: I/O error, dev {dbd.device}, sector {w.sector(dbd)} "
                    "op 0x0:(READ) flags 0x0 phys_seg 1 prio class 0")
    if st.db_slots:  # an inactive replication slot keeps every WAL segment written since it stopped
        wal = (db_writes + worker_db_writes) * TICK_S * st.wal_gb_per_write
        for slot in st.db_slots.values():
            if not slot[0]:
                slot[1] += wal
                dbd.used_gb += wal
    disk_full = dbd.used_frac >= 0.999
    write_share = (db_writes + worker_db_writes) / total_q if total_q > 0 else 0.0
    if disk_full:
        db_causes["disk_full"] = write_share
    db_err = 1.0 - (1.0 - refused) * (1.0 - overload) * (1.0 - io_err) * (1.0 - (write_share if disk_full else 0.0)) \
        * (1.0 - db_causes.get("lock_wait", 0.0) * 0.5)
    if not db_up:
        db_err = 1.0
        db_causes = {"db_unavailable": 1.0}
    st.db_err = db_err
    st.db_err_causes = {k: v for k, v in db_causes.items() if k != "too_many_conns" and k != "slow_query"}
    if db_net and db_up:  # the server sees its clients' connections break (logged, not an error it returns)
        db_causes["client_net"] = db_net
    if refused:
        st.db_err_causes["db_too_many_conns"] = refused
    # client timeouts for the next tick: smooth in the ratio of latency to the client timeout
    ratio = new_lat / timeout_ms
    st.db_timeout_frac = 0.0 if ratio < 0.5 else min(1.0, 1.0 / (1.0 + math.exp(-(ratio - 1.0) * 20.0)))
    st.db_lat_ms = with_inertia(st.db_lat_ms, new_lat)
    st.db_util, st.db_worker_q = db_u, worker_db_writes
    replica_q = db_writes + worker_db_writes
    for rep in db.replicas:
        base = rep.row
        if rep.state != "Running":
            rep.rps = rep.err = rep.cpu = rep.conns = 0.0
            rep.err_causes = {}
            PACK10(vals, base * 8, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, rep.restarts)
            continue
        if rep is primary:
            rep.rps, rep.err, rep.lat_ms, rep.err_causes = total_q, db_err, new_lat, db_causes
            cpu = total_q * cost * 0.0012 + 0.1
            rep.conns = conns_total if conns_total < max_conns else float(max_conns)
            p50, p95, p99 = M.pcts(new_lat, db_u, stmt_to, overload)
        else:
            rep.rps, rep.err, rep.lat_ms, rep.err_causes = replica_q, 0.0, st.db_base_lat_ms, {}
            cpu = total_q * 0.0003 + 0.1
            rep.conns = 3.0
            p50, p95, p99 = M.pcts(rep.lat_ms, 0.1, stmt_to, 0.0)
        limit = rep.node.cores * 0.6
        rep.cpu = cpu if cpu < limit else limit
        rep.mem_mb = rep.base_mem_mb + rep.conns * 9.0
        PACK10(vals, base * 8, rep.rps, rep.err, p50, p95, p99, rep.cpu, rep.mem_mb, rep.conns,
               400.0 + rep.conns * 2, rep.restarts)
    replicate(w, dbc, replica_q)  # srezero.sim.replication

    # --- cache replica and the single-replica services ----------------------------------------
    ops = web_rps_total if cache_reachable else 0.0
    ev, used_mb = cache_server(w, cache_rep, cc, ops, cover, warm, served_lat, cache_reachable, cache_up, auth_ok)
    lb_err = 1.0 - (1.0 - tls_fail) * (1.0 - conn_reject) * (1.0 - no_backend) * (1.0 - lb_fail) \
        * (1.0 - web_err if web_rps_total > 0 else 0.0 if accepted > 0 else 1.0)
    if rps_in <= 0:
        lb_err = 0.0
    lb_lat = (web_lat + 1.5) if web_rps_total > 0 else 1.5
    st.lb_lat_ms = lb_lat
    lb_rep.rps = rps_in
    lb_rep.err = lb_err
    lb_rep.lat_ms = lb_lat
    lb_rep.cpu = rps_in * 0.0004 + 0.05
    lb_rep.err_causes = lb_causes
    # the proxy holds at most max_connections; the rest were refused at accept
    held = active if active < lbc["max_connections"] else float(lbc["max_connections"])
    M.record_replica(vals, lb_rep, rps_in, lb_err, lb_lat, min(0.98, active / lbc["max_connections"]), held)
    mq_rep.rps = incoming
    mq_rep.cpu = incoming * 0.001 + 0.05 if mq_up else 0.0
    mq_rep.err_causes = {"poison": 1.0} if st.mq_poison else {}
    if st.mq_cycling > 0.5:
        mq_rep.err_causes["dlq_full"] = 1.0
    M.record_replica(vals, mq_rep, incoming, 0.0, 1.2, 0.1, len(workers_ready) * 2 + ready_webs * 2)

    # --- service aggregates -----------------------------------------------------------------------
    M.record_service(vals, lb, rps_in, lb_err, lb_lat, 1 if lb_up else 0, 0.3)
    if lb_wait > 0.01:  # a lost reply or a dropped SYN waits out the proxy's timeout: the edge's tail shows it
        if st.lb_wait_since < 0.0:
            st.lb_wait_since = t - TICK_S
        # a request is logged when it ends: at the proxy's timeout, or when its client gives up first;
        # none has waited longer than the waits have existed
        waited = min(idle_to, CLIENT_GIVE_UP_MS, (t - st.lb_wait_since) * 1000.0)
        util = min(0.98, active / lbc["max_connections"])
        PACK3(vals, (lb_rep.row + M.R_P50) * 8, *M.pcts(lb_lat, util, waited, lb_wait))
        PACK3(vals, (lb.row + M.S_P50) * 8, *M.pcts(lb_lat, 0.3, waited, lb_wait))
    elif st.lb_wait_since >= 0.0:
        st.lb_wait_since = -1.0
    vals[lb.row + M.S_READY + 1] = held
    vals[lb.row + M.S_READY + 2] = len(backends)
    M.record_service(vals, web, web_rps_total, web_err, web_lat, ready_webs, min(1.0, web_rps_total / max(1.0, ready_webs * 200.0)))
    vals[web.row + M.S_READY + 1] = pool_used_total
    M.record_service(vals, cache, ops, 1.0 if not auth_ok and cache_up else 0.0, served_lat, 1 if cache_up else 0, 0.2)
    vals[cache.row + M.S_READY + 1] = served_hit
    vals[cache.row + M.S_READY + 2] = ev
    vals[cache.row + M.S_READY + 3] = used_mb
    M.record_service(vals, db, total_q, db_err, new_lat, sum(1 for r in db.replicas if r.state == "Running"), db_u)
    vals[db.row + M.S_READY + 1] = min(conns_total, max_conns)
    vals[db.row + M.S_READY + 2] = st.replication_lag_s
    vals[db.row + M.S_READY + 3] = total_q * (0.001 + (0.3 if st.db_query_cost > 2 else 0.0)) + (total_q * 0.2 if new_lat > 100 else 0.0)
    vals[db.row + M.S_READY + 4] = st.db_dead_tuple_pct
    vals[db.row + M.S_READY + 5] = (lock_ms / 10.0) if lock_ms > 0 else 0.0
    if not dbc["autovacuum"]:  # dead row versions pile up with every update and delete
        st.db_dead_tuple_pct = min(85.0, st.db_dead_tuple_pct + replica_q * TICK_S * 1e-4)
    elif st.db_dead_tuple_pct > 6.0:  # autovacuum works through the backlog
        st.db_dead_tuple_pct -= 1.5
    M.record_service(vals, mq, incoming, 0.0, 1.2, 1 if mq_up else 0, 0.1)
    vals[mq.row + M.S_READY + 1] = depth
    vals[mq.row + M.S_READY + 2] = age
    vals[mq.row + M.S_READY + 3] = st.mq_dlq
    vals[mq.row + M.S_READY + 4] = incoming
    vals[mq.row + M.S_READY + 5] = consumed
    vals[mq.row + M.S_READY + 6] = consumed * redeliver + st.mq_long_rate * (copies - 1.0) \
        + (st.mq_cycling / proc_s if st.mq_cycling else 0.0)
    M.record_service(vals, wk, consumed, wk_err if consumed > 0 else 0.0, proc_s * 1000, len(workers_ready), 0.3)
    vals[wk.row + M.S_READY + 1] = consumed
    lb.rps, lb.err, lb.lat_ms = rps_in, lb_err, lb_lat
    web.rps, web.err, web.lat_ms = web_rps_total, web_err, web_lat
    db.rps, db.err, db.lat_ms = total_q, db_err, new_lat

    update_nodes(w, vals)
