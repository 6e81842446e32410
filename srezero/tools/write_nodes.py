"""Write tools specific to node-level faults (kernel settings, clocks, disks...).

Declared with ``@tool`` like every other tool; :data:`srezero.tools.registry.TOOL_MODULES` loads this
module. Keep each tool's consequences real: see the module docstring of :mod:`srezero.tools.write`.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field

from srezero.sim.nodes import set_kernel_limit, sysctl_value
from srezero.tools.read import _node
from srezero.tools.registry import ToolError, ToolOutput, tool

if TYPE_CHECKING:
    from srezero.sim.components import Disk, Node
    from srezero.sim.world import World
    from srezero.tools.context import ToolContext


# --- cordon_node (helper G): backs `kubectl cordon|uncordon NODE` in srezero.tools.kubectl -------------
@tool("write", 10, target_arg="node")
def cordon_node(ctx: ToolContext, node: Annotated[str, "node to mark (un)schedulable"],
                uncordon: Annotated[bool, "make the node schedulable again"] = False) -> ToolOutput:
    """Mark a node unschedulable (or schedulable again). Running replicas stay; new ones go elsewhere."""
    from srezero.tools.write import AGENT

    w = ctx.world
    n = _node(ctx, node)
    n.cordoned = not uncordon
    verb = "uncordoned" if uncordon else "cordoned"
    w.change("node", "uncordon" if uncordon else "cordon", f"{verb} {node}", AGENT)
    status = "NodeSchedulable" if uncordon else "NodeNotSchedulable"
    w.emit("Normal", status, node, f"Node {node} status is now: {status}")
    return ToolOutput(f"node/{node} {verb}")
# --- end cordon_node ---------------------------------------------------------------------------------


# --- node-level cures (helper A2): kernel settings, clocks, host processes, disks --------------------------
MAX_VOLUME_GB = 16384.0  # the largest volume the storage class provisions


def _int(key: str, value: str | int, lo: int, hi: int) -> int:
    try:
        v = int(str(value).strip())
    except ValueError:
        raise ToolError(f"{key} takes an integer, got {value!r}") from None
    if not lo <= v <= hi:
        raise ToolError(f"{key} must be between {lo} and {hi}, got {v}")
    return v


def _apply_sysctl(w: World, n: Node, key: str, value: str | int) -> str:
    """Validate and apply one sysctl at runtime; returns the value as the kernel now reports it."""
    if key == "fs.file-max":
        set_kernel_limit(w, n, "fd_max", _int(key, value, 1024, 2**31 - 1))
        return str(n.fd_max)
    if key == "net.netfilter.nf_conntrack_max":
        set_kernel_limit(w, n, "conntrack_max", _int(key, value, 1024, 2**31 - 1))
        n.retotal()  # the hash table is kernel memory: an oversized table starves the node
        return str(n.conntrack_max)
    if key == "net.ipv4.tcp_tw_reuse":
        n.tw_reuse = bool(_int(key, value, 0, 1))
        return str(int(n.tw_reuse))
    parts = str(value).replace(",", " ").split()
    if len(parts) != 2:
        raise ToolError(f"{key} takes two port numbers 'low high', got {value!r}")
    lo, hi = (_int(key, p, 1024, 65535) for p in parts)
    if lo >= hi:
        raise ToolError(f"{key}: low ({lo}) must be below high ({hi})")
    n.port_lo, n.ephemeral_ports = lo, hi - lo + 1
    return f"{lo} {hi}"


@tool("write", 15, target_arg="node")
def set_sysctl(ctx: ToolContext,
               node: Annotated[str, "node whose kernel setting to change"],
               key: Annotated[Literal["fs.file-max", "net.netfilter.nf_conntrack_max", "net.ipv4.ip_local_port_range",
                                      "net.ipv4.tcp_tw_reuse"], "sysctl name (node_diagnostics limits shows them)"],
               value: Annotated[str | int, "new value; the port range is two numbers, e.g. '32768 60999'"]
               ) -> ToolOutput:
    """Change a kernel setting on one node at runtime (like sysctl -w). Takes effect at once."""
    from srezero.tools.write import AGENT

    w = ctx.world
    n = _node(ctx, node)
    if not n.up:
        raise ToolError(f"ssh: connect to host {node} port 22: No route to host")
    old = sysctl_value(n, key)
    new = _apply_sysctl(w, n, key, value)
    w.change("node", "sysctl", f"{node}: {key}: {old} -> {new}", AGENT)
    return ToolOutput(f"{node}: {key} = {new} (was {old})")


@tool("write", 15, target_arg="node")
def sync_clock(ctx: ToolContext, node: Annotated[str, "node whose clock to resynchronise"]) -> ToolOutput:
    """Restart chronyd on a node and step its clock to NTP time (chronyc makestep)."""
    from srezero.sim.components import HOST_DAEMONS, Daemon
    from srezero.tools.write import AGENT

    w = ctx.world
    n = _node(ctx, node)
    if not n.up:
        raise ToolError(f"ssh: connect to host {node} port 22: No route to host")
    step = n.clock_skew_s
    n.clock_skew_s = 0.0
    n.ntp_synced = True
    if n.daemon("chronyd") is None:
        n.daemons.append(Daemon(*next(d for d in HOST_DAEMONS if d[0] == "chronyd")))
        n.retotal()
    w.dmesg(n, f"chronyd: System clock wrong by {-step:.6f} seconds, adjustment started")
    w.change("node", "clock", f"{node}: restarted chronyd and stepped the clock by {-step:+.3f}s", AGENT)
    return ToolOutput(f"{node}: chronyd restarted; clock stepped by {-step:+.3f}s; System clock synchronized: yes")


@tool("write", 10, target_arg="node")
def kill_process(ctx: ToolContext,
                 node: Annotated[str, "node the process runs on"],
                 process: Annotated[str, "host process name as node_diagnostics top shows it (not a pod)"]
                 ) -> ToolOutput:
    """Kill a host process (not a pod). systemd services restart fresh; cron jobs stay dead and lose their run."""
    from srezero.tools.write import AGENT

    w = ctx.world
    n = _node(ctx, node)
    if not n.up:
        raise ToolError(f"ssh: connect to host {node} port 22: No route to host")
    d = n.daemon(process)
    if d is None:
        if any(r.name == process or r.kind == process for r in n.replicas):
            raise ToolError(f"{process} is a pod; use restart for pods")
        names = ", ".join(x.name for x in n.daemons)
        raise ToolError(f"no host process {process!r} on {node}; running: {names}")
    if d.kind == "cron":
        n.daemons.remove(d)
        text = f"{node}: killed {process} (cron job); this run's work is lost"
    else:
        d.mem_mb, d.fds = d.base_mem_mb, d.base_fds
        text = f"{node}: killed {process}; systemd restarted it"
    n.retotal()
    w.change("node", "kill", f"{node}: killed {process}", AGENT)
    return ToolOutput(text)


def _disk(ctx: ToolContext, node: str, device: str) -> Disk:
    n = _node(ctx, node)
    if not n.up:
        raise ToolError(f"ssh: connect to host {node} port 22: No route to host")
    try:
        return n.disk(device.removeprefix("/dev/"))
    except KeyError:
        raise ToolError(f"{node} has no disk {device!r}; disks: {', '.join(d.device for d in n.disks)}") from None


def _io_burst(w: World, d: Disk, factor: float, seconds: float) -> Generator[Any, Any, None]:
    """Deleting or resizing is heavy metadata I/O: the disk is slower for a while."""
    d.latency_mult *= factor
    yield w.env.timeout(seconds)
    d.latency_mult /= factor


@tool("write", 30, target_arg="node")
def cleanup_disk(ctx: ToolContext,
                 node: Annotated[str, "node the disk is attached to"],
                 device: Annotated[str, "block device, e.g. nvme0n1 (root) or nvme1n1 (data)"]) -> ToolOutput:
    """Delete the reclaimable files du shows as largest on a disk: rotated logs, core dumps, temp files, stale
    backups and exports."""
    from srezero.tools.write import AGENT

    w = ctx.world
    d = _disk(ctx, node, device)
    freed = sum(d.reclaim.values())
    d.used_gb = max(0.0, d.used_gb - freed)
    d.reclaim.clear()
    w.env.process(_io_burst(w, d, 3.0, 60.0))
    w.change("node", "cleanup", f"{node}: deleted {freed:.1f} GB of reclaimable files on {d.device}", AGENT)
    return ToolOutput(f"{node}: freed {freed:.1f} GB on /dev/{d.device}; now {d.used_gb:.0f}/{d.capacity_gb:.0f} GB "
                      f"used ({d.used_frac:.0%})")


def _resize(w: World, d: Disk, size_gb: float) -> Generator[Any, Any, None]:
    yield w.env.timeout(60.0)
    d.capacity_gb = size_gb
    w.dmesg(d.node, f"EXT4-fs ({d.device}): resized filesystem to {int(size_gb * 262144)}")


@tool("write", 30, target_arg="node")
def expand_volume(ctx: ToolContext,
                  node: Annotated[str, "node the disk is attached to"],
                  device: Annotated[str, "block device, e.g. nvme0n1 (root) or nvme1n1 (data)"],
                  size_gb: Annotated[float, Field(gt=0), "new size in GB (larger than now; at most 16384)"]
                  ) -> ToolOutput:
    """Grow a volume and its filesystem online. The resize completes in about a minute."""
    from srezero.tools.write import AGENT

    w = ctx.world
    d = _disk(ctx, node, device)
    if size_gb <= d.capacity_gb:
        raise ToolError(f"/dev/{d.device} is {d.capacity_gb:.0f} GB; volumes can only grow")
    if size_gb > MAX_VOLUME_GB:
        raise ToolError(f"the storage class provisions volumes up to {MAX_VOLUME_GB:.0f} GB")
    w.env.process(_resize(w, d, float(size_gb)))
    w.env.process(_io_burst(w, d, 2.0, 60.0))
    w.change("node", "resize", f"{node}: expanding {d.device} {d.capacity_gb:.0f} -> {size_gb:.0f} GB", AGENT)
    return ToolOutput(f"{node}: expanding /dev/{d.device} from {d.capacity_gb:.0f} to {size_gb:.0f} GB (online resize, "
                      "about a minute)")
# --- end node-level cures --------------------------------------------------------------------------------
