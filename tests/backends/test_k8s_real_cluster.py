"""The Kubernetes backend against a real cluster. Runs only when KUBECONFIG points at a reachable one.

See docs/kubernetes.md ("Running the real-cluster test on kind"). It creates a throw-away namespace
``srezero-test-<random>``, one small Deployment, exercises the tools through a LiveEpisode, and
deletes the namespace. Set SREZERO_TEST_IMAGE to use another image than busybox.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest


def _cluster():
    path = os.environ.get("KUBECONFIG", "")
    if not path or not all(Path(p).is_file() for p in path.split(os.pathsep)):
        pytest.skip("KUBECONFIG does not point at a kubeconfig file")
    client = pytest.importorskip("kubernetes.client")
    config = pytest.importorskip("kubernetes.config")
    try:
        config.load_kube_config()
        url = urlsplit(client.Configuration.get_default_copy().host)
        socket.create_connection((url.hostname, url.port or 443), timeout=3).close()  # fail fast, no retries
        client.VersionApi().get_code(_request_timeout=5)
    except Exception as exc:  # no cluster behind the kubeconfig
        pytest.skip(f"no reachable cluster: {type(exc).__name__}")
    return client


def _wait(pred, what: str, timeout: float = 180.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(2)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def namespace():
    client = _cluster()
    core, apps = client.CoreV1Api(), client.AppsV1Api()
    ns = f"srezero-test-{os.urandom(3).hex()}"
    core.create_namespace({"metadata": {"name": ns}})
    image = os.environ.get("SREZERO_TEST_IMAGE", "busybox:1.36")
    script = 'while true; do echo "$(date -u +%FT%TZ) INFO hello $GREETING"; sleep 2; done'
    apps.create_namespaced_deployment(ns, {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "web", "image": image, "command": ["sh", "-c", script],
                                                       "env": [{"name": "GREETING", "value": "world"}]}]}}}})
    try:
        _wait(lambda: (apps.read_namespaced_deployment(name="web", namespace=ns).status.available_replicas or 0) >= 1,
              "the test deployment to become available")
        yield ns, core, apps
    finally:
        core.delete_namespace(ns)


def test_tools_against_a_real_namespace(namespace) -> None:
    from srezero.backends.k8s import KubernetesBackend
    from srezero.backends.live_episode import LiveEpisode

    ns, _core, apps = namespace
    env = LiveEpisode(KubernetesBackend(ns), verify_s=5)
    env.reset()
    obs, *_ = env.step("kubectl get pods -l app=web")
    assert obs.ok and "web-" in obs.text and "Running" in obs.text, obs.text
    obs, *_ = env.step('search_logs(service="web", pattern="hello world", window_s=300)')
    assert obs.ok and "hello world" in obs.text, obs.text
    obs, *_ = env.step("kubectl get events")
    assert obs.ok, obs.error
    obs, *_ = env.step("get_config(service='web')")
    assert obs.ok and "env.GREETING = 'world'" in obs.text
    obs, *_ = env.step("kubectl set env deploy/web GREETING=class")
    assert obs.ok, obs.error
    env_vars = apps.read_namespaced_deployment(name="web", namespace=ns).spec.template.spec.containers[0].env
    assert {e.name: e.value for e in env_vars}["GREETING"] == "class"
    obs, *_ = env.step("kubectl rollout restart deploy/web")
    assert obs.ok, obs.error
    ann = apps.read_namespaced_deployment(name="web", namespace=ns).spec.template.metadata.annotations
    assert "kubectl.kubernetes.io/restartedAt" in ann
    obs, *_ = env.step("kubectl scale deploy/web --replicas 2")
    assert obs.ok and apps.read_namespaced_deployment(name="web", namespace=ns).spec.replicas == 2
    _wait(lambda: (apps.read_namespaced_deployment(name="web", namespace=ns).metadata.annotations or {})
          .get("deployment.kubernetes.io/revision") == "3", "revision 3")
    obs, *_ = env.step("kubectl rollout undo deploy/web")
    assert obs.ok and "to revision 2" in obs.text, obs.error
    obs, *_ = env.step("get_traces()")
    assert obs.error == "get_traces is not supported by this backend"
    env.step({"tool": "submit_diagnosis", "args": {"root_causes": []}})
    env.step("resolve()")
    _wait(lambda: (apps.read_namespaced_deployment(name="web", namespace=ns).status.available_replicas or 0) >= 2,
          "two available replicas")
    assert env.result["diagnosis"]["submitted"] and env.result["mitigation"]["deployments"]["web"].endswith("/2")
