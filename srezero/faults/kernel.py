"""Kernel and OS primitives: file descriptors, conntrack, the OOM killer, clocks, ports, cgroup quotas.

Each cause lives in a node's kernel state (a sysctl, a host process, the clock) or in a cgroup
quota; the tick model turns it into failed requests on the replicas that node runs. Restarting the
application never helps: the node keeps the cause. :class:`NodeFault` is the shared base of every
primitive whose target is a node (also used by :mod:`srezero.faults.hardware`).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from srezero.faults.app import ConfigFault
from srezero.faults.base import (
    Fault,
    FaultMeta,
    Param,
    Remedy,
    RootCause,
    Signal,
    read_action,
    register,
    value_tokens,
)
from srezero.faults.common import traced
from srezero.sim import changes
from srezero.sim import metrics as M
from srezero.sim.clock import TICK_S
from srezero.sim.components import HOST_JOBS, Daemon, Node
from srezero.sim.lifecycle import LISTEN_PORT
from srezero.sim.nodes import set_kernel_limit
from srezero.sim.readings import backdate_ramp
from srezero.sim.rng import stable_int

if TYPE_CHECKING:
    from srezero.sim.world import World


def node_of(target: Any) -> Node:
    """The node a target lives on (a node, a disk's node or a replica's node)."""
    obj = target.obj
    if target.kind == "node":
        return obj
    if target.kind in ("disk", "replica"):
        return obj.node
    raise ValueError(f"{target.name} is not on a node; use a node(...) selector")


def pow2_below(x: float) -> int:
    """The largest power of two not above ``x`` (kernel tables are sized in powers of two)."""
    p = 1024
    while p * 2 <= x:
        p *= 2
    return p


def evacuated(w: World, node: Node) -> bool:
    """The node serves nothing: no database primary, no live stateless replica, and it takes no new work."""
    if w.topo.db_primary().node is node:
        return False
    if any(r.kind != "database" and r.state in ("Running", "Starting", "CrashLoopBackOff") for r in node.replicas):
        return False
    return node.cordoned or not node.up


class NodeFault(Fault):
    """A cause that lives on one node. Subclasses fill ``meta`` and the cause-specific parts."""

    detail_tokens: tuple[str, ...] = ()
    also: tuple[str, ...] = ()  # RootCause.also: other categories that describe the cause as well

    def prepare(self, w: World) -> None:
        self.node = node_of(self.target)

    def detail(self, w: World) -> str:
        return self.meta.description

    def root_cause(self, w: World) -> RootCause:
        return RootCause(entity=self.node.name, category=self.meta.category, detail=self.detail(w),
                         detail_tokens=self.detail_tokens, fault=self.meta.name, layer=self.meta.layer, also=self.also)

    def signals(self, w: World) -> list[tuple[str, str, dict[str, Any], str]]:
        out = []
        for sig in self.meta.signals:
            ent = self.node.name if sig.on in ("node", "target") else sig.on
            out.append((sig.tool, ent, dict(sig.args), sig.pattern))
        return out

    def oracle_reads(self, w: World) -> list[dict[str, Any]]:
        """One read per declared signal, in order (signals are written to be what an engineer reads).
        ``search_logs`` keeps the tool's default limit."""
        return [read_action(*sig, limit=None) for sig in self.signals(w)]

    def sysctl_change(self, w: World, key: str, old: Any, new: Any) -> None:
        w.change("node", "sysctl", f"{self.node.name}: {changes.edit_line(w, key, old, new)}", w.author())


# ------------------------------------------------------------------ file descriptors
@register
class FdExhaustion(NodeFault):
    """A host log shipper holds every rotated log file open; the node's file table fills up.

    Once ``fs.file-nr`` reaches ``fs.file-max``, every process on the node gets ENFILE: the web
    replica there fails accepts and outbound connections. Restarting the application frees a few
    hundred descriptors and changes nothing; restarting (killing) the shipper releases them all.
    Raising ``fs.file-max`` only buys time while the shipper keeps leaking.
    """

    also = ("code_defect",)  # the shipper's bug leaks the descriptors

    meta = FaultMeta(
        name="fd_exhaustion",
        layer="kernel",
        category="resource_exhaustion",
        targets=("node",),
        description="a host process leaks file descriptors until the node's file table (fs.file-max) is full",
        params=(Param("leak_per_min", float, 6000.0, lo=500.0, hi=100000.0, description="descriptors leaked per minute (for fs.file-max 1048576; scales with the node's table)"),
                Param("minutes_to_full", float, 2.0, lo=0.5, hi=30.0, description="from onset until the table is full"),
                Param("overshoot", float, 0.2, lo=0.05, hi=1.0,
                      description="how far demand exceeds the table at worst (share of fs.file-max)")),
        signals=(Signal("node_diagnostics", "node", (("check", "limits"),), "file-max limit reached",
                        "fs.file-nr at fs.file-max"),
                 Signal("node_diagnostics", "node", (("check", "dmesg"),), r"VFS: file-max limit \d+ reached",
                        "the kernel's ENFILE message"),
                 Signal("search_logs", "web_server", (), "too many open files in system", "accept failures",
                        alt=(traced("too many open files in system"),))),
        remedies=(Remedy("kill_process", "restart the leaking host process (systemd restarts it with its descriptors "
                                         "released)"),),
        wrong_fix_effects="restarting pods frees a few hundred descriptors; raising fs.file-max only delays the next "
                          "exhaustion while the leak continues; draining moves the victims but not the cause",
        example="node(web_server[*])",
        alert="HighErrorRate",
    )
    detail_tokens = ("file descriptor", "file-max", "enfile", "too many open files", "fluent-bit", "file table")
    PROCESS = "fluent-bit"

    def inject(self, w: World) -> None:
        n = self.node
        d = n.daemon(self.PROCESS)
        if d is None:
            d = Daemon(self.PROCESS, "systemd", 0.03, 45.0, 160)
            n.daemons.append(d)
        self.daemon = d
        others = n.fds_used - n.extra_fds
        # leak_per_min is stated for the usual table (fs.file-max 1048576) and scales with the node
        # image's, so one parameter set is the same incident on every image
        self.scale = n.fd_max / 1_048_576
        ahead = self.params["leak_per_min"] * self.params["minutes_to_full"] * self.scale
        held = d.fds
        d.fds = max(d.fds, int(n.fd_max - others - ahead))
        # it had been leaking long before: the node's count climbs to here rather than jumping
        backdate_ramp(w, n.row + M.N_FDS, d.fds - held, self.params["leak_per_min"] * self.scale * TICK_S / 60.0,
                        cap=n.fd_max)
        d.mem_mb = d.base_mem_mb * 6  # every open file costs the shipper a little memory
        n.retotal()

    def evolve(self, w: World) -> Generator[Any, Any, None]:
        d, n = self.daemon, self.node
        cap = int(n.fd_max * (1.0 + self.params["overshoot"]))
        step = int(self.params["leak_per_min"] * self.scale * TICK_S / 60.0)
        while True:
            yield w.env.timeout(TICK_S)
            if d.fds <= d.base_fds or n.daemon(self.PROCESS) is not d:
                return  # restarted: the stuck file handles are gone
            d.fds = min(cap, d.fds + step)
            n.retotal()
            if n.fds_used > n.fd_max:
                w.dmesg(n, f"VFS: file-max limit {n.fd_max} reached", every=4)

    def neutralised(self, w: World) -> bool:
        d = self.node.daemon(self.PROCESS)
        return d is None or d.fds < self.node.fd_max * 0.1

    def why_active(self, w: World) -> str:
        return (f"{self.PROCESS} on {self.node.name} still holds {self.daemon.fds} open files; fs.file-nr is "
                f"{self.node.fds_used} of {self.node.fd_max}")

    def detail(self, w: World) -> str:
        return f"{self.PROCESS} leaks file descriptors until fs.file-max is exhausted (ENFILE)"

    def oracle_fix(self, w: World) -> list[dict[str, Any]]:
        return [{"tool": "kill_process", "args": {"node": self.node.name, "process": self.PROCESS}}]

    def envelope_violations(self, w: World) -> list[list[dict[str, Any]]]:
        bump = int(self.node.fd_max * 1.6)  # above today's demand, but the leak keeps going
        return [[{"tool": "set_sysctl", "args": {"node": self.node.name, "key": "fs.file-max", "value": bump}}]]


# ------------------------------------------------------------------ conntrack
@register
class ConntrackFull(NodeFault):
    """``nf_conntrack_max`` on a node was set far below its connection count; new flows are dropped."""

    meta = FaultMeta(
        name="conntrack_full",
        layer="kernel",
        category="network",
        targets=("node",),
        description="the node's connection-tracking table (nf_conntrack_max) is too small, so new connections "
                    "are dropped",
        params=(Param("overcommit", float, 2.5, lo=1.3, hi=8.0, description="tracked connections / new table size"),),
        signals=(Signal("node_diagnostics", "node", (("check", "dmesg"),), "nf_conntrack: table full",
                        "the kernel dropping packets"),
                 Signal("node_diagnostics", "node", (("check", "limits"),), r"nf_conntrack_max \d+ \(table full\)",
                        "count at the maximum"),
                 Signal("search_logs", "web_server", (), "connect: connection timed out", "dropped SYNs time out",
                        alt=(traced("connect timeout"),))),
        remedies=(Remedy("set_sysctl", "net.netfilter.nf_conntrack_max at least twice the tracked count, and small "
                                       "enough that the table stays under a tenth of the node's memory"),),
        wrong_fix_effects="restarts reconnect into the same full table; a huge table pins kernel memory and the OOM "
                          "killer starts killing pods",
        example="node(web_server[*])",
    )
    detail_tokens = ("conntrack", "nf_conntrack", "table full", "connection tracking")
    KEY = "net.netfilter.nf_conntrack_max"

    def inject(self, w: World) -> None:
        n = self.node
        self.original = n.conntrack_max
        self.normal_tracked = n.conntrack_used  # the node's connections under its normal load
        set_kernel_limit(w, n, "conntrack_max", pow2_below(max(2048.0, n.conntrack_used / self.params["overcommit"])))
        self.sysctl_change(w, self.KEY, self.original, n.conntrack_max)

    def neutralised(self, w: World) -> bool:
        # sized against the normal load too: a pod restart on the node empties the table for a tick,
        # which fixes nothing; an evacuated node tracks nothing and serves nothing
        n = self.node
        return evacuated(w, n) or (n.conntrack_max >= 2 * max(n.conntrack_used, self.normal_tracked)
                                   and n.kernel_mem_mb() <= 0.1 * n.mem_total_mb)

    def why_active(self, w: World) -> str:
        n = self.node
        return f"{n.name} tracks {n.conntrack_used} connections with nf_conntrack_max={n.conntrack_max}"

    def detail(self, w: World) -> str:
        return f"nf_conntrack_max on {self.node.name} set to {self.node.conntrack_max}; the conntrack table is full"

    def oracle_fix(self, w: World) -> list[dict[str, Any]]:
        return [{"tool": "set_sysctl", "args": {"node": self.node.name, "key": self.KEY, "value": self.original}}]

    def envelope_violations(self, w: World) -> list[list[dict[str, Any]]]:
        n = self.node
        small = int(n.conntrack_used * 1.15)
        huge = int(n.mem_total_mb / 0.000305)  # a table as large as the node's memory
        return [[{"tool": "set_sysctl", "args": {"node": n.name, "key": self.KEY, "value": small}}],
                [{"tool": "set_sysctl", "args": {"node": n.name, "key": self.KEY, "value": huge}}]]


# ------------------------------------------------------------------ OOM killer
@register
class NodeOOM(NodeFault):
    """A runaway host job grows until the node runs out of memory; the kernel kills the largest pod.

    The job runs with a protective ``oom_score_adj``, so the OOM killer picks the biggest pod
    instead (on a database node, the database), again after every restart. Killing the job is the
    cure; restarting the victim only feeds the next kill.
    """

    meta = FaultMeta(
        name="node_oom",
        layer="kernel",
        category="resource_exhaustion",
        targets=("node",),
        description="a runaway host process exhausts node memory and the OOM killer keeps killing pods",
        params=(Param("growth_gb_per_h", float, 30.0, lo=2.0, hi=200.0, description="memory growth of the job"),
                Param("minutes_to_oom", float, 2.0, lo=0.5, hi=30.0, description="from onset until the first OOM kill")),
        signals=(Signal("node_diagnostics", "node", (("check", "dmesg"),), "Out of memory: Killed process",
                        "OOM kills"),
                 Signal("node_diagnostics", "node", (("check", "top"),), r"\(cron\)\s+[\d.]+\s+\d{5,}",
                        "a host job holding tens of GB"),
                 Signal("get_events", "node", (), "OOMKilling", "the node's OOM events")),
        remedies=(Remedy("kill_process", "kill the runaway job on that node (a cron job stays dead)"),),
        wrong_fix_effects="restarting the killed pod only feeds the next kill; raising a pod memory limit does nothing "
                          "against node memory; draining moves pods but the job keeps the node unusable",
        example="node(database.primary)",
    )
    detail_tokens = ("oom", "out of memory", "memory", "runaway")

    def prepare(self, w: World) -> None:
        super().prepare(w)
        # the noise's pool: a cron job's name does not tell the runaway from a routine spike
        self.job = HOST_JOBS[stable_int(w.spec.id, w.seed, self.index, "host job") % len(HOST_JOBS)]

    def inject(self, w: World) -> None:
        n = self.node
        pods = [r.mem_mb for r in n.replicas if r.state == "Running"]
        biggest = max(pods, default=0.0)
        room = n.mem_total_mb - n.mem_used_mb  # free memory now
        self.cap = room + biggest * 0.5  # at worst the node is half the biggest pod over
        ahead = self.params["growth_gb_per_h"] * 1024 * self.params["minutes_to_oom"] / 60.0
        # a routine run of the same job may be on the node now (noise): take the next free name, so
        # `kill_process <name>` means one process, as it would for an engineer reading `top`
        self.job = n.free_job_name(self.job)
        cpu = 0.5 + stable_int(w.spec.id, w.seed, self.index, "host job cpu") % 200 / 100.0  # as routine jobs vary
        self.daemon = Daemon(self.job, "cron", cpu, max(500.0, room - ahead))
        n.daemons.append(self.daemon)
        n.retotal()

    def evolve(self, w: World) -> Generator[Any, Any, None]:
        d, n = self.daemon, self.node
        step = self.params["growth_gb_per_h"] * 1024 * TICK_S / 3600.0
        while d in n.daemons:  # by identity: a routine job may run under the same name later
            yield w.env.timeout(TICK_S)
            d.mem_mb = min(self.cap, d.mem_mb + step)
            n.retotal()

    def neutralised(self, w: World) -> bool:
        return self.daemon not in self.node.daemons

    def why_active(self, w: World) -> str:
        return f"{self.job} still runs on {self.node.name} holding {self.daemon.mem_mb / 1024:.1f} GB"

    def detail(self, w: World) -> str:
        return f"the host job {self.job} exhausts {self.node.name}'s memory; the OOM killer kills pods"

    def root_cause(self, w: World) -> RootCause:
        rc = super().root_cause(w)
        rc.detail_tokens = (*self.detail_tokens, self.job)
        return rc

    def oracle_fix(self, w: World) -> list[dict[str, Any]]:
        return [{"tool": "kill_process", "args": {"node": self.node.name, "process": self.job}}]


# ------------------------------------------------------------------ clock
@register
class ClockSkew(NodeFault):
    """chronyd stopped on a node after a package upgrade; the clock jumped and keeps drifting.

    Tokens issued elsewhere look as if they come from the future (or have expired), so the web
    replica on that node rejects a large share of authenticated requests.
    """

    meta = FaultMeta(
        name="clock_skew",
        layer="kernel",
        category="authentication",
        targets=("node",),
        description="the node's clock is off because time synchronisation stopped; tokens are rejected",
        params=(Param("initial_skew_s", float, 28.0, lo=0.0, hi=900.0, description="clock offset at onset"),
                Param("drift_s_per_min", float, 4.0, lo=0.2, hi=60.0, description="further drift per minute")),
        signals=(Signal("node_diagnostics", "node", (("check", "limits"),), "NTP service: inactive",
                        "time sync stopped"),
                 Signal("search_logs", "web_server", (), "token rejected", "token validation failures",
                        alt=(traced("token rejected"),)),
                 Signal("node_diagnostics", "node", (("check", "limits"),), r"System clock synchronized: no",
                        "the clock is not synchronised")),
        remedies=(Remedy("sync_clock", "restart chronyd and step the clock on that node"),),
        wrong_fix_effects="restarting pods re-reads the same wrong clock; rotating credentials does not help",
        example="node(web_server[*])",
    )
    detail_tokens = ("clock", "skew", "ntp", "chrony")

    def inject(self, w: World) -> None:
        n = self.node
        d = n.daemon("chronyd")
        if d is not None:
            n.daemons.remove(d)
            n.retotal()
        n.ntp_synced = False
        n.clock_skew_s += self.params["initial_skew_s"]

    def evolve(self, w: World) -> Generator[Any, Any, None]:
        n = self.node
        step = self.params["drift_s_per_min"] * TICK_S / 60.0
        while True:
            yield w.env.timeout(TICK_S)
            if n.ntp_synced:
                return
            n.clock_skew_s += step

    def neutralised(self, w: World) -> bool:
        return self.node.ntp_synced and abs(self.node.clock_skew_s) < 1.0

    def why_active(self, w: World) -> str:
        return f"{self.node.name}'s clock is {self.node.clock_skew_s:+.0f}s off and chronyd is not running"

    def detail(self, w: World) -> str:
        return f"clock skew on {self.node.name}: chronyd stopped and the clock drifted"

    def oracle_fix(self, w: World) -> list[dict[str, Any]]:
        return [{"tool": "sync_clock", "args": {"node": self.node.name}}]


# ------------------------------------------------------------------ ephemeral ports
@register
class EphemeralPortExhaustion(NodeFault):
    """The node's ephemeral port range was narrowed; outbound connections run out of source ports."""

    meta = FaultMeta(
        name="ephemeral_port_exhaustion",
        layer="kernel",
        category="resource_exhaustion",
        targets=("node",),
        description="net.ipv4.ip_local_port_range was narrowed below the node's outbound connection churn",
        params=(Param("overcommit", float, 2.0, lo=1.2, hi=6.0, description="ports needed / ports in the new range"),),
        signals=(Signal("node_diagnostics", "node", (("check", "limits"),), "exhausted: cannot assign requested address",
                        "all ephemeral ports in use"),
                 Signal("search_logs", "web_server", (), "cannot assign requested address", "EADDRNOTAVAIL",
                        alt=(traced("cannot assign requested address"),)),
                 Signal("get_changes", "*", (), r"ip_local_port_range", "the sysctl change")),
        remedies=(Remedy("set_sysctl", "widen net.ipv4.ip_local_port_range to at least 1.5x the ports in use, starting "
                                       "above every listening port (> 8080)"),
                  Remedy("set_sysctl", "or enable net.ipv4.tcp_tw_reuse when that brings use under the range")),
        wrong_fix_effects="restarts leave the same range; a range starting below the listening ports lets outbound "
                          "sockets take a service's port, so its next restart fails to bind",
        example="node(web_server[*])",
    )
    detail_tokens = ("ephemeral", "port", "ip_local_port_range", "eaddrnotavail", "cannot assign requested address")
    KEY = "net.ipv4.ip_local_port_range"

    def inject(self, w: World) -> None:
        n = self.node
        self.original = f"{n.port_lo} {n.port_lo + n.ephemeral_ports - 1}"
        size = max(100, int(n.ports_used / self.params["overcommit"]) // 100 * 100)
        hi = n.port_lo + n.ephemeral_ports - 1  # the low end moves up; the image's high end stays
        n.port_lo, n.ephemeral_ports = hi + 1 - size, size
        self.normal_tracked = n.conntrack_used  # the node's connections under its normal load
        self.sysctl_change(w, self.KEY, self.original, f"{n.port_lo} {hi}")

    @staticmethod
    def ports_needed(n: Node, tracked: int | None = None) -> float:
        """Ports in use under the node's current settings (the tick derives both tables from one count),
        for ``tracked`` connections (default: the node's current count)."""
        conns = ((n.conntrack_used if tracked is None else tracked) - 1200) / 30.0
        return conns * (1.5 if n.tw_reuse else 6.0) + 300

    def neutralised(self, w: World) -> bool:
        # sized against the normal load too: a pod restart on the node frees its ports for a tick,
        # which fixes nothing; an evacuated node opens no connections and serves nothing
        n = self.node
        need = self.ports_needed(n, max(n.conntrack_used, self.normal_tracked))
        return evacuated(w, n) or (need * 1.5 <= n.ephemeral_ports and n.port_lo > max(LISTEN_PORT.values()))

    def why_active(self, w: World) -> str:
        n = self.node
        return f"{n.name} uses {n.ports_used} ephemeral ports of a range of {n.ephemeral_ports} starting at {n.port_lo}"

    def detail(self, w: World) -> str:
        return f"ip_local_port_range on {self.node.name} narrowed; ephemeral ports exhausted"

    def oracle_fix(self, w: World) -> list[dict[str, Any]]:
        return [{"tool": "set_sysctl", "args": {"node": self.node.name, "key": self.KEY, "value": self.original}}]

    def envelope_violations(self, w: World) -> list[list[dict[str, Any]]]:
        n = self.node
        hi = n.port_lo + n.ephemeral_ports - 1
        small = f"{hi + 1 - int(n.ports_used * 1.1)} {hi}"
        return [[{"tool": "set_sysctl", "args": {"node": n.name, "key": self.KEY, "value": small}}],
                [{"tool": "set_sysctl", "args": {"node": n.name, "key": self.KEY, "value": "1024 65535"}}]]


# ------------------------------------------------------------------ cgroup CPU quota
@register
class CpuThrottling(ConfigFault):
    """A "right-sizing" change cut the web tier's cgroup CPU quota; CFS throttling caps every replica."""

    meta = FaultMeta(
        name="cpu_throttling",
        layer="kernel",
        category="misconfiguration",
        targets=("service:web_server",),
        description="the cgroup CPU quota (cpu_limit) was cut below the load, so the CFS scheduler throttles "
                    "every replica",
        params=(Param("quota_factor", float, 0.2, lo=0.08, hi=0.5, description="new quota / old quota"),),
        signals=(Signal("node_diagnostics", "node", (("check", "limits"),), r"throttled=([5-9]\d|100)%",
                        "cgroup throttling on the replica's node"),
                 Signal("get_config", "service", (), "cpu_limit", "the quota",  # a web pod's cgroup shows it
                        alt=(Signal("node_diagnostics", "any", (("check", "limits"),), r"web-\w+\s+cpu\.max=\d"),)),
                 Signal("get_changes", "any", (), "cpu_limit", "the change that cut it"),
                 Signal("search_logs", "service", (), "worker pool saturated", "requests shed for lack of CPU",
                        alt=(traced("503 shed"),))),
        remedies=(Remedy("set_config", "cpu_limit high enough that replicas run under 60% of it at today's load, "
                                       "and at most 8 cores"),),
        wrong_fix_effects="restarts keep the quota; scaling out helps only while the quota stays tiny per replica",
        example="web_server",
        alert="HighErrorRate",
    )

    def prepare(self, w: World) -> None:
        self.params = {**self.params, "key": "cpu_limit"}
        super().prepare(w)

    def bad_value(self, w: World) -> Any:
        return max(0.1, round(float(self.original) * self.params["quota_factor"], 2))

    def _demand(self, w: World) -> float:
        """Cores one replica needs at the base load (the same figure the healthy sizing used)."""
        web = w.services["web_server"]
        n = max(1, sum(1 for r in web.replicas if r.state != "Terminated"))
        return w.state.base_rps / n * w.state.web_cpu_ms / 1000.0

    def neutralised(self, w: World) -> bool:
        v = float(w.services["web_server"].config["cpu_limit"])
        return self._demand(w) / 0.6 <= v <= 8.0

    def root_cause(self, w: World) -> RootCause:
        rc = super().root_cause(w)
        rc.detail = f"cpu_limit cut to {self.bad_value(w)} cores; replicas are CPU-throttled"
        rc.detail_tokens = ("cpu_limit", "throttl", "quota", "cpu", *value_tokens(self.bad_value(w)))
        return rc

    def _node(self, w: World) -> str:
        """The node of a serving web replica: its cgroup shows the throttling."""
        reps = w.services["web_server"].replicas
        return next((r for r in reps if r.state == "Running"), reps[0]).node.name

    def oracle_reads(self, w: World) -> list[dict[str, Any]]:
        node = self._node(w)
        return [{"tool": "node_diagnostics", "args": {"node": node, "check": "limits"}},
                {"tool": "search_logs", "args": {"service": "web_server", "pattern": "worker pool saturated"}},
                *super().oracle_reads(w)]

    def signals(self, w: World) -> list[tuple[str, str, dict[str, Any], str]]:
        node = self._node(w)
        return [("node_diagnostics", node, {"check": "limits"}, r"throttled=([5-9]\d|100)%"),
                ("search_logs", "web_server", {}, "worker pool saturated"), *super().signals(w)]

    def envelope_violations(self, w: World) -> list[list[dict[str, Any]]]:
        small = round(self._demand(w) * 1.05, 2)  # just above today's average: no headroom
        return [[{"tool": "set_config", "args": {"service": "web_server", "key": "cpu_limit", "value": small}}]]
