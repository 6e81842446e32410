"""The numbers behind every table and plot, as plain lists (JSON-able), computed from episode rows.

Each ``*_data`` function returns exactly what its plot draws, so tests check a plot by its data
rather than its pixels, and the HTML report can embed the same numbers. Every outcome (marks and
their terms, success, diagnosis, mitigation, evidence) counts every episode, a failed one (provider,
agent or environment error) as zero, in every table and plot, exactly as summary.json does: an agent
cannot drop the episodes it would fail by raising an exception. LLM spend counts every episode too.
Only process measures (invalid actions, wrong fixes, TTD, TTM) are over scored episodes
(``status == "ok"``), since a failed episode has none.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from srezero.report.compare import few_tasks_caveat
from srezero.report.load import AGENT_ERROR, ENV_ERROR, PROVIDER_ERROR, Ep, engines
from srezero.report.stats import mean_ci
from srezero.sweep.stats import consistency

#: marks_terms in drawing order: the positive terms, then the penalties.
TERMS = ("diagnosis", "mitigation", "evidence", "success",
         "wrong_fix_penalty", "destructive_penalty", "invalid_penalty", "premature_penalty")
#: Failure categories: (key, label, predicate on an episode). An episode may fall in several.
FAILURES: tuple[tuple[str, str, Callable[[Ep], bool]], ...] = (
    ("wrong_fix", "wrong fix", lambda e: e.ok and e.wrong_fixes > 0),
    ("premature", "premature resolution", lambda e: e.ok and e.premature),
    ("distractor", "distractor", lambda e: e.ok and e.distractor > 0),
    # a record from before results named their end counts a truncation as the budget, as it always did
    ("budget", "budget exhausted", lambda e: e.ok and e.truncated and e.end in (None, "step_budget", "time_budget")),
    ("stopped", "stopped early", lambda e: e.ok and e.end == "stopped"),
    ("invalid", "invalid actions", lambda e: e.ok and e.invalid > 0),
    ("provider_error", "provider error", lambda e: e.status == PROVIDER_ERROR),
    ("agent_error", "agent error", lambda e: e.status == AGENT_ERROR),
    ("env_error", "environment error", lambda e: e.status == ENV_ERROR),
)
DIFFICULTIES = ("easy", "medium", "hard")
EVIDENCE_HIGH = 0.5  # "gathers evidence": at least half the task's evidence signals surfaced


def _mean(xs: Iterable[float]) -> float:
    xs = list(xs)
    return sum(xs) / len(xs) if xs else float("nan")


def _median(xs: Iterable[float]) -> float:
    xs = sorted(xs)
    if not xs:
        return float("nan")
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else (xs[m - 1] + xs[m]) / 2


def clean(x: float) -> float | None:
    """NaN -> None, so the data is valid JSON and tests compare it plainly."""
    return None if isinstance(x, float) and math.isnan(x) else round(x, 6)


def scored(eps: Iterable[Ep]) -> list[Ep]:
    return [e for e in eps if e.ok]


def by_agent(eps: Iterable[Ep]) -> dict[str, list[Ep]]:
    out: dict[str, list[Ep]] = {}
    for e in eps:
        out.setdefault(e.agent, []).append(e)
    return out


def agent_order(eps: list[Ep]) -> list[str]:
    """Baselines by mean marks (best first, ties by name), then upper bounds: the oracle goes last."""
    groups = by_agent(eps)

    def key(agent: str) -> tuple[bool, float, str]:
        mean = _mean(e.marks for e in groups[agent]) if groups[agent] else -1.0
        return (groups[agent][0].upper_bound, -mean, agent)

    return sorted(groups, key=key)


def upper_bounds(eps: list[Ep]) -> list[bool]:
    groups = by_agent(eps)
    return [groups[a][0].upper_bound for a in agent_order(eps)]


# ---------------------------------------------------------------------------------------- coverage
def coverage(eps: list[Ep], manifest: dict[str, Any]) -> dict[str, Any]:
    """Whether the agents can be ranked against each other: each agent's (task, seed) cells, the cells
    they share, and the grid the manifest lists. ``warnings`` says in words what is not comparable,
    ``notes`` what is missing from the grid (which a selection or a partial rerun explains)."""
    groups = by_agent(eps)
    cells = {a: {(e.task_id, e.seed) for e in groups[a]} for a in agent_order(eps)}
    ranked = [a for a in cells if not groups[a][0].upper_bound]
    shared = set.intersection(*(cells[a] for a in ranked)) if ranked else set()
    grid = len(manifest.get("agents") or ()) * len(manifest.get("tasks") or ()) * len(manifest.get("seeds") or ())
    warnings, notes = [], []
    if ranked and any(cells[a] != shared for a in ranked):
        counts = ", ".join(f"{a} {len(cells[a])}" for a in ranked)
        if all(groups[a][0].hints is not None for a in ranked):  # a class's play records, not a sweep
            warnings.append(f"The players played different (task, seed) episodes ({counts}; {len(shared)} in common), "
                            "so their marks are not directly comparable: read them per task (the task pages), or have "
                            "everyone play the same task and seed.")
        else:
            warnings.append(f"The agents ran different (task, seed) cells ({counts}; {len(shared)} in common), so "
                            "their marks are not comparable: rerun the sweep to complete it, or report with --common "
                            "to rank them on the shared cells only.")
    builds = sorted(engines(manifest)) if manifest.get("builds") else []
    if len(builds) > 1:  # extended with --allow-mixed: the same (task, seed) need not be the same incident
        warnings.append(f"The run holds records made by {len(builds)} builds of the simulator or scoring (sweep "
                        f"--allow-mixed; engine {', '.join(builds)}; the manifest lists them under builds), so "
                        "episodes recorded by different builds are not directly comparable.")
    from srezero._version import __version__
    from srezero.sweep.records import SCHEMA

    if manifest.get("schema", SCHEMA) != SCHEMA:
        warnings.append(f"The run's manifest has schema {manifest['schema']!r}, and this srezero ({__version__}) reads "
                        f"schema {SCHEMA}: the run was written by another version, which this report may misread; "
                        "report it with the version that wrote it.")
    elif manifest.get("srezero_version") not in (None, __version__):
        notes.append(f"The run was recorded by srezero {manifest['srezero_version']}; this report is by {__version__}.")
    few = few_tasks_caveat(len({e.task_id for e in eps}))
    if few:
        notes.append(few[0].upper() + few[1:] + ".")
    if grid and len(eps) < grid:
        notes.append(f"The manifest lists {grid} episodes (agents x tasks x seeds); {len(eps)} are in this report "
                     "(a sweep stopped early, runs that asked for different subsets, or a selection).")
    return {"agents": {a: {"episodes": len(groups[a]), "tasks": len({t for t, _ in cells[a]}), "cells": len(cells[a])}
                       for a in cells},
            "common_cells": len(shared), "manifest_grid": grid, "warnings": warnings, "notes": notes}


# ---------------------------------------------------------------------------------------- tables
def leaderboard(eps: list[Ep]) -> list[dict[str, Any]]:
    """One row per agent, in :func:`agent_order`."""
    groups = by_agent(eps)
    rows = []
    for agent in agent_order(eps):
        all_eps = groups[agent]
        ok = scored(all_eps)
        tasks = [e.task_id for e in all_eps]  # the run's independent units: CIs resample whole tasks
        marks, lo, hi = mean_ci([e.marks for e in all_eps], agent, "marks", clusters=tasks)
        succ, slo, shi = mean_ci([float(e.success) for e in all_eps], agent, "success", clusters=tasks)
        every = consistency([{"task": t, "success": float(e.success)} for t, e in zip(tasks, all_eps)],
                            f"{agent}\x1f*\x1fconsistency")
        costs = [e.cost_usd for e in all_eps if e.cost_usd is not None]  # a failed call is still paid for
        rows.append({
            "agent": agent, "upper_bound": all_eps[0].upper_bound, "episodes": len(all_eps), "n": len(ok),
            "errors": len(all_eps) - len(ok),
            "marks": clean(marks), "marks_lo": clean(lo), "marks_hi": clean(hi),
            "success": clean(succ), "success_lo": clean(slo), "success_hi": clean(shi),
            "all_seeds": clean(every["mean"]), "all_seeds_k": every["k"],  # pass^k: tasks solved on every seed
            # the summary's own means (same numpy reduction and rounding), so the two agree to the digit
            "diagnosis": clean(mean_ci([e.diagnosis for e in all_eps], agent, "diagnosis_score")[0]),
            "mitigation": clean(mean_ci([float(e.mitigated) for e in all_eps], agent, "mitigation")[0]),
            "evidence": clean(mean_ci([e.evidence for e in all_eps], agent, "evidence")[0]),
            "invalid": clean(_mean(e.invalid for e in ok)),
            "wrong_fixes": clean(_mean(e.wrong_fixes for e in ok)),
            "ttd_s": clean(_median(e.ttd_s for e in ok if e.ttd_s is not None)),
            "ttm_s": clean(_median(e.ttm_s for e in ok if e.ttm_s is not None)),
            "cost_usd": clean(_mean(costs)) if costs else None,
            # play records only: a teacher sees who needed hints
            "hints": clean(_mean(h for e in all_eps if (h := e.hints) is not None))
            if any(e.hints is not None for e in all_eps) else None,
        })
    return rows


def failures(eps: list[Ep]) -> dict[str, Any]:
    """Episodes per agent in each failure category (categories overlap), and the unsuccessful count."""
    groups = by_agent(eps)
    agents = agent_order(eps)
    counts = {a: {k: sum(1 for e in groups[a] if pred(e)) for k, _, pred in FAILURES} for a in agents}
    return {"agents": agents, "categories": [k for k, _, _ in FAILURES], "labels": [lbl for _, lbl, _ in FAILURES],
            "counts": [[counts[a][k] for k, _, _ in FAILURES] for a in agents],
            "episodes": [len(groups[a]) for a in agents],
            "unsuccessful": [sum(1 for e in groups[a] if not e.success) for a in agents]}


def grouped_marks(eps: list[Ep], group: Callable[[Ep], Iterable[str]], order: Iterable[str] = (),
                  kind: str = "group") -> dict[str, Any]:
    """Mean marks per (group, agent) with its 95% CI, episodes (``n``) and tasks; an episode may belong to
    several groups (layers). The CI resamples the group's tasks, as the leaderboard's does the run's, so
    a group of one task has none (its seeds vary far less than tasks do); ``kind`` names the grouping in
    the bootstrap's seed, so every cell draws its own resamples."""
    agents = agent_order(eps)
    cells: dict[tuple[str, str], list[Ep]] = {}
    for e in eps:
        for g in group(e):
            cells.setdefault((g, e.agent), []).append(e)
    seen = sorted({g for g, _ in cells})
    groups = [g for g in order if g in seen] + [g for g in seen if g not in order]
    stats: dict[tuple[str, str], tuple[float, float, float, int, int]] = {}  # mean, lo, hi, episodes, tasks
    for key, members in cells.items():
        tasks = [e.task_id for e in members]
        k = len(set(tasks))
        if k > 1:
            mean, lo, hi = mean_ci([e.marks for e in members], key[1], "marks", f"{kind}={key[0]}", clusters=tasks)
        else:
            mean, lo, hi = _mean(e.marks for e in members), float("nan"), float("nan")
        stats[key] = (mean, lo, hi, len(members), k)

    def column(i: int, empty: float | None = None) -> list[list[Any]]:
        return [[(clean(stats[(g, a)][i]) if i < 3 else stats[(g, a)][i]) if (g, a) in stats else empty
                 for a in agents] for g in groups]

    return {"groups": groups, "agents": agents, "mean": column(0), "lo": column(1), "hi": column(2),
            "n": column(3, 0), "tasks": column(4, 0)}


# ---------------------------------------------------------------------------------------- plot data
def overall_marks_data(eps: list[Ep]) -> dict[str, Any]:
    rows = leaderboard(eps)
    return {"agents": [r["agent"] for r in rows], "upper_bound": [r["upper_bound"] for r in rows],
            "mean": [r["marks"] for r in rows], "lo": [r["marks_lo"] for r in rows],
            "hi": [r["marks_hi"] for r in rows], "n": [r["episodes"] for r in rows]}


def success_evidence_data(eps: list[Ep]) -> dict[str, Any]:
    """Per agent: mean evidence coverage and success rate; per episode: (coverage, success) points."""
    groups = by_agent(eps)
    agents = [a for a in agent_order(eps) if a in groups]
    return {
        "agents": agents, "upper_bound": [groups[a][0].upper_bound for a in agents],
        "evidence": [clean(_mean(e.evidence for e in groups[a])) for a in agents],
        "success": [clean(_mean(float(e.success) for e in groups[a])) for a in agents],
        "solved": [clean(_mean(float(e.success) for e in groups[a])) for a in agents],
        "gathers_but_fails": [clean(_mean(float(e.evidence >= EVIDENCE_HIGH and not e.success) for e in groups[a]))
                              for a in agents],
        "little_evidence_fails": [clean(_mean(float(e.evidence < EVIDENCE_HIGH and not e.success)
                                              for e in groups[a])) for a in agents],
        "points": [[[round(e.evidence, 6), int(e.success)] for e in groups[a]] for a in agents],
    }


ERROR_KINDS = (("invalid", "invalid actions"), ("wrong_fixes", "wrong fixes"),
               ("destructive", "destructive actions"), ("distractor", "distractor actions"),
               ("provider_errors", "provider errors"))


def errors_data(eps: list[Ep]) -> dict[str, Any]:
    """Mean count per episode of each error kind, per agent (provider errors over all episodes)."""
    groups = by_agent(eps)
    agents = agent_order(eps)
    values = []
    for kind, _ in ERROR_KINDS:
        pool = (lambda a: groups[a]) if kind == "provider_errors" else (lambda a: scored(groups[a]))
        values.append([clean(_mean(getattr(e, kind) for e in pool(a))) for a in agents])
    return {"agents": agents, "upper_bound": upper_bounds(eps), "kinds": [k for k, _ in ERROR_KINDS],
            "labels": [lbl for _, lbl in ERROR_KINDS], "values": values}


def components_data(eps: list[Ep]) -> dict[str, Any]:
    """Mean of each marks term per agent (penalties negative). Terms sum to the mean of raw marks
    (a failed episode has no terms and marks 0)."""
    groups = by_agent(eps)
    agents = [a for a in agent_order(eps) if a in groups]
    return {"agents": agents, "upper_bound": [groups[a][0].upper_bound for a in agents], "terms": list(TERMS),
            "values": [[clean(_mean(e.terms.get(t, 0.0) for e in groups[a])) for a in agents] for t in TERMS],
            "marks": [clean(_mean(e.marks for e in groups[a])) for a in agents]}


def heatmap_data(eps: list[Ep]) -> dict[str, Any]:
    """Success rate per task (rows) x agent (columns); None where an agent never ran a task."""
    agents = agent_order(eps)
    tasks = sorted({e.task_id for e in eps})
    cells: dict[tuple[str, str], list[float]] = {}
    for e in eps:
        cells.setdefault((e.task_id, e.agent), []).append(float(e.success))
    return {"tasks": tasks, "agents": agents, "upper_bound": upper_bounds(eps),
            "success": [[clean(_mean(cells.get((t, a), []))) for a in agents] for t in tasks],
            "n": [[len(cells.get((t, a), [])) for a in agents] for t in tasks]}


def difficulty_data(eps: list[Ep]) -> dict[str, Any]:
    return {**grouped_marks(eps, lambda e: (e.difficulty,), DIFFICULTIES, "difficulty"), "upper_bound": upper_bounds(eps)}


def layer_data(eps: list[Ep]) -> dict[str, Any]:
    return {**grouped_marks(eps, lambda e: e.layers, kind="layer"), "upper_bound": upper_bounds(eps)}


def split_data(eps: list[Ep]) -> dict[str, Any]:
    """Marks on the dev tasks (tune on these) and the test tasks (report these)."""
    return {**grouped_marks(eps, lambda e: (e.split,), ("dev", "test"), "split"), "upper_bound": upper_bounds(eps)}


def breakdowns(eps: list[Ep], plots: dict[str, dict[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    """The difficulty, layer and split tables the reports print, each bootstrapped once: the plots'
    own data (``plots``, from :func:`srezero.report.plots.plot_data`) where it already holds them."""
    plots = plots or {}
    return {"difficulty": plots.get("marks_by_difficulty") or difficulty_data(eps),
            "layer": plots.get("marks_by_layer") or layer_data(eps), "split": split_data(eps)}


def ttd_ttm_data(eps: list[Ep]) -> dict[str, Any]:
    """Simulated seconds to diagnose / to mitigate, per agent, over the episodes that got there."""
    groups = by_agent(scored(eps))
    agents = [a for a in agent_order(eps) if a in groups]
    return {"agents": agents, "upper_bound": [groups[a][0].upper_bound for a in agents],
            "ttd_s": [[float(e.ttd_s) for e in groups[a] if e.ttd_s is not None] for a in agents],
            "ttm_s": [[float(e.ttm_s) for e in groups[a] if e.ttm_s is not None] for a in agents],
            "n": [len(groups[a]) for a in agents]}


def cost_data(eps: list[Ep]) -> dict[str, Any]:
    """(cost_usd, marks) per episode of each agent whose records carry ``usage`` (LLM agents); a
    failed episode is drawn at marks 0 with what it cost."""
    groups = by_agent(e for e in eps if e.is_llm)
    agents = [a for a in agent_order(eps) if a in groups]
    return {"agents": agents,
            "cost_usd": [[round(e.cost_usd or 0.0, 8) for e in groups[a]] for a in agents],
            "marks": [[e.marks for e in groups[a]] for a in agents],
            "tokens": [[e.tokens for e in groups[a]] for a in agents]}
