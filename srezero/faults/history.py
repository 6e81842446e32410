"""Harmless history: changes of every kind a fault makes, that only ever changed the record.

Each item here is written after the faults are set up (``World.after_faults``), so it can keep each
key's story consistent: an edit is only placed on a key no entry mentions yet, and it ends at the
value the key has now, so reading the history in time order always explains the live config. None
of them touches the dynamics: the config they arrive at is the one the world was built with.

Wording is drawn by :mod:`srezero.sim.changes`, as for faults' changes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from srezero.faults.envelopes import ENVELOPES, within
from srezero.sim import changes
from srezero.sim.config import ENDPOINTS, HEALTH_PATHS
from srezero.sim.nodes import SYSCTLS, sysctl_value
from srezero.sim.topology import AUTHORS

if TYPE_CHECKING:
    from srezero.sim.components import Node
    from srezero.sim.rng import Stream
    from srezero.sim.world import World

#: Keys whose value is not a setting someone tunes (a countdown to certificate expiry).
_NOT_EDITED = frozenset({"tls_cert_days_left"})
_LEVELS = ("debug", "info", "warn", "error")
_INDEXES = (("orders", "created_at"), ("orders", "customer_id"), ("order_items", "order_id"),
            ("invoices", "status"), ("events", "occurred_at"), ("sessions", "user_id"), ("payments", "order_id"))
#: How far an edit's old value may lie from its new one (a ratio, either way). An edit made while the
#: metrics history runs stays modest, since the series would show a harmful old value; one made days
#: before can be anything a fault's edit could be. No edit is timid: the ratio is always over 1.15.
RECENT_SPAN = 2.5
_OLD_SPAN = 16.0
#: Share of days-old edits that were reverted later: a bad-looking value set and put back, so a change
#: away from a healthy value in the history is no proof by itself (the live config tells).
_REVERTED_SHARE = 0.4


def _pick(rng: Stream, seq: tuple[Any, ...] | list[Any]) -> Any:
    return seq[int(rng.integers(0, len(seq)))]


def ratio_of(u_size: float, up: bool, span: float) -> float:
    """A factor between 1/span and span, log-uniform in size from the uniform draw ``u_size``, never
    within 15% of 1; above 1 when ``up``."""
    lo = math.log(1.15)
    size = math.exp(lo + (math.log(span) - lo) * u_size)
    return size if up else 1.0 / size


def _ratio(rng: Stream, span: float) -> float:
    return ratio_of(rng.random(), rng.random() < 0.5, span)


def scaled(value: int | float, factor: float) -> int | float | None:
    """``value`` times ``factor``, rounded as the value is (whole, or to 2 places); None when that
    leaves it unchanged or not positive."""
    new: int | float = round(value * factor) if isinstance(value, int) else round(value * factor, 2)
    return new if new != value and new > 0 else None


def _other(value: str, pool: tuple[str, ...], rng: Stream) -> str | None:
    others = [v for v in pool if v != value]
    return _pick(rng, others) if others else None


def _earlier(value: Any, rng: Stream, span: float) -> Any:
    """Another plausible setting of ``value`` (None when there is none): what the key held before an
    edit that arrived at ``value``, or what a later-reverted edit set. Drawn from the shapes faults'
    edits have: any ratio, a limit put on or taken off, a flipped switch, another world's endpoint or
    probe path (srezero.sim.config)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int) and value == 0:  # a limit taken off (0 is "none" for rate limits and retries)
        return max(1, round(math.exp(rng.uniform(math.log(2.0), math.log(5000.0)))))
    if isinstance(value, int | float):
        return scaled(value, _ratio(rng, span))
    if value in _LEVELS:
        return _pick(rng, [v for v in _LEVELS if v != value])
    if value in HEALTH_PATHS:
        return _other(value, HEALTH_PATHS, rng)
    for pool in ENDPOINTS.values():  # an address, or a URL embedding one: the service moved here
        for endpoint in pool:
            if endpoint in value:
                other = _other(endpoint, pool, rng)
                return value.replace(endpoint, other, 1) if other else None
    return None


def _wide_if_safe(w: World, service: str, key: str, now: Any, rng: Stream) -> Any:
    """An earlier value as far from ``now`` as a fault's edits go (up to the days-old span), for a key
    whose safe envelope in this world holds it too: a limit right-sized from far above, or raised
    from a value that was already enough. The metrics history could not have shown such a value as
    harmful, so a big step within the series is no sign of a fault by itself. None otherwise."""
    if (service, key) not in ENVELOPES or isinstance(now, bool):
        return None
    prev = _earlier(now, rng, _OLD_SPAN)
    return prev if prev is not None and within(w, service, key, prev) else None


def _earlier_sysctl(node: Node, key: str, rng: Stream, span: float) -> str:
    if key == "net.ipv4.tcp_tw_reuse":
        return "0" if node.tw_reuse else "1"
    if key == "net.ipv4.ip_local_port_range":
        hi = node.port_lo + node.ephemeral_ports - 1
        lo = min(hi - 1024, max(1024, round(node.port_lo * _ratio(rng, min(span, 4.0)))))
        return f"{lo} {hi}"
    now = node.fd_max if key == "fs.file-max" else node.conntrack_max
    shift = 1 + int(rng.integers(0, 2 if span <= RECENT_SPAN else 5))
    return str(now << shift if rng.random() < 0.5 else max(1024, now >> shift))


def past_edit(w: World, rng: Stream, when: float, author: str) -> Callable[[], None]:
    """An edit, ``when`` (in the past), that set a key to the value it has now: any service's config key
    (numbers, switches, levels, addresses; not secrets, whose changes are rotations), or about one
    time in four a node's sysctl. An edit days old (before the metrics history) may be any size, and
    may be a revert: a bad-looking value set, then put back hours later."""
    built = {name: dict(svc.config) for name, svc in w.services.items()}
    old = when < 0.0  # before the first column of the metrics history
    span = _OLD_SPAN if old else RECENT_SPAN

    def write() -> None:
        if rng.random() < 0.25:
            node = _pick(rng, w.topo.nodes)
            key = _pick(rng, SYSCTLS)
            if any(changes.entries(w, "node", "sysctl", f"{node.name}: {key}:")):
                return
            w.noise_entities.add(node.name)
            line = changes.edit_line(w, key, _earlier_sysctl(node, key, rng, span), sysctl_value(node, key))
            changes.record(w, when, "node", "sysctl", f"{node.name}: {line}", author, noise=True)
            return
        keys = [(name, key) for name in sorted(w.services) for key, value in w.services[name].config.items()
                if key not in _NOT_EDITED and built[name].get(key) == value
                and not any(changes.entries(w, name, "config", f"{key}:"))]
        if not keys:
            return
        name, key = _pick(rng, keys)
        now = w.services[name].config[key]
        if old and rng.random() < _REVERTED_SHARE:
            bad = _earlier(now, rng, span)
            if isinstance(now, str) and bad is not None and bad not in _LEVELS and rng.random() < 0.3:
                bad = ""  # an address or path emptied, as a crash-looping release's config is
            if bad is not None:
                w.noise_entities.add(name)
                back = min(when + float(rng.uniform(600.0, 6 * 3600.0)), when / 2.0)  # still before the series
                changes.record(w, when, name, "config", changes.edit_line(w, key, now, bad), author,
                               noise=True)
                changes.record(w, back, name, "config", changes.edit_line(w, key, bad, now), _pick(rng, AUTHORS), noise=True)
                return
        prev = _wide_if_safe(w, name, key, now, rng) if not old else None
        if prev is None:
            prev = _earlier(now, rng, span)
        if prev is None:
            return
        w.noise_entities.add(name)
        changes.record(w, when, name, "config", changes.edit_line(w, key, prev, now), author, noise=True)

    return write


def rotation(w: World, rng: Stream, when: float) -> Callable[[], None]:
    """A credential rotation that every consumer followed: the database password (the deploy bot syncs
    the services' secret version) or the cache's auth secret (the web tier's copy synced with it)."""
    author = _pick(rng, AUTHORS)
    database = rng.random() < 0.5
    consumers = ("web_server", "worker")
    if database:
        old = str(w.services["web_server"].config.get("env.CREDENTIALS_VERSION", "v1"))
        new = changes.next_secret(old)
        for name in consumers:  # before any fault reads them: a rotation a fault makes starts from here
            if w.services[name].config.get("env.CREDENTIALS_VERSION") == old:
                w.services[name].config["env.CREDENTIALS_VERSION"] = new
    else:
        old = str(w.services["cache"].config["auth_secret"])
        new = changes.next_secret(old)
        w.services["cache"].config["auth_secret"] = new
        w.services["web_server"].config["cache_auth_secret"] = new

    def write() -> None:
        if database:
            changes.record(w, when, "database", "config", changes.rotation("app-db-credentials", old, new), author,
                           noise=True)
            for i, name in enumerate(consumers):
                changes.record(w, when + 40.0 + 20.0 * i, name, "config",
                               changes.secret_sync("env.CREDENTIALS_VERSION", old, new), "deploy-bot", noise=True)
        else:
            changes.record(w, when, "cache", "config", changes.edit_line(w, "auth_secret", old, new), author,
                           noise=True)
            changes.record(w, when + 60.0, "web_server", "config", changes.secret_sync("cache_auth_secret", old, new),
                           "deploy-bot", noise=True)

    return write


def migrations(w: World, rng: Stream) -> None:
    """One or two migrations days ago: an index built, or one dropped and rebuilt the same day."""
    table, column = _pick(rng, _INDEXES)
    when = w.now - float(rng.uniform(1.0, 12.0)) * 86400
    author = _pick(rng, AUTHORS)
    index = f"{table}_{column}_idx"
    if rng.random() < 0.5:
        changes.record(w, when, "database", "migration", f"{changes.migration_id(w)}_reindex: DROP INDEX {index} "
                       "(to be rebuilt CONCURRENTLY)", author, noise=True)
        when += float(rng.uniform(300.0, 3600.0))
    changes.record(w, when, "database", "migration", f"{changes.migration_id(w)}_index: CREATE INDEX "
                   f"CONCURRENTLY {index} ON {table} ({column})", author, noise=True)


def slot(w: World, rng: Stream) -> Callable[[], None]:
    """A replication slot for a one-off backup, dropped when the backup finished."""
    name = f"pgbackrest_{int(rng.integers(100, 1000))}"
    when = w.now - float(rng.uniform(2.0, 15.0)) * 86400
    dropped = when + float(rng.uniform(1.0, 20.0)) * 3600
    author = _pick(rng, AUTHORS)

    def write() -> None:
        if any(name in c.detail for c in w.changes if c.kind == "replication"):
            return  # the name is taken (by a fault's slot): no story of a second one
        changes.record(w, when, "database", "replication", f"created replication slot {name} for streaming backups",
                       author, noise=True)
        changes.record(w, dropped, "database", "replication", f"dropped replication slot {name} ({changes.reason(w)})",
                       author, noise=True)

    return write
