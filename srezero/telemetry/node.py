"""Node diagnostics as an engineer would see them: dmesg, SMART disk health, top, kernel limits."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from srezero.sim.components import Node
    from srezero.sim.world import World


def dmesg(w: World, node: Node, limit: int = 40) -> str:
    lines = sorted(w.dmesg_lines[node.name], key=lambda x: x[0])[-limit:]
    boot = -50 * 86400.0
    out = [f"[{t - boot:12.6f}] {text}" for t, text in lines]
    return "\n".join(out) if out else "(kernel ring buffer empty)"


def disk_health(w: World, node: Node) -> str:
    out = []
    for d in node.disks:
        failing = d.pending_sectors > 2000 or d.reallocated_sectors > 500
        out += [
            f"/dev/{d.device}  model: {d.model}  serial: {d.serial}",
            f"  SMART overall-health self-assessment test result: {'FAILED' if failing else 'PASSED'}",
            "  Critical Warning:                   0x00",
            f"  Temperature:                        {38 + node.index % 5 + int(d.latency_mult > 1) * 9} Celsius",
            f"  Percentage Used:                    {3 + node.index * 2}%",
            f"  Media and Data Integrity Errors:    {d.io_errors}",
            f"  Error Information Log Entries:      {d.io_errors + d.pending_sectors // 8}",
            f"  Current_Pending_Sector              {d.pending_sectors}",
            f"  Reallocated_Sector_Ct               {d.reallocated_sectors}",
            f"  capacity: {d.used_gb:.0f}/{d.capacity_gb:.0f} GB used ({d.used_frac:.0%})",
            f"  avg I/O latency (last minute): {d.latency_ms:.2f} ms",
        ]
    return "\n".join(out)


def top(w: World, node: Node) -> str:
    load = node.cpu_used / max(node.cores, 1) * node.cores
    out = [f"{node.name}: {node.cores} cores, load average {load:.2f}, {node.mem_used_mb / 1024:.1f}/"
           f"{node.mem_total_mb / 1024:.0f} GiB memory used" + (" (NotReady)" if not node.up else ""),
           f"{'PROCESS':34} {'CPU%':>7} {'MEM MB':>8}  STATE"]
    rows = []
    for rep in node.replicas:
        if rep.state == "Terminated":
            continue
        rows.append((rep.cpu * 100, f"{rep.kind + ' (' + rep.name + ')':34} {rep.cpu * 100:7.1f} {rep.mem_mb:8.0f}  {rep.state}"))
    if node.extra_cpu > 0:
        rows.append((node.extra_cpu * 100, f"{'batch-reindex (cron)':34} {node.extra_cpu * 100:7.1f} {1400:8.0f}  Running"))
    if node.thermal_factor < 0.99:
        rows.append((0, f"{'kworker/thermal':34} {0.3:7.1f} {0:8.0f}  package temperature above threshold, "
                        f"cpu clock throttled to {node.thermal_factor:.0%}"))
    rows.sort(key=lambda x: -x[0])
    out += [r for _, r in rows]
    return "\n".join(out)


def limits(w: World, node: Node) -> str:
    out = [
        f"fs.file-nr: {node.fds_used} allocated / {node.fd_max} max",
        f"net.netfilter.nf_conntrack_count: {node.conntrack_used} / nf_conntrack_max {node.conntrack_max}",
        f"ephemeral ports (32768-60999): {node.ports_used} in use / {node.ephemeral_ports}",
        f"memory: {node.mem_used_mb:.0f} MB used / {node.mem_total_mb:.0f} MB",
        f"clock: System time is {abs(node.clock_skew_s):.6f} seconds {'fast' if node.clock_skew_s >= 0 else 'slow'} of NTP time",
        f"nic eth0: packet loss {node.nic_loss:.1%}, link {'flapping' if node.nic_flapping else 'up'}",
        "cgroups:",
    ]
    for rep in node.replicas:
        if rep.state == "Terminated":
            continue
        cfg = rep.service.config
        quota = cfg.get("cpu_limit")
        throttled = 0.0
        if quota:
            throttled = max(0.0, min(1.0, rep.cpu / float(quota) - 0.85) * 4)
        mem_limit = cfg.get("memory_limit_mb")
        nofile = cfg.get("max_open_files", 65536)
        out.append(f"  {rep.name:18} cpu.max={quota or 'max'} throttled={throttled:.0%}  memory.max="
                   f"{str(mem_limit) + 'M' if mem_limit else 'max'}  nofile={rep.fds}/{nofile}")
    return "\n".join(out)
