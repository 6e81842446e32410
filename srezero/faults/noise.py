"""Noise primitives: the ambient events of a normal day, scheduled by the framework.

Noise makes telemetry look like production: pods restart now and then, latency blips, batch jobs
spike a node's CPU, people change harmless settings and ship harmless releases, an unrelated alert
fires and clears. Noise never breaches an SLO by itself and never touches the ground truth: it does
not change a faulty component's cause, and past deploys are inserted *before* any fault's release so
rollback semantics stay intact.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

from srezero.sim.components import Change, Deploy, Event
from srezero.sim.model import TICK_S

if TYPE_CHECKING:
    from srezero.sim.world import World
    from srezero.task.spec import NoiseSpec

NOISE: dict[str, Callable[[World, float], None]] = {}

PROFILES: dict[str, dict[str, int]] = {
    "quiet": {"benign_config_change": 1, "benign_deploy": 1, "boot_dmesg": 1},
    "default": {"benign_config_change": 2, "benign_deploy": 1, "boot_dmesg": 1, "transient_restart": 1,
                "latency_blip": 1, "batch_cpu_spike": 1},
    "noisy": {"benign_config_change": 4, "benign_deploy": 2, "boot_dmesg": 1, "transient_restart": 2,
              "latency_blip": 2, "batch_cpu_spike": 1, "unrelated_alert": 1},
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
        for k in range(counts[name]):
            NOISE[name](w, float(k))


def _live(w: World, delay: float, gen: Callable[[], Generator[Any, Any, None]]) -> None:
    def run() -> Generator[Any, Any, None]:
        yield w.env.timeout(delay)
        yield from gen()

    w.env.process(run())


_BENIGN_EDITS = (
    ("web_server", "log_level", lambda v: "warn" if v == "info" else "info"),
    ("cache", "ttl_s", lambda v: int(v) + 300),
    ("web_server", "feature_flag.search_v2", lambda v: not v),
    ("worker", "env.CREDENTIALS_VERSION", None),  # same value re-applied by automation
    ("message_queue", "dlq_max_messages", lambda v: int(v) * 2),
    ("load_balancer", "idle_timeout_s", lambda v: int(v) + 15),
)


@noise("benign_config_change")
def benign_config_change(w: World, k: float) -> None:
    """A harmless config edit in the last two hours (a red herring for config diffing)."""
    svc, key, edit = _BENIGN_EDITS[int(w.rng_world.integers(0, len(_BENIGN_EDITS)))]
    cfg = w.services[svc].config
    old = cfg[key]
    new = old if edit is None else edit(old)
    when = w.now - float(w.rng_world.uniform(120, 5400))
    cfg[key] = new
    w.noise_entities.add(svc)
    w.changes.append(Change(when, svc, "config", f"{key}: {old} -> {new}", w.author()))


@noise("benign_deploy")
def benign_deploy(w: World, k: float) -> None:
    """A healthy release shipped earlier today; it sits in the history before any fault's release."""
    svc_name = ("worker", "web_server", "message_queue")[int(w.rng_world.integers(0, 3))]
    svc = w.services[svc_name]
    cur = svc.deploys[-1]
    major, minor, patch = (int(x) for x in cur.version.lstrip("v").split("."))
    when = w.now - float(w.rng_world.uniform(600, 7200))
    msg = ("bump dependencies", "add request-id to access log", "tune JSON encoder", "fix typo in error page")[
        int(w.rng_world.integers(0, 4))]
    new = Deploy(f"v{major}.{minor}.{patch + 1}", when, w.author(), msg, needed_by_schema=cur.needed_by_schema)
    svc.deploys.append(new)
    w.noise_entities.add(svc_name)
    for rep in svc.replicas:
        rep.version = new.version
    w.changes.append(Change(when, svc_name, "deploy", f"deployed {new.version}: {msg}", new.author))
    w.events.append(Event(when, "Normal", "ScalingReplicaSet", svc_name, f"Rolled out {svc_name} {new.version}"))


@noise("boot_dmesg")
def boot_dmesg(w: World, k: float) -> None:
    for node in w.topo.nodes:
        t0 = -float(w.rng_world.uniform(3, 40)) * 86400
        for line in ("Linux version 6.1.0-27-cloud-amd64 (debian-kernel@lists.debian.org)",
                     "nvme nvme0: 8/0/0 default/read/poll queues", "nvme nvme1: 8/0/0 default/read/poll queues",
                     "EXT4-fs (nvme1n1): mounted filesystem with ordered data mode",
                     "cgroup: cgroup2: unknown option \"memory_recursiveprot\""):
            w.dmesg_lines[node.name].append((t0, line))
            t0 += 1.7


@noise("transient_restart")
def transient_restart(w: World, k: float) -> None:
    """One stateless replica restarts on its own and comes back (a liveness probe hiccup)."""
    svc = ("web_server", "worker")[int(w.rng_world.integers(0, 2))]
    reps = w.services[svc].replicas
    rep = reps[int(w.rng_world.integers(0, len(reps)))]
    delay = float(w.rng_world.uniform(0, 600))
    w.noise_entities.add(rep.name)

    def gen() -> Generator[Any, Any, None]:
        if rep.state == "Running":
            w.emit("Warning", "Unhealthy", rep.name, "Liveness probe failed: HTTP probe failed with statuscode: 503")
            w.restart_replica(rep, reason="Error", by_agent=False)
        yield w.env.timeout(0)

    _live(w, delay, gen)


@noise("latency_blip")
def latency_blip(w: World, k: float) -> None:
    """A brief database latency bump (a checkpoint), far below any SLO."""
    delay = float(w.rng_world.uniform(0, 900))
    extra = float(w.rng_world.uniform(2, 6))

    def gen() -> Generator[Any, Any, None]:
        w.state.db_lock_ms += extra
        yield w.env.timeout(TICK_S * 2)
        w.state.db_lock_ms = max(0.0, w.state.db_lock_ms - extra)

    _live(w, delay, gen)


@noise("batch_cpu_spike")
def batch_cpu_spike(w: World, k: float) -> None:
    """A batch job spikes CPU on a node that runs no database."""
    nodes = [n for n in w.topo.nodes if not any(r.kind == "database" for r in n.replicas)] or w.topo.nodes
    node = nodes[int(w.rng_world.integers(0, len(nodes)))]
    delay = float(w.rng_world.uniform(0, 600))
    cores = node.cores * float(w.rng_world.uniform(0.3, 0.5))
    w.noise_entities.add(node.name)

    def gen() -> Generator[Any, Any, None]:
        node.extra_cpu += cores
        yield w.env.timeout(float(w.rng_world.uniform(180, 420)))
        node.extra_cpu = max(0.0, node.extra_cpu - cores)

    _live(w, delay, gen)


@noise("unrelated_alert")
def unrelated_alert(w: World, k: float) -> None:
    """A CPU spike large enough to fire NodeCPUHigh for a few minutes, on a node serving nothing critical."""
    nodes = [n for n in w.topo.nodes if not any(r.kind in ("database", "cache") for r in n.replicas)] or w.topo.nodes
    node = nodes[int(w.rng_world.integers(0, len(nodes)))]
    delay = float(w.rng_world.uniform(0, 300))
    w.noise_entities.add(node.name)

    def gen() -> Generator[Any, Any, None]:
        node.extra_cpu += node.cores * 0.9
        yield w.env.timeout(240.0)
        node.extra_cpu = max(0.0, node.extra_cpu - node.cores * 0.9)

    _live(w, delay, gen)


@noise("false_alarm_blip")
def false_alarm_blip(w: World, k: float) -> None:
    """A short burst of edge latency from a client retrying a slow export: pages, then clears itself."""
    delay = 30.0 + k * 400.0

    def gen() -> Generator[Any, Any, None]:
        w.state.db_lock_ms += 420.0
        yield w.env.timeout(TICK_S * 5)
        w.state.db_lock_ms = max(0.0, w.state.db_lock_ms - 420.0)

    _live(w, delay, gen)
