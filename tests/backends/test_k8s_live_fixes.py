"""The Kubernetes backend on a real cluster's terms: live names in fenced actions, SLO windows inside the
verification wait, no vacuous verification, which cluster is used, the tools offered, RBAC, crash-looping
logs, the page, dry runs and the last node, live records in reports, connect timeouts (fake clients only)."""

from __future__ import annotations

import contextlib
import datetime as dt
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
    api_error,
    cluster_responses,
    daemonset,
    deployment,
    event,
    new_style_event,
    node,
    not_found,
    pod,
    statefulset,
    two_nodes,
)
from k8s_fakes import k8s as kc
from test_k8s_live_episode import Clock, _patch_connect

from srezero.backends.k8s import BackendUnavailable, KubernetesBackend, PermissionDenied
from srezero.backends.live_episode import DEFAULT_SLOS, LiveEpisode
from srezero.cli import cli
from srezero.tools.registry import ToolError, load_tools

RBAC = 'pods is forbidden: User "system:serviceaccount:shop:agent" cannot list resource "pods" in API group "" ' \
       'in the namespace "shop"'


def backend(responses: dict[str, Any], prom: FakeProm | None = None, clock: Clock | None = None,
            **kw: Any) -> tuple[KubernetesBackend, list]:
    calls: list = []
    clock = clock or Clock()
    b = KubernetesBackend(NS, core=Recorder("core", calls, responses), apps=Recorder("apps", calls, responses),
                          prometheus_url="http://prom:9090" if prom else None, http_get=prom, clock=clock,
                          sleep=clock.sleep, wall=lambda: NOW, **kw)
    return b, calls


def live(responses: dict[str, Any], prom: FakeProm | None = None, verify_s: float = 90.0,
         **kw: Any) -> tuple[LiveEpisode, list, Clock]:
    clock = Clock()
    b, calls = backend(responses, prom, clock, **{k: v for k, v in kw.items() if k in ("dry_run",)})
    return LiveEpisode(b, verify_s=verify_s, **{k: v for k, v in kw.items() if k != "dry_run"}), calls, clock


def call(b: KubernetesBackend, tool: str, **args: Any):
    return b.call(tool, load_tools()[tool].validate(args))


def resolve(env: LiveEpisode, before_resolve: Any = None) -> dict[str, Any]:
    env.reset()
    if before_resolve is not None:
        before_resolve()
    obs, _, term, _, info = env.step("resolve()")
    assert obs.ok and term
    return info["result"]


# ---------------------------------------------------------------------------- 1: fenced kubectl, live names
@pytest.mark.parametrize("action", ["`kubectl rollout restart deploy/db`", "```\nkubectl rollout restart deploy/db\n```",
                                    "```bash\nkubectl rollout restart deploy/db\n```"])
def test_fenced_or_backticked_kubectl_keeps_the_clusters_names(action: str) -> None:
    env, calls, _ = live(cluster_responses())
    env.reset()
    calls.clear()
    obs, *_ = env.step(action)
    assert obs.ok, obs.error
    assert obs.tool == "restart" and env.trajectory[-1]["args"] == {"target": "db"}  # not the simulator's database
    assert [c[1]["name"] for c in calls if c[0] == "apps.patch_namespaced_deployment"] == ["db"]


def test_fenced_kubectl_logs_previous_and_the_simulator_parser_is_unchanged() -> None:
    from srezero.tools.parse import parse_action

    env, calls, _ = live(cluster_responses())
    env.reset()
    calls.clear()
    obs, *_ = env.step("```bash\nkubectl logs db -p\n```")
    assert obs.ok, obs.error
    logs = [kw for name, kw in calls if name == "core.read_namespaced_pod_log"]
    assert calls[0] == ("core.list_namespaced_pod", {"namespace": NS, "label_selector": "app=db"})
    assert logs and all(kw["previous"] is True for kw in logs)
    # outside a live episode the same text still means the simulator's database
    assert parse_action("`kubectl rollout restart deploy/db`") == ("restart", {"target": "database"})


# ---------------------------------------------------------------------------- 2: SLO window and --verify-s
@pytest.mark.parametrize("verify_s,window", [(300.0, "150s"), (90.0, "60s"), (600.0, "300s")])
def test_the_slo_rate_window_lies_inside_the_verification_wait(verify_s: float, window: str) -> None:
    prom = FakeProm({"query": {"resultType": "vector", "result": [{"metric": {}, "value": [1, "0.001"]}]},
                     "alerts": {"alerts": []}})
    env, _, clock = live(cluster_responses(), prom, verify_s=verify_s,
                         slos={"error_rate": DEFAULT_SLOS["error_rate"]})
    r = resolve(env)
    query = prom.params()["query"]
    assert f"[{window}]" in query and "[5m]" not in query
    assert r["mitigation"]["slo_window_s"] == int(window[:-1]) and clock.slept == [verify_s]
    assert r["mitigated"]


def test_cli_sets_the_verification_wait_and_the_slos(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    from srezero.commands.run import _slos

    _patch_connect(monkeypatch, [], cluster_responses())
    out = CliRunner().invoke(cli, ["run", "--backend", "k8s", "--namespace", NS, "--agent", "k8s_fakes:ScriptedAgent",
                                   "--verify-s", "7", "--out", str(tmp_path / "rec.json")])
    assert out.exit_code == 0, out.output
    assert orjson.loads((tmp_path / "rec.json").read_bytes())["result"]["mitigation"]["verify_window_s"] == 7.0
    assert _slos(('err=sum(rate(x{{code=~"5.."}}[{window}])) <= 0.05',)) == {
        "err": ('sum(rate(x{{code=~"5.."}}[{window}]))', 0.05)}
    assert _slos(("none",)) == {} and _slos(()) is None
    bad = CliRunner().invoke(cli, ["run", "--backend", "k8s", "--namespace", NS, "--slo", "err=sum(x)"])
    assert bad.exit_code != 0 and "NAME=EXPR<=LIMIT" in bad.output


# ---------------------------------------------------------------------------- 3: no vacuous verification
def test_a_namespace_that_does_not_exist_fails_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(BackendUnavailable, match="namespace shop does not exist"):
        backend({"core.read_namespace": not_found()}, check_namespace=True)
    _, calls = backend({"core.read_namespace": api_error(403, "Forbidden", "cannot get namespaces")},
                       check_namespace=True)  # may not read namespaces: not proof it is missing
    assert calls == [("core.read_namespace", {"name": NS})]
    with pytest.raises(BackendUnavailable, match="cannot check namespace shop"):
        backend({"core.read_namespace": api_error(503, "Service Unavailable", "etcd")}, check_namespace=True)
    responses = {**cluster_responses(), "core.read_namespace": not_found()}
    _patch_connect(monkeypatch, [], responses)  # a backend srezero run builds checks by default
    out = CliRunner().invoke(cli, ["run", "--backend", "k8s", "--namespace", NS, "--agent", "k8s_fakes:ScriptedAgent"])
    assert out.exit_code != 0 and "namespace shop does not exist" in out.output


def test_an_empty_namespace_is_not_mitigated() -> None:
    r = resolve(live({**cluster_responses(), "apps.list_namespaced_deployment": kc.V1DeploymentList(items=[])})[0])
    assert r["mitigated"] is False and r["mitigation"]["ready"] is False
    assert r["mitigation"]["reasons"] == ["no deployments, statefulsets or daemonsets in namespace shop: nothing to verify"]


@pytest.mark.parametrize("key,obj,reason", [
    ("apps.list_namespaced_stateful_set", statefulset("postgres", replicas=1, ready=0),
     "statefulset postgres has 0/1 replicas available"),
    ("apps.list_namespaced_stateful_set", statefulset("postgres", replicas=2, ready=2, current="r1", update="r2"),
     "statefulset postgres is still rolling to revision r2 (2/2 updated)"),
    ("apps.list_namespaced_daemon_set", daemonset("agent", desired=3, available=2),
     "daemonset agent has 2/3 pods available"),
    ("apps.list_namespaced_daemon_set", daemonset("agent", desired=3, available=3, updated=1),
     "daemonset agent has 1/3 pods updated to the current template")])
def test_statefulsets_and_daemonsets_are_verified(key: str, obj: Any, reason: str) -> None:
    items = kc.V1StatefulSetList(items=[obj]) if "stateful" in key else kc.V1DaemonSetList(items=[obj])
    r = resolve(live({**cluster_responses(), key: items})[0])
    assert r["mitigated"] is False and r["mitigation"]["reasons"] == [reason]
    name = obj.metadata.name
    assert name in r["mitigation"]["statefulsets" if "stateful" in key else "daemonsets"]
    healthy = statefulset("postgres") if "stateful" in key else daemonset("agent")
    items = kc.V1StatefulSetList(items=[healthy]) if "stateful" in key else kc.V1DaemonSetList(items=[healthy])
    assert resolve(live({**cluster_responses(), key: items})[0])["mitigated"] is True


def test_an_slo_with_no_data_is_unknown_not_a_pass() -> None:
    prom = FakeProm({"query": {"resultType": "vector", "result": []}, "alerts": {"alerts": []}})
    r = resolve(live(cluster_responses(), prom, slos={"error_rate": DEFAULT_SLOS["error_rate"]})[0])
    assert r["mitigated"] is False and r["mitigation"]["slo_ok"] is False
    assert r["mitigation"]["slo_worst"] == {"error_rate": None}
    assert r["mitigation"]["reasons"][0].startswith("SLO error_rate is unknown: the query returned no data (sum(rate(")


def test_zero_replicas_counts_only_if_the_episode_took_it_there() -> None:
    responses = cluster_responses()
    env, _, _ = live(responses)

    def scale_web_to_zero() -> None:
        responses["apps.list_namespaced_deployment"] = kc.V1DeploymentList(items=[
            deployment("web", replicas=0, available=0), deployment("db", replicas=1, available=1)])

    r = resolve(env, scale_web_to_zero)  # web had 3 replicas at reset
    assert r["mitigated"] is False
    assert r["mitigation"]["reasons"] == ["deployment web is scaled to zero (it had 3 replica(s) when the episode started)"]
    r = resolve(env)  # now it was already at zero when the episode started: switched off on purpose
    assert r["mitigated"] is True and r["mitigation"]["deployments"]["web"] == "0/0"


# ---------------------------------------------------------------------------- 4: which cluster
@pytest.fixture
def api_server():
    kc.CoreV1Api, kc.AppsV1Api  # noqa: B018  # the client's lazy import belongs to setup
    server = FakeApiServer()
    server.route("GET", r"/api/v1/namespaces/shop$", 200, {"kind": "Namespace", "metadata": {"name": NS}})
    yield server
    server.close()


def _fake_incluster(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    used: list[str] = []

    def load_incluster_config(client_configuration: Any = None, **_: Any) -> None:
        used.append("in-cluster")
        client_configuration.host = "https://10.96.0.1:443"

    monkeypatch.setattr("kubernetes.config.load_incluster_config", load_incluster_config)
    return used


def test_kubeconfig_comes_before_in_cluster_config(api_server: FakeApiServer, tmp_path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    used = _fake_incluster(monkeypatch)
    monkeypatch.setenv("KUBECONFIG", api_server.kubeconfig(tmp_path / "kubeconfig"))
    b = KubernetesBackend(NS, sleep=lambda s: None)
    assert used == [] and b.cluster.host == api_server.url and b.cluster.context == "fake"
    assert ("GET", "/api/v1/namespaces/shop") in api_server.calls  # the namespace was checked at start
    b = KubernetesBackend(NS, kubeconfig=str(tmp_path / "kubeconfig"), context="fake", sleep=lambda s: None)
    assert b.cluster.line(NS) == f"API server {api_server.url}, context fake, namespace shop (from {tmp_path / 'kubeconfig'})"
    with pytest.raises(BackendUnavailable, match="cannot load a Kubernetes configuration"):
        KubernetesBackend(NS, kubeconfig=str(tmp_path / "kubeconfig"), context="prod")  # no such context: no fallback
    assert used == []
    # no kubeconfig anywhere and none asked for: only then the pod's service account
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    b = KubernetesBackend(NS, check_namespace=False, sleep=lambda s: None)
    assert used == ["in-cluster"] and b.cluster.host == "https://10.96.0.1:443" and b.cluster.context == "(in-cluster)"


def test_cli_passes_the_context_and_prints_the_cluster_first(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list = []
    _patch_connect(monkeypatch, [], cluster_responses(), seen)
    out = CliRunner().invoke(cli, ["run", "--backend", "k8s", "--namespace", NS, "--context", "kind-srezero",
                                   "--agent", "k8s_fakes:ScriptedAgent", "--quiet"])
    assert out.exit_code == 0, out.output
    assert seen == [(None, "kind-srezero")]
    assert out.stderr.splitlines()[0] == ("k8s: API server https://127.0.0.1:6443, context kind-srezero, namespace shop "
                                          "(from fake kubeconfig)")


# ---------------------------------------------------------------------------- 5: the tools offered
def test_only_served_tools_are_offered_in_live_words() -> None:
    env, _, _ = live(cluster_responses())
    specs = {s["name"]: s for s in env.tool_specs()}
    assert set(specs) == set(KubernetesBackend.TOOLS) | {"submit_diagnosis", "resolve"}
    assert "get_traces" not in specs and "wait" in specs
    assert "ConfigMap <service>-config" in specs["set_config"]["description"]
    assert "reloaded within seconds" not in specs["set_config"]["description"]
    assert specs["scale"]["parameters"]["properties"]["service"]["description"].startswith("deployment name")
    assert "real time" in specs["wait"]["description"]
    assert specs["submit_diagnosis"] == load_tools()["submit_diagnosis"].public()
    assert load_tools()["scale"].public()["parameters"]["properties"]["service"]["description"] == "web_server or worker"
    env.reset()
    obs, *_ = env.step("get_tracez()")
    assert "available tools: get_alerts, get_topology, get_status" in obs.error and "get_traces" not in obs.error
    obs, *_ = env.step("get_statuz()")  # a typo of a served tool is named
    assert obs.error.startswith("unknown tool 'get_statuz'; did you mean get_status? available tools: get_alerts")


def test_wait_sleeps_then_shows_the_rollouts() -> None:
    prom = FakeProm({"alerts": {"alerts": [
        {"labels": {"alertname": "Watchdog", "severity": "none"}, "state": "firing"},
        {"labels": {"alertname": "HighErrorRate", "severity": "critical", "namespace": NS}, "state": "firing"}]}})
    env, _, clock = live({**cluster_responses(available=1),
                          "apps.list_namespaced_stateful_set": kc.V1StatefulSetList(items=[statefulset("postgres")])},
                         prom)
    env.reset()
    obs, *_ = env.step("wait(seconds=45)")
    assert obs.ok and clock.slept == [45] and env.invalid == 0
    assert obs.text.splitlines() == [
        "waited 45 s",
        "deployment/db 1/1 available, rolled out",
        "deployment/web 1/3 available: deployment web has 1/3 replicas available",
        "statefulset/postgres 1/1 available, rolled out",
        "firing alerts: HighErrorRate"]
    assert obs.data["workloads"]["deployment/web"]["available"] == 1


def test_a_watched_wait_polls_prometheus_until_every_series_is_past_the_bound() -> None:
    samples = iter([(0.4, 0.2), (0.3, 0.05), (0.02, 0.01)])  # two pods' error ratios, one poll after another

    def vector() -> dict:
        return {"resultType": "vector", "result": [{"metric": {"pod": f"web-{i}"}, "value": [0, str(v)]}
                                                   for i, v in enumerate(next(samples))]}

    env, _, clock = live(cluster_responses(available=3), FakeProm({"query": vector, "alerts": {"alerts": []}}))
    env.reset()
    obs, *_ = env.step("wait(seconds=600, target='web', metric='error_rate', below=0.1)")
    assert obs.ok and clock.slept == [30.0, 30.0]  # the first poll is at once; web-0 still at 0.3 on the second
    assert obs.text.startswith("waited ") and " s of 600: error_rate of web is 0.02, below 0.1\n" in obs.text
    assert obs.data["met"] and obs.data["value"] == 0.02 and "deployment/web" in obs.data["workloads"]
    samples = iter([(0.4,)] * 3)
    obs, *_ = env.step("wait(seconds=70, target='web', metric='error_rate', below=0.1)")
    assert len(clock.slept) == 4 and sum(clock.slept[2:]) <= 70  # never sleeps past the seconds asked
    assert "(the watch ran out): error_rate of web is 0.4, not below 0.1" in obs.text and not obs.data["met"]
    bare, _, _ = live(cluster_responses(available=3))
    bare.reset()
    obs, *_ = bare.step("wait(seconds=60, target='web', metric='error_rate', below=0.1)")
    assert obs.error == ("a watch (wait with target and metric) is not supported by this backend without a "
                         "Prometheus URL (--prometheus-url)")


# ---------------------------------------------------------------------------- 6: RBAC
def test_topology_without_node_permission_says_nodes_are_not_visible() -> None:
    b, _ = backend({"apps.list_namespaced_deployment": kc.V1DeploymentList(items=[deployment("web")]),
                    "core.list_node": api_error(403, "Forbidden", 'nodes is forbidden: User "x" cannot list resource '
                                                                  '"nodes" in API group "" at the cluster scope')})
    out = call(b, "get_topology")
    assert "web: 3/3 ready" in out.text and "nodes: not visible" in out.text and out.data["nodes"] is None
    b, _ = backend({"apps.read_namespaced_deployment": deployment("web"),
                    "core.read_namespaced_config_map": api_error(403, "Forbidden", 'configmaps "web-config" is '
                                                                 'forbidden: User "x" cannot get resource "configmaps"')})
    out = call(b, "get_config", service="web")
    assert out.data["env.DB_URL"] == "postgres://db" and "not shown: the credentials may not read configmaps" in out.text


def test_rbac_refusals_are_not_the_agents_invalid_actions() -> None:
    responses = cluster_responses()
    env, _, _ = live(responses)
    env.reset()
    responses["core.list_namespaced_pod"] = api_error(403, "Forbidden", RBAC)
    obs, *_ = env.step("kubectl get pods")
    assert obs.error.startswith("permission denied by the cluster's RBAC (the backend's credentials lack this "
                                "permission; not counted as an invalid action): Kubernetes API error 403 (Forbidden) "
                                "in get_status: pods is forbidden")
    responses["core.list_namespaced_pod"] = api_error(403, "Forbidden", 'pods "web-9" is forbidden: exceeded quota: '
                                                      "compute, requested: pods=1, used: pods=10, limited: pods=10")
    obs, *_ = env.step("kubectl get pods")  # a quota's 403 is about the action, not the credentials
    assert obs.error.startswith("Kubernetes API error 403")
    assert (env.permission_denied, env.invalid) == (1, 1)
    assert env.finish()["permission_denied"] == 1
    b, _ = backend({"core.list_namespaced_pod": api_error(403, "Forbidden", RBAC)})
    with pytest.raises(PermissionDenied):
        call(b, "get_status")


# ---------------------------------------------------------------------------- 8: crash-looping logs
def test_logs_of_a_waiting_container_say_why_and_how_to_read_the_last_run() -> None:
    waiting = api_error(400, "Bad Request", 'container "web" in pod "web-1" is waiting to start: CrashLoopBackOff')
    b, _ = backend({"core.list_namespaced_pod": kc.V1PodList(items=[pod("web-1", "web", reason="CrashLoopBackOff"),
                                                                   pod("web-2", "web")]),
                    "core.read_namespaced_pod_log": lambda **kw: waiting if kw["name"] == "web-1" and not
                    kw.get("previous") else "2026-03-01T11:59:00Z ERROR boom\n"})
    out = call(b, "search_logs", service="web")
    assert out.text.splitlines() == [
        "1 line(s) from web", "2026-03-01T11:59:00Z web-2 ERROR boom", "notes:",
        '  web-1: container "web" in pod "web-1" is waiting to start: CrashLoopBackOff (the crashed container\'s '
        "last run: kubectl logs web-1 -p)"]
    b.core.wrapped._responses["core.read_namespaced_pod_log"] = waiting
    out = call(b, "search_logs", service="web")
    assert out.text.startswith("no log lines matching '' in web over the last 15 min\nnotes:\n  web-1: container")


def test_logs_say_when_the_tail_cap_was_hit() -> None:
    chatty = "".join(f"2026-03-01T11:59:{i % 60:02d}Z INFO tick {i}\n" for i in range(2000))
    b, _ = backend({"core.list_namespaced_pod": kc.V1PodList(items=[pod("web-1", "web")]),
                    "core.read_namespaced_pod_log": chatty})
    out = call(b, "search_logs", service="web", pattern="tick 1999")
    assert "web-1: only its last 2000 lines were read, which may not reach back 15 min" in out.text


# ---------------------------------------------------------------------------- 9: the page
def _alert(name: str, severity: str, ns: str | None = NS, state: str = "firing", **notes: str) -> dict[str, Any]:
    return {"labels": {"alertname": name, "severity": severity, **({"namespace": ns} if ns else {})},
            "annotations": notes, "state": state, "activeAt": "t"}


def test_the_page_ignores_the_pipelines_own_alerts_and_is_one_line() -> None:
    prom = FakeProm({"alerts": {"alerts": [
        _alert("Watchdog", "none", None, description="An alert that should always be firing.\nIt is a heartbeat."),
        _alert("InfoInhibitor", "none", None, summary="Info-level alert inhibition."),
        _alert("KubeletTooManyPods", "info", None, summary="too many pods")]}})
    env, _, _ = live(cluster_responses(), prom)
    assert env.reset()[0].text.splitlines()[0] == "PAGE: [critical] incident reported by a user"
    prom.answers["alerts"]["alerts"] += [
        _alert("SlowRequests", "warning", summary="p99 over 1 s"),
        _alert("CheckoutErrors", "critical", description="5xx on checkout\n  since the\nlast deploy")]
    assert env.reset()[0].text.splitlines()[0] == \
        "PAGE: [FIRING critical] CheckoutErrors: 5xx on checkout since the last deploy (since t)"
    out = env.backend.call("get_alerts", {})
    assert len(out.text.splitlines()) == len(out.data) == 5  # one alert, one line


# ---------------------------------------------------------------------------- 11: dry run, the last node
def test_dry_run_sends_every_write_with_dry_run_all() -> None:
    responses = {**cluster_responses(), "core.list_namespaced_pod": kc.V1PodList(items=[pod("web-1", "web")]),
                 "apps.list_namespaced_replica_set": kc.V1ReplicaSetList(items=[]),
                 "core.read_namespaced_pod": pod("web-1", "web")}
    b, calls = backend(responses, dry_run=True)
    for tool, args in (("set_config", {"service": "web", "key": "env.A", "value": "1"}),
                       ("set_config", {"service": "web", "key": "pool", "value": 5}), ("restart", {"target": "web"}),
                       ("scale", {"service": "web", "replicas": 2}), ("cordon_node", {"node": "node-a"}),
                       ("drain_node", {"node": "node-a"})):
        out = call(b, tool, **args)
        assert out.text.startswith("[dry run: the API server validated this write; nothing was changed] "), out.text
    responses["apps.patch_namespaced_deployment"] = not_found()  # restart of a pod: delete it
    call(b, "restart", target="web-1")
    writes = [(name, kw) for name, kw in calls if name.split(".")[1].startswith(("patch_", "create_", "delete_"))]
    assert {name for name, _ in writes} == {"apps.patch_namespaced_deployment", "core.patch_namespaced_config_map",
                                            "apps.patch_namespaced_deployment_scale", "core.patch_node",
                                            "core.create_namespaced_pod_eviction", "core.delete_namespaced_pod"}
    assert all(kw.get("dry_run") == "All" for _, kw in writes)
    b, calls = backend(cluster_responses())
    call(b, "restart", target="web")
    assert "dry_run" not in calls[-1][1]


def test_dry_run_on_the_wire_and_from_the_cli(api_server: FakeApiServer, monkeypatch: pytest.MonkeyPatch) -> None:
    dep = {"kind": "Deployment", "metadata": {"name": "web"}, "spec": {
        "selector": {"matchLabels": {"app": "web"}}, "template": {"spec": {"containers": [{"name": "web", "image": "x"}]}}}}
    api_server.route("GET", r"/apis/apps/v1/namespaces/shop/deployments/web$", 200, dep)
    api_server.route("PATCH", r"/apis/apps/v1/namespaces/shop/deployments/web", 200, dep)
    core, apps = api_server.clients()
    b = KubernetesBackend(NS, core=core, apps=apps, dry_run=True)
    call(b, "set_config", service="web", key="env.DB_URL", value="postgres://db2")
    method, path, ctype, body = api_server.requests[-1]
    assert (method, path, ctype) == ("PATCH", "/apis/apps/v1/namespaces/shop/deployments/web?dryRun=All",
                                     "application/strategic-merge-patch+json")
    assert body["spec"]["template"]["spec"]["containers"][0]["env"] == [
        {"name": "DB_URL", "value": "postgres://db2", "valueFrom": None}]  # null drops a secret reference
    _patch_connect(monkeypatch, [], cluster_responses())
    out = CliRunner().invoke(cli, ["run", "--backend", "k8s", "--namespace", NS, "--dry-run", "--json",
                                   "--agent", "k8s_fakes:ScriptedAgent"])
    assert out.exit_code == 0, out.output
    assert "dry run: writes are validated by the API server, nothing is changed" in out.stderr
    rec = orjson.loads(out.stdout)
    assert rec["result"]["dry_run"] is True
    assert rec["result"]["writes"][0]["effect"].startswith("[dry run")


@pytest.mark.parametrize("others", [[], [node("node-b", unschedulable=True)], [node("node-b", ready=False)],
                                    [node("cp", taint="node-role.kubernetes.io/control-plane")]])
def test_the_last_schedulable_node_is_never_cordoned_or_drained(others: list[Any]) -> None:
    b, calls = backend({"core.list_namespaced_pod": kc.V1PodList(items=[pod("web-1", "web")]),
                        "core.list_node": kc.V1NodeList(items=[node("node-a"), *others])})
    for tool in ("cordon_node", "drain_node"):
        with pytest.raises(ToolError, match=f"refusing to {tool.split('_')[0]} node-a: it is the last schedulable node"):
            call(b, tool, node="node-a")
    assert [c[0] for c in calls if c[0] in ("core.patch_node", "core.create_namespaced_pod_eviction")] == []
    assert call(b, "cordon_node", node="node-a", uncordon=True).text == "node/node-a uncordoned"  # always allowed
    b, _ = backend({"core.list_namespaced_pod": kc.V1PodList(items=[pod("web-1", "web")]), "core.list_node": two_nodes()})
    assert "evicted 1 pod(s)" in call(b, "drain_node", node="node-a").text


# ---------------------------------------------------------------------------- 12: live records in a report
def test_report_skips_live_records_with_a_note(monkeypatch: pytest.MonkeyPatch, tmp_path, capsys) -> None:
    import srezero
    from srezero.agents import registry
    from srezero.agents.runner import run_episode
    from srezero.report.load import RunDirError, load_run

    _patch_connect(monkeypatch, [], cluster_responses())
    runs = tmp_path / "runs"
    runs.mkdir()
    out = CliRunner().invoke(cli, ["run", "--backend", "k8s", "--namespace", NS, "--agent", "k8s_fakes:ScriptedAgent",
                                   "--out", str(runs / "live.json")])
    assert out.exit_code == 0, out.output
    bad = CliRunner().invoke(cli, ["report", str(runs), "--out", str(tmp_path / "rep")])
    assert bad.exit_code == 1 and not isinstance(bad.exception, TypeError)
    assert "only 1 live-cluster record(s) (srezero run --backend k8s), which have no ground truth" in bad.output
    with pytest.raises(RunDirError, match="a live-cluster record"):
        load_run(runs / "live.json")
    rec = run_episode(srezero.make("inc-001", 0), registry.create("random"), 0)
    rec["agent"] = "random"
    (runs / "sim.json").write_bytes(orjson.dumps(rec))
    capsys.readouterr()
    run = load_run(runs)
    assert [e.task_id for e in run.episodes] == ["inc-001"]
    assert capsys.readouterr().err == ("note: skipped 1 live-cluster record(s) (srezero run --backend k8s), which have "
                                       "no ground truth or marks to report\n")


# ---------------------------------------------------------------------------- 13: connect timeouts
def test_a_connect_timeout_is_not_retried(tmp_path) -> None:
    """Against a listener whose backlog is full, SYNs go unanswered: one call costs one timeout, not four."""
    import socket
    import time

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(0)
    port = srv.getsockname()[1]
    fillers = []
    for _ in range(4):
        c = socket.socket()
        c.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            c.connect(("127.0.0.1", port))
        fillers.append(c)
    time.sleep(0.2)
    probe = socket.socket()
    probe.settimeout(0.3)
    try:
        probe.connect(("127.0.0.1", port))
        pytest.skip("this system does not drop connections to a full backlog")
    except OSError:
        pass
    finally:
        probe.close()
    config = tmp_path / "kubeconfig"
    config.write_text(orjson.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}).decode())
    try:
        b = KubernetesBackend(NS, kubeconfig=str(config), request_timeout=0.4, check_namespace=False)
        retries = b.core.wrapped.api_client.configuration.retries
        assert (retries.connect, retries.read) == (0, 0)
        import urllib3.util.connection as u3conn

        attempts = []
        real = u3conn.create_connection

        def counted(*args, **kwargs):
            attempts.append(kwargs.get("timeout", args[1] if len(args) > 1 else None))
            return real(*args, **kwargs)

        u3conn.create_connection = counted
        try:
            with pytest.raises(ToolError, match="Kubernetes API timed out"):
                call(b, "get_status")
        finally:
            u3conn.create_connection = real
        assert attempts == [0.4]  # one attempt, bounded by the request timeout (3 connect retries made 4)
    finally:
        for c in fillers:
            c.close()
        srv.close()


# ---------------------------------------------------------------------------- 21, 7, 10, 20, 18
@pytest.mark.parametrize("name", ["shop.prod", "a" * 64, "-shop", "Shop"])
def test_a_namespace_is_a_dns_1123_label(name: str) -> None:
    with pytest.raises(ValueError, match="not a valid namespace name"):
        KubernetesBackend(name, core=object(), apps=object())
    assert KubernetesBackend("a" * 63, core=object(), apps=object()).namespace == "a" * 63


def test_new_style_and_node_events_are_shown() -> None:
    scheduling = new_style_event("web-7d9f8b-x2k4q", "Pod", "FailedScheduling", "0/1 nodes are available", 180, 1, 40)
    not_ready = event("node-a", "Node", "NodeNotReady", "Node node-a status is now: NodeNotReady", 2)
    b, calls = backend({"core.list_namespaced_event": lambda **kw: kc.CoreV1EventList(
        items=[scheduling] if kw["namespace"] == NS else [not_ready])})
    out = call(b, "get_events")
    assert calls[1] == ("core.list_namespaced_event", {"namespace": "default", "field_selector": "involvedObject.kind=Node"})
    assert [e["reason"] for e in out.data] == ["NodeNotReady", "FailedScheduling"]  # oldest first: 2 and 1 min ago
    assert out.data[1]["at"] == (NOW - dt.timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ") and "(x40)" in out.text
    assert [e["reason"] for e in call(b, "get_events", entity="node-a").data] == ["NodeNotReady"]
    b, _ = backend({"core.list_namespaced_event": lambda **kw: kc.CoreV1EventList(items=[scheduling])
                    if kw["namespace"] == NS else api_error(403, "Forbidden", "cannot list events in default")})
    assert [e["reason"] for e in call(b, "get_events").data] == ["FailedScheduling"]  # the app's events still


def test_pod_metrics_match_the_deployments_own_pods_only() -> None:
    import re

    from srezero.backends.prometheus import pod_regex

    rx = re.compile(pod_regex("web"))
    assert [n for n in ("web", "web-7d9f8b-x2k4q", "web-0", "web-x2k4q", "web-api-5c6d7f-q8w9z", "web-api", "webx")
            if rx.fullmatch(n)] == ["web", "web-7d9f8b-x2k4q", "web-0", "web-x2k4q"]
    assert pod_regex("a.b").startswith("a\\\\.b(")  # a literal dot, escaped for the regex inside a PromQL string


def test_status_shows_the_last_termination_reason() -> None:
    p = pod("web-1", "web", reason="CrashLoopBackOff", ready=False, restarts=5)
    p.status.container_statuses[0].last_state = kc.V1ContainerState(
        terminated=kc.V1ContainerStateTerminated(exit_code=137, reason="OOMKilled"))
    b, _ = backend({"core.list_namespaced_pod": kc.V1PodList(items=[p])})
    out = call(b, "get_status")
    assert "CrashLoopBackOff" in out.text and "(last: OOMKilled, exit 137)" in out.text
    assert out.data[0]["last_terminated"] == "OOMKilled, exit 137"


def test_the_fake_client_rejects_what_the_real_one_would() -> None:
    import inspect

    params = inspect.signature(kc.CoreV1Api.list_namespaced_pod).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        pytest.skip("this kubernetes client (before 37) takes **kwargs: no signature to bind a misspelt keyword against")
    rec = Recorder("core", [], {})
    with pytest.raises(TypeError):
        rec.list_namespaced_pod(namespace=NS, label_selctor="app=web")
    with pytest.raises(AttributeError, match="CoreV1Api has no method 'list_namespaced_events'"):
        rec.list_namespaced_events(namespace=NS)
    with pytest.raises(TypeError):
        Recorder("apps", [], {}).patch_namespaced_deployment(name="web", namespace=NS)  # body is required
