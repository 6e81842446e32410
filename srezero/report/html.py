"""The static HTML report: index (leaderboard, plots, failures, task browser) and one page per task.

Everything is local: pages link ``assets/report.css`` and ``assets/report.js`` (copied next to
them) and the plot files, with relative paths, so the folder opens from disk with no network.
Every page installs an error hook first that writes a visible ``#js-error`` marker into the DOM on
any script error, console.error or failed resource load; the browser test asserts it is absent.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import Any

from srezero.report import data as D
from srezero.report.load import Ep, Run, safe_name
from srezero.report.markdown import GROUPED_NOTE, grouped_ci

ERROR_HOOK = """<script>
(function () {
  function mark(msg) {
    var d = document.createElement("div");
    d.className = "js-error"; d.id = "js-error"; d.textContent = "report error: " + msg;
    (document.body || document.documentElement).appendChild(d);
  }
  window.addEventListener("error", function (e) {
    if (e.target && e.target !== window) { mark("failed to load " + (e.target.src || e.target.href)); }
    else { mark(e.message + " at " + e.filename + ":" + e.lineno); }
  }, true);
  window.addEventListener("unhandledrejection", function (e) { mark("unhandled rejection: " + e.reason); });
  var ce = console.error;
  console.error = function () { mark(Array.prototype.join.call(arguments, " ")); ce.apply(console, arguments); };
})();
</script>"""


def esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


def num(x: float | None, fmt: str = ".1f", suffix: str = "") -> str:
    return "–" if x is None else f"{x:{fmt}}{suffix}"


def page(title: str, body: str, depth: int = 0) -> str:
    """A complete page; ``depth`` is how many folders below the report root it lives."""
    up = "../" * depth
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">{ERROR_HOOK}'
            f"<title>{esc(title)}</title>"
            f'<link rel="stylesheet" href="{up}assets/report.css">'
            f'<script src="{up}assets/report.js"></script></head>\n<body>'
            f'<header class="top"><a class="brand" href="{up}index.html">srezero report</a>'
            f'<a href="{up}index.html#leaderboard">Leaderboard</a><a href="{up}index.html#plots">Plots</a>'
            f'<a href="{up}index.html#failures">Failures</a><a href="{up}index.html#tasks">Tasks</a>'
            f'<a href="{up}report.md">Markdown</a></header>\n<main>{body}</main></body></html>\n')


def table(headers: Sequence[tuple[str, str, bool]], rows: Iterable[Sequence[tuple[str, Any]]], *, tid: str = "",
          sortable: bool = False, extra_bodies: str = "") -> str:
    """headers: (key, label, numeric); rows: cells as (html, sort value or None)."""
    cls = ' class="sortable"' if sortable else ""
    ident = f' id="{esc(tid)}"' if tid else ""
    out = [f'<div class="scroll"><table{cls}{ident}><thead><tr>']
    out += [f'<th data-key="{esc(k)}"{" class=num" if n else ""}>{esc(label)}</th>' for k, label, n in headers]
    out.append("</tr></thead><tbody>")
    for row in rows:
        cells = []
        for (cell, value), (_, _, n) in zip(row, headers):
            v = "" if value is None else f' data-v="{esc(value)}"'
            cells.append(f'<td{" class=num" if n else ""}{v}>{cell}</td>')
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody>" + extra_bodies + "</table></div>")
    return "".join(out)


# ---------------------------------------------------------------------------------------- index
LEADER_COLS = (("agent", "agent", False), ("episodes", "episodes", True), ("marks", "marks", True),
               ("ci", "95% CI", False), ("success", "success", True), ("all_seeds", "all seeds", True), ("diagnosis", "diagnosis", True),
               ("mitigation", "mitigated", True), ("evidence", "evidence", True), ("invalid", "invalid/ep", True),
               ("wrong_fixes", "wrong fixes/ep", True), ("ttd_s", "TTD med (s)", True),
               ("ttm_s", "TTM med (s)", True), ("errors", "errored", True), ("cost_usd", "cost/ep ($)", True))


def leaderboard_cells(r: dict[str, Any]) -> list[tuple[str, Any]]:
    pct = lambda x: (num(None if x is None else 100 * x, ".0f", "%"), x)  # noqa: E731
    name = esc(r["agent"]) + (' <span class="badge ub">upper bound</span>' if r["upper_bound"] else "")
    name = f'<span class="agent">{name}</span>'
    return [(name, r["agent"]), (str(r["episodes"]), r["episodes"]), (num(r["marks"]), r["marks"]),
            ("n/a" if r["marks_lo"] is None else f'{num(r["marks_lo"])}–{num(r["marks_hi"])}', None), pct(r["success"]), pct(r["all_seeds"]), (num(r["diagnosis"], ".2f"),
            r["diagnosis"]), pct(r["mitigation"]), (num(r["evidence"], ".2f"), r["evidence"]),
            (num(r["invalid"], ".2f"), r["invalid"]), (num(r["wrong_fixes"], ".2f"), r["wrong_fixes"]),
            (num(r["ttd_s"], ".0f"), r["ttd_s"]), (num(r["ttm_s"], ".0f"), r["ttm_s"]),
            (str(r["errors"]), r["errors"]), (num(r["cost_usd"], ".4f"), r["cost_usd"])]


def leaderboard_html(rows: list[dict[str, Any]]) -> str:
    cols = LEADER_COLS
    cells = leaderboard_cells
    if any(r.get("hints") is not None for r in rows):  # play records: hints taken per episode
        cols = (*LEADER_COLS, ("hints", "hints/ep", True))
        cells = lambda r: [*leaderboard_cells(r), (num(r.get("hints"), ".1f"), r.get("hints"))]  # noqa: E731
    base = [cells(r) for r in rows if not r["upper_bound"]]
    ub = [cells(r) for r in rows if r["upper_bound"]]
    ub_body = ""
    if ub:
        ub_body = '<tbody class="upper-bound">' + "".join(
            "<tr>" + "".join(f"<td{' class=num' if n else ''}>{c}</td>" for (c, _), (_, _, n) in zip(row, cols))
            + "</tr>" for row in ub) + "</tbody>"
    return table(cols, base, tid="leaderboard-table", sortable=True, extra_bodies=ub_body)


def failures_html(f: dict[str, Any]) -> str:
    headers = [("agent", "agent", False), ("episodes", "episodes", True), ("unsuccessful", "unsuccessful", True)]
    headers += [(k, lbl, True) for k, lbl in zip(f["categories"], f["labels"])]
    rows = [[(esc(a), a), (str(n), n), (str(u), u)] + [(str(c), c) for c in counts]
            for a, n, u, counts in zip(f["agents"], f["episodes"], f["unsuccessful"], f["counts"])]
    return table(headers, rows, tid="failures-table", sortable=True)


def grouped_html(d: dict[str, Any], label: str) -> str:
    """The markdown report's breakdown table: mean marks [95% CI] (tasks, episodes) per group and agent."""
    headers = [("group", label, False)] + [(f"a{i}", f"{a} (upper bound)" if ub else a, False)
                                          for i, (a, ub) in enumerate(zip(d["agents"], d["upper_bound"]))]
    rows = []
    for i, g in enumerate(d["groups"]):
        row = [(esc(g), None)]
        for j, n in enumerate(d["n"][i]):
            row.append((f'{num(d["mean"][i][j])} <span class="muted">[{grouped_ci(d, i, j)}] '
                        f'({d["tasks"][i][j]} t, {n} ep.)</span>' if n else "–", None))
        rows.append(row)
    return table(headers, rows)


def manifest_html(run: Run) -> str:
    m = run.manifest
    items = [("episodes", len(run.episodes)), ("agents", ", ".join(run.agents)), ("tasks", len(run.tasks))]
    items += [(k, m[k]) for k in ("srezero_version", "git_revision", "python", "platform", "seeds") if k in m]
    return "<table>" + "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in items) + "</table>"


def task_rows(run: Run) -> list[dict[str, Any]]:
    """Per task: its description (from the task file when available) and mean marks per agent."""
    from srezero.report.markdown import task_info

    agents = D.agent_order(run.episodes)
    out = []
    for tid in run.tasks:
        eps = [e for e in run.episodes if e.task_id == tid]
        info = task_info(tid)
        marks = {a: [e.marks for e in eps if e.agent == a] for a in agents}  # a failed episode counts as 0
        out.append({"task": tid, "title": info.get("title", ""), "difficulty": eps[0].difficulty,
                    "layers": ", ".join(eps[0].layers), "episodes": len(eps),
                    "marks": {a: (sum(v) / len(v) if v else None) for a, v in marks.items()}})
    return out


def index_page(run: Run, lb: list[dict[str, Any]], plot_specs: Sequence[Any], plot_dir: str,
               groups: dict[str, dict[str, Any]] | None = None) -> str:
    groups = groups or D.breakdowns(run.episodes)
    tasks = task_rows(run)
    agents = D.agent_order(run.episodes)
    t_headers = [("task", "task", False), ("title", "title", False), ("difficulty", "difficulty", False),
                 ("layers", "layers", False), ("episodes", "episodes", True)]
    t_headers += [(f"m-{a}", a, True) for a in agents]
    t_rows = [[(f'<a href="tasks/{esc(safe_name(t["task"]))}.html">{esc(t["task"])}</a>', t["task"]), (esc(t["title"]), None),
               (esc(t["difficulty"]), t["difficulty"]), (esc(t["layers"]), t["layers"]),
               (str(t["episodes"]), t["episodes"])] + [(num(t["marks"][a]), t["marks"][a]) for a in agents]
              for t in tasks]
    figs = "".join(f'<figure id="plot-{esc(p.name)}"><a href="{plot_dir}/{esc(p.name)}.svg">'
                   f'<img src="{plot_dir}/{esc(p.name)}.svg" alt="{esc(p.title)}"></a>'
                   f"<figcaption><b>{esc(p.title)}.</b> {esc(p.caption)}</figcaption></figure>" for p in plot_specs)
    cov = D.coverage(run.episodes, run.manifest)
    warnings = "".join(f'<p class="warn"><b>Not comparable as it stands.</b> {esc(w)}</p>' for w in cov["warnings"])
    warnings += "".join(f'<p class="muted">{esc(n)}</p>' for n in cov["notes"])
    body = (f"<h1>Run report: {esc(run.path.name or run.path)}</h1>{warnings}{manifest_html(run)}"
            '<h2 id="leaderboard">Leaderboard</h2><p class="muted">Click a column to sort. Marks are 0-100 '
            "(see docs/report.md); means over all episodes, an errored one counting as zero, with 95% CIs from a "
            "bootstrap over tasks (invalid, wrong fixes, TTD and TTM are over scored episodes); \u201call seeds\u201d "
            "is the share of tasks solved on every seed (pass^k). The oracle reads the "
            "ground truth: it is an upper bound, listed apart and never ranked.</p>"
            f"{leaderboard_html(lb)}"
            '<h2 id="breakdowns">Marks by difficulty, fault layer and split</h2>'
            f'<p class="muted">{esc(GROUPED_NOTE)} Tune an agent on the dev tasks; report the test tasks.</p>'
            f'{grouped_html(groups["difficulty"], "difficulty")}{grouped_html(groups["layer"], "fault layer")}'
            f'{grouped_html(groups["split"], "split")}'
            f'<h2 id="plots">Plots</h2><div class="plots">{figs}</div>'
            '<h2 id="failures">Failure categories</h2><p class="muted">Episodes per agent in each category; '
            "an episode can fall into several.</p>"
            f"{failures_html(D.failures(run.episodes))}"
            '<h2 id="tasks">Tasks</h2><p><input type="search" id="task-filter" data-table="tasks-table" '
            'placeholder="filter tasks (id, title, layer, difficulty)"></p>'
            f'{table(t_headers, t_rows, tid="tasks-table", sortable=True)}')
    return page("srezero report", body)


def task_page(run: Run, task_id: str, info: dict[str, Any], eps: list[Ep]) -> str:
    from srezero.report.markdown import failure_labels

    headers = [("agent", "agent", False), ("seed", "seed", True), ("marks", "marks", True),
               ("success", "success", False), ("diagnosis", "diagnosis", True), ("mitigated", "mitigated", False),
               ("evidence", "evidence", True), ("steps", "steps", True), ("failures", "failures", False)]
    rows = [[(f'<a href="../episodes/{esc(e.key)}.html">{esc(e.agent)}</a>', e.agent), (str(e.seed), e.seed),
             (num(e.marks), e.marks), (_yes(e.success), int(e.success)), (num(e.diagnosis, ".2f"), e.diagnosis),
             (_yes(e.mitigated), int(e.mitigated)), (num(e.evidence, ".2f"), e.evidence), (str(e.steps), e.steps),
             (esc(", ".join(failure_labels(e))), None)] for e in eps]
    meta = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in (
        ("difficulty", eps[0].difficulty), ("layers", ", ".join(eps[0].layers)),
        ("tags", ", ".join(info.get("tags", ()))), ("split", info.get("split", ""))))
    body = (f'<p><a href="../index.html#tasks">« all tasks</a></p><h1>{esc(task_id)}: {esc(info.get("title", ""))}</h1>'
            f'<table>{meta}</table><div class="note">{esc(info.get("description", ""))}</div>'
            f'<h2>Episodes</h2>{table(headers, rows, tid="episodes-table", sortable=True)}')
    return page(f"{task_id} · srezero report", body, depth=1)


def _yes(flag: bool) -> str:
    return '<span class="badge ok">yes</span>' if flag else '<span class="badge bad">no</span>'
