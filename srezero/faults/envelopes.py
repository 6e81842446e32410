"""Safe envelopes for configuration values: when is a value healthy for *this* world?

Envelopes are relative to the world's own load and limits, so a value that is fine in one seed can
be too small in another. A value outside its envelope either fails to cure a fault (a timeout still
too short) or causes a new one (a pool so large the database refuses connections). The model
enforces the consequences; these predicates let the mitigation oracle name the problem in words.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from srezero.sim.lifecycle import database_url_problem

if TYPE_CHECKING:
    from srezero.sim.world import World


def _pool_ok(w: World, v: Any) -> bool:
    web = w.services["web_server"]
    n = sum(1 for r in web.replicas if r.state != "Terminated")
    total = n * int(v) + len(w.services["worker"].replicas) * 4 + 6
    return int(v) >= 4 and total <= w.services["database"].config["max_connections"]


def _max_conns_ok(w: World, v: Any) -> bool:
    web = w.services["web_server"]
    n = sum(1 for r in web.replicas if r.state != "Terminated")
    need = n * int(web.config["db_pool_size"]) + len(w.services["worker"].replicas) * 4 + 6
    return need <= int(v) <= 2000


def _rate_limit_ok(w: World, v: Any) -> bool:
    if int(v) == 0:
        return True
    web = w.services["web_server"]
    n = max(1, sum(1 for r in web.replicas if r.state == "Running"))
    return int(v) >= 1.5 * w.state.base_rps * 1.3 / n


def _cache_limit_ok(w: World, v: Any) -> bool:
    """Room for the cache's dataset (capped by maxmemory) plus overhead, within the node's memory."""
    cache = w.services["cache"]
    rep = cache.replicas[0]
    need = rep.base_mem_mb * 0.2 + min(float(cache.config["maxmemory_mb"]), w.state.cache_ws_mb)
    return need * 1.2 <= int(v) <= rep.node.mem_total_mb * 0.5


def _visibility_ok(w: World, v: Any) -> bool:
    """Longer than the longest job (or redeliveries duplicate work), at most SQS's 12 hours."""
    longest = max(3 * w.state.worker_proc_ms / 1000 * 3, 1.5 * w.state.mq_long_s)
    return longest <= int(v) <= 43_200


def _inflight_ok(w: World, v: Any) -> bool:
    """At least the consumer's ack batch (below it consumers stall on the ack timer), bounded above."""
    return w.state.mq_ack_batch <= int(v) <= 5000


def _timeout_ok(w: World, v: Any) -> bool:
    return 4 * w.state.db_base_lat_ms * 10 <= int(v) <= 30000


ENVELOPES: dict[tuple[str, str], Callable[[World, Any], bool]] = {
    ("web_server", "db_timeout_ms"): _timeout_ok,
    ("web_server", "db_retries"): lambda w, v: 0 <= int(v) <= 2,
    ("web_server", "db_pool_size"): _pool_ok,
    ("web_server", "workers"): lambda w, v: 8 <= int(v) <= 256,
    ("web_server", "db_host"): lambda w, v: v == w.state.db_addr,
    ("web_server", "cache_host"): lambda w, v: v == w.state.cache_addr,
    ("web_server", "queue_host"): lambda w, v: v == w.state.mq_addr,
    ("web_server", "rate_limit_rps"): _rate_limit_ok,
    ("web_server", "cpu_limit"): lambda w, v: 1.0 <= float(v) <= 8.0,
    ("web_server", "memory_limit_mb"): lambda w, v: int(v) >= 900,
    ("web_server", "max_open_files"): lambda w, v: int(v) >= 2048,
    ("load_balancer", "health_check_path"): lambda w, v: v == w.state.health_path,
    ("load_balancer", "max_connections"): lambda w, v: 2 * w.state.base_rps * 1.5 <= int(v) <= 100_000,
    ("load_balancer", "idle_timeout_s"): lambda w, v: 30 <= int(v) <= 3600,
    ("load_balancer", "tls_cert_days_left"): lambda w, v: int(v) > 7,
    ("cache", "maxmemory_mb"): lambda w, v: w.state.cache_ws_mb <= int(v) <= 16384,
    ("cache", "ttl_s"): lambda w, v: 120 <= int(v) <= 86400,
    ("database", "max_connections"): _max_conns_ok,
    ("database", "statement_timeout_ms"): lambda w, v: int(v) >= 1000,
    ("message_queue", "visibility_timeout_s"): _visibility_ok,
    ("message_queue", "max_inflight"): _inflight_ok,
    ("worker", "concurrency"): lambda w, v: 4 <= int(v) <= 64,
    ("web_server", "cache_auth_secret"): lambda w, v: v == w.services["cache"].config["auth_secret"],
    ("cache", "memory_limit_mb"): _cache_limit_ok,
    ("database", "max_standby_streaming_delay_s"): lambda w, v: 0 <= int(v) <= 50,
    ("database", "autovacuum"): lambda w, v: v is True,
    ("load_balancer", "sticky_sessions"): lambda w, v: v is False,
    ("message_queue", "dlq_max_messages"): lambda w, v: 2 * w.state.mq_dlq + 10_000 <= int(v) <= 1_000_000,
    # any URL the processes can connect with (the model's own test, so the oracle and the world agree)
    ("web_server", "env.DATABASE_URL"): lambda w, v: not database_url_problem(v, w.state.db_addr),
    ("worker", "env.DATABASE_URL"): lambda w, v: not database_url_problem(v, w.state.db_addr),
}


def within(w: World, service: str, key: str, value: Any) -> bool | None:
    """Is ``value`` safe for ``service.key`` in this world? None when the key has no envelope; a value
    of the wrong type is unsafe."""
    check = ENVELOPES.get((service, key))
    if check is None:
        return None
    try:
        return bool(check(w, value))
    except (TypeError, ValueError):
        return False


def healthy(w: World, service: str, key: str, original: Any) -> bool:
    """Is the current value of ``service.key`` safe? Unknown keys must equal their original value."""
    value = w.services[service].config.get(key)
    safe = within(w, service, key, value)
    return value == original if safe is None else safe
