"""Node diagnostics as an engineer would see them: dmesg, SMART disk health, top, kernel limits.

Every line here is rendered from the node's true state (its kernel tables, disks, clock, NIC and
host processes), in the words the real tools print; nothing names a fault. A table that is over its
limit says so the way the kernel does ("table full", "limit reached"), so an engineer who looks in
the right place sees the cause, and one who looks elsewhere does not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from srezero.sim.clock import TICK_S
from srezero.sim.lifecycle import LISTEN_PORT
from srezero.sim.metrics import R_CPU
from srezero.sim.nodes import PROCESS_FDS
from srezero.sim.rng import stable_int

if TYPE_CHECKING:
    from srezero.sim.components import Node, Replica
    from srezero.sim.world import World

MOUNTS = {"nvme0n1": "/", "nvme1n1": "/var/lib/data"}


def unreachable(node: Node) -> str:
    return f"ssh: connect to host {node.name} port 22: No route to host"


def dmesg(w: World, node: Node, limit: int = 40) -> str:
    if not node.up:
        return unreachable(node)
    lines = sorted(w.dmesg_lines[node.name], key=lambda x: x[0])[-limit:]
    boot = w.boot_t.get(node.name, -50 * 86400.0)
    out = []
    group_t, shown = None, 0.0
    for t, text in lines:
        if t != group_t:  # a new burst
            group_t, shown = t, t - boot - (_jitter(w, node, t, 0) if t > boot + BOOT_S else 0.0)
        else:  # the next line of a burst follows within microseconds
            shown += 2e-5 + _jitter(w, node, t, len(out)) * 1e-3
        out.append(f"[{shown:12.6f}] {text}")
    return "\n".join(out) if out else "(kernel ring buffer empty)"


#: Lines this soon after a node's boot keep their stamps (the boot's own messages are spaced already).
BOOT_S = 60.0


def _jitter(w: World, node: Node, t: float, k: int) -> float:
    """A stable fraction of a second for the ``k``-th line at simulated time ``t`` on ``node``.

    The model logs a tick's kernel messages at the tick's end; a kernel logs them when they happen.
    Moving each burst back by under a second gives the stamps a kernel's scatter (lines 29-31 s apart,
    not 30.000000, with no fractional part shared by every line) while keeping every line after the
    write that caused it (an agent's actions fall on whole seconds). Rendered, not stored: the
    world's timeline and everything scored from it stay on the tick."""
    return stable_int(w.seed, node.name, t, k) % 999_983 / 1_000_000


def disk_health(w: World, node: Node) -> str:
    if not node.up:
        return unreachable(node)
    out = []
    for d in node.disks:
        failing = d.pending_sectors > 2000 or d.reallocated_sectors > 500
        out += [
            f"/dev/{d.device}  model: {d.model}  serial: {d.serial}  mounted on {MOUNTS.get(d.device, '/mnt')}",
            f"  SMART overall-health self-assessment test result: {'FAILED' if failing else 'PASSED'}",
            "  Critical Warning:                   0x00",
            f"  Temperature:                        {38 + node.index % 5 + int(d.latency_mult > 1) * 9} Celsius",
            f"  Percentage Used:                    {3 + node.index * 2}%",
            f"  Media and Data Integrity Errors:    {d.io_errors}",
            f"  Error Information Log Entries:      {d.io_errors + d.pending_sectors // 8}",
            f"  Current_Pending_Sector              {d.pending_sectors}",
            f"  Reallocated_Sector_Ct               {d.reallocated_sectors}",
            f"  capacity: {d.used_gb:.0f}/{d.capacity_gb:.0f} GB used ({d.used_frac:.0%})"
            + (" - No space left on device" if d.used_frac >= 0.999 else ""),
            f"  avg I/O latency (last minute): {d.latency_ms:.2f} ms",
        ]
        big = sorted(((gb, path) for path, gb in d.reclaim.items() if gb >= 1.0), reverse=True)[:3]
        if big:
            out.append("  largest directories (du -sh): " + ", ".join(f"{path} {gb:.0f}G" for gb, path in big))
    return "\n".join(out)


def top(w: World, node: Node) -> str:
    if not node.up:
        return unreachable(node)
    load = node.cpu_used / max(node.cores, 1) * node.cores
    out = [f"{node.name}: {node.cores} cores, load average {load:.2f}, {node.mem_used_mb / 1024:.1f}/"
           f"{node.mem_total_mb / 1024:.0f} GiB memory used" + (" (NotReady)" if not node.up else ""),
           f"{'PROCESS':34} {'CPU%':>7} {'MEM MB':>8}  STATE"]
    rows = []
    for rep in node.replicas:
        if rep.state == "Terminated":
            continue
        rows.append((rep.cpu * 100, f"{rep.kind + ' (' + rep.name + ')':34} {rep.cpu * 100:7.1f} {rep.mem_mb:8.0f}  {rep.state}"))
    for d in node.daemons:
        label = f"{d.name} ({d.kind})"
        rows.append((d.cpu * 100 + d.mem_mb / 1000, f"{label:34} {d.cpu * 100:7.1f} {d.mem_mb:8.0f}  Running"))
    rest = node.extra_cpu - sum(d.cpu for d in node.daemons)
    if rest > 0.01:  # CPU added outside the daemon list
        rows.append((rest * 100, f"{'batch-reindex (cron)':34} {rest * 100:7.1f} {1400:8.0f}  Running"))
    if node.thermal_factor < 0.99:
        rows.append((0, f"{'kworker/thermal':34} {0.3:7.1f} {0:8.0f}  package temperature above threshold, "
                        f"cpu clock throttled to {node.thermal_factor:.0%}"))
    rows.sort(key=lambda x: -x[0])
    out += [r for _, r in rows]
    return "\n".join(out)


def _clock(node: Node) -> str:
    skew = node.clock_skew_s
    sync = "yes" if node.ntp_synced and abs(skew) < 1.0 else "no"
    ntp = "active" if node.ntp_synced else "inactive"
    return (f"clock: System time is {abs(skew):.6f} seconds {'fast' if skew >= 0 else 'slow'} of NTP time; "
            f"System clock synchronized: {sync}; NTP service: {ntp}")


#: The window of the cgroup CPU throttling ``limits`` shows (the pod's cgroup outlives container restarts).
THROTTLE_WINDOW_S = 120


def _throttled(w: World, rep: Replica, first: int) -> float:
    """Share of CPU periods the replica's cgroup was throttled in from tick ``first`` to now: a rate over a
    short window, as a dashboard shows cpu.stat's nr_throttled / nr_periods, each tick against the quota
    it ran under."""
    quotas = rep.service.quotas
    if not quotas:
        return 0.0
    total = 0.0
    periods = 0
    for col, cpu in enumerate(w.buf[rep.row + R_CPU, first : w.col + 1].tolist(), first):
        if cpu <= 0.0:  # no process (the pod did not exist yet, or was gone): no periods
            continue
        periods += 1
        t = col * TICK_S
        quota = next((q for at, q in reversed(quotas) if at <= t), quotas[0][1])
        if quota > 0.0:  # a quota of 0 means none: nothing to throttle against
            total += min(1.0, max(0.0, cpu / quota - 0.85) * 4)
    return total / periods if periods else 0.0


def limits(w: World, node: Node) -> str:
    if not node.up:
        return unreachable(node)
    fd_full = " (VFS: file-max limit reached)" if node.fds_used > node.fd_max else ""
    ct_full = " (table full)" if node.conntrack_used > node.conntrack_max else ""
    hi = node.port_lo + node.ephemeral_ports - 1
    ports_out = " (exhausted: cannot assign requested address)" if node.ports_used > node.ephemeral_ports else ""
    out = [
        f"fs.file-max = {node.fd_max}",
        f"fs.file-nr: {min(node.fds_used, node.fd_max)} allocated / {node.fd_max} max{fd_full}",
        f"net.netfilter.nf_conntrack_max = {node.conntrack_max}",
        f"net.netfilter.nf_conntrack_count: {min(node.conntrack_used, node.conntrack_max)} / "
        f"nf_conntrack_max {node.conntrack_max}{ct_full}",
        f"net.ipv4.ip_local_port_range = {node.port_lo} {hi}",
        f"net.ipv4.tcp_tw_reuse = {int(node.tw_reuse)}",
        f"ephemeral ports ({node.port_lo}-{hi}): {min(node.ports_used, node.ephemeral_ports)} in use / "
        f"{node.ephemeral_ports}{ports_out}",
        f"memory: {node.mem_used_mb:.0f} MB used / {node.mem_total_mb:.0f} MB",
        _clock(node),
        # the counters' loss is while the link is up; net_loss_pct also counts the seconds it is down
        f"nic eth0: packet loss {node.nic_loss:.1%} while up, "
        + ("link flapping (carrier down about 15% of every minute)" if node.nic_flapping else "link up"),
    ]
    clash = [f"{k}:{p}" for k, p in LISTEN_PORT.items() if node.port_lo <= p <= hi]
    if clash:
        out.append("warning: ephemeral port range overlaps listening ports " + ", ".join(clash))
    holders = sorted(([d.fds, d.name] for d in node.daemons if d.fds >= 1000), reverse=True)
    if holders:  # past fs.file-max the biggest holder's further opens failed: it holds only what fit
        holders[0][0] -= max(0, node.fds_used - node.fd_max)
        out.append("open files by process: " + ", ".join(f"{name} {fds}" for fds, name in holders))
    out.append(f"cgroups (throttled: share of CPU periods throttled over the last {THROTTLE_WINDOW_S // 60} min):")
    first = max(0, w.col + 1 - THROTTLE_WINDOW_S // int(TICK_S))
    for rep in node.replicas:
        if rep.state == "Terminated":
            continue
        cfg = rep.service.config
        quota = cfg.get("cpu_limit")
        throttled = 0.0
        if quota:
            throttled = _throttled(w, rep, first)
        mem_limit = cfg.get("memory_limit_mb")
        nofile = cfg.get("max_open_files", 65536)
        # what the node's count adds for it while its process runs (a stopped one holds none open)
        open_files = (rep.fds or PROCESS_FDS) if rep.state == "Running" else 0
        out.append(f"  {rep.name:18} cpu.max={quota or 'max'} throttled={throttled:.0%}  memory.max="
                   f"{str(mem_limit) + 'M' if mem_limit else 'max'}  nofile={open_files}/{nofile}")
    return "\n".join(out)
