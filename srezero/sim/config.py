"""The configuration surface of each service: keys, types, meaning, and seeded healthy defaults.

Healthy values are drawn per seed (DESIGN.md principle 5), so diffing a config against a constant
default never reveals a fault. ``set_config`` validates values against the types declared here and
against each numeric key's ``valid`` range: what the service's own config validation accepts (a
negative TTL, a pool of zero connections), far wider than what is healthy. The *safety* of a valid
value is not checked here but emerges from the model (a pool larger than the database's
``max_connections`` overloads it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
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
    #: (lo, hi) of a numeric key: values the service accepts; outside it a reload is refused
    valid: tuple[float, float] | None = None


def _choice(*values: Any) -> Callable[[Stream], Any]:
    n = len(values)
    return lambda rng: values[rng.integers(0, n)]


def _const(value: Any) -> Callable[[Stream], Any]:
    return lambda rng: value


def _int(lo: int, hi: int, step: int = 1) -> Callable[[Stream], int]:
    low, high = lo // step, hi // step + 1
    return lambda rng: rng.integers(low, high) * step


def _float(lo: float, hi: float, step: float) -> Callable[[Stream], float]:
    n = round((hi - lo) / step) + 1
    return lambda rng: round(lo + step * rng.integers(0, n), 4)


#: What a pod's cgroup limits may be set to (valid ranges shared by every service that has them).
CPU_CORES = (0.01, 256)
MEMORY_MB = (16, 1_048_576)

# Healthy values span a range, not a handful of round numbers: an agent that learns "the values a
# healthy key takes" from public seeds must not be able to flag a changed key by its value alone
# (DESIGN.md principle 5). Ranges stay inside what the model is calibrated for. Keys a world sets
# by convention (addresses, the probe path, the cache secret...; see ``Conventions``) show a
# placeholder default here: ``topology.build`` overwrites it with the world's own value.
KEYS: tuple[ConfigKey, ...] = (
    # load_balancer
    ConfigKey("load_balancer", "health_check_path", str, "HTTP path probed on each backend", _const("/healthz")),
    ConfigKey("load_balancer", "max_connections", int, "concurrent client connections accepted", _int(3000, 12000, 250),
              valid=(1, 1_000_000)),
    ConfigKey("load_balancer", "idle_timeout_s", int, "seconds an idle or slow upstream connection is kept", _int(60, 300, 15),
              valid=(1, 86_400)),
    ConfigKey("load_balancer", "sticky_sessions", bool, "pin each client to one backend", _const(False)),
    ConfigKey("load_balancer", "tls_cert_days_left", int, "days until the serving certificate expires", _int(35, 80),
              valid=(-3_650, 3_650)),
    # web_server
    ConfigKey("web_server", "workers", int, "request worker threads per replica", _int(16, 36, 2),
              valid=(1, 1_024)),
    ConfigKey("web_server", "db_pool_size", int, "database connections per replica", _int(10, 24),
              valid=(1, 10_000)),
    ConfigKey("web_server", "db_timeout_ms", int, "per-query client timeout", _int(1800, 3200, 100),
              valid=(1, 3_600_000)),
    ConfigKey("web_server", "db_retries", int, "retries after a database timeout", _choice(0, 1),
              valid=(0, 100)),
    ConfigKey("web_server", "db_host", str, "database address", _const("database:5432")),
    ConfigKey("web_server", "cache_host", str, "cache address", _const("cache:6379")),
    ConfigKey("web_server", "cache_coalescing", bool, "coalesce concurrent misses on one cache key into one "
              "database query (single-flight)", _const(True)),
    ConfigKey("web_server", "queue_host", str, "message broker address", _const("message_queue:5672")),
    ConfigKey("web_server", "rate_limit_rps", int, "per-replica request limit (0 = off)", _const(0),
              valid=(0, 10_000_000)),
    ConfigKey("web_server", "cpu_limit", float, "cgroup CPU quota per replica, in cores", _float(2.0, 3.0, 0.25),
              valid=CPU_CORES),
    ConfigKey("web_server", "memory_limit_mb", int, "cgroup memory limit per replica", _int(1024, 2048, 128),
              valid=MEMORY_MB),
    ConfigKey("web_server", "max_open_files", int, "RLIMIT_NOFILE per replica", _int(4096, 16384, 1024),
              valid=(16, 1_048_576)),
    ConfigKey("web_server", "log_level", str, "application log level", _choice("info", "warn")),
    ConfigKey("web_server", "cache_auth_secret", str, "secret (name-version) presented to the cache", _const("cache-auth-v2")),
    # cache
    ConfigKey("cache", "maxmemory_mb", int, "memory limit before eviction", _int(3072, 6144, 256),
              valid=(1, 1_048_576)),
    ConfigKey("cache", "ttl_s", int, "default key time-to-live", _int(300, 1800, 60),
              valid=(1, 31_536_000)),
    ConfigKey("cache", "eviction_policy", str, "eviction policy", _const("allkeys-lru")),
    ConfigKey("cache", "max_clients", int, "client connection limit", _int(10000, 50000, 5000),
              valid=(1, 1_000_000)),
    ConfigKey("cache", "memory_limit_mb", int, "cgroup memory limit of the cache pod", _const(10240),
              valid=MEMORY_MB),
    ConfigKey("cache", "auth_secret", str, "secret (name-version) the server requires (requirepass)", _const("cache-auth-v2")),
    # database
    ConfigKey("database", "max_connections", int, "server connection limit", _int(300, 600, 25),
              valid=(1, 262_143)),
    ConfigKey("database", "statement_timeout_ms", int, "server-side query timeout", _int(5000, 60000, 5000),
              valid=(1, 86_400_000)),
    ConfigKey("database", "autovacuum", bool, "reclaim dead tuples automatically", _const(True)),
    ConfigKey("database", "shared_buffers_mb", int, "page cache", _int(2048, 16384, 1024),
              valid=(1, 1_048_576)),
    ConfigKey("database", "max_standby_streaming_delay_s", int,
              "how long standby WAL replay waits for conflicting queries (-1 = forever)", _const(30),
              valid=(-1, 86_400)),
    # message_queue
    ConfigKey("message_queue", "visibility_timeout_s", int, "seconds before an unacked message is redelivered", _int(60, 600, 30),
              valid=(1, 43_200)),
    ConfigKey("message_queue", "max_inflight", int, "unacked messages per consumer", _int(50, 250, 10),
              valid=(1, 65_535)),
    ConfigKey("message_queue", "dlq_max_messages", int, "dead-letter queue capacity", _int(10000, 100000, 5000),
              valid=(1, 100_000_000)),
    ConfigKey("message_queue", "max_redeliveries", int, "attempts before a message goes to the dead-letter queue", _int(4, 10),
              valid=(1, 1_000)),
    # worker
    ConfigKey("worker", "concurrency", int, "messages processed in parallel per replica", _int(8, 16),
              valid=(1, 1_024)),
    ConfigKey("worker", "cpu_limit", float, "cgroup CPU quota per replica, in cores", _float(1.0, 2.0, 0.25),
              valid=CPU_CORES),
    ConfigKey("worker", "memory_limit_mb", int, "cgroup memory limit per replica", _int(768, 1280, 128),
              valid=MEMORY_MB),
)

#: Addresses (host:port) the operators of a world chose for each dependency. None is "the healthy
#: address" everywhere, so an address is right or wrong only against what this world runs.
ENDPOINTS: dict[str, tuple[str, ...]] = {
    "database": ("database:5432", "postgres:5432", "pg-main:5432", "db.internal:5432", "pgbouncer:6432"),
    "cache": ("cache:6379", "redis:6379", "redis-main:6379", "cache.internal:6379"),
    "message_queue": ("message_queue:5672", "rabbitmq:5672", "mq-main:5672", "amqp.internal:5672"),
}
#: The web tier's configuration key for each dependency's address.
HOST_KEYS: dict[str, str] = {"database": "db_host", "cache": "cache_host", "message_queue": "queue_host"}
#: Health-check paths an app may serve; each world's web tier serves exactly one.
HEALTH_PATHS = ("/healthz", "/health", "/livez", "/status", "/api/health", "/ping")
#: Kernel limits node images ship with (all far above what the model's load needs).
FILE_MAX = (524_288, 1_048_576, 1_048_576, 2_097_152, 6_553_600)
CONNTRACK_MAX = (131_072, 262_144, 262_144, 524_288, 1_048_576)
PORT_RANGES = ((32_768, 60_999), (32_768, 60_999), (10_240, 65_535), (15_000, 64_999), (32_768, 65_535))
#: The unit of a world's load-balancer weights (every backend has the same weight when healthy).
WEIGHT_SCALES = (1, 1, 10, 100)


@dataclass(frozen=True)
class Conventions:
    """Choices made once when a world's system was set up, drawn per seed from their own stream."""

    endpoints: dict[str, str]
    health_path: str
    weight_scale: int
    rate_limit_headroom: float  # 0: no rate limit; else the limit as a multiple of a replica's share of traffic
    overrides: dict[tuple[str, str], Any]  # (service, key) -> this world's value of a key set by convention
    #: settings this world's operators left outside the healthy draw range long ago (:data:`QUIRKS`)
    quirks: dict[tuple[str, str], Any] = field(default_factory=dict)
    #: the node image's kernel limits: fs.file-max, nf_conntrack_max and the ephemeral port range (low,
    #: high); the same on every node of a world, different between worlds, so only a node that differs
    #: from its siblings stands out
    kernel: tuple[int, int, int, int] = (1_048_576, 262_144, 32_768, 60_999)

    def database_url(self) -> str:
        return f"postgres://app@{self.endpoints['database']}/app"


def conventions(rng: Stream) -> Conventions:
    """Draw a world's conventions. A separate stream, so placement and sizes do not move with them."""

    def pick(values: tuple[Any, ...]) -> Any:
        return values[int(rng.integers(0, len(values)))]

    endpoints = {dep: pick(pool) for dep, pool in ENDPOINTS.items()}
    overrides: dict[tuple[str, str], Any] = {
        ("cache", "eviction_policy"): pick(("allkeys-lru", "allkeys-lru", "allkeys-lfu")),
        ("cache", "memory_limit_mb"): pick((10240, 12288, 14336, 16384)),
        ("database", "max_standby_streaming_delay_s"): pick((15, 30, 30, 45)),
    }
    secret = f"cache-auth-v{int(rng.integers(2, 9))}"  # the cache requires what the web tier presents
    overrides[("web_server", "cache_auth_secret")] = secret
    overrides[("cache", "auth_secret")] = secret
    for dep, key in HOST_KEYS.items():
        overrides[("web_server", key)] = endpoints[dep]
    headroom = float(rng.uniform(8.0, 14.0)) if rng.random() < 0.35 else 0.0
    health_path = pick(HEALTH_PATHS)
    overrides[("load_balancer", "health_check_path")] = health_path
    weight_scale = pick(WEIGHT_SCALES)
    kernel = (pick(FILE_MAX), pick(CONNTRACK_MAX), *pick(PORT_RANGES))
    # drawn last, so every convention above stays what it was before quirks existed
    quirks = {(svc, key): draw(rng) for svc, key, draw in
              (QUIRKS[i] for i in sorted(rng.permutation(len(QUIRKS))[: pick(QUIRK_COUNTS)]))}
    return Conventions(endpoints, health_path, weight_scale, headroom, overrides, quirks, kernel)


#: Settings a world's operators may have left, long ago, at a value outside the healthy draw range:
#: debug logging nobody turned back off, Postgres's stock 128 MB of shared buffers (or a generous
#: share of the node), a client cap sized for the handful of clients a cache has, a long edge
#: timeout for a long-poll endpoint. Each is harmless in the model: a key no model reads, or a limit
#: that binds only further from the load than a healthy one. So a value no other world shows is no
#: evidence by itself, as an engineer's "that looks odd" is not (docs/scoring.md, "Config diffing").
QUIRKS: tuple[tuple[str, str, Callable[[Stream], Any]], ...] = (
    ("web_server", "log_level", _const("debug")),
    ("database", "shared_buffers_mb", _choice(128, 128, 256, 512, 24576, 32768)),
    ("cache", "max_clients", _int(1000, 4000, 500)),
    ("load_balancer", "idle_timeout_s", _int(900, 3600, 300)),
)
#: How many of :data:`QUIRKS` a world has (one draw from this tuple): most worlds have one.
QUIRK_COUNTS = (0, 0, 1, 1, 1, 1, 2, 2)


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


#: (key, its default's draw) per service, in declaration order: what :func:`defaults` walks
_DRAWS: dict[str, tuple[tuple[str, Callable[[Stream], Any]], ...]] = {
    svc: tuple((k.key, k.default) for k in keys.values()) for svc, keys in BY_SERVICE.items()}


def defaults(service: str, rng: Stream) -> Config:
    """Seeded healthy values for every static key of ``service``."""
    return Config({key: draw(rng) for key, draw in _DRAWS.get(service, ())})


class Config(dict):
    """A service's live configuration: a dict that remembers what each write replaced, once it has a
    clock, so that telemetry of a past moment shows the value of that moment (:meth:`at`). Log lines
    are rendered when first read, and a line of the last quarter hour must not quote a limit the agent
    raised a minute ago. Reads are plain dict reads; every write goes through ``__setitem__``."""

    __slots__ = ("clock", "replaced")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.clock: Any = None  # a simpy Environment once the world runs; writes before it are the build
        self.replaced: list[tuple[float, str, Any]] = []  # (time, key, value before the write)

    def __setitem__(self, key: str, value: Any) -> None:
        if self.clock is not None:
            self.replaced.append((self.clock.now, key, self.get(key, _ABSENT)))
        super().__setitem__(key, value)

    def update(self, *args: Any, **kwargs: Any) -> None:  # through __setitem__, so nothing goes unrecorded
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def at(self, key: str, t: float) -> Any:
        """The value ``key`` had at simulated time ``t`` (a write at ``t`` itself counts)."""
        value = self.get(key, _ABSENT)
        for when, k, before in reversed(self.replaced):
            if when <= t:
                break
            if k == key:
                value = before
        return None if value is _ABSENT else value


_ABSENT = object()


def key_type(service: str, key: str) -> type | None:
    """The declared type of ``service.key``, or None if the key does not exist."""
    spec = BY_SERVICE.get(service, {}).get(key)
    if spec is not None:
        return spec.type
    for prefix, typ in DYNAMIC_PREFIXES.get(service, {}).items():
        if key.startswith(prefix) and len(key) > len(prefix):
            return typ
    return None


#: Valid ranges of keys with a built-in suffix (``DYNAMIC_PREFIXES``); 0 drains a backend.
DYNAMIC_VALID: dict[str, tuple[float, float]] = {"backend_weight.": (0, 1_000_000)}


def valid_range(service: str, key: str) -> tuple[float, float] | None:
    """(lo, hi) of the values ``service`` accepts for a numeric ``key``; None for other keys."""
    spec = BY_SERVICE.get(service, {}).get(key)
    if spec is not None:
        return spec.valid
    return next((r for prefix, r in DYNAMIC_VALID.items() if key.startswith(prefix)), None)


def check_range(service: str, key: str, value: Any) -> None:
    """Raise ValueError when ``value`` (already coerced) is outside what ``service`` accepts for ``key``."""
    bounds = valid_range(service, key)
    if bounds is None or isinstance(value, bool) or not isinstance(value, int | float):
        return
    lo, hi = bounds
    if not lo <= value <= hi:
        def num(x: float) -> str:
            return str(int(x)) if float(x).is_integer() else repr(x)

        raise ValueError(f"{service} accepts {key} from {num(lo)} to {num(hi)}, not {value!r}")


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
