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
get_topology        AppsV1 ``list_namespaced_deployment``, CoreV1 ``list_node`` (a 403 there: "not visible")
get_changes         AppsV1 ``list_namespaced_replica_set`` (revisions)
set_config          ``env.KEY``: ``patch_namespaced_deployment`` (strategic merge of the env
                    var, which rolls the pods); other keys: ``patch_namespaced_config_map``
restart             ``patch_namespaced_deployment`` with the ``kubectl.kubernetes.io/restartedAt``
                    template annotation; a pod name: ``read_namespaced_pod`` then
                    ``delete_namespaced_pod`` (refused for a pod with no controller)
rollback            ``read_namespaced_deployment``, ``list_namespaced_replica_set``, JSON patch
                    of ``/spec/template`` to the previous revision's template
scale               ``patch_namespaced_deployment_scale``
cordon_node         ``list_namespaced_pod`` on the node (scope check), ``list_node`` (never the last
                    schedulable node), ``patch_node`` ``spec.unschedulable``
drain_node          as cordon_node, then ``create_namespaced_pod_eviction`` per pod (this namespace
                    only; kubectl drain's safeguards: DaemonSet, mirror, controller-less and emptyDir
                    pods are skipped)
query_metrics       Prometheus ``/api/v1/query_range`` (needs ``prometheus_url``)
get_alerts          Prometheus ``/api/v1/alerts`` (needs ``prometheus_url``)
wait                sleeps, then AppsV1 ``list_namespaced_{deployment,stateful_set,daemon_set}``
==================  =====================================================================

Anything else (traces, node diagnostics, failover) raises "<tool> is not supported by this
backend". The client objects can be injected (``core=``, ``apps=``), which is how the tests record
the exact calls without an API server. On a live cluster time is real: :meth:`advance` sleeps.

Every API call carries ``_request_timeout`` (``request_timeout=``, default 10 s). Failures are
classified: the agent's own mistakes (404 unknown object, 400/422 invalid value, a quota's 403,
409...) are :class:`ToolError`; an RBAC 403 is :class:`PermissionDenied` (the credentials', counted
apart); the backend's (5xx, 401, 408, 429, timeouts, connection failures, malformed answers) are
:class:`BackendError`, which a live episode counts in ``backend_errors``. All quote the API's
``Status.message``. A write that fails after changing something says so. With ``dry_run=True``
every write is sent with ``dryRun=All``: the API server validates it and changes nothing.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
import time
from collections.abc import Callable
from typing import Any

from srezero.backends._k8s_connect import BackendUnavailable, ClusterInfo, connect, injected_info
from srezero.backends._k8s_prom import PromTools
from srezero.backends._k8s_read import EventLogTools
from srezero.backends._k8s_support import (
    SMP,
    NodeTools,
    _age,
    _api_error,
    _controller,
    _is_rbac,
    _is_timeout,
    _is_transport,
    _status_message,
    _Timed,
    _ts,
)
from srezero.backends._k8s_tools import live_spec
from srezero.backends._k8s_workloads import list_workloads, summary
from srezero.backends.prometheus import (
    LABEL_RE,
    METRIC_QUERIES,
    NAME_RE,
    BackendError,
    HttpGet,
    PermissionDenied,
    Prometheus,
    cap,
    is_backend_status,
)
from srezero.tools.registry import ToolError, ToolOutput
from srezero.tools.watch import watch_bound

__all__ = ["BackendError", "BackendUnavailable", "KubernetesBackend", "PermissionDenied"]

RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"
REVISION = "deployment.kubernetes.io/revision"
JSON_PATCH = "application/json-patch+json"
NOT_FOUND = object()  # what KubernetesBackend._call returns for a 404 it was told to tolerate
DRY_RUN_NOTE = "[dry run: the API server validated this write; nothing was changed] "


class KubernetesBackend(EventLogTools, NodeTools, PromTools):
    """Serves the declared tools from namespace ``namespace`` of a cluster."""

    name = "k8s"
    TOOLS = ("get_status", "get_events", "search_logs", "get_config", "get_topology", "get_changes", "set_config",
             "restart", "rollback", "scale", "cordon_node", "drain_node", "query_metrics", "get_alerts", "wait")
    WRITES = frozenset({"set_config", "restart", "rollback", "scale", "cordon_node", "drain_node"})

    def __init__(self, namespace: str, *, core: Any = None, apps: Any = None, kubeconfig: str | None = None,
                 context: str | None = None, prometheus_url: str | None = None, http_get: HttpGet | None = None,
                 queries: dict[str, str] | None = None, label_key: str = "app",
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] | None = None,
                 wall: Callable[[], dt.datetime] | None = None,
                 request_timeout: float | tuple[float, float] | None = 10.0, dry_run: bool = False,
                 check_namespace: bool | None = None) -> None:
        if not LABEL_RE.match(namespace):
            raise ValueError(f"{namespace!r} is not a valid namespace name (a DNS-1123 label: at most 63 lower-case "
                             "letters, digits and '-', starting and ending with a letter or digit)")
        self.namespace = namespace
        #: seconds per Kubernetes API request (or ``(connect, read)``); None disables (not recommended)
        self.request_timeout = request_timeout
        #: every write is sent with dryRun=All (validated by the API server, nothing changed)
        self.dry_run = dry_run
        built = core is None or apps is None
        self.cluster: ClusterInfo = injected_info(core)  # printed before an episode: which cluster this is
        if built:
            own_core, own_apps, self.cluster = self._connect(kubeconfig, context)
            core, apps = core or own_core, apps or own_apps
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
        if check_namespace or (check_namespace is None and built):  # injected clients: only when asked
            self.check_namespace()

    _connect = staticmethod(connect)

    def check_namespace(self) -> None:
        """Fail fast when the namespace does not exist: listing a missing namespace answers an empty list
        (not 404), so every check would pass vacuously. A 403 (may not get namespaces) is not proof either way."""
        try:
            self.core.read_namespace(name=self.namespace)
        except Exception as exc:
            status = _api_error(exc)
            if status == 404:
                raise BackendUnavailable(f"namespace {self.namespace} does not exist ({self.cluster.line(self.namespace)})"
                                         ) from None
            if status != 403:
                raise BackendUnavailable(f"cannot check namespace {self.namespace} "
                                         f"({self.cluster.line(self.namespace)}): {self.classify(exc, 'start')}") from None

    def describe(self, public: dict[str, Any]) -> dict[str, Any]:
        """A tool's declaration (``ToolSpec.public()``) as this backend serves it (the live wording)."""
        return live_spec(public)

    # ------------------------------------------------------------------ Backend protocol
    def call(self, tool: str, args: dict[str, Any]) -> ToolOutput:
        """Run one tool. ToolError: the agent's input was refused; BackendError: the backend failed."""
        if tool not in self.TOOLS:
            raise ToolError(f"{tool} is not supported by this backend")
        self._done = []
        try:
            out = getattr(self, f"_{tool}")(**args)
        except ToolError as exc:
            raise self._with_progress(exc) from None
        except Exception as exc:
            raise self._with_progress(self.classify(exc, tool)) from (None if _api_error(exc) is not None
                                                                       or _is_transport(exc) else exc)
        if self.dry_run and tool in self.WRITES:
            return ToolOutput(DRY_RUN_NOTE + out.text, out.data)
        return out

    def classify(self, exc: Exception, tool: str) -> ToolError:
        """``exc`` (from the client) as a ToolError (the agent's input), a PermissionDenied (the credentials')
        or a BackendError (the backend's failure)."""
        status = _api_error(exc)
        if status is not None:
            reason = " ".join(str(getattr(exc, "reason", "") or "").split())
            if status == 0:  # the client's own failure (TLS, a request it could not build)
                return BackendError(f"Kubernetes API unreachable in {tool}: {cap(reason)}")
            message = _status_message(exc)
            text = f"Kubernetes API error {status} ({cap(reason, 80)}) in {tool}" + (f": {message}" if message else "")
            if _is_rbac(exc):
                return PermissionDenied(text)
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

    def _patch(self, method: Callable[..., Any], content_type: str, /, **kwargs: Any) -> Any:
        """Patch with an explicit content type (client versions differ in their default)."""
        kwargs.update(self._dry())
        try:
            return method(_content_type=content_type, **kwargs)
        except TypeError as exc:  # pragma: no cover - an older client without _content_type picks it itself
            if "_content_type" not in str(exc):  # any other TypeError: never send the write twice
                raise
            return method(**kwargs)

    def _dry(self) -> dict[str, str]:
        """The keyword every write carries in a dry run: the API server validates it and persists nothing."""
        return {"dry_run": "All"} if self.dry_run else {}

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
            last = ""  # why the previous run ended (OOMKilled hides behind CrashLoopBackOff otherwise)
            for c in statuses:
                reason = (c.state.waiting.reason if c.state and c.state.waiting else None) or \
                         (c.state.terminated.reason if c.state and c.state.terminated else None)
                if reason:
                    state = reason
                term = c.last_state.terminated if c.last_state else None
                if term is not None and term.reason:
                    last = f"{term.reason}, exit {term.exit_code}"
            if p.metadata.deletion_timestamp:
                state = "Terminating"
            image = p.spec.containers[0].image if p.spec and p.spec.containers else ""
            node = (p.spec.node_name if p.spec else None) or "<none>"
            rows.append(f"{p.metadata.name:40} {ready}/{len(statuses) or 1:<3} {state:18} {restarts:<8} "
                        f"{_age(now, p.metadata.creation_timestamp):5} {node:16} {image}" + (f"  (last: {last})" if last else ""))
            data.append({"name": p.metadata.name, "state": state, "ready": ready, "restarts": restarts, "node": node,
                         "image": image, "service": (p.metadata.labels or {}).get(self.label_key, ""),
                         **({"last_terminated": last} if last else {})})
        if not data:
            where = f" with {self._selector(service)}" if service else ""
            return ToolOutput(f"no pods{where} in namespace {self.namespace}", [])
        return ToolOutput("\n".join(rows), data)

    def _get_config(self, service: str) -> ToolOutput:
        dep = self._deployment(service)
        c = dep.spec.template.spec.containers[0]
        cfg: dict[str, Any] = {"image": c.image, "replicas": dep.spec.replicas}
        limits = (c.resources.limits if c.resources else None) or {}
        for k, v in sorted(limits.items()):
            cfg[f"{k}_limit"] = v
        for e in c.env or []:
            cfg[f"env.{e.name}"] = e.value if e.value_from is None else "<from a secret or configmap reference>"
        note = ""
        try:
            cm = self._call(self.core.read_namespaced_config_map, None, name=f"{service}-config", namespace=self.namespace)
        except Exception as exc:
            if not _is_rbac(exc):
                raise
            cm, note = NOT_FOUND, f"\n(configmap {service}-config not shown: the credentials may not read configmaps)"
        if cm is not NOT_FOUND:
            cfg.update(sorted((cm.data or {}).items()))
        lines = [f"{k} = {v!r}" for k, v in sorted(cfg.items())]
        return ToolOutput(f"{service} configuration:\n" + "\n".join(lines) + note, dict(sorted(cfg.items())))

    def _get_topology(self) -> ToolOutput:
        deps = self.apps.list_namespaced_deployment(namespace=self.namespace).items or []
        try:
            nodes: list[Any] | None = self.core.list_node().items or []
        except Exception as exc:
            if _api_error(exc) != 403:
                raise
            nodes = None  # listing nodes is cluster-scope: a namespaced Role cannot grant it
        lines = [f"namespace {self.namespace}", "deployments:"]
        data: dict[str, Any] = {"deployments": {}, "nodes": {} if nodes is not None else None}
        for d in sorted(deps, key=lambda d: d.metadata.name):
            ready = (d.status.ready_replicas if d.status else 0) or 0
            lines.append(f"  {d.metadata.name}: {ready}/{d.spec.replicas} ready, image "
                         f"{d.spec.template.spec.containers[0].image}")
            data["deployments"][d.metadata.name] = {"ready": ready, "replicas": d.spec.replicas}
        if nodes is None:
            lines.append("nodes: not visible (the credentials may not list nodes, a cluster-scope permission; "
                         "get_status shows each pod's node)")
        else:
            lines.append("nodes:")
        for n in sorted(nodes or [], key=lambda n: n.metadata.name):
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
            # valueFrom: null drops a secret/configmap reference (value and valueFrom together are invalid)
            env = {"name": name, "value": text, "valueFrom": None}
            body = {"spec": {"template": {"spec": {"containers": [{"name": container, "env": [env]}]}}}}
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
        self._call(self.core.delete_namespaced_pod, self._gone(target), name=target, namespace=self.namespace,
                   **self._dry())
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

    def _wait(self, seconds: int = 60, target: str = "", metric: str = "", below: float | None = None,
              above: float | None = None) -> ToolOutput:
        """Real time passes; then each workload's rollout state (and firing alerts), as a rollout is watched.
        A watch (a metric and a bound) ends the wait early, polling Prometheus (:meth:`_watch`)."""
        watch = watch_bound(target, metric, below, above)
        if watch is None:
            self.advance(seconds)
            head, data = f"waited {seconds} s", {"waited_s": seconds}
        else:
            head, data = self._watch(seconds, target, metric, *watch)
        try:
            lines, workloads = summary(list_workloads(self.apps, self.namespace))
            state = "\n".join(lines) if lines else f"no deployments, statefulsets or daemonsets in {self.namespace}"
        except Exception as exc:  # the wait happened; only the look afterwards failed
            workloads, state = {}, f"workload state unavailable: {self.classify(exc, 'wait')}"
        text = f"{head}\n{state}"
        if self.prometheus:
            try:
                text += f"\nfiring alerts: {self._firing_names()}"
            except ToolError as exc:
                text += f"\nfiring alerts unavailable: {exc}"
        return ToolOutput(text, {**data, "workloads": workloads})
