"""The Kubernetes backend: the same tools, served from one live namespace.

==================  =====================================================================
tool                Kubernetes API calls (official ``kubernetes`` client)
==================  =====================================================================
get_status          CoreV1 ``list_namespaced_pod`` (``label_selector=app=<service>``)
get_events          CoreV1 ``list_namespaced_event``; filtered to the entity and window
search_logs         ``list_namespaced_pod`` (or ``read_namespaced_pod``), then
                    ``read_namespaced_pod_log`` per pod (``since_seconds``, ``timestamps``)
get_config          AppsV1 ``read_namespaced_deployment`` (container env) and CoreV1
                    ``read_namespaced_config_map`` ``<service>-config``
get_topology        AppsV1 ``list_namespaced_deployment``, CoreV1 ``list_node``
get_changes         AppsV1 ``list_namespaced_replica_set`` (revisions)
set_config          ``env.KEY``: ``patch_namespaced_deployment`` (strategic merge of the env
                    var, which rolls the pods); other keys: ``patch_namespaced_config_map``
restart             ``patch_namespaced_deployment`` with the ``kubectl.kubernetes.io/restartedAt``
                    template annotation; a pod name: ``read_namespaced_pod`` then
                    ``delete_namespaced_pod`` (refused for a pod with no controller)
rollback            ``read_namespaced_deployment``, ``list_namespaced_replica_set``, JSON patch
                    of ``/spec/template`` to the previous revision's template
scale               ``patch_namespaced_deployment_scale``
cordon_node         ``list_namespaced_pod`` on the node (scope check), ``patch_node`` ``spec.unschedulable``
drain_node          ``list_namespaced_pod`` on the node (scope check), ``patch_node``, then
                    ``create_namespaced_pod_eviction`` per pod (this namespace only; kubectl drain's
                    safeguards: DaemonSet, mirror, controller-less and emptyDir pods are skipped)
query_metrics       Prometheus ``/api/v1/query_range`` (needs ``prometheus_url``)
get_alerts          Prometheus ``/api/v1/alerts`` (needs ``prometheus_url``)
==================  =====================================================================

Anything else (traces, node diagnostics, failover) raises "<tool> is not supported by this
backend". The client objects can be injected (``core=``, ``apps=``), which is how the tests record
the exact calls without an API server. On a live cluster time is real: :meth:`advance` sleeps.

Every API call carries ``_request_timeout`` (``request_timeout=``, default 10 s). Failures are
classified: the agent's own mistakes (404 unknown object, 400/422 invalid value, 403 not allowed,
409...) are :class:`ToolError`; the backend's (5xx, 401, 408, 429, timeouts, connection failures,
malformed answers) are :class:`BackendError`, which a live episode counts in ``backend_errors``.
Both quote the API's ``Status.message``. A write that fails after changing something says so.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
import time
from collections.abc import Callable
from typing import Any

from srezero.backends._k8s_support import (
    SMP,
    WORKLOAD_KINDS,
    NodeTools,
    _age,
    _api_error,
    _controller,
    _is_timeout,
    _is_transport,
    _labels,
    _log_time,
    _status_message,
    _Timed,
    _ts,
)
from srezero.backends.prometheus import (
    METRIC_QUERIES,
    NAME_RE,
    BackendError,
    HttpGet,
    Prometheus,
    cap,
    is_backend_status,
    promql,
)
from srezero.tools.registry import ToolError, ToolOutput

__all__ = ["BackendError", "BackendUnavailable", "KubernetesBackend"]

RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"
REVISION = "deployment.kubernetes.io/revision"
LOG_TAIL = 2000
JSON_PATCH = "application/json-patch+json"
_LEVEL = re.compile(r"\b(trace|debug|info|warn|warning|error|fatal|critical|panic)\b", re.I)
NOT_FOUND = object()  # what KubernetesBackend._call returns for a 404 it was told to tolerate
MAX_SERIES = 20  # query_metrics shows at most this many series
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_RANK = {"trace": 0, "debug": 0, "info": 1, "warn": 2, "warning": 2, "error": 3, "fatal": 3, "critical": 3, "panic": 3}


class BackendUnavailable(RuntimeError):
    """The backend cannot start (client library missing, no kubeconfig...)."""


class KubernetesBackend(NodeTools):
    """Serves the declared tools from namespace ``namespace`` of a cluster."""

    name = "k8s"
    TOOLS = ("get_status", "get_events", "search_logs", "get_config", "get_topology", "get_changes", "set_config",
             "restart", "rollback", "scale", "cordon_node", "drain_node", "query_metrics", "get_alerts")

    def __init__(self, namespace: str, *, core: Any = None, apps: Any = None, kubeconfig: str | None = None,
                 context: str | None = None, prometheus_url: str | None = None, http_get: HttpGet | None = None,
                 queries: dict[str, str] | None = None, label_key: str = "app",
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] | None = None,
                 wall: Callable[[], dt.datetime] | None = None,
                 request_timeout: float | tuple[float, float] | None = 10.0) -> None:
        if not NAME_RE.match(namespace):
            raise ValueError(f"{namespace!r} is not a valid namespace name")
        self.namespace = namespace
        #: seconds per Kubernetes API request (or ``(connect, read)``); None disables (not recommended)
        self.request_timeout = request_timeout
        if core is None or apps is None:
            core, apps = self._connect(kubeconfig, context, core, apps)
        self.core = _Timed(core, lambda: self.request_timeout)
        self.apps = _Timed(apps, lambda: self.request_timeout)
        prom_timeout = max(request_timeout) if isinstance(request_timeout, tuple) else request_timeout
        self.prometheus = Prometheus(prometheus_url, http_get, prom_timeout or 10.0) if prometheus_url else None
        self.queries = {**METRIC_QUERIES, **(queries or {})}
        self.label_key = label_key
        # looked up at call time, so a test that patches time.sleep reaches it
        self._clock, self._sleep = clock, sleep or (lambda seconds: time.sleep(seconds))
        self._wall = wall or (lambda: dt.datetime.now(dt.UTC))
        self._t0 = clock()
        self._done: list[str] = []  # what the current write has changed so far (reported if it then fails)
        self._touched_nodes: set[str] = set()  # nodes this backend cordoned or drained (may uncordon them)

    @staticmethod
    def _connect(kubeconfig: str | None, context: str | None, core: Any, apps: Any) -> tuple[Any, Any]:
        try:
            import yaml
            from kubernetes import client, config
            from urllib3.util.retry import Retry
        except ImportError:
            raise BackendUnavailable('the Kubernetes backend needs the client: pip install "srezero[k8s]"') from None
        cfg = client.Configuration()  # our own: loading does not change the process-wide default
        try:
            if kubeconfig or context:
                config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=cfg)
            else:
                try:
                    config.load_incluster_config(client_configuration=cfg)
                except config.ConfigException:
                    config.load_kube_config(client_configuration=cfg)
        except (config.ConfigException, OSError, TypeError, ValueError, KeyError, AttributeError,
                yaml.YAMLError) as exc:
            raise BackendUnavailable(f"cannot load a Kubernetes configuration: {cap(str(exc))}") from None
        # a timed-out read is not retried (urllib3 would retry GETs 3 times: 4x the timeout); connects are
        cfg.retries = Retry(total=3, connect=3, read=0, redirect=3, status=0, other=0)
        api = client.ApiClient(cfg)
        return core or client.CoreV1Api(api), apps or client.AppsV1Api(api)

    # ------------------------------------------------------------------ Backend protocol
    def call(self, tool: str, args: dict[str, Any]) -> ToolOutput:
        """Run one tool. ToolError: the agent's input was refused; BackendError: the backend failed."""
        if tool not in self.TOOLS:
            raise ToolError(f"{tool} is not supported by this backend")
        self._done = []
        try:
            return getattr(self, f"_{tool}")(**args)
        except ToolError as exc:
            raise self._with_progress(exc) from None
        except Exception as exc:
            raise self._with_progress(self.classify(exc, tool)) from (None if _api_error(exc) is not None
                                                                       or _is_transport(exc) else exc)

    def classify(self, exc: Exception, tool: str) -> ToolError:
        """``exc`` (from the client) as a ToolError (the agent's input) or a BackendError (the backend's failure)."""
        status = _api_error(exc)
        if status is not None:
            reason = " ".join(str(getattr(exc, "reason", "") or "").split())
            if status == 0:  # the client's own failure (TLS, a request it could not build)
                return BackendError(f"Kubernetes API unreachable in {tool}: {cap(reason)}")
            message = _status_message(exc)
            text = f"Kubernetes API error {status} ({cap(reason, 80)}) in {tool}" + (f": {message}" if message else "")
            return (BackendError if is_backend_status(status) else ToolError)(text)
        if _is_transport(exc):
            what = f"timed out (request timeout {self.request_timeout}s)" if _is_timeout(exc) else "unreachable"
            return BackendError(f"Kubernetes API {what} in {tool}: {type(exc).__name__}: {cap(str(exc))}")
        return BackendError(f"{type(exc).__name__}: {cap(str(exc), 500)}")  # a malformed answer, say

    def _with_progress(self, exc: ToolError) -> ToolError:
        """Add what the failed write already changed to the error text (and ``.partial``)."""
        if not self._done:
            return exc
        done = "; ".join(self._done)
        new = type(exc)(f"{exc} (already done before the failure: {done})", exc.tool)
        new.partial = done  # type: ignore[attr-defined]
        self._done = []
        return new

    def advance(self, seconds: float) -> None:
        if seconds > 0:
            self._sleep(seconds)

    def now(self) -> float:
        return self._clock() - self._t0

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _check(name: str) -> str:
        """Reject anything that is not a Kubernetes object name (also stops selector/PromQL injection)."""
        if not NAME_RE.match(name):
            raise ToolError(f"{name!r} is not a Kubernetes object name")
        return name

    @staticmethod
    def _call(api: Callable[..., Any], missing: str | None, /, **kwargs: Any) -> Any:
        """Call the API; a 404 raises ToolError(``missing``), or returns NOT_FOUND when ``missing`` is None."""
        try:
            return api(**kwargs)
        except Exception as exc:
            if _api_error(exc) != 404:
                raise
            if missing is None:
                return NOT_FOUND
            raise ToolError(missing) from None

    def _selector(self, service: str) -> str:
        return f"{self.label_key}={self._check(service)}"

    def _pods(self, service: str) -> list[Any]:
        kwargs = {"label_selector": self._selector(service)} if service else {}
        pods = self.core.list_namespaced_pod(namespace=self.namespace, **kwargs).items or []
        return sorted(pods, key=lambda p: p.metadata.name)

    def _pods_or_pod(self, name: str) -> list[Any]:
        return self._pods(name) or [self._call(self.core.read_namespaced_pod, self._gone(name), name=name,
                                               namespace=self.namespace)]

    def _gone(self, name: str) -> str:
        return f"no deployment or pod {name!r} in namespace {self.namespace}"

    @staticmethod
    def _patch(method: Callable[..., Any], content_type: str, /, **kwargs: Any) -> Any:
        """Patch with an explicit content type (client versions differ in their default)."""
        try:
            return method(_content_type=content_type, **kwargs)
        except TypeError:  # pragma: no cover - an older client without _content_type picks it itself
            return method(**kwargs)

    @staticmethod
    def _serialize(obj: Any) -> Any:
        if obj is None or isinstance(obj, dict):
            return obj
        try:
            from kubernetes.client import ApiClient
        except ImportError:  # pragma: no cover
            return obj.to_dict()
        return ApiClient().sanitize_for_serialization(obj)

    def _deployment(self, name: str) -> Any:
        return self._call(self.apps.read_namespaced_deployment, f"no deployment {name!r} in namespace {self.namespace}",
                          name=self._check(name), namespace=self.namespace)

    # ------------------------------------------------------------------ read tools
    def _get_status(self, service: str = "") -> ToolOutput:
        now = self._wall()
        rows = [f"{'NAME':40} {'READY':5} {'STATUS':18} {'RESTARTS':8} {'AGE':5} {'NODE':16} IMAGE"]
        data = []
        for p in self._pods(service):
            statuses = (p.status.container_statuses if p.status else None) or []
            ready = sum(1 for c in statuses if c.ready)
            restarts = sum(c.restart_count or 0 for c in statuses)
            state = p.status.phase if p.status else "Unknown"
            for c in statuses:
                reason = (c.state.waiting.reason if c.state and c.state.waiting else None) or \
                         (c.state.terminated.reason if c.state and c.state.terminated else None)
                if reason:
                    state = reason
            if p.metadata.deletion_timestamp:
                state = "Terminating"
            image = p.spec.containers[0].image if p.spec and p.spec.containers else ""
            node = (p.spec.node_name if p.spec else None) or "<none>"
            rows.append(f"{p.metadata.name:40} {ready}/{len(statuses) or 1:<3} {state:18} {restarts:<8} "
                        f"{_age(now, p.metadata.creation_timestamp):5} {node:16} {image}")
            data.append({"name": p.metadata.name, "state": state, "ready": ready, "restarts": restarts, "node": node,
                         "image": image, "service": (p.metadata.labels or {}).get(self.label_key, "")})
        if not data:
            where = f" with {self._selector(service)}" if service else ""
            return ToolOutput(f"no pods{where} in namespace {self.namespace}", [])
        return ToolOutput("\n".join(rows), data)

    def _get_events(self, entity: str = "", window_s: int = 3600, limit: int = 30) -> ToolOutput:
        now = self._wall()
        since = now - dt.timedelta(seconds=window_s)
        items = []
        events = self.core.list_namespaced_event(namespace=self.namespace).items or []
        others = self._longer_names(entity, events)
        for e in events:
            obj = e.involved_object
            name = (obj.name if obj else "") or ""
            # only workload objects: events about other objects (a chaos tool's experiments, say) would
            # tell the agent what was injected
            if obj is not None and obj.kind and obj.kind not in WORKLOAD_KINDS:
                continue
            if entity and not (name == entity or (name.startswith(entity + "-") and
                                                  not any(name == o or name.startswith(o + "-") for o in others))):
                continue
            at = e.last_timestamp or e.event_time or e.metadata.creation_timestamp
            if at is None or at < since:
                continue
            items.append((at, e.type or "Normal", e.reason or "", f"{obj.kind.lower() if obj and obj.kind else ''}/{name}",
                          (e.message or "").strip(), e.count or 1))
        items.sort(key=lambda x: x[0])
        items = items[-limit:]
        lines = [f"{_ts(at)} {kind:7} {reason:18} {obj}: {msg}" + (f" (x{n})" if n > 1 else "")
                 for at, kind, reason, obj, msg, n in items]
        return ToolOutput("\n".join(lines) if lines else "no events in the window",
                          [{"at": _ts(at), "kind": kind, "reason": reason, "object": obj, "message": msg, "count": n}
                           for at, kind, reason, obj, msg, n in items])

    def _longer_names(self, entity: str, events: list[Any]) -> list[str]:
        """Deployments whose names extend ``entity-`` (``web-api`` for ``web``): their objects are not web's."""
        if not entity or not any(((e.involved_object.name if e.involved_object else "") or "").startswith(entity + "-")
                                 for e in events):
            return []
        try:
            deps = self.apps.list_namespaced_deployment(namespace=self.namespace).items or []
        except Exception as exc:
            if (_api_error(exc) or 0) // 100 != 4:  # a Role without deployments/list: match by prefix only
                raise
            return []
        return [d.metadata.name for d in deps if d.metadata.name.startswith(entity + "-")]

    def _search_logs(self, service: str, pattern: str = "", level: str = "", window_s: int = 900,
                     limit: int = 20, previous: bool = False) -> ToolOutput:
        try:
            rx = re.compile(pattern, re.I)
        except re.error as exc:
            raise ToolError(f"invalid pattern {pattern!r}: {exc}") from None
        floor = _RANK.get(level, 0) if level else 0
        lines: list[tuple[dt.datetime, int, str]] = []
        for p in self._pods_or_pod(service):
            kwargs: dict[str, Any] = {"name": p.metadata.name, "namespace": self.namespace,
                                      "since_seconds": int(window_s), "timestamps": True, "tail_lines": LOG_TAIL}
            if previous:  # kubectl logs --previous: the last terminated container's log
                kwargs["previous"] = True
            if p.spec and p.spec.containers and len(p.spec.containers) > 1:
                kwargs["container"] = p.spec.containers[0].name
            try:
                text = self.core.read_namespaced_pod_log(**kwargs) or ""
            except Exception as exc:
                if _api_error(exc) in (400, 404):  # container not started yet, or gone
                    continue
                raise
            for raw in text.splitlines():
                ts, _, msg = raw.partition(" ")
                if not msg:
                    continue
                lvl = _LEVEL.search(msg)
                if (_RANK[lvl.group(1).lower()] if lvl else 1) < floor or not rx.search(msg):
                    continue
                at = _log_time(ts)
                shown_ts = _ts(at) if at else ts[:20]
                lines.append((at or _EPOCH, len(lines), f"{shown_ts} {p.metadata.name} {msg}"))
        lines.sort(key=lambda x: (x[0], x[1]))  # by parsed time, not text ("00.5Z" sorts before "00Z")
        truncated = len(lines) > limit
        shown = [t for *_, t in lines[-limit:]]
        if not shown:
            return ToolOutput(f"no log lines matching {pattern!r} in {service} over the last {window_s // 60} min", [])
        head = f"{len(shown)} line(s) from {service}" + (" (limit reached; older matches not shown)" if truncated else "")
        return ToolOutput(head + "\n" + "\n".join(shown), shown)

    def _get_config(self, service: str) -> ToolOutput:
        dep = self._deployment(service)
        c = dep.spec.template.spec.containers[0]
        cfg: dict[str, Any] = {"image": c.image, "replicas": dep.spec.replicas}
        limits = (c.resources.limits if c.resources else None) or {}
        for k, v in sorted(limits.items()):
            cfg[f"{k}_limit"] = v
        for e in c.env or []:
            cfg[f"env.{e.name}"] = e.value if e.value_from is None else "<from a secret or configmap reference>"
        cm = self._call(self.core.read_namespaced_config_map, None, name=f"{service}-config", namespace=self.namespace)
        if cm is not NOT_FOUND:
            cfg.update(sorted((cm.data or {}).items()))
        lines = [f"{k} = {v!r}" for k, v in sorted(cfg.items())]
        return ToolOutput(f"{service} configuration:\n" + "\n".join(lines), dict(sorted(cfg.items())))

    def _get_topology(self) -> ToolOutput:
        deps = self.apps.list_namespaced_deployment(namespace=self.namespace).items or []
        nodes = self.core.list_node().items or []
        lines = [f"namespace {self.namespace}", "deployments:"]
        data: dict[str, Any] = {"deployments": {}, "nodes": {}}
        for d in sorted(deps, key=lambda d: d.metadata.name):
            ready = (d.status.ready_replicas if d.status else 0) or 0
            lines.append(f"  {d.metadata.name}: {ready}/{d.spec.replicas} ready, image "
                         f"{d.spec.template.spec.containers[0].image}")
            data["deployments"][d.metadata.name] = {"ready": ready, "replicas": d.spec.replicas}
        lines.append("nodes:")
        for n in sorted(nodes, key=lambda n: n.metadata.name):
            conds = {c.type: c.status for c in (n.status.conditions or [])} if n.status else {}
            flags = ("" if conds.get("Ready") == "True" else " NotReady") + (" cordoned" if n.spec and n.spec.unschedulable
                                                                             else "")
            lines.append(f"  {n.metadata.name}{flags}")
            data["nodes"][n.metadata.name] = {"ready": conds.get("Ready") == "True",
                                              "cordoned": bool(n.spec and n.spec.unschedulable)}
        if self.prometheus:
            lines.append("metrics (query_metrics): " + ", ".join(self.queries))
        return ToolOutput("\n".join(lines), data)

    def _get_changes(self, service: str = "", window_h: float = 72.0) -> ToolOutput:
        kwargs = {"label_selector": self._selector(service)} if service else {}
        rss = self.apps.list_namespaced_replica_set(namespace=self.namespace, **kwargs).items or []
        since = self._wall() - dt.timedelta(hours=window_h)
        rows = []
        for rs in rss:
            created = rs.metadata.creation_timestamp
            if created is None or created < since:
                continue
            owner = next((o.name for o in rs.metadata.owner_references or [] if o.kind == "Deployment"), rs.metadata.name)
            rev = (rs.metadata.annotations or {}).get(REVISION, "?")
            image = rs.spec.template.spec.containers[0].image if rs.spec and rs.spec.template else ""
            rows.append((created, f"{_ts(created)} {owner:24} revision {rev:>3}  image {image}"))
        rows.sort(key=lambda x: x[0])
        text = "\n".join(t for _, t in rows) if rows else f"no rollouts in the last {window_h:g} h"
        return ToolOutput(text, [t for _, t in rows])

    # ------------------------------------------------------------------ write tools
    def _set_config(self, service: str, key: str, value: Any) -> ToolOutput:
        text = str(value).lower() if isinstance(value, bool) else str(value)
        if key.startswith("env."):
            name = key[4:]
            if not re.fullmatch(r"[-._a-zA-Z][-._a-zA-Z0-9]*", name):
                raise ToolError(f"{name!r} is not a valid environment variable name (set_config key env.NAME)")
            dep = self._deployment(service)
            container = dep.spec.template.spec.containers[0].name
            body = {"spec": {"template": {"spec": {"containers": [{"name": container,
                                                                   "env": [{"name": name, "value": text}]}]}}}}
            self._patch(self.apps.patch_namespaced_deployment, SMP, name=service, namespace=self.namespace, body=body)
            return ToolOutput(f"{service}.{key} = {text!r}; pods are rolling to pick it up")
        self._call(functools.partial(self._patch, self.core.patch_namespaced_config_map, SMP),
                   f"{service} has no configmap {service}-config; env.* keys patch the deployment",
                   name=f"{self._check(service)}-config", namespace=self.namespace, body={"data": {key: text}})
        return ToolOutput(f"configmap {service}-config: {key} = {text!r}")

    def _restart(self, target: str) -> ToolOutput:
        body = {"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: self._wall().isoformat()}}}}}
        done = self._call(functools.partial(self._patch, self.apps.patch_namespaced_deployment, SMP), None,
                          name=self._check(target), namespace=self.namespace, body=body)
        if done is not NOT_FOUND:
            return ToolOutput(f"rollout restart of deployment {target} started")
        pod = self._call(self.core.read_namespaced_pod, self._gone(target), name=target, namespace=self.namespace)
        owner = _controller(pod)
        if owner is None:
            raise ToolError(f"pod {target} has no controller (no ownerReferences), so nothing would start a "
                            "replacement; it was not deleted")
        self._call(self.core.delete_namespaced_pod, self._gone(target), name=target, namespace=self.namespace)
        return ToolOutput(f"deleted pod {target}; its {owner.kind} {owner.name} starts a replacement")

    def _rollback(self, service: str) -> ToolOutput:
        dep = self._deployment(service)
        current = int((dep.metadata.annotations or {}).get(REVISION, "0") or 0)
        labels = (dep.spec.selector.match_labels if dep.spec.selector else None) or {}
        selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
        rss = self.apps.list_namespaced_replica_set(namespace=self.namespace, label_selector=selector).items or []
        older = []
        for rs in rss:
            owners = rs.metadata.owner_references or []
            if not any(o.kind == "Deployment" and o.name == service for o in owners):
                continue
            rev = int((rs.metadata.annotations or {}).get(REVISION, "0") or 0)
            if 0 < rev < current:
                older.append((rev, rs))
        if not older:
            raise ToolError(f"{service} has no previous revision to roll back to")
        rev, rs = max(older, key=lambda x: x[0])
        template = self._serialize(rs.spec.template)
        template.get("metadata", {}).get("labels", {}).pop("pod-template-hash", None)
        patch = [{"op": "replace", "path": "/spec/template", "value": template}]
        self._patch(self.apps.patch_namespaced_deployment, JSON_PATCH, name=service, namespace=self.namespace, body=patch)
        return ToolOutput(f"rolling back {service} from revision {current} to revision {rev}")

    def _scale(self, service: str, replicas: int) -> ToolOutput:
        self._deployment(service)
        self._patch(self.apps.patch_namespaced_deployment_scale, SMP, name=service, namespace=self.namespace,
                    body={"spec": {"replicas": replicas}})
        return ToolOutput(f"scaling {service} to {replicas} replica(s)")

    # ------------------------------------------------------------------ Prometheus
    def _prom(self, tool: str) -> Prometheus:
        if self.prometheus is None:
            raise ToolError(f"{tool} is not supported by this backend without a Prometheus URL (--prometheus-url)")
        return self.prometheus

    def _query_metrics(self, target: str, metric: str, window_s: int = 900) -> ToolOutput:
        prom = self._prom("query_metrics")
        query = promql(metric, target, self.namespace, self.queries)
        end = self._wall().timestamp()
        series = sorted(((_labels(m), v) for m, v in prom.query_range(query, end - window_s, end, 30) if v),
                        key=lambda s: s[0])
        if not series:
            return ToolOutput(f"no data for {metric} of {target} over the last {window_s // 60} min",
                              {"target": target, "metric": metric, "values": [], "series": []})

        def stats(values: list[float]) -> str:
            return (f"min {min(values):.4g}  avg {sum(values) / len(values):.4g}  max {max(values):.4g}  "
                    f"last {values[-1]:.4g}")

        head = f"{metric} of {target} over the last {window_s // 60} min (30s step)"
        if len(series) == 1:
            label, values = series[0]
            text = (head + (f" {label}" if label else "") + f"\n  {stats(values)}\n"
                    f"  values: {' '.join(f'{v:.4g}' for v in values[-30:])}")
        else:
            shown = series[:MAX_SERIES]
            text = head + f", {len(series)} series" + "".join(
                f"\n  {label or '{}'}: {stats(values)}\n    values: {' '.join(f'{v:.4g}' for v in values[-10:])}"
                for label, values in shown)
            if len(series) > len(shown):
                text += f"\n  ... {len(series) - len(shown)} more series not shown"
        return ToolOutput(text, {"target": target, "metric": metric, "values": series[0][1][-30:],
                                 "series": [{"labels": label, "values": values[-30:]}
                                            for label, values in series[:MAX_SERIES]]})

    def _get_alerts(self) -> ToolOutput:
        alerts = self._prom("get_alerts").alerts()
        mine = [a for a in alerts if (a.get("labels") or {}).get("namespace") in (None, self.namespace)]
        lines = [f"[{str(a.get('state') or '?').upper()} {(a.get('labels') or {}).get('severity', '')}] "
                 f"{(a.get('labels') or {}).get('alertname', '?')}: "
                 f"{(a.get('annotations') or {}).get('summary') or (a.get('annotations') or {}).get('description', '')} "
                 f"(since {a.get('activeAt', '?')})" for a in mine]
        return ToolOutput("\n".join(lines) if lines else "no alerts firing", mine)
