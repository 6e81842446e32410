"""A live episode over the Kubernetes backend (fake client): parser, budgets, diagnosis, verification."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from k8s_fakes import (
    NOW,
    NS,
    FakeApiServer,
    FakeProm,
    Recorder,
    ScriptedAgent,
    api_error,
    cluster_responses,
    deployment,
    pod,
    status_body,
)
from k8s_fakes import k8s as kc

from srezero.agents.runner import run_episode
from srezero.backends.k8s import BackendUnavailable, KubernetesBackend
from srezero.backends.live_episode import DEFAULT_SLOS, LiveEpisode
from srezero.cli import cli


class Clock:
    def __init__(self) -> None:
        self.t = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        self.t += 3.0  # every look at the clock is a few seconds later
        return self.t

    def sleep(self, s: float) -> None:
        self.slept.append(s)
        self.t += s


def live(responses: dict[str, Any], prom: FakeProm | None = None, **kw: Any) -> tuple[LiveEpisode, list, Clock]:
    calls: list = []
    clock = Clock()
    backend = KubernetesBackend(NS, core=Recorder("core", calls, responses), apps=Recorder("apps", calls, responses),
                                prometheus_url="http://prom:9090" if prom else None, http_get=prom,
                                clock=clock, sleep=clock.sleep, wall=lambda: NOW)
    return LiveEpisode(backend, verify_s=90.0, **kw), calls, clock


def test_scripted_agent_is_recorded_and_verified() -> None:
    env, calls, clock = live(cluster_responses())
    rec = run_episode(env, ScriptedAgent(), 0)
    r = rec["result"]
    tools = [t["tool"] for t in rec["trajectory"]]
    assert tools == ["get_status", "search_logs", "get_traces", "submit_diagnosis", "set_config", "resolve"]
    assert [t["ok"] for t in rec["trajectory"]] == [True, True, False, True, True, True]
    assert rec["trajectory"][2]["error"] == "get_traces is not supported by this backend"
    assert r["diagnosis"]["claims"][0]["entity"] == "web.env.DB_URL" and r["diagnosis"]["score"] is None
    assert r["writes"][0]["tool"] == "set_config" and r["writes"][0]["args"]["key"] == "env.DB_URL"
    assert r["resolved"] and r["invalid_actions"] == 1 and r["marks"] is None and r["ground_truth"] is None
    # verification: waited, then read every workload's availability
    assert clock.slept == [90.0]
    assert calls[-3:] == [(f"apps.list_namespaced_{kind}", {"namespace": NS})
                          for kind in ("deployment", "stateful_set", "daemon_set")]
    assert r["mitigation"]["deployments"] == {"web": "3/3", "db": "1/1"}
    assert r["mitigated"] and r["mitigation"]["slo_ok"] is None and "not checked" in r["mitigation"]["slo_note"]
    assert ("apps.patch_namespaced_deployment" in [c[0] for c in calls])
    orjson.dumps(rec)  # the record is JSON-able like a simulator record


def test_unready_deployment_is_not_mitigated() -> None:
    env, _, _ = live(cluster_responses(available=1))
    r = run_episode(env, ScriptedAgent(), 0)["result"]
    assert not r["mitigated"] and not r["mitigation"]["ready"]
    assert r["mitigation"]["reasons"] == ["deployment web has 1/3 replicas available"]


@pytest.mark.parametrize("error_rate,ok", [(0.004, True), (0.2, False)])
def test_slo_check_through_prometheus(error_rate: float, ok: bool) -> None:
    prom = FakeProm({"query": {"resultType": "vector", "result": [{"metric": {}, "value": [1, str(error_rate)]}]},
                     "alerts": {"alerts": []}})
    env, _, _ = live(cluster_responses(), prom,
                     slos={"error_rate": (DEFAULT_SLOS["error_rate"][0], 0.02)})
    obs, _ = env.reset()
    assert "incident reported" in obs.text  # no firing alert to page with
    for action in ScriptedAgent.SCRIPT:
        obs, *_ = env.step(action)
    r = env.result
    assert r["mitigated"] is ok and r["mitigation"]["slo_ok"] is ok
    assert r["mitigation"]["slo_worst"] == {"error_rate": error_rate}
    assert prom.params()["query"] == DEFAULT_SLOS["error_rate"][0].format(ns=NS, window="60s")  # verify_s 90
    if not ok:
        assert r["mitigation"]["reasons"] == ["SLO error_rate is 0.2, above 0.02"]


def test_page_comes_from_a_firing_alert() -> None:
    prom = FakeProm({"alerts": {"alerts": [{"labels": {"alertname": "HighErrorRate", "severity": "critical"},
                                            "annotations": {"summary": "5xx at 9%"}, "state": "firing",
                                            "activeAt": "t"}]}})
    env, _, _ = live(cluster_responses(), prom)
    obs, _ = env.reset()
    assert obs.text.startswith("PAGE: [FIRING critical] HighErrorRate: 5xx at 9%")
    assert env.briefing.page.startswith("[FIRING critical] HighErrorRate")


def test_budgets_truncate_and_backend_failures_do_not_crash() -> None:
    responses = cluster_responses()
    responses["core.list_namespaced_event"] = None  # a malformed answer: .items on None
    env, _, _ = live(responses, steps=3)
    env.reset()
    obs, _, term, trunc, _ = env.step("kubectl get events")
    assert not obs.ok and obs.error.startswith("backend error: AttributeError")
    obs, _, term, trunc, _ = env.step("kubectl get pods")
    assert obs.ok and not (term or trunc) and obs.steps_left == 1
    obs, _, term, trunc, info = env.step("kubectl get pods")
    assert trunc and not term and info["result"]["truncated"] and info["result"]["backend_errors"] == 1
    assert info["result"]["invalid_actions"] == 0
    obs, *_ = env.step("kubectl get pods")
    assert obs.error == "episode has ended"
    with pytest.raises(RuntimeError, match="no ground truth"):
        env.oracle_plan()


def _patch_connect(monkeypatch: pytest.MonkeyPatch, calls: list, responses: dict[str, Any],
                   seen: list | None = None) -> None:
    """``srezero run`` builds the backend itself: hand it recording clients (and note what it asked for)."""
    from srezero.backends._k8s_connect import ClusterInfo

    def connect(kubeconfig: str | None, context: str | None) -> tuple[Any, Any, ClusterInfo]:
        if seen is not None:
            seen.append((kubeconfig, context))
        return (Recorder("core", calls, responses), Recorder("apps", calls, responses),
                ClusterInfo("https://127.0.0.1:6443", context or "kind-srezero", "fake kubeconfig"))

    monkeypatch.setattr(KubernetesBackend, "_connect", staticmethod(connect))
    monkeypatch.setattr("srezero.backends.k8s.time.sleep", lambda s: None)


def test_cli_run_against_a_namespace(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    calls: list = []
    responses = cluster_responses()
    _patch_connect(monkeypatch, calls, responses)
    out = CliRunner().invoke(cli, ["run", "--backend", "k8s", "--namespace", NS, "--agent", "k8s_fakes:ScriptedAgent",
                                   "--out", str(tmp_path / "rec.json"), "--promql", "queue_depth=sum(x)"])
    assert out.exit_code == 0, out.output
    assert f"{NS} (live)" in out.output and "mitigated=True" in out.output and "get_traces is not supported" in out.output
    rec = orjson.loads((tmp_path / "rec.json").read_bytes())
    assert rec["result"]["namespace"] == NS and rec["agent"] == "k8s_fakes:ScriptedAgent"
    bad = CliRunner().invoke(cli, ["run", "--backend", "k8s", "--agent", "oracle", "--namespace", NS])
    assert bad.exit_code != 0 and "ground truth" in bad.output
    bad = CliRunner().invoke(cli, ["run", "--backend", "k8s"])
    assert bad.exit_code != 0 and "--namespace" in bad.output
    bad = CliRunner().invoke(cli, ["run", "--backend", "k8s", "--namespace", NS, "--promql", "nonsense"])
    assert bad.exit_code != 0 and "NAME=EXPR" in bad.output


# ---------------------------------------------------------------------------- the end-of-episode check
def _resolve(env: LiveEpisode) -> dict[str, Any]:
    env.reset()
    obs, _, term, _, info = env.step("resolve()")
    assert obs.ok and term and info["result"] == env.result
    return env.result


@pytest.mark.parametrize("failure,reason", [
    (api_error(403, "Forbidden", 'deployments.apps is forbidden: User "agent" cannot list'),
     'readiness could not be checked: Kubernetes API error 403 (Forbidden) in verification: deployments.apps is '
     'forbidden: User "agent" cannot list'),
    (api_error(503, "Service Unavailable", "etcd is down"),
     "readiness could not be checked: Kubernetes API error 503 (Service Unavailable) in verification: etcd is down"),
    (ConnectionResetError(104, "Connection reset by peer"),
     "readiness could not be checked: Kubernetes API unreachable in verification: ConnectionResetError"),
    (None, "readiness could not be checked: AttributeError: 'NoneType' object has no attribute 'items'")])
def test_readiness_check_failures_do_not_escape_step(failure: Any, reason: str) -> None:
    env, _, _ = live({**cluster_responses(), "apps.list_namespaced_deployment": failure})
    r = _resolve(env)
    assert r["mitigated"] is False and r["mitigation"]["ready"] is False
    assert r["mitigation"]["reasons"][0].startswith(reason)


@pytest.mark.parametrize("answer,ok,reason", [
    ({"resultType": "scalar", "result": [1, "0.5"]}, False, "SLO x is 0.5, above 0.02"),  # a scalar, not a vector
    ({"resultType": "scalar", "result": [1, "0.001"]}, True, None),
    ({"resultType": "vector", "result": [{"metric": {}, "value": "oops"}]}, False,
     "SLO x could not be checked: Prometheus returned a malformed query result"),
    ({"resultType": "vector", "result": 5}, False, "SLO x could not be checked: Prometheus returned a malformed"),
    (__import__("http.client").client.IncompleteRead(b""), False,
     "SLO x could not be checked: Prometheus at http://prom:9090 is unreachable or timed out: IncompleteRead"),
    (__import__("urllib.error").error.URLError("timed out"), False,
     "SLO x could not be checked: Prometheus at http://prom:9090 is unreachable or timed out: URLError")])
def test_slo_check_failures_do_not_escape_step(answer: Any, ok: bool, reason: str | None) -> None:
    prom = FakeProm({"query": answer, "alerts": {"alerts": []}})
    env, _, _ = live(cluster_responses(), prom, slos={"x": ("scalar(vector(0.5))", 0.02)})
    r = _resolve(env)
    assert r["mitigated"] is ok and r["mitigation"]["slo_ok"] is ok
    if reason:
        assert r["mitigation"]["reasons"][0].startswith(reason)


def test_a_failing_verification_wait_is_not_mitigated() -> None:
    env, _, _ = live(cluster_responses())

    def broken(seconds: float) -> None:
        raise OSError("clock went away")

    env.backend._sleep = broken
    r = _resolve(env)
    assert r["mitigated"] is False and r["mitigation"]["reasons"] == ["verification failed: OSError: clock went away"]


@pytest.mark.parametrize("dep,reason", [
    (deployment("web", conditions=[kc.V1DeploymentCondition(
        type="Progressing", status="False", reason="ProgressDeadlineExceeded",
        message='ReplicaSet "web-new" has timed out progressing.')], updated=1, total=4),
     'deployment web rollout failed: ProgressDeadlineExceeded (ReplicaSet "web-new" has timed out progressing.)'),
    (deployment("web", updated=1, total=4), "deployment web has 1/3 replicas updated to the current template"),
    (deployment("web", total=4), "deployment web still runs 1 old replica(s)"),
    (deployment("web", generation=5, observed=4), "deployment web: the controller has not yet observed generation 5")])
def test_a_rollout_that_is_not_complete_is_not_mitigated(dep: Any, reason: str) -> None:
    env, _, _ = live({**cluster_responses(), "apps.list_namespaced_deployment": kc.V1DeploymentList(items=[dep])})
    r = _resolve(env)
    assert r["mitigated"] is False and r["mitigation"]["ready"] is False
    assert r["mitigation"]["reasons"][0] == reason
    assert r["mitigation"]["deployments"]["web"] == "3/3"


# ---------------------------------------------------------------------------- errors during steps
def test_error_classes_in_the_episode() -> None:
    """5xx/401/timeouts are the backend's failures; 404/422/403 are the agent's invalid actions."""
    responses = cluster_responses()
    env, _, _ = live(responses)
    env.reset()
    for failure, backend in ((api_error(500, "Internal Server Error", "boom"), True),
                             (api_error(401, "Unauthorized", "token expired"), True),
                             (__import__("urllib3").exceptions.ReadTimeoutError(None, "/", "Read timed out."), True),
                             (api_error(404, "Not Found", 'pods "x" not found'), False),
                             (api_error(422, "Unprocessable Entity", "spec.replicas: Invalid value"), False)):
        responses["core.list_namespaced_pod"] = failure
        obs, *_ = env.step("kubectl get pods")
        assert obs.error.startswith("backend error: Kubernetes API" if backend else "Kubernetes API error"), obs.error
        assert obs.tool == "get_status"
    assert "boom" in env.trajectory[0]["error"] and "spec.replicas: Invalid value" in env.trajectory[-1]["error"]
    assert (env.backend_errors, env.invalid) == (3, 2)


def test_a_write_that_fails_halfway_is_recorded() -> None:
    responses = {**cluster_responses(),
                 "core.list_namespaced_pod": kc.V1PodList(items=[pod("a-1", "a"), pod("web-1", "web")]),
                 "core.create_namespaced_pod_eviction": lambda **kw: api_error(500, "Internal Server Error", "etcd")
                 if kw["name"] == "web-1" else None}
    env, _, _ = live(responses)
    env.reset()
    obs, *_ = env.step("kubectl drain node-a")
    assert obs.error == ("backend error: Kubernetes API error 500 (Internal Server Error) in drain_node: etcd "
                         "(already done before the failure: cordoned node node-a; evicted pod a-1)")
    (w,) = env.writes
    assert w["tool"] == "drain_node" and w["partial"] and w["effect"] == "cordoned node node-a; evicted pod a-1"
    assert env.backend_errors == 1 and env.invalid == 0


def test_kubectl_logs_previous_reads_the_previous_container() -> None:
    env, calls, _ = live(cluster_responses())
    env.reset()
    for command, previous in (("kubectl logs web -p", True), ("kubectl logs web --previous --tail 5", True),
                              ("kubectl logs web", False)):
        calls.clear()
        obs, *_ = env.step(command)
        assert obs.ok
        log_calls = [kw for name, kw in calls if name == "core.read_namespaced_pod_log"]
        assert log_calls and all(kw.get("previous", False) is previous for kw in log_calls)


# ---------------------------------------------------------------------------- page and finish
def test_page_is_the_first_firing_alert_of_this_namespace() -> None:
    def alert(name: str, state: str, ns: str | None) -> dict[str, Any]:
        return {"labels": {"alertname": name, "severity": "critical", **({"namespace": ns} if ns else {})},
                "annotations": {"summary": name.lower()}, "state": state, "activeAt": "t"}

    prom = FakeProm({"alerts": {"alerts": [alert("Maybe", "pending", NS), alert("NodeDown", "firing", None),
                                           alert("WebDown", "firing", NS), alert("Elsewhere", "firing", "other")]}})
    env, _, _ = live(cluster_responses(), prom)
    assert env.reset()[0].text.startswith("PAGE: [FIRING critical] WebDown: webdown")
    prom.answers["alerts"] = {"alerts": [alert("Maybe", "pending", NS), alert("NodeDown", "firing", None)]}
    assert env.reset()[0].text.startswith("PAGE: [FIRING critical] NodeDown")
    prom.answers["alerts"] = {"alerts": [alert("Maybe", "pending", NS)]}
    assert "incident reported by a user" in env.reset()[0].text.splitlines()[0]
    prom.answers["alerts"] = __import__("http.client").client.IncompleteRead(b"")
    assert "incident reported by a user" in env.reset()[0].text.splitlines()[0]


def test_finish_ends_an_unfinished_episode_as_truncated() -> None:
    env, _, clock = live(cluster_responses())
    with pytest.raises(RuntimeError, match="reset"):
        env.finish()
    rec = run_episode(env, ScriptedAgent(), 0, max_steps=2)  # the harness's cap comes before the budget
    r = rec["result"]
    assert rec["status"] == "ok" and r["truncated"] and not r["resolved"] and r["steps"] == 2
    assert r["mitigated"] and clock.slept == [90.0]  # verified once
    assert env.finish() is env.result and clock.slept == [90.0]  # idempotent: no second verification
    obs, _, term, trunc, info = env.step("kubectl get pods")
    assert obs.error == "episode has ended" and trunc and not term and info["result"] == r


# ---------------------------------------------------------------------------- a real client, a fake API server
@pytest.fixture
def api_server():
    kc.CoreV1Api, kc.AppsV1Api  # noqa: B018  # the client's lazy import (~1 s, once) belongs to setup, not the test
    server = FakeApiServer()
    yield server
    server.close()


def test_a_request_timeout_is_an_error_observation(api_server: FakeApiServer, tmp_path) -> None:
    """Through a kubeconfig (the backend's own client): one attempt, bounded by the request timeout."""
    api_server.route("GET", r"/api/v1/namespaces/shop/pods", hang=True)
    api_server.route("GET", r"/api/v1/namespaces/shop$", 200, {"kind": "Namespace", "metadata": {"name": NS}})
    default_host = kc.Configuration.get_default_copy().host
    backend = KubernetesBackend(NS, kubeconfig=api_server.kubeconfig(tmp_path / "kubeconfig"), request_timeout=0.2,
                                sleep=lambda s: None)
    assert kc.Configuration.get_default_copy().host == default_host  # the process-wide default is untouched
    env = LiveEpisode(backend, verify_s=0)
    env.reset()
    obs, *_ = env.step('get_status(service="web")')  # the route hangs: only the timeout ends the call
    assert obs.error.startswith("backend error: Kubernetes API timed out (request timeout 0.2s) in get_status")
    assert (env.backend_errors, env.invalid) == (1, 0)
    assert [c for c in api_server.calls if "/pods" in c[1]] == [("GET", "/api/v1/namespaces/shop/pods?labelSelector=app%3Dweb")]


def test_real_client_errors_carry_the_status_message(api_server: FakeApiServer) -> None:
    core, apps = api_server.clients()
    backend = KubernetesBackend(NS, core=core, apps=apps, sleep=lambda s: None)
    env = LiveEpisode(backend, verify_s=0)
    env.reset()
    api_server.route("GET", r"/api/v1/namespaces/shop/pods", 503, status_body(503, "ServiceUnavailable", "apiserver overloaded"))
    obs, *_ = env.step("kubectl get pods")
    assert obs.error == ("backend error: Kubernetes API error 503 (Service Unavailable) in get_status: "
                         "apiserver overloaded")
    api_server.route("GET", r"/apis/apps/v1/namespaces/shop/deployments/ghost$", 404,
                     status_body(404, "NotFound", 'deployments.apps "ghost" not found'))
    obs, *_ = env.step("kubectl scale deploy/ghost --replicas 2")
    assert obs.error == "no deployment 'ghost' in namespace shop"
    assert (env.backend_errors, env.invalid) == (1, 1)
    api_server.route("GET", r"/apis/apps/v1/namespaces/shop/deployments$", 403,
                     status_body(403, "Forbidden", "cannot list deployments"))
    obs, _, term, _, info = env.step("resolve()")  # the end-of-episode check fails: recorded, not raised
    assert term and info["result"]["mitigated"] is False
    assert info["result"]["mitigation"]["reasons"] == [
        "readiness could not be checked: Kubernetes API error 403 (Forbidden) in verification: cannot list deployments"]


def test_a_malformed_kubeconfig_is_a_clean_error(tmp_path) -> None:
    bad = tmp_path / "kubeconfig"
    bad.write_text("garbage: [\n")
    with pytest.raises(BackendUnavailable, match="cannot load a Kubernetes configuration"):
        KubernetesBackend(NS, kubeconfig=str(bad))
    bad.write_text("- just\n- a list\n")
    with pytest.raises(BackendUnavailable, match="cannot load a Kubernetes configuration"):
        KubernetesBackend(NS, kubeconfig=str(bad))
