"""Node-level aggregation each tick: CPU, memory, descriptors, conntrack, ports, disks, and the
kernel's reactions to them (the OOM killer, conntrack drops); plus the kernel limits that fail a
replica's requests.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from srezero.sim.clock import PER_TICK_H as _PER_TICK_H
from srezero.sim.metrics import PACK10

if TYPE_CHECKING:
    from srezero.sim.components import Node
    from srezero.sim.world import World


#: The kernel settings the model reads, as ``sysctl`` names them (``set_sysctl`` takes these).
#: Descriptors a replica holds when the model tracks no count of its own (``Replica.fds`` 0).
PROCESS_FDS = 150
SYSCTLS = ("fs.file-max", "net.netfilter.nf_conntrack_max", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_tw_reuse")


def sysctl_value(n: Node, key: str) -> str:
    """A node's kernel setting as ``sysctl -n`` prints it."""
    return {"fs.file-max": str(n.fd_max), "net.netfilter.nf_conntrack_max": str(n.conntrack_max),
            "net.ipv4.tcp_tw_reuse": str(int(n.tw_reuse)),
            "net.ipv4.ip_local_port_range": f"{n.port_lo} {n.port_lo + n.ephemeral_ports - 1}"}[key]


def set_kernel_limit(w: World, n: Node, attr: str, value: int) -> None:
    """Set a kernel table's size (``fd_max``, ``conntrack_max``) from now on, keeping what it was before,
    so a reading of the past is bounded by the limit of its time (:func:`srezero.sim.readings.kernel_limit`)."""
    n.limit_log.append((w.now, attr, getattr(n, attr)))
    setattr(n, attr, value)


def log_link_flap(w: World, n: Node) -> None:
    """What the NIC driver prints when the link goes down and comes back: one wording, whether a failing
    NIC (a fault) or a switch upgrade (noise) flaps it, so the kernel log alone never tells them apart."""
    w.dmesg(n, "mlx5_core 0000:3b:00.0 eth0: Link is Down")
    w.dmesg(n, "mlx5_core 0000:3b:00.0 eth0: Link is Up - 25Gbps/Full - flow control off")


def update_nodes(w: World, vals) -> None:
    """Sum what each node's replicas use, let the kernel react, grow disks, record node metrics."""
    for node in w.topo.nodes:
        base = node.row
        cpu = mem = fds = conns = 0.0
        for rep in node.replicas:
            if rep.state == "Terminated":
                continue
            cpu += rep.cpu
            if rep.state == "Running":  # a killed or crashed process has freed its memory until it runs again
                mem += rep.mem_mb
            fds += rep.fds or PROCESS_FDS
            conns += rep.rps * 2.0 + rep.conns
        cpu += node.extra_cpu
        node.cpu_used = cpu
        node.mem_used_mb = mem_used = mem + 1800.0 + node.extra_mem_mb
        node.fds_used = fds_used = int(fds + 2400) + node.extra_fds
        node.conntrack_used = conntrack = int(conns * 30.0 + 1200)
        # outbound connections park their ephemeral port in TIME_WAIT for 60 s; tcp_tw_reuse recycles them
        node.ports_used = int(conns * (1.5 if node.tw_reuse else 6.0)) + 300
        up = node.up
        if up and mem_used > node.mem_total_mb:
            victim = max((r for r in node.replicas if r.state == "Running"), key=lambda r: r.mem_mb, default=None)
            if victim is not None:
                w.dmesg(node, f"Out of memory: Killed process {2000 + victim.index * 41} ({victim.kind}) "
                        f"total-vm:{int(victim.mem_mb * 1100)}kB, anon-rss:{int(victim.mem_mb * 1000)}kB, oom_score_adj:0")
                w.emit("Warning", "OOMKilling", node.name, f"Out of memory: Killed process ({victim.kind}) on {node.name}")
                w.restart_replica(victim, reason="OOMKilled", by_agent=False)
        if conntrack > node.conntrack_max:
            w.dmesg(node, "nf_conntrack: nf_conntrack: table full, dropping packet", every=2)
        disks = node.disks
        root, data = disks[0], disks[-1]
        r_cap = root.capacity_gb
        d_cap = data.capacity_gb
        r_used = root.used_gb + root.growth_gb_per_h * _PER_TICK_H
        d_used = data.used_gb + data.growth_gb_per_h * _PER_TICK_H
        root.used_gb = r_used = r_used if r_used < r_cap else r_cap
        node.root_full = r_full = r_used >= r_cap * 0.999
        data.used_gb = d_used = d_used if d_used < d_cap else d_cap
        if root.latency_mult != 1.0 or data.latency_mult != 1.0 or d_used >= d_cap * 0.999 or r_full:
            disk_lat = max(root.latency_ms, data.latency_ms)
        else:
            disk_lat = root.base_latency_ms if root.base_latency_ms > data.base_latency_ms else data.base_latency_ms
        if up:
            cpu_pct = cpu / node.cores * 100.0 + 3.0
            mem_pct = mem_used / node.mem_total_mb * 100.0
            cpu_pct = cpu_pct if cpu_pct < 100.0 else 100.0
            mem_pct = mem_pct if mem_pct < 100.0 else 100.0
        else:
            cpu_pct = mem_pct = 0.0
        PACK10(vals, base * 8,
               cpu_pct, mem_pct, r_used / r_cap * 100.0, d_used / d_cap * 100.0,
               float(root.io_errors + data.io_errors), disk_lat,
               node.nic_loss * 100.0 + (15.0 if node.nic_flapping else 0.0),
               conntrack if conntrack < node.conntrack_max else node.conntrack_max,  # new flows past it are dropped
               fds_used if fds_used < node.fd_max else node.fd_max,  # opens past the table fail (ENFILE)
               (1.0 - node.thermal_factor) * 100.0)


def link_loss(node: Node) -> float:
    """Share of the requests crossing ``node``'s NIC that fail as i/o timeouts: a request crosses the link
    several times (connect, request, response), and a flapping link is down part of every minute. Every
    replica on the node pays it, whatever it serves."""
    loss = node.nic_loss * 3.0 + (0.15 if node.nic_flapping else 0.0)
    return loss if loss < 1.0 else 1.0


def proxy_failures(node: Node, causes: dict[str, float]) -> tuple[float, float]:
    """What a proxy's node does to the requests it forwards: ``(failed, timed_out)`` shares, ``timed_out``
    being the part that waits out a timeout. A proxy opens a connection to an upstream for each request,
    so it needs a conntrack entry, an ephemeral port and a descriptor for it, and its replies cross the
    NIC: a lost reply or a dropped SYN times out, a missing port or descriptor fails at once. Adds each
    cause for the logs."""
    net = link_loss(node)
    if net:
        causes["upstream_timeout"] = 1.0 - (1.0 - causes.get("upstream_timeout", 0.0)) * (1.0 - net)
    drop = 0.0
    if node.conntrack_used > node.conntrack_max:
        drop = causes["upstream_connect_timeout"] = 1.0 - node.conntrack_max / node.conntrack_used
    timed_out = 1.0 - (1.0 - net) * (1.0 - drop)
    if node.fds_used > node.fd_max or node.ports_used > node.ephemeral_ports or node.root_full:
        return 1.0 - (1.0 - timed_out) * (1.0 - node_limits(node, causes)), timed_out
    return timed_out, timed_out


def node_limits(node: Node, causes: dict[str, float]) -> float:
    """Share of a web replica's requests failed by its node's kernel limits (ENFILE, no free
    ephemeral port, a full root filesystem); adds each cause for the logs."""
    ok = 1.0
    if node.fds_used > node.fd_max:
        # whoever holds the table grabs each freed descriptor at once, so others lose most races
        f = 8.0 * (1.0 - node.fd_max / node.fds_used)
        f = causes["enfile"] = f if f < 0.9 else 0.9
        ok *= 1.0 - f
    if node.ports_used > node.ephemeral_ports:
        f = causes["port_exhaustion"] = 1.0 - node.ephemeral_ports / node.ports_used
        ok *= 1.0 - f
    if node.root_full:
        causes["root_full"] = 0.3  # requests that write temp or session files fail
        ok *= 0.7
    return 1.0 - ok
