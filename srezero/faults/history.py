"""Harmless history: changes of every kind a fault makes, that only ever changed the record.

Each item here is written after the faults are set up (``World.after_faults``), so it can keep each
key's story consistent: an edit is only placed on a key no entry mentions yet, and it ends at the
value the key has now, so reading the history in time order always explains the live config. None
of them touches the dynamics: the config they arrive at is the one the world was built with.

Wording is drawn by :mod:`srezero.sim.changes`, as for faults' changes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from srezero.sim import changes
from srezero.sim.nodes import SYSCTLS, sysctl_value
from srezero.sim.topology import AUTHORS

if TYPE_CHECKING:
    from srezero.sim.components import Node
    from srezero.sim.rng import Stream
    from srezero.sim.world import World

#: Keys whose value is not a setting someone tunes (a countdown to certificate expiry).
_NOT_EDITED = frozenset({"tls_cert_days_left"})
_FACTORS = (0.5, 0.75, 1.5, 2.0)
_LEVELS = ("debug", "info", "warn", "error")
_INDEXES = (("orders", "created_at"), ("orders", "customer_id"), ("order_items", "order_id"),
            ("invoices", "status"), ("events", "occurred_at"), ("sessions", "user_id"), ("payments", "order_id"))


def _pick(rng: Stream, seq: tuple[Any, ...] | list[Any]) -> Any:
    return seq[int(rng.integers(0, len(seq)))]


def _earlier(value: Any, rng: Stream) -> Any:
    """A plausible earlier setting of ``value`` (None when there is none)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        prev = _pick(rng, (50, 100, 200)) if value == 0 else round(value * _pick(rng, _FACTORS))
        return prev if prev != value and prev > 0 else None
    if isinstance(value, float):
        prev = round(value * _pick(rng, _FACTORS), 2)
        return prev if prev != value and prev > 0 else None
    if value in _LEVELS:
        return _pick(rng, [v for v in _LEVELS if v != value])
    if value.startswith("/"):  # a probe path
        return "/health" if value != "/health" else "/status"
    if "@" in value or ":" in value:  # an address or URL: the service moved to its current name
        host = value.rsplit("@", 1)[-1].split(":", 1)[0]
        return value.replace(host, f"{host}-{_pick(rng, ('legacy', 'v1', 'old'))}", 1) if host else None
    return None


def _earlier_sysctl(node: Node, key: str) -> str:
    if key == "net.ipv4.tcp_tw_reuse":
        return "0" if node.tw_reuse else "1"
    if key == "net.ipv4.ip_local_port_range":
        return f"{node.port_lo} {node.port_lo + node.ephemeral_ports // 2 - 1}"
    return str((node.fd_max if key == "fs.file-max" else node.conntrack_max) // 2)


def past_edit(w: World, rng: Stream, when: float, author: str) -> Callable[[], None]:
    """An edit, ``when`` (in the past), that set a key to the value it has now: any service's config key
    (numbers, switches, levels, addresses; not secrets, whose changes are rotations), or about one
    time in four a node's sysctl."""
    built = {name: dict(svc.config) for name, svc in w.services.items()}

    def write() -> None:
        if rng.random() < 0.25:
            node = _pick(rng, w.topo.nodes)
            key = _pick(rng, SYSCTLS)
            if any(changes.entries(w, "node", "sysctl", f"{node.name}: {key}:")):
                return
            w.noise_entities.add(node.name)
            changes.record(w, when, "node", "sysctl", f"{node.name}: {key}: {_earlier_sysctl(node, key)} -> "
                           f"{sysctl_value(node, key)} ({changes.reason(w)})", author, noise=True)
            return
        keys = [(name, key) for name in sorted(w.services) for key, value in w.services[name].config.items()
                if key not in _NOT_EDITED and built[name].get(key) == value
                and not any(changes.entries(w, name, "config", f"{key}:"))]
        if not keys:
            return
        name, key = _pick(rng, keys)
        now = w.services[name].config[key]
        prev = _earlier(now, rng)
        if prev is None:
            return
        w.noise_entities.add(name)
        changes.record(w, when, name, "config", f"{changes.edit(key, prev, now)} ({changes.reason(w)})", author, noise=True)

    return write


def rotation(w: World, rng: Stream, when: float) -> Callable[[], None]:
    """A credential rotation that every consumer followed: the database password (the deploy bot syncs
    the services' secret version) or the cache's auth secret (the web tier's copy synced with it)."""
    author = _pick(rng, AUTHORS[:8])
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
            changes.record(w, when, "database", "config", f"rotated password for role app (secret "
                           f"app-db-credentials {old} -> {new})", author, noise=True)
            for i, name in enumerate(consumers):
                changes.record(w, when + 40.0 + 20.0 * i, name, "config",
                               f"env.CREDENTIALS_VERSION: {old} -> {new} (secret sync)", "deploy-bot", noise=True)
        else:
            changes.record(w, when, "cache", "config", f"auth_secret: {old} -> {new} ({changes.reason(w)})", author,
                           noise=True)
            changes.record(w, when + 60.0, "web_server", "config", f"cache_auth_secret: {old} -> {new} (secret sync)",
                           "deploy-bot", noise=True)

    return write


def migrations(w: World, rng: Stream) -> None:
    """One or two migrations days ago: an index built, or one dropped and rebuilt the same day."""
    table, column = _pick(rng, _INDEXES)
    when = w.now - float(rng.uniform(1.0, 12.0)) * 86400
    author = _pick(rng, AUTHORS[:8])
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
    author = _pick(rng, AUTHORS[:8])

    def write() -> None:
        if any(name in c.detail for c in w.changes if c.kind == "replication"):
            return  # the name is taken (by a fault's slot): no story of a second one
        changes.record(w, when, "database", "replication", f"created replication slot {name} for streaming backups",
                       author, noise=True)
        changes.record(w, dropped, "database", "replication", f"dropped replication slot {name} ({changes.reason(w)})",
                       author, noise=True)

    return write
