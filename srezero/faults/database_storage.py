"""Database primitives about WAL and replication: a stalled standby, a disk filled by retained WAL."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from srezero.faults.base import FaultMeta, Param, Remedy, RootCause, Signal, register
from srezero.faults.common import Declared, backdate_fill, baseline, traced
from srezero.faults.envelopes import healthy
from srezero.sim import changes
from srezero.sim.replication import start_report
from srezero.sim.rng import stable_int

if TYPE_CHECKING:
    from srezero.sim.world import World

DELAY = "max_standby_streaming_delay_s"


@register
class ReplicaLag(Declared):
    """Replay on the standby waits forever for a long reporting query (max_standby_streaming_delay
    set to -1 so the report can finish): the read replica falls further behind every second.

    Silent at the edge (the application reads from the primary) but a failover now would lose every
    write the standby has not replayed.
    """

    meta = FaultMeta(
        name="replica_lag", layer="database", category="misconfiguration", targets=("service:database",),
        description="standby replay paused indefinitely behind a long reporting query",
        params=(Param("query_s", float, 3600.0, lo=600.0, hi=14400.0, description="how long the report runs"),),
        signals=(Signal("query_metrics", "database", args=(("metric", "replication_lag_s"),),
                        description="replication lag climbing",
                        alt=(Signal("inspect_database", "any", args=(("view", "replication"),),  # ReplicationLagHigh's 60 s
                                    pattern=r"replay lag (?:[6-9]\d|\d{3,}) s"),)),
                 Signal("get_config", "database", pattern=rf"{DELAY} = -1", description="replay waits forever",
                        alt=(Signal("inspect_database", "any", args=(("view", "replication"),),
                                    pattern=r"max_standby_streaming_delay -1 s"),
                             Signal("get_changes", "any", pattern=rf"{DELAY}: \S+ -> -1\b"))),
                 Signal("inspect_database", "any", args=(("view", "replication"),),
                        pattern="replay waiting for conflicting query", description="what replay waits for")),
        remedies=(Remedy("set_config", f"{DELAY} back to a bounded wait (0-50 s); replay then catches up"),),
        wrong_fix_effects="terminating the report helps until the dashboard re-runs it; restarting the standby "
                          "likewise; failing over now loses the unreplayed writes",
        silent=True, alert="ReplicationLagHigh", example="database", example_params=(("query_s", 3600.0),),
    )

    def prepare(self, w: World) -> None:
        self.original = w.services["database"].config[DELAY]

    def inject(self, w: World) -> None:
        w.services["database"].config[DELAY] = -1
        w.change("database", "config", changes.edit_line(w, DELAY, self.original, -1), w.author())
        start_report(w, self.params["query_s"])

    def neutralised(self, w: World) -> bool:
        return healthy(w, "database", DELAY, self.original)

    def why_active(self, w: World) -> str:
        return (f"{DELAY} is {w.services['database'].config[DELAY]} and the standby is "
                f"{w.state.replication_lag_s:.0f} s behind")

    def root_cause(self, w: World) -> RootCause:
        return RootCause(entity=f"database.{DELAY}", category="misconfiguration",
                         detail=f"{DELAY} = -1 lets a long standby query stall WAL replay",
                         detail_tokens=("max_standby_streaming_delay", "replay", "conflict", "standby", "-1"),
                         aliases=("database",), fault=self.meta.name, layer=self.meta.layer)

    def oracle_fix(self, w: World) -> list[dict[str, Any]]:
        return [{"tool": "set_config", "args": {"service": "database", "key": DELAY, "value": self.original}}]

    def envelope_violations(self, w: World) -> list[list[dict[str, Any]]]:
        return [[{"tool": "set_config", "args": {"service": "database", "key": DELAY, "value": 900}}]]


@register
class DatabaseDiskFull(Declared):
    """A streaming-backup agent died days ago and left its replication slot behind. An inactive slot
    pins every WAL segment written since, so the database's data volume fills; once full, writes
    fail and the disk crawls. Dropping the slot frees the retained WAL; expanding the volume only
    buys time, because the slot keeps retaining."""

    meta = FaultMeta(
        name="db_disk_full", layer="database", category="resource_exhaustion", targets=("replica:database",),
        description="an abandoned replication slot retains WAL until the database's data disk is full",
        params=(Param("fill_minutes", float, 4.0, lo=0.5, hi=60.0, description="minutes from onset to a full disk"),),
        signals=(Signal("search_logs", "database", pattern="No space left on device", description="failing writes",
                        alt=(traced("No space left on device"),)),
                 Signal("node_diagnostics", "node", args=(("check", "disk"),), pattern=r"used \((99|100)%\)",
                        description="the full data volume",
                        alt=(Signal("query_metrics", "node", args=(("metric", "data_disk_used_pct"),),
                                    pattern=r"last (?:99|100)\.\d"),)),
                 Signal("inspect_database", "any", args=(("view", "replication"),), pattern=r"<slot>\s+physical\s+false",
                        description="the inactive slot and the WAL it retains")),
        remedies=(Remedy("drop_replication_slot", "drop the inactive slot (never the standby's own slot)"),),
        wrong_fix_effects="expanding the volume buys hours, then it fills again; restarts and failovers keep "
                          "the slot; dropping the standby's slot breaks replication",
        example="database.primary", example_params=(("fill_minutes", 4.0),),
    )

    def prepare(self, w: World) -> None:
        self.slot = f"pgbackrest_{stable_int(w.seed, 'slot') % 900 + 100}"
        changes.record(w, w.now - float(w.rng_world.uniform(3.0, 6.0)) * 86400, "database", "replication",
                       f"created replication slot {self.slot} for streaming backups", w.author())

    def inject(self, w: World) -> None:
        disk = self.target.obj.node.data_disk
        writes = baseline(w, "database", "request_rate") * 0.3
        margin = writes * self.params["fill_minutes"] * 60.0 * w.state.wal_gb_per_write
        retained = max(0.0, disk.capacity_gb - disk.used_gb - margin)
        w.state.db_slots[self.slot] = [0.0, retained]
        disk.used_gb += retained
        backdate_fill(w, disk, retained, writes * 3600.0 * w.state.wal_gb_per_write)  # WAL kept since the agent died

    def subs(self, w: World) -> dict[str, str]:
        return {"slot": self.slot}

    def neutralised(self, w: World) -> bool:
        return self.slot not in w.state.db_slots and w.topo.db_primary().node.data_disk.used_frac < 0.9

    def why_active(self, w: World) -> str:
        if self.slot in w.state.db_slots:
            return f"replication slot {self.slot} still retains WAL on the database's data disk"
        return "the database's data disk is still over 90% full"

    def root_cause(self, w: World) -> RootCause:
        disk = self.target.obj.node.data_disk
        return RootCause(entity="database", category="resource_exhaustion",
                         detail=f"inactive replication slot {self.slot} retains WAL until {disk.device} is full",
                         detail_tokens=(self.slot, "replication slot", "slot", "wal"),
                         aliases=(disk.name, disk.node.name), fault=self.meta.name, layer=self.meta.layer)

    def oracle_fix(self, w: World) -> list[dict[str, Any]]:
        return [{"tool": "drop_replication_slot", "args": {"slot": self.slot}}]

    def envelope_violations(self, w: World) -> list[list[dict[str, Any]]]:
        own = "standby_" + w.topo.db_standby().name.replace("-", "_")
        return [[{"tool": "drop_replication_slot", "args": {"slot": own}}]]
