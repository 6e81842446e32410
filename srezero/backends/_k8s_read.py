"""The Kubernetes backend's event and log tools (``get_events``, ``search_logs``), kept apart from
:mod:`k8s` to keep it short. Mixed into :class:`~srezero.backends.k8s.KubernetesBackend`."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from typing import Any

from srezero.backends._k8s_support import WORKLOAD_KINDS, _api_error, _log_time, _status_message, _ts
from srezero.tools.registry import ToolError, ToolOutput

LOG_TAIL = 2000  # lines read per pod (the API's tail_lines)
NODE_EVENTS_NS = "default"  # where the kubelet and node controller record events about Nodes
_LEVEL = re.compile(r"\b(trace|debug|info|warn|warning|error|fatal|critical|panic)\b", re.I)
_RANK = {"trace": 0, "debug": 0, "info": 1, "warn": 2, "warning": 2, "error": 3, "fatal": 3, "critical": 3, "panic": 3}
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def event_time(e: Any) -> dt.datetime | None:
    """When an event last happened. Events written through events.k8s.io (the scheduler's FailedScheduling,
    among others) leave lastTimestamp null: their latest time is series.lastObservedTime, else eventTime."""
    series = e.series
    times = [t for t in (series.last_observed_time if series else None, e.last_timestamp, e.event_time) if t]
    return max(times) if times else (e.metadata.creation_timestamp if e.metadata else None)


def event_count(e: Any) -> int:
    series = e.series
    return (series.count if series is not None and series.count else e.count) or 1


class EventLogTools:
    """``get_events`` and ``search_logs``; the backend provides ``core``, ``apps``, ``namespace``,
    ``_wall`` and ``_pods_or_pod``."""

    core: Any
    apps: Any
    namespace: str
    _wall: Callable[[], dt.datetime]
    _pods_or_pod: Callable[[str], list[Any]]

    def _get_events(self, entity: str = "", window_s: int = 3600, limit: int = 30) -> ToolOutput:
        since = self._wall() - dt.timedelta(seconds=window_s)
        items = []
        events = (self.core.list_namespaced_event(namespace=self.namespace).items or []) + self._node_events(entity)
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
            at = event_time(e)
            if at is None or at < since:
                continue
            items.append((at, e.type or "Normal", e.reason or "", f"{obj.kind.lower() if obj and obj.kind else ''}/{name}",
                          (e.message or "").strip(), event_count(e)))
        items.sort(key=lambda x: x[0])
        items = items[-limit:]
        lines = [f"{_ts(at)} {kind:7} {reason:18} {obj}: {msg}" + (f" (x{n})" if n > 1 else "")
                 for at, kind, reason, obj, msg, n in items]
        return ToolOutput("\n".join(lines) if lines else "no events in the window",
                          [{"at": _ts(at), "kind": kind, "reason": reason, "object": obj, "message": msg, "count": n}
                           for at, kind, reason, obj, msg, n in items])

    def _node_events(self, entity: str) -> list[Any]:
        """Events about Nodes (NotReady, pressure, reboots): recorded in namespace default, not the app's."""
        if self.namespace == NODE_EVENTS_NS:
            return []
        selector = "involvedObject.kind=Node" + (f",involvedObject.name={entity}" if entity else "")
        try:
            return self.core.list_namespaced_event(namespace=NODE_EVENTS_NS, field_selector=selector).items or []
        except Exception as exc:
            if (_api_error(exc) or 0) // 100 != 4:  # credentials limited to the app's namespace: its events only
                raise
            return []

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
        notes: list[str] = []  # per pod: why nothing was read, or that the tail cap cut the window short
        for p in self._pods_or_pod(service):
            pod = p.metadata.name
            kwargs: dict[str, Any] = {"name": pod, "namespace": self.namespace, "since_seconds": int(window_s),
                                      "timestamps": True, "tail_lines": LOG_TAIL}
            if previous:  # kubectl logs --previous: the last terminated container's log
                kwargs["previous"] = True
            if p.spec and p.spec.containers and len(p.spec.containers) > 1:
                kwargs["container"] = p.spec.containers[0].name
            try:
                text = self.core.read_namespaced_pod_log(**kwargs) or ""
            except Exception as exc:
                if _api_error(exc) not in (400, 404):
                    raise
                # a container waiting to (re)start (CrashLoopBackOff...), or no previous run: say so
                why = _status_message(exc) or ("no previous container" if previous else "no log available")
                notes.append(f"{pod}: {why}" + ("" if previous else
                                                f" (the crashed container's last run: kubectl logs {pod} -p)"))
                continue
            raw_lines = text.splitlines()
            if len(raw_lines) >= LOG_TAIL:
                notes.append(f"{pod}: only its last {LOG_TAIL} lines were read, which may not reach back "
                             f"{window_s // 60} min")
            for raw in raw_lines:
                ts, _, msg = raw.partition(" ")
                if not msg:
                    continue
                lvl = _LEVEL.search(msg)
                if (_RANK[lvl.group(1).lower()] if lvl else 1) < floor or not rx.search(msg):
                    continue
                at = _log_time(ts)
                shown_ts = _ts(at) if at else ts[:20]
                lines.append((at or _EPOCH, len(lines), f"{shown_ts} {pod} {msg}"))
        lines.sort(key=lambda x: (x[0], x[1]))  # by parsed time, not text ("00.5Z" sorts before "00Z")
        truncated = len(lines) > limit
        shown = [t for *_, t in lines[-limit:]]
        tail = ("\nnotes:\n  " + "\n  ".join(notes)) if notes else ""
        if not shown:
            return ToolOutput(f"no log lines matching {pattern!r} in {service} over the last {window_s // 60} min"
                              + tail, [])
        head = f"{len(shown)} line(s) from {service}" + (" (limit reached; older matches not shown)" if truncated else "")
        return ToolOutput(head + "\n" + "\n".join(shown) + tail, shown)
