"""Is a workload rolled out and available, as ``kubectl rollout status`` judges it? Deployments,
StatefulSets and DaemonSets; used by the live episode's verification and the backend's ``wait``."""

from __future__ import annotations

from typing import Any

from srezero.backends.prometheus import cap

#: (kind, AppsV1Api list method); a database usually runs as a StatefulSet, agents as DaemonSets
KINDS = (("deployment", "list_namespaced_deployment"), ("statefulset", "list_namespaced_stateful_set"),
         ("daemonset", "list_namespaced_daemon_set"))


def list_workloads(apps: Any, namespace: str) -> list[tuple[str, Any]]:
    """Every (kind, object) of the namespace, by kind then name; the first failing list raises."""
    out: list[tuple[str, Any]] = []
    for kind, method in KINDS:
        items = getattr(apps, method)(namespace=namespace).items or []
        out += [(kind, o) for o in sorted(items, key=lambda o: o.metadata.name)]
    return out


def desired(kind: str, obj: Any) -> int:
    if kind == "daemonset":
        return (obj.status.desired_number_scheduled if obj.status else 0) or 0
    return obj.spec.replicas if obj.spec is not None and obj.spec.replicas is not None else 1


def available(kind: str, obj: Any) -> int:
    st = obj.status
    if st is None:
        return 0
    if kind == "daemonset":
        return st.number_available or 0
    if kind == "statefulset":  # availableReplicas is newer (1.22+) than readyReplicas
        return (st.available_replicas if st.available_replicas is not None else st.ready_replicas) or 0
    return st.available_replicas or 0


def problems(kind: str, obj: Any, was: int | None = None) -> list[str]:
    """Why ``obj`` is not rolled out and available; [] if it is. ``was``: its desired replicas when the
    episode started (0: scaled to zero on purpose before, so zero now is fine; None: unknown)."""
    name = f"{kind} {obj.metadata.name}"
    want = desired(kind, obj)
    if want == 0 and kind != "daemonset":  # a DaemonSet no node selects is not broken
        if was == 0:
            return []
        return [f"{name} is scaled to zero" + (f" (it had {was} replica(s) when the episode started)" if was else "")]
    st = obj.status
    if st is None:
        return [f"{name} has no status yet"]
    out = _progress_failed(name, st) if kind == "deployment" else []
    generation = obj.metadata.generation
    if generation is not None and (st.observed_generation or 0) < generation:
        out.append(f"{name}: the controller has not yet observed generation {generation}")
    if kind == "deployment":
        out += _deployment(name, st, want)
    elif kind == "statefulset":
        out += _statefulset(name, obj, st, want)
    else:
        if (st.updated_number_scheduled or 0) < want:
            out.append(f"{name} has {st.updated_number_scheduled or 0}/{want} pods updated to the current template")
    have = available(kind, obj)
    if have < want:
        out.append(f"{name} has {have}/{want} {'pods' if kind == 'daemonset' else 'replicas'} available")
    return out


def _progress_failed(name: str, st: Any) -> list[str]:
    return [f"{name} rollout failed: {c.reason or 'not progressing'}" + (f" ({cap(c.message, 200)})" if c.message else "")
            for c in st.conditions or []
            if c.type == "Progressing" and (c.status == "False" or c.reason == "ProgressDeadlineExceeded")]


def _deployment(name: str, st: Any, want: int) -> list[str]:
    out = []
    updated, total = st.updated_replicas or 0, st.replicas or 0
    if updated < want:
        out.append(f"{name} has {updated}/{want} replicas updated to the current template")
    elif total > updated:
        out.append(f"{name} still runs {total - updated} old replica(s)")
    return out


def _statefulset(name: str, obj: Any, st: Any, want: int) -> list[str]:
    strategy = obj.spec.update_strategy if obj.spec else None
    if strategy is not None and strategy.type == "OnDelete":
        return []  # pods change only when deleted: kubectl has no rollout status for it either
    partition = (strategy.rolling_update.partition if strategy and strategy.rolling_update else 0) or 0
    if partition > 0:
        if (st.updated_replicas or 0) < want - partition:
            return [f"{name} has {st.updated_replicas or 0}/{want - partition} replicas above partition "
                    f"{partition} updated"]
        return []
    if st.update_revision and st.current_revision != st.update_revision:
        return [f"{name} is still rolling to revision {st.update_revision} ({st.updated_replicas or 0}/{want} updated)"]
    return []


def deployment_problems(d: Any) -> list[str]:
    """Why deployment ``d`` is not rolled out and available; [] if it is (zero replicas is a problem)."""
    return problems("deployment", d)


def summary(items: list[tuple[str, Any]]) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """One line per workload (``deployment/web 3/3 available, rolled out``) and the same as data."""
    lines, data = [], {}
    for kind, obj in items:
        why = problems(kind, obj, was=0)  # here zero replicas is a state, not a verdict
        have, want = available(kind, obj), desired(kind, obj)
        key = f"{kind}/{obj.metadata.name}"
        lines.append(f"{key} {have}/{want} available" + (": " + "; ".join(why) if why else ", rolled out"))
        data[key] = {"available": have, "desired": want, "problems": why}
    return lines, data
