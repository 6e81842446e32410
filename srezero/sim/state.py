"""Model-level state that is not a component attribute: traffic, dependency modifiers, backlogs.

Faults change these values (a missing index raises ``db_query_cost``); the tick model reads them.
Defaults live on the class so a fault module can introduce a new modifier by adding one line here.
"""

from __future__ import annotations


class ModelState:
    # --- traffic
    base_rps: float = 400.0
    surge: float = 1.0  # multiplier from transient surges (noise or fault triggers)
    diurnal_amp: float = 0.08
    diurnal_phase: float = 0.0

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

    # --- dependency modifiers (faults move these)
    db_query_cost: float = 1.0  # missing index -> many times more work per read
    db_lock_ms: float = 0.0  # long transaction holding locks
    db_dead_tuple_pct: float = 4.0  # table bloat
    db_credential: str = ""  # version the database accepts; "" = whatever clients send
    cache_password_ok: bool = True
    cache_hot_key: float = 0.0  # share of operations hitting one key (single-threaded hot spot)
    mq_poison: int = 0  # poison messages cycling through redelivery
    endpoint_defect_rate: float = 0.0

    # --- dynamic state carried between ticks (hysteresis lives here)
    db_lat_ms: float = 3.0
    db_err: float = 0.0
    db_timeout_frac: float = 0.0  # share of client queries timing out last tick
    db_err_causes: dict[str, float]
    cache_ready_since: float = -1e9
    mq_depth: float = 0.0
    mq_dlq: float = 0.0
    mq_consumed: float = 0.0
    mq_lost: float = 0.0  # messages destroyed (purges)
    replication_lag_s: float = 0.0
    lb_lat_ms: float = 20.0
    data_lost: bool = False

    def __init__(self) -> None:
        self.db_err_causes = {}
