"""Noise primitives: the ambient events of a normal day, scheduled by the framework, not by tasks.

Noise makes telemetry look like production. Every noise type the benchmark promises exists here:

==========================  ======================================================================
noise                       what an engineer sees
==========================  ======================================================================
transient_restart           a pod restarts after a failed liveness probe and comes back by itself
latency_blip                a brief database latency bump (a checkpoint), far below any SLO
benign_warnings             harmless warnings: kernel perf/timer notices, an HPA metrics hiccup
                            (benign warning *log lines* are also always present: telemetry/logs.py CHATTER)
batch_cpu_spike             a nightly batch job spikes a node's CPU for a few minutes (``top`` shows it)
benign_config_change        a harmless config edit in the last hours (a red herring for config diffing)
benign_deploy               a healthy release shipped earlier today (a red herring for "what changed?")
unrelated_alert             a NodeCPUHigh alert on a node serving nothing critical; it resolves itself
boot_dmesg                  the boot messages at the top of every node's kernel log
false_alarm_blip            distractor only: a burst of edge latency that pages and clears itself
==========================  ======================================================================

``false_alarm_blip`` is the one item that breaches latency on purpose, for about two minutes before
the page of a control task; it is never part of a profile, and the system is healthy again long
before any verification window.

Two guarantees (tests/faults/test_noise.py): noise never breaches an SLO on its own, and it never
changes the ground truth. Each noise type draws from its own random stream (so noise never shifts a
fault's random draws, and more items of one type never change another type's draws); every profile
ships the same one benign release (a fault that ships a release names it after the current one, so
the release history before the onset must not depend on the profile; tasks add more with
``distractors``); noise is scheduled before any fault exists, so its benign changes and releases
sit in the history before a fault's own change or release (which overrides them, as in a real
incident) and rollback semantics stay intact. Noise may touch a faulty service: a benign change on a
service is no evidence of its innocence.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

from srezero.sim.clock import TICK_S
from srezero.sim.components import Change, Daemon, Deploy, Event
from srezero.sim.rng import Stream, stream
from srezero.sim.topology import AUTHORS

if TYPE_CHECKING:

    from srezero.sim.components import Node
    from srezero.sim.world import World
    from srezero.task.spec import NoiseSpec

NOISE: dict[str, Callable[[World, float], None]] = {}

PROFILES: dict[str, dict[str, int]] = {
    "quiet": {"benign_config_change": 1, "benign_deploy": 1, "boot_dmesg": 1},
    "default": {"benign_config_change": 2, "benign_deploy": 1, "boot_dmesg": 1, "transient_restart": 1,
                "latency_blip": 1, "batch_cpu_spike": 1, "benign_warnings": 1},
    "noisy": {"benign_config_change": 4, "benign_deploy": 1, "boot_dmesg": 1, "transient_restart": 2,
              "latency_blip": 2, "batch_cpu_spike": 1, "unrelated_alert": 1, "benign_warnings": 2},
}


def noise(name: str) -> Callable[[Callable[[World, float], None]], Callable[[World, float], None]]:
    def deco(fn: Callable[[World, float], None]) -> Callable[[World, float], None]:
        NOISE[name] = fn
        return fn

    return deco


def schedule(w: World, spec: NoiseSpec, distractors: dict[str, int] | None = None) -> None:
    """Schedule the profile's noise plus extra items and distractors, in a fixed (sorted) order."""
    counts = dict(PROFILES[spec.profile])
    for extra in (spec.extra, distractors or {}):
        for name, n in extra.items():
            counts[name] = counts.get(name, 0) + n
    for name in sorted(counts):
        w.rng_noise = stream(w.spec.id, w.seed, f"noise:{name}")  # one stream per type: counts never shift another's
        for k in range(counts[name]):
            NOISE[name](w, float(k))


def _rng(w: World) -> Stream:
    return w.rng_noise


def _author(w: World) -> str:
    return AUTHORS[int(_rng(w).integers(0, len(AUTHORS)))]


def _live(w: World, delay: float, gen: Callable[[], Generator[Any, Any, None]]) -> None:
    def run() -> Generator[Any, Any, None]:
        yield w.env.timeout(delay)
        yield from gen()

    w.env.process(run())


def _host_job(w: World, node: Node, name: str, cores: float, seconds: float, delay: float) -> None:
    """Run a cron job on ``node`` for ``seconds``: it shows in ``top`` and adds CPU, then exits.
    Host jobs together never take more than 90% of a node's cores (the pods keep enough to serve)."""

    def gen() -> Generator[Any, Any, None]:
        job = Daemon(name, "cron", max(0.0, min(cores, 0.9 * node.cores - node.extra_cpu)), 1400.0)
        node.daemons.append(job)
        node.retotal()
        yield w.env.timeout(seconds)
        if job in node.daemons:  # unless someone killed it
            node.daemons.remove(job)
            node.retotal()

    _live(w, delay, gen)


_BENIGN_EDITS = (  # (service, key, edit, may happen live during the incident)
    ("web_server", "log_level", lambda v: "warn" if v == "info" else "info", True),
    ("cache", "ttl_s", lambda v: int(v) + 300, False),
    ("load_balancer", "max_connections", lambda v: int(v) + 500, True),  # more headroom: never harmful
    ("database", "shared_buffers_mb", lambda v: int(v) * 2, True),
    ("cache", "max_clients", lambda v: int(v) + 5000, True),  # unused by any fault: safe even live
    ("load_balancer", "idle_timeout_s", lambda v: int(v) + 15, False),
)


#: Why people change things. Benign edits give reasons like a fault's change does, so the wording of
#: a change says nothing about whether it caused the incident.
_REASONS = ("tuning", "per incident review", "capacity plan", "align with staging", "cost review",
            "follow-up from the last game day", "as discussed in standup", "ticket OPS-{n}")
_MESSAGES = ("bump dependencies", "add request-id to access log", "tune JSON encoder", "fix typo in error page",
             "orders: paginate history endpoint", "checkout: cache tax tables", "search: debounce suggestions",
             "invoices: stream PDF rendering", "cart: lazy-load recommendations", "auth: shorter session cookie names")


def _after_history(w: World, when: float, service: str, kind: str, prefix: str = "") -> float:
    """``when``, moved after the newest earlier entry of the same service and kind (and detail prefix),
    so a history read in time order tells one consistent story (60 -> 75 before 75 -> 90)."""
    last = max((c.at for c in w.changes if c.service == service and c.kind == kind and c.detail.startswith(prefix)),
               default=None)
    if last is None or when > last:
        return when
    return last + (w.now - 60.0 - last) / 2.0


def _reason(w: World) -> str:
    return _REASONS[int(_rng(w).integers(0, len(_REASONS)))].format(n=int(_rng(w).integers(1000, 9999)))


@noise("benign_config_change")
def benign_config_change(w: World, k: float) -> None:
    """A harmless config edit: in the history (hours or days ago), or, about half the time, made by
    someone during the incident, so the newest change is not always the culprit. A live edit never
    touches a key whose value has changed since the world was built (a fault's key stays the fault's)."""
    rng = _rng(w)
    svc, key, edit, live_ok = _BENIGN_EDITS[int(rng.integers(0, len(_BENIGN_EDITS)))]
    reason, author = _reason(w), _author(w)
    # live edits only touch keys no fault primitive reads or writes; the others stay in the history
    live = rng.random() < 0.5 and live_ok
    past = w.now - (float(rng.uniform(1.0, 4.0)) * 86400 if rng.random() < 0.3 else float(rng.uniform(120, 5400)))
    delay = float(rng.uniform(20.0, 480.0))
    cfg = w.services[svc].config
    built = cfg[key]

    def apply(when: float | None) -> None:
        old = cfg[key]
        if when is None and old != built:
            return  # someone (a fault) changed this key since: leave it alone
        new = edit(old)
        cfg[key] = new
        w.noise_entities.add(svc)
        detail = f"{key}: {old} -> {new} ({reason})"
        if when is None:
            w.change(svc, "config", detail, author, noise=True)
        else:
            w.changes.append(Change(_after_history(w, when, svc, "config", f"{key}:"), svc, "config", detail, author,
                                    noise=True))

    if not live:
        apply(past)
        return

    def gen() -> Generator[Any, Any, None]:
        apply(None)
        yield w.env.timeout(0)

    _live(w, delay, gen)


@noise("benign_deploy")
def benign_deploy(w: World, k: float) -> None:
    """A healthy release shipped earlier today; it sits in the history before any fault's release."""
    choices = ("worker", "web_server", "message_queue")
    svc_name = choices[int(_rng(w).integers(0, len(choices)))]
    svc = w.services[svc_name]
    cur = svc.deploys[-1]
    major, minor, patch = (int(x) for x in cur.version.lstrip("v").split("."))
    when = max(w.now - float(_rng(w).uniform(600, 7200)), cur.at + 60.0)  # after the release it replaces
    when = _after_history(w, when, svc_name, "deploy")
    msg = _MESSAGES[int(_rng(w).integers(0, len(_MESSAGES)))]
    new = Deploy(f"v{major}.{minor}.{patch + 1}", when, _author(w), msg, needed_by_schema=cur.needed_by_schema)
    svc.deploys.append(new)
    w.noise_entities.add(svc_name)
    for rep in svc.replicas:
        rep.version = new.version
    w.changes.append(Change(when, svc_name, "deploy", f"deployed {new.version}: {msg}", new.author, noise=True))
    w.events.append(Event(when, "Normal", "ScalingReplicaSet", svc_name, f"Rolled out {svc_name} {new.version}"))


@noise("boot_dmesg")
def boot_dmesg(w: World, k: float) -> None:
    """The boot messages at the start of every node's kernel log, days ago."""
    for node in w.topo.nodes:
        t0 = -float(_rng(w).uniform(3, 40)) * 86400
        for line in ("Linux version 6.1.0-27-cloud-amd64 (debian-kernel@lists.debian.org)",
                     "nvme nvme0: 8/0/0 default/read/poll queues", "nvme nvme1: 8/0/0 default/read/poll queues",
                     "EXT4-fs (nvme1n1): mounted filesystem with ordered data mode",
                     "cgroup: cgroup2: unknown option \"memory_recursiveprot\""):
            w.dmesg_lines[node.name].append((t0, line))
            t0 += 1.7


_WARNINGS = (
    "perf: interrupt took too long (2503 > 2500), lowering kernel.perf_event_max_sample_rate to 79750",
    "hrtimer: interrupt took 13542 ns",
    "IPv6: ADDRCONF(NETDEV_CHANGE): veth3a1f9c2: link becomes ready",
    "systemd-journald[412]: Data hash table of /var/log/journal/system.journal has a fill level at 75.0, "
    "suggesting rotation.",
)


@noise("benign_warnings")
def benign_warnings(w: World, k: float) -> None:
    """Harmless warnings in a node's kernel log and the event stream (an HPA metrics hiccup)."""
    rng = _rng(w)
    node = w.topo.nodes[int(rng.integers(0, len(w.topo.nodes)))]
    line = _WARNINGS[int(rng.integers(0, len(_WARNINGS)))]
    when = w.now - float(rng.uniform(300, 7200))
    w.dmesg_lines[node.name].append((when, line))
    w.events.append(Event(w.now - float(rng.uniform(60, 3000)), "Warning", "FailedGetResourceMetric", "web_server",
                          "failed to get cpu utilization: unable to get metrics for resource cpu: no metrics "
                          "returned from resource metrics API"))


@noise("transient_restart")
def transient_restart(w: World, k: float) -> None:
    """One stateless replica restarts on its own and comes back (a liveness probe hiccup). It skips a
    service that already has a replica down, so two hiccups never stack into an outage."""
    svc = ("web_server", "worker")[int(_rng(w).integers(0, 2))]
    reps = w.services[svc].replicas
    rep = reps[int(_rng(w).integers(0, len(reps)))]
    delay = float(_rng(w).uniform(0, 600))
    w.noise_entities.add(rep.name)

    def gen() -> Generator[Any, Any, None]:
        if rep.state == "Running" and all(r.state in ("Running", "Terminated") for r in reps):
            w.emit("Warning", "Unhealthy", rep.name, "Liveness probe failed: HTTP probe failed with statuscode: 503")
            w.restart_replica(rep, reason="Error", by_agent=False)
        yield w.env.timeout(0)

    _live(w, delay, gen)


@noise("latency_blip")
def latency_blip(w: World, k: float) -> None:
    """A brief database latency bump (a checkpoint), far below any SLO."""
    delay = float(_rng(w).uniform(0, 900))
    extra = float(_rng(w).uniform(2, 6))

    def gen() -> Generator[Any, Any, None]:
        w.state.db_lock_ms += extra
        yield w.env.timeout(TICK_S * 2)
        w.state.db_lock_ms = max(0.0, w.state.db_lock_ms - extra)

    _live(w, delay, gen)


@noise("batch_cpu_spike")
def batch_cpu_spike(w: World, k: float) -> None:
    """A nightly batch job spikes CPU for a few minutes on a node that runs no database."""
    nodes = [n for n in w.topo.nodes if not any(r.kind == "database" for r in n.replicas)] or w.topo.nodes
    node = nodes[int(_rng(w).integers(0, len(nodes)))]
    delay = float(_rng(w).uniform(0, 600))
    cores = node.cores * float(_rng(w).uniform(0.3, 0.5))
    w.noise_entities.add(node.name)
    _host_job(w, node, "batch-reindex", cores, float(_rng(w).uniform(180, 420)), delay)


@noise("unrelated_alert")
def unrelated_alert(w: World, k: float) -> None:
    """A CPU spike large enough to fire NodeCPUHigh for a few minutes, on a node serving nothing critical."""
    nodes = [n for n in w.topo.nodes if not any(r.kind in ("database", "cache") for r in n.replicas)] or w.topo.nodes
    node = nodes[int(_rng(w).integers(0, len(nodes)))]
    delay = float(_rng(w).uniform(0, 300))
    w.noise_entities.add(node.name)
    _host_job(w, node, "backup-compress", node.cores * 0.9, 240.0, delay)


@noise("false_alarm_blip")
def false_alarm_blip(w: World, k: float) -> None:
    """A short burst of edge latency from a client retrying a slow export: pages, then clears itself."""
    delay = 30.0 + k * 400.0

    def gen() -> Generator[Any, Any, None]:
        w.state.db_lock_ms += 420.0
        yield w.env.timeout(TICK_S * 5)
        w.state.db_lock_ms = max(0.0, w.state.db_lock_ms - 420.0)

    _live(w, delay, gen)
