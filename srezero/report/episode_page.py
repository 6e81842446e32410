"""The replay page of one episode: timeline charts, every action and observation, the diagnosis
beside the ground truth, the score breakdown and why a mitigation failed.

A teacher walks a class through an episode top to bottom: what paged, what the metrics did, what
the agent tried and when (the coloured marks on the charts link to the steps), what it concluded,
what was really wrong, and how the marks were earned or lost.
"""

from __future__ import annotations

from typing import Any

from srezero.report.html import esc, num, page
from srezero.report.load import Ep, safe_name
from srezero.report.markdown import failure_labels, task_info
from srezero.report.replay import KIND_COLORS, Replay, call_text, chart_svg
from srezero.scoring import marks as mk


def _card(k: str, v: str) -> str:
    return f'<div class="card"><div class="k">{esc(k)}</div><div class="v">{v}</div></div>'


def _badge(ok: bool, yes: str = "yes", no: str = "no") -> str:
    return f'<span class="badge {"ok" if ok else "bad"}">{esc(yes if ok else no)}</span>'


def _claims_table(rows: list[dict[str, Any]], keys: tuple[str, ...]) -> str:
    if not rows:
        return '<p class="muted">none</p>'
    head = "".join(f"<th>{esc(k)}</th>" for k in keys)
    body = "".join("<tr>" + "".join(f"<td>{esc(r.get(k, ''))}</td>" for k in keys) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def timeline_html(rep: Replay | None, replayed: bool = True, failure: str = "") -> str:
    if failure:
        return f'<p class="warn">Re-simulating this episode failed ({esc(failure)}); no metric timeline.</p>'
    if rep is None and not replayed:
        return ('<p class="muted">The report was written with --no-replay, so the metric timeline was not '
                "re-simulated. The steps below come from the record.</p>")
    if rep is None:
        return ('<p class="warn">This task is not available here (no task file with this id), so the metric '
                "timeline cannot be re-simulated. The steps below come from the record. For a task of your own, "
                "give its folder to <code>srezero report --tasks-dir</code> or on SREZERO_TASKS_PATH.</p>")
    legend = "".join(f'<span><i style="background:{c}"></i>{esc(k)}</span>' for k, c in KIND_COLORS.items())
    legend += ('<span><i style="background:#000"></i>page (t=0)</span>'
               '<span><i style="background:#6a3d9a"></i>fault onset</span>'
               '<span><i style="background:#b42318"></i>SLO limit</span>'
               '<span><i style="background:#cfe8d4;height:10px"></i>verification window</span>')
    warn = (f'<p class="warn">Re-simulation differs from the record ({esc(rep.diverged)}): the task or the '
            "simulator changed since this run; the charts show today's replay.</p>" if rep.diverged else "")
    charts = "".join(chart_svg(rep, s) for s in rep.series)
    return (f'{warn}<p class="muted">True simulated values (before measurement noise), re-simulated from '
            "(task, seed, actions). Time is relative to the page; hover a mark for the action, click it to jump "
            f'to the step.</p><div class="legend">{legend}</div>{charts}')


def diagnosis_html(result: dict[str, Any]) -> str:
    diag = result.get("diagnosis") or {}
    claims = diag.get("claims") or []
    truth = result.get("ground_truth") or []
    truth_note = ('<p class="note">Control task: nothing was broken; the right diagnosis is "no fault".</p>'
                  if result.get("no_fault") else "")
    checklist = diag.get("checklist") or {}
    rows = "".join(f"<tr><td>{esc(k)}</td><td class=num>{num(v, '.2f')}</td></tr>" for k, v in checklist.items())
    stats = ", ".join(f"{k} {num(diag.get(k), '.2f')}" for k in ("precision", "recall", "precision_at_full_recall")
                      if k in diag)
    summary = result.get("summary") or ""
    return (f'<div class="cols"><div><h3>Agent\'s diagnosis</h3>{_claims_table(claims, ("entity", "category", "detail"))}'
            f'{f"<p><b>summary:</b> {esc(summary)}</p>" if summary else ""}</div>'
            f"<div><h3>Ground truth</h3>{truth_note}"
            f'{_claims_table(truth, ("entity", "category", "detail", "fault", "layer"))}</div></div>'
            f"<p>Diagnosis score <b>{num(diag.get('score'), '.2f')}</b> ({esc(stats)}).</p>"
            f"<details><summary>checklist</summary><table>{rows}</table></details>")


def score_html(result: dict[str, Any]) -> str:
    terms = result.get("marks_terms") or {}
    rows = "".join(f"<tr><td>{esc(mk.TERM_LABELS.get(k, k))}</td><td class=num>{num(v)}</td></tr>" for k, v in terms.items())
    rows += f"<tr><th>marks (clamped to 0-100)</th><th class=num>{num(result.get('marks'))}</th></tr>"
    mit = result.get("mitigation") or {}
    reasons = mit.get("reasons") or []
    if result.get("mitigated"):
        why = '<p><span class="badge ok">mitigated</span> every fault neutralised, SLOs held, nothing destroyed.</p>'
    else:
        items = "".join(f"<li>{esc(r)}</li>" for r in reasons) or "<li>(no reason recorded)</li>"
        why = f'<p><span class="badge bad">not mitigated</span> because:</p><ul class="reasons">{items}</ul>'
    neutral = "".join(f"<tr><td>{esc(k)}</td><td>{_badge(bool(v), 'neutralised', 'still active')}</td></tr>"
                      for k, v in (mit.get("neutralised") or {}).items())
    worst = ", ".join(f"{k} {v:g}" for k, v in (mit.get("slo_worst") or {}).items())
    ev = result.get("evidence") or {}
    found = "".join(f"<li>{esc(x)}</li>" for x in ev.get("found") or []) or "<li>none</li>"
    missed = "".join(f"<li>{esc(x)}</li>" for x in ev.get("missed") or []) or "<li>none</li>"
    return (f'<div class="cols"><div><h3>Marks</h3><table id="score-table">{rows}</table></div>'
            f'<div><h3>Mitigation</h3>{why}<table>{neutral}</table>'
            f'<p class="muted">worst SLO values in the judged window: {esc(worst)}</p></div></div>'
            f'<div class="cols"><div><h3>Evidence found</h3><ul>{found}</ul></div>'
            f"<div><h3>Evidence missed</h3><ul>{missed}</ul></div></div>")


def steps_html(record: dict[str, Any], rep: Replay | None) -> str:
    writes = {w["step"]: w for w in (record.get("result") or {}).get("writes") or []}
    kinds = {a["step"]: a["kind"] for a in rep.actions} if rep else {}
    out = []
    for s in record.get("trajectory") or []:
        n = s["step"]
        kind = kinds.get(n, "read" if s.get("ok") else "invalid")
        notes = []
        if not s.get("ok"):
            notes.append(f'<span class="badge bad">invalid</span> {esc(s.get("error") or "")}')
        w = writes.get(n)
        if w is not None:
            verdict = ("addresses a root cause" if w.get("addresses_root_cause")
                       else "wrong fix" + (" (at a distractor)" if w.get("distractor") else ""))
            notes.append(f'{_badge(bool(w.get("addresses_root_cause")), verdict, verdict)} {esc(w.get("effect", ""))}')
        text = s.get("text") or ""
        first = text.split("\n", 1)[0][:140]
        out.append(f'<section class="step k-{esc(kind)}" id="step-{n}"><div class="head"><b>step {n}</b>'
                   f'<span class="muted">+{num(s.get("sim_time_s"), ".0f")}s</span><span class="badge">{esc(kind)}</span>'
                   f'<span class="call">{esc(call_text(s, 400))}</span><span class="muted">reward '
                   f'{num(s.get("reward"), "+.3f")}</span></div>{"".join(f"<div>{x}</div>" for x in notes)}'
                   f"<details><summary>observation: {esc(first)}</summary><pre>{esc(text)}</pre></details></section>")
    return "".join(out) or '<p class="muted">no steps recorded</p>'


def episode_page(e: Ep, rep: Replay | None, replayed: bool = True, failure: str = "") -> str:
    rec = e.record
    result = rec.get("result") or {}
    info = task_info(e.task_id)
    status = "" if e.ok else (f'<p class="warn">This episode was not scored: {esc(e.status)}: '
                              f'{esc(rec.get("error") or "")}</p>')
    ub = ('<p class="note">The oracle reads the ground truth and plays it perfectly: an upper bound that shows '
          "the task is solvable, not a competitor.</p>" if e.upper_bound else "")
    cards = "".join([
        _card("marks", num(e.marks)), _card("success", _badge(e.success)),
        _card("diagnosis", num(e.diagnosis, ".2f")), _card("mitigated", _badge(e.mitigated)),
        _card("evidence", num(e.evidence, ".2f")), _card("steps", str(e.steps)),
        _card("sim time", num(result.get("sim_seconds"), ".0f", " s")), _card("TTD", num(e.ttd_s, ".0f", " s")),
        _card("TTM", num(e.ttm_s, ".0f", " s"))] + ([_card("cost", num(e.cost_usd, ".4f", " $"))] if e.is_llm else [])
        + ([_card("hints taken", str(e.hints))] if e.hints is not None else []))
    fails = ", ".join(failure_labels(e)) or "none"
    body = (f'<p><a href="../index.html">« report</a> · <a href="../tasks/{esc(safe_name(e.task_id))}.html">task {esc(e.task_id)}</a></p>'
            f'<h1 id="episode-title">{esc(e.task_id)} · {esc(e.agent)} · seed {e.seed}</h1>'
            f'<p class="muted">{esc(info.get("title", ""))}</p>{status}{ub}<div class="cards">{cards}</div>'
            f"<p>Failure categories: {esc(fails)}</p>"
            f'<h2 id="timeline">Incident timeline</h2>{timeline_html(rep, replayed, failure)}'
            f'<h2 id="diagnosis">Diagnosis and ground truth</h2>{diagnosis_html(result)}'
            f'<h2 id="score">Score breakdown</h2>{score_html(result)}'
            f'<h2 id="steps">Actions and observations</h2>{steps_html(rec, rep)}')
    return page(f"{e.task_id} {e.agent} seed {e.seed} · srezero report", body, depth=1)
