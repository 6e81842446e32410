"""The Kubernetes backend's Prometheus tools (``query_metrics``, ``get_alerts``), kept apart from
:mod:`k8s` to keep it short. Mixed into :class:`~srezero.backends.k8s.KubernetesBackend`."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from srezero.backends._k8s_support import _labels
from srezero.backends.prometheus import PIPELINE_ALERTS, Prometheus, alert_line, promql
from srezero.tools.registry import ToolError, ToolOutput
from srezero.tools.watch import SAMPLE_S, is_met, watch_answer

MAX_SERIES = 20  # query_metrics shows at most this many series


class PromTools:
    """``query_metrics`` and ``get_alerts``; the backend provides ``prometheus``, ``queries``,
    ``namespace`` and ``_wall``."""

    prometheus: Prometheus | None
    queries: dict[str, str]
    namespace: str
    _wall: Callable[[], dt.datetime]
    advance: Callable[[float], None]
    now: Callable[[], float]

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

    def _watch(self, seconds: int, target: str, metric: str, bound: float, below: bool
               ) -> tuple[str, dict[str, object]]:
        """``wait``'s watch: an instant query now and every :data:`SAMPLE_S` until the metric is past ``bound``
        or ``seconds`` have passed. Every series must be past it (the worst pod counts); no data never is."""
        prom = self._prom("a watch (wait with target and metric)")
        query = promql(metric, target, self.namespace, self.queries)

        def sample() -> float | None:
            values = [v for _, v in prom.query(query) if v == v]  # NaN: a series with no sample
            return (max(values) if below else min(values)) if values else None

        start = self.now()
        value = sample()
        while not is_met(value, bound, below) and self.now() - start < seconds:
            self.advance(min(SAMPLE_S, seconds - (self.now() - start)))
            value = sample()
        return watch_answer(round(self.now() - start, 3), seconds, False, target, metric, value, bound, below)

    def _mine(self) -> list[dict[str, Any]]:
        alerts = self._prom("get_alerts").alerts()
        return [a for a in alerts if (a.get("labels") or {}).get("namespace") in (None, self.namespace)]

    def _get_alerts(self) -> ToolOutput:
        mine = self._mine()
        lines = [alert_line(a) for a in mine]  # one line per alert, whatever the annotations hold
        return ToolOutput("\n".join(lines) if lines else "no alerts firing", mine)

    def _firing_names(self) -> str:
        """The names of this namespace's firing alerts (the pipeline's own Watchdog left out), for ``wait``."""
        names = sorted({str((a.get("labels") or {}).get("alertname", "?")) for a in self._mine()
                        if str(a.get("state", "")).lower() == "firing"
                        and (a.get("labels") or {}).get("alertname") not in PIPELINE_ALERTS})
        return ", ".join(names) or "none"
