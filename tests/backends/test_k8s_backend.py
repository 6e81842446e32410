"""The Kubernetes backend against an injected fake client: the exact API calls behind each tool."""

from __future__ import annotations

from typing import Any

import pytest
from k8s_fakes import (
    NOW,
    NS,
    ApiException,
    FakeProm,
    Recorder,
    deployment,
    event,
    node,
    not_found,
    pod,
    replica_set,
    template,
)
from k8s_fakes import k8s as kc

from srezero.backends.k8s import JSON_PATCH, RESTARTED_AT, SMP, KubernetesBackend
from srezero.backends.prometheus import METRIC_QUERIES
from srezero.tools.registry import ToolError, load_tools

PROM = "http://prom.example:9090"


def make(responses: dict[str, Any] | None = None, prom: FakeProm | None = None) -> tuple[KubernetesBackend, list]:
    calls: list[tuple[str, dict[str, Any]]] = []
    responses = responses or {}
    backend = KubernetesBackend(NS, core=Recorder("core", calls, responses), apps=Recorder("apps", calls, responses),
                                prometheus_url=PROM if prom else None, http_get=prom, wall=lambda: NOW,
                                clock=lambda: 0.0, sleep=lambda s: None)
    return backend, calls


def call(backend: KubernetesBackend, tool: str, **args: Any):
    """Validate like the episode does, then call the backend."""
    return backend.call(tool, load_tools()[tool].validate(args))


def pods(*items: Any) -> Any:
    return kc.V1PodList(items=list(items))


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
    b, calls = make({"core.list_namespaced_event": kc.CoreV1EventList(items=[
        event("web-7d9f-a1", "Pod", "BackOff", "Back-off restarting failed container", 5, count=4),
        event("web", "Deployment", "ScalingReplicaSet", "Scaled up", 20, type_="Normal"),
        event("db-0", "Pod", "Unhealthy", "Readiness probe failed", 3),
        event("web-7d9f-a1", "Pod", "Pulled", "old", 300, type_="Normal")])})
    out = call(b, "get_events", entity="web", window_s=3600)
    assert calls == [("core.list_namespaced_event", {"namespace": NS})]
    assert [e["reason"] for e in out.data] == ["ScalingReplicaSet", "BackOff"]  # oldest first; db-0 and old excluded
    assert "(x4)" in out.text and "pod/web-7d9f-a1" in out.text


def test_get_events_hides_events_about_non_workload_objects() -> None:
    """A chaos tool's own objects (PodChaos, NetworkChaos...) would name what was injected."""
    b, _ = make({"core.list_namespaced_event": kc.CoreV1EventList(items=[
        event("web-kill", "PodChaos", "FinalizerInited", "Finalizer has been inited", 4, type_="Normal"),
        event("web-7d9f-a1", "Pod", "Killing", "Stopping container web", 4, type_="Normal")])})
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
    body = {"spec": {"template": {"spec": {"containers": [{"name": "web", "env": [{"name": "DB_URL",
                                                                                    "value": "postgres://db2"}]}]}}}}
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
    b, calls = make({"apps.patch_namespaced_deployment": not_found()})
    call(b, "restart", target="web-7d9f-a1")
    assert calls[1] == ("core.delete_namespaced_pod", {"name": "web-7d9f-a1", "namespace": NS})


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


def test_cordon_and_drain() -> None:
    b, calls = make()
    call(b, "cordon_node", node="node-a")
    call(b, "cordon_node", node="node-a", uncordon=True)
    assert calls == [("core.patch_node", {"name": "node-a", "body": {"spec": {"unschedulable": True}},
                                          "_content_type": SMP}),
                     ("core.patch_node", {"name": "node-a", "body": {"spec": {"unschedulable": False}},
                                          "_content_type": SMP})]

    def evict(**kw: Any) -> Any:
        return ApiException(status=429, reason="Too Many Requests") if kw["name"] == "db-0" else None

    b, calls = make({"core.list_namespaced_pod": pods(pod("web-1", "web"), pod("db-0", "db"),
                                                      pod("agent-x", "agent", owner="DaemonSet")),
                     "core.create_namespaced_pod_eviction": evict})
    out = call(b, "drain_node", node="node-a")
    assert [c[0] for c in calls] == ["core.patch_node", "core.list_namespaced_pod",
                                     "core.create_namespaced_pod_eviction", "core.create_namespaced_pod_eviction"]
    assert calls[1][1] == {"namespace": NS, "field_selector": "spec.nodeName=node-a"}
    assert calls[3][1] == {"name": "web-1", "namespace": NS, "body": {
        "apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "web-1", "namespace": NS}}}
    assert out.data == {"evicted": ["web-1"], "blocked": ["db-0"]} and "PodDisruptionBudget" in out.text


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
    assert q["query"] == METRIC_QUERIES["error_rate"].format(ns=NS, target="web", pods="web(-.*)?")
    assert float(q["end"]) == NOW.timestamp() and float(q["start"]) == NOW.timestamp() - 600 and q["step"] == "30"
    assert out.data["values"] == [0.01, 0.25, 0.5] and "last 0.5" in out.text
    with pytest.raises(ToolError, match="no Prometheus query for metric 'disk_magic'"):
        call(b, "query_metrics", target="web", metric="disk_magic")
    with pytest.raises(ToolError, match="not a Kubernetes object name"):
        call(b, "query_metrics", target='web"}) or vector(1', metric="error_rate")


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
