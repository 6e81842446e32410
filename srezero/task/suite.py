"""Rules the curated suite keeps: coverage of the system and a difficulty gradient.

Both are computed from the task files alone, so the tests, ``srezero tasks --markdown`` and
docs/writing-tasks.md share one definition.

Complexity points (the difficulty gradient; docs/writing-tasks.md explains them to authors):

* noise: default +1, noisy +2;
* each red-herring distractor item +1 (at most +2);
* ``misleading`` tag +1 (the loudest symptom is not where the cause is);
* ``metastable`` tag +2, a concurrent silent fault +2;
* a node-level root: a visible fault whose primitive's *layer* is kernel, disk or hardware, whatever
  its target (``cpu_throttling`` on ``web_server`` counts: its layer is kernel) +1.

Easy tasks score at most 2, hard tasks at least 4, medium tasks 1 to 5.
"""

from __future__ import annotations

from typing import Any

from srezero.task.spec import RED_HERRINGS, BudgetSpec, TaskSpec

FIVE_SERVICES = ("load_balancer", "web_server", "cache", "database", "message_queue")
NODE_LEVEL = ("kernel", "disk", "hardware")
BOUNDS = {"easy": (0, 2), "medium": (1, 5), "hard": (4, 99)}
#: Minimum counts the curated suite must reach (issue 5).
MINIMUMS = {"tasks": 30, "per_service": 3, "node_level": 6, "metastable": 2, "concurrent": 2, "misleading": 5,
            "control": 1}


def visible_roots(spec: TaskSpec) -> tuple[str, ...]:
    """Where the user-visible causes live (a silent concurrent fault is not what the incident is about)."""
    return tuple(dict.fromkeys(r for f in spec.faults if f.visible for r in f.roots))


def is_concurrent(spec: TaskSpec) -> bool:
    return len(spec.faults) >= 2 and any(f.visible for f in spec.faults) and any(not f.visible for f in spec.faults)


def is_misleading(spec: TaskSpec) -> bool:
    """Tagged, with a red herring among the distractors, and the cause not where the page points: the
    paging rule's entity (``load_balancer`` for HighErrorRate, ``database`` for DatabaseLatencyHigh, a
    node for the node rules) is not a visible root."""
    herrings = any(spec.distractors.get(n, 0) for n in RED_HERRINGS)
    paged = spec.alert.paged_entity
    pointed = NODE_LEVEL if paged == "*node" else (paged,)
    return "misleading" in spec.tags and herrings and not any(r in pointed for r in visible_roots(spec))


def is_control(spec: TaskSpec) -> bool:
    """No fault, and a noise item that pages on purpose (srezero.faults.noise.FALSE_ALARMS)."""
    from srezero.faults.noise import FALSE_ALARMS

    return spec.ground_truth.no_fault and any(spec.noise.extra.get(name, 0) > 0 for name in FALSE_ALARMS)


def complexity_terms(spec: TaskSpec) -> list[tuple[str, int]]:
    """The complexity points, term by term (only the terms that score)."""
    terms = [(f"noise {spec.noise.profile}", {"quiet": 0, "default": 1, "noisy": 2}[spec.noise.profile]),
             ("distractors", min(2, sum(spec.distractors.values()))),
             ("misleading", int("misleading" in spec.tags)),
             ("metastable", 2 * ("metastable" in spec.tags)),
             ("silent concurrent fault", 2 * is_concurrent(spec))]
    node = [r for r in visible_roots(spec) if r in NODE_LEVEL]
    terms.append((f"node-level root ({', '.join(node)})", int(bool(node))))
    return [(name, n) for name, n in terms if n]


def complexity(spec: TaskSpec) -> int:
    return sum(n for _, n in complexity_terms(spec))


def difficulty_line(spec: TaskSpec) -> str:
    """E.g. ``medium: 5 complexity points (noise default +1, ...); medium allows 1-5``."""
    lo, hi = BOUNDS[spec.difficulty]
    terms = ", ".join(f"{name} +{n}" for name, n in complexity_terms(spec)) or "none"
    allowed = f"{lo} or more" if hi >= 99 else f"{lo}-{hi}"
    return f"{spec.difficulty}: {complexity(spec)} complexity point(s) ({terms}); {spec.difficulty} allows {allowed}"


def difficulty_problem(spec: TaskSpec) -> str | None:
    """Why the declared difficulty does not fit the complexity points (None when it does)."""
    lo, hi = BOUNDS[spec.difficulty]
    if lo <= complexity(spec) <= hi:
        return None
    fits = [d for d, (a, b) in BOUNDS.items() if a <= complexity(spec) <= b]
    return f"{difficulty_line(spec)}; it fits {' or '.join(fits)}"


#: What a curated (bundled) task must carry beyond the schema: people read the rationale in
#: docs/tasks.md and students get the hints one at a time in play.
MIN_RATIONALE_CHARS = 40
MIN_HINTS = 2
#: Every curated task has the same budget: a budget that differed between tasks would be shown on
#: every page and step, and tell an agent which task it is in (a fingerprint a lookup table learns).
STANDARD_BUDGET = {k: BudgetSpec.model_fields[k].default for k in ("steps", "time_s")}  # the schema's defaults


def curated_problems(spec: TaskSpec) -> list[tuple[str, str]]:
    """``(field, problem)`` for each rule a bundled task misses that the schema leaves optional."""
    out = []
    if len(spec.rationale) < MIN_RATIONALE_CHARS:
        out.append(("rationale", f"a curated task explains its difficulty in at least {MIN_RATIONALE_CHARS} "
                                 f"characters (has {len(spec.rationale)})"))
    if len(spec.hints) < MIN_HINTS:
        out.append(("hints", f"a curated task has at least {MIN_HINTS} graded hints, mildest first "
                             f"(has {len(spec.hints)})"))
    for key, standard in STANDARD_BUDGET.items():
        if getattr(spec.budget, key) != standard:
            out.append((f"budget.{key}", f"a curated task keeps the standard budget ({standard:g}; has "
                                         f"{getattr(spec.budget, key):g}): the budget is shown to the agent, so "
                                         "one that differed would tell it which task it is in"))
    return out


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
