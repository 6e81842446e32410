"""Re-simulate a recorded episode and draw its metric timeline as inline SVG.

Records keep the actions, not the world's metric series; the simulator is deterministic, so
replaying (task_id, seed, actions) through :func:`srezero.make` rebuilds the same world, including
the verification window that ran after the end. A replay whose marks differ from the record's
(the task file changed since the run) is flagged on the page rather than hidden.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

from srezero.sim.clock import TICK_S

#: Charts always drawn: the SLO metrics the mitigation oracle judges. (entity, metric, SLO field)
SLO_CHARTS = (("load_balancer", "error_rate", "error_rate"),
              ("load_balancer", "latency_p99_ms", "latency_p99_ms"),
              ("message_queue", "queue_age_s", "queue_age_s"))
MAX_QUERIED = 3  # extra charts: the first metrics the agent itself queried
LEAD_IN_S = 300.0  # history shown before the page (and before the first fault onset)
KIND_COLORS = {"read": "#1f77b4", "write": "#ff7f0e", "submit": "#2ca02c", "invalid": "#d62728"}


@dataclass
class Series:
    entity: str
    metric: str
    values: list[float]
    slo: float | None = None


@dataclass
class Replay:
    """What the replay page charts: times relative to the page (s), series, marks on the axis."""

    times: list[float]
    series: list[Series]
    actions: list[dict[str, Any]]  # step, t, tool, kind, label
    onsets: list[tuple[float, str]]  # (t, fault name) from the injected faults (ground truth)
    end_s: float  # when the episode ended (the verification window starts)
    verify_s: float
    marks: float | None
    diverged: str = ""  # why the replay does not match the record ("" when it does)
    notes: list[str] = field(default_factory=list)


def resimulate(record: dict[str, Any]) -> Replay | None:
    """Replay a record's actions; None when the task is unknown here (then the page has no charts)."""
    from srezero.replay import rerun

    try:
        run = rerun(record)
    except (KeyError, ValueError):
        return None
    env, diverged = run.env, run.diverged
    kinds = {t["name"]: t["kind"] for t in env.tool_specs()}
    traj = record.get("trajectory") or []
    w = env.world
    t0 = w.t_page
    result = run.result or {}
    onsets = sorted((f.injected_at - t0, f.meta.name) for f in w.faults if f.injected_at is not None)
    start = min([-LEAD_IN_S] + [t - 90.0 for t, _ in onsets])
    c0 = max(0, int((t0 + start) // TICK_S))
    c1 = w.col
    times = [round(c * TICK_S - t0, 3) for c in range(c0, c1 + 1)]
    slo = w.spec.slo
    wanted = [(e, m, getattr(slo, f)) for e, m, f in SLO_CHARTS]
    for step in traj:
        args = step.get("args") or {}
        key = (args.get("target"), args.get("metric"))
        if step.get("tool") == "query_metrics" and step.get("ok") and key in w.row_of \
                and key not in [(e, m) for e, m, _ in wanted] and len(wanted) < len(SLO_CHARTS) + MAX_QUERIED:
            wanted.append((key[0], key[1], None))
    series = [Series(e, m, [round(float(v), 6) for v in w.series(w.row_of[(e, m)], c0, c1, noisy=False)], lim)
              for e, m, lim in wanted if (e, m) in w.row_of]
    actions = [{"step": s["step"], "t": float(s["sim_time_s"]), "tool": s.get("tool") or "?",
                "kind": kinds.get(s.get("tool") or "", "invalid") if s.get("ok") else "invalid",
                "label": call_text(s)} for s in traj]
    end_s = float(result.get("sim_seconds", traj[-1]["sim_time_s"] if traj else 0.0))
    return Replay(times, series, actions, onsets, end_s, float(w.spec.verify_window_s), result.get("marks"),
                  diverged)


def call_text(step: dict[str, Any], limit: int = 160) -> str:
    """``tool(arg=value, ...)`` for a valid trajectory step, else the raw action as the agent wrote it."""
    if not step.get("tool") or not step.get("ok", True):
        text = str(step.get("action"))
    else:
        args = ", ".join(f"{k}={v!r}" for k, v in (step.get("args") or {}).items())
        text = f"{step['tool']}({args})"
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------------------------------- SVG
W, H = 860, 150
PAD_L, PAD_R, PAD_T, PAD_B = 62, 12, 22, 24


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def chart_svg(rep: Replay, s: Series) -> str:
    """One metric over time: the line, the SLO limit, the page, fault onsets, actions, verify window."""
    e = html.escape
    t_lo, t_hi = rep.times[0], rep.times[-1]
    dmax = max(s.values)
    vmax = max(dmax, s.slo or 0.0, 1e-9) * 1.08
    vmin = min(0.0, *s.values)
    sx = (W - PAD_L - PAD_R) / max(1e-9, t_hi - t_lo)
    sy = (H - PAD_T - PAD_B) / max(1e-9, vmax - vmin)

    def X(t: float) -> float:
        return round(PAD_L + (t - t_lo) * sx, 1)

    def Y(v: float) -> float:
        return round(H - PAD_B - (v - vmin) * sy, 1)

    out = [f'<svg class="chart" viewBox="0 0 {W} {H}" width="100%" role="img" '
           f'aria-label="{e(s.entity)} {e(s.metric)} over time" xmlns="http://www.w3.org/2000/svg">',
           f'<rect x="{X(rep.end_s)}" y="{PAD_T}" width="{max(0.0, X(min(t_hi, rep.end_s + rep.verify_s)) - X(rep.end_s))}" '
           f'height="{H - PAD_T - PAD_B}" class="verify"><title>verification window</title></rect>',
           f'<line x1="{PAD_L}" y1="{H - PAD_B}" x2="{W - PAD_R}" y2="{H - PAD_B}" class="axis"/>',
           f'<line x1="{PAD_L}" y1="{PAD_T}" x2="{PAD_L}" y2="{H - PAD_B}" class="axis"/>',
           f'<text x="{PAD_L - 4}" y="{Y(dmax) + 4}" class="tick" text-anchor="end">{_fmt(dmax)}</text>'
           if Y(dmax) < H - PAD_B - 12 else "",
           f'<text x="{PAD_L - 4}" y="{H - PAD_B}" class="tick" text-anchor="end">{_fmt(vmin)}</text>']
    step_t = 120.0 if t_hi - t_lo <= 1500 else (300.0 if t_hi - t_lo <= 3600 else 600.0)
    t = step_t * -(-t_lo // step_t)
    while t <= t_hi:
        out.append(f'<text x="{X(t)}" y="{H - 8}" class="tick" text-anchor="middle">{t / 60:+.0f}m</text>')
        t += step_t
    out.append(f'<line x1="{X(0)}" y1="{PAD_T}" x2="{X(0)}" y2="{H - PAD_B}" class="page"><title>page</title></line>')
    for t_on, name in rep.onsets:
        out.append(f'<line x1="{X(t_on)}" y1="{PAD_T}" x2="{X(t_on)}" y2="{H - PAD_B}" class="onset">'
                   f'<title>fault onset: {e(name)} at {t_on:+.0f}s</title></line>')
    if s.slo is not None:
        out.append(f'<line x1="{PAD_L}" y1="{Y(s.slo)}" x2="{W - PAD_R}" y2="{Y(s.slo)}" class="slo">'
                   f'<title>SLO {_fmt(s.slo)}</title></line>')
    pts = " ".join(f"{X(t)},{Y(v)}" for t, v in zip(rep.times, s.values))
    out.append(f'<polyline points="{pts}" class="line"/>')
    for a in rep.actions:
        col = KIND_COLORS.get(a["kind"], "#555555")
        out.append(f'<a href="#step-{a["step"]}"><line x1="{X(a["t"])}" y1="{PAD_T}" x2="{X(a["t"])}" '
                   f'y2="{H - PAD_B}" stroke="{col}" class="act act-{e(a["kind"])}">'
                   f'<title>step {a["step"]} at +{a["t"]:.0f}s: {e(a["label"])}</title></line></a>')
    out.append(f'<text x="{PAD_L}" y="{PAD_T - 8}" class="ctitle">{e(s.entity)} · {e(s.metric)}'
               f'{" (SLO " + _fmt(s.slo) + ")" if s.slo is not None else ""}</text></svg>')
    return "".join(out)
