"""The debrief shown when a play session ends: what happened, what you did, what it did, your marks.

It reads the ended episode (ground truth is fair game now) and the scored result. Metric deltas
come from the world's own series (true values, no measurement noise): each write is shown with the
page's metric, the edge error rate and the touched service before it and five minutes later.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from srezero.play.style import Style

if TYPE_CHECKING:
    from srezero.episode import Episode
    from srezero.sim.world import World

AFTER_S = 300.0
MAX_EVENTS = 14
TERM_LABELS = {"diagnosis": "diagnosis (40 x checklist score)", "mitigation": "mitigation (40 if verified)",
               "evidence": "evidence (10 x coverage)", "success": "success bonus",
               "wrong_fix_penalty": "wrong fixes (-10 each)", "destructive_penalty": "destructive actions (-20 each)",
               "invalid_penalty": "invalid actions (-1 each, max -10)",
               "premature_penalty": "premature resolve (-10)"}


def fmt(v: float | None) -> str:
    if v is None:
        return "n/a"
    a = abs(v)
    if a == 0:
        return "0"
    if a >= 100 or float(v).is_integer():
        return f"{v:.0f}"
    if a >= 1:
        return f"{v:.1f}"
    return f"{v:.3f}"


def rel(seconds: float) -> str:
    sign = "-" if seconds < 0 else "+"
    s = round(abs(seconds))
    return f"T{sign}{s // 60:02d}:{s % 60:02d}"


def metric_at(w: World, entity: str, metric: str, t: float) -> float | None:
    row = w.row_of.get((entity, metric))
    if row is None:
        return None
    return float(w.buf[row, w.col_at(t)])


def page_metric(env: Episode) -> tuple[str, str] | None:
    from srezero.telemetry.alerts import DEFAULT_RULES

    alert = env.spec.alert
    metric = getattr(alert, "metric", None)
    if metric:
        return getattr(alert, "entity", "load_balancer"), metric
    rule = next((r for r in DEFAULT_RULES if r.name == alert.name and not r.entity.startswith("*")), None)
    return (rule.entity, rule.metric) if rule else None


def _service_of(w: World, args: dict[str, Any]) -> str | None:
    name = args.get("service") or args.get("target") or ""
    if name in w.services:
        return name
    rep = w.topo.replicas.get(name)
    return rep.kind if rep is not None else None


def write_deltas(env: Episode, write: dict[str, Any], next_at: float | None = None) -> list[str]:
    """``metric of entity: before -> after`` for the metrics a write should have moved.

    "After" is five minutes later, or the next write if that came sooner, so an effect is not
    credited to the action before the one that caused it.
    """
    from srezero.sim.clock import TICK_S

    w = env.world
    t = env.t0 + float(write["at"])
    later = min(t + AFTER_S, w.now)
    if next_at is not None:
        later = min(later, env.t0 + next_at)
    if later - t < TICK_S:
        return ["(the next change came too soon to see this one's effect on the metrics)"]
    wanted: list[tuple[str, str]] = []
    pm = page_metric(env)
    if pm:
        wanted.append(pm)
    wanted.append(("load_balancer", "error_rate"))
    svc = _service_of(w, write["args"])
    if svc:
        wanted += [(svc, "error_rate"), (svc, "ready_replicas")]
    out = []
    for entity, metric in dict.fromkeys(wanted):
        before, after = metric_at(w, entity, metric, t), metric_at(w, entity, metric, later)
        if before is None or after is None:
            continue
        out.append(f"{metric} of {entity}: {fmt(before)} -> {fmt(after)} ({(later - t) / 60:.1f} min later)")
    return out


def timeline(env: Episode, result: dict[str, Any], hints: list[dict[str, Any]]) -> list[tuple[float, str, str]]:
    """(seconds relative to the page, kind, text) for the incident and the player's session, sorted."""
    from srezero.sim.clock import TICK_S
    from srezero.tools.write import AGENT

    w, t0 = env.world, env.t0
    items: list[tuple[float, str, str]] = []
    fault_times = {}
    for f, rc in zip(env.faults, env.truth):
        if f.injected_at is not None:
            fault_times[round(f.injected_at, 3)] = rc.entity
            items.append((f.injected_at - t0, "fault", f"fault begins: {f.meta.name} on {rc.entity}"))
    start = min([t0 - 3600.0, *[t + t0 - 600.0 for t, _, _ in items]])
    for c in w.changes:
        if c.author != AGENT and start <= c.at <= w.now:
            # a change is stamped up to 29 s before the tick it was made on (World.change)
            mark = "  <- the root cause" if any(0.0 <= ft - c.at < TICK_S for ft in fault_times) else ""
            items.append((c.at - t0, "change", f"{c.service} {c.kind}: {c.detail} (by {c.author}){mark}"))
    seen: dict[tuple[str, str], list[Any]] = {}
    for e in w.events:  # first Warning of each reason per service, with how often it recurred
        if e.kind != "Warning" or not start <= e.at <= w.now:
            continue
        rep = w.topo.replicas.get(e.entity)
        key = (e.reason, rep.kind if rep is not None else e.entity)
        if key in seen:
            seen[key][1] += 1
            seen[key][2].add(e.entity)
        else:
            seen[key] = [e, 1, {e.entity}]
    for e, n, where in list(seen.values())[:MAX_EVENTS]:
        more = f" (x{n}" + (f" across {len(where)} replicas)" if len(where) > 1 else ")") if n > 1 else ""
        items.append((e.at - t0, "event", f"{e.reason} {e.entity}: {e.message}{more}"))
    items.append((0.0, "page", f"PAGE: {env.briefing.page}"))
    for step in env.trajectory:
        call = step["action"] if isinstance(step["action"], str) else str(step["tool"])
        status = "" if step["ok"] else f"  -> error: {str(step['error'])[:90]}"
        items.append((step["sim_time_s"], "you", f"step {step['step']}: {call[:110]}{status}"))
    for h in hints:
        items.append((h["sim_time_s"], "hint", f"hint {h['hint']} taken"))
    items.append((float(result.get("sim_seconds", 0.0)), "end", "episode ended; the verification window followed"))
    order = {"fault": 0, "change": 1, "event": 2, "page": 3, "hint": 4, "you": 5, "end": 6}
    items.sort(key=lambda x: (x[0], order[x[1]]))
    return items


def render(env: Episode, result: dict[str, Any], hints: list[dict[str, Any]], style: Style | None = None) -> str:
    """The whole debrief as text."""
    s = style or Style(False)
    w = env.world
    out: list[str] = []

    def section(title: str) -> None:
        out.extend(["", s.bold(title), s.dim("-" * len(title))])

    verdict = s.green("SUCCESS", "bold") if result["success"] else s.yellow("NOT A FULL SUCCESS", "bold")
    out.append(s.bold(f"DEBRIEF: {env.spec.title}"))
    out.append(f"{verdict}  marks {result['marks']:.1f}/100 · diagnosis {result['diagnosis']['score']:.2f} · "
               f"mitigated {'yes' if result['mitigated'] else 'no'} · evidence {result['evidence_coverage']:.0%} · "
               f"{result['steps']} steps · {result['sim_seconds'] / 60:.1f} simulated minutes")

    section("What really happened")
    out.append(" ".join(env.spec.description.split()))
    truth = env.ground_truth()
    if not truth or result.get("no_fault"):
        out.append("Root cause: none. This was a false alarm (a control task); the right call is an empty diagnosis.")
    for rc in truth:
        if result.get("no_fault"):
            break
        out.append(f"Root cause: {s.bold(rc['entity'])} [{rc['category']}, {rc['layer']} layer]: {rc['detail']}")

    section("Timeline (T = the page)")
    colours = {"fault": "red", "change": "magenta", "event": "yellow", "page": "red", "you": "cyan", "hint": "blue",
               "end": "dim"}
    for t, kind, text in timeline(env, result, hints):
        out.append(f"  {rel(t)}  {w.stamp(env.t0 + t)[11:19]}  {s.paint(f'{kind:6}', colours[kind])} {text}")

    section("Your diagnosis")
    d = result["diagnosis"]
    claims = d.get("claims") or []
    if not claims:
        submitted = any(t["tool"] == "submit_diagnosis" and t["ok"] for t in env.trajectory)
        out.append("  an empty diagnosis (no fault)" if submitted else "  (none submitted)")
    for c in claims:
        out.append(f"  claimed {c.get('entity')} [{c.get('category')}]: {c.get('detail', '')}")
    misses = [k for k, v in (d.get("checklist") or {}).items() if v < 1.0]
    if misses and claims:
        out.append("  checklist items missed: " + ", ".join(misses))
    out.append(f"  score {d['score']:.2f} (precision {d.get('precision', 0):.2f}, recall {d.get('recall', 0):.2f})")

    section("Evidence")
    ev = result.get("evidence") or {}
    for item in ev.get("found", []):
        out.append(f"  {s.green('found ')} {item}")
    for item in ev.get("missed", []):
        out.append(f"  {s.red('missed')} {item}")

    section("What your actions did to the system")
    writes = result.get("writes") or []
    if not writes:
        out.append("  you changed nothing")
    for i, wr in enumerate(writes):
        if wr["addresses_root_cause"]:
            tag = s.green("addressed the root cause")
        else:
            tag = s.red("wrong fix" + (" (aimed at a red herring)" if wr.get("distractor") else ""))
        args = ", ".join(f"{k}={v!r}" for k, v in wr["args"].items())
        out.append(f"  step {wr['step']} at {rel(wr['at'])}: {wr['tool']}({args}): {tag}")
        out.append(f"      {wr['effect']}")
        next_at = float(writes[i + 1]["at"]) if i + 1 < len(writes) else None
        for line in write_deltas(env, wr, next_at):
            out.append(f"      {line}")
    m = result.get("mitigation") or {}
    for reason in m.get("reasons") or []:
        out.append(f"  {s.red('not mitigated:')} {reason}")
    for item in m.get("destroyed") or []:
        out.append(f"  {s.red('destroyed:')} {item}")
    if m.get("slo_worst"):
        worst = ", ".join(f"{k} {fmt(v)}" for k, v in m["slo_worst"].items())
        out.append(f"  worst during the verification window: {worst} (SLOs {'held' if m.get('slo_ok') else 'broken'})")

    section("Marks")
    for k, v in (result.get("marks_terms") or {}).items():
        out.append(f"  {TERM_LABELS.get(k, k):40} {v:+6.1f}")
    out.append(f"  {'total (clamped to 0..100)':40} {result['marks']:6.1f}")
    if hints:
        out.append(f"  hints taken: {len(hints)} (free; recorded in the transcript)")
    if result.get("ttd_s") is not None or result.get("ttm_s") is not None:
        ttd = "n/a" if result.get("ttd_s") is None else rel(result["ttd_s"])
        ttm = "n/a" if result.get("ttm_s") is None else rel(result["ttm_s"])
        out.append(f"  time to diagnose {ttd} · time to mitigate {ttm}")
    return "\n".join(out)
