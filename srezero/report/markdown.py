"""The Markdown report: leaderboard, per-difficulty and per-layer tables, failures, manifest, plots."""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from typing import Any

from srezero.report import data as D
from srezero.report.compare import MIN_TASKS
from srezero.report.load import Ep, Run


def task_info(task_id: str) -> dict[str, Any]:
    """Title, description, tags and split of a task from its file; {} if the task is not found here."""
    return _task_info(task_id, os.environ.get("SREZERO_TASKS_PATH", ""))


@functools.cache
def _task_info(task_id: str, tasks_path: str) -> dict[str, Any]:  # cached per lookup path (report --tasks-dir)
    try:
        from srezero.task.loader import get_task

        spec = get_task(task_id)
    except (KeyError, ValueError, OSError):
        return {}
    return {"title": spec.title, "description": " ".join(spec.description.split()), "tags": spec.tags,
            "split": spec.split}


def failure_labels(e: Ep) -> list[str]:
    return [label for _, label, pred in D.FAILURES if pred(e)]


def _f(x: float | None, fmt: str = ".1f") -> str:
    return "–" if x is None else f"{x:{fmt}}"


def _ci(lo: float | None, hi: float | None) -> str:
    """An interval, or n/a where there is none (a single independent unit, srezero.sweep.stats)."""
    return "n/a" if lo is None or hi is None else f"{lo:.1f}–{hi:.1f}"


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.0f}%"


def md_table(headers: Sequence[str], rows: Sequence[Sequence[str]], right_from: int = 1) -> str:
    align = ["---" if i < right_from else "---:" for i in range(len(headers))]
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines)


def leaderboard_md(rows: list[dict[str, Any]]) -> str:
    headers = ["agent", "episodes", "marks", "95% CI", "success", "all seeds", "diagnosis", "mitigated", "evidence", "invalid/ep",
               "wrong fixes/ep", "TTD med (s)", "TTM med (s)", "errored", "cost/ep ($)"]
    ordered = [r for r in rows if not r["upper_bound"]] + [r for r in rows if r["upper_bound"]]
    body = [[f"*{r['agent']} (upper bound)*" if r["upper_bound"] else f"**{r['agent']}**", str(r["episodes"]),
             _f(r["marks"]), _ci(r["marks_lo"], r["marks_hi"]), _pct(r["success"]), _pct(r["all_seeds"]), _f(r["diagnosis"], ".2f"),
             _pct(r["mitigation"]), _f(r["evidence"], ".2f"), _f(r["invalid"], ".2f"), _f(r["wrong_fixes"], ".2f"),
             _f(r["ttd_s"], ".0f"), _f(r["ttm_s"], ".0f"), str(r["errors"]), _f(r["cost_usd"], ".4f")]
            for r in ordered]
    if any(r.get("hints") is not None for r in ordered):  # play records: hints taken per episode
        headers.append("hints/ep")
        for row, r in zip(body, ordered):
            row.append(_f(r.get("hints"), ".1f"))
    return md_table(headers, body)


#: How to read a breakdown table (the Markdown and the HTML report say the same).
GROUPED_NOTE = ("Each cell: mean marks, its 95% CI from a bootstrap over the group's tasks, and how many tasks "
                f"and episodes the group holds. A group of one task has no interval (n/a); an interval over fewer "
                f"than {MIN_TASKS} tasks (marked *) is not a 95% interval: read it as a range, not a verdict.")


def grouped_ci(d: dict[str, Any], i: int, j: int) -> str:
    """The interval of breakdown cell (group ``i``, agent ``j``), starred over 2-4 tasks (see GROUPED_NOTE)."""
    k = d["tasks"][i][j]
    return _ci(d["lo"][i][j], d["hi"][i][j]) + ("*" if 1 < k < MIN_TASKS else "")


def grouped_md(d: dict[str, Any], label: str) -> str:
    """Mean marks, 95% CI and size per group (rows) and agent (columns)."""
    headers = [label] + [f"{a} (upper bound)" if ub else a for a, ub in zip(d["agents"], d["upper_bound"])]
    rows = []
    for i, g in enumerate(d["groups"]):
        cells = [g]
        for j, n in enumerate(d["n"][i]):
            k = d["tasks"][i][j]
            size = f"{k} task{'' if k == 1 else 's'}, {n} ep."
            cells.append(f"{_f(d['mean'][i][j])} [{grouped_ci(d, i, j)}] ({size})" if n else "–")
        rows.append(cells)
    return md_table(headers, rows)


def failures_md(f: dict[str, Any]) -> str:
    headers = ["agent", "episodes", "unsuccessful", *f["labels"]]
    rows = [[a, str(n), str(u)] + [str(c) for c in counts]
            for a, n, u, counts in zip(f["agents"], f["episodes"], f["unsuccessful"], f["counts"])]
    return md_table(headers, rows)


def manifest_md(run: Run) -> str:
    m = run.manifest
    lines = [f"- episodes: {len(run.episodes)} ({sum(1 for e in run.episodes if not e.ok)} not scored: "
             "provider, agent or environment errors)", f"- agents: {', '.join(run.agents)}", f"- tasks: {len(run.tasks)}"]
    for key in ("srezero_version", "git_revision", "python", "platform", "seeds"):
        if key in m:
            lines.append(f"- {key}: `{m[key]}`")
    if not m:
        lines.append("- no manifest.json in the run directory (records were read directly)")
    agents = m.get("agents") or {}
    if agents:
        lines.append("\n" + md_table(["agent", "name", "settings"],
                                     [[a, str(v.get("name", "")), f"`{v.get('settings', {})}`"]
                                      for a, v in sorted(agents.items())], right_from=3))
    tasks = m.get("tasks") or {}
    if tasks:
        lines.append("\n" + md_table(["task", "difficulty", "split", "hash"],
                                     [[t, str(v.get("difficulty", "")), str(v.get("split", "")), f"`{v.get('hash', '')}`"]
                                      for t, v in sorted(tasks.items())], right_from=4))
    return "\n".join(lines)


def report_md(run: Run, lb: list[dict[str, Any]], plot_specs: Sequence[Any], plot_dir: str,
              groups: dict[str, dict[str, Any]] | None = None) -> str:
    """report.md; ``groups``: :func:`srezero.report.data.breakdowns`, computed here when not given."""
    eps = run.episodes
    groups = groups or D.breakdowns(eps)
    plots = "\n\n".join(f"### {p.title}\n\n![{p.title}]({plot_dir}/{p.name}.png)\n\n{p.caption}" for p in plot_specs)
    cov = D.coverage(eps, run.manifest)
    warnings = [f"> **Not comparable as it stands.** {w}" for w in cov["warnings"]] + [f"> {n}" for n in cov["notes"]]
    return "\n\n".join([
        f"# srezero run report: {run.path.name or run.path}", *warnings,
        "Marks are 0-100 per episode (40 diagnosis + 40 mitigation + 10 evidence + 10 success, minus "
        "penalties); means are over all episodes, an errored one counting as zero (invalid actions, wrong "
        "fixes, TTD and TTM: over scored episodes), with 95% CIs from a bootstrap over tasks; \"all seeds\" is "
        "the share of tasks solved on every seed (pass^k). The oracle reads the "
        "ground truth: it is an upper bound, listed apart, not a competitor. Open `index.html` in this folder "
        "for the sortable leaderboard, the task browser and the episode replays.",
        "## Leaderboard", leaderboard_md(lb),
        "## Marks by difficulty",
        GROUPED_NOTE,
        grouped_md(groups["difficulty"], "difficulty"),
        "## Marks by fault layer", grouped_md(groups["layer"], "layer"),
        "## Marks by split",
        "Tune an agent on the dev tasks; report the test tasks, which it has not been tuned on.",
        grouped_md(groups["split"], "split"),
        "## Failure categories",
        "Episodes per agent in each category (an episode can fall into several): wrong fix = a write that "
        "addressed no root cause; premature resolution = resolved while a cause was active; distractor = a "
        "write aimed at a red herring; budget exhausted = the step or time budget ran out; stopped early = ended before resolve with budget "
        "left (a player's quit, a harness or agent stopping, an abandoned session); invalid actions = "
        "at least one; provider / agent / environment error = the episode could not be scored (it counts as zero).",
        failures_md(D.failures(eps)),
        "## Plots", plots,
        "## Run manifest", manifest_md(run),
    ]) + "\n"
