"""Model-level state that is not a component attribute: traffic, dependency modifiers, backlogs.

Faults change these values (a missing index raises ``db_query_cost``); the tick model reads them.
Defaults live on the class so a fault module can introduce a new modifier by adding one line here.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any


class ModelState:
    # --- traffic
    base_rps: float = 400.0
    surge: float = 1.0  # multiplier from transient surges (noise or fault triggers)
    diurnal_amp: float = 0.08
    diurnal_phase: float = 0.0

    def diurnal(self, t: Any, sin: Callable[[Any], Any] = math.sin) -> Any:
        """The day's traffic curve at simulated time ``t`` (seconds), a factor around 1; ``sin=np.sin``
        takes an array of times (the history backfill), ``math.sin`` one time (the tick)."""
        return 1.0 + self.diurnal_amp * sin(t / 86400.0 * 2 * math.pi + self.diurnal_phase)

    # --- seeded healthy constants (set by World.build)
    web_cpu_ms: float = 9.0
    web_own_ms: float = 12.0
    read_queries: float = 2.0  # database reads per cache miss
    write_frac: float = 0.12  # database writes per request
    publish_frac: float = 0.2  # messages per request
    cache_ws_mb: float = 2000.0  # working set the cache needs for a full hit ratio
    cache_h_max: float = 0.93
    db_capacity_qps: float = 4000.0
    db_base_lat_ms: float = 3.0
    worker_proc_ms: float = 60.0
    # this world's conventions (srezero.sim.config.Conventions): what a correct config points at
    db_addr: str = "database:5432"
    cache_addr: str = "cache:6379"
    mq_addr: str = "message_queue:5672"
    health_path: str = "/healthz"

    # --- dependency modifiers (faults move these)
    db_query_cost: float = 1.0  # missing index -> many times more work per read
    db_lock_ms: float = 0.0  # long transaction holding locks
    db_dead_tuple_pct: float = 4.0  # table bloat
    db_credential: str = ""  # version the database accepts; "" = whatever clients send
    cache_password_ok: bool = True
    cache_hot_key: float = 0.0  # share of operations hitting one key (single-threaded hot spot)
    cache_hot_reader: str = "web_server"  # the service whose release reads it: web_server or worker
    mq_poison: int = 0  # poison messages cycling through redelivery
    endpoint_defect_rate: float = 0.0
    # service-layer causes (srezero/faults/{app,database,cache,queue,lb}.py move these)
    flag_bug_key: str = ""  # config key of a feature flag whose code path raises while it is on
    flag_bug_rate: float = 0.0
    db_missing_index: str = ""  # "table.column" whose index is gone: reads of it scan the table
    db_scan_cost: float = 1.0  # query cost multiplier while that index is missing
    db_bloat_table: str = "events"  # the table whose dead tuples db_dead_tuple_pct counts
    db_lock_pid: int = 0  # backend pid of an open transaction holding locks (0: none)
    db_background_ended: int = 0  # which background sessions the agent terminated (bits: srezero.tools.consoles)
    exporter_reconnects: int = 0  # times the agent cut the metrics exporters' sessions
    db_lock_since: float = 0.0
    standby_query_s: float = 0.0  # a long query on the standby that conflicts with WAL replay
    standby_query_pid: int = 0
    standby_query_since: float = 0.0
    standby_stall_at: float = 0.0  # when replay met the first WAL record that conflicts with that query
    wal_gb_per_write: float = 2.5e-5  # GB of WAL per database write (retained by inactive slots)
    vacuum_until: float = -1.0  # a manual VACUUM runs until then; FULL holds an exclusive lock
    vacuum_full: bool = False
    vacuum_table: str = ""  # "" = every table
    index_build_until: float = -1.0  # CREATE INDEX CONCURRENTLY in progress (extra load)
    index_build_key: str = ""  # "table.column" being indexed
    cache_hot_key_name: str = ""
    worker_job_cost: float = 1.0  # mean work per job relative to the healthy job mix
    mq_long_rate: float = 0.0  # long-running jobs (exports) per second on the queue ...
    mq_long_s: float = 0.0  # ... and how long each runs
    mq_ack_batch: int = 25  # consumers ack in batches of this many messages ...
    mq_ack_flush_s: float = 1.0  # ... or after this long, whichever comes first
    mq_fail_frac: float = 0.0  # share of jobs that fail every attempt (normally dead-lettered)
    mq_cycling: float = 0.0  # failed jobs the full dead-letter queue refused: they loop forever
    slow_req_frac: float = 0.1  # share of requests in the slow tail (exports, reports; per world) ...
    slow_req_ms: float = 3000.0  # ... with this mean duration
    sticky_skew: float = 0.6  # with sticky sessions, the share of traffic pinned to one backend

    # --- dynamic state carried between ticks (hysteresis lives here)
    db_lat_ms: float = 3.0
    db_err: float = 0.0
    db_timeout_frac: float = 0.0  # share of client queries timing out last tick
    db_util: float = 0.0  # the primary's utilisation last tick (srezero.sim.database.SATURATED)
    db_worker_q: float = 0.0  # the workers' queries per second last tick
    db_err_causes: dict[str, float]
    cache_ready_since: float = -1e9
    cache_held: float = -1.0  # share of the working set the cache holds (srezero.sim.cache.cache_contents); -1: unset
    cache_fresh: float = 1.0  # how much of what it holds its TTL keeps fresh
    cache_key_ttl_s: float = 0.0  # the TTL the stored keys were written with (set on the first tick)
    cache_stale_until: float = 0.0  # after a lowered TTL, when the last key written with the old one expires
    mq_depth: float = 0.0
    mq_dlq: float = 0.0
    mq_consumed: float = 0.0
    mq_age_s: float = 0.0  # the oldest queued message's age, as last recorded
    mq_lost: float = 0.0  # messages destroyed (purges)
    replication_lag_s: float = 0.0
    lb_lat_ms: float = 20.0
    lb_wait_since: float = -1.0  # since when requests at the edge wait out timeouts (-1: they do not)
    data_lost: bool = False

    db_slots: dict[str, list[float]]  # replication slot -> [active (1/0), retained WAL GB]
    #: every poison message's life, so telemetry of a past moment shows the messages stuck then: when it
    #: got stuck, when it left (dead-lettered, purged), and how often its consumer went away with it
    mq_poison_since: dict[str, float]
    mq_poison_gone: dict[str, float]
    mq_poison_redelivered: dict[str, int]

    @property
    def mq_poison_ids(self) -> list[str]:
        """Ids of the poison messages a consumer is stuck on now, in the order they got stuck."""
        return [i for i in self.mq_poison_since if i not in self.mq_poison_gone]

    def mq_poison_at(self, t: float) -> list[str]:
        """Ids of the poison messages consumers were stuck on at time ``t``."""
        return [i for i, since in self.mq_poison_since.items() if since <= t < self.mq_poison_gone.get(i, math.inf)]

    @property
    def workers_read_cache(self) -> bool:
        """A worker release reads the hot key, so the workers use the cache (they do not otherwise)."""
        return self.cache_hot_key > 0 and self.cache_hot_reader == "worker"

    def __init__(self) -> None:
        self.db_err_causes = {}
        self.db_slots = {}
        self.mq_poison_since = {}
        self.mq_poison_gone = {}
        self.mq_poison_redelivered = {}
