"""The configuration surface of each service: keys, types, meaning, and seeded healthy defaults.

Healthy values are drawn per seed (DESIGN.md principle 5), so diffing a config against a constant
default never reveals a fault. ``set_config`` validates values against the types declared here; the
*safety* of a value is not checked here but emerges from the model (a pool larger than the
database's ``max_connections`` overloads it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from srezero.sim.rng import Stream


@dataclass(frozen=True)
class ConfigKey:
    service: str
    key: str
    type: type
    description: str
    default: Callable[[Stream], Any]


def _choice(*values: Any) -> Callable[[Stream], Any]:
    return lambda rng: values[int(rng.integers(0, len(values)))]


def _const(value: Any) -> Callable[[Stream], Any]:
    return lambda rng: value


def _int(lo: int, hi: int, step: int = 1) -> Callable[[Stream], int]:
    return lambda rng: int(rng.integers(lo // step, hi // step + 1)) * step


KEYS: tuple[ConfigKey, ...] = (
    # load_balancer
    ConfigKey("load_balancer", "health_check_path", str, "HTTP path probed on each backend", _const("/healthz")),
    ConfigKey("load_balancer", "max_connections", int, "concurrent client connections accepted", _int(4000, 8000, 500)),
    ConfigKey("load_balancer", "idle_timeout_s", int, "seconds an idle or slow upstream connection is kept", _choice(60, 75, 90, 120)),
    ConfigKey("load_balancer", "sticky_sessions", bool, "pin each client to one backend", _const(False)),
    ConfigKey("load_balancer", "tls_cert_days_left", int, "days until the serving certificate expires", _int(35, 80)),
    # web_server
    ConfigKey("web_server", "workers", int, "request worker threads per replica", _choice(16, 24, 32)),
    ConfigKey("web_server", "db_pool_size", int, "database connections per replica", _choice(10, 12, 15, 20)),
    ConfigKey("web_server", "db_timeout_ms", int, "per-query client timeout", _choice(1500, 2000, 2500, 3000)),
    ConfigKey("web_server", "db_retries", int, "retries after a database timeout", _choice(0, 1)),
    ConfigKey("web_server", "db_host", str, "database address", _const("database:5432")),
    ConfigKey("web_server", "cache_host", str, "cache address", _const("cache:6379")),
    ConfigKey("web_server", "cache_coalescing", bool, "coalesce concurrent misses on one cache key into one "
              "database query (single-flight)", _const(True)),
    ConfigKey("web_server", "queue_host", str, "message broker address", _const("message_queue:5672")),
    ConfigKey("web_server", "rate_limit_rps", int, "per-replica request limit (0 = off)", _const(0)),
    ConfigKey("web_server", "cpu_limit", float, "cgroup CPU quota per replica, in cores", _choice(2.0, 2.5, 3.0)),
    ConfigKey("web_server", "memory_limit_mb", int, "cgroup memory limit per replica", _choice(1024, 1536, 2048)),
    ConfigKey("web_server", "max_open_files", int, "RLIMIT_NOFILE per replica", _choice(4096, 8192, 16384)),
    ConfigKey("web_server", "log_level", str, "application log level", _choice("info", "warn")),
    ConfigKey("web_server", "cache_auth_secret", str, "secret (name-version) presented to the cache", _const("cache-auth-v2")),
    # cache
    ConfigKey("cache", "maxmemory_mb", int, "memory limit before eviction", _choice(3072, 4096, 6144)),
    ConfigKey("cache", "ttl_s", int, "default key time-to-live", _choice(300, 600, 900)),
    ConfigKey("cache", "eviction_policy", str, "eviction policy", _const("allkeys-lru")),
    ConfigKey("cache", "max_clients", int, "client connection limit", _choice(10000)),
    ConfigKey("cache", "memory_limit_mb", int, "cgroup memory limit of the cache pod", _const(10240)),
    ConfigKey("cache", "auth_secret", str, "secret (name-version) the server requires (requirepass)", _const("cache-auth-v2")),
    # database
    ConfigKey("database", "max_connections", int, "server connection limit", _choice(300, 400, 500)),
    ConfigKey("database", "statement_timeout_ms", int, "server-side query timeout", _choice(5000, 10000, 30000)),
    ConfigKey("database", "autovacuum", bool, "reclaim dead tuples automatically", _const(True)),
    ConfigKey("database", "shared_buffers_mb", int, "page cache", _choice(4096, 8192)),
    ConfigKey("database", "max_standby_streaming_delay_s", int,
              "how long standby WAL replay waits for conflicting queries (-1 = forever)", _const(30)),
    # message_queue
    ConfigKey("message_queue", "visibility_timeout_s", int, "seconds before an unacked message is redelivered", _choice(60, 120, 300)),
    ConfigKey("message_queue", "max_inflight", int, "unacked messages per consumer", _choice(50, 100, 200)),
    ConfigKey("message_queue", "dlq_max_messages", int, "dead-letter queue capacity", _choice(10000, 50000)),
    ConfigKey("message_queue", "max_redeliveries", int, "attempts before a message goes to the dead-letter queue", _choice(5, 10)),
    # worker
    ConfigKey("worker", "concurrency", int, "messages processed in parallel per replica", _choice(8, 12, 16)),
    ConfigKey("worker", "cpu_limit", float, "cgroup CPU quota per replica, in cores", _choice(1.0, 1.5, 2.0)),
    ConfigKey("worker", "memory_limit_mb", int, "cgroup memory limit per replica", _choice(768, 1024)),
)

#: Keys that describe the world rather than configure it: shown by get_config, not settable.
READ_ONLY: frozenset[tuple[str, str]] = frozenset({("load_balancer", "tls_cert_days_left")})

BY_SERVICE: dict[str, dict[str, ConfigKey]] = {}
for _k in KEYS:
    BY_SERVICE.setdefault(_k.service, {})[_k.key] = _k

#: Keys whose name carries a suffix chosen at build time (a replica name, a flag name).
DYNAMIC_PREFIXES: dict[str, dict[str, type]] = {
    "load_balancer": {"backend_weight.": int},
    "web_server": {"feature_flag.": bool, "env.": str},
    "worker": {"env.": str},
}

FEATURE_FLAGS = ("async_invoices", "new_pricing", "search_v2", "bulk_export", "smart_retry")


def defaults(service: str, rng: Stream) -> dict[str, Any]:
    """Seeded healthy values for every static key of ``service``."""
    return {k.key: k.default(rng) for k in BY_SERVICE.get(service, {}).values()}


def key_type(service: str, key: str) -> type | None:
    """The declared type of ``service.key``, or None if the key does not exist."""
    spec = BY_SERVICE.get(service, {}).get(key)
    if spec is not None:
        return spec.type
    for prefix, typ in DYNAMIC_PREFIXES.get(service, {}).items():
        if key.startswith(prefix) and len(key) > len(prefix):
            return typ
    return None


def coerce(value: Any, typ: type) -> Any:
    """Convert an agent-supplied value to ``typ``; raise ValueError with a readable message."""
    if typ is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("true", "1", "on", "yes"):
            return True
        if text in ("false", "0", "off", "no"):
            return False
        raise ValueError(f"expected a boolean (true/false), got {value!r}")
    if typ is int:
        if isinstance(value, bool):
            raise ValueError(f"expected an integer, got {value!r}")
        try:
            as_float = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"expected an integer, got {value!r}") from None
        if not as_float.is_integer() or abs(as_float) > 1e12:
            raise ValueError(f"expected an integer, got {value!r}")
        return int(as_float)
    if typ is float:
        try:
            result = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"expected a number, got {value!r}") from None
        if result != result or abs(result) > 1e12:
            raise ValueError(f"expected a finite number, got {value!r}")
        return result
    if not isinstance(value, str | int | float):
        raise ValueError(f"expected a string, got {type(value).__name__}")
    return str(value)
