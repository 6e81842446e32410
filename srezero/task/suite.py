"""Rules the curated suite keeps: coverage of the system and a difficulty gradient.

Both are computed from the task files alone, so the tests, ``srezero tasks --markdown`` and
docs/writing-tasks.md share one definition.

Complexity points (the difficulty gradient; docs/writing-tasks.md explains them to authors):

* noise: default +1, noisy +2;
* each red-herring distractor item +1 (at most +2);
* ``misleading`` tag +1 (the loudest symptom is not where the cause is);
* ``metastable`` tag +2, a concurrent silent fault +2;
* a node-level root (kernel, disk, hardware: cross-layer reasoning) +1.

Easy tasks score at most 2, hard tasks at least 4, medium tasks 1 to 5.
"""

from __future__ import annotations

from typing import Any

from srezero.task.spec import TaskSpec

FIVE_SERVICES = ("load_balancer", "web_server", "cache", "database", "message_queue")
NODE_LEVEL = ("kernel", "disk", "hardware")
RED_HERRINGS = ("benign_config_change", "benign_deploy")
BOUNDS = {"easy": (0, 2), "medium": (1, 5), "hard": (4, 99)}
#: Minimum counts the curated suite must reach (issue 5).
MINIMUMS = {"tasks": 30, "per_service": 3, "node_level": 6, "metastable": 2, "concurrent": 2, "misleading": 5,
            "control": 1}


def visible_roots(spec: TaskSpec) -> tuple[str, ...]:
    """Where the user-visible causes live (a silent concurrent fault is not what the incident is about)."""
    return tuple(dict.fromkeys(f.root for f in spec.faults if f.visible))


def is_concurrent(spec: TaskSpec) -> bool:
    return len(spec.faults) >= 2 and any(f.visible for f in spec.faults) and any(not f.visible for f in spec.faults)


def is_misleading(spec: TaskSpec) -> bool:
    """Tagged, with red herrings in the change history, and the cause not where the page points."""
    herrings = any(spec.distractors.get(n, 0) or spec.noise.extra.get(n, 0) for n in RED_HERRINGS)
    return "misleading" in spec.tags and herrings and spec.alert.entity not in visible_roots(spec)


def is_control(spec: TaskSpec) -> bool:
    return spec.ground_truth.no_fault and spec.noise.extra.get("false_alarm_blip", 0) > 0


def complexity(spec: TaskSpec) -> int:
    points = {"quiet": 0, "default": 1, "noisy": 2}[spec.noise.profile]
    points += min(2, sum(spec.distractors.values()))
    points += "misleading" in spec.tags
    points += 2 * ("metastable" in spec.tags) + 2 * is_concurrent(spec)
    points += any(r in NODE_LEVEL for r in visible_roots(spec))
    return points


def coverage(specs: list[TaskSpec]) -> dict[str, Any]:
    """Counts for every coverage rule, by task id lists (so a failing check says which tasks count)."""
    out: dict[str, Any] = {"tasks": [s.id for s in specs]}
    for svc in FIVE_SERVICES:
        out[f"root:{svc}"] = [s.id for s in specs if svc in visible_roots(s)]
    out["node_level"] = [s.id for s in specs if any(r in NODE_LEVEL for r in visible_roots(s))]
    out["metastable"] = [s.id for s in specs if "metastable" in s.tags]
    out["concurrent"] = [s.id for s in specs if is_concurrent(s)]
    out["misleading"] = [s.id for s in specs if is_misleading(s)]
    out["control"] = [s.id for s in specs if is_control(s)]
    return out


def shortfalls(specs: list[TaskSpec]) -> list[str]:
    """Every coverage rule the suite misses, in words ([] when the suite is complete)."""
    cov = coverage(specs)
    out = []
    for key, ids in cov.items():
        need = MINIMUMS["per_service"] if key.startswith("root:") else MINIMUMS.get(key, 0)
        if len(ids) < need:
            out.append(f"{key}: {len(ids)} task(s), need {need}")
    for s in specs:
        lo, hi = BOUNDS[s.difficulty]
        if not lo <= complexity(s) <= hi:
            out.append(f"{s.id}: {s.difficulty} but complexity {complexity(s)} (allowed {lo}-{hi})")
    return out
