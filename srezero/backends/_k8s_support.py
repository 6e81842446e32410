"""Helpers of the Kubernetes backend: API error classification, timeouts, log time stamps, and the
node tools (cordon and drain with kubectl drain's safeguards, never the last schedulable node), kept
apart to keep :mod:`k8s` short."""

from __future__ import annotations

import datetime as dt
import http.client
import re
from collections.abc import Callable
from typing import Any

from srezero.backends.prometheus import body_field
from srezero.tools.registry import ToolError, ToolOutput

SMP = "application/strategic-merge-patch+json"
MIRROR = "kubernetes.io/config.mirror"  # static pods' mirror objects: the kubelet owns them
#: how the RBAC authorizer words a refusal (a quota or admission 403 is the action's own fault)
_RBAC = re.compile(r'\bcannot [a-z]+ resource "')
_LOG_TS = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:[.,](\d{1,9})\d*)?(Z|[+-]\d\d:?\d\d)?$")

def _api_error(exc: Exception) -> int | None:
    status = getattr(exc, "status", None)
    return status if isinstance(status, int) and not isinstance(status, bool) else None


def _status_message(exc: Exception) -> str:
    """The ``message`` of the Kubernetes ``Status`` in an ApiException's JSON body, capped."""
    return body_field(getattr(exc, "body", None), "message")


def _is_rbac(exc: Exception) -> bool:
    """A 403 from RBAC: the backend's credentials lack a permission (not the agent's input)."""
    return _api_error(exc) == 403 and bool(_RBAC.search(_status_message(exc)))


def _is_transport(exc: Exception) -> bool:
    """A timeout or connection failure (socket, http.client or urllib3, which the client uses)."""
    return isinstance(exc, OSError | http.client.HTTPException) or type(exc).__module__.split(".")[0] == "urllib3"


def _is_timeout(exc: Exception) -> bool:
    names = type(exc).__name__ + type(getattr(exc, "reason", None)).__name__
    return isinstance(exc, TimeoutError) or "timeout" in names.lower() or "timed out" in str(exc).lower()


def _log_time(ts: str) -> dt.datetime | None:
    """An RFC 3339 log timestamp (the kubelet's, nanoseconds and all) as an aware UTC datetime."""
    m = _LOG_TS.match(ts)
    if not m:
        return None
    zone = m.group(3) or "Z"
    zone = "+00:00" if zone == "Z" else zone if ":" in zone else f"{zone[:3]}:{zone[3:]}"
    try:
        base = dt.datetime.fromisoformat(m.group(1) + zone).astimezone(dt.UTC)
    except ValueError:
        return None
    return base + dt.timedelta(microseconds=int((m.group(2) or "0").ljust(9, "0")[:9]) / 1000)


def _controller(obj: Any) -> Any:
    """The owner reference that controls ``obj`` (``controller: true``; one that does not say counts)."""
    refs = (obj.metadata.owner_references if obj.metadata else None) or []
    return next((o for o in refs if o.controller), None) or next((o for o in refs if o.controller is None), None)


def _labels(metric: dict[str, Any]) -> str:
    name = metric.get("__name__", "")
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(metric.items()) if k != "__name__")
    return f"{name}{{{inner}}}" if inner or not name else name


class _Timed:
    """Wraps a CoreV1Api/AppsV1Api so that every method call carries ``_request_timeout``."""

    def __init__(self, api: Any, timeout: Callable[[], Any]) -> None:
        self.wrapped, self._timeout = api, timeout

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.wrapped, name)
        if name.startswith("_") or not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            timeout = self._timeout()
            if timeout is not None:
                kwargs.setdefault("_request_timeout", timeout)
            return attr(*args, **kwargs)

        return call


WORKLOAD_KINDS = frozenset({"Pod", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Node", "Job"})


def _ts(t: dt.datetime | None) -> str:
    return t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if t else "-"


def _age(now: dt.datetime, t: dt.datetime | None) -> str:
    if t is None:
        return "-"
    s = max(0.0, (now - t).total_seconds())
    return f"{s:.0f}s" if s < 120 else f"{s / 60:.0f}m" if s < 7200 else f"{s / 3600:.0f}h" if s < 172800 \
        else f"{s / 86400:.0f}d"


class NodeTools:
    """cordon_node and drain_node, limited to nodes the backend's namespace runs on.

    Mixed into :class:`~srezero.backends.k8s.KubernetesBackend`, which provides ``core``,
    ``namespace``, ``_check``, ``_patch``, ``_touched_nodes`` and ``_done``.
    """

    core: Any
    namespace: str
    _touched_nodes: set[str]
    _done: list[str]
    _check: Callable[[str], str]
    _patch: Callable[..., Any]
    _dry: Callable[[], dict[str, str]]

    def _node_pods(self, node: str) -> list[Any]:
        """This namespace's pods on ``node``; refuses a node outside the backend's scope.

        The backend is namespace-scoped: it cordons or drains only a node that runs a pod of its
        namespace, or one it cordoned or drained itself (so it can uncordon a node it emptied).
        """
        self._check(node)
        pods = self.core.list_namespaced_pod(namespace=self.namespace, field_selector=f"spec.nodeName={node}").items or []
        if not pods and node not in self._touched_nodes:
            raise ToolError(f"node {node} runs no pod of namespace {self.namespace}; this backend only cordons or "
                            "drains nodes its namespace runs on")
        return sorted(pods, key=lambda p: p.metadata.name)

    def _not_last_node(self, node: str, what: str) -> None:
        """Refuse to take the last schedulable node out: on a one-node cluster (kind's default) every pod
        would be left Pending with nowhere to run, including the system's own."""
        nodes = self.core.list_node().items or []
        if not any(n.metadata.name != node and _schedulable(n) for n in nodes):
            raise ToolError(f"refusing to {what} {node}: it is the last schedulable node (no other node is Ready, "
                            "uncordoned and without a NoSchedule taint), so evicted or new pods would have nowhere "
                            "to run")

    def _cordon_node(self, node: str, uncordon: bool = False) -> ToolOutput:
        self._node_pods(node)
        if not uncordon:
            self._not_last_node(node, "cordon")
        self._patch(self.core.patch_node, SMP, name=node, body={"spec": {"unschedulable": not uncordon}})
        self._touched_nodes.add(node)
        return ToolOutput(f"node/{node} {'uncordoned' if uncordon else 'cordoned'}")

    @staticmethod
    def _drain_skip(p: Any) -> str | None:
        """Why kubectl drain (without --force/--delete-emptydir-data) would not evict ``p``; None to evict."""
        owner = _controller(p)
        if owner is not None and owner.kind == "DaemonSet":
            return "DaemonSet pod: its controller would recreate it on this node"
        if MIRROR in (p.metadata.annotations or {}):
            return "static pod: the kubelet owns it"
        if p.status and p.status.phase in ("Succeeded", "Failed"):
            return None  # finished: nothing is lost
        if owner is None:
            return "no controller: nothing would recreate it; kubectl drain refuses it without --force"
        empty = [v.name for v in (p.spec.volumes if p.spec else None) or [] if v.empty_dir is not None]
        if empty:
            return (f"emptyDir volume {', '.join(empty)}: evicting deletes its data; kubectl drain refuses it "
                    "without --delete-emptydir-data")
        return None

    def _drain_node(self, node: str) -> ToolOutput:
        pods = self._node_pods(node)
        self._not_last_node(node, "drain")
        skipped = {p.metadata.name: why for p in pods if (why := self._drain_skip(p))}
        self._patch(self.core.patch_node, SMP, name=node, body={"spec": {"unschedulable": True}})
        self._touched_nodes.add(node)
        self._done.append(f"cordoned node {node}")
        evicted, blocked, gone = [], [], []
        for p in pods:
            name = p.metadata.name
            if name in skipped:
                continue
            body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": self.namespace}}
            try:
                self.core.create_namespaced_pod_eviction(name=name, namespace=self.namespace, body=body,
                                                         **self._dry())
            except Exception as exc:
                status = _api_error(exc)
                if status == 429:  # a PodDisruptionBudget refused: reported, not forced
                    blocked.append(name)
                    continue
                if status == 404:  # already gone
                    gone.append(name)
                    continue
                raise
            evicted.append(name)
            self._done.append(f"evicted pod {name}")
        text = f"cordoned {node}; evicted {len(evicted)} pod(s) in {self.namespace}" + \
            (f": {', '.join(evicted)}" if evicted else "")
        if blocked:
            text += f"; blocked by a PodDisruptionBudget: {', '.join(blocked)}"
        if gone:
            text += f"; already gone: {', '.join(gone)}"
        if skipped:
            text += "; not evicted: " + "; ".join(f"{n} ({why})" for n, why in skipped.items())
        if evicted:  # unlike kubectl drain, which waits for the pods to terminate
            text += "; evicted pods terminate and are replaced in the background (get_status shows it)"
        return ToolOutput(text, {"evicted": evicted, "blocked": blocked, "skipped": skipped})


def _schedulable(n: Any) -> bool:
    """Could a new pod land on node ``n``: Ready, not cordoned, no NoSchedule/NoExecute taint."""
    spec = n.spec
    if spec is not None and (spec.unschedulable or any(t.effect in ("NoSchedule", "NoExecute")
                                                       for t in spec.taints or [])):
        return False
    conds = (n.status.conditions if n.status else None) or []
    return any(c.type == "Ready" and c.status == "True" for c in conds)
