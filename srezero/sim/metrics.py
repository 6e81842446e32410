"""Metric names and the row layout of the world's series buffer.

Every (entity, metric) pair owns one row of a preallocated ``float64`` array with one column per
tick. The tick model fills a flat Python list in row order and the world copies it into the
column in one numpy operation, which is what keeps a tick cheap.
"""

from __future__ import annotations

import math
import struct
from typing import TYPE_CHECKING

import numpy as np

from srezero.sim.clock import TICK_S

if TYPE_CHECKING:
    from srezero.sim.components import Replica, Service

REPLICA_METRICS = (
    "request_rate",
    "error_rate",
    "latency_p50_ms",
    "latency_p95_ms",
    "latency_p99_ms",
    "cpu_cores",
    "memory_mb",
    "connections",
    "open_fds",
    "restarts",
)
R_RPS, R_ERR, R_P50, R_P95, R_P99, R_CPU, R_MEM, R_CONNS, R_FDS, R_RESTARTS = range(len(REPLICA_METRICS))

SERVICE_BASE = ("request_rate", "error_rate", "latency_p50_ms", "latency_p95_ms", "latency_p99_ms", "ready_replicas")
S_RPS, S_ERR, S_P50, S_P95, S_P99, S_READY = range(len(SERVICE_BASE))
SERVICE_EXTRA = {
    "load_balancer": ("active_connections", "healthy_backends"),
    "web_server": ("db_pool_in_use",),
    "cache": ("hit_ratio", "evictions_per_s", "memory_used_mb"),
    "database": ("connections", "replication_lag_s", "slow_queries_per_s", "dead_tuple_pct", "lock_waits"),
    "message_queue": ("queue_depth", "queue_age_s", "dlq_depth", "publish_rate", "consume_rate", "redeliveries_per_s"),
    "worker": ("processed_per_s",),
}

NODE_METRICS = (
    "cpu_util_pct",
    "memory_used_pct",
    "root_disk_used_pct",
    "data_disk_used_pct",
    "disk_io_errors",
    "disk_latency_ms",
    "net_loss_pct",
    "conntrack_used",
    "open_fds",
    "cpu_throttled_pct",
)
N_CPU, N_MEM, N_ROOT, N_DATA, N_IOERR, N_DISKLAT, N_LOSS, N_CONNTRACK, N_FDS, N_THROTTLE = range(len(NODE_METRICS))

#: Relative noise (sigma of a multiplicative factor) by metric; unlisted metrics are exact.
NOISE_SIGMA = {
    "request_rate": 0.04,
    "latency_p50_ms": 0.05,
    "latency_p95_ms": 0.07,
    "latency_p99_ms": 0.09,
    "cpu_cores": 0.05,
    "memory_mb": 0.01,
    "connections": 0.03,
    "open_fds": 0.02,
    "active_connections": 0.04,
    "db_pool_in_use": 0.04,
    "hit_ratio": 0.005,
    "evictions_per_s": 0.1,
    "memory_used_mb": 0.01,
    "slow_queries_per_s": 0.1,
    "publish_rate": 0.04,
    "consume_rate": 0.04,
    "processed_per_s": 0.04,
    "cpu_util_pct": 0.04,
    "memory_used_pct": 0.005,
    "net_loss_pct": 0.12,  # lost packets counted over one scrape
    "disk_latency_ms": 0.08,
    "conntrack_used": 0.03,
    "queue_depth": 0.05,
}
#: Ratios measured by counting requests over a scrape (:func:`counted`): their noise is the sampling error
#: of that count, so it shrinks with traffic and vanishes at 0 and 1. Each sits right after its
#: ``request_rate`` in every layout, which holds the count.
COUNTED = ("error_rate",)
#: Upper bounds that measurement noise must not push a metric past (a 100% CPU reads 100, not 104).
NOISE_CEILING = {"hit_ratio": 1.0, "cpu_util_pct": 100.0, "memory_used_pct": 100.0}

#: The unit ``query_metrics`` prints with each metric (a test holds every metric to have one).
UNITS = {
    "request_rate": "req/s", "error_rate": "fraction of requests (0.05 = 5%)", "latency_p50_ms": "ms",
    "latency_p95_ms": "ms", "latency_p99_ms": "ms", "cpu_cores": "cores", "memory_mb": "MB",
    "connections": "open connections", "open_fds": "open file descriptors", "restarts": "restarts so far",
    "ready_replicas": "replicas", "active_connections": "client connections", "healthy_backends": "backends",
    "db_pool_in_use": "pooled connections in use, all replicas", "hit_ratio": "fraction of reads (0.9 = 90%)",
    "evictions_per_s": "keys/s", "memory_used_mb": "MB", "replication_lag_s": "s", "slow_queries_per_s": "queries/s",
    "dead_tuple_pct": "% of rows dead, most bloated table", "lock_waits": "sessions waiting on locks", "queue_depth": "messages",
    "queue_age_s": "s (oldest message)", "dlq_depth": "messages", "publish_rate": "msg/s", "consume_rate": "msg/s",
    "redeliveries_per_s": "msg/s", "processed_per_s": "jobs/s", "cpu_util_pct": "% of the node's cores",
    "memory_used_pct": "% of the node's memory", "root_disk_used_pct": "% of /", "data_disk_used_pct": "% of /var/lib/data",
    "disk_io_errors": "count", "disk_latency_ms": "ms", "net_loss_pct": "% of packets", "conntrack_used": "entries",
    "cpu_throttled_pct": "% of CPU speed lost to thermal throttling (cgroup quotas: node_diagnostics limits)",
}


#: Write consecutive rows of the tick's column (an ``array("d")``) in place: ``PACK10(vals, row * 8, *ten)``.
#: A third of the cost of ``vals[row : row + 10] = array("d", ten)`` (no tuple-to-array copy, no slice
#: assignment), and the same doubles. Every tick writes about twenty such runs.
PACK10 = struct.Struct("10d").pack_into
PACK6 = struct.Struct("6d").pack_into
PACK3 = struct.Struct("3d").pack_into


def metric_names(kind: str) -> tuple[str, ...]:
    """Metric names available for an entity kind: a service kind, "replica" or "node"."""
    if kind == "replica":
        return REPLICA_METRICS
    if kind == "node":
        return NODE_METRICS
    return SERVICE_BASE + SERVICE_EXTRA.get(kind, ())


def pcts(mean_ms: float, util: float, err_timeout_ms: float, timeout_frac: float) -> tuple[float, float, float]:
    """Latency percentiles from a mean and utilisation; timeouts pull the tail to the timeout."""
    u = min(util, 0.98)
    p50 = mean_ms * 0.8
    p95 = mean_ms * (1.7 + 1.5 * u)
    p99 = mean_ms * (2.4 + 3.0 * u)
    if timeout_frac > 0.01:
        p99 = max(p99, err_timeout_ms)
        if timeout_frac > 0.05:
            p95 = max(p95, err_timeout_ms)
        if timeout_frac > 0.5:
            p50 = max(p50, err_timeout_ms)
    return p50, p95, p99


def record_replica(vals, rep: Replica, rps: float, err: float, lat: float, util: float, conns: float) -> None:
    base = rep.row
    if rep.state == "Running":
        u = util if util < 0.98 else 0.98
        PACK10(vals, base * 8, rps, err, lat * 0.8, lat * (1.7 + 1.5 * u), lat * (2.4 + 3.0 * u),
               rep.cpu, rep.mem_mb, conns, 150.0 + conns, rep.restarts)
    else:
        PACK10(vals, base * 8, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, rep.restarts)


def record_service(vals, svc: Service, rps: float, err: float, lat: float, ready: int, util: float) -> None:
    base = svc.row
    u = util if util < 0.98 else 0.98
    PACK6(vals, base * 8, rps, err, lat * 0.8, lat * (1.7 + 1.5 * u), lat * (2.4 + 3.0 * u), ready)


def counted(ratio: np.ndarray, rps: np.ndarray, z: np.ndarray) -> np.ndarray:
    """A ratio as a metrics pipeline measures it: failed requests counted among the requests of one
    scrape (``rps`` x :data:`TICK_S`, whole requests), drawn from the binomial about the true ratio
    (its normal approximation, ``z`` standard normals) and rounded to whole requests. Fewer than one
    request in the scrape, or a ratio of 0 or 1, is measured as it is. :func:`counted_one` is the same
    for one value, to the bit."""
    n = np.rint(rps * TICK_S)
    out = ratio.copy()
    use = (n >= 1.0) & (ratio > 0.0) & (ratio < 1.0)
    if use.any():
        p, m = ratio[use], n[use]
        k = np.rint(p * m + z[use] * np.sqrt(m * p * (1.0 - p)))
        out[use] = np.minimum(np.maximum(k, 0.0), m) / m
    return out


def counted_one(ratio: float, rps: float, z: float) -> float:
    """:func:`counted` for one sample (the alert rules' per-tick evaluation), with the same arithmetic."""
    n = round(rps * TICK_S)
    if n < 1 or ratio <= 0.0 or ratio >= 1.0:
        return ratio
    k = round(ratio * n + z * math.sqrt(n * ratio * (1.0 - ratio)))
    return min(max(k, 0), n) / n
