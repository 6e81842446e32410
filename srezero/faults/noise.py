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
benign_config_change        a harmless config edit: during the incident on a tuned setting of a service
                            no fault is in nor depends on (kept inside its safe envelope) or a key no model reads, or
                            in the history (hours or days ago) on any key of any service or a sysctl of
                            any node, ending at today's value, or a bad-looking value put back later
                            (a red herring for config diffing)
benign_deploy               a healthy release shipped earlier today, or live minutes before the page,
                            rolled out pod by pod like any release
benign_rotation             a credential rotation that reached every consumer (database password or
                            cache secret, synced by the deploy bot)
benign_migration            schema migrations that ran days ago (an index built, one dropped and rebuilt)
benign_slot                 a replication slot made for a backup run and dropped after it
unrelated_alert             a NodeCPUHigh alert on any node, from a host job; it resolves itself
boot_dmesg                  the boot messages at the top of every node's kernel log
false_alarm_blip            distractor only: a burst of edge latency that pages and clears itself
false_alarm_link            distractor only: a web node's link flaps for a few minutes, pages, then settles
==========================  ======================================================================

The ``false_alarm_*`` items are the only ones that breach on purpose, for a few minutes before the
page of a control task; they are never part of a profile, and the system heals by itself. What they
leave behind (a queue backlog) can outlast the verification's settling period when the incident is
resolved at once (inc-011, 4 of 240 seeds), so the oracle watches it drain before resolving.
:data:`FALSE_ALARMS` names, for each, the reads that show the page was noise (a control task's
evidence, and what the oracle reads).

Two guarantees (tests/faults/test_noise.py): noise never breaches an SLO on its own, and it never
changes the ground truth. Each noise type draws from its own random stream (so noise never shifts a
fault's random draws, and more items of one type never change another type's draws); every profile
ships the same one benign release (a fault that ships a release names it after the current one, so
the release history before the onset must not depend on the profile; tasks add more with
``distractors``). How a change *reads* (its reason, release note, version step, events) is drawn by
:mod:`srezero.sim.changes` for noise and faults alike, and noise produces every kind of change a
fault does, so only what a change did, and when, can tell them apart. Noise is scheduled before any fault exists, so its benign changes and releases
sit in the history before a fault's own change or release (which overrides them, as in a real
incident) and rollback semantics stay intact. Noise may touch a faulty service: a benign change on a
service is no evidence of its innocence, with two exceptions that keep noise from curing or hiding a
fault: a live release and a live edit of a tuned setting spare the services a fault is in (a tuned
edit also those on a faulty node and the services they serve; :func:`_spared`). docs/scoring.md
weighs what that tells an agent.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

from srezero.faults import history
from srezero.faults.envelopes import ENVELOPES, within
from srezero.sim import changes
from srezero.sim.clock import TICK_S
from srezero.sim.components import HOST_JOBS, Daemon, Deploy, Event
from srezero.sim.config import READ_ONLY
from srezero.sim.nodes import log_link_flap
from srezero.sim.rng import Stream, stream
from srezero.sim.topology import AUTHORS

if TYPE_CHECKING:

    from srezero.sim.components import Node
    from srezero.sim.world import World
    from srezero.task.spec import NoiseSpec

NOISE: dict[str, Callable[[World, float], None]] = {}

#: The history a system has whatever the day brings: every kind of change a fault can make also
#: happens harmlessly. Its items change only the history, never the dynamics, so "quiet" has them too.
_HISTORY = {"benign_config_change": 2, "benign_deploy": 1, "boot_dmesg": 1, "benign_rotation": 1,
            "benign_migration": 1, "benign_slot": 1}
#: For each noise item that pages on purpose, the metrics (entity, metric) that show it was noise: the
#: evidence of a control task that uses it, and the oracle's reads there.
FALSE_ALARMS: dict[str, tuple[tuple[str, str], ...]] = {
    "false_alarm_blip": (("load_balancer", "error_rate"), ("load_balancer", "latency_p99_ms")),
    "false_alarm_link": (("load_balancer", "error_rate"), ("web_server", "error_rate")),
}
PROFILES: dict[str, dict[str, int]] = {
    "quiet": dict(_HISTORY),
    "default": {**_HISTORY, "benign_config_change": 3, "transient_restart": 1, "latency_blip": 1,
                "batch_cpu_spike": 1, "benign_warnings": 1},
    "noisy": {**_HISTORY, "benign_config_change": 5, "transient_restart": 2, "latency_blip": 2,
              "batch_cpu_spike": 1, "unrelated_alert": 1, "benign_warnings": 2},
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


#: How long the rate of live restarts, CPU spikes and latency bumps takes to rise from nothing to
#: its level (:func:`_rising`)
RAMP_S = 180.0


def _rising(rng: Stream, hi: float) -> float:
    """A live item's delay after the start of the simulation, up to ``hi``: its rate rises from zero
    over the first :data:`RAMP_S` and is flat after. History holds no restarts, CPU spikes or latency
    bumps, so live ones that set in at full rate would mark the first live tick (and with it the onset);
    a rate that rises over six ticks does not, and most still land before the page. One draw, as a
    uniform delay takes."""
    area = hi - RAMP_S / 2.0  # of the density: a ramp of height 1 over RAMP_S, then flat at 1
    u = rng.random() * area
    return math.sqrt(2.0 * RAMP_S * u) if u < RAMP_S / 2.0 else u + RAMP_S / 2.0


def _live(w: World, delay: float, gen: Callable[[], Generator[Any, Any, None]]) -> None:
    def run() -> Generator[Any, Any, None]:
        yield w.env.timeout(delay)
        yield from gen()

    w.env.process(run())


def _services_of(f: Any) -> set[str]:
    """The services a fault is in: its target's, or the one a config or release fault changes."""
    t = f.target
    names = {t.name} if t.kind == "service" else {t.obj.service.kind} if t.kind == "replica" else set()
    service = getattr(f, "service", None)
    return names | ({service} if isinstance(service, str) else set())


def _job_name(w: World) -> str:
    return HOST_JOBS[int(_rng(w).integers(0, len(HOST_JOBS)))]


def _host_job(w: World, node: Node, name: str, cores: float, seconds: float, delay: float) -> None:
    """Run a cron job on ``node`` for ``seconds``: it shows in ``top`` and adds CPU, then exits.
    Host jobs together never take more than 90% of a node's cores (the pods keep enough to serve)."""
    mem_mb = float(_rng(w).uniform(400.0, 3000.0))  # a job's size varies; no figure marks routine work

    def gen() -> Generator[Any, Any, None]:
        # a runaway job of the same name may hold the node
        job = Daemon(node.free_job_name(name), "cron", max(0.0, min(cores, 0.9 * node.cores - node.extra_cpu)), mem_mb)
        node.daemons.append(job)
        node.retotal()
        yield w.env.timeout(seconds)
        if job in node.daemons:  # unless someone killed it
            node.daemons.remove(job)
            node.retotal()

    _live(w, delay, gen)


#: Keys no model reads, edited harmlessly during an incident whatever the world's faults (``u`` is a
#: uniform draw in [0, 1)).
_INERT_EDITS: tuple[tuple[str, str, Callable[[Any, float], Any]], ...] = (
    ("web_server", "log_level", lambda v, u: "warn" if v == "info" else "info"),
    ("database", "shared_buffers_mb", lambda v, u: int(v) * (3 + int(u * 6)) // 2),
    ("cache", "max_clients", lambda v, u: int(v) + 250 * (4 + int(u * 76))),
)
#: Settings whose envelope does not follow the load (a CPU limit of 1 core is "inside" it whatever the
#: traffic): a live edit only raises them. ``db_retries`` is never edited live (retries amplify load).
_RAISE_ONLY = frozenset({"cpu_limit", "memory_limit_mb", "max_open_files", "workers", "concurrency", "idle_timeout_s",
                         "ttl_s", "statement_timeout_ms", "db_timeout_ms", "max_standby_streaming_delay_s"})
#: The services whose settings shape how a service's fault shows (their capacity, timeouts or load
#: against it): a raised worker concurrency hides a queue whose jobs are redelivered, a raised web
#: timeout or cache TTL a slow database. A live tuned edit leaves them alone too, so noise never hides
#: or worsens a fault's symptoms.
_CLIENTS = {"load_balancer": ("web_server",), "message_queue": ("worker",), "cache": ("web_server",),
            "database": ("web_server", "worker", "cache"), "web_server": ("load_balancer",)}
#: Share of live edits on a tuned setting (any numeric key with a safe envelope, or a feature flag)
#: rather than on a key no model reads.
LIVE_TUNED_SHARE = 0.8
#: Uniform draws a live edit takes when it is scheduled: a fixed number, so that what happens in the
#: world before it lands (an agent's writes included) never shifts the noise stream, and a replay of the
#: episode without the agent's wrong writes sees the same noise.
_LIVE_DRAWS = 12
_NOT_LIVE = frozenset({"db_retries", *(k for _, k in READ_ONLY)})


def _spared(w: World) -> set[str]:
    """Services a live tuned edit must not touch: those a fault is in, the services on a faulty node or
    disk's node, and their clients (:data:`_CLIENTS`)."""
    spared: set[str] = set()
    for f in w.faults:
        spared |= _services_of(f)
        if f.target.kind in ("node", "disk"):
            node = f.target.obj if f.target.kind == "node" else f.target.obj.node
            spared |= {r.kind for r in node.replicas}
    return spared | {client for name in tuple(spared) for client in _CLIENTS.get(name, ())}


def _live_edit(w: World, draws: list[float]) -> tuple[str, str, Any]:
    """What someone changes during the incident, harmlessly: usually a tuned setting of a service that
    no fault touches nor depends on (:func:`_spared`): any numeric key with a safe envelope, moved a
    modest step either way and staying inside the envelope, or a feature flag flipped; otherwise a key
    no model reads. So neither the key nor the kind of a live change marks it as the cause; its value
    and what followed it do. ``draws`` are the edit's own uniforms (:data:`_LIVE_DRAWS`)."""
    u = iter(draws)
    spared = _spared(w)
    tuned = [(name, key) for name in sorted(w.services) if name not in spared
             for key, value in w.services[name].config.items()
             if key not in _NOT_LIVE and (key.startswith("feature_flag.") or (
                 (name, key) in ENVELOPES and isinstance(value, int | float) and not isinstance(value, bool)))]
    share, pick = next(u), next(u)
    if tuned and share < LIVE_TUNED_SHARE:
        name, key = tuned[int(pick * len(tuned))]
        value = w.services[name].config[key]
        if isinstance(value, bool):
            return name, key, not value
        tries = [(next(u), next(u)) for _ in range(4)]
        if within(w, name, key, value):  # never on a setting the incident has already put out of bounds
            for u_size, u_down in tries:  # a modest step, as a recent history edit takes; down when u_down < 0.5
                up = u_down >= 0.5 or key in _RAISE_ONLY
                new = history.scaled(value, history.ratio_of(u_size, up, history.RECENT_SPAN))
                if new is not None and within(w, name, key, new):
                    return name, key, new
    name, key, edit = _INERT_EDITS[int(draws[-2] * len(_INERT_EDITS))]
    return name, key, edit(w.services[name].config[key], draws[-1])


def _after_history(w: World, when: float, service: str, kind: str, prefix: str = "") -> float:
    """``when``, moved after the newest earlier entry of the same service and kind (and detail prefix),
    so a history read in time order tells one consistent story (60 -> 75 before 75 -> 90)."""
    last = max((c.at for c in changes.entries(w, service, kind, prefix)), default=None)
    if last is None or when > last:
        return when
    return last + (w.now - 60.0 - last) / 2.0


@noise("benign_config_change")
def benign_config_change(w: World, k: float) -> None:
    """A harmless config edit: about half the time made by someone during the incident (so the newest
    change is not always the culprit), on a tuned setting of a service no fault is in, kept inside its
    safe envelope, or on a key no model reads (:func:`_live_edit`); otherwise in the history, hours or
    days ago, on any key of any service (numbers, switches, log levels, addresses) or a node's sysctl.
    A history edit arrived at the value the world was built with, so it changes only the record, and any
    key can have one, a key a fault later breaks included: a change on a key is no evidence either way."""
    rng = _rng(w)
    author = _author(w)
    live = rng.random() < 0.5
    past = w.now - (float(rng.uniform(1.0, 4.0)) * 86400 if rng.random() < 0.3 else float(rng.uniform(120, 5400)))
    delay = float(rng.uniform(20.0, 480.0))  # uniform: it must often land before the page, as faults' edits do
    if not live:
        # written once the faults exist, so the story of each key stays consistent (history.py)
        w.after_faults.append(history.past_edit(w, rng, past, author))
        return
    built = {name: dict(svc.config) for name, svc in w.services.items()}
    draws = [rng.random() for _ in range(_LIVE_DRAWS)]

    def gen() -> Generator[Any, Any, None]:
        svc, key, new = _live_edit(w, draws)
        cfg = w.services[svc].config
        old = cfg[key]
        # unless someone (a fault, the agent) changed or added this key since: then leave it alone
        if key in built[svc] and old == built[svc][key]:
            cfg[key] = new
            w.noise_entities.add(svc)
            w.change(svc, "config", changes.edit_line(w, key, old, new), author, noise=True)
        yield w.env.timeout(0)

    _live(w, delay, gen)


#: Share of healthy releases of the web tier or the workers shipped live, minutes before the page
#: (as a faulty release is), rather than earlier today.
LIVE_DEPLOY_SHARE = 0.4


@noise("benign_deploy")
def benign_deploy(w: World, k: float) -> None:
    """A healthy release, rolled out like any release (pods restarted). Usually shipped earlier today,
    before any fault's release; but a web or worker release is shipped live about two times in five,
    minutes after the incident's start, so the release nearest the page is not always the culprit. A
    live release never lands on a service a fault is in (a new build would cure its defect) and never
    after the page (nobody ships during an incident)."""
    choices = ("worker", "web_server", "message_queue")
    svc_name = choices[int(_rng(w).integers(0, len(choices)))]
    if svc_name != "message_queue" and _rng(w).random() < LIVE_DEPLOY_SHARE:
        author = _author(w)
        delay = float(_rng(w).uniform(20.0, 600.0))

        def gen() -> Generator[Any, Any, None]:
            svc = w.services[svc_name]  # never over a defective release (another service's fault may ship it)
            if not w.paged and not svc.deploy.defect and not any(svc_name in _services_of(f) for f in w.faults):
                from srezero.faults.app import ship

                w.noise_entities.add(svc_name)
                ship(w, svc_name, "", 0.0, author=author, noise=True)
            yield w.env.timeout(0)

        _live(w, delay, gen)
        return
    svc = w.services[svc_name]
    cur = svc.deploys[-1]
    # after the release it replaces has rolled out (its entry's lead, then one pod at a time), so the two
    # rollouts never overlap: a past history has no superseded rollout to show
    span = 30.0 + len(svc.replicas) * (svc.startup_s + changes.ROLLOUT_GAP_S)
    when = max(w.now - float(_rng(w).uniform(600, 7200)), cur.at + span + 60.0)
    when = _after_history(w, when, svc_name, "deploy")
    msg = changes.release_note(w)
    new = Deploy(changes.next_version(w, svc_name, cur.version), when, _author(w), msg, needed_by_schema=cur.needed_by_schema)
    svc.deploys.append(new)
    w.noise_entities.add(svc_name)
    changes.roll_out(w, svc, new.version, when + changes.lead(w, svc_name, new.version, when))
    changes.record(w, when, svc_name, "deploy", f"deployed {new.version}: {msg}", new.author, noise=True)


@noise("boot_dmesg")
def boot_dmesg(w: World, k: float) -> None:
    """The boot messages at the start of every node's kernel log, days ago."""
    for node in w.topo.nodes:
        t0 = -float(_rng(w).uniform(3, 40)) * 86400
        w.boot_t[node.name] = t0  # dmesg counts seconds since this node's boot
        at = t0
        for line, gap in _BOOT_LINES:  # gap: seconds after the line before, as a boot spaces them
            at += gap[0] + (gap[1] - gap[0]) * _rng(w).random()
            w.dmesg_lines[node.name].append((at, line))


#: A boot's kernel messages and the range of seconds each follows the one before by.
_BOOT_LINES = (("Linux version 6.1.0-27-cloud-amd64 (debian-kernel@lists.debian.org)", (0.0, 0.0)),
               ("nvme nvme0: 8/0/0 default/read/poll queues", (0.8, 1.6)),
               ("nvme nvme1: 8/0/0 default/read/poll queues", (0.00002, 0.004)),
               ("EXT4-fs (nvme1n1): mounted filesystem with ordered data mode", (1.5, 4.0)),
               ("cgroup: cgroup2: unknown option \"memory_recursiveprot\"", (2.0, 6.0)))


_WARNINGS = (
    "perf: interrupt took too long (2503 > 2500), lowering kernel.perf_event_max_sample_rate to 79750",
    "hrtimer: interrupt took 13542 ns",
    "IPv6: ADDRCONF(NETDEV_CHANGE): veth3a1f9c2: link becomes ready",
    "systemd-journald[412]: Data hash table of /var/log/journal/system.journal has a fill level at 75.0, "
    "suggesting rotation.",
)


@noise("benign_warnings")
def benign_warnings(w: World, k: float) -> None:
    """Harmless warnings in a node's kernel log (one before the incident, one during it) and the event
    stream (an HPA metrics hiccup)."""
    rng = _rng(w)
    node = w.topo.nodes[int(rng.integers(0, len(w.topo.nodes)))]
    line = _WARNINGS[int(rng.integers(0, len(_WARNINGS)))]
    when = w.now - float(rng.uniform(300, 7200))
    w.dmesg_lines[node.name].append((when, line))
    w.events.append(Event(w.now - float(rng.uniform(60, 3000)), "Warning", "FailedGetResourceMetric", "web_server",
                          "failed to get cpu utilization: unable to get metrics for resource cpu: no metrics "
                          "returned from resource metrics API"))
    # kernels keep talking during an incident too: a line after the onset is no evidence by itself
    later = w.topo.nodes[int(rng.integers(0, len(w.topo.nodes)))]
    again = _WARNINGS[int(rng.integers(0, len(_WARNINGS)))]

    def gen() -> Generator[Any, Any, None]:
        w.dmesg_lines[later.name].append((w.now, again))
        yield w.env.timeout(0)

    _live(w, float(rng.uniform(60.0, 1500.0)), gen)


@noise("transient_restart")
def transient_restart(w: World, k: float) -> None:
    """One stateless replica restarts on its own and comes back (a liveness probe hiccup). It skips a
    service that already has a replica down, so two hiccups never stack into an outage."""
    svc = ("web_server", "worker")[int(_rng(w).integers(0, 2))]
    reps = w.services[svc].replicas
    rep = reps[int(_rng(w).integers(0, len(reps)))]
    delay = _rising(_rng(w), 600.0)
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
    delay = _rising(_rng(w), 900.0)
    extra = float(_rng(w).uniform(2, 6))

    def gen() -> Generator[Any, Any, None]:
        w.state.db_lock_ms += extra
        yield w.env.timeout(TICK_S * 2)
        w.state.db_lock_ms = max(0.0, w.state.db_lock_ms - extra)

    _live(w, delay, gen)


@noise("batch_cpu_spike")
def batch_cpu_spike(w: World, k: float) -> None:
    """A nightly batch job spikes CPU for a few minutes on any node (the database's too: which node is
    busy must not tell routine from cause)."""
    nodes = w.topo.nodes
    node = nodes[int(_rng(w).integers(0, len(nodes)))]
    delay = _rising(_rng(w), 600.0)
    cores = node.cores * float(_rng(w).uniform(0.3, 0.5))
    w.noise_entities.add(node.name)
    _host_job(w, node, _job_name(w), cores, float(_rng(w).uniform(180, 420)), delay)


@noise("unrelated_alert")
def unrelated_alert(w: World, k: float) -> None:
    """A CPU spike large enough to fire NodeCPUHigh for a few minutes, on any node (the database's and the
    cache's too, so the alert's node does not tell noise from cause); the system stays within its SLOs."""
    nodes = w.topo.nodes
    node = nodes[int(_rng(w).integers(0, len(nodes)))]
    delay = _rising(_rng(w), 300.0)
    w.noise_entities.add(node.name)
    _host_job(w, node, _job_name(w), node.cores * 0.9, 240.0, delay)


@noise("false_alarm_blip")
def false_alarm_blip(w: World, k: float) -> None:
    """A short burst of edge latency from a client retrying a slow export: pages, then clears itself.
    Its size varies by seed, so the page's value is in the range real incidents page at."""
    delay = 30.0 + k * 400.0
    extra = float(_rng(w).uniform(420.0, 1400.0))

    def gen() -> Generator[Any, Any, None]:
        w.state.db_lock_ms += extra
        yield w.env.timeout(TICK_S * 5)
        w.state.db_lock_ms = max(0.0, w.state.db_lock_ms - extra)

    _live(w, delay, gen)


@noise("false_alarm_link")
def false_alarm_link(w: World, k: float) -> None:
    """A switch's firmware upgrade flaps the network link of one web node for two to four minutes:
    requests through it fail, the edge pages, then the link settles by itself. Its loss varies by seed,
    so the page's value is in the range real incidents page at."""
    delay = 30.0 + k * 400.0
    rng = _rng(w)
    node = rng.choice(sorted((n for n in w.topo.nodes if any(r.service.name == "web_server" for r in n.replicas)),
                             key=lambda n: n.name))
    loss = float(rng.uniform(0.05, 0.3))
    flaps = int(rng.integers(4, 8))  # one every 30 s

    def gen() -> Generator[Any, Any, None]:
        was = node.nic_flapping, node.nic_loss
        node.nic_flapping, node.nic_loss = True, max(node.nic_loss, loss)
        for _ in range(flaps):
            log_link_flap(w, node)
            yield w.env.timeout(TICK_S)
        node.nic_flapping, node.nic_loss = was

    _live(w, delay, gen)


@noise("benign_rotation")
def benign_rotation(w: World, k: float) -> None:
    """A credential rotation, days ago, that reached every consumer: the database password (the deploy
    bot syncs each service's secret version) or the cache's auth secret. Changes only the record."""
    w.after_faults.append(history.rotation(w, _rng(w), w.now - float(_rng(w).uniform(0.5, 20.0)) * 86400))


@noise("benign_migration")
def benign_migration(w: World, k: float) -> None:
    """Schema migrations that ran days ago: an index built, or one dropped and rebuilt the same day.
    Changes only the record."""
    history.migrations(w, _rng(w))


@noise("benign_slot")
def benign_slot(w: World, k: float) -> None:
    """A replication slot made for a one-off backup and dropped after it. Changes only the record."""
    w.after_faults.append(history.slot(w, _rng(w)))
