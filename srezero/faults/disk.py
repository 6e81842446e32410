"""Disk-layer primitives: latent sector errors, a full disk, a slowly filling disk, a fail-slow disk.

A disk's cause lives in the :class:`~srezero.sim.components.Disk` (its sectors, bytes, latency), so
restarting the processes that use it never helps. Cures act on the disk (free space, grow the
volume) or move the database off it (failover).
"""

from __future__ import annotations

import re
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from srezero.faults.base import Fault, FaultMeta, Param, Remedy, RootCause, Signal, register
from srezero.faults.common import backdate_fill, traced
from srezero.sim.clock import TICK_S

if TYPE_CHECKING:
    from srezero.sim.components import Disk
    from srezero.sim.world import World


@register
class LatentSectorErrors(Fault):
    """Unreadable sectors on the database's data disk: a fraction of reads fail with EIO.

    To the application this looks like a bug (sporadic 500s with "could not read block"); dmesg and
    SMART tell the truth. Restarting the database does not help: the sectors are still bad. Failing
    over to the replica, whose disk is healthy, is the cure.
    """

    meta = FaultMeta(
        name="latent_sector_errors",
        layer="disk",
        category="hardware",
        targets=("disk",),
        description="latent sector errors on a disk make a fraction of reads fail with I/O errors",
        params=(Param("read_error_rate", float, 0.35, lo=0.005, hi=0.5, description="share of reads that fail"),
                Param("growth", float, 1.2, lo=1.0, hi=2.0, description="error-rate growth per 5 minutes")),
        signals=(Signal("node_diagnostics", "node", args=(("check", "dmesg"),), pattern="I/O error", description="kernel I/O errors",
                        alt=(Signal("node_diagnostics", "node", args=(("check", "disk"),),  # SMART's error count
                                    pattern=r"Media and Data Integrity Errors:\s+[1-9]"),
                             Signal("query_metrics", "node", args=(("metric", "disk_io_errors"),), pattern=r"max [1-9]"))),
                 Signal("node_diagnostics", "node", args=(("check", "disk"),), pattern=r"Current_Pending_Sector\s+[1-9]",
                        description="SMART pending sectors"),
                 Signal("search_logs", "database", pattern="could not read block", description="database read errors",
                        alt=(traced("could not read block"),))),
        remedies=(Remedy("failover", "promote the database replica, whose disk is healthy"),),
        wrong_fix_effects="restarting the database causes an outage and changes nothing; draining its node takes the "
                          "primary down",
        example="disk(database.primary)",
    )

    def prepare(self, w: World) -> None:
        self.disk = self.target.obj

    def inject(self, w: World) -> None:
        d = self.disk
        d.read_error_rate = self.params["read_error_rate"]
        d.pending_sectors = int(w.rng_world.integers(24, 400))
        w.dmesg(d.node, "nvme nvme1: I/O 417 QID 3 timeout, aborting")

    def evolve(self, w: World) -> Generator[Any, Any, None]:
        d = self.disk
        while True:
            yield w.env.timeout(300.0)
            d.read_error_rate = min(0.6, d.read_error_rate * self.params["growth"])
            d.pending_sectors += int(w.rng_world.integers(4, 40))

    def neutralised(self, w: World) -> bool:
        primary = w.topo.db_primary()
        return primary.node.data_disk is not self.disk

    def why_active(self, w: World) -> str:
        return f"the database primary still reads from {self.disk.name}, which has unreadable sectors"

    def root_cause(self, w: World) -> RootCause:
        d = self.disk
        return RootCause(entity=d.name, category="hardware", detail=f"latent sector errors on {d.device}",
                         detail_tokens=("sector", "I/O error", "bad block", "medium error", d.device, "smart", "pending"),
                         aliases=(d.node.name,), fault=self.meta.name, layer=self.meta.layer)

    def oracle_reads(self, w: World) -> list[dict[str, Any]]:
        node = self.disk.node.name
        return [{"tool": "search_logs", "args": {"service": "database", "pattern": "read"}},
                {"tool": "node_diagnostics", "args": {"node": node, "check": "dmesg"}},
                {"tool": "node_diagnostics", "args": {"node": node, "check": "disk"}}]

    def oracle_fix(self, w: World) -> list[dict[str, Any]]:
        return [{"tool": "failover", "args": {"service": "database"}}]

    def signals(self, w: World) -> list[tuple[str, str, dict[str, Any], str]]:
        node = self.disk.node.name
        return [("node_diagnostics", node, {"check": "dmesg"}, "I/O error"),
                ("node_diagnostics", node, {"check": "disk"}, r"Current_Pending_Sector\s+[1-9]"),
                ("search_logs", "database", {}, "could not read block")]


def _writer_path(disk: Disk, index: int) -> str:
    """Where the runaway bytes land, as ``du`` shows it: logs on a root disk, dumps and temp on data."""
    if disk.device == "nvme0n1":
        return ("/var/log/containers", "/var/crash", "/var/lib/containerd/tmp")[index % 3]
    return ("/var/lib/data/backups", "/var/lib/data/pgsql_tmp", "/var/lib/data/export")[index % 3]


class DiskSpaceFault(Fault):
    """Shared parts of the space primitives: a writer fills files that ``cleanup_disk`` may delete."""

    full_at = 0.9  # neutralised below this fill level

    def prepare(self, w: World) -> None:
        self.disk: Disk = self.target.obj
        self.path = _writer_path(self.disk, self.index)

    def fill(self, gb: float) -> None:
        d = self.disk
        gb = min(gb, d.capacity_gb - d.used_gb)
        d.used_gb += gb
        d.reclaim[self.path] = d.reclaim.get(self.path, 0.0) + gb

    def neutralised(self, w: World) -> bool:
        return self.disk.used_gb < self.disk.capacity_gb * self.full_at

    def why_active(self, w: World) -> str:
        d = self.disk
        return f"{d.name} is {d.used_frac:.0%} full ({d.used_gb:.0f} of {d.capacity_gb:.0f} GB)"

    def _victim(self) -> str:
        """The service whose logs show the failed writes (the database for its own data disk)."""
        d = self.disk
        reps = [r for r in d.node.replicas if r.state != "Terminated"]
        if d.device != "nvme0n1" and any(r.kind == "database" and r.role == "primary" for r in reps):
            return "database"
        return "web_server"

    def root_cause(self, w: World) -> RootCause:
        d = self.disk
        return RootCause(entity=d.name, category="resource_exhaustion",
                         detail=f"{d.device} on {d.node.name} is out of space ({self.path} grew)",
                         detail_tokens=("space", "full", self.path, d.device),
                         aliases=(d.node.name,), fault=self.meta.name, layer=self.meta.layer)

    def signals(self, w: World) -> list[tuple[str, str, dict[str, Any], str]]:
        node = self.disk.node.name
        out = [("node_diagnostics", node, {"check": "disk"}, re.escape(self.path))]
        for sig in self.meta.signals[1:]:
            ent = node if sig.on == "node" else self._victim() if sig.on == "service" else sig.on
            out.append((sig.tool, ent, dict(sig.args), sig.pattern))
        return out

    def oracle_reads(self, w: World) -> list[dict[str, Any]]:
        reads = []
        for tool, ent, args, pattern in self.signals(w):
            if tool == "node_diagnostics":
                reads.append({"tool": tool, "args": {"node": ent, **args}})
            elif tool == "query_metrics":
                reads.append({"tool": tool, "args": {"target": ent, **args}})
            elif tool == "search_logs":
                reads.append({"tool": tool, "args": {"service": ent, "pattern": pattern}})
            else:
                reads.append({"tool": tool, "args": args})
        return reads

    def oracle_fix(self, w: World) -> list[dict[str, Any]]:
        return [{"tool": "cleanup_disk", "args": {"node": self.disk.node.name, "device": self.disk.device}}]

    def envelope_violations(self, w: World) -> list[list[dict[str, Any]]]:
        d = self.disk
        return [[{"tool": "expand_volume", "args": {"node": d.node.name, "device": d.device,
                                                     "size_gb": round(d.capacity_gb * 1.03)}}]]


_SPACE_REMEDIES = (Remedy("cleanup_disk", "delete the reclaimable files du shows (frees the runaway bytes)"),
                   Remedy("expand_volume", "or grow the volume so it ends under 85% full (at most 16384 GB)"))


@register
class DiskFull(DiskSpaceFault):
    """A one-off writer (a forgotten backup, a core-dump storm, a debug log) fills a disk to 100%.

    On the database's data disk every write fails ("could not extend file"); on a root disk the
    node's pods fail to write temp and session files. Restarts do not free a byte.
    """

    meta = FaultMeta(
        name="disk_full",
        layer="disk",
        category="resource_exhaustion",
        targets=("disk",),
        description="a runaway writer fills a disk to 100%, so writes fail with ENOSPC",
        params=(Param("fill_gb_per_h", float, 600.0, lo=20.0, hi=5000.0, description="write rate of the runaway writer"),
                Param("minutes_to_full", float, 2.0, lo=0.5, hi=30.0, description="from onset until the disk is full")),
        signals=(Signal("node_diagnostics", "node", (("check", "disk"),), "<path>", "what filled the disk (du)"),
                 Signal("node_diagnostics", "node", (("check", "disk"),), "No space left on device", "capacity at 100%",
                        alt=tuple(Signal("query_metrics", "node", (("metric", m),), r"last (?:99\.9|100\.0)")
                                  for m in ("root_disk_used_pct", "data_disk_used_pct"))),
                 Signal("search_logs", "service", (), "No space left on device", "failed writes",
                        alt=(traced("No space left on device"),))),
        remedies=_SPACE_REMEDIES,
        wrong_fix_effects="restarting the database or pods frees nothing; failing over moves the database to its "
                          "replica but leaves the disk full",
        example="disk(database.primary)",
    )

    def inject(self, w: World) -> None:
        d = self.disk
        ahead = self.params["fill_gb_per_h"] * self.params["minutes_to_full"] / 60.0
        before = max(0.0, d.capacity_gb - ahead - d.used_gb)  # what the writer wrote before anyone noticed
        self.fill(before)
        backdate_fill(w, d, before, self.params["fill_gb_per_h"])

    def evolve(self, w: World) -> Generator[Any, Any, None]:
        step = self.params["fill_gb_per_h"] * TICK_S / 3600.0
        d = self.disk
        while d.used_gb < d.capacity_gb:
            yield w.env.timeout(TICK_S)
            self.fill(step)
        w.dmesg(d.node, f"EXT4-fs warning (device {d.device}): ext4_dx_add_entry: Directory index full!")


@register
class DiskFilling(DiskSpaceFault):
    """Silent: a job without log rotation slowly fills a data disk. Nothing fails yet; the disk
    space alert and ``du`` show it. Part of a concurrent incident, it is the fault nobody paged for."""

    meta = FaultMeta(
        name="disk_filling",
        layer="disk",
        category="resource_exhaustion",
        targets=("disk",),
        description="a disk filling slowly toward full (no user impact yet)",
        params=(Param("start_pct", float, 92.0, lo=86.0, hi=97.0, description="fill level at onset"),
                Param("growth_gb_per_h", float, 4.0, lo=0.5, hi=30.0, description="growth from then on")),
        signals=(Signal("node_diagnostics", "node", (("check", "disk"),), "<path>", "what is growing (du)"),
                 Signal("query_metrics", "node", (("metric", "data_disk_used_pct"),), "", "fill level over time"),
                 Signal("get_alerts", "*", (), "DiskSpaceLow", "the disk space warning")),
        remedies=_SPACE_REMEDIES,
        wrong_fix_effects="none immediate; left alone, the disk fills within hours",
        silent=True,
        example="disk(worker[*])",
        alert="DiskSpaceLow",
    )
    full_at = 0.85

    def inject(self, w: World) -> None:
        d = self.disk
        before = max(0.0, d.capacity_gb * self.params["start_pct"] / 100.0 - d.used_gb)
        self.fill(before)
        backdate_fill(w, d, before, self.params["growth_gb_per_h"])

    def evolve(self, w: World) -> Generator[Any, Any, None]:
        step = self.params["growth_gb_per_h"] * TICK_S / 3600.0
        while True:
            yield w.env.timeout(TICK_S)
            self.fill(step)

    def signals(self, w: World) -> list[tuple[str, str, dict[str, Any], str]]:
        metric = "root_disk_used_pct" if self.disk.device == "nvme0n1" else "data_disk_used_pct"
        alert = "RootDiskSpaceLow" if self.disk.device == "nvme0n1" else "DiskSpaceLow"
        node = self.disk.node.name
        return [("node_diagnostics", node, {"check": "disk"}, re.escape(self.path)),
                ("query_metrics", node, {"metric": metric}, ""), ("get_alerts", "*", {}, alert)]


@register
class FailSlowDisk(Fault):
    """A fail-slow SSD: no errors, just I/O many times slower than its siblings (firmware GC stalls).

    Every query on the database primary waits on the disk, so its capacity collapses. SMART says
    PASSED; the latency figures and the disk's temperature tell. Failing over to the replica, whose
    disk is healthy, is the cure.
    """

    meta = FaultMeta(
        name="fail_slow_disk",
        layer="disk",
        category="hardware",
        targets=("disk",),
        description="a disk that still works but serves I/O tens of times slower than normal",
        params=(Param("latency_mult", float, 20.0, lo=10.0, hi=40.0, description="latency multiplier"),),
        signals=(Signal("node_diagnostics", "node", (("check", "disk"),), r"avg I/O latency \(last minute\): (?:[1-9]|\d{2,})\.\d+ ms",
                        "I/O latency of milliseconds (healthy: tenths of one)"),
                 Signal("query_metrics", "node", (("metric", "disk_latency_ms"),), "", "latency over time"),
                 Signal("query_metrics", "database", (("metric", "latency_p99_ms"),), "", "slow queries")),
        remedies=(Remedy("failover", "promote the database replica, whose disk is healthy"),),
        wrong_fix_effects="restarting the database changes nothing; adding web replicas adds load to the slow primary",
        example="disk(database.primary)",
        alert="DatabaseLatencyHigh",
    )

    def prepare(self, w: World) -> None:
        self.disk: Disk = self.target.obj

    def inject(self, w: World) -> None:
        self.disk.latency_mult *= self.params["latency_mult"]

    def evolve(self, w: World) -> Generator[Any, Any, None]:
        d = self.disk
        while True:
            yield w.env.timeout(TICK_S * 6)
            w.dmesg(d.node, f"nvme nvme{d.device[4]}: I/O {int(w.col) % 1024} QID 5 timeout, completion polled")

    def neutralised(self, w: World) -> bool:
        return w.topo.db_primary().node.data_disk is not self.disk

    def why_active(self, w: World) -> str:
        return f"the database primary still runs on {self.disk.name}, which is fail-slow"

    def root_cause(self, w: World) -> RootCause:
        d = self.disk
        return RootCause(entity=d.name, category="hardware", detail=f"{d.device} on {d.node.name} is fail-slow",
                         detail_tokens=("slow", "latency", "fail-slow", d.device), aliases=(d.node.name,),
                         fault=self.meta.name, layer=self.meta.layer)

    def signals(self, w: World) -> list[tuple[str, str, dict[str, Any], str]]:
        node = self.disk.node.name
        return [("node_diagnostics", node, {"check": "disk"}, r"avg I/O latency \(last minute\): (?:[1-9]|\d{2,})\.\d+ ms"),
                ("query_metrics", node, {"metric": "disk_latency_ms"}, ""),
                ("query_metrics", "database", {"metric": "latency_p99_ms"}, "")]

    def oracle_reads(self, w: World) -> list[dict[str, Any]]:
        node = self.disk.node.name
        return [{"tool": "query_metrics", "args": {"target": "database", "metric": "latency_p99_ms"}},
                {"tool": "node_diagnostics", "args": {"node": node, "check": "disk"}},
                {"tool": "query_metrics", "args": {"target": node, "metric": "disk_latency_ms"}}]

    def oracle_fix(self, w: World) -> list[dict[str, Any]]:
        return [{"tool": "failover", "args": {"service": "database"}}]
