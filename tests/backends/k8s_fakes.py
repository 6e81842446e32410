"""A fake Kubernetes client that records every API call, built from the official client's models."""

from __future__ import annotations

import datetime as dt
import inspect
import types
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import orjson
import pytest

k8s = pytest.importorskip("kubernetes.client")
from kubernetes.client.exceptions import ApiException  # noqa: E402

NS = "shop"
NOW = dt.datetime(2026, 3, 1, 12, 0, 0, tzinfo=dt.UTC)


MISSING = object()


#: the real API classes a Recorder stands in for: its calls must bind to their signatures
REAL_APIS = {"core": "CoreV1Api", "apps": "AppsV1Api"}


class Recorder:
    """Stands in for CoreV1Api/AppsV1Api: ``calls`` gets ``("core.method", kwargs)`` in order.

    Every call is bound against the real client method's signature first, so a misspelt method or
    keyword (``list_namespaced_events``, ``label_selctor=``) fails here as it would against the client.
    The ``_request_timeout`` every call carries is kept out of ``calls`` (so call lists stay readable)
    and recorded in ``timeouts`` as ``("core.method", timeout)`` (``MISSING`` when absent). A ``list_*``
    method with no response given answers an empty list (an explicit ``None`` stays ``None``).
    """

    def __init__(self, prefix: str, calls: list[tuple[str, dict[str, Any]]], responses: dict[str, Any],
                 timeouts: list[tuple[str, Any]] | None = None) -> None:
        self._prefix, self._calls, self._responses = prefix, calls, responses
        self._real = getattr(k8s, REAL_APIS[prefix])
        self.timeouts = [] if timeouts is None else timeouts

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_"):
            raise AttributeError(name)
        real = getattr(self._real, name, None)
        if not callable(real):
            raise AttributeError(f"{REAL_APIS[self._prefix]} has no method {name!r}")

        def method(**kwargs: Any) -> Any:
            inspect.signature(real).bind(None, **kwargs)  # TypeError on an unknown or missing argument
            self.timeouts.append((f"{self._prefix}.{name}", kwargs.pop("_request_timeout", MISSING)))
            self._calls.append((f"{self._prefix}.{name}", kwargs))
            resp = self._responses.get(f"{self._prefix}.{name}", MISSING)
            if resp is MISSING:
                resp = types.SimpleNamespace(items=[]) if name.startswith("list_") else None
            if callable(resp) and not isinstance(resp, type):
                resp = resp(**kwargs)
            if isinstance(resp, Exception):
                raise resp
            return resp

        return method


def not_found() -> ApiException:
    return ApiException(status=404, reason="Not Found")


def api_error(status: int, reason: str, message: str = "") -> ApiException:
    """An ApiException carrying a Kubernetes Status body, as the client raises it."""
    exc = ApiException(status=status, reason=reason)
    exc.body = orjson.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message,
                             "reason": reason.replace(" ", ""), "code": status}).decode()
    return exc


def meta(name: str, **kw: Any) -> Any:
    return k8s.V1ObjectMeta(name=name, namespace=NS, **kw)


def pod(name: str, app: str, node: str = "node-a", reason: str | None = None, ready: bool = True,
        restarts: int = 0, owner: str | None = "ReplicaSet", empty_dir: str | None = None,
        annotations: dict[str, str] | None = None) -> Any:
    """A running pod; ``owner=None`` has no ownerReferences, ``empty_dir`` names an emptyDir volume."""
    state = k8s.V1ContainerState(waiting=k8s.V1ContainerStateWaiting(reason=reason)) if reason else \
        k8s.V1ContainerState(running=k8s.V1ContainerStateRunning(started_at=NOW))
    owners = [k8s.V1OwnerReference(api_version="apps/v1", kind=owner, name=f"{app}-rs", uid="u1")] if owner else None
    volumes = [k8s.V1Volume(name=empty_dir, empty_dir=k8s.V1EmptyDirVolumeSource())] if empty_dir else None
    return k8s.V1Pod(
        metadata=meta(name, labels={"app": app}, creation_timestamp=NOW - dt.timedelta(minutes=30),
                      owner_references=owners, annotations=annotations),
        spec=k8s.V1PodSpec(node_name=node, containers=[k8s.V1Container(name=app, image=f"shop/{app}:1.4.2")],
                           volumes=volumes),
        status=k8s.V1PodStatus(phase="Running", container_statuses=[k8s.V1ContainerStatus(
            name=app, image=f"shop/{app}:1.4.2", image_id="x", ready=ready, restart_count=restarts, state=state)]))


def template(app: str, image: str, env: dict[str, str] | None = None, hash_: str = "abc") -> Any:
    return k8s.V1PodTemplateSpec(
        metadata=k8s.V1ObjectMeta(labels={"app": app, "pod-template-hash": hash_}),
        spec=k8s.V1PodSpec(containers=[k8s.V1Container(
            name=app, image=image, env=[k8s.V1EnvVar(name=k, value=v) for k, v in (env or {}).items()])]))


def deployment(app: str, replicas: int = 3, available: int = 3, revision: int = 3, updated: int | None = None,
               total: int | None = None, generation: int = 2, observed: int = 2,
               conditions: list[Any] | None = None) -> Any:
    """A deployment whose rollout is complete unless told otherwise (``updated``, ``total`` (status.replicas),
    ``observed`` generation, ``conditions``)."""
    updated = replicas if updated is None else updated
    return k8s.V1Deployment(
        metadata=meta(app, annotations={"deployment.kubernetes.io/revision": str(revision)}, uid=f"uid-{app}",
                      generation=generation),
        spec=k8s.V1DeploymentSpec(replicas=replicas, selector=k8s.V1LabelSelector(match_labels={"app": app}),
                                  template=template(app, f"shop/{app}:1.4.2", {"DB_URL": "postgres://db"})),
        status=k8s.V1DeploymentStatus(replicas=updated if total is None else total, ready_replicas=available,
                                      available_replicas=available, updated_replicas=updated,
                                      observed_generation=observed, conditions=conditions))


def replica_set(app: str, revision: int, image: str, owner: str | None = None, minutes_ago: int = 60) -> Any:
    return k8s.V1ReplicaSet(
        metadata=meta(f"{app}-rs{revision}", annotations={"deployment.kubernetes.io/revision": str(revision)},
                      creation_timestamp=NOW - dt.timedelta(minutes=minutes_ago),
                      owner_references=[k8s.V1OwnerReference(api_version="apps/v1", kind="Deployment",
                                                             name=owner or app, uid="u")]),
        spec=k8s.V1ReplicaSetSpec(selector=k8s.V1LabelSelector(match_labels={"app": app}),
                                  template=template(app, image, hash_=f"h{revision}")))


def event(name: str, kind: str, reason: str, message: str, minutes_ago: float, type_: str = "Warning",
          count: int = 1) -> Any:
    return k8s.CoreV1Event(metadata=meta(f"{name}.{reason}"), involved_object=k8s.V1ObjectReference(kind=kind, name=name),
                           reason=reason, message=message, type=type_, count=count,
                           last_timestamp=NOW - dt.timedelta(minutes=minutes_ago))


def new_style_event(name: str, kind: str, reason: str, message: str, first_minutes_ago: float,
                    last_minutes_ago: float, count: int) -> Any:
    """An event written through events.k8s.io (as kube-scheduler does): no lastTimestamp or count, but
    eventTime (the first occurrence) and series (the latest one and the count)."""
    return k8s.CoreV1Event(metadata=meta(f"{name}.{reason}", creation_timestamp=NOW - dt.timedelta(minutes=first_minutes_ago)),
                           involved_object=k8s.V1ObjectReference(kind=kind, name=name), reason=reason, message=message,
                           type="Warning", event_time=NOW - dt.timedelta(minutes=first_minutes_ago),
                           series=k8s.CoreV1EventSeries(count=count,
                                                        last_observed_time=NOW - dt.timedelta(minutes=last_minutes_ago)))


def node(name: str, ready: bool = True, unschedulable: bool = False, taint: str | None = None) -> Any:
    taints = [k8s.V1Taint(key=taint, effect="NoSchedule")] if taint else None
    return k8s.V1Node(metadata=k8s.V1ObjectMeta(name=name), spec=k8s.V1NodeSpec(unschedulable=unschedulable, taints=taints),
                      status=k8s.V1NodeStatus(conditions=[k8s.V1NodeCondition(type="Ready",
                                                                              status="True" if ready else "False")]))


def two_nodes() -> Any:
    """node-a (where the fakes' pods run) and node-b: draining node-a leaves somewhere to go."""
    return k8s.V1NodeList(items=[node("node-a"), node("node-b")])


def statefulset(name: str, replicas: int = 1, ready: int = 1, current: str = "r1", update: str = "r1") -> Any:
    return k8s.V1StatefulSet(
        metadata=meta(name, generation=1),
        spec=k8s.V1StatefulSetSpec(replicas=replicas, selector=k8s.V1LabelSelector(match_labels={"app": name}),
                                   service_name=name, template=template(name, f"shop/{name}:16")),
        status=k8s.V1StatefulSetStatus(replicas=replicas, ready_replicas=ready, available_replicas=ready,
                                       updated_replicas=replicas, current_revision=current, update_revision=update,
                                       observed_generation=1))


def daemonset(name: str, desired: int = 2, available: int = 2, updated: int | None = None) -> Any:
    return k8s.V1DaemonSet(
        metadata=meta(name, generation=1),
        spec=k8s.V1DaemonSetSpec(selector=k8s.V1LabelSelector(match_labels={"app": name}),
                                 template=template(name, f"shop/{name}:1")),
        status=k8s.V1DaemonSetStatus(desired_number_scheduled=desired, number_available=available,
                                     updated_number_scheduled=desired if updated is None else updated,
                                     current_number_scheduled=desired, number_misscheduled=0, number_ready=available,
                                     observed_generation=1))


class FakeProm:
    """An injected ``http_get`` for the Prometheus client: records URLs, answers from ``answers``."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.urls: list[str] = []
        self.answers = answers

    def __call__(self, url: str) -> bytes:
        self.urls.append(url)
        path = urlsplit(url).path.rsplit("/", 1)[-1]
        data = self.answers[path]
        if callable(data):  # an answer that changes from call to call
            data = data()
        if isinstance(data, Exception):
            raise data
        return orjson.dumps({"status": "success", "data": data})

    def params(self, i: int = -1) -> dict[str, str]:
        return {k: v[0] for k, v in parse_qs(urlsplit(self.urls[i]).query).items()}


class ScriptedAgent:
    """A user agent (``--agent k8s_fakes:ScriptedAgent``) that types a fixed list of actions."""

    SCRIPT: tuple[Any, ...] = (
        "kubectl get pods -l app=web",
        "kubectl logs web --tail 5",
        "get_traces()",
        {"tool": "submit_diagnosis", "args": {"root_causes": [
            {"entity": "web.env.DB_URL", "category": "misconfiguration", "detail": "DB_URL points at the old host"}]}},
        "kubectl set env deploy/web DB_URL=postgres://db2",
        "resolve()",
    )

    def reset(self, task_info: Any, seed: int, tool_specs: list[dict[str, Any]]) -> None:
        self.i = 0

    def act(self, observation: Any) -> Any:
        self.i += 1
        return self.SCRIPT[self.i - 1]


def cluster_responses(available: int = 3) -> dict[str, Any]:
    """Enough of a namespace for the scripted agent and the readiness check."""
    return {
        "core.list_namespaced_pod": k8s.V1PodList(items=[pod("web-1", "web"), pod("web-2", "web")]),
        "core.read_namespaced_pod_log": "2026-03-01T11:59:00Z ERROR could not connect to postgres://db\n",
        "apps.read_namespaced_deployment": deployment("web"),
        "apps.list_namespaced_deployment": k8s.V1DeploymentList(items=[deployment("web", available=available),
                                                                      deployment("db", replicas=1, available=1)]),
        "core.list_node": two_nodes(),
    }


class FakeApiServer:
    """A local HTTP server the real ``kubernetes`` client talks to: routes are ``(method, path regex)`` ->
    ``(status, json body)``; a route can hang until :meth:`close` (to exercise request timeouts)."""

    def __init__(self) -> None:
        import re
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.routes: list[tuple[str, Any, int, Any, bool]] = []
        self.calls: list[tuple[str, str]] = []
        #: every request as (method, path with query, Content-Type, decoded JSON body or None)
        self.requests: list[tuple[str, str, str, Any]] = []
        self.release = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _do(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n) if n else b""
                fake.calls.append((self.command, self.path))
                fake.requests.append((self.command, self.path, self.headers.get("Content-Type") or "",
                                      orjson.loads(raw) if raw else None))
                status, body, hang = 404, {"kind": "Status", "code": 404, "reason": "NotFound"}, False
                for method, rx, st, b, h in fake.routes:
                    if method == self.command and rx.search(self.path):
                        status, body, hang = st, b, h
                        break
                if hang:
                    fake.release.wait(5)
                data = orjson.dumps(body)
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up (timed out)
                    pass

            do_GET = do_POST = do_PATCH = do_DELETE = _do

            def log_message(self, *args: Any) -> None:
                pass

        self._re = re
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def route(self, method: str, path: str, status: int = 200, body: Any = None, hang: bool = False) -> None:
        self.routes.insert(0, (method, self._re.compile(path), status, body if body is not None else {}, hang))

    def clients(self, retries: Any = None) -> tuple[Any, Any]:
        cfg = k8s.Configuration()
        cfg.host = self.url
        cfg.retries = retries
        api = k8s.ApiClient(cfg)
        return k8s.CoreV1Api(api), k8s.AppsV1Api(api)

    def kubeconfig(self, path: Any) -> str:
        """A kubeconfig file pointing at this server."""
        path.write_text(orjson.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "fake",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "u", "user": {"token": "t"}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "u"}}]}).decode())
        return str(path)

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def status_body(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "reason": reason,
            "message": message}
