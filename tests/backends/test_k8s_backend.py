"""The Kubernetes backend against an injected fake client: the exact API calls behind each tool."""

from __future__ import annotations

from typing import Any

import pytest
from k8s_fakes import (
    MISSING,
    NOW,
    NS,
    ApiException,
    FakeProm,
    Recorder,
    api_error,
    deployment,
    event,
    node,
    not_found,
    pod,
    replica_set,
    template,
    two_nodes,
)
from k8s_fakes import k8s as kc

from srezero.backends.k8s import JSON_PATCH, RESTARTED_AT, SMP, BackendError, KubernetesBackend
from srezero.backends.prometheus import METRIC_QUERIES, pod_regex
from srezero.tools.registry import ToolError, load_tools

PROM = "http://prom.example:9090"


def make(responses: dict[str, Any] | None = None, prom: FakeProm | None = None,
         **kw: Any) -> tuple[KubernetesBackend, list]:
    calls: list[tuple[str, dict[str, Any]]] = []
    responses = responses or {}
    timeouts: list[tuple[str, Any]] = []
    backend = KubernetesBackend(NS, core=Recorder("core", calls, responses, timeouts),
                                apps=Recorder("apps", calls, responses, timeouts),
                                prometheus_url=PROM if prom else None, http_get=prom, wall=lambda: NOW,
                                clock=lambda: 0.0, sleep=lambda s: None, **kw)
    backend.timeouts = timeouts  # type: ignore[attr-defined]  # for the tests: every call's _request_timeout
    return backend, calls


def call(backend: KubernetesBackend, tool: str, **args: Any):
    """Validate like the episode does, then call the backend."""
    return backend.call(tool, load_tools()[tool].validate(args))


def pods(*items: Any) -> Any:
    return kc.V1PodList(items=list(items))


def events(*items: Any, node_events: tuple[Any, ...] = ()) -> Any:
    """list_namespaced_event: ``items`` in the app's namespace, ``node_events`` in default (where Node events are)."""
    return lambda **kw: kc.CoreV1EventList(items=list(items) if kw["namespace"] == NS else list(node_events))


def node_events_call(entity: str = "") -> tuple[str, dict[str, Any]]:
    selector = "involvedObject.kind=Node" + (f",involvedObject.name={entity}" if entity else "")
    return ("core.list_namespaced_event", {"namespace": "default", "field_selector": selector})


def test_get_status_lists_pods_by_label() -> None:
    b, calls = make({"core.list_namespaced_pod": pods(
        pod("web-7d9f-a1", "web"), pod("web-7d9f-b2", "web", reason="CrashLoopBackOff", ready=False, restarts=7))})
    out = call(b, "get_status", service="web")
    assert calls == [("core.list_namespaced_pod", {"namespace": NS, "label_selector": "app=web"})]
    assert "web-7d9f-b2" in out.text and "CrashLoopBackOff" in out.text and "0/1" in out.text
    assert [p["restarts"] for p in out.data] == [0, 7]
    calls.clear()
    call(b, "get_status")
    assert calls == [("core.list_namespaced_pod", {"namespace": NS})]


def test_get_events_filters_entity_and_window() -> None:
    b, calls = make({"core.list_namespaced_event": events(
        event("web-7d9f-a1", "Pod", "BackOff", "Back-off restarting failed container", 5, count=4),
        event("web", "Deployment", "ScalingReplicaSet", "Scaled up", 20, type_="Normal"),
        event("db-0", "Pod", "Unhealthy", "Readiness probe failed", 3),
        event("web-7d9f-a1", "Pod", "Pulled", "old", 300, type_="Normal")),
        "apps.list_namespaced_deployment": kc.V1DeploymentList(items=[deployment("web"), deployment("db")])})
    out = call(b, "get_events", entity="web", window_s=3600)
    assert calls == [("core.list_namespaced_event", {"namespace": NS}), node_events_call("web"),
                     ("apps.list_namespaced_deployment", {"namespace": NS})]  # is web-7d9f-a1 another deployment's?
    assert [e["reason"] for e in out.data] == ["ScalingReplicaSet", "BackOff"]  # oldest first; db-0 and old excluded
    assert "(x4)" in out.text and "pod/web-7d9f-a1" in out.text


def test_get_events_for_web_does_not_include_web_api() -> None:
    b, calls = make({"core.list_namespaced_event": events(
        event("web-7d9f8b-x2k4q", "Pod", "BackOff", "web's pod", 5),
        event("web-api-5c6d7f-q8w9z", "Pod", "BackOff", "web-api's pod", 4),
        event("web-api", "Deployment", "ScalingReplicaSet", "web-api scaled", 3, type_="Normal"),
        event("web", "Deployment", "ScalingReplicaSet", "web scaled", 2, type_="Normal")),
        "apps.list_namespaced_deployment": kc.V1DeploymentList(items=[deployment("web"), deployment("web-api")])})
    out = call(b, "get_events", entity="web")
    assert [e["message"] for e in out.data] == ["web's pod", "web scaled"]
    assert [e["message"] for e in call(b, "get_events", entity="web-api").data] == ["web-api's pod", "web-api scaled"]
    calls.clear()
    b.core.wrapped._responses["core.list_namespaced_event"] = events(
        event("web", "Deployment", "ScalingReplicaSet", "web scaled", 2, type_="Normal"))
    call(b, "get_events", entity="web")
    assert calls == [("core.list_namespaced_event", {"namespace": NS}),
                     node_events_call("web")]  # nothing ambiguous: no deployment list


def test_get_events_hides_events_about_non_workload_objects() -> None:
    """A chaos tool's own objects (PodChaos, NetworkChaos...) would name what was injected."""
    b, _ = make({"core.list_namespaced_event": events(
        event("web-kill", "PodChaos", "FinalizerInited", "Finalizer has been inited", 4, type_="Normal"),
        event("web-7d9f-a1", "Pod", "Killing", "Stopping container web", 4, type_="Normal"))})
    out = call(b, "get_events")
    assert [e["object"] for e in out.data] == ["pod/web-7d9f-a1"]
    assert "chaos" not in out.text.lower()


def test_search_logs_reads_each_pod_and_filters() -> None:
    logs = {"web-1": "2026-03-01T11:58:00.1Z INFO start\n2026-03-01T11:59:10.2Z ERROR upstream timeout\n",
            "web-2": "2026-03-01T11:59:00.5Z WARN db timeout after 5s\n2026-03-01T11:59:30.0Z DEBUG timeout tick\n"}
    b, calls = make({"core.list_namespaced_pod": pods(pod("web-1", "web"), pod("web-2", "web")),
                     "core.read_namespaced_pod_log": lambda **kw: logs[kw["name"]]})
    out = call(b, "search_logs", service="web", pattern="timeout", level="warn", window_s=600, limit=20)
    assert calls == [("core.list_namespaced_pod", {"namespace": NS, "label_selector": "app=web"}),
                     *[("core.read_namespaced_pod_log", {"name": n, "namespace": NS, "since_seconds": 600,
                                                         "timestamps": True, "tail_lines": 2000}) for n in ("web-1", "web-2")]]
    assert out.data == ["2026-03-01T11:59:00Z web-2 WARN db timeout after 5s",
                        "2026-03-01T11:59:10Z web-1 ERROR upstream timeout"]
    assert out.text.startswith("2 line(s) from web")


def test_search_logs_orders_by_parsed_timestamps() -> None:
    """As strings, "11:59:00.5Z" sorts before "11:59:00Z" and "+01:00" offsets sort by local time."""
    logs = {"web-1": "2026-03-01T11:59:00.500000000Z ERROR second\n2026-03-01T12:59:01+01:00 ERROR third\n",
            "web-2": "2026-03-01T11:59:00Z ERROR first\n2026-03-01T11:59:02.000000001Z ERROR fourth\n"}
    b, _ = make({"core.list_namespaced_pod": pods(pod("web-1", "web"), pod("web-2", "web")),
                 "core.read_namespaced_pod_log": lambda **kw: logs[kw["name"]]})
    out = call(b, "search_logs", service="web")
    assert [line.rsplit(" ", 1)[1] for line in out.data] == ["first", "second", "third", "fourth"]
    assert out.data[2] == "2026-03-01T11:59:01Z web-1 ERROR third"  # shown in UTC


def test_search_logs_previous_reads_the_terminated_container() -> None:
    b, calls = make({"core.list_namespaced_pod": pods(pod("web-1", "web")),
                     "core.read_namespaced_pod_log": "2026-03-01T11:00:00Z ERROR panic: nil map\n"})
    b.call("search_logs", {"service": "web", "previous": True})
    assert calls[1] == ("core.read_namespaced_pod_log", {"name": "web-1", "namespace": NS, "since_seconds": 900,
                                                         "timestamps": True, "tail_lines": 2000, "previous": True})


def test_search_logs_falls_back_to_a_pod_name_then_errors() -> None:
    b, calls = make({"core.list_namespaced_pod": pods(), "core.read_namespaced_pod": pod("web-1", "web"),
                     "core.read_namespaced_pod_log": "2026-03-01T11:59:00Z INFO hello\n"})
    out = call(b, "search_logs", service="web-1")
    assert [c[0] for c in calls] == ["core.list_namespaced_pod", "core.read_namespaced_pod",
                                     "core.read_namespaced_pod_log"]
    assert calls[1][1] == {"name": "web-1", "namespace": NS} and "hello" in out.text
    b, _ = make({"core.list_namespaced_pod": pods(), "core.read_namespaced_pod": not_found()})
    with pytest.raises(ToolError, match="no deployment or pod 'ghost' in namespace shop"):
        call(b, "search_logs", service="ghost")


def test_get_config_reads_deployment_env_and_configmap() -> None:
    b, calls = make({"apps.read_namespaced_deployment": deployment("web"),
                     "core.read_namespaced_config_map": kc.V1ConfigMap(data={"pool_size": "20"})})
    out = call(b, "get_config", service="web")
    assert calls == [("apps.read_namespaced_deployment", {"name": "web", "namespace": NS}),
                     ("core.read_namespaced_config_map", {"name": "web-config", "namespace": NS})]
    assert out.data["env.DB_URL"] == "postgres://db" and out.data["pool_size"] == "20"
    b, _ = make({"apps.read_namespaced_deployment": deployment("web"), "core.read_namespaced_config_map": not_found()})
    assert "env.DB_URL" in call(b, "get_config", service="web").data  # no configmap is fine


def test_set_config_env_patches_the_deployment() -> None:
    b, calls = make({"apps.read_namespaced_deployment": deployment("web")})
    out = call(b, "set_config", service="web", key="env.DB_URL", value="postgres://db2")
    body = {"spec": {"template": {"spec": {"containers": [{"name": "web", "env": [
        {"name": "DB_URL", "value": "postgres://db2", "valueFrom": None}]}]}}}}  # null drops a secret reference
    assert calls == [("apps.read_namespaced_deployment", {"name": "web", "namespace": NS}),
                     ("apps.patch_namespaced_deployment", {"name": "web", "namespace": NS, "body": body,
                                                           "_content_type": SMP})]
    assert "rolling" in out.text


def test_set_config_key_patches_the_configmap() -> None:
    b, calls = make()
    call(b, "set_config", service="web", key="pool_size", value=40)
    assert calls == [("core.patch_namespaced_config_map", {"name": "web-config", "namespace": NS,
                                                           "body": {"data": {"pool_size": "40"}}, "_content_type": SMP})]
    b, _ = make({"core.patch_namespaced_config_map": not_found()})
    with pytest.raises(ToolError, match="no configmap web-config"):
        call(b, "set_config", service="web", key="flag", value=True)


def test_restart_by_annotation_or_pod_delete() -> None:
    b, calls = make()
    out = call(b, "restart", target="web")
    assert calls == [("apps.patch_namespaced_deployment", {
        "name": "web", "namespace": NS, "_content_type": SMP,
        "body": {"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: NOW.isoformat()}}}}}})]
    assert "rollout restart" in out.text
    b, calls = make({"apps.patch_namespaced_deployment": not_found(), "core.read_namespaced_pod": pod("web-7d9f-a1", "web")})
    out = call(b, "restart", target="web-7d9f-a1")
    assert calls[1:] == [("core.read_namespaced_pod", {"name": "web-7d9f-a1", "namespace": NS}),
                         ("core.delete_namespaced_pod", {"name": "web-7d9f-a1", "namespace": NS})]
    assert out.text == "deleted pod web-7d9f-a1; its ReplicaSet web-rs starts a replacement"


def test_restart_refuses_a_pod_without_a_controller() -> None:
    b, calls = make({"apps.patch_namespaced_deployment": not_found(),
                     "core.read_namespaced_pod": pod("debug-shell", "debug", owner=None)})
    with pytest.raises(ToolError, match=r"pod debug-shell has no controller .* it was not deleted"):
        call(b, "restart", target="debug-shell")
    assert "core.delete_namespaced_pod" not in [c[0] for c in calls]
    b, _ = make({"apps.patch_namespaced_deployment": not_found(), "core.read_namespaced_pod": not_found()})
    with pytest.raises(ToolError, match="no deployment or pod 'ghost'"):
        call(b, "restart", target="ghost")


def test_rollback_to_the_previous_revision() -> None:
    b, calls = make({"apps.read_namespaced_deployment": deployment("web", revision=3),
                     "apps.list_namespaced_replica_set": kc.V1ReplicaSetList(items=[
                         replica_set("web", 3, "shop/web:1.4.2"), replica_set("web", 1, "shop/web:1.2.0"),
                         replica_set("web", 2, "shop/web:1.3.9"), replica_set("web", 5, "x", owner="web-canary")])})
    out = call(b, "rollback", service="web")
    assert [c[0] for c in calls] == ["apps.read_namespaced_deployment", "apps.list_namespaced_replica_set",
                                     "apps.patch_namespaced_deployment"]
    assert calls[1][1] == {"namespace": NS, "label_selector": "app=web"}
    patch = calls[2][1]
    assert patch["_content_type"] == JSON_PATCH and patch["name"] == "web"
    (op,) = patch["body"]
    assert op["op"] == "replace" and op["path"] == "/spec/template"
    assert op["value"]["spec"]["containers"][0]["image"] == "shop/web:1.3.9"
    assert op["value"]["metadata"]["labels"] == {"app": "web"}  # pod-template-hash removed
    assert "revision 3 to revision 2" in out.text
    b, _ = make({"apps.read_namespaced_deployment": deployment("web", revision=1),
                 "apps.list_namespaced_replica_set": kc.V1ReplicaSetList(items=[replica_set("web", 1, "a")])})
    with pytest.raises(ToolError, match="no previous revision"):
        call(b, "rollback", service="web")


def test_scale_patches_the_scale_subresource() -> None:
    b, calls = make({"apps.read_namespaced_deployment": deployment("web")})
    call(b, "scale", service="web", replicas=5)
    assert calls[1] == ("apps.patch_namespaced_deployment_scale", {
        "name": "web", "namespace": NS, "body": {"spec": {"replicas": 5}}, "_content_type": SMP})
    b, _ = make({"apps.read_namespaced_deployment": not_found()})
    with pytest.raises(ToolError, match="no deployment 'ghost'"):
        call(b, "scale", service="ghost", replicas=2)


ON_NODE = ("core.list_namespaced_pod", {"namespace": NS, "field_selector": "spec.nodeName=node-a"})


def test_cordon_and_drain() -> None:
    b, calls = make({"core.list_namespaced_pod": pods(pod("web-1", "web")), "core.list_node": two_nodes()})
    call(b, "cordon_node", node="node-a")
    call(b, "cordon_node", node="node-a", uncordon=True)
    assert calls == [ON_NODE, ("core.list_node", {}),  # another schedulable node exists
                     ("core.patch_node", {"name": "node-a", "body": {"spec": {"unschedulable": True}},
                                          "_content_type": SMP}),
                     ON_NODE, ("core.patch_node", {"name": "node-a", "body": {"spec": {"unschedulable": False}},
                                                   "_content_type": SMP})]

    def evict(**kw: Any) -> Any:
        return ApiException(status=429, reason="Too Many Requests") if kw["name"] == "db-0" else None

    b, calls = make({"core.list_namespaced_pod": pods(pod("web-1", "web"), pod("db-0", "db"),
                                                      pod("agent-x", "agent", owner="DaemonSet")),
                     "core.create_namespaced_pod_eviction": evict, "core.list_node": two_nodes()})
    out = call(b, "drain_node", node="node-a")
    assert [c[0] for c in calls] == ["core.list_namespaced_pod", "core.list_node", "core.patch_node",
                                     "core.create_namespaced_pod_eviction", "core.create_namespaced_pod_eviction"]
    assert calls[0] == ON_NODE
    assert calls[4][1] == {"name": "web-1", "namespace": NS, "body": {
        "apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "web-1", "namespace": NS}}}
    assert out.data["evicted"] == ["web-1"] and out.data["blocked"] == ["db-0"] and "PodDisruptionBudget" in out.text
    assert list(out.data["skipped"]) == ["agent-x"] and "DaemonSet pod" in out.data["skipped"]["agent-x"]


def test_drain_follows_kubectl_drain_safeguards() -> None:
    """No controller (would not come back), emptyDir (data lost), mirror pods: skipped and said so."""
    b, calls = make({"core.list_namespaced_pod": pods(
        pod("scratch-runner", "scratch", owner=None), pod("db-0", "db", owner="StatefulSet", empty_dir="data"),
        pod("kube-proxy-node-a", "proxy", owner="Node", annotations={"kubernetes.io/config.mirror": "x"}),
        pod("web-abc-x1", "web")), "core.list_node": two_nodes()})
    out = call(b, "drain_node", node="node-a")
    evicted = [c[1]["name"] for c in calls if c[0] == "core.create_namespaced_pod_eviction"]
    assert evicted == ["web-abc-x1"] and out.data["evicted"] == ["web-abc-x1"]
    skipped = out.data["skipped"]
    assert set(skipped) == {"scratch-runner", "db-0", "kube-proxy-node-a"}
    assert skipped["scratch-runner"].startswith("no controller") and "--force" in skipped["scratch-runner"]
    assert skipped["db-0"].startswith("emptyDir volume data") and "--delete-emptydir-data" in skipped["db-0"]
    assert skipped["kube-proxy-node-a"].startswith("static pod")
    assert "not evicted: db-0 (emptyDir" in out.text and "scratch-runner (no controller" in out.text


def test_node_tools_are_limited_to_nodes_the_namespace_uses() -> None:
    b, calls = make({"core.list_namespaced_pod": pods()})
    for tool, args in (("cordon_node", {"node": "control-plane-1"}), ("drain_node", {"node": "control-plane-1"}),
                       ("cordon_node", {"node": "control-plane-1", "uncordon": True})):
        with pytest.raises(ToolError, match="node control-plane-1 runs no pod of namespace shop"):
            call(b, tool, **args)
    assert "core.patch_node" not in [c[0] for c in calls]
    calls.clear()
    with pytest.raises(ToolError, match="not a Kubernetes object name"):
        call(b, "cordon_node", node="Not_A_DNS_Name")
    assert calls == []
    # a node the backend drained (so no pod of the namespace is left on it) can still be uncordoned
    responses: dict[str, Any] = {"core.list_namespaced_pod": pods(pod("web-1", "web")), "core.list_node": two_nodes()}
    b, calls = make(responses)
    call(b, "drain_node", node="node-a")
    responses["core.list_namespaced_pod"] = pods()
    assert call(b, "cordon_node", node="node-a", uncordon=True).text == "node/node-a uncordoned"


def test_a_write_that_fails_halfway_says_what_it_did() -> None:
    def evict(**kw: Any) -> Any:
        return api_error(403, "Forbidden", 'pods "db-0" is forbidden: cannot create pods/eviction') \
            if kw["name"] == "db-0" else None

    b, _ = make({"core.list_namespaced_pod": pods(pod("a-1", "a"), pod("db-0", "db"), pod("web-1", "web")),
                 "core.create_namespaced_pod_eviction": evict, "core.list_node": two_nodes()})
    with pytest.raises(ToolError) as err:
        call(b, "drain_node", node="node-a")
    assert str(err.value) == ("Kubernetes API error 403 (Forbidden) in drain_node: pods \"db-0\" is forbidden: cannot "
                              "create pods/eviction (already done before the failure: cordoned node node-a; "
                              "evicted pod a-1)")
    assert err.value.partial == "cordoned node node-a; evicted pod a-1"
    assert not isinstance(err.value, BackendError)  # a permission the agent lacks: its action, not the cluster


@pytest.mark.parametrize("status,reason,backend", [
    (500, "Internal Server Error", True), (503, "Service Unavailable", True), (401, "Unauthorized", True),
    (429, "Too Many Requests", True), (404, "Not Found", False), (422, "Unprocessable Entity", False),
    (403, "Forbidden", False), (400, "Bad Request", False)])
def test_api_errors_are_classified_and_quote_the_status_message(status: int, reason: str, backend: bool) -> None:
    b, _ = make({"core.list_namespaced_pod": api_error(status, reason, "the server says why " + "x" * 1000)})
    with pytest.raises(ToolError) as err:
        call(b, "get_status", service="web")
    assert isinstance(err.value, BackendError) is backend
    text = str(err.value)
    assert text.startswith(f"Kubernetes API error {status} ({reason}) in get_status: the server says why xxx")
    assert text.endswith("...") and len(text) < 400  # the message is capped


def test_transport_failures_are_backend_errors() -> None:
    import urllib3

    for exc, word in ((urllib3.exceptions.ReadTimeoutError(None, "/api", "Read timed out."), "timed out"),
                      (ConnectionRefusedError(111, "Connection refused"), "unreachable"),
                      (ApiException(status=0, reason="SSLError\ncertificate verify failed"), "unreachable")):
        b, _ = make({"core.list_namespaced_pod": exc})
        with pytest.raises(BackendError, match=f"Kubernetes API {word}"):
            call(b, "get_status", service="web")


def test_every_api_call_has_a_request_timeout() -> None:
    b, _ = make({"core.list_namespaced_pod": pods(pod("web-1", "web")), "apps.read_namespaced_deployment": deployment("web"),
                 "core.read_namespaced_pod_log": "", "core.list_namespaced_event": kc.CoreV1EventList(items=[]),
                 "apps.list_namespaced_deployment": kc.V1DeploymentList(items=[]),
                 "apps.list_namespaced_replica_set": kc.V1ReplicaSetList(items=[]),
                 "core.read_namespaced_config_map": not_found(), "core.list_node": two_nodes()})
    for tool, args in (("get_status", {}), ("search_logs", {"service": "web"}), ("get_events", {}),
                       ("get_config", {"service": "web"}), ("get_topology", {}), ("get_changes", {}),
                       ("set_config", {"service": "web", "key": "env.A", "value": "1"}), ("restart", {"target": "web"}),
                       ("scale", {"service": "web", "replicas": 2}), ("drain_node", {"node": "node-a"}),
                       ("wait", {"seconds": 10})):
        call(b, tool, **args)
    assert b.timeouts and all(t == 10.0 for _, t in b.timeouts), [c for c in b.timeouts if c[1] != 10.0]
    b, _ = make({"core.list_namespaced_pod": pods()}, request_timeout=(1.5, 4))
    call(b, "get_status")
    assert b.timeouts == [("core.list_namespaced_pod", (1.5, 4))]
    b, _ = make({"core.list_namespaced_pod": pods()}, request_timeout=None)
    call(b, "get_status")
    assert b.timeouts == [("core.list_namespaced_pod", MISSING)]


def test_set_config_rejects_an_empty_env_name() -> None:
    b, calls = make({"apps.read_namespaced_deployment": deployment("web")})
    with pytest.raises(ToolError, match="'' is not a valid environment variable name"):
        call(b, "set_config", service="web", key="env.", value="x")
    assert calls == []


def test_topology_and_changes() -> None:
    b, calls = make({"apps.list_namespaced_deployment": kc.V1DeploymentList(items=[deployment("web", available=2)]),
                     "core.list_node": kc.V1NodeList(items=[node("node-a"), node("node-b", ready=False,
                                                                                     unschedulable=True)]),
                     "apps.list_namespaced_replica_set": kc.V1ReplicaSetList(items=[
                         replica_set("web", 2, "shop/web:1.3.9", minutes_ago=90),
                         replica_set("web", 1, "shop/web:1.2.0", minutes_ago=60 * 24 * 30)])})
    out = call(b, "get_topology")
    assert calls == [("apps.list_namespaced_deployment", {"namespace": NS}), ("core.list_node", {})]
    assert "web: 2/3 ready" in out.text and "node-b NotReady cordoned" in out.text
    calls.clear()
    out = call(b, "get_changes", service="web", window_h=24)
    assert calls == [("apps.list_namespaced_replica_set", {"namespace": NS, "label_selector": "app=web"})]
    assert "revision   2" in out.text and "1.2.0" not in out.text


def test_query_metrics_via_prometheus_query_range() -> None:
    prom = FakeProm({"query_range": {"resultType": "matrix", "result": [
        {"metric": {}, "values": [[1, "0.01"], [2, "0.25"], [3, "0.5"]]}]}})
    b, calls = make(prom=prom)
    out = call(b, "query_metrics", target="web", metric="error_rate", window_s=600)
    assert calls == []  # metrics never touch the Kubernetes API
    assert len(prom.urls) == 1 and prom.urls[0].startswith(f"{PROM}/api/v1/query_range?")
    q = prom.params()
    assert q["query"] == METRIC_QUERIES["error_rate"].format(ns=NS, target="web", pods=pod_regex("web"))
    assert float(q["end"]) == NOW.timestamp() and float(q["start"]) == NOW.timestamp() - 600 and q["step"] == "30"
    assert out.data["values"] == [0.01, 0.25, 0.5] and "last 0.5" in out.text
    with pytest.raises(ToolError, match="no Prometheus query for metric 'disk_magic'"):
        call(b, "query_metrics", target="web", metric="disk_magic")
    with pytest.raises(ToolError, match="not a Kubernetes object name"):
        call(b, "query_metrics", target='web"}) or vector(1', metric="error_rate")


def test_query_metrics_shows_every_series() -> None:
    prom = FakeProm({"query_range": {"resultType": "matrix", "result": [
        {"metric": {"pod": "web-b", "namespace": NS}, "values": [[1, "0.9"], [2, "0.95"]]},
        {"metric": {"pod": "web-a", "namespace": NS}, "values": [[1, "0.01"], [2, "0.02"]]},
        {"metric": {"pod": "web-c"}, "values": []}]}})
    b, _ = make(prom=prom, queries={"err_by_pod": 'rate(errors{{namespace="{ns}",pod=~"{pods}"}}[2m])'})
    out = call(b, "query_metrics", target="web", metric="err_by_pod")
    assert "2 series" in out.text
    assert f'{{namespace="{NS}",pod="web-a"}}: min 0.01' in out.text
    assert f'{{namespace="{NS}",pod="web-b"}}: min 0.9' in out.text and "last 0.95" in out.text
    assert [s["labels"] for s in out.data["series"]] == [f'{{namespace="{NS}",pod="web-a"}}',
                                                         f'{{namespace="{NS}",pod="web-b"}}']
    assert out.data["series"][1]["values"] == [0.9, 0.95]


def test_prometheus_errors_are_classified() -> None:
    import http.client
    import urllib.error

    for answer, kind, text in (
            (http.client.IncompleteRead(b""), BackendError, "unreachable or timed out: IncompleteRead"),
            (TimeoutError("timed out"), BackendError, "unreachable or timed out: TimeoutError"),
            (urllib.error.HTTPError(PROM, 503, "Service Unavailable", {}, None), BackendError, "HTTP 503"),
            (urllib.error.HTTPError(PROM, 400, "Bad Request", {}, None), ToolError, "HTTP 400"),
            ({"resultType": "matrix", "result": 7}, BackendError, "malformed query_range result")):
        b, _ = make(prom=FakeProm({"query_range": answer}))
        with pytest.raises(kind, match=text) as err:
            call(b, "query_metrics", target="web", metric="error_rate")
        assert isinstance(err.value, BackendError) is (kind is BackendError)


def test_prometheus_instant_query_accepts_a_scalar() -> None:
    from srezero.backends.prometheus import Prometheus

    prom = Prometheus(PROM, FakeProm({"query": {"resultType": "scalar", "result": [1, "0.5"]}}))
    assert prom.query("scalar(vector(0.5))") == [({}, 0.5)]
    prom = Prometheus(PROM, FakeProm({"query": {"resultType": "vector", "result": [{"value": "oops"}]}}))
    with pytest.raises(BackendError, match="malformed query result"):
        prom.query("up")


def test_alerts_from_prometheus() -> None:
    prom = FakeProm({"alerts": {"alerts": [
        {"labels": {"alertname": "HighErrorRate", "severity": "critical", "namespace": NS},
         "annotations": {"summary": "5xx at 12%"}, "state": "firing", "activeAt": "2026-03-01T11:50:00Z"},
        {"labels": {"alertname": "Other", "namespace": "elsewhere"}, "state": "firing"}]}})
    b, _ = make(prom=prom)
    out = call(b, "get_alerts")
    assert prom.urls == [f"{PROM}/api/v1/alerts"]
    assert out.text == "[FIRING critical] HighErrorRate: 5xx at 12% (since 2026-03-01T11:50:00Z)"


@pytest.mark.parametrize("tool,args", [("get_traces", {}), ("node_diagnostics", {"node": "n", "check": "dmesg"}),
                                       ("failover", {})])
def test_unsupported_tools_say_so(tool: str, args: dict) -> None:
    b, calls = make()
    with pytest.raises(ToolError) as err:
        call(b, tool, **args)
    assert str(err.value) == f"{tool} is not supported by this backend" and calls == []


def test_metrics_without_prometheus_are_unsupported() -> None:
    b, _ = make()
    for tool, args in (("query_metrics", {"target": "web", "metric": "error_rate"}), ("get_alerts", {})):
        with pytest.raises(ToolError, match=f"{tool} is not supported by this backend without a Prometheus URL"):
            call(b, tool, **args)


def test_api_errors_and_bad_names_become_tool_errors() -> None:
    b, calls = make({"core.list_namespaced_pod": ApiException(status=403, reason="Forbidden")})
    with pytest.raises(ToolError, match=r"Kubernetes API error 403 \(Forbidden\) in get_status"):
        call(b, "get_status", service="web")
    calls.clear()
    with pytest.raises(ToolError, match="not a Kubernetes object name"):
        call(b, "get_status", service="web,tier=db")
    assert calls == []  # a selector injection never reaches the API
    with pytest.raises(ValueError, match="not a valid namespace"):
        KubernetesBackend("Bad_NS", core=object(), apps=object())


def test_time_is_real_advance_sleeps() -> None:
    slept: list[float] = []
    ticks = iter([100.0, 107.5])
    b = KubernetesBackend(NS, core=object(), apps=object(), clock=lambda: next(ticks), sleep=slept.append)
    b.advance(30)
    b.advance(0)
    assert slept == [30] and b.now() == 7.5


def test_the_client_is_imported_lazily() -> None:
    import subprocess
    import sys

    code = ("import sys, srezero, srezero.backends.k8s, srezero.backends.live_episode; "
            "print('kubernetes' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_template_serialisation_keeps_api_field_names() -> None:
    t = KubernetesBackend._serialize(template("web", "img", {"A": "1"}))
    assert t["spec"]["containers"][0]["env"] == [{"name": "A", "value": "1"}]


def test_prometheus_over_real_http() -> None:
    """The default urllib transport against a local HTTP server (no injected http_get)."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            if "broken" in self.path:
                self.send_response(500)
                self.end_headers()
                return
            body = json.dumps({"status": "success", "data": {"resultType": "matrix", "result": [
                {"metric": {}, "values": [[1, "120.5"], [2, "99"]]}]}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        b = KubernetesBackend(NS, core=object(), apps=object(), prometheus_url=url, wall=lambda: NOW,
                              queries={"broken": "broken_metric"})
        out = call(b, "query_metrics", target="web", metric="memory_mb")
        assert out.data["values"] == [120.5, 99.0] and seen[0].startswith("/api/v1/query_range?query=")
        with pytest.raises(ToolError, match="Prometheus answered HTTP 500"):
            call(b, "query_metrics", target="web", metric="broken")
    finally:
        server.shutdown()
        server.server_close()
    b = KubernetesBackend(NS, core=object(), apps=object(), prometheus_url=url, wall=lambda: NOW)
    with pytest.raises(ToolError, match="unreachable"):
        call(b, "query_metrics", target="web", metric="memory_mb")


def test_custom_promql_templates() -> None:
    from srezero.backends.prometheus import promql

    q = promql("queue_depth", "jobs", NS, {"queue_depth": 'sum(mq{{namespace="{ns}",queue="{target}"}})'})
    assert q == 'sum(mq{namespace="shop",queue="jobs"})'
    with pytest.raises(ToolError, match="PromQL template for bad is malformed"):
        promql("bad", "jobs", NS, {"bad": 'sum(mq{namespace="{ns}"})'})
