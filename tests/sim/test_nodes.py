"""What a node's kernel, disks, NIC and CPUs do to the replicas on it (srezero/sim/nodes.py, model.py,
lifecycle.py), each claim checked on twin worlds of the control task (tests/sim/twins.py).

A node-level cause hurts what runs on that node and nothing elsewhere, except through the services
every request shares (the database, the cache, the load balancer). ``quiet_web`` picks a web replica
whose node runs none of those, so a peer elsewhere must read exactly as in the untouched twin.
"""

from __future__ import annotations

import re
from itertools import pairwise

import pytest

from srezero.sim.components import Daemon, Replica
from srezero.sim.model import CLIENT_GIVE_UP_MS
from srezero.sim.replication import LOSSY_STREAM_DELAY_S, STANDBY_APPLY_WPS
from srezero.sim.world import World
from tests.sim.twins import SEEDS, act, advance, at, quiet_web, read, twins


def throttled(w: World, rep: Replica) -> int:
    """The CPU throttling (%) ``node_diagnostics limits`` shows for a replica's cgroup."""
    text = read(w, "node_diagnostics", node=rep.node.name, check="limits")
    return int(re.search(rf"{rep.name} .*throttled=(\d+)%", text).group(1))


def same_as_twin(plain: World, touched: World, entity: str, *metrics: str) -> None:
    for metric in metrics:
        assert at(touched, entity, metric) == pytest.approx(at(plain, entity, metric), rel=0.02, abs=1e-6), metric


# ------------------------------------------------------------------ NIC
@pytest.mark.parametrize("seed", SEEDS)
def test_a_lossy_nic_fails_and_slows_the_replica_on_its_node_and_no_other(seed: int) -> None:
    plain, touched = twins(seed)
    rep, peer = quiet_web(touched, link=True)
    rep.node.nic_loss = 0.2
    advance(90.0, plain, touched)
    assert at(touched, rep.node.name, "net_loss_pct") == pytest.approx(20.0)
    assert at(touched, rep.name, "error_rate") > 0.4  # every request crosses the link several times
    timeout = float(touched.services["web_server"].config["db_timeout_ms"])
    # the requests that fail are i/o timeouts after retransmissions: they wait, so the tail shows them
    assert at(touched, rep.name, "latency_p99_ms") >= timeout > 5 * at(plain, rep.name, "latency_p99_ms")
    assert at(touched, rep.name, "request_rate") == pytest.approx(at(plain, rep.name, "request_rate"))
    same_as_twin(plain, touched, peer.name, "error_rate", "latency_p50_ms", "latency_p99_ms")
    share = at(touched, rep.name, "request_rate") / at(touched, "load_balancer", "request_rate")
    assert at(touched, "load_balancer", "error_rate") == pytest.approx(share * at(touched, rep.name, "error_rate"),
                                                                       rel=0.05)


def off_node(w: World, node_name: str) -> Replica:
    """A serving web replica on another node than ``node_name``: it reads its own NIC as healthy."""
    return next(r for r in w.services["web_server"].replicas if r.node.name != node_name and r.state == "Running")


def logged(w: World, service: str, pattern: str) -> bool:
    return pattern in read(w, "search_logs", service=service, pattern=pattern, window_s=300)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_lossy_nic_on_the_database_primarys_node_times_out_queries_from_every_web_replica(seed: int) -> None:
    plain, touched = twins(seed)
    primary = touched.topo.db_primary()
    primary.node.nic_loss = 0.2
    advance(90.0, plain, touched)
    rep = off_node(touched, primary.node.name)  # its own link is fine: the failures are the database's
    assert at(touched, rep.name, "error_rate") > at(plain, rep.name, "error_rate") + 0.01
    timeout = float(touched.services["web_server"].config["db_timeout_ms"])
    assert at(touched, rep.name, "latency_p99_ms") >= timeout > 3 * at(plain, rep.name, "latency_p99_ms")
    assert "db_net" in rep.err_causes and "net_loss" not in rep.err_causes
    # each lost attempt waits out the client timeout: queries hold their pool connections longer, and the
    # mean latency, not only the tail, rises
    assert at(touched, rep.name, "latency_p50_ms") > at(plain, rep.name, "latency_p50_ms") + 0.05 * timeout
    assert logged(touched, "web_server", "i/o timeout")
    assert logged(touched, "database", "could not receive data from client")  # the server sees broken clients
    # the server's own metrics are measured on the server: the queries it answered went well
    assert at(touched, "database", "error_rate") == at(plain, "database", "error_rate")


@pytest.mark.parametrize("seed", SEEDS)
def test_a_lossy_nic_on_the_caches_node_times_out_cache_reads_onto_the_database(seed: int) -> None:
    plain, touched = twins(seed)
    touched.services["cache"].replicas[0].node.nic_loss = 0.2
    advance(90.0, plain, touched)
    assert at(touched, "database", "request_rate") > 1.3 * at(plain, "database", "request_rate")
    assert at(touched, "web_server", "latency_p50_ms") > at(plain, "web_server", "latency_p50_ms") + 50
    assert logged(touched, "web_server", "cache: timeout reading from")
    # the server's keyspace statistics never see a read lost on the wire
    assert at(touched, "cache", "hit_ratio") == pytest.approx(at(plain, "cache", "hit_ratio"), rel=0.01)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_lossy_nic_on_the_load_balancers_node_fails_requests_at_the_edge(seed: int) -> None:
    plain, touched = twins(seed)
    touched.services["load_balancer"].replicas[0].node.nic_loss = 0.05
    advance(90.0, plain, touched)
    lost = 0.05 * 3  # every request crosses the link several times
    behind = at(touched, "web_server", "error_rate")  # the node may hold the database too
    assert at(touched, "load_balancer", "error_rate") == pytest.approx(1.0 - (1.0 - lost) * (1.0 - behind), abs=1e-6)
    idle_ms = float(touched.services["load_balancer"].config["idle_timeout_s"]) * 1000.0
    # a lost reply waits out the proxy's timeout, or the client's patience if that is shorter
    assert at(touched, "load_balancer", "latency_p99_ms") == pytest.approx(min(idle_ms, CLIENT_GIVE_UP_MS))
    assert logged(touched, "load_balancer", "upstream timed out")


@pytest.mark.parametrize("seed", SEEDS)
def test_a_full_conntrack_table_on_the_load_balancers_node_drops_its_upstream_connections(seed: int) -> None:
    plain, touched = twins(seed)
    node = touched.services["load_balancer"].replicas[0].node
    node.conntrack_max = node.conntrack_used // 2
    advance(90.0, plain, touched)
    dropped = 1.0 - node.conntrack_max / node.conntrack_used  # about half: the SYNs with no slot
    behind = at(touched, "web_server", "error_rate")
    assert 0.35 < dropped < 0.65
    assert at(touched, "load_balancer", "error_rate") == pytest.approx(1.0 - (1.0 - dropped) * (1.0 - behind), abs=0.02)
    idle_ms = float(touched.services["load_balancer"].config["idle_timeout_s"]) * 1000.0
    assert at(touched, "load_balancer", "latency_p99_ms") == pytest.approx(min(idle_ms, CLIENT_GIVE_UP_MS))
    assert logged(touched, "load_balancer", "while connecting to upstream")


@pytest.mark.parametrize("seed", SEEDS)
def test_exhausted_ephemeral_ports_on_the_load_balancers_node_fail_its_upstream_connects_at_once(seed: int) -> None:
    plain, touched = twins(seed)
    node = touched.services["load_balancer"].replicas[0].node
    node.ephemeral_ports = int(node.ports_used * 0.8)
    advance(90.0, plain, touched)
    assert at(touched, "load_balancer", "error_rate") > at(plain, "load_balancer", "error_rate") + 0.1
    assert at(touched, "load_balancer", "latency_p99_ms") < 2 * at(plain, "load_balancer", "latency_p99_ms") + 1
    assert logged(touched, "load_balancer", "Cannot assign requested address")


@pytest.mark.parametrize("seed", SEEDS)
def test_a_lossy_nic_on_the_brokers_node_fails_the_requests_that_publish(seed: int) -> None:
    plain, touched = twins(seed)
    touched.services["message_queue"].replicas[0].node.nic_loss = 0.2
    advance(90.0, plain, touched)
    rep = off_node(touched, touched.services["message_queue"].replicas[0].node.name)
    publish = touched.state.publish_frac
    assert rep.err_causes.get("mq_timeout") == pytest.approx(publish * 0.6)
    assert at(touched, rep.name, "error_rate") > at(plain, rep.name, "error_rate") + 0.5 * publish * 0.6
    assert logged(touched, "web_server", "write tcp: i/o timeout")
    timeout = float(touched.services["web_server"].config["db_timeout_ms"])
    assert at(touched, rep.name, "latency_p99_ms") >= timeout  # a lost publish waits before it fails


@pytest.mark.parametrize("seed", (1, 3))  # seeds where a worker runs on a node no shared service is on
def test_a_lossy_nic_on_a_workers_node_fails_its_jobs_and_its_peers_take_more_of_the_queue(seed: int) -> None:
    plain, touched = twins(seed)
    primary = touched.topo.db_primary()
    rep = next(r for r in touched.services["worker"].replicas
               if not any(o.kind in ("load_balancer", "cache", "message_queue") or o is primary for o in r.node.replicas))
    peer = next(r for r in touched.services["worker"].replicas if r.node is not rep.node)
    rep.node.nic_loss = 0.2
    advance(90.0, plain, touched)
    assert at(touched, rep.name, "error_rate") == pytest.approx(0.6)  # a job crosses the link several times
    assert at(plain, rep.name, "error_rate") == 0.0
    # its slots wait out timeouts, so it takes fewer jobs and the healthy consumers take the rest
    assert at(touched, rep.name, "request_rate") < 0.5 * at(plain, rep.name, "request_rate")
    assert at(touched, peer.name, "error_rate") == at(plain, peer.name, "error_rate")
    share = at(touched, peer.name, "request_rate") / at(touched, "worker", "request_rate")
    assert share > at(plain, peer.name, "request_rate") / at(plain, "worker", "request_rate")
    assert logged(touched, "worker", "connection to broker")
    assert at(touched, "message_queue", "queue_depth") < 1.0  # the others keep up


@pytest.mark.parametrize("seed", SEEDS)
def test_a_lossy_link_at_either_end_of_replication_delays_the_wal_stream_by_seconds_not_more(seed: int) -> None:
    plain, touched = twins(seed)
    standby = touched.topo.db_standby()
    standby.node.nic_loss = 0.2
    lags = []
    for _ in range(4):
        advance(30.0, plain, touched)
        lags.append(at(touched, "database", "replication_lag_s"))
    # retransmissions delay the stream, which still carries the WAL: behind by seconds, never growing, and
    # below the lag a failover can lose without losing writes
    assert all(lag == pytest.approx(0.6 * LOSSY_STREAM_DELAY_S) for lag in lags)
    assert at(plain, "database", "replication_lag_s") < 1.0
    assert "lag at failover: 2.4s" in act(plain, touched, "failover") and not touched.destroyed
    # the promoted replica keeps its lossy link: the primary's end delays the stream the same way
    advance(60.0, plain, touched)
    assert at(touched, "database", "replication_lag_s") == pytest.approx(0.6 * LOSSY_STREAM_DELAY_S)
    standby.node.nic_loss = 0.0
    advance(60.0, plain, touched)
    assert at(touched, "database", "replication_lag_s") < 1.0  # a healthy link catches up at once


@pytest.mark.parametrize("seed", SEEDS)
def test_a_flapping_link_on_the_standbys_node_breaks_the_wal_stream_and_leaves_the_primary_serving(seed: int) -> None:
    plain, touched = twins(seed)
    standby = touched.topo.db_standby()
    standby.node.nic_flapping = True
    advance(90.0, plain, touched)
    assert at(touched, "database", "replication_lag_s") == pytest.approx(0.15 * LOSSY_STREAM_DELAY_S)
    assert logged(touched, "database", "could not receive data from WAL stream")
    assert read(plain, "search_logs", service="database", pattern="WAL stream", window_s=300).startswith("no log lines")
    # the primary serves as before (its load may fall, with a web replica on the standby's node failing)
    assert at(touched, "database", "error_rate") == at(plain, "database", "error_rate")


# ------------------------------------------------------------------ kernel tables
@pytest.mark.parametrize("seed", SEEDS)
def test_a_full_conntrack_table_drops_new_connections_on_its_node_and_no_other(seed: int) -> None:
    plain, touched = twins(seed)
    rep, peer = quiet_web(touched)
    node = rep.node
    node.conntrack_max = node.conntrack_used // 2
    advance(90.0, plain, touched)
    assert 0.35 < at(touched, rep.name, "error_rate") < 0.65  # about the half of new flows with no slot
    timeout = float(touched.services["web_server"].config["db_timeout_ms"])
    assert at(touched, rep.name, "latency_p99_ms") >= timeout  # a dropped SYN is a connect timeout
    assert any("table full, dropping packet" in line for _, line in touched.dmesg_lines[node.name])
    assert "(table full)" in read(touched, "node_diagnostics", node=node.name, check="limits")
    assert not any("table full" in line for _, line in touched.dmesg_lines[peer.node.name])
    same_as_twin(plain, touched, peer.name, "error_rate", "latency_p99_ms")


@pytest.mark.parametrize("seed", SEEDS)
def test_a_file_table_smaller_than_the_open_files_fails_the_replica_on_that_node(seed: int) -> None:
    plain, touched = twins(seed)
    rep, peer = quiet_web(touched)
    rep.node.fd_max = int(rep.node.fds_used * 0.9)
    advance(60.0, plain, touched)
    assert at(touched, rep.name, "error_rate") > 0.5  # ENFILE: the holder wins most races for a descriptor
    assert "enfile" in rep.err_causes
    assert "file-max limit reached" in read(touched, "node_diagnostics", node=rep.node.name, check="limits")
    same_as_twin(plain, touched, peer.name, "error_rate")


@pytest.mark.parametrize("seed", SEEDS)
def test_a_narrow_ephemeral_port_range_fails_outbound_connections_until_tw_reuse_recycles_ports(seed: int) -> None:
    plain, touched = twins(seed)
    rep, peer = quiet_web(touched)
    node = rep.node
    node.ephemeral_ports = node.ports_used // 2
    advance(60.0, plain, touched)
    assert 0.3 < at(touched, rep.name, "error_rate") < 0.7 and "port_exhaustion" in rep.err_causes
    same_as_twin(plain, touched, peer.name, "error_rate")
    act(plain, touched, "set_sysctl", node=node.name, key="net.ipv4.tcp_tw_reuse", value=1)
    advance(30.0, plain, touched)
    assert node.ports_used < node.ephemeral_ports  # TIME_WAIT ports are reused for new connections
    assert at(touched, rep.name, "error_rate") == at(plain, rep.name, "error_rate")


# ------------------------------------------------------------------ memory
def hog_memory(touched: World, node_name: str, over_mb: float) -> None:
    """Start a host job on ``node_name`` that takes every free MB and ``over_mb`` more."""
    node = touched.topo.node_by_name[node_name]
    node.daemons.append(Daemon(node.free_job_name("batch-reindex"), "cron", 0.5,
                               node.mem_total_mb - node.mem_used_mb + over_mb))
    node.retotal()


@pytest.mark.parametrize("seed", SEEDS)
def test_a_node_out_of_memory_kills_its_largest_process_again_and_again_and_spares_the_rest(seed: int) -> None:
    plain, touched = twins(seed)
    node = touched.topo.db_primary().node
    live = [r for r in node.replicas if r.state == "Running"]
    victim = max(live, key=lambda r: r.mem_mb)
    others = [r for r in live if r is not victim]
    assert others
    hog_memory(touched, node.name, victim.mem_mb * 0.3)  # killing the largest would make room
    for _ in range(12):  # six minutes
        advance(30.0, plain, touched)
        assert all(r.state == "Running" and r.restarts == 0 for r in others), [(r.name, r.state) for r in others]
    kills = [e.at for e in touched.events if e.reason == "OOMKilling" and e.entity == node.name]
    assert len(kills) == victim.restarts >= 3  # killed again each time it is back, while the job holds the memory
    assert all(b - a >= victim.service.startup_s for a, b in pairwise(kills))  # only once it has started
    assert "Out of memory: Killed process" in read(touched, "node_diagnostics", node=node.name, check="dmesg")
    assert at(touched, "database", "error_rate") > at(plain, "database", "error_rate")  # the victim is the database


@pytest.mark.parametrize("seed", SEEDS)
def test_a_heap_growing_to_its_limit_slows_in_gc_then_is_oom_killed_and_restarts_fresh(seed: int) -> None:
    plain, touched = twins(seed)
    rep, peer = quiet_web(touched)
    limit = float(touched.services["web_server"].config["memory_limit_mb"])
    rep.leak_mb_per_h = (limit - rep.base_mem_mb) * 6.0  # reaches its limit in ten minutes
    start, slowest = touched.now, 1.0
    for _ in range(40):
        advance(30.0, plain, touched)
        if rep.restarts:
            break
        slowest = max(slowest, at(touched, rep.name, "latency_p50_ms") / at(plain, rep.name, "latency_p50_ms"))
    assert rep.restarts == 1 and rep.state == "Starting"
    assert 9 * 60 <= touched.now - start <= 11 * 60  # when its heap passed the limit
    assert slowest > 1.5  # a heap near its limit thrashes in GC before the kill
    assert rep.mem_mb == rep.base_mem_mb  # a fresh process
    assert any(e.reason == "OOMKilled" and e.entity == rep.name for e in touched.events)
    advance(60.0, plain, touched)
    assert rep.state == "Running"
    assert at(touched, rep.name, "latency_p50_ms") == pytest.approx(at(plain, rep.name, "latency_p50_ms"), rel=0.05)
    assert peer.restarts == plain.topo.replicas[peer.name].restarts  # its own history, nothing more
    same_as_twin(plain, touched, peer.name, "error_rate")


# ------------------------------------------------------------------ CPU
@pytest.mark.parametrize("seed", SEEDS)
def test_a_cpu_quota_below_demand_throttles_and_slows_every_web_replica(seed: int) -> None:
    plain, touched = twins(seed)
    web = touched.services["web_server"]
    rep = web.replicas[0]
    demand = rep.cpu  # cores one replica uses now
    web.config["cpu_limit"] = round(demand * 0.8, 2)
    advance(90.0, plain, touched)
    for r in web.replicas:
        assert at(touched, r.name, "latency_p50_ms") > 3 * at(plain, r.name, "latency_p50_ms")
        assert at(touched, r.name, "cpu_cores") <= web.config["cpu_limit"] + 0.05 + 1e-9  # the quota caps it
        assert at(touched, r.name, "cpu_cores") < at(plain, r.name, "cpu_cores")
    assert at(touched, "web_server", "error_rate") > 0.05  # the excess is shed
    assert throttled(touched, rep) > 50 and throttled(plain, rep) == 0  # what the cgroup reports


@pytest.mark.parametrize("seed", SEEDS)
def test_the_throttling_a_cgroup_reports_is_a_rate_over_the_last_two_minutes_not_one_instant(seed: int) -> None:
    plain, touched = twins(seed)
    web = touched.services["web_server"]
    rep, healthy = web.replicas[0], web.config["cpu_limit"]
    web.config["cpu_limit"] = round(rep.cpu * 0.7, 2)
    advance(180.0, plain, touched)
    assert throttled(touched, rep) > 80
    web.config["cpu_limit"] = healthy
    advance(30.0, plain, touched)
    assert at(touched, rep.name, "cpu_cores") < 0.85 * healthy  # no longer throttled now ...
    assert 50 < throttled(touched, rep) < 80  # ... but most of the last two minutes were
    advance(120.0, plain, touched)
    assert throttled(touched, rep) == 0


@pytest.mark.parametrize("seed", SEEDS)
def test_a_thermally_throttled_node_slows_the_replica_on_it_and_no_other(seed: int) -> None:
    plain, touched = twins(seed)
    rep, peer = quiet_web(touched)
    rep.node.thermal_factor = 0.3
    advance(90.0, plain, touched)
    assert at(touched, rep.node.name, "cpu_throttled_pct") == pytest.approx(70.0)
    assert at(touched, rep.name, "latency_p50_ms") > 3 * at(plain, rep.name, "latency_p50_ms")
    same_as_twin(plain, touched, peer.name, "error_rate", "latency_p50_ms")


@pytest.mark.parametrize("seed", SEEDS)
def test_a_thermally_throttled_database_node_slows_every_query(seed: int) -> None:
    plain, touched = twins(seed)
    touched.topo.db_primary().node.thermal_factor = 0.3
    advance(90.0, plain, touched)
    assert at(touched, "database", "latency_p50_ms") > 2 * at(plain, "database", "latency_p50_ms")
    assert at(touched, "web_server", "latency_p50_ms") > at(plain, "web_server", "latency_p50_ms")


# ------------------------------------------------------------------ disks
@pytest.mark.parametrize("seed", SEEDS)
def test_a_full_database_disk_fails_its_writes_but_not_its_reads(seed: int) -> None:
    plain, touched = twins(seed)
    disk = touched.topo.db_primary().node.data_disk
    disk.used_gb, disk.growth_gb_per_h = disk.capacity_gb, 0.0
    advance(90.0, plain, touched)
    failed_writes = touched.topo.db_primary().err_causes["disk_full"]  # the share of queries that write
    assert 0.1 < failed_writes < 0.9 and at(touched, "database", "error_rate") < 0.95  # reads are answered
    assert at(touched, disk.node.name, "data_disk_used_pct") == pytest.approx(100.0)
    assert at(touched, disk.node.name, "disk_latency_ms") > 4 * at(plain, disk.node.name, "disk_latency_ms")
    assert at(touched, "web_server", "error_rate") > 0.05 + at(plain, "web_server", "error_rate")
    assert "No space left on device" in read(touched, "node_diagnostics", node=disk.node.name, check="disk")


@pytest.mark.parametrize("seed", SEEDS)
def test_a_full_data_disk_where_no_database_runs_harms_nothing(seed: int) -> None:
    plain, touched = twins(seed)
    rep, _ = quiet_web(touched)
    disk = rep.node.data_disk
    disk.used_gb = disk.capacity_gb
    advance(90.0, plain, touched)
    for entity in ("load_balancer", "web_server", "database"):
        same_as_twin(plain, touched, entity, "error_rate", "latency_p50_ms")


@pytest.mark.parametrize("seed", SEEDS)
def test_a_full_root_filesystem_fails_the_requests_of_the_replica_on_that_node(seed: int) -> None:
    plain, touched = twins(seed)
    rep, peer = quiet_web(touched)
    root = rep.node.disks[0]
    root.used_gb = root.capacity_gb
    advance(60.0, plain, touched)
    assert at(touched, rep.node.name, "root_disk_used_pct") == pytest.approx(100.0)
    assert at(touched, rep.name, "error_rate") > 0.2  # requests that write temp or session files fail
    same_as_twin(plain, touched, peer.name, "error_rate")


@pytest.mark.parametrize("seed", SEEDS)
def test_unreadable_sectors_on_the_database_disk_fail_queries_and_count_io_errors_on_that_node(seed: int) -> None:
    plain, touched = twins(seed)
    disk = touched.topo.db_primary().node.data_disk
    disk.read_error_rate = 0.2
    advance(60.0, plain, touched)
    first = at(touched, disk.node.name, "disk_io_errors")
    assert 0.15 < at(touched, "database", "error_rate") < 0.25
    advance(120.0, plain, touched)
    assert at(touched, disk.node.name, "disk_io_errors") > first > 0  # the block layer keeps counting
    assert "I/O error, dev nvme1n1" in read(touched, "node_diagnostics", node=disk.node.name, check="dmesg")
    for node in touched.topo.nodes:
        if node is not disk.node:
            assert at(touched, node.name, "disk_io_errors") == 0.0


@pytest.mark.parametrize("seed", SEEDS)
def test_a_standby_disk_too_slow_to_replay_the_writes_falls_further_behind_and_leaves_the_primary_alone(
        seed: int) -> None:
    plain, touched = twins(seed)
    standby = touched.topo.db_standby()
    disk = standby.node.data_disk
    writes = at(touched, standby.name, "request_rate")  # the write stream it replays
    # slow enough that it replays three quarters of what the primary writes
    disk.latency_mult = STANDBY_APPLY_WPS * 0.3 / (0.75 * writes) / disk.base_latency_ms
    lags = []
    for _ in range(10):
        advance(30.0, plain, touched)
        lags.append(at(touched, "database", "replication_lag_s"))
    assert all(b > a + 5.0 for a, b in pairwise(lags))  # about 10 s more every tick, without end
    assert lags[-1] > 60.0 and at(plain, "database", "replication_lag_s") < 1.0
    same_as_twin(plain, touched, "database", "error_rate", "latency_p50_ms")
    disk.latency_mult = 1.0
    advance(300.0, plain, touched)
    assert at(touched, "database", "replication_lag_s") < lags[-1] - 60.0  # a healthy disk catches up


# ------------------------------------------------------------------ clock
@pytest.mark.parametrize("seed", SEEDS)
def test_clock_skew_beyond_the_token_leeway_rejects_requests_on_that_node_only(seed: int) -> None:
    plain, touched = twins(seed)
    rep, peer = quiet_web(touched)
    for skew, rejected in ((20.0, False), (-20.0, False), (45.0, True), (-45.0, True), (600.0, True)):
        rep.node.clock_skew_s = skew
        advance(60.0, plain, touched)
        errors = at(touched, rep.name, "error_rate") - at(plain, rep.name, "error_rate")
        assert (errors > 0.3) is rejected, (skew, errors)
        assert ("clock_skew" in rep.err_causes) is rejected
        same_as_twin(plain, touched, peer.name, "error_rate")
    assert "600.000000 seconds fast" in read(touched, "node_diagnostics", node=rep.node.name, check="limits")
