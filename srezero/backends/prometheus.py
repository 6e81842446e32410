"""A minimal Prometheus HTTP API client (stdlib urllib) and the metric-name -> PromQL table.

The agent asks for metrics by the same names as in the simulator (``error_rate``, ``cpu_cores``...);
:data:`METRIC_QUERIES` turns a name into PromQL for a target. The defaults assume the usual
exporters (cAdvisor via the kubelet, kube-state-metrics, node-exporter with a ``node`` label, and
an application exposing ``http_requests_total``/``http_request_duration_seconds``); pass
``queries=`` (or ``--promql NAME=EXPR`` on the command line) to fit another cluster.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

from srezero.tools.registry import ToolError

#: Python format templates: ``{ns}`` namespace, ``{target}`` the deployment/pod/node name, ``{pods}`` a regex
#: for its pods; PromQL's own braces are doubled (``{{namespace="{ns}"}}``).
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

HttpGet = Callable[[str], bytes]


def urllib_get(url: str, timeout: float = 10.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return resp.read()


class Prometheus:
    """``query_range``, ``query`` and ``alerts`` over ``<url>/api/v1``; failures become ToolErrors."""

    def __init__(self, url: str, http_get: HttpGet | None = None) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"Prometheus URL must start with http:// or https://, not {url!r}")
        self.url = url.rstrip("/")
        self._get = http_get or urllib_get

    def _call(self, path: str, params: dict[str, Any] | None = None) -> Any:
        url = f"{self.url}/api/v1/{path}" + (f"?{urllib.parse.urlencode(params)}" if params else "")
        try:
            body = self._get(url)
        except urllib.error.HTTPError as exc:
            raise ToolError(f"Prometheus answered HTTP {exc.code} for {path}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise ToolError(f"Prometheus at {self.url} is unreachable: {exc}") from None
        try:
            doc = json.loads(body)
        except ValueError:
            raise ToolError(f"Prometheus returned something that is not JSON for {path}") from None
        if doc.get("status") != "success":
            raise ToolError(f"Prometheus error for {path}: {doc.get('error', 'unknown error')}")
        return doc.get("data")

    def query_range(self, query: str, start: float, end: float, step: float) -> list[tuple[dict, list[float]]]:
        data = self._call("query_range", {"query": query, "start": f"{start:.3f}", "end": f"{end:.3f}",
                                          "step": f"{step:g}"})
        return [(s.get("metric", {}), [float(v) for _, v in s.get("values", [])]) for s in data.get("result", [])]

    def query(self, query: str) -> list[tuple[dict, float]]:
        data = self._call("query", {"query": query})
        return [(s.get("metric", {}), float(s["value"][1])) for s in data.get("result", []) if "value" in s]

    def alerts(self) -> list[dict[str, Any]]:
        return list((self._call("alerts") or {}).get("alerts", []))


def promql(metric: str, target: str, namespace: str, queries: dict[str, str]) -> str:
    """The PromQL for ``metric`` of ``target``; ToolError for unknown metrics or unsafe names."""
    template = queries.get(metric)
    if template is None:
        raise ToolError(f"no Prometheus query for metric {metric!r}; available: {', '.join(queries)}")
    if not NAME_RE.match(target):
        raise ToolError(f"{target!r} is not a Kubernetes object name")
    try:
        return template.format(ns=namespace, target=target, pods=f"{target}(-.*)?")
    except (KeyError, IndexError, ValueError) as exc:
        raise ToolError(f"the PromQL template for {metric} is malformed ({exc!r}); write label braces as {{{{ }}}} "
                        "and use only {ns}, {target} and {pods}") from None
