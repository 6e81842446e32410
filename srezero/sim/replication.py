"""Streaming replication: how far the standby trails the primary, one tick at a time.

The standby replays the primary's writes as fast as its data disk allows; when it replays slower
than the primary writes, the lag grows every tick, and it drains only once the standby keeps up. A
long query on the standby holds replay back, up to ``max_standby_streaming_delay_s``, from the moment
replay meets the first WAL record that conflicts with it (a vacuum's cleanup of rows the query reads,
seconds to a minute after the query starts; the lag then grows by the second). Once replay has waited
that long the standby cancels the query ("conflict with recovery") and replay catches up; -1 waits
for as long as the query runs. A standby
that is down or unreachable falls behind by the whole tick. A lossy link at either end delays the WAL
stream by its retransmissions, so the standby is always a few seconds behind (WAL is a small stream:
a lossy link still carries it, late); a flapping link also breaks the stream, which reconnects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from srezero.sim.clock import TICK_S
from srezero.sim.nodes import link_loss
from srezero.sim.rng import stable_int

if TYPE_CHECKING:
    from srezero.sim.world import World

#: Writes per second a standby replays when its data disk answers in 0.3 ms; a slower disk replays fewer.
STANDBY_APPLY_WPS = 4000.0
#: Seconds the WAL stream trails a link that loses everything it can (``link_loss`` 1): retransmission
#: timeouts, backing off. Below the 5 s of lag a failover can lose without losing writes.
LOSSY_STREAM_DELAY_S = 4.0


def start_report(w: World, seconds: float) -> None:
    """A long reporting query starts on the standby now and runs ``seconds``. Replay stalls at the
    first conflicting record: 5-60 s later, a function of the world and the start (never a draw, so
    a rerun after the agent terminates the report shifts no other random stream)."""
    st = w.state
    now = w.now
    st.standby_query_s, st.standby_query_since = seconds, now
    st.standby_query_pid = 1000 + stable_int(w.seed, "report", int(now)) % 60000
    st.standby_stall_at = now + 5.0 + stable_int(w.spec.id, w.seed, "conflict", int(now)) % 5501 / 100.0


def replicate(w: World, dbc: dict[str, Any], writes_per_s: float) -> None:
    """Advance ``w.state.replication_lag_s`` by one tick in which the primary wrote ``writes_per_s``."""
    st = w.state
    standby = w.topo.db_standby()
    if not (standby.state == "Running" and standby.node.up):
        st.replication_lag_s += TICK_S
        return
    primary_node = w.topo.db_primary().node
    lost = 1.0 - (1.0 - link_loss(primary_node)) * (1.0 - link_loss(standby.node))
    if primary_node.nic_flapping or standby.node.nic_flapping:
        standby.err_causes = {"wal_stream": 1.0}
    apply_cap = STANDBY_APPLY_WPS / (standby.node.data_disk.latency_ms / 0.3)
    if writes_per_s > apply_cap:  # replay slower than the primary writes: the standby falls further behind
        st.replication_lag_s += (writes_per_s - apply_cap) * TICK_S / max(apply_cap, 1.0)
    else:  # it catches up
        st.replication_lag_s = max(0.0, st.replication_lag_s - TICK_S * 0.5)
    waited = w.now - st.standby_stall_at
    if st.standby_query_s > 0 and waited > 0:  # replay waits for a conflicting standby query, up to the delay
        delay = dbc["max_standby_streaming_delay_s"]
        hold = st.standby_query_s if delay < 0 else min(float(delay), st.standby_query_s)
        held = waited if waited < hold else hold  # replay stopped at the conflict: lag grows by the second
        lag = st.replication_lag_s
        st.replication_lag_s = held if held > lag else max(held, lag - TICK_S * 10.0)
        if 0 <= delay <= waited:  # Postgres cancels the query once replay has waited the delay out
            st.standby_query_s, st.standby_query_pid = 0.0, 0
            standby.err_causes = {**standby.err_causes, "recovery_conflict": 0.01}  # one line: one query
    if lost and st.replication_lag_s < lost * LOSSY_STREAM_DELAY_S:
        st.replication_lag_s = lost * LOSSY_STREAM_DELAY_S
