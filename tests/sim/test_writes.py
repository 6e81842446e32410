"""The core write tools' consequences (srezero/tools/write.py), each checked on twin worlds of the control
task (tests/sim/twins.py): a tool is called on one twin as an episode calls it, and the other twin,
which lives through the same simulated time, shows what the write caused.

Every claim has two halves: the effect arrives when it would in a real system (a kill at once, a new
replica's capacity after its start-up, a rollout pod by pod), and the write has real side effects (in-flight
work dropped, a cold process, a paused database, lost writes), so a wrong write on a healthy system does
measurable harm. The service-specific tools are covered in tests/faults/test_write_services.py.
"""

from __future__ import annotations

import pytest

from srezero.sim import changes
from srezero.sim.replication import STANDBY_APPLY_WPS
from srezero.sim.world import World
from tests.sim.twins import SEEDS, act, advance, at, quiet_web, read, twins


def running(w: World, service: str) -> int:
    return sum(1 for r in w.services[service].replicas if r.state == "Running")


def killed_since(w: World, t: float) -> list[str]:
    return [e.entity for e in w.events if e.reason == "Killing" and e.at >= t]


def watch_rollout(plain: World, touched: World, service: str, seconds: float) -> list[int]:
    """Running replicas of ``service`` every 5 s for ``seconds``."""
    ready = []
    for _ in range(int(seconds / 5)):
        advance(5.0, plain, touched)
        ready.append(running(touched, service))
    return ready


# ------------------------------------------------------------------ restart
@pytest.mark.parametrize("seed", SEEDS)
def test_a_rolling_restart_takes_one_replica_at_a_time_and_drops_its_in_flight_requests(seed: int) -> None:
    plain, touched = twins(seed)
    web = touched.services["web_server"]
    n, t0, dropped = len(web.replicas), touched.now, touched.collateral_errors
    act(plain, touched, "restart", target="web_server")
    ready = watch_rollout(plain, touched, "web_server", n * (web.startup_s + changes.ROLLOUT_GAP_S) + 30)
    assert min(ready) == n - 1  # the others keep serving
    assert ready[-1] == n
    assert sorted(killed_since(touched, t0)) == sorted(r.name for r in web.replicas)  # each restarted once
    assert touched.collateral_errors > dropped  # requests in flight on each killed replica failed
    first = web.replicas[0].name
    assert at(touched, first, "request_rate") == pytest.approx(at(plain, first, "request_rate"))


@pytest.mark.parametrize("seed", SEEDS)
def test_restarting_the_database_fails_requests_until_it_is_back_and_never_both_replicas_at_once(seed: int) -> None:
    plain, touched = twins(seed)
    db = touched.services["database"]
    act(plain, touched, "restart", target="database")
    assert at(touched, "database", "error_rate") == 1.0  # the primary is down at once
    assert at(touched, "web_server", "error_rate") > 0.1 + at(plain, "web_server", "error_rate")
    ready = watch_rollout(plain, touched, "database", 2 * (db.startup_s + changes.ROLLOUT_GAP_S) + 30)
    assert min(ready) == 1 and ready[-1] == 2
    advance(60.0, plain, touched)
    assert at(touched, "web_server", "error_rate") == pytest.approx(at(plain, "web_server", "error_rate"), abs=0.01)


@pytest.mark.parametrize("seed", SEEDS)
def test_restarting_the_broker_stops_consumption_while_it_starts_and_redelivers_unacked_messages(seed: int) -> None:
    plain, touched = twins(seed)
    act(plain, touched, "restart", target="message_queue")
    assert at(touched, "worker", "processed_per_s") == 0.0 < at(plain, "worker", "processed_per_s")
    assert at(touched, "message_queue", "queue_depth") > 3 * at(plain, "message_queue", "queue_depth") + 100
    advance(300.0, plain, touched)  # back, and the workers drain what piled up
    assert at(touched, "message_queue", "queue_depth") == pytest.approx(at(plain, "message_queue", "queue_depth"),
                                                                         rel=0.2, abs=20.0)


# ------------------------------------------------------------------ rollback
@pytest.mark.parametrize("seed", SEEDS)
def test_rolling_back_a_release_the_schema_needs_breaks_pods_as_they_roll_not_at_once(seed: int) -> None:
    plain, touched = twins(seed)
    web = touched.services["web_server"]
    current = web.deploy.version
    act(plain, touched, "rollback", service="web_server")
    assert any("that the schema needs" in d for d in touched.destroyed)
    old = [r for r in web.replicas if r.version == current and r.state == "Running"]
    assert old  # the rollout has not reached them yet
    for r in old:  # the release they still run keeps working
        assert at(touched, r.name, "error_rate") == pytest.approx(at(plain, r.name, "error_rate"), abs=1e-9)
    early = at(touched, "web_server", "error_rate") - at(plain, "web_server", "error_rate")
    advance(len(web.replicas) * (web.startup_s + changes.ROLLOUT_GAP_S) + 30, plain, touched)
    assert all(r.version != current and r.state == "Running" for r in web.replicas)
    late = at(touched, "web_server", "error_rate") - at(plain, "web_server", "error_rate")
    assert late > 0.05 and early < late / 2  # every pod on the old code fails the requests the new schema needs


@pytest.mark.parametrize("seed", SEEDS)
def test_rolling_back_a_worker_release_the_schema_needs_fails_its_jobs_visibly(seed: int) -> None:
    plain, touched = twins(seed)
    wk = touched.services["worker"]
    act(plain, touched, "rollback", service="worker")
    assert any("that the schema needs" in d for d in touched.destroyed)
    advance(len(wk.replicas) * (wk.startup_s + changes.ROLLOUT_GAP_S) + 60, plain, touched)
    # the damage the scorer calls destructive shows where an engineer would look: the error rate and the logs
    assert at(touched, "worker", "error_rate") > at(plain, "worker", "error_rate") + 0.05
    text = read(touched, "search_logs", service="worker", level="error", window_s=120)
    assert "failed: Unhandled exception in" in text


# ------------------------------------------------------------------ scale
@pytest.mark.parametrize("seed", SEEDS)
def test_new_replicas_take_traffic_only_after_start_up_and_cost_node_memory_and_database_connections(seed: int) -> None:
    plain, touched = twins(seed)
    web = touched.services["web_server"]
    n, pool = len(web.replicas), web.config["db_pool_size"]
    first = web.replicas[0].name
    act(plain, touched, "scale", service="web_server", replicas=n + 2)
    new = web.replicas[n:]
    assert [r.state for r in new] == ["Starting", "Starting"]
    assert at(touched, first, "request_rate") == pytest.approx(at(plain, first, "request_rate"))  # no help yet
    assert at(touched, "database", "connections") == at(plain, "database", "connections")
    advance(web.startup_s + 30.0, plain, touched)
    assert [r.state for r in new] == ["Running", "Running"]
    assert at(touched, first, "request_rate") == pytest.approx(at(plain, first, "request_rate") * n / (n + 2))
    assert at(touched, "database", "connections") == at(plain, "database", "connections") + 2 * pool
    for node in {r.node.name: r.node for r in new}.values():
        extra = sum(r.mem_mb for r in new if r.node is node) / node.mem_total_mb * 100.0
        grown = at(touched, node.name, "memory_used_pct") - at(plain, node.name, "memory_used_pct")
        assert grown == pytest.approx(extra, rel=0.01)


@pytest.mark.parametrize("seed", SEEDS)
def test_scaling_a_healthy_web_tier_down_to_one_replica_overloads_it(seed: int) -> None:
    plain, touched = twins(seed)
    act(plain, touched, "scale", service="web_server", replicas=1)
    advance(60.0, plain, touched)
    assert at(touched, "web_server", "ready_replicas") == 1
    assert at(touched, "web_server", "latency_p50_ms") > 3 * at(plain, "web_server", "latency_p50_ms")
    assert at(touched, "load_balancer", "error_rate") > 0.05 + at(plain, "load_balancer", "error_rate")


def test_scaling_up_and_down_again_and_again_keeps_the_world_whole() -> None:
    """Rows of scaled-down replicas keep their history, so repeated scale-ups need new rows past the spare
    ones: a review's random policy crashed step() (a half-added replica, then a dead ticker) this way."""
    import srezero

    env = srezero.make("inc-001", 0)
    env.reset(seed=0)
    up, down = 'scale(service="web_server", replicas=12)', 'scale(service="web_server", replicas=1)'
    for action in [up, down] * 4 + [up]:
        obs, *_ = env.step(action)
        assert obs.ok, obs.text
    obs, *_ = env.step("wait(seconds=120)")
    newest = env.world.services["web_server"].replicas[-1]
    assert newest.state == "Running" and at(env.world, newest.name, "cpu_cores") > 0  # recorded in its own rows
    obs, _r, terminated, _t, info = env.step("resolve()")
    assert terminated and info["result"]["internal_errors"] == []
    assert len(env.world.vals) == env.world.buf.shape[0]


# ------------------------------------------------------------------ set_config
@pytest.mark.parametrize("seed", SEEDS)
def test_a_config_value_takes_effect_within_a_tick_and_restarts_nothing(seed: int) -> None:
    plain, touched = twins(seed)
    t0 = touched.now
    act(plain, touched, "set_config", service="web_server", key="db_timeout_ms", value=1)  # a wrong write
    advance(30.0, plain, touched)  # the next tick's queries time out
    assert at(touched, "web_server", "error_rate") > 0.1 + at(plain, "web_server", "error_rate")
    assert killed_since(touched, t0) == []
    assert running(touched, "web_server") == len(touched.services["web_server"].replicas)


@pytest.mark.parametrize("seed", SEEDS)
def test_an_environment_variable_rolls_the_replicas_one_at_a_time(seed: int) -> None:
    plain, touched = twins(seed)
    web = touched.services["web_server"]
    n, t0 = len(web.replicas), touched.now
    text = act(plain, touched, "set_config", service="web_server", key="env.LOG_LEVEL", value="debug")
    assert "restarting" in text
    ready = watch_rollout(plain, touched, "web_server", n * (web.startup_s + changes.ROLLOUT_GAP_S) + 30)
    assert min(ready) == n - 1 and ready[-1] == n
    assert sorted(killed_since(touched, t0)) == sorted(r.name for r in web.replicas)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_lowered_cache_ttl_empties_the_cache_as_stored_keys_expire_not_at_once(seed: int) -> None:
    plain, touched = twins(seed)
    old_ttl = float(touched.services["cache"].config["ttl_s"])
    act(plain, touched, "set_config", service="cache", key="ttl_s", value=10)
    advance(30.0, plain, touched)
    assert at(touched, "cache", "hit_ratio") > 0.8 * at(plain, "cache", "hit_ratio")  # stored keys keep their TTL
    advance(old_ttl / 2, plain, touched)
    half = at(touched, "cache", "hit_ratio")
    assert 0.25 * at(plain, "cache", "hit_ratio") < half < 0.8 * at(plain, "cache", "hit_ratio")
    advance(old_ttl / 2, plain, touched)  # the last key written with the old TTL has expired
    assert at(touched, "cache", "hit_ratio") < 0.25 * at(plain, "cache", "hit_ratio")


@pytest.mark.parametrize("seed", SEEDS)
def test_after_a_restart_a_lowered_ttl_expires_the_keys_stored_since_not_those_the_restart_dropped(seed: int) -> None:
    plain, touched = twins(seed)
    act(plain, touched, "set_config", service="cache", key="ttl_s", value=10)
    act(plain, touched, "restart", target="cache")  # empties the keys stored with the long TTL
    act(plain, touched, "set_config", service="cache", key="ttl_s", value=120)
    advance(600.0, plain, touched)  # warm again, every key stored with 120 s
    act(plain, touched, "set_config", service="cache", key="ttl_s", value=10)
    advance(150.0, plain, touched)  # all of them ran out their 120 s
    settled = at(touched, "cache", "hit_ratio")
    advance(300.0, plain, touched)
    assert at(touched, "cache", "hit_ratio") == pytest.approx(settled, abs=0.02)
    assert settled < 0.25 * at(plain, "cache", "hit_ratio")


# ------------------------------------------------------------------ failover
def lag_the_standby(*worlds: World) -> None:
    """Slow each world's standby disk until it replays three quarters of the writes: it falls behind."""
    for w in worlds:
        standby = w.topo.db_standby()
        disk = standby.node.data_disk
        disk.latency_mult = STANDBY_APPLY_WPS * 0.3 / (0.75 * at(w, standby.name, "request_rate")) / disk.base_latency_ms


@pytest.mark.parametrize("seed", SEEDS)
def test_a_failover_pauses_the_database_then_serves_from_the_promoted_replica(seed: int) -> None:
    plain, touched = twins(seed)
    old, new = touched.topo.db_primary(), touched.topo.db_standby()
    dropped = touched.collateral_errors
    act(plain, touched, "failover")
    assert at(touched, "database", "error_rate") == 1.0  # nothing answers while the replica is promoted
    assert touched.collateral_errors > dropped
    advance(30.0, plain, touched)
    assert touched.topo.db_primary() is new and new.state == "Running"
    assert old.role == "replica" and old.state == "Running"  # the old primary follows the new one
    assert at(touched, "database", "error_rate") == at(plain, "database", "error_rate")
    advance(60.0, plain, touched)
    assert at(touched, "web_server", "error_rate") == pytest.approx(at(plain, "web_server", "error_rate"), abs=0.01)
    assert not touched.state.data_lost and not touched.destroyed  # no lag, nothing lost


@pytest.mark.parametrize("seed", SEEDS)
def test_after_a_failover_the_database_runs_on_the_promoted_replicas_disk(seed: int) -> None:
    plain, touched = twins(seed)
    standby = touched.topo.db_standby().name
    act(plain, touched, "failover")
    advance(60.0, plain, touched)
    for w in (plain, touched):  # the same disk slows down in both worlds: the former standby's
        w.topo.replicas[standby].node.data_disk.latency_mult = 30.0
    advance(120.0, plain, touched)
    assert at(touched, "database", "latency_p50_ms") > 5 * at(plain, "database", "latency_p50_ms")


@pytest.mark.parametrize("seed", SEEDS)
def test_a_failover_with_replication_lag_loses_the_writes_not_yet_replayed(seed: int) -> None:
    plain, touched = twins(seed)
    lag_the_standby(plain, touched)
    advance(120.0, plain, touched)
    lag = touched.state.replication_lag_s
    assert lag > 10.0
    text = act(plain, touched, "failover")
    assert f"{lag:.1f}s" in text
    assert touched.state.data_lost and any("replication lag" in d for d in touched.destroyed)
    assert not plain.state.data_lost


# ------------------------------------------------------------------ drain_node
@pytest.mark.parametrize("seed", SEEDS)
def test_draining_a_node_moves_its_stateless_replicas_which_serve_elsewhere_after_start_up(seed: int) -> None:
    plain, touched = twins(seed)
    rep, _ = quiet_web(touched)
    node = rep.node
    moved = [r for r in node.replicas if r.state == "Running"]
    act(plain, touched, "drain_node", node=node.name)
    assert node.cordoned and not any(r in node.replicas for r in moved)
    assert rep.state == "Starting" and at(touched, rep.name, "request_rate") == 0.0  # not serving yet
    advance(rep.service.startup_s + 30.0, plain, touched)
    assert all(r.state == "Running" and r.node is not node for r in moved)
    assert at(touched, rep.name, "request_rate") == pytest.approx(at(plain, rep.name, "request_rate"))
    advance(120.0, plain, touched)
    assert at(touched, "load_balancer", "error_rate") == pytest.approx(at(plain, "load_balancer", "error_rate"),
                                                                       abs=0.01)
    act(plain, touched, "scale", service="web_server", replicas=len(touched.services["web_server"].replicas) + 1)
    assert touched.services["web_server"].replicas[-1].node is not node  # nothing new lands on it


@pytest.mark.parametrize("seed", SEEDS)
def test_draining_the_database_primarys_node_takes_the_database_down_until_the_node_is_uncordoned(seed: int) -> None:
    plain, touched = twins(seed)
    primary = touched.topo.db_primary()
    node = primary.node.name
    text = act(plain, touched, "drain_node", node=node)
    assert "cannot move" in text and primary.state == "Pending"
    assert any("database primary" in d for d in touched.destroyed)
    advance(300.0, plain, touched)  # time alone does not bring it back
    assert primary.state == "Pending" and at(touched, "database", "error_rate") == 1.0
    assert at(touched, "load_balancer", "error_rate") > 0.1 + at(plain, "load_balancer", "error_rate")
    act(plain, touched, "cordon_node", node=node, uncordon=True)
    advance(primary.service.startup_s + 60.0, plain, touched)
    assert primary.state == "Running" and primary.node.name == node
    assert at(touched, "database", "error_rate") == at(plain, "database", "error_rate")


@pytest.mark.parametrize("seed", SEEDS)
def test_draining_the_standbys_node_stalls_replication_and_spares_the_primary(seed: int) -> None:
    plain, touched = twins(seed)
    standby = touched.topo.db_standby()
    act(plain, touched, "drain_node", node=standby.node.name)
    advance(150.0, plain, touched)
    assert standby.state == "Pending"
    assert at(touched, "database", "replication_lag_s") > 120.0 > at(plain, "database", "replication_lag_s")
    assert at(touched, "database", "error_rate") == at(plain, "database", "error_rate")
