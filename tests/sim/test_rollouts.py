"""Rolling updates halt on a pod that does not come up, as a Kubernetes Deployment's do
(srezero.sim.changes.roll): checked on twin worlds of the control task (tests/sim/twins.py).

Every way pods roll goes through one rule: a release or rollback, a restart of a service, a change to an
``env.*`` key. The next pod restarts only once the previous is up again, so a value or a release that
stops pods starting breaks the first pod the rollout reaches and no other; after the progress deadline the
service reports ``ProgressDeadlineExceeded``, and a newer rollout supersedes the stalled one. A healthy
rollout's pace (one pod down at a time) is checked in tests/sim/test_writes.py.
"""

from __future__ import annotations

import pytest

from srezero.faults.app import ship
from srezero.sim import changes
from srezero.sim.components import Event
from srezero.sim.world import World
from tests.sim.twins import SEEDS, act, advance, at, twins

WEB = "web_server"


def wrong_url(w: World) -> str:
    """The web tier's DATABASE_URL with the wrong port: the process exits at start-up (connection refused)."""
    return str(w.services[WEB].config["env.DATABASE_URL"]).replace(":5432", ":5433")


def running(w: World) -> int:
    return sum(1 for r in w.services[WEB].replicas if r.state == "Running")


def watch(plain: World, touched: World, seconds: float) -> tuple[list[int], list[int], float]:
    """Every 5 s for ``seconds``: the running web replicas of ``touched`` and the ready replicas its last
    tick served from; and the most its web error rate exceeded its twin's at any tick in that time."""
    ready, served, excess = [], [], 0.0
    for _ in range(int(seconds / 5)):
        advance(5.0, plain, touched)
        ready.append(running(touched))
        served.append(int(at(touched, WEB, "ready_replicas")))
        excess = max(excess, at(touched, WEB, "error_rate") - at(plain, WEB, "error_rate"))
    return ready, served, excess


def killed_since(w: World, t: float) -> list[str]:
    return [e.entity for e in w.events if e.reason == "Killing" and e.at >= t]


def deadline_warnings(w: World) -> list[Event]:
    return [e for e in w.events if e.reason == "ProgressDeadlineExceeded"]


@pytest.mark.parametrize("seed", SEEDS)
def test_a_wrong_database_url_breaks_the_first_pod_and_the_others_keep_serving(seed: int) -> None:
    plain, touched = twins(seed)
    web = touched.services[WEB]
    n, t0 = len(web.replicas), touched.now
    act(plain, touched, "set_config", service=WEB, key="env.DATABASE_URL", value=wrong_url(touched))
    ready, _, excess = watch(plain, touched, changes.PROGRESS_DEADLINE_S + 60.0)  # eleven minutes
    assert min(ready) == max(ready) == n - 1  # the rollout never takes a second pod down
    assert killed_since(touched, t0) == [web.replicas[0].name]
    assert [r.state for r in web.replicas] == ["CrashLoopBackOff"] + ["Running"] * (n - 1)
    assert excess < 0.1 / n  # the pods still running serve the traffic: well under one pod's share fails


@pytest.mark.parametrize("seed", SEEDS)
def test_a_rollout_whose_pod_does_not_come_up_reports_progress_deadline_exceeded_after_600s(seed: int) -> None:
    plain, touched = twins(seed)
    t0 = touched.now
    act(plain, touched, "set_config", service=WEB, key="env.DATABASE_URL", value=wrong_url(touched))
    advance(changes.PROGRESS_DEADLINE_S - 60.0, plain, touched)
    assert deadline_warnings(touched) == []
    advance(120.0, plain, touched)
    [warning] = deadline_warnings(touched)
    assert (warning.kind, warning.entity) == ("Warning", WEB)
    assert warning.message == f'deployment "{WEB}" exceeded its progress deadline'
    assert warning.at == pytest.approx(t0 + changes.PROGRESS_DEADLINE_S, abs=30.0)
    assert deadline_warnings(plain) == []


@pytest.mark.parametrize("seed", SEEDS)
def test_restarting_a_service_whose_pods_cannot_start_keeps_the_running_pods_serving(seed: int) -> None:
    plain, touched = twins(seed)
    for w in (plain, touched):  # a configmap edit nobody rolled out: the running processes read it at start-up
        w.services[WEB].config["env.DATABASE_URL"] = wrong_url(w)
    n = len(touched.services[WEB].replicas)
    act(plain, touched, "restart", target=WEB)
    ready, _, excess = watch(plain, touched, changes.PROGRESS_DEADLINE_S + 60.0)
    assert min(ready) == ready[-1] == n - 1 and running(plain) == n
    assert excess < 0.1 / n
    assert len(deadline_warnings(touched)) == 1


@pytest.mark.parametrize("seed", SEEDS)
def test_correcting_the_value_rolls_every_pod_onto_it_one_at_a_time_and_supersedes_the_stalled_rollout(
        seed: int) -> None:
    plain, touched = twins(seed)
    web = touched.services[WEB]
    n, right = len(web.replicas), web.config["env.DATABASE_URL"]
    act(plain, touched, "set_config", service=WEB, key="env.DATABASE_URL", value=wrong_url(touched))
    _, stalled, _ = watch(plain, touched, 120.0)
    t1 = touched.now
    act(plain, touched, "set_config", service=WEB, key="env.DATABASE_URL", value=right)
    _, fixed, _ = watch(plain, touched, n * (web.startup_s + changes.ROLLOUT_GAP_S) + 60.0)
    assert min(stalled + fixed) == n - 1 and fixed[-1] == n  # never more than one pod down
    assert sorted(killed_since(touched, t1)) == sorted(r.name for r in web.replicas)  # each rolled once
    advance(changes.PROGRESS_DEADLINE_S, plain, touched)
    assert deadline_warnings(touched) == []  # the stalled rollout was superseded, so it never times out
    assert running(touched) == n
    assert at(touched, WEB, "error_rate") == pytest.approx(at(plain, WEB, "error_rate"), abs=0.01)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_release_that_crashes_on_start_stops_at_its_first_pod_and_the_rest_keep_the_old_release(
        seed: int) -> None:
    plain, touched = twins(seed)
    web = touched.services[WEB]
    n, old = len(web.replicas), web.deploy.version
    new = ship(touched, WEB, "crash_on_start", 0.0).version
    ready, _, excess = watch(plain, touched, changes.PROGRESS_DEADLINE_S + 60.0)
    assert min(ready) == ready[-1] == n - 1
    assert [(r.version, r.state) for r in web.replicas] == [(new, "CrashLoopBackOff")] + [(old, "Running")] * (n - 1)
    assert excess < 0.1 / n
    assert len(deadline_warnings(touched)) == 1


@pytest.mark.parametrize("seed", SEEDS)
def test_where_the_database_checks_credentials_a_wrong_url_still_breaks_only_the_pod_it_restarts(seed: int) -> None:
    plain, touched = twins(seed)
    for w in (plain, touched):  # a password rotation every client has picked up: running clients get rechecked
        w.state.db_credential = str(w.services[WEB].config["env.CREDENTIALS_VERSION"])
        w.services["worker"].config["env.CREDENTIALS_VERSION"] = w.state.db_credential
    n = len(touched.services[WEB].replicas)
    act(plain, touched, "set_config", service=WEB, key="env.DATABASE_URL", value=wrong_url(touched))
    ready, _, _ = watch(plain, touched, 300.0)
    assert min(ready) == ready[-1] == n - 1 and running(plain) == n


@pytest.mark.parametrize("seed", SEEDS)
def test_a_stalled_rollout_goes_on_once_its_pod_comes_up(seed: int) -> None:
    plain, touched = twins(seed)
    web = touched.services[WEB]
    first, rest = web.replicas[0], web.replicas[1:]
    right, t0 = web.config["env.DATABASE_URL"], touched.now
    act(plain, touched, "set_config", service=WEB, key="env.DATABASE_URL", value=wrong_url(touched))
    advance(changes.PROGRESS_DEADLINE_S + 60.0, plain, touched)  # stalled, and reported
    web.config["env.DATABASE_URL"] = right  # fixed behind the rollout's back: the pod's next try succeeds
    advance(600.0, plain, touched)
    assert first.state == "Running" and len(deadline_warnings(touched)) == 1
    resumed = min(e.at for e in touched.events if e.reason == "Killing" and e.entity != first.name and e.at >= t0)
    assert resumed > t0 + changes.PROGRESS_DEADLINE_S  # nothing else was touched while the first pod was down
    assert sorted(killed_since(touched, t0)) == sorted(r.name for r in web.replicas)  # then it went on
    assert all(r.state == "Running" for r in rest)


@pytest.mark.parametrize("seed", SEEDS)
def test_where_the_database_checks_credentials_a_wrong_credential_breaks_only_the_pod_it_restarts(seed: int) -> None:
    plain, touched = twins(seed)
    for w in (plain, touched):  # the database checks the version every client started with
        w.state.db_credential = str(w.services[WEB].config["env.CREDENTIALS_VERSION"])
        for name in (WEB, "worker"):
            w.services[name].config["env.CREDENTIALS_VERSION"] = w.state.db_credential
            for rep in w.services[name].replicas:
                rep.cred = w.state.db_credential
    n = len(touched.services[WEB].replicas)
    act(plain, touched, "set_config", service=WEB, key="env.CREDENTIALS_VERSION", value="v999")
    ready, _, excess = watch(plain, touched, 300.0)
    assert min(ready) == ready[-1] == n - 1  # running pods keep the credential they started with
    assert touched.services[WEB].replicas[0].state == "CrashLoopBackOff"
    assert excess < 0.1 / n


@pytest.mark.parametrize("seed", SEEDS)
def test_rolling_back_a_release_stalled_at_its_first_pod_restarts_only_that_pod(seed: int) -> None:
    plain, touched = twins(seed)
    web = touched.services[WEB]
    ship(touched, WEB, "crash_on_start", 0.0)
    advance(120.0, plain, touched)  # the first pod crash-loops; the rollout waits for it
    t0 = touched.now
    act(plain, touched, "rollback", service=WEB)
    advance(300.0, plain, touched)
    assert killed_since(touched, t0) == [web.replicas[0].name]  # the others already run the target release
    assert all(r.state == "Running" for r in web.replicas)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_pods_age_starts_at_its_last_rollout_past_or_live(seed: int) -> None:
    """AGE is the time since the pod's last Killing event, whether its rollout was recorded in the past or
    ran live: a past release's pods must not read days old beside a live release's minutes (a blind player
    told the culprit release from a harmless one by AGE alone)."""
    plain, touched = twins(seed)
    web = touched.services[WEB]
    changes.roll_out(touched, web, "v9.9.9", touched.now - 1800.0)
    past = {r.name: touched.now - r.age_s(touched.now) for r in web.replicas}
    killings = {e.entity: e.at for e in touched.events if e.reason == "Killing"}
    assert past == {name: killings[name] for name in past}
    assert max(r.age_s(touched.now) for r in web.replicas) <= 1800.0
    act(plain, touched, "restart", target=WEB)
    advance(300.0, plain, touched)
    killings = {e.entity: e.at for e in touched.events if e.reason == "Killing"}
    for r in web.replicas:
        assert touched.now - r.age_s(touched.now) == pytest.approx(killings[r.name])


@pytest.mark.parametrize("seed", SEEDS)
def test_a_replaced_pod_starts_with_no_restarts_and_a_crashed_container_counts_one(seed: int) -> None:
    plain, touched = twins(seed)
    pod = touched.services[WEB].replicas[0]
    before = pod.restarts  # a noise crash may have come first
    touched.restart_replica(pod, reason="Error", by_agent=False)  # the container crashed: the pod counts it
    assert pod.restarts == before + 1
    act(plain, touched, "restart", target=pod.name)  # deleted and recreated: a new pod
    assert pod.restarts == 0 and pod.age_s(touched.now) < 60.0
