"""Disk-layer primitives."""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from srezero.faults.base import Fault, FaultMeta, Param, Remedy, RootCause, Signal, register

if TYPE_CHECKING:
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
        params=(Param("read_error_rate", float, 0.08, lo=0.005, hi=0.5, description="share of reads that fail"),
                Param("growth", float, 1.15, lo=1.0, hi=2.0, description="error-rate growth per 5 minutes")),
        signals=(Signal("node_diagnostics", "node", args=(("check", "dmesg"),), pattern="I/O error", description="kernel I/O errors"),
                 Signal("node_diagnostics", "node", args=(("check", "disk"),), pattern=r"Current_Pending_Sector\s+[1-9]",
                        description="SMART pending sectors"),
                 Signal("search_logs", "database", pattern="could not read block", description="database read errors")),
        remedies=(Remedy("failover", "promote the database replica, whose disk is healthy"),),
        wrong_fix_effects="restarting the database causes an outage and changes nothing; draining its node takes the "
                          "primary down",
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
