"""Node hardware primitives: a lossy or flapping NIC, thermal throttling, ECC memory errors, a dead node.

Hardware cannot be fixed from a terminal. What cures it is getting the work off the machine:
fail the database over if its primary runs there, then drain the node so stateless replicas
reschedule elsewhere and nothing new lands on it. The fault is neutralised when the node serves
nothing any more (see :func:`evacuated`); the broken part itself stays broken.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from srezero.faults.base import FaultMeta, Param, Remedy, Signal, register
from srezero.faults.kernel import NodeFault, evacuated
from srezero.sim.clock import TICK_S
from srezero.sim.nodes import log_link_flap

if TYPE_CHECKING:
    from srezero.sim.world import World

EVACUATE = (Remedy("failover", "first, if the database primary runs on the node: promote the replica"),
            Remedy("drain_node", "cordon and drain the node so stateless replicas reschedule on healthy nodes"))


class HardwareFault(NodeFault):
    """Shared cure and oracle knowledge of the node-hardware primitives."""

    def neutralised(self, w: World) -> bool:
        return evacuated(w, self.node)

    def why_active(self, w: World) -> str:
        live = [r.name for r in self.node.replicas if r.state in ("Running", "Starting", "CrashLoopBackOff")]
        return f"{self.node.name} ({self.meta.description}) still runs {', '.join(live) or 'and accepts new replicas'}"

    def oracle_fix(self, w: World) -> list[dict[str, Any]]:
        fix = []
        if w.topo.db_primary().node is self.node:
            fix.append({"tool": "failover", "args": {"service": "database"}})
        return [*fix, {"tool": "drain_node", "args": {"node": self.node.name}}]

    def envelope_violations(self, w: World) -> list[list[dict[str, Any]]]:
        """Cordoning alone keeps the replicas on the bad node."""
        return [[{"tool": "cordon_node", "args": {"node": self.node.name}}]]


#: What the clients of each kind of process on a lossy node log, in order of preference: (kind of process
#: on the node, service whose logs show it, pattern). A web replica's proxied requests time out; the web tier's queries to a primary
#: there time out at its client; its publishes to the broker there time out; a consumer there loses it.
NIC_LOG_SIGNALS = (("web_server", "web_server", "i/o timeout after retransmissions"),
                   ("database", "web_server", r"db: read tcp \S+: i/o timeout"),
                   ("message_queue", "web_server", "publish to .* i/o timeout"),
                   ("worker", "worker", "connection to broker .* i/o timeout"))


class NicFault(HardwareFault):
    """A failing network interface: its declared log signal is a web node's; resolved, it is where the
    timeouts show for what runs on the node (nothing in the logs when only a database replica or the
    cache does; the node's reads still show it)."""

    def signals(self, w: World) -> list[tuple[str, str, dict[str, Any], str]]:
        kinds = {r.kind for r in self.node.replicas if r.state == "Running"}
        if w.topo.db_primary().node is not self.node:
            kinds.discard("database")
        logs = next(([("search_logs", service, {}, pattern)] for kind, service, pattern in NIC_LOG_SIGNALS
                     if kind in kinds), [])
        return [*(sig for sig in super().signals(w) if sig[0] != "search_logs"), *logs]


@register
class NicPacketLoss(NicFault):
    """A failing NIC (or its cable) drops a share of packets; requests through that node time out."""

    meta = FaultMeta(
        name="nic_packet_loss",
        layer="hardware",
        category="network",
        targets=("node",),
        description="a failing network interface drops packets",
        params=(Param("loss", float, 0.25, lo=0.05, hi=0.6, description="share of packets lost"),),
        signals=(Signal("node_diagnostics", "node", (("check", "limits"),), r"packet loss ([1-9]\d*)\.\d%",
                        "NIC loss counters"),
                 Signal("query_metrics", "node", (("metric", "net_loss_pct"),), "", "loss over time"),
                 Signal("search_logs", "web_server", (), "i/o timeout after retransmissions",
                        "timeouts (a web node's; elsewhere, where that node's clients log them)")),
        remedies=EVACUATE,
        wrong_fix_effects="restarting pods keeps them on the same NIC; scaling adds replicas that may land there too",
        example="node(web_server[*])",
    )
    detail_tokens = ("packet loss", "loss", "loses", "losing", "lost packets", "dropped packets", "drops packets", "crc")

    def inject(self, w: World) -> None:
        self.node.nic_loss = self.params["loss"]
        w.dmesg(self.node, "mlx5_core 0000:3b:00.0 eth0: rx_crc_errors_phy increasing, check cable/transceiver")

    def detail(self, w: World) -> str:
        return f"the NIC of {self.node.name} loses {self.params['loss']:.0%} of packets"


@register
class NicFlapping(NicFault):
    """A NIC link goes down and up every few seconds; each flap resets the node's connections."""

    meta = FaultMeta(
        name="nic_flapping",
        layer="hardware",
        category="network",
        targets=("node",),
        description="a network link that keeps going down and up",
        params=(Param("flap_every_s", float, 60.0, lo=30.0, hi=600.0,
                      description="time between flaps; each takes the link down for about 8 s"),),
        signals=(Signal("node_diagnostics", "node", (("check", "dmesg"),), "eth0: Link is Down", "link flaps"),
                 Signal("node_diagnostics", "node", (("check", "limits"),), "link flapping", "link state"),
                 Signal("search_logs", "web_server", (), "i/o timeout after retransmissions",
                        "timeouts (a web node's; elsewhere, where that node's clients log them)")),
        remedies=EVACUATE,
        wrong_fix_effects="restarting pods keeps them on the same link",
        example="node(web_server[*])",
    )
    detail_tokens = ("flap", "link", "carrier")

    def inject(self, w: World) -> None:
        self.node.nic_flapping = True
        down = min(0.5, 8.0 / self.params["flap_every_s"] + 0.05)  # link-down time plus renegotiation
        self.node.nic_loss = max(self.node.nic_loss, down)

    def evolve(self, w: World) -> Generator[Any, Any, None]:
        n = self.node
        while True:
            log_link_flap(w, n)
            yield w.env.timeout(self.params["flap_every_s"])

    def detail(self, w: World) -> str:
        return f"the network link of {self.node.name} is flapping"


@register
class ThermalThrottling(HardwareFault):
    """A failed fan lets the CPU package overheat; the firmware throttles the clock hard."""

    meta = FaultMeta(
        name="thermal_throttling",
        layer="hardware",
        category="hardware",
        targets=("node",),
        description="the CPUs overheat and are throttled to a fraction of their clock",
        params=(Param("factor", float, 0.15, lo=0.08, hi=0.5, description="remaining share of CPU speed"),),
        signals=(Signal("node_diagnostics", "node", (("check", "dmesg"),), "temperature above threshold",
                        "the kernel's thermal messages"),
                 Signal("node_diagnostics", "node", (("check", "top"),), "cpu clock throttled", "throttling"),
                 Signal("query_metrics", "node", (("metric", "cpu_throttled_pct"),), "", "throttling over time")),
        remedies=EVACUATE,
        wrong_fix_effects="restarts and scaling keep work on the slow node; raising cgroup quotas cannot add clock speed",
        example="node(database.primary)",
        alert="HighErrorRate",
    )
    detail_tokens = ("thermal", "temperature", "throttl", "overheat", "fan")

    def inject(self, w: World) -> None:
        self.node.thermal_factor = self.params["factor"]

    def evolve(self, w: World) -> Generator[Any, Any, None]:
        n, events = self.node, 0
        while True:
            events += 37
            w.dmesg(n, f"CPU{events % n.cores}: Package temperature above threshold, cpu clock throttled "
                       f"(total events = {events})")
            yield w.env.timeout(TICK_S * 4)

    def detail(self, w: World) -> str:
        return f"{self.node.name} overheats and throttles its CPUs to {self.params['factor']:.0%}"


@register
class EccMemoryErrors(HardwareFault):
    """A failing DIMM: correctable errors flood the log and uncorrectable ones kill processes (SIGBUS)."""

    meta = FaultMeta(
        name="ecc_memory_errors",
        layer="hardware",
        category="hardware",
        targets=("node",),
        description="a failing memory module whose uncorrectable errors crash processes",
        params=(Param("ue_per_h", float, 40.0, lo=4.0, hi=240.0, description="uncorrectable errors (crashes) per hour"),),
        signals=(Signal("node_diagnostics", "node", (("check", "dmesg"),), "UE memory read error",
                        "uncorrectable ECC errors"),
                 Signal("node_diagnostics", "node", (("check", "dmesg"),), "hardware memory corruption",
                        "processes killed by the memory-failure handler"),
                 Signal("get_events", "node", (), "terminated", "pods dying on that node")),
        remedies=EVACUATE,
        wrong_fix_effects="restarting the crashed process lands it on the same DIMM; the next error kills it again",
        example="node(database.primary)",
    )
    detail_tokens = ("ecc", "memory error", "dimm", "edac", "uncorrectable", "hardware memory")

    def inject(self, w: World) -> None:
        self.node.ecc_errors_per_h = self.params["ue_per_h"] * 20
        w.dmesg(self.node, "EDAC MC0: 14 CE memory read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0 (channel:1 slot:0)")

    def evolve(self, w: World) -> Generator[Any, Any, None]:
        n = self.node
        p = min(1.0, self.params["ue_per_h"] * TICK_S / 3600.0)
        while True:
            yield w.env.timeout(TICK_S)
            live = [r for r in n.replicas if r.state == "Running"]
            if not live or w.rng_world.random() >= p:
                continue
            weights = [r.mem_mb for r in live]  # a bigger working set is likelier to touch the bad page
            pick = w.rng_world.random() * sum(weights)
            victim = live[-1]
            for r, wt in zip(live, weights):
                pick -= wt
                if pick <= 0:
                    victim = r
                    break
            pfn = 0x3F2A00 + int(w.col) % 4096
            w.dmesg(n, "mce: [Hardware Error]: Machine check events logged")
            w.dmesg(n, f"EDAC MC0: 1 UE memory read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0 (page:{pfn:#x})")
            w.dmesg(n, f"Memory failure: {pfn:#x}: Sending SIGBUS to {victim.kind}:{1000 + victim.index * 37} "
                       "due to hardware memory corruption")
            w.restart_replica(victim, reason="Error", by_agent=False)

    def detail(self, w: World) -> str:
        return f"a failing DIMM on {self.node.name} (uncorrectable ECC errors) crashes processes"


@register
class NodeDown(HardwareFault):
    """A node loses power (a failed PSU); everything on it stops and it never comes back by itself.

    Stateless replicas are evicted and rescheduled after five minutes; the database cannot move
    (its volume is local), so if its primary was there the database is down until failover.
    """

    meta = FaultMeta(
        name="node_down",
        layer="hardware",
        category="hardware",
        targets=("node",),
        description="a node that went down (power supply failure) and does not come back",
        signals=(Signal("get_events", "node", (), "NodeNotReady", "the node stopped reporting"),
                 Signal("get_status", "service", (), "Pending", "replicas bound to the node cannot run"),
                 Signal("get_topology", "*", (), "NotReady", "the node's state")),
        remedies=(Remedy("failover", "promote the database replica if the primary ran on the dead node"),
                  Remedy("drain_node", "optional: evict the stateless replicas now instead of after five minutes")),
        wrong_fix_effects="restarting replicas that are bound to the dead node keeps them Pending; the node cannot be "
                          "reached to repair",
        example="node(database.primary)",
    )
    detail_tokens = ("notready", "not ready", "power", "psu", "dead", "unreachable", "is down", "went down", "node down")

    def inject(self, w: World) -> None:
        n = self.node
        n.up = False
        w.emit("Warning", "NodeNotReady", n.name, f"Node {n.name} status is now: NodeNotReady (kubelet stopped "
                                                   "posting node status)")

    def neutralised(self, w: World) -> bool:
        """Nothing but the database's own (replica) volume is left bound to the dead node."""
        n = self.node
        return w.topo.db_primary().node is not n and all(r.kind == "database" or r.state == "Terminated"
                                                         for r in n.replicas)

    def _victim(self) -> str:
        kinds = [r.kind for r in self.node.replicas if r.state != "Terminated"]
        return "database" if "database" in kinds else (kinds[0] if kinds else "web_server")

    def signals(self, w: World) -> list[tuple[str, str, dict[str, Any], str]]:
        return [("get_events", self.node.name, {}, "NodeNotReady"), ("get_status", self._victim(), {}, "Pending"),
                ("get_topology", "*", {}, "NotReady")]

    def oracle_reads(self, w: World) -> list[dict[str, Any]]:
        return [{"tool": "get_events", "args": {"entity": self.node.name}},
                {"tool": "get_status", "args": {"service": self._victim()}},
                {"tool": "get_topology", "args": {}}]

    def envelope_violations(self, w: World) -> list[list[dict[str, Any]]]:
        return []

    def detail(self, w: World) -> str:
        return f"{self.node.name} is down (power failure)"
