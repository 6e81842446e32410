"""Plots of a run, PNG and SVG, byte-identical across reruns.

matplotlib is imported inside the functions (never on the ``import srezero`` path) and used
through ``matplotlib.figure.Figure`` with the Agg canvas, without pyplot, so no global backend or
interactive state is touched. Determinism: matplotlib's built-in defaults (a user's matplotlibrc is
ignored), DejaVu Sans (shipped with matplotlib), fixed sizes and dpi, no date or software stamp in
the files, a fixed SVG hash salt, and glyphs written as paths.

The oracle is an upper bound, not a competitor: it is drawn last, grey and hatched, after a gap and
a dotted separator.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from srezero.report import data as D
from srezero.report.load import Ep

DPI = 110
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf")
ORACLE_COLOR = "#b0b0b0"
ORACLE_HATCH = "//"
TERM_COLORS = {"diagnosis": "#1f77b4", "mitigation": "#2ca02c", "evidence": "#9edae5", "success": "#ffbb78",
               "wrong_fix_penalty": "#d62728", "destructive_penalty": "#8c564b", "invalid_penalty": "#e377c2",
               "premature_penalty": "#7f7f7f"}
RC = {
    "font.family": "sans-serif", "font.sans-serif": ["DejaVu Sans"], "font.size": 9.0,
    "svg.hashsalt": "srezero-report", "svg.fonttype": "path", "svg.image_inline": True,
    "figure.dpi": DPI, "savefig.dpi": DPI, "axes.spines.top": False, "axes.spines.right": False,
    "axes.grid": True, "grid.alpha": 0.3, "axes.axisbelow": True, "path.simplify": False,
}
PNG_META = {"Software": None}
SVG_META = {"Date": None, "Creator": None, "Format": None, "Type": None}


@dataclass(frozen=True)
class PlotSpec:
    """One plot: file stem, title, what it shows (for docs and HTML), its data and its drawing."""

    name: str
    title: str
    caption: str
    data: Callable[[list[Ep]], dict[str, Any]]
    draw: Callable[[Any, dict[str, Any]], None]
    size: Callable[[dict[str, Any]], tuple[float, float]] = lambda d: (7.0, 4.0)


# ---------------------------------------------------------------------------------------- helpers
def _positions(flags: list[bool]) -> list[float]:
    """x positions: baselines 0..k-1, then a gap, then upper bounds."""
    out, x, gap_done = [], 0.0, False
    for ub in flags:
        if ub and not gap_done and out:
            x += 0.6
            gap_done = True
        out.append(x)
        x += 1.0
    return out


def _colors(agents: list[str], flags: list[bool]) -> list[str]:
    base = [a for a, ub in zip(agents, flags) if not ub]
    return [ORACLE_COLOR if ub else PALETTE[base.index(a) % len(PALETTE)] for a, ub in zip(agents, flags)]


def _separator(ax: Any, xs: list[float], flags: list[bool]) -> None:
    if any(flags) and not all(flags):
        first = xs[flags.index(True)]
        ax.axvline(first - 0.8, color="#888888", linestyle=":", linewidth=1.0)
        ax.annotate("upper bound", (first, 1.0), xycoords=("data", "axes fraction"), ha="center", va="bottom",
                    fontsize=7.5, color="#666666")


def _agent_axis(ax: Any, agents: list[str], xs: list[float]) -> None:
    ax.set_xticks(xs)
    ax.set_xticklabels(agents, rotation=20 if len(agents) > 5 else 0, ha="right" if len(agents) > 5 else "center")


def _empty(ax: Any, text: str) -> None:
    ax.set_axis_off()
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, fontsize=10, color="#555555",
            wrap=True)


def _v(x: float | None) -> float:
    return 0.0 if x is None else x


def _or(x: float | None, default: float) -> float:
    return default if x is None or x != x else x


# ---------------------------------------------------------------------------------------- drawings
def draw_overall(fig: Any, d: dict[str, Any]) -> None:
    ax = fig.add_subplot()
    if not d["agents"]:
        return _empty(ax, "no scored episodes")
    xs, flags = _positions(d["upper_bound"]), d["upper_bound"]
    means = [_v(m) for m in d["mean"]]
    # no interval (None, or NaN: a single task) draws no bar, never one down to zero
    err = [[m - _or(lo, m) for m, lo in zip(means, d["lo"])], [_or(hi, m) - m for m, hi in zip(means, d["hi"])]]
    bars = ax.bar(xs, means, color=_colors(d["agents"], flags), edgecolor="#333333", linewidth=0.6)
    for bar, ub in zip(bars, flags):
        if ub:
            bar.set_hatch(ORACLE_HATCH)
    ax.errorbar(xs, means, yerr=err, fmt="none", ecolor="#222222", capsize=4, linewidth=1.0)
    for x, m, hi, n in zip(xs, means, d["hi"], d["n"]):
        ax.text(x, max(m, _v(hi)) + 2, f"{m:.1f}\nn={n}", ha="center", va="bottom", fontsize=7.5)
    ax.set_ylim(0, 115)
    ax.set_ylabel("marks (0-100), mean with 95% CI")
    _agent_axis(ax, d["agents"], xs)
    _separator(ax, xs, flags)


def draw_success_evidence(fig: Any, d: dict[str, Any]) -> None:
    ax, bx = fig.subplots(1, 2, width_ratios=[3, 2])
    if not d["agents"]:
        return _empty(ax, "no scored episodes")
    ax.axvspan(D.EVIDENCE_HIGH, 1.08, ymin=0, ymax=0.5, color="#fde0dd", alpha=0.6, linewidth=0)
    ax.text(1.06, 0.5, "gathers evidence\nbut fails to resolve", ha="right", va="center", fontsize=7.5,
            color="#a50f15")
    k = len(d["agents"])
    colors = _colors(d["agents"], d["upper_bound"])
    for i, (a, ub, col) in enumerate(zip(d["agents"], d["upper_bound"], colors)):
        pts = d["points"][i]
        dx = (i - (k - 1) / 2) * 0.012  # each agent its own lane so equal coverages do not hide each other
        # deterministic vertical spread of the 0/1 episode points so overlapping ones stay visible
        ys = [p[1] + (1 if p[1] == 0 else -1) * (0.03 + 0.1 * ((j % 11) / 10)) for j, p in enumerate(pts)]
        ax.scatter([p[0] + dx for p in pts], ys, s=7, color=col, alpha=0.55, linewidths=0)
        ax.scatter([_v(d["evidence"][i])], [_v(d["success"][i])], s=90, color=col, edgecolors="#222222",
                   marker="D" if ub else "o", hatch=ORACLE_HATCH if ub else None, zorder=3,
                   label=f"{a} (upper bound)" if ub else a)
    ax.set_xlim(-0.05, 1.08)
    ax.set_ylim(-0.16, 1.16)
    ax.set_xlabel("evidence coverage (share of the task's signals surfaced)")
    ax.set_ylabel("success (dots: episodes; large: agent mean)")
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", fontsize=7.5, frameon=False,
               ncols=min(6, k))
    xs = _positions(d["upper_bound"])
    parts = (("solved", "solved", "#2ca02c"), ("gathers_but_fails", "evidence, not solved", "#fb6a4a"),
             ("little_evidence_fails", "little evidence, not solved", "#bdbdbd"))
    bottom = [0.0] * k
    for key, label, col in parts:
        vals = [_v(v) for v in d[key]]
        bx.bar(xs, vals, bottom=bottom, color=col, label=label, edgecolor="#333333", linewidth=0.4, width=0.7)
        bottom = [b + v for b, v in zip(bottom, vals)]
    bx.set_ylim(0, 1.25)
    bx.set_ylabel("share of episodes")
    _agent_axis(bx, d["agents"], xs)
    bx.tick_params(axis="x", labelrotation=30)
    _separator(bx, xs, d["upper_bound"])
    bx.legend(fontsize=7, frameon=False, loc="upper center", ncols=1)


def _grouped_bars(ax: Any, groups: list[str], series: list[tuple[str, list[float | None], str, bool]],
                  width_total: float = 0.8, intervals: list[tuple[list[float | None], list[float | None]]] | None = None
                  ) -> None:
    """Bars per group and series; ``intervals`` (lo, hi per series) adds error bars where there is one."""
    k = max(1, len(series))
    w = width_total / k
    for i, (label, values, color, ub) in enumerate(series):
        xs = [g + (i - (k - 1) / 2) * w for g in range(len(groups))]
        means = [_v(v) for v in values]
        ax.bar(xs, means, width=w, color=color, edgecolor="#333333", linewidth=0.4,
               hatch=ORACLE_HATCH if ub else None, label=f"{label} (upper bound)" if ub else label)
        if intervals:
            lo, hi = intervals[i]
            err = [[m - _or(a, m) for m, a in zip(means, lo)], [_or(b, m) - m for m, b in zip(means, hi)]]
            ax.errorbar(xs, means, yerr=err, fmt="none", ecolor="#222222", capsize=2, linewidth=0.7)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups)


def draw_errors(fig: Any, d: dict[str, Any]) -> None:
    ax = fig.add_subplot()
    if not d["agents"]:
        return _empty(ax, "no episodes")
    colors = ("#e377c2", "#d62728", "#8c564b", "#ff9896", "#7f7f7f")
    k = len(d["kinds"])
    w = 0.8 / k
    xs0 = _positions(d["upper_bound"])
    for i, (label, values) in enumerate(zip(d["labels"], d["values"])):
        xs = [x + (i - (k - 1) / 2) * w for x in xs0]
        ax.bar(xs, [_v(v) for v in values], width=w, color=colors[i % len(colors)], label=label,
               edgecolor="#333333", linewidth=0.4)
    ax.set_ylabel("mean per episode")
    _agent_axis(ax, d["agents"], xs0)
    _separator(ax, xs0, d["upper_bound"])
    ax.legend(fontsize=7.5, frameon=False, ncols=3, loc="upper left")
    ax.set_ylim(0, max([_v(v) for vs in d["values"] for v in vs] + [1.0]) * 1.3)


#: Penalty stacks deeper than this are cut at the axis and labelled with their total.
PENALTY_FLOOR = -120.0


def draw_components(fig: Any, d: dict[str, Any]) -> None:
    ax = fig.add_subplot()
    if not d["agents"]:
        return _empty(ax, "no scored episodes")
    xs = _positions(d["upper_bound"])
    pos = [0.0] * len(xs)
    neg = [0.0] * len(xs)
    for term, values in zip(d["terms"], d["values"]):
        vals = [_v(v) for v in values]
        if term.endswith("_penalty"):
            ax.bar(xs, vals, bottom=neg, color=TERM_COLORS[term], label=term.replace("_", " "), width=0.6,
                   edgecolor="#333333", linewidth=0.4)
            neg = [b + v for b, v in zip(neg, vals)]
        else:
            ax.bar(xs, vals, bottom=pos, color=TERM_COLORS[term], label=term, width=0.6, edgecolor="#333333",
                   linewidth=0.4)
            pos = [b + v for b, v in zip(pos, vals)]
    ax.scatter(xs, [_v(m) for m in d["marks"]], marker="_", s=400, color="#000000", zorder=3, label="mean marks")
    ax.axhline(0, color="#333333", linewidth=0.8)
    if min(neg, default=0.0) < PENALTY_FLOOR:  # a shotgun's penalties would flatten every other bar
        ax.set_ylim(PENALTY_FLOOR, 105.0)
        for x, total in zip(xs, neg):
            if total < PENALTY_FLOOR:
                ax.annotate(f"{total:,.0f}", (x, PENALTY_FLOOR), xytext=(0, 3), textcoords="offset points",
                            ha="center", va="bottom", fontsize=7, color="#000000", zorder=4)
    ax.set_ylabel("mean marks term (penalties below zero)")
    _agent_axis(ax, d["agents"], xs)
    _separator(ax, xs, d["upper_bound"])
    ax.legend(fontsize=7, frameon=False, loc="center left", bbox_to_anchor=(1.0, 0.5))


def draw_heatmap(fig: Any, d: dict[str, Any]) -> None:
    import numpy as np

    ax = fig.add_subplot()
    if not d["tasks"]:
        return _empty(ax, "no episodes")
    grid = np.array([[np.nan if v is None else v for v in row] for row in d["success"]], dtype=float)
    cmap = _cmap("RdYlGn").with_extremes(bad="#eeeeee")
    im = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto",
                   interpolation="nearest")
    ax.grid(False)
    ax.set_xticks(range(len(d["agents"])))
    ax.set_xticklabels([f"{a}\n(upper bound)" if ub else a for a, ub in zip(d["agents"], d["upper_bound"])],
                       fontsize=8)
    ax.set_yticks(range(len(d["tasks"])))
    ax.set_yticklabels(d["tasks"], fontsize=7.5)
    ax.xaxis.tick_top()
    if len(d["tasks"]) * len(d["agents"]) <= 600:
        for r, (row, ns) in enumerate(zip(d["success"], d["n"])):
            for c, (v, n) in enumerate(zip(row, ns)):
                if v is not None:  # seeds solved of seeds run: exact, where 0.25 would print as "0.2"
                    ax.text(c, r, f"{round(v * n)}/{n}", ha="center", va="center", fontsize=6.5,
                            color="#000000" if 0.25 < v < 0.85 else "#ffffff")
    if any(d["upper_bound"]) and not all(d["upper_bound"]):
        ax.axvline(d["upper_bound"].index(True) - 0.5, color="#ffffff", linewidth=4)
    fig.colorbar(im, ax=ax, fraction=0.04, pad=0.02, label="success rate")


def _grouped(fig: Any, d: dict[str, Any], xlabel: str) -> None:
    ax = fig.add_subplot()
    if not d["groups"]:
        return _empty(ax, "no scored episodes")
    colors = _colors(d["agents"], d["upper_bound"])
    series = [(a, [row[i] for row in d["mean"]], colors[i], d["upper_bound"][i]) for i, a in enumerate(d["agents"])]
    intervals = [([row[i] for row in d["lo"]], [row[i] for row in d["hi"]]) for i in range(len(d["agents"]))]
    _grouped_bars(ax, d["groups"], series, intervals=intervals)
    ax.set_ylim(0, 110)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("mean marks, with 95% CI over tasks")
    ax.legend(fontsize=7.5, frameon=False, loc="center left", bbox_to_anchor=(1.0, 0.5))


def draw_difficulty(fig: Any, d: dict[str, Any]) -> None:
    _grouped(fig, d, "task difficulty")


def draw_layer(fig: Any, d: dict[str, Any]) -> None:
    _grouped(fig, d, "fault layer (a multi-fault task counts in each of its layers)")


def draw_ttd_ttm(fig: Any, d: dict[str, Any]) -> None:
    axes = fig.subplots(1, 2, sharey=True)
    for ax, key, label in ((axes[0], "ttd_s", "time to diagnose (TTD)"), (axes[1], "ttm_s", "time to mitigate (TTM)")):
        ax.set_title(label, fontsize=9)
        if not d["agents"]:
            _empty(ax, "no scored episodes")
            continue
        xs = _positions(d["upper_bound"])
        colors = _colors(d["agents"], d["upper_bound"])
        for x, values, col in zip(xs, d[key], colors):
            if values:
                bp = ax.boxplot([values], positions=[x], widths=0.5, patch_artist=True, showfliers=False,
                                manage_ticks=False, medianprops={"color": "#000000"})
                for box in bp["boxes"]:
                    box.set_facecolor(col)
                    box.set_alpha(0.5)
                offs = [((j % 9) - 4) * 0.04 for j in range(len(values))]
                ax.scatter([x + o for o in offs], values, s=7, color=col, zorder=3, linewidths=0)
        labels = [f"{a}\n{len(v)}/{n}" for a, v, n in zip(d["agents"], d[key], d["n"])]  # got there / scored
        _agent_axis(ax, labels, xs)
        _separator(ax, xs, d["upper_bound"])
    top = max([v for k in ("ttd_s", "ttm_s") for vs in d[k] for v in vs] + [60.0])
    axes[0].set_ylim(0, top * 1.08)
    axes[0].set_ylabel("simulated seconds after the page")


def draw_cost(fig: Any, d: dict[str, Any]) -> None:
    ax = fig.add_subplot()
    if not d["agents"]:
        return _empty(ax, "No LLM agent in this run, so there is no cost to plot.\n"
                          "Records of LLM agents carry usage.cost_usd (tokens x price table);\n"
                          "run e.g. `srezero sweep --agents llm-react --model M --base-url URL`.")
    for i, a in enumerate(d["agents"]):
        ax.scatter(d["cost_usd"][i], d["marks"][i], s=18, color=PALETTE[i % len(PALETTE)], label=a, alpha=0.8)
    ax.set_xlabel("cost per episode (USD)")
    ax.set_ylabel("marks")
    ax.set_ylim(-5, 105)
    ax.legend(fontsize=7.5, frameon=False)


def _cmap(name: str) -> Any:
    import matplotlib

    return matplotlib.colormaps[name]


def _heat_size(d: dict[str, Any]) -> tuple[float, float]:
    return (max(5.0, 1.1 * len(d["agents"]) + 3.0), max(3.0, 0.24 * len(d["tasks"]) + 1.6))


PLOTS: tuple[PlotSpec, ...] = (
    PlotSpec("overall_marks", "Overall marks per agent",
             "Mean marks (0-100) per agent over all its episodes (an errored one counts as 0), with a 95% CI "
             "(a bootstrap over tasks). "
             "The oracle (grey, hatched) reads the ground truth: an upper bound showing the tasks are solvable.",
             D.overall_marks_data, draw_overall),
    PlotSpec("success_vs_evidence", "Success against evidence coverage",
             "x: share of the task's evidence signals an agent's reads surfaced; y: success. Small dots are "
             "episodes, large markers agent means; points in the shaded corner gathered the evidence but did "
             "not resolve the incident. Right: each agent's episodes split into solved, gathered evidence "
             f"(coverage >= {D.EVIDENCE_HIGH:g}) but not solved, and not solved with little evidence.",
             D.success_evidence_data, draw_success_evidence, lambda d: (9.0, 4.2)),
    PlotSpec("errors", "Errors and invalid actions per agent",
             "Mean count per episode of invalid actions, wrong fixes (writes that address no root cause), "
             "destructive actions, writes at distractors, and LLM provider errors.",
             D.errors_data, draw_errors),
    PlotSpec("marks_components", "Marks components per agent",
             "The marks terms stacked: diagnosis (40), mitigation (40), evidence (10) and success (10) above "
             "zero, penalties below (a stack deeper than -120 is cut at the axis and labelled with its total); "
             "the black tick is the mean marks (clamped at 0 per episode).",
             D.components_data, draw_components, lambda d: (7.5, 4.0)),
    PlotSpec("success_heatmap", "Success rate per task and agent",
             "Share of seeds each agent solved (diagnosis and mitigation) per task. Grey: not run.",
             D.heatmap_data, draw_heatmap, _heat_size),
    PlotSpec("marks_by_difficulty", "Marks by task difficulty", "Mean marks per agent for easy, medium and hard "
             "tasks, with 95% CIs over each group's tasks.", D.difficulty_data, draw_difficulty, lambda d: (7.5, 4.0)),
    PlotSpec("marks_by_layer", "Marks by fault layer", "Mean marks per agent by the layer of the task's faults "
             "(app, database, disk, ...; 'none' for no-fault control tasks), with 95% CIs over each group's tasks "
             "(over fewer than 5 tasks, a range rather than a 95% interval).", D.layer_data, draw_layer,
             lambda d: (max(7.5, 1.0 * len(d["groups"]) + 3.5), 4.0)),
    PlotSpec("ttd_ttm", "Time to diagnose and to mitigate",
             "Simulated seconds from the page to a correct diagnosis (TTD) and to every fault neutralised (TTM), "
             "over the episodes that got there; under each agent, how many of its scored episodes got there "
             "(got there / scored).",
             D.ttd_ttm_data, draw_ttd_ttm, lambda d: (max(8.0, 2.0 + 1.8 * len(d["agents"])), 4.0)),
    PlotSpec("marks_vs_cost", "Marks against cost per episode (LLM agents)",
             "Each point is one LLM episode: provider cost in USD (usage.cost_usd) against marks. Empty when "
             "the run has no LLM agent.", D.cost_data, draw_cost),
)


def plot_data(eps: list[Ep]) -> dict[str, dict[str, Any]]:
    """The data of every plot, by plot name."""
    return {p.name: p.data(eps) for p in PLOTS}


def render(spec: PlotSpec, data: dict[str, Any], out_dir: Path) -> list[Path]:
    """Draw one plot and write ``<name>.png`` and ``<name>.svg``; returns the paths."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    with matplotlib.rc_context():
        matplotlib.rcdefaults()
        matplotlib.rcParams.update(RC)
        fig = Figure(figsize=spec.size(data), dpi=DPI, layout="constrained")
        FigureCanvasAgg(fig)
        spec.draw(fig, data)
        fig.suptitle(spec.title, fontsize=10.5)
        png, svg = out_dir / f"{spec.name}.png", out_dir / f"{spec.name}.svg"
        fig.savefig(png, format="png", metadata=PNG_META)
        fig.savefig(svg, format="svg", metadata=SVG_META)
    return [png, svg]
