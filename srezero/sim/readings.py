"""What the recorded series may read: limits a reading never passes, and a past that a fault rewrites.

A gauge of the live system cannot read past the limit that bounded it at the time (a node's open
files stop at ``fs.file-max``; the edge holds at most its ``max_connections``; a pod's CPU stops at its
cgroup quota), whatever measurement noise would add. And some faults put in place at their onset what had been building unnoticed
before it (a runaway writer's bytes, a leak's descriptors): the recorded past climbs to it instead of
jumping in one scrape.

Measurement noise on a reading indexes one table of standard normals shared by every world
(:func:`noise_table`), scaled per row by :func:`row_table`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from srezero.sim import metrics as M
from srezero.sim.clock import TICK_S
from srezero.sim.components import SERVICE_KINDS

if TYPE_CHECKING:
    from srezero.sim.components import Node, Service
    from srezero.sim.config import Config
    from srezero.sim.world import World

PER_METRIC_TABLES = {"sigma": (M.NOISE_SIGMA, 0.0), "ceiling": (M.NOISE_CEILING, float("inf")),
                     "counted": (dict.fromkeys(M.COUNTED, 1.0), 0.0)}


#: size of the measurement-noise table (a prime, so index hashes spread over all of it)
NOISE_TABLE_SIZE = 4099


@functools.cache
def noise_table() -> tuple[np.ndarray, list[float]]:
    """The standard normals every world's measurement noise and render randomness index into.

    Drawn once per process from a fixed seed (the same draws everywhere). Each world reads it from
    its own seeded offset, so drawing 4,099 normals per world (about 0.1 ms, paid on a world's first
    noisy read) is not needed; within an episode the noise is as before. Read-only: shared.
    """
    table = np.random.Generator(np.random.PCG64(0x5EED_7AB1E)).normal(0.0, 1.0, size=NOISE_TABLE_SIZE)
    table.setflags(write=False)
    return table, table.tolist()


@functools.lru_cache(maxsize=128)
def row_table(which: str, n_nodes: int, n_rows: int) -> np.ndarray:
    """A per-metric constant (``sigma``: measurement-noise sigma; ``ceiling``: the bound noise may
    not cross; ``counted``: 1 for a ratio measured by counting, :func:`srezero.sim.metrics.counted`)
    laid out per row: services, nodes, then replicas up to ``n_rows`` (the spare rows of replicas yet
    to start are measured as any replica's). Shared between worlds of the same shape, so read-only."""
    values, default = PER_METRIC_TABLES[which]
    per = [values.get(m, default) for kind in SERVICE_KINDS for m in M.metric_names(kind)]
    per += [values.get(m, default) for m in M.NODE_METRICS] * n_nodes
    per += [values.get(m, default) for m in M.REPLICA_METRICS] * ((n_rows - len(per)) // len(M.REPLICA_METRICS))
    table = np.array(per, dtype=np.float64)
    table.setflags(write=False)
    return table


#: A limit over the columns c0..c1 of a read: a number, or one per column.
Limit = Callable[[int, int], Any]


def limited_rows(w: World) -> dict[int, Limit]:
    """The rows whose readings a limit bounds (:meth:`World.series` applies them), and their limits."""
    rows: dict[int, Limit] = {}
    for node in w.topo.nodes:
        rows[node.row + M.N_FDS] = functools.partial(kernel_limit, node, "fd_max")
        rows[node.row + M.N_CONNTRACK] = functools.partial(kernel_limit, node, "conntrack_max")
    rows[w.row_of[("load_balancer", "active_connections")]] = functools.partial(
        _config_limit, w.services["load_balancer"].config, "max_connections")
    return rows


def kernel_limit(node: Node, attr: str, c0: int, c1: int) -> Any:
    """A node's kernel table size (``fs.file-max``, ``nf_conntrack_max``) as it was at each column's time:
    its value now, and before each change (:func:`srezero.sim.nodes.set_kernel_limit`) the value it had."""
    now = float(getattr(node, attr))
    changes = [(at, float(old)) for at, name, old in node.limit_log if name == attr]
    if not changes:
        return now
    # each value holds from its change on; the first change's old value held before it
    values = [old for _, old in changes[1:]] + [now]
    return _stepwise([-math.inf, *(at for at, _ in changes)], [changes[0][1], *values], c0, c1)


def _config_limit(config: Config, key: str, c0: int, c1: int) -> np.ndarray:
    """A config limit as it was at each column's time."""
    return np.array([float(config.at(key, c * TICK_S)) for c in range(c0, c1 + 1)])


def quota_limit(svc: Service, c0: int, c1: int) -> Any:
    """A pod's CPU: at most its service's cgroup quota of each column's time (cpu.max caps each period)."""
    quotas = svc.quotas
    if not quotas:
        return math.inf
    return _stepwise([at for at, _ in quotas], [q if q > 0.0 else math.inf for _, q in quotas], c0, c1)  # 0: none


def _stepwise(times: list[float], values: list[float], c0: int, c1: int) -> np.ndarray:
    """A value that changed at ``times`` (ascending), read at each column c0..c1: the value of the last
    change at or before the column's time (the first value before any)."""
    at = np.searchsorted(times, np.arange(c0, c1 + 1) * TICK_S, side="right") - 1
    return np.take(values, np.maximum(at, 0))


def backdate_ramp(w: World, row: int, added: float, per_tick: float, cap: float = math.inf) -> None:
    """``added`` put in place at the onset had been building at ``per_tick`` a column before it: the
    recorded past of ``row`` climbs to it, and an alert on the row fires from when that past crossed
    its threshold (:meth:`AlertBook.backdate`)."""
    if added <= 0.0 or per_tick <= 0.0:
        return
    n = min(w.col + 1, math.ceil(added / per_tick))
    ramp = added - per_tick * np.arange(n - 1, -1, -1, dtype=np.float64)  # reaches `added` at the onset
    past = w.buf[row, w.col - n + 1 : w.col + 1]
    past += np.maximum(ramp - per_tick, 0.0)  # the latest column is a tick before the onset's
    np.minimum(past, cap, out=past)
    if w.alerts_live:
        w.alerts.backdate(row)
