"""Write a run's report folder: plots, report.md, index.html, task pages and episode replay pages.

    <out>/
      index.html            leaderboard (sortable), plots, failure categories, task browser
      report.md             the same tables in Markdown, with the PNG plots
      data.json             every table's and plot's numbers (what the plots draw)
      plots/<name>.png|svg  the plots (byte-identical on rerun)
      tasks/<task>.html     one page per task: its episodes
      episodes/<key>.html   one replay page per record
      assets/               the CSS and JS the pages use (no network)

Every output is a pure function of the records (and the task files, for re-simulation), written
in a fixed order, so rerunning the report over the same run produces the same bytes.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from srezero.report import data as D
from srezero.report.load import Run, load_run, safe_name

ASSETS = Path(__file__).with_name("assets")


@dataclass
class Built:
    out: Path
    plots: list[Path]
    pages: int


def write_plots(run: Run, plot_dir: Path, datas: dict[str, Any] | None = None) -> list[Path]:
    """Render every plot into ``plot_dir`` (this is what ``--plots-only`` and plots/ use); ``datas``: the
    run's :func:`~srezero.report.plots.plot_data`, computed here when not given."""
    from srezero.report.plots import PLOTS, plot_data, render

    plot_dir.mkdir(parents=True, exist_ok=True)
    datas = datas or plot_data(run.episodes)
    return [p for spec in PLOTS for p in render(spec, datas[spec.name], plot_dir)]


def build_report(run_dir: str | Path, out_dir: str | Path, *, replay: bool = True,
                 progress: Callable[[int, int], None] | None = None, run: Run | None = None) -> Built:
    """Write the whole report for the run in ``run_dir`` (or an already loaded, selected ``run``) into ``out_dir``."""
    from srezero.report.episode_page import episode_page
    from srezero.report.html import index_page, task_page
    from srezero.report.markdown import report_md, task_info
    from srezero.report.plots import PLOTS, plot_data
    from srezero.report.replay import resimulate

    run = run if run is not None else load_run(run_dir)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    datas = plot_data(run.episodes)  # once: the plots, data.json and both reports' breakdown tables
    plot_files = write_plots(run, out / "plots", datas)
    groups = D.breakdowns(run.episodes, datas)
    lb = D.leaderboard(run.episodes)
    data = {"leaderboard": lb, "coverage": D.coverage(run.episodes, run.manifest), "failures": D.failures(run.episodes),
            "plots": datas}
    (out / "data.json").write_bytes(orjson.dumps(data, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2) + b"\n")
    (out / "report.md").write_text(report_md(run, lb, PLOTS, "plots", groups), encoding="utf-8")
    (out / "assets").mkdir(exist_ok=True)
    for name in ("report.css", "report.js"):
        shutil.copyfile(ASSETS / name, out / "assets" / name)
    _write(out / "index.html", index_page(run, lb, PLOTS, "plots", groups))
    (out / "tasks").mkdir(exist_ok=True)
    for tid in run.tasks:
        _write(out / "tasks" / f"{safe_name(tid)}.html",
               task_page(run, tid, task_info(tid), [e for e in run.episodes if e.task_id == tid]))
    (out / "episodes").mkdir(exist_ok=True)
    for i, e in enumerate(run.episodes):
        rep, failure = None, ""
        if replay and e.record.get("trajectory") is not None:
            try:
                rep = resimulate(e.record)
            except Exception as exc:  # a simulator bug costs one page its charts, not the whole report
                failure = f"{type(exc).__name__}: {exc}"
        _write(out / "episodes" / f"{e.key}.html", episode_page(e, rep, replay, failure))
        if progress is not None:
            progress(i + 1, len(run.episodes))
    return Built(out, plot_files, 1 + len(run.tasks) + len(run.episodes))


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
