"""Plain-data components of the simulated system: nodes (kernel, disks, NIC, CPU), replicas, services.

Everything here is mutable state that faults, noise and the agent's write tools change, and that the
tick model (:mod:`srezero.sim.model`) reads. Classes use ``__slots__``: the model touches these
attributes every tick, and a slot lookup is markedly cheaper than a dict lookup.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from srezero.sim.config import Config

SERVICE_KINDS = ("load_balancer", "web_server", "cache", "database", "message_queue", "worker")


class Disk:
    """A block device: capacity, latency, and sector health (what SMART reports)."""

    __slots__ = (
        "base_latency_ms",
        "capacity_gb",
        "device",
        "growth_gb_per_h",
        "io_errors",
        "latency_mult",
        "model",
        "node",
        "pending_sectors",
        "read_error_rate",
        "reallocated_sectors",
        "reclaim",
        "serial",
        "used_gb",
    )

    def __init__(self, node: Node, device: str, capacity_gb: float, used_gb: float, latency_ms: float,
                 model: str, serial: str) -> None:
        self.node = node
        self.device = device
        self.capacity_gb = capacity_gb
        self.used_gb = used_gb
        self.base_latency_ms = latency_ms
        self.latency_mult = 1.0  # > 1 for a fail-slow disk
        self.read_error_rate = 0.0  # fraction of reads that hit an unreadable sector
        self.pending_sectors = 0
        self.reallocated_sectors = 0
        self.io_errors = 0  # cumulative, as the block layer counts them
        self.growth_gb_per_h = 0.0
        self.reclaim: dict[str, float] = {}  # path -> GB that cleanup_disk may delete (logs, dumps, temp, stale backups)
        self.model = model
        self.serial = serial

    @property
    def name(self) -> str:
        return f"{self.node.name}/{self.device}"

    @property
    def used_frac(self) -> float:
        return min(1.0, self.used_gb / self.capacity_gb)

    @property
    def latency_ms(self) -> float:
        full_penalty = 8.0 if self.used_frac >= 0.999 else 1.0
        return self.base_latency_ms * self.latency_mult * full_penalty


class Node:
    """A machine: CPUs, memory and kernel tables, disks and a NIC. Replicas run on it."""

    __slots__ = (
        "clock_skew_s",
        "conntrack_max",
        "conntrack_used",
        "cordoned",
        "cores",
        "cpu_used",
        "daemons",
        "disks",
        "ecc_errors_per_h",
        "ephemeral_ports",
        "extra_cpu",
        "extra_fds",
        "extra_mem_mb",
        "fd_max",
        "fds_used",
        "index",
        "limit_log",
        "mem_total_mb",
        "mem_used_mb",
        "name",
        "nic_flapping",
        "nic_loss",
        "ntp_synced",
        "port_lo",
        "ports_used",
        "replicas",
        "root_full",
        "row",
        "thermal_factor",
        "tw_reuse",
        "up",
        "zone",
    )

    def __init__(self, name: str, index: int, zone: str, cores: int, mem_total_mb: float) -> None:
        self.name = name
        self.index = index
        self.zone = zone
        self.cores = cores
        self.mem_total_mb = mem_total_mb
        self.up = True
        self.cordoned = False
        self.thermal_factor = 1.0  # < 1 when the CPU throttles for heat
        self.fd_max = 1_048_576
        self.conntrack_max = 262_144
        self.limit_log: list[tuple[float, str, int]] = []  # (when, attribute, value before): kernel_limit
        self.ephemeral_ports = 28_232  # 32768-60999
        self.port_lo = 32_768  # net.ipv4.ip_local_port_range low end
        self.tw_reuse = False  # net.ipv4.tcp_tw_reuse
        self.clock_skew_s = 0.0
        self.ntp_synced = True  # chronyd running and disciplining the clock
        self.nic_loss = 0.0  # fraction of packets lost
        self.nic_flapping = False
        self.ecc_errors_per_h = 0.0
        self.disks: list[Disk] = []
        self.row = 0
        self.replicas: list[Replica] = []
        self.cpu_used = 0.0
        self.extra_cpu = 0.0  # cores used by processes outside the system (batch jobs)
        self.extra_mem_mb = 0.0  # memory of those processes (and kernel tables sized by sysctls)
        self.extra_fds = 0  # file descriptors they hold
        self.daemons: list[Daemon] = []  # host processes outside the pods; totals kept in extra_*
        self.root_full = False  # root filesystem out of space (set by the tick)
        self.mem_used_mb = 0.0
        self.fds_used = 0
        self.conntrack_used = 0
        self.ports_used = 0

    def disk(self, device: str) -> Disk:
        for d in self.disks:
            if d.device == device:
                return d
        raise KeyError(device)

    @property
    def data_disk(self) -> Disk:
        return self.disks[-1]

    def daemon(self, name: str) -> Daemon | None:
        return next((d for d in self.daemons if d.name == name), None)

    def free_job_name(self, preferred: str) -> str:
        """``preferred``, or else the next cron job name (in :data:`HOST_JOBS` order, wrapping) that no
        process on this node holds, so a name in ``top`` means one process; ``preferred`` if all are."""
        taken = {d.name for d in self.daemons}
        start = HOST_JOBS.index(preferred)
        return next((j for j in HOST_JOBS[start:] + HOST_JOBS[:start] if j not in taken), preferred)

    def retotal(self) -> None:
        """Recompute the extra_* totals the tick reads after a daemon changed (cheap: a few daemons)."""
        self.extra_cpu = sum(d.cpu for d in self.daemons)
        self.extra_mem_mb = sum(d.mem_mb for d in self.daemons) + self.kernel_mem_mb()
        self.extra_fds = sum(d.fds for d in self.daemons)

    def kernel_mem_mb(self) -> float:
        """Kernel memory pinned by an oversized conntrack table (about 320 bytes an entry)."""
        return max(0, self.conntrack_max - 262_144) * 0.000305


class Daemon:
    """A host process outside the pods (a cron job, a log shipper), shown by ``top``.

    ``cron`` processes stay dead when killed; ``systemd`` ones are restarted at once with fresh state.
    """

    __slots__ = ("base_fds", "base_mem_mb", "cpu", "fds", "kind", "mem_mb", "name")

    def __init__(self, name: str, kind: str, cpu: float, mem_mb: float, fds: int = 40) -> None:
        self.name = name
        self.kind = kind  # "cron" | "systemd"
        self.cpu = cpu
        self.mem_mb = mem_mb
        self.fds = fds
        self.base_mem_mb = mem_mb
        self.base_fds = fds


#: Names of the cron jobs a node runs now and then. Noise (a CPU spike) and faults (a runaway job)
#: draw from the same pool, so a job's name says nothing about whether it is the cause.
HOST_JOBS = ("batch-reindex", "backup-compress", "report-export", "analytics-rollup", "log-archiver")
#: Host processes every node runs outside the pods: (name, kind, cores, MB, open files).
HOST_DAEMONS = (("kubelet", "systemd", 0.04, 110.0, 90), ("containerd", "systemd", 0.02, 70.0, 120),
                ("chronyd", "systemd", 0.0, 4.0, 8), ("fluent-bit", "systemd", 0.03, 45.0, 160),
                ("node-exporter", "systemd", 0.01, 22.0, 14))


class Replica:
    """One running instance of a service (a pod)."""

    __slots__ = (
        "base_mem_mb",
        "conns",
        "cpu",
        "crash_reason",
        "created_at",
        "cred",
        "err",
        "err_causes",
        "fds",
        "index",
        "last_restart_t",
        "lat_ms",
        "leak_mb_per_h",
        "leaked_conns",
        "load_prev",
        "mem_mb",
        "moves",
        "name",
        "node",
        "over_limit",
        "ready_at",
        "restarts",
        "role",
        "row",
        "rps",
        "service",
        "state",
        "version",
    )

    def __init__(self, name: str, service: Service, node: Node, index: int, role: str = "") -> None:
        self.name = name
        self.service = service
        self.node = node
        self.index = index
        self.role = role  # "primary" or "replica" for the database
        self.state = "Running"  # Running | Starting | CrashLoopBackOff | Terminated | Pending
        self.ready_at = 0.0
        self.created_at = 0.0  # when this pod was created: a crash restarts its container, not the pod
        self.restarts = 0
        self.last_restart_t = -1e9
        self.crash_reason = ""
        self.moves: list[tuple[float, int]] = []  # (time, index of the node it left): where it ran before
        self.cred = ""  # the database credential version the process started with (env.CREDENTIALS_VERSION)
        self.base_mem_mb = 0.0
        self.mem_mb = 0.0
        self.leak_mb_per_h = 0.0
        self.over_limit = False  # set by a fault or config change that puts memory above its limit
        self.leaked_conns = 0.0  # connections checked out and never returned (a code defect)
        self.load_prev = -1.0  # last tick's raw utilisation (request queues carry over between ticks)
        self.version = ""
        # last tick's outputs, read by telemetry and by the next tick (hysteresis)
        self.rps = 0.0
        self.err = 0.0
        self.lat_ms = 0.0
        self.cpu = 0.0
        self.conns = 0.0
        self.fds = 0
        self.err_causes: dict[str, float] = {}
        self.row = 0

    @property
    def ready(self) -> bool:
        return self.state == "Running"

    def age_s(self, now: float) -> float:
        """Seconds since the pod was created (kubectl's AGE): a replaced, added or rescheduled pod starts
        again, a crashed container does not. One created before the history was recorded is a few days
        old (four, plus an hour per index, so pods of one service differ)."""
        return now - self.created_at if self.created_at != 0.0 else self._prehistory_s()

    def uptime_s(self, now: float) -> float:
        """Seconds since the process last became ready (a running replica's uptime)."""
        return now - self.ready_at if self.ready_at != 0.0 else self._prehistory_s()

    def _prehistory_s(self) -> float:
        return 4 * 86400 + self.index * 3600

    @property
    def kind(self) -> str:
        return self.service.kind


@dataclass
class Deploy:
    """A version of a service's code. ``defect`` names the code defect it carries, if any."""

    version: str
    at: float
    author: str
    message: str
    defect: str = ""  # "" | "endpoint_errors" | "memory_leak" | "flag_bug" | ...
    defect_rate: float = 0.0
    needed_by_schema: bool = False  # rolling it back breaks compatibility


@dataclass
class Change:
    """One entry in the change history: a config edit, deploy, scale or other operation."""

    at: float
    service: str
    kind: str  # config | deploy | scale | restart | failover | drain | rollback
    detail: str
    author: str
    #: made by ambient noise or a distractor (harmless by construction). Ground truth: only the
    #: debrief reads it, after the episode; no tool may show it.
    noise: bool = False


@dataclass
class Event:
    """A Kubernetes-style event."""

    at: float
    kind: str  # Normal | Warning
    reason: str
    entity: str
    message: str


@dataclass
class Service:
    """A service: its replicas, live config, config defaults and deploy history."""

    kind: str
    replicas: list[Replica] = field(default_factory=list)
    config: Config = field(default_factory=Config)  # remembers what each write replaced (Config.at)
    deploys: list[Deploy] = field(default_factory=list)
    startup_s: float = 20.0
    row: int = 0
    rollout: int = 0  # counts live rollouts (srezero.sim.changes.roll): a newer one supersedes one in flight
    #: (tick time, cgroup CPU quota) each time the quota the tick used changed: what each past tick ran under
    quotas: list[tuple[float, float]] = field(default_factory=list)
    # aggregate outputs of the last tick
    rps: float = 0.0
    err: float = 0.0
    lat_ms: float = 0.0

    def note_quota(self, t: float, quota: float) -> None:
        """Record the CPU quota the tick at ``t`` runs under, when it differs from the last one recorded."""
        if not self.quotas or self.quotas[-1][1] != quota:
            self.quotas.append((t, quota))

    @property
    def name(self) -> str:
        return self.kind

    @property
    def deploy(self) -> Deploy:
        return self.deploys[-1]

    def ready_replicas(self) -> list[Replica]:
        return [r for r in self.replicas if r.state == "Running"]

    def release_of(self, rep: Replica) -> Deploy:
        """The release a replica runs: the latest deploy of its version. A pod a rollout (or a rollback)
        has not reached yet still runs the code it started with."""
        for d in reversed(self.deploys):
            if d.version == rep.version:
                return d
        return self.deploys[-1]
