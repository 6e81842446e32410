"""The fluid model's causal claims (srezero/sim/model.py), each checked on twin worlds.

Two worlds built from the same task and seed run identically, noise included, so one intervention in
one of them and a comparison with its untouched twin isolates what that intervention causes. The
task is the control (a false alarm: nothing in it is broken)."""

from __future__ import annotations

import itertools

import pytest

from srezero.sim.world import World
from tests.sim.twins import SEEDS, advance, at, twins


def starve_cache(plain: World, touched: World) -> int:
    """Give ``touched``'s cache a tenth of its working set for five minutes; its healthy maxmemory."""
    cache = touched.services["cache"].config
    healthy = cache["maxmemory_mb"]
    cache["maxmemory_mb"] = touched.state.cache_ws_mb / 10
    advance(300.0, plain, touched)
    return healthy


@pytest.mark.parametrize("seed", SEEDS)
def test_a_cache_too_small_for_its_working_set_loads_the_database_and_slows_the_web_tier(seed: int) -> None:
    plain, touched = twins(seed)
    touched.services["cache"].config["maxmemory_mb"] = touched.state.cache_ws_mb / 10
    advance(300.0, plain, touched)
    assert at(touched, "cache", "hit_ratio") < at(plain, "cache", "hit_ratio") / 4
    assert at(touched, "cache", "evictions_per_s") > at(plain, "cache", "evictions_per_s") * 10
    assert at(touched, "database", "request_rate") > at(plain, "database", "request_rate") * 1.5
    assert at(touched, "web_server", "latency_p50_ms") > at(plain, "web_server", "latency_p50_ms")


@pytest.mark.parametrize("seed", SEEDS)
def test_a_raised_cache_limit_heals_as_misses_refill_it_not_at_once(seed: int) -> None:
    plain, touched = twins(seed)
    touched.services["cache"].config["maxmemory_mb"] = starve_cache(plain, touched)
    hits, loads, memory = [], [], []
    for _ in range(20):
        advance(30.0, plain, touched)
        hits.append(at(touched, "cache", "hit_ratio") / at(plain, "cache", "hit_ratio"))
        loads.append(at(touched, "database", "request_rate") / at(plain, "database", "request_rate"))
        memory.append(at(touched, "cache", "memory_used_mb") / at(plain, "cache", "memory_used_mb"))
    assert hits[0] < 0.9 and loads[0] > 1.2 and memory[0] < 0.9  # the first tick after the fix
    assert hits == sorted(hits) and memory == sorted(memory)  # refilling only ever gains
    assert hits[-1] > 0.95 and loads[-1] < 1.2 and memory[-1] > 0.95  # mostly healed within ten minutes


@pytest.mark.parametrize("seed", SEEDS)
def test_a_cache_refills_only_as_fast_as_the_database_answers_its_misses(seed: int) -> None:
    plain, touched = twins(seed)
    healthy = starve_cache(plain, touched)
    primary = touched.topo.db_primary()
    primary.state = "Terminated"  # every miss fails: nothing refills the cache
    touched.services["cache"].config["maxmemory_mb"] = healthy
    advance(300.0, plain, touched)
    assert at(touched, "cache", "hit_ratio") < 0.1 * at(plain, "cache", "hit_ratio")
    primary.state = "Running"
    advance(600.0, plain, touched)
    assert at(touched, "cache", "hit_ratio") > 0.9 * at(plain, "cache", "hit_ratio")


@pytest.mark.parametrize("seed", SEEDS)
def test_a_restored_ttl_refills_fresh_keys_without_the_memory_dropping(seed: int) -> None:
    plain, touched = twins(seed)
    cache = touched.services["cache"].config
    healthy = cache["ttl_s"]
    cache["ttl_s"] = 10
    advance(float(healthy), plain, touched)  # keys stored with the healthy TTL have run it out
    assert at(touched, "cache", "hit_ratio") < 0.5 * at(plain, "cache", "hit_ratio")
    cache["ttl_s"] = healthy
    hits = []
    for _ in range(20):
        advance(30.0, plain, touched)
        hits.append(at(touched, "cache", "hit_ratio") / at(plain, "cache", "hit_ratio"))
        assert at(touched, "cache", "memory_used_mb") == pytest.approx(at(plain, "cache", "memory_used_mb"))
    assert hits[0] < 0.9 and hits == sorted(hits) and hits[-1] > 0.95


@pytest.mark.parametrize("seed", SEEDS)
def test_keys_no_client_can_reach_expire_so_a_fixed_secret_refills_a_colder_cache(seed: int) -> None:
    hit_after = {}
    for minutes in (2, 30):
        plain, touched = twins(seed)
        web = touched.services["web_server"].config
        healthy = web["cache_auth_secret"]
        web["cache_auth_secret"] = healthy + "-stale"
        advance(minutes * 60.0, plain, touched)
        assert at(touched, "cache", "hit_ratio") == 0.0
        web["cache_auth_secret"] = healthy
        advance(30.0, plain, touched)
        hit_after[minutes] = at(touched, "cache", "hit_ratio") / at(plain, "cache", "hit_ratio")
        advance(900.0, plain, touched)
        assert at(touched, "cache", "hit_ratio") > 0.97 * at(plain, "cache", "hit_ratio")
    assert hit_after[30] < hit_after[2] < 1.0


@pytest.mark.parametrize("seed", SEEDS)
def test_a_slow_database_disk_slows_the_database_and_then_the_web_tier(seed: int) -> None:
    plain, touched = twins(seed)
    touched.topo.db_primary().node.data_disk.latency_mult = 30.0
    advance(300.0, plain, touched)
    assert at(touched, "database", "latency_p50_ms") > at(plain, "database", "latency_p50_ms") * 10
    assert at(touched, "web_server", "latency_p50_ms") > at(plain, "web_server", "latency_p50_ms") * 2
    assert at(touched, "load_balancer", "latency_p99_ms") > at(plain, "load_balancer", "latency_p99_ms")


@pytest.mark.parametrize("seed", SEEDS)
def test_a_database_outage_fails_requests_up_to_the_edge(seed: int) -> None:
    plain, touched = twins(seed)
    touched.topo.db_primary().state = "Terminated"
    advance(120.0, plain, touched)
    assert at(plain, "database", "error_rate") == 0.0 and at(touched, "database", "error_rate") == 1.0
    web_errors = at(touched, "web_server", "error_rate")
    assert web_errors > 0.1 + at(plain, "web_server", "error_rate")
    assert at(touched, "load_balancer", "error_rate") == pytest.approx(web_errors)  # every request goes through


@pytest.mark.parametrize("seed", SEEDS)
def test_a_queue_without_consumers_grows_and_ages_while_publishing_goes_on(seed: int) -> None:
    plain, touched = twins(seed)
    for rep in list(touched.services["worker"].replicas):
        touched.remove_replica(rep)
    depths, ages = [], []
    for _ in range(4):
        advance(120.0, plain, touched)
        depths.append(at(touched, "message_queue", "queue_depth"))
        ages.append(at(touched, "message_queue", "queue_age_s"))
        assert at(plain, "message_queue", "queue_depth") < depths[0] / 10
    assert depths == sorted(depths) and ages == sorted(ages) and ages[-1] > 300.0
    published = at(touched, "message_queue", "publish_rate")
    assert published > 0 and depths[-1] - depths[0] == pytest.approx(published * 360.0, rel=0.1)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_backlog_nobody_publishes_to_or_consumes_just_grows_older(seed: int) -> None:
    """A review saw the oldest message's age jump from 241 s to 20,555 s for one tick when publishing
    paused too (Little's law divided the backlog by a floor of one message per second)."""
    plain, touched = twins(seed)
    for rep in list(touched.services["worker"].replicas):
        touched.remove_replica(rep)
    advance(240.0, plain, touched)
    for rep in list(touched.services["web_server"].replicas):  # nothing publishes any more
        touched.remove_replica(rep)
    advance(60.0, plain, touched)
    assert at(touched, "message_queue", "publish_rate") == 0.0 and at(touched, "message_queue", "queue_depth") > 1000
    ages = []
    for _ in range(5):
        advance(30.0, plain, touched)
        ages.append(at(touched, "message_queue", "queue_age_s"))
    assert 200.0 < ages[0] < 400.0, ages
    assert [b - a for a, b in itertools.pairwise(ages)] == pytest.approx([30.0] * 4), ages


@pytest.mark.parametrize("seed", SEEDS)
def test_a_restarted_cache_starts_cold_and_loads_the_database_while_it_warms(seed: int) -> None:
    plain, touched = twins(seed)
    touched.restart_replica(touched.services["cache"].replicas[0], reason="test", by_agent=True)
    hits, loads = [], []
    for _ in range(12):
        advance(60.0, plain, touched)
        hits.append(at(touched, "cache", "hit_ratio"))
        loads.append(at(touched, "database", "request_rate") / at(plain, "database", "request_rate"))
    assert hits[0] < 0.1 and hits == sorted(hits)
    assert loads[0] > 1.5 and loads[-1] < loads[0]
    assert hits[-1] > 0.9 * at(plain, "cache", "hit_ratio")


@pytest.mark.parametrize("seed", SEEDS)
def test_a_restarted_web_replica_drops_its_requests_and_its_peers_take_its_share(seed: int) -> None:
    plain, touched = twins(seed)
    web = touched.services["web_server"]
    gone, peer = web.replicas[0], web.replicas[1]
    failed_before = touched.collateral_errors
    touched.restart_replica(gone, reason="test", by_agent=True)
    advance(30.0, plain, touched)
    assert gone.state == "Starting" and at(touched, gone.name, "request_rate") == 0.0
    n = len(web.replicas)
    assert at(touched, peer.name, "request_rate") == pytest.approx(at(plain, peer.name, "request_rate") * n / (n - 1))
    assert at(touched, "web_server", "ready_replicas") == n - 1
    assert touched.collateral_errors > failed_before  # the in-flight requests it dropped
    advance(300.0, plain, touched)
    assert gone.state == "Running"
    assert at(touched, gone.name, "request_rate") == pytest.approx(at(plain, gone.name, "request_rate"))


@pytest.mark.parametrize("seed", SEEDS)
def test_a_new_web_replica_takes_an_even_share_and_the_total_is_unchanged(seed: int) -> None:
    plain, touched = twins(seed)
    web = touched.services["web_server"]
    n = len(web.replicas)
    touched.add_replica(web)
    advance(300.0, plain, touched)
    first = web.replicas[0].name
    assert at(touched, first, "request_rate") == pytest.approx(at(plain, first, "request_rate") * n / (n + 1))
    assert at(touched, "web_server", "request_rate") == pytest.approx(at(plain, "web_server", "request_rate"))


@pytest.mark.parametrize("seed", SEEDS)
def test_pools_larger_than_the_database_accepts_get_connections_refused(seed: int) -> None:
    """A write outside its safe envelope causes a failure of its own (DESIGN.md principle 4)."""
    plain, touched = twins(seed)
    touched.services["web_server"].config["db_pool_size"] = touched.services["database"].config["max_connections"]
    advance(120.0, plain, touched)
    assert at(touched, "database", "connections") == touched.services["database"].config["max_connections"]
    assert "too_many_conns" in touched.topo.db_primary().err_causes
    assert at(touched, "database", "error_rate") > 0.1 and at(plain, "database", "error_rate") == 0.0
    assert at(touched, "web_server", "error_rate") > 0.05 + at(plain, "web_server", "error_rate")
