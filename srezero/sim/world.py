"""The World: a SimPy environment, the seeded topology, the tick process, faults, noise and telemetry.

A world is built from a :class:`~srezero.task.spec.TaskSpec` and a seed. Its life has three parts:

1. *History.* One settled healthy tick is filled over the history window (vectorised), so an
   agent can look back 30-90 minutes without the world simulating them one by one; every series
   follows the day's traffic as the model responds to load near that tick, and disks fill back in
   time from it (:meth:`World._backfill_history`).
2. *Onset.* From the end of history the tick process runs for real; fault processes inject their
   causes on schedule and noise processes add the ambient events of a normal day.
3. *Incident.* When the task's paging alert fires, :meth:`World.page` returns and the episode
   starts. The agent's reads advance simulated time by their cost; writes change component state,
   and the consequences unfold tick by tick.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
from array import array
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import simpy

from srezero.sim import changes, readings, topology
from srezero.sim import metrics as M
from srezero.sim.clock import PER_TICK_H, TICK_S
from srezero.sim.components import SERVICE_KINDS, Change, Deploy, Disk, Event, Node, Replica, Service
from srezero.sim.model import tick
from srezero.sim.queue import release_held
from srezero.sim.rng import Stream, stable_int, stream, suffix
from srezero.sim.state import ModelState

if TYPE_CHECKING:
    from srezero.faults.base import Fault
    from srezero.task.spec import TaskSpec

HISTORY_S = 1800.0  # the shortest healthy history before the incident ...
HISTORY_SPREAD_TICKS = 120  # ... plus a seeded 0-60 min: the onset sits at no fixed time after the data starts
SPARE_REPLICAS = 24
EPOCH = dt.datetime(2026, 3, 2, 8, 0, tzinfo=dt.UTC)


#: How much lighter the traffic of the settling probe is: history follows each series' response to
#: load between it and the settled tick (:meth:`World._settle`). The history's traffic spans about
#: +-10% around the settled tick, so the line is interpolated or extrapolated only a little.
PROBE_DROP = 0.1
#: Ticks that settle the model's smoothed state on a healthy system before the probe
SETTLE_TICKS = 2
class LogContext(NamedTuple):
    """The state a tick's log lines quote, kept with the tick (lines are rendered when first read, and
    must say what was true then: the statement that was slow, the session that held the lock)."""

    db_lat_ms: float
    db_missing_index: str
    db_bloat_table: str
    db_lock_pid: int

    @classmethod
    def of(cls, st: ModelState) -> LogContext:
        return cls(st.db_lat_ms, st.db_missing_index, st.db_bloat_table, st.db_lock_pid)


class World:
    """A running simulation of one task under one seed. Build it with :meth:`World.build`."""

    def __init__(self, spec: TaskSpec, seed: int) -> None:
        self.spec = spec
        self.seed = seed
        tid = spec.id
        self.rng_topology = stream(tid, seed, "topology")
        self.rng_world = stream(tid, seed, "world")  # dynamics: faults
        self.rng_noise = stream(tid, seed, "noise")  # noise schedules: never shifts a fault's draws
        self.rng_surface = stream(tid, seed, "surface")  # names in logs, request ids, authors
        self.rng_changes: Stream | None = None  # reasons and release notes (srezero.sim.changes)
        self.topo = topology.build(topology.TopologySize(**spec.topology.model_dump()), self.rng_topology,
                                   stream(tid, seed, "conventions"))
        self.services: dict[str, Service] = self.topo.services
        self.replica_list: list[Replica] = self.topo.replica_list()
        self.state = ModelState()
        self._seed_constants()
        # the wall clock of simulated time 0, random to the second: the onset's minute of the hour
        # must say nothing (it sits at a fixed simulated time)
        self.epoch = EPOCH + dt.timedelta(days=int(self.rng_surface.integers(0, 200)),
                                          seconds=int(self.rng_surface.integers(0, 36000)))
        self._epoch_in_hour = self.epoch.minute * 60 + self.epoch.second
        # telemetry stores
        self.events: list[Event] = []
        self.changes: list[Change] = []
        self.dmesg_lines: dict[str, list[tuple[float, str]]] = {n.name: [] for n in self.topo.nodes}
        self.boot_t: dict[str, float] = {}  # each node's boot time (dmesg counts from it)
        self.migration_seq = 0  # the last schema migration's number (srezero.sim.changes)
        #: history noise writes once the faults are set up (srezero.faults.history)
        self.after_faults: list[Callable[[], None]] = []
        self._dmesg_last: dict[tuple[str, str], int] = {}
        #: replica -> (tick, its error causes, its request rate, the tick's LogContext, its crash reason) for
        #: every tick it had causes: what its log lines of that tick say, rendered when first read
        self.cause_hist: dict[str, list[tuple[int, dict[str, float], float, LogContext, str]]] = {}
        self.log_cache: dict[tuple[str, int], list[tuple[float, str, str]]] = {}
        self.log_mix: dict[str, tuple[int, int]] = {}  # per replica: its log randomness key's fixed parts
        self._stamps: dict[int, str] = {}
        self.destroyed: list[str] = []  # destructive consequences of writes, in words
        self.collateral_errors = 0.0  # requests failed by the agent's own actions
        self.noise_entities: set[str] = set()  # what noise and distractors touched (red herrings)
        self.faults: list[Fault] = []
        # series buffer
        self._layout()
        # A fixed history length would put the onset at a fixed time after the first data point, which
        # any long enough query shows: the fault's change would be the one stamped at that offset.
        history_s = HISTORY_S + TICK_S * (stable_int(tid, seed, "history") % (HISTORY_SPREAD_TICKS + 1))
        n_cols = int((history_s + spec.budget.max_onset_s + spec.budget.time_s + spec.verify_window_s) / TICK_S) + 40
        self.buf = np.zeros((self.n_rows, n_cols), dtype=np.float64)
        self.vals = array("d", bytes(8 * self.n_rows))  # one column, filled by the tick model
        self.history_cols = int(history_s / TICK_S)
        self.col = self.history_cols - 1
        tn = self.rng_world.normal(0.0, 0.025, size=n_cols)
        self.traffic_noise = (1.0 + np.clip(tn, -0.08, 0.08)).tolist()
        #: where this world starts reading the shared noise table (:func:`srezero.sim.readings.noise_table`)
        self.noise_offset = self.rng_surface.getrandbits(128) % readings.NOISE_TABLE_SIZE
        self.env = simpy.Environment(initial_time=(self.history_cols - 1) * TICK_S)
        self.t_page = 0.0
        self.paged = False
        self.page_forced = False
        # Alert rules are evaluated only while someone can read them: the episode's verification
        # window and a counterfactual replay after its page have no reader, so they skip the work.
        self.alerts_live = True
        from srezero.telemetry.alerts import AlertBook

        self.alerts = AlertBook(self)

    # ------------------------------------------------------------------ construction
    def _seed_constants(self) -> None:
        r = self.rng_topology
        st = self.state
        st.base_rps = float(r.uniform(260, 520)) * self.spec.traffic.scale
        st.diurnal_phase = float(r.uniform(0, 6.28))
        st.web_cpu_ms = float(r.uniform(7.0, 10.0))
        st.web_own_ms = float(r.uniform(9.0, 16.0))
        st.read_queries = float(r.uniform(1.6, 2.4))
        st.write_frac = float(r.uniform(0.08, 0.15))
        st.publish_frac = float(r.uniform(0.15, 0.3))
        st.cache_h_max = float(r.uniform(0.9, 0.96))
        st.cache_ws_mb = float(self.services["cache"].config["maxmemory_mb"]) * float(r.uniform(0.55, 0.75))
        st.db_base_lat_ms = float(r.uniform(2.0, 4.0))
        st.worker_proc_ms = float(r.uniform(40, 80))
        st.db_dead_tuple_pct = float(r.uniform(2, 5))
        # the slow tail (exports, reports) is the workload's own: hashed, so no stream moves for it
        tail = stable_int(self.spec.id, self.seed, "slow tail")
        st.slow_req_frac = 0.10 + tail % 501 / 10_000.0
        st.slow_req_ms = 3000.0 + tail // 501 % 1001
        # Size capacities from the seeded load so every seed runs at realistic utilisation:
        # web tier 30-45 % busy, database 28-36 %, worker pool well ahead of the queue.
        web = self.services["web_server"]
        cache_cfg = self.services["cache"].config
        hit = st.cache_h_max * (1.0 - math.exp(-cache_cfg["ttl_s"] / 90.0))
        per_replica_cores = float(web.config["cpu_limit"])
        st.web_cpu_ms = float(r.uniform(0.30, 0.45)) * per_replica_cores * 1000.0 * len(web.replicas) / st.base_rps
        db_load = st.base_rps * ((1.0 - hit) * st.read_queries + st.write_frac) + st.base_rps * st.publish_frac
        st.db_capacity_qps = db_load / float(r.uniform(0.28, 0.36))
        conv = self.topo.conventions
        st.db_addr, st.cache_addr, st.mq_addr = (conv.endpoints[d] for d in ("database", "cache", "message_queue"))
        st.health_path = conv.health_path
        if conv.rate_limit_headroom:  # a generous limit some teams keep against scrapers; never binds
            per_replica = st.base_rps * (1.0 + st.diurnal_amp) / len(web.replicas)
            web.config["rate_limit_rps"] = int(math.ceil(per_replica * conv.rate_limit_headroom / 50.0) * 50)

    def _layout(self) -> None:
        row_of: dict[tuple[str, str], int] = {}
        n = 0
        for kind in SERVICE_KINDS:
            names = M.metric_names(kind)
            self.services[kind].row = n
            row_of.update(zip([(kind, m) for m in names], range(n, n + len(names))))
            n += len(names)
        width = len(M.NODE_METRICS)
        for node in self.topo.nodes:
            node.row = n
            row_of.update(zip([(node.name, m) for m in M.NODE_METRICS], range(n, n + width)))
            n += width
        self.row_of = row_of
        #: rows whose reading never passes a limit of the system, and that limit over columns c0..c1
        #: (series): a node's open files stop at fs.file-max, the edge's held connections at the
        #: max_connections of their time, a pod's CPU at its cgroup quota of the time (_assign_rows)
        self._limited_rows = readings.limited_rows(self)
        self._replica_base = n
        self.n_rows = n + (len(self.replica_list) + SPARE_REPLICAS) * len(M.REPLICA_METRICS)
        self._next_replica_row = n
        for rep in self.replica_list:
            self._assign_rows(rep)
        self._measurement_tables()

    def _assign_rows(self, rep: Replica) -> None:
        width = len(M.REPLICA_METRICS)
        if self._next_replica_row + width > self.n_rows:
            self._grow_rows(SPARE_REPLICAS * width)
        rep.row = row = self._next_replica_row
        self._next_replica_row += width
        self.row_of.update(zip([(rep.name, m) for m in M.REPLICA_METRICS], range(row, row + width)))
        self._limited_rows[row + M.R_CPU] = functools.partial(readings.quota_limit, rep.service)

    def _grow_rows(self, extra: int) -> None:
        """Room for more replicas than the spare rows hold (rows of scaled-down replicas keep their
        history, so an agent that scales up and down again and again needs new ones): rare, so copied."""
        self.n_rows += extra
        self.buf = np.concatenate([self.buf, np.zeros((extra, self.buf.shape[1]))], axis=0)
        self.vals.extend(array("d", bytes(8 * extra)))
        self._measurement_tables()

    def _measurement_tables(self) -> None:
        shape = (len(self.topo.nodes), self.n_rows)
        self._sigma = readings.row_table("sigma", *shape)
        self._ceiling = readings.row_table("ceiling", *shape)
        self._counted = readings.row_table("counted", *shape)

    @classmethod
    def build(cls, spec: TaskSpec, seed: int) -> World:
        """Build the world, settle it, fill history, start faults and noise. Does not page yet."""
        from srezero.faults import noise
        from srezero.faults.base import instantiate

        w = cls(spec, seed)
        probe = w._settle()
        w.buf[:, : w.history_cols] = np.frombuffer(w.vals)[:, None]
        w._backfill_history(probe)
        # Noise first: benign history (changes, releases) is written before any fault exists, so a fault
        # that later edits the same key or ships a release overrides it, as in a real incident. Only live
        # edits of tuned settings and live releases look at the faults when they land: they spare the
        # services a fault is in or could be hidden through (srezero.faults.noise._spared).
        noise.schedule(w, spec.noise, spec.distractors)
        w.faults = [instantiate(f, w, i) for i, f in enumerate(spec.faults)]
        for write in w.after_faults:
            write()
        for rep in w.replica_list:  # the pods run what the history left them (a past rotation included)
            rep.cred = rep.service.config.get("env.CREDENTIALS_VERSION", "")
        for fault in w.faults:
            w.env.process(fault.process(w))
        w.env.process(w._ticker())
        for svc in w.services.values():  # from now on a config write is a change in time (config.Config.at)
            svc.config.clock = w.env
        return w

    def _settle(self) -> tuple[np.ndarray, np.ndarray]:
        """Settle the healthy system at the traffic of the last history column, with a one-tick probe
        at lighter traffic on the way; return every series in the probe's tick and in the tick after.

        Series respond to a change of load partly at once and partly a tick later (queued work and
        smoothed latencies carry over), so the two columns give both parts (:meth:`_backfill_history`).
        The probe starts from a settled system (the model's smoothed state starts from rough guesses),
        and the live ticks continue from the last of the ticks at the column's own load after it, when
        what the model carries over from the probe is well under its measurement noise."""
        for _ in range(SETTLE_TICKS):
            tick(self)
        noise, col = self.traffic_noise, self.col
        own = noise[col]
        noise[col] = own * (1.0 - PROBE_DROP)
        tick(self)
        noise[col] = own
        during = np.frombuffer(self.vals).copy()
        tick(self)
        after = np.frombuffer(self.vals).copy()
        tick(self)
        return during, after

    def _backfill_history(self, probe: tuple[np.ndarray, np.ndarray]) -> None:
        """Give the filled history the movement live ticks have, so no series changes character at
        the first live tick (which would date the start of the simulation, and so the onset, to the
        minute). Every series follows the day's curve and the traffic noise of its column as the
        probe measured its response near the settled tick: in part at once, in part a tick later
        (rates exactly in proportion; CPU, connections and latencies through the model's smoothing).
        Disks fill at their growth rate, backwards in time from the settled tick. The last column
        stays the settled tick itself, which the first live tick continues from."""
        h = self.history_cols
        traffic = self.state.diurnal(np.arange(h, dtype=np.float64) * TICK_S, np.sin) * np.asarray(self.traffic_noise[:h])
        buf = self.buf
        settled = buf[:, h - 1]
        at_once = (settled - probe[0]) * (1.0 / PROBE_DROP)  # change per unit of relative load, that tick
        later = (settled - probe[1]) * (1.0 / PROBE_DROP)  # ... and what the next tick carries over
        lift = traffic / traffic[-1] - 1.0
        before = np.concatenate(([lift[0]], lift[:-1]))
        before[-1] = 0.0  # the settled tick followed ticks at its own load
        rows = np.flatnonzero((at_once != 0.0) | (later != 0.0))  # most rows: counts, limits, idle series
        hist = np.multiply.outer(at_once[rows], lift)
        hist += np.multiply.outer(later[rows], before)
        hist += settled[rows, None]
        # a line extrapolated past the probe must not take a series below zero (no metric is negative)
        buf[rows, :h] = np.maximum(hist, 0.0, out=hist)
        ago = np.arange(h - 1, -1, -1, dtype=np.float64) * PER_TICK_H
        for node in self.topo.nodes:
            for disk, row in ((node.disks[0], node.row + M.N_ROOT), (node.disks[-1], node.row + M.N_DATA)):
                buf[row, :h] = (disk.used_gb - disk.growth_gb_per_h * ago) / disk.capacity_gb * 100.0

    # ------------------------------------------------------------------ time
    def _ticker(self):
        env = self.env
        while True:
            yield env.timeout(TICK_S)
            self.col += 1
            if self.col >= self.buf.shape[1]:
                self.buf = np.concatenate([self.buf, np.zeros_like(self.buf)], axis=1)
                self.traffic_noise = self.traffic_noise * 2
            tick(self)
            self.buf[:, self.col] = np.frombuffer(self.vals)
            col = self.col
            ctx = None
            for rep in self.replica_list:
                if rep.err_causes:
                    if ctx is None:
                        ctx = LogContext.of(self.state)
                    self.cause_hist.setdefault(rep.name, []).append((col, rep.err_causes, rep.rps, ctx,
                                                                     rep.crash_reason))
            if self.alerts_live:
                self.alerts.evaluate()

    @property
    def now(self) -> float:
        return self.env.now

    def advance(self, seconds: float) -> None:
        """Run the world ``seconds`` forward: every event due before then, as ``env.run(until=...)``.

        Stepping by hand avoids ``run``'s stop event and exception, a large share of a short step. No
        urgent event can be due exactly at the stop time (SimPy only schedules those at "now"), so
        stopping before events due at that time is exactly what ``run`` does."""
        if seconds > 0:
            env = self.env
            now = env._now
            stop = now + ((now + seconds) - now)  # the same float ``run`` would stop at
            queue = env._queue
            step = env.step
            while queue and queue[0][0] < stop:
                step()
            env._now = stop

    def page(self) -> None:
        """Run from onset until the task's paging alert fires (or the onset budget runs out)."""
        limit = self.env.now + self.spec.budget.max_onset_s
        name = self.spec.alert.name
        while self.env.now < limit:
            self.advance(TICK_S)
            if self.alerts.is_firing(name):
                break
        self.page_forced = not self.alerts.is_firing(name)  # for humans (`srezero run`), never the agent
        self.alerts.force(name)
        self.t_page = self.env.now
        self.paged = True

    def clock(self, t: float) -> dt.datetime:
        return self.epoch + dt.timedelta(seconds=t)

    def stamp(self, t: float) -> str:
        """ISO timestamp of simulated time ``t``; the date and hour are cached per wall-clock hour."""
        t += self._epoch_in_hour  # seconds since the top of the wall-clock hour the epoch falls in
        hour = int(t // 3600)
        cached = self._stamps.get(hour)
        if cached is None:
            cached = self.clock(hour * 3600.0 - self._epoch_in_hour).strftime("%Y-%m-%dT%H:")
            self._stamps[hour] = cached
        rem = int(t - hour * 3600)
        return f"{cached}{rem // 60:02d}:{rem % 60:02d}Z"

    # ------------------------------------------------------------------ telemetry helpers
    def emit(self, kind: str, reason: str, entity: str, message: str) -> None:
        self.events.append(Event(self.env.now, kind, reason, entity, message))

    def change(self, service: str, kind: str, detail: str, author: str, noise: bool = False) -> None:
        """Record a change that takes effect now; its stamp is a few seconds earlier (changes.lead),
        except the agent's own, which it made now."""
        now = self.env.now
        at = now if author == changes.AGENT_AUTHOR else now - changes.lead(self, service, detail, now)
        changes.record(self, at, service, kind, detail, author, noise)

    def dmesg(self, node: Node, line: str, every: int = 0) -> None:
        """Append a kernel message; ``every`` rate-limits a repeating message to one per N ticks."""
        if every:
            key = (node.name, line[:24])  # callers format cheaply; see model.tick
            last = self._dmesg_last.get(key, -10_000)
            if self.col - last < every:
                return
            self._dmesg_last[key] = self.col
        self.dmesg_lines[node.name].append((self.env.now, line))

    def sector(self, disk: Disk) -> int:
        base = 1_000_000 + (disk.serial.__len__() * 7919 + self.seed * 104729) % 900_000_000
        return base + int(readings.noise_table()[1][(self.col + self.noise_offset) % readings.NOISE_TABLE_SIZE] * 1000) % 5000 * 8

    def author(self) -> str:
        return topology.AUTHORS[int(self.rng_surface.integers(0, len(topology.AUTHORS)))]

    def series(self, row: int, c0: int, c1: int, noisy: bool = True) -> np.ndarray:
        """Columns ``c0..c1`` (inclusive) of one row as the metrics pipeline measured them: with
        deterministic measurement noise, the same for every reader (``noisy=False``: the true values).
        Most metrics read within a relative sigma of the truth; a counted ratio (error_rate) reads as
        failures counted among the scrape's requests (:func:`srezero.sim.metrics.counted`)."""
        data = self.buf[row, c0 : c1 + 1]
        if not noisy:
            return data.copy()
        sigma = self._sigma[row]
        counted = self._counted[row]
        if sigma == 0.0 and not counted:
            return data.copy()
        idx = (np.arange(c0, c1 + 1) * 7919 + (row * 104729 + self.noise_offset)) % readings.NOISE_TABLE_SIZE
        if counted:  # the request rate sits in the row before (srezero.sim.metrics.COUNTED)
            return M.counted(data, self.buf[row - 1, c0 : c1 + 1], readings.noise_table()[0][idx])
        noisy_data = data * (1.0 + sigma * readings.noise_table()[0][idx])
        ceiling = self._ceiling[row]
        if ceiling != float("inf"):
            noisy_data = np.minimum(noisy_data, ceiling)
        limit = self._limited_rows.get(row)
        if limit is not None:
            noisy_data = np.minimum(noisy_data, limit(c0, c1))
        return noisy_data

    def measured(self, row: int) -> float:
        """The latest sample of a row as :meth:`series` measures it."""
        return float(self.series(row, self.col, self.col)[0])

    def col_at(self, t: float) -> int:
        return max(0, min(self.col, int(t // TICK_S)))

    # ------------------------------------------------------------------ entity lookup
    def entity_kind(self, name: str) -> str | None:
        if name in self.services:
            return "service"
        if name in self.topo.replicas:
            return "replica"
        if name in self.topo.node_by_name:
            return "node"
        if name in self.topo.disks:
            return "disk"
        return None

    def entity_names(self) -> dict[str, list[str]]:
        return {
            "service": list(self.services),
            "replica": list(self.topo.replicas),
            "node": [n.name for n in self.topo.nodes],
            "disk": list(self.topo.disks),
        }

    # ------------------------------------------------------------------ state changes (writes)
    def restart_replica(self, rep: Replica, reason: str, by_agent: bool) -> None:
        """Kill and restart one replica. In-flight work is dropped; caches come back cold."""
        if rep.state == "Terminated":
            return
        if by_agent and rep.state == "Running":
            self.collateral_errors += rep.rps * min(rep.lat_ms / 1000.0, 5.0) + rep.rps * 0.5
            if rep.kind == "message_queue":
                self.state.mq_depth += self.state.mq_consumed * 5.0  # unacked messages redelivered
        release_held(self, rep)
        if not by_agent:
            rep.restarts += 1
            rep.last_restart_t = self.env.now
        else:  # the pod is replaced (deleted, rolled, evicted), not its container restarted: a new pod
            rep.created_at = self.env.now  # starts its AGE and its RESTARTS again
            rep.restarts = 0
        rep.state = "Starting"
        rep.ready_at = self.env.now + rep.service.startup_s
        rep.mem_mb = rep.base_mem_mb
        rep.leaked_conns = 0.0
        if rep.kind == "cache":  # it comes back empty: its warm-up alone tracks the refill from here
            self.state.cache_ready_since = 1e12
            self.state.cache_held = -1.0
        self.emit("Normal", "Killing" if by_agent else reason, rep.name,
                  f"Stopping container {rep.kind}" if by_agent else f"Container {rep.kind} terminated: {reason}")

    def add_replica(self, svc: Service) -> Replica:
        nodes = [n for n in self.topo.nodes if n.up and not n.cordoned]
        node = min(nodes or self.topo.nodes, key=lambda n: (len(n.replicas), n.index))
        rep = Replica(f"{topology.SHORT_NAMES[svc.kind]}-{suffix(self.rng_surface, 5)}", svc, node, len(svc.replicas))
        self._assign_rows(rep)  # before the replica joins anything: nothing is half-added if it fails
        rep.base_mem_mb = svc.replicas[0].base_mem_mb if svc.replicas else topology.BASE_MEM_MB[svc.kind]
        rep.mem_mb = rep.base_mem_mb
        rep.version = svc.deploy.version
        rep.state = "Starting" if nodes else "Pending"
        rep.ready_at = self.env.now + svc.startup_s
        rep.created_at = self.env.now
        svc.replicas.append(rep)
        node.replicas.append(rep)
        self.topo.replicas[rep.name] = rep
        self.replica_list.append(rep)
        if svc.kind == "web_server":
            self.services["load_balancer"].config[f"backend_weight.{rep.name}"] = self.topo.conventions.weight_scale
        self.emit("Normal", "Scheduled", rep.name, f"Successfully assigned {rep.name} to {node.name}")
        return rep

    def remove_replica(self, rep: Replica) -> None:
        release_held(self, rep)
        if rep.state == "Running":
            self.collateral_errors += rep.rps * 0.5
        rep.state = "Terminated"
        rep.rps = rep.err = rep.cpu = rep.conns = 0.0
        rep.err_causes = {}
        self.emit("Normal", "Killing", rep.name, f"Stopping container {rep.kind} (scaled down)")

    def move_replica(self, rep: Replica, node: Node) -> None:
        rep.moves.append((self.env.now, rep.node.index))
        rep.created_at = self.env.now  # rescheduled: a new pod on the new node, with no restarts yet
        rep.restarts = 0
        rep.node.replicas.remove(rep)
        rep.node = node
        node.replicas.append(rep)

    def deploy(self, svc: Service, target: Deploy, kind: str, author: str) -> None:
        svc.deploys.append(Deploy(target.version, self.env.now, author, f"{kind} to {target.version}",
                                  defect=target.defect, defect_rate=target.defect_rate,
                                  needed_by_schema=target.needed_by_schema))
        changes.roll(self, svc, target.version)
