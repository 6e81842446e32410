"""A minimal Prometheus HTTP API client (stdlib urllib) and the metric-name -> PromQL table.

The agent asks for metrics by the same names as in the simulator (``error_rate``, ``cpu_cores``...);
:data:`METRIC_QUERIES` turns a name into PromQL for a target. The defaults assume the usual
exporters (cAdvisor via the kubelet, kube-state-metrics, node-exporter with a ``node`` label, and
an application exposing ``http_requests_total``/``http_request_duration_seconds``); pass
``queries=`` (or ``--promql NAME=EXPR`` on the command line) to fit another cluster.
"""

from __future__ import annotations

import http.client
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

from srezero.tools.registry import ToolError

#: Python format templates: ``{ns}`` namespace, ``{target}`` the deployment/pod/node name, ``{pods}`` a regex
#: for it and its own pods (:func:`pod_regex`); PromQL's own braces are doubled (``{{namespace="{ns}"}}``).
METRIC_QUERIES: dict[str, str] = {
    "request_rate": 'sum(rate(http_requests_total{{namespace="{ns}",pod=~"{pods}"}}[2m]))',
    "error_rate": ('sum(rate(http_requests_total{{namespace="{ns}",pod=~"{pods}",code=~"5.."}}[2m])) / '
                   'sum(rate(http_requests_total{{namespace="{ns}",pod=~"{pods}"}}[2m]))'),
    "latency_p99_ms": ('1000 * histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket'
                       '{{namespace="{ns}",pod=~"{pods}"}}[2m])))'),
    "cpu_cores": 'sum(rate(container_cpu_usage_seconds_total{{namespace="{ns}",pod=~"{pods}",container!=""}}[2m]))',
    "memory_mb": 'sum(container_memory_working_set_bytes{{namespace="{ns}",pod=~"{pods}",container!=""}}) / 1e6',
    "restarts": 'sum(kube_pod_container_status_restarts_total{{namespace="{ns}",pod=~"{pods}"}})',
    "ready_replicas": 'sum(kube_deployment_status_replicas_available{{namespace="{ns}",deployment="{target}"}})',
    "cpu_util_pct": '100 * (1 - avg(rate(node_cpu_seconds_total{{mode="idle",node="{target}"}}[2m])))',
    "memory_used_pct": ('100 * (1 - sum(node_memory_MemAvailable_bytes{{node="{target}"}}) / '
                        'sum(node_memory_MemTotal_bytes{{node="{target}"}}))'),
}
#: Kubernetes object names (DNS-1123): also what keeps a target from injecting PromQL.
NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
#: Namespace names are DNS-1123 *labels*: no dots, at most 63 characters.
LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
#: The alphabet of generated name parts (pod-template-hash, pod suffixes): no vowels, no 0/1/3.
_GEN = "[bcdfghjklmnpqrstvwxz2456789]"
#: Alerts that say the alerting pipeline works (kube-prometheus-stack), never an incident.
PIPELINE_ALERTS = frozenset({"Watchdog", "InfoInhibitor"})

HttpGet = Callable[[str], bytes]
#: longest server-supplied message quoted in an error
MESSAGE_CAP = 300
#: HTTP statuses that say the backend (not the agent's input) failed: auth, timeouts, throttling, server errors
BACKEND_STATUSES = frozenset({401, 408, 429})


class PermissionDenied(ToolError):
    """The backend's credentials lack a permission (a Kubernetes RBAC 403): the operator's setup, not
    the agent's input. A live episode counts it in ``permission_denied``, not as an invalid action."""

    partial: str | None = None


class BackendError(ToolError):
    """The backend failed (server error, timeout, unreachable, unauthorized, malformed answer).

    Not the agent's fault: a live episode counts it in ``backend_errors``, not as an invalid action.
    ``partial`` (when set) says which writes were already done before the failure.
    """

    partial: str | None = None


def is_backend_status(status: int) -> bool:
    """An HTTP status that is the backend's failure rather than a refusal of the agent's input."""
    return status >= 500 or status in BACKEND_STATUSES or status < 100


def cap(text: str, limit: int = MESSAGE_CAP) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def urllib_get(url: str, timeout: float = 10.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return resp.read()


class Prometheus:
    """``query_range``, ``query`` and ``alerts`` over ``<url>/api/v1``.

    A refused query (HTTP 400/422, ``status: error``) is a ToolError; an unreachable, failing or
    timed-out server, or an answer of the wrong shape, is a :class:`BackendError`.
    """

    def __init__(self, url: str, http_get: HttpGet | None = None, timeout: float = 10.0) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"Prometheus URL must start with http:// or https://, not {url!r}")
        self.url = url.rstrip("/")
        self.timeout = timeout
        self._get = http_get or (lambda u: urllib_get(u, self.timeout))

    def _call(self, path: str, params: dict[str, Any] | None = None) -> Any:
        url = f"{self.url}/api/v1/{path}" + (f"?{urllib.parse.urlencode(params)}" if params else "")
        try:
            body = self._get(url)
        except urllib.error.HTTPError as exc:
            detail = _error_text(exc)
            text = f"Prometheus answered HTTP {exc.code} for {path}" + (f": {detail}" if detail else "")
            raise (BackendError if is_backend_status(exc.code) else ToolError)(text) from None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
            raise BackendError(f"Prometheus at {self.url} is unreachable or timed out: "
                               f"{type(exc).__name__}: {cap(str(exc))}") from None
        try:
            doc = json.loads(body)
        except ValueError:
            raise BackendError(f"Prometheus returned something that is not JSON for {path}") from None
        if not isinstance(doc, dict):
            raise BackendError(f"Prometheus returned a malformed answer for {path}")
        if doc.get("status") != "success":
            raise ToolError(f"Prometheus error for {path}: {cap(str(doc.get('error', 'unknown error')))}")
        return doc.get("data")

    def query_range(self, query: str, start: float, end: float, step: float) -> list[tuple[dict, list[float]]]:
        data = self._call("query_range", {"query": query, "start": f"{start:.3f}", "end": f"{end:.3f}",
                                          "step": f"{step:g}"})
        try:
            if data.get("resultType") == "scalar":  # e.g. scalar(...): one [ts, value] per step is not a matrix
                return [({}, [float(data["result"][1])])]
            return [(dict(s.get("metric") or {}), [float(v) for _, v in s.get("values") or []])
                    for s in data.get("result") or []]
        except (AttributeError, KeyError, IndexError, TypeError, ValueError) as exc:
            raise BackendError(f"Prometheus returned a malformed query_range result ({type(exc).__name__})") from None

    def query(self, query: str) -> list[tuple[dict, float]]:
        """An instant query: one ``(labels, value)`` per series (a scalar result is one unlabelled series)."""
        data = self._call("query", {"query": query})
        try:
            if data.get("resultType") == "scalar":
                return [({}, float(data["result"][1]))]
            return [(dict(s.get("metric") or {}), float(s["value"][1])) for s in data.get("result") or []
                    if "value" in s]
        except (AttributeError, KeyError, IndexError, TypeError, ValueError) as exc:
            raise BackendError(f"Prometheus returned a malformed query result ({type(exc).__name__})") from None

    def alerts(self) -> list[dict[str, Any]]:
        data = self._call("alerts") or {}
        alerts = data.get("alerts") if isinstance(data, dict) else None
        if not isinstance(alerts, list):
            raise BackendError("Prometheus returned a malformed alerts result")
        return [a for a in alerts if isinstance(a, dict)]


def _error_text(exc: urllib.error.HTTPError) -> str:
    """Prometheus's own ``error`` field from an HTTP error's JSON body, capped."""
    try:
        body = exc.read()
    except Exception:  # an unreadable body just means no detail
        return ""
    return body_field(body, "error", raw=False)


def body_field(body: Any, key: str, raw: bool = True) -> str:
    """Field ``key`` of an error response's JSON body (Prometheus ``error``, a Kubernetes Status
    ``message``), capped; when the body is not JSON, the body itself (capped) if ``raw``, else ""."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if not isinstance(body, str) or not body.strip():
        return ""
    try:
        doc = json.loads(body)
    except ValueError:
        return cap(body) if raw else ""
    return cap(str(doc.get(key) or "")) if isinstance(doc, dict) else ""


def alert_line(a: dict[str, Any]) -> str:
    """One Prometheus alert as one line (multi-line annotations collapsed), as get_alerts shows it."""
    labels, notes = a.get("labels") or {}, a.get("annotations") or {}
    text = notes.get("summary") or notes.get("description") or ""
    return " ".join(f"[{str(a.get('state') or '?').upper()} {labels.get('severity', '')}] "
                    f"{labels.get('alertname', '?')}: {text} (since {a.get('activeAt', '?')})".split())


def pod_regex(target: str) -> str:
    """A PromQL regex for ``target`` and its own pods only (``web`` must not match ``web-api-...``):
    a Deployment's ``T-<hash>-<5>``, a DaemonSet's ``T-<5>``, a StatefulSet's ``T-<ordinal>``."""
    name = target.replace(".", "\\\\.")  # a literal dot, escaped for the regex and the PromQL string
    return f"{name}(-[0-9]+|-{_GEN}{{5}}|-{_GEN}{{1,10}}-{_GEN}{{5}})?"


def promql(metric: str, target: str, namespace: str, queries: dict[str, str]) -> str:
    """The PromQL for ``metric`` of ``target``; ToolError for unknown metrics or unsafe names."""
    template = queries.get(metric)
    if template is None:
        raise ToolError(f"no Prometheus query for metric {metric!r}; available: {', '.join(queries)}")
    if not NAME_RE.match(target):
        raise ToolError(f"{target!r} is not a Kubernetes object name")
    try:
        return template.format(ns=namespace, target=target, pods=pod_regex(target))
    except (KeyError, IndexError, ValueError) as exc:
        raise ToolError(f"the PromQL template for {metric} is malformed ({exc!r}); write label braces as {{{{ }}}} "
                        "and use only {ns}, {target} and {pods}") from None
