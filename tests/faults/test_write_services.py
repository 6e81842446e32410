"""The service write tools and admin consoles: real consequences, clear errors, no spoilers."""

from __future__ import annotations

from typing import Any

from srezero.faults.base import load_all
from srezero.tools.consoles import SCHEMA
from tests.faults.harness import start


def _do(env, tool: str, **args: Any):
    obs, *_ = env.step({"tool": tool, "args": args})
    return obs


def _fault(name: str, seed: int = 0):
    env = start(load_all()[name], seed)
    return env, env.world, env.world.faults[0]


def test_terminate_session_releases_only_the_blocker() -> None:
    env, w, f = _fault("lock_contention")
    assert "idle in transaction" in _do(env, "inspect_database", view="activity").text
    app_pid = next(int(line.split()[1]) for line in _do(env, "inspect_database", view="activity").text.splitlines()
                   if " app " in line)
    before = w.collateral_errors
    assert _do(env, "terminate_session", pid=app_pid).ok
    assert w.state.db_lock_ms > 0 and w.collateral_errors > before  # the wrong session: its requests fail
    bad = _do(env, "terminate_session", pid=1)
    assert not bad.ok and "no database backend" in bad.error
    assert _do(env, "terminate_session", pid=f.pid).ok
    assert w.state.db_lock_ms == 0 and f.neutralised(w)
    assert "no backends waiting" in _do(env, "inspect_database", view="locks").text


def test_a_database_restart_ends_the_blocking_session_wherever_in_the_tick_it_lands() -> None:
    """A fourth adversarial review: restart(database) on a lock was judged "neutralised" or "addresses no
    root cause" depending on whether the fault's own poll had run since (6 of 6 seeds on inc-024)."""
    reasons = set()
    for pad in (0, 5, 10, 20):
        env, w, f = _fault("lock_contention")
        if pad:
            _do(env, "wait", seconds=pad)
        assert _do(env, "restart", target="database").ok
        assert f.neutralised(w)
        reasons.add(env.st.writes[-1].reason)
    assert reasons == {"neutralised lock_contention"}


def test_create_index_takes_time_and_must_match() -> None:
    env, w, f = _fault("missing_index")
    assert not _do(env, "create_index", table="nope", column="id").ok
    taken = next(c for c in ("customer_id", "created_at") if f"orders.{c}" != f.index)
    skipped = _do(env, "create_index", table="orders", column=taken)  # IF NOT EXISTS: a notice, no build
    assert skipped.ok and "already exists, skipping" in skipped.text and w.state.index_build_until < w.now
    assert env.st.writes[-1].reason == "addresses no root cause"  # a write like any other: a probe is a wrong fix
    assert _do(env, "create_index", table=f.table, column=SCHEMA[f.table][1][0]).ok  # an unindexed column
    assert not _do(env, "create_index", table=f.table, column=f.column).ok  # one build at a time
    w.advance(60)
    assert w.state.db_missing_index == f.index  # the wrong column did not help
    assert _do(env, "create_index", table=f.table, column=f.column).ok
    assert w.state.db_missing_index == f.index  # still building
    w.advance(60)
    assert w.state.db_missing_index == ""


def test_vacuum_reclaims_and_full_locks() -> None:
    env, w, _ = _fault("table_bloat")
    assert w.state.db_dead_tuple_pct > 50
    assert _do(env, "vacuum", table="events", full=True).ok
    assert not _do(env, "vacuum").ok  # already running
    w.advance(30)
    assert w.vals[w.row_of[("database", "lock_waits")]] > 100  # VACUUM FULL holds an exclusive lock
    w.advance(120)
    assert w.state.db_dead_tuple_pct < 10 and not w.state.vacuum_full
    w.advance(1800)  # autovacuum is still off: dead tuples come back
    assert w.state.db_dead_tuple_pct > 10


def test_drop_replication_slot_frees_space_or_breaks_the_standby() -> None:
    env, w, f = _fault("db_disk_full")
    disk = w.topo.db_primary().node.data_disk
    assert disk.used_frac > 0.99
    assert "does not exist" in _do(env, "drop_replication_slot", slot="nope").error
    assert _do(env, "drop_replication_slot", slot=f.slot).ok
    assert disk.used_frac < 0.9 and not w.destroyed
    own = "standby_" + w.topo.db_standby().name.replace("-", "_")
    assert _do(env, "drop_replication_slot", slot=own).ok
    assert any("must be rebuilt" in d for d in w.destroyed)


def test_certificate_renewal_and_read_only_days_left() -> None:
    env, w, _ = _fault("tls_cert_expired")
    assert "read-only" in _do(env, "set_config", service="load_balancer", key="tls_cert_days_left", value=90).error
    assert not _do(env, "renew_certificate", service="cache").ok
    assert _do(env, "renew_certificate").ok
    assert w.services["load_balancer"].config["tls_cert_days_left"] == 90  # the tool's cost covers issuance


def test_dead_letter_and_purge() -> None:
    env, w, f = _fault("poison_message")
    shown = _do(env, "inspect_queue", view="messages").text
    assert all(i in shown for i in f.ids)
    assert not _do(env, "dead_letter_message", message_id="zzzzzz").ok
    assert _do(env, "dead_letter_message", message_id=f.ids[0]).ok
    assert w.state.mq_poison == len(f.ids) - 1 and w.state.mq_dlq >= 1 and not w.destroyed
    depth = w.state.mq_depth
    assert depth > 1
    assert _do(env, "purge_queue", queue="jobs").ok
    assert w.state.mq_depth == 0 and w.state.mq_poison == 0 and w.destroyed and w.state.mq_lost >= depth


def _deliveries(env) -> dict[str, int]:
    lines = _do(env, "inspect_queue", view="messages").text.splitlines()[2:]
    return {p[0]: int(p[1]) for p in (line.split() for line in lines) if p[3] == "unacked"}


def test_a_worker_going_away_redelivers_only_the_poison_messages_it_held() -> None:
    env, w, f = _fault("poison_message")
    running = [r for r in w.services["worker"].replicas if r.state == "Running"]
    assert len(f.ids) >= 2 and len(running) >= 2
    assert _deliveries(env) == dict.fromkeys(f.ids, 1)
    held = [pid for k, pid in enumerate(w.state.mq_poison_ids) if k % len(running) == 0]
    assert _do(env, "restart", target=running[0].name).ok
    assert _deliveries(env) == {pid: 2 if pid in held else 1 for pid in f.ids}
    # the broker does not redeliver a message its consumer keeps extending: no redelivery rate for it
    env.step("wait(seconds=120)")
    assert float(w.vals[w.row_of[("message_queue", "redeliveries_per_s")]]) == 0.0


def test_consoles_are_plain_and_reflect_state() -> None:
    env, _, _ = _fault("cache_hot_key")
    hot = _do(env, "inspect_cache", section="hotkeys").text
    assert "promo:banner" in hot.splitlines()[2]  # the hottest key first
    assert "keyspace_hit_ratio" in _do(env, "inspect_cache").text
    for view in ("activity", "locks", "replication", "tables", "indexes"):
        text = _do(env, "inspect_database", view=view).text
        assert "idle in transaction" not in text and "false" not in text.split("TYPE")[-1]
    for view in ("queues", "messages", "consumers"):
        assert _do(env, "inspect_queue", view=view).ok
    spoilers = [n for n in load_all() if "_" in n]
    for t in env.trajectory:
        assert not any(n in t["text"] for n in spoilers), t["text"]


def test_a_database_url_heals_the_workers_exactly_when_the_oracle_accepts_it() -> None:
    """The world and the mitigation oracle share one test of a usable DATABASE_URL."""
    import srezero

    def outcome(url: str) -> tuple[bool, bool]:
        env = srezero.make("inc-001", 0)
        env.reset()
        for action in ({"tool": "set_config", "args": {"service": "worker", "key": "env.DATABASE_URL", "value": url}},
                       {"tool": "wait", "args": {"seconds": 180}}):
            assert env.step(action)[0].ok
        workers_up = all(r.state == "Running" for r in env.world.services["worker"].replicas)
        *_, info = env.step("resolve()")
        return workers_up, info["result"]["mitigated"]

    env = srezero.make("inc-001", 0)
    env.reset()
    original = env.world.services["web_server"].config["env.DATABASE_URL"]  # the sibling's copy
    host, port = env.world.topo.conventions.endpoints["database"].split(":")
    assert outcome(original) == (True, True)
    assert outcome(f"postgresql://{host}:{port}") == (True, True)  # the same connection, libpq defaults
    for wrong in ("x", f"postgres://app@db-elsewhere:{port}/app", f"postgres://app@{host}:{int(port) + 1}/app",
                  f"postgres://app@{host}:{port}/shop"):
        assert outcome(wrong) == (False, False), wrong


def test_a_rollback_supersedes_a_release_in_flight_and_restarts_only_the_pods_it_reached() -> None:
    from srezero.faults.app import ship
    from srezero.sim import changes

    env, w, _f = _fault("bad_deploy")
    svc = w.services["web_server"]
    pods = [r for r in svc.replicas if r.state != "Terminated"]
    assert len(pods) >= 2
    before = svc.deploy.version
    bad = ship(w, "web_server", "endpoint_errors", 0.5)  # a second bad release starts rolling out
    w.advance(1)
    assert pods[0].version == bad.version and pods[1].version != bad.version
    at = w.now
    assert _do(env, "rollback", service="web_server").ok
    w.advance(len(pods) * (svc.startup_s + changes.ROLLOUT_GAP_S) + 60)
    assert {r.version for r in pods} == {before}  # the superseded release never reached the other pods
    kills = [e.entity for e in w.events if e.reason == "Killing" and e.at >= at]
    assert kills == [pods[0].name]  # as a Deployment's rollback: pods on the target release are left alone
    assert all(r.state == "Running" for r in pods)


def test_a_worker_release_that_reads_the_hot_key_is_rolled_back_on_the_worker_not_the_web_tier() -> None:
    """cache_hot_key on the workers: they, not only the web tier, log the cache timeouts and hold cache
    connections; rolling back the web tier is a wrong fix that leaves the key hot, the workers' cures it."""
    import srezero
    from tests.faults.harness import spec_for

    def episode(reader: str):
        env = srezero.make(spec_for(load_all()["cache_hot_key"], target=reader), 0)
        env.reset(seed=0)
        return env, env.world, env.world.faults[0]

    env, w, f = episode("worker")
    assert f.root_cause(w).entity == "worker" and w.state.cache_hot_key > 0
    assert "cache: timeout reading from" in _do(env, "search_logs", service="worker", level="warn").text
    running = {k: sum(r.state == "Running" for r in w.services[k].replicas) for k in ("web_server", "worker")}
    clients = f"connected_clients:{running['web_server'] * 8 + running['worker'] * 4}"
    assert clients in _do(env, "inspect_cache").text
    assert _do(env, "rollback", service="web_server").ok
    assert not env.st.writes[-1].addresses_root_cause and env.st.writes[-1].reason == "addresses no root cause"
    w.advance(120)
    assert not f.neutralised(w) and w.state.cache_hot_key > 0
    assert _do(env, "rollback", service="worker").ok
    assert env.st.writes[-1].addresses_root_cause
    w.advance(120)
    assert f.neutralised(w) and w.state.cache_hot_key == 0

    # on the web tier (the example), workers never touch the cache
    env, w, f = episode("web_server")
    assert f.root_cause(w).entity == "web_server"
    assert "cache: timeout" not in _do(env, "search_logs", service="worker", level="warn").text
    assert f"connected_clients:{sum(r.state == 'Running' for r in w.services['web_server'].replicas) * 8}" in \
        _do(env, "inspect_cache").text


def test_the_cache_uptime_is_the_pods_age_and_restarts_with_it() -> None:
    env = _fault("cache_hot_key")[0]

    def uptime() -> int:
        return next(int(line.split(":")[1]) for line in _do(env, "inspect_cache").text.splitlines()
                    if line.startswith("uptime_in_seconds:"))

    assert 3 * 86400 < uptime() < 30 * 86400  # days, like the pod's AGE in get_status (not a sentinel)
    assert _do(env, "restart", target="cache").ok
    _do(env, "wait", seconds=60)
    assert 0 < uptime() < 120


def _sessions(env) -> list[list[str]]:
    lines = _do(env, "inspect_database", view="activity").text.splitlines()[2:]
    return [line.split(None, 8) for line in lines if not line.startswith("(")]  # not the closing count


def test_a_production_database_has_background_sessions_whatever_the_incident() -> None:
    """An audit: a healthy database listed only the app's pools and the walsender, so any other
    session was the fault's (a lock holder, a VACUUM, a standby report)."""
    import srezero

    peeks = dumps = 0
    for seed in range(12):
        env = srezero.make("inc-011", seed=seed)  # a false alarm: nothing is broken
        env.reset()
        apps = [row[3] for row in _sessions(env)]
        assert apps.count("postgres_exporter") == 2
        peeks += "psql" in apps
        dumps += "pg_dump" in apps
    assert 0 < peeks < 12 and 0 < dumps < 12  # which ones a world has depends on the world alone


def test_ending_a_background_session_costs_something_and_cures_nothing() -> None:
    for seed in range(20):
        env, w, _ = _fault("lock_contention", seed)
        by_app = {row[3]: int(row[1]) for row in _sessions(env) if row[2] not in ("app", "replicator", "ops")}
        if {"pg_dump", "psql", "postgres_exporter"} <= set(by_app):
            break
    else:
        raise AssertionError("no seed with a backup and an idle psql")
    for app in ("pg_dump", "psql", "postgres_exporter"):
        assert _do(env, "terminate_session", pid=by_app[app]).ok
        assert env.st.writes[-1].reason == "addresses no root cause" and w.state.db_lock_ms > 0
    apps = [row[3] for row in _sessions(env)]
    assert "pg_dump" not in apps and "psql" in apps  # (the lock holder is a psql too)
    assert by_app["postgres_exporter"] not in [int(row[1]) for row in _sessions(env)]  # it reconnected ...
    assert apps.count("postgres_exporter") == 2  # ... at once
    assert any(e.reason == "BackupFailed" for e in w.events)
    assert sum(row[3] == "psql" for row in _sessions(env)) == 1  # only the lock holder's
