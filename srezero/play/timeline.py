"""The debrief's timeline: the incident and the player's session in order, and each write's effect on
the metrics.

Changes go back as far as get_changes shows by default; metric deltas come from the world's own series
(true values, no measurement noise): each write is shown with the page's metric, the edge error rate and
the touched service at the start of its step (before it took effect) and five minutes later.
"""

from __future__ import annotations

import json
import re
from datetime import date
from typing import TYPE_CHECKING, Any

from srezero.play import goodpath as gp
from srezero.play.text import fmt, shorten

if TYPE_CHECKING:
    from srezero.episode import Episode
    from srezero.sim.world import World

#: A write's effect is read this long after its step began (or at the next write, if sooner).
AFTER_S = 300.0
#: At most this many distinct warnings (by reason and service) in the timeline.
MAX_EVENTS = 14
#: A word longer than this in a failed action or its error (a pasted blob) is cut too; it then fits the
#: timeline's text column (the debrief's TEXT_MIN wide at least).
LONG_WORD = 40
#: Changes this long before the page are in the timeline: get_changes' default look-back window.
CHANGES_WINDOW_S = 72 * 3600.0


def clock(env: Episode, seconds: float) -> str:
    """The wall-clock time ``seconds`` after the page, with the day offset from the page's date when it
    differs (``-1d 00:54:23``): changes go back 72 h, where a bare clock time is ambiguous."""
    w = env.world
    stamp, page = w.stamp(env.t0 + seconds), w.stamp(env.t0)
    days = (date.fromisoformat(stamp[:10]) - date.fromisoformat(page[:10])).days
    return f"{days:+d}d {stamp[11:19]}" if days else stamp[11:19]


_CHANGED_KEY = re.compile(r"(?:^|,\s*)([A-Za-z_][\w.\-]*): ")


def root_cause_keys(env: Episode) -> set[tuple[str, str]]:
    """(service, config key) of each ground-truth root cause named as a config key (``web_server.db_retries``,
    and its accepted aliases of that form): a change to one of them is the change that caused the incident,
    however long before the onset it was made (a latent misconfiguration waits for its trigger)."""
    out = set()
    for rc in env.truth:
        for name in (rc.entity, *rc.aliases):
            service, sep, key = _split_key(name)
            if sep and key and service in env.world.services:
                out.add((service, key))
    return out


def _split_key(name: str) -> tuple[str, str, str]:
    m = re.match(r"^([\w-]+)([.:])(.+)$", name)
    return (m.group(1), m.group(2), m.group(3)) if m else (name, "", "")


#: How far before an instant the tick read for it must lie (times are recorded to the millisecond).
_BEFORE_S = 1e-3


def metric_at(w: World, entity: str, metric: str, t: float) -> float | None:
    """The metric as the last tick computed before ``t`` left it.

    A tick due exactly at ``t`` runs after whatever an action did at ``t`` (the step applies the write,
    then time advances), so reading that tick's column would show the action's effect as "before"."""
    row = w.row_of.get((entity, metric))
    if row is None:
        return None
    return float(w.buf[row, w.col_at(t - _BEFORE_S)])


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


def write_start(write: dict[str, Any]) -> float:
    """When the write's step began (seconds after the page). ``write["at"]`` is stamped after the
    step's cost was spent, by when the write may already show in the metrics."""
    from srezero.tools.registry import load_tools

    spec = load_tools().get(write["tool"])
    return float(write["at"]) - (spec.cost_s if spec is not None else 0.0)


def write_deltas(env: Episode, write: dict[str, Any], next_at: float | None = None) -> list[str]:
    """``metric of entity: before -> after`` for the metrics a write should have moved.

    "Before" is the last value before the write's step began; "after" is five minutes later, or the
    start of the next write (``next_at``) if that came sooner, so an effect is not credited to the
    action before the one that caused it.
    """
    from srezero.sim.clock import TICK_S

    w = env.world
    t = env.t0 + write_start(write)
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
    """(seconds relative to the page, kind, text) for the incident and the player's session, in order.

    Changes go back as far as get_changes shows by default (72 h), so earlier releases and edits,
    harmless ones included, are part of the story; events go back an hour (or to the fault's onset).
    Nothing after the end of the episode is listed, and event counts stop there too: the player could
    not have seen what happened during the verification window. Items at the same second keep the
    order they happened in (a hint after the step it followed).
    """
    from srezero.sim.clock import TICK_S
    from srezero.tools.write import AGENT

    w, t0 = env.world, env.t0
    end = float(result.get("sim_seconds", 0.0))
    items: list[tuple[float, int, float, str, str]] = []  # (t, rank, sequence, kind, text)
    rank = {"fault": 0, "change": 1, "event": 2, "page": 3, "hint": 4, "you": 4, "end": 6}

    def add(t: float, kind: str, text: str, seq: float = 0.0) -> None:
        items.append((t, rank[kind], seq, kind, text))

    fault_times = {}
    for f, rc in zip(env.faults, env.truth):
        if f.injected_at is not None:
            fault_times[round(f.injected_at, 3)] = rc.entity
            add(f.injected_at - t0, "fault", f"fault begins: {f.meta.name} on {rc.entity}")
    start = min([t0 - 3600.0, *[t + t0 - 600.0 for t, *_ in items]])
    cause_keys = root_cause_keys(env)
    for c in w.changes:
        if c.author == AGENT or c.at > t0 + end:
            continue
        # a change is stamped up to 29 s before the tick it was made on (World.change)
        at_onset = any(0.0 <= ft - c.at < TICK_S for ft in fault_times)
        # a latent misconfiguration can be made days before its trigger: match it by service and key
        sets_cause = c.kind == "config" and not c.noise and \
            any((c.service, k) in cause_keys for k in _CHANGED_KEY.findall(c.detail))
        old = c.at < t0 - CHANGES_WINDOW_S
        if old and not sets_cause:  # beyond get_changes' default window; the cause is listed however old
            continue
        if c.noise:  # made by ambient noise or a distractor (harmless by construction, even when it
            # lands on the tick the fault began); the episode is over, so it may be said
            mark = "  <- a red herring (harmless)"
        elif at_onset or sets_cause:
            mark = "  <- the root cause"
            if old:
                reached = _wide_changes_read(env, c)
                mark += (f" (older than get_changes' default {CHANGES_WINDOW_S / 3600:g} h: "
                         + (f"your get_changes at step {reached} reached it)" if reached else
                            "get_changes(window_h=...) reaches it)"))
        else:
            mark = ""
        add(c.at - t0, "change", f"{c.service} {c.kind}: {c.detail} (by {c.author}){mark}")
    seen: dict[tuple[str, str], list[Any]] = {}
    for e in w.events:  # first Warning of each reason per service, with how often it recurred by the end
        if e.kind != "Warning" or not start <= e.at <= t0 + end:
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
        add(e.at - t0, "event", f"{e.reason} {e.entity}: {e.message}{more}")
    add(0.0, "page", f"PAGE: {env.briefing.page}")
    for step in env.trajectory:
        sent = step["action"]
        if not isinstance(sent, str):  # a dict action: the call with the arguments it gave, or what was sent
            args = sent.get("args") if isinstance(sent, dict) else None
            call = (gp.call_text({"tool": step["tool"], "args": args if isinstance(args, dict) else step["args"]})
                    if step["ok"] and step["tool"] else json.dumps(sent, ensure_ascii=False))
        else:
            call = step["action"]
            if step["ok"] and step["tool"] and any(len(w) > 50 for w in call.split()):
                call = gp.call_text(step)  # JSON typed without spaces: the same call, spaced so it can wrap
        status = "" if step["ok"] else f"  -> error: {shorten(str(step['error']), 90, LONG_WORD)}"
        call = shorten(call, 110, 0 if step["ok"] else LONG_WORD)  # what ran is never cut inside a word
        add(step["sim_time_s"], "you", f"step {step['step']}: {call}{status}", float(step["step"]))
    for h in hints:  # taken after step h["step"]: between it and the next step
        add(h["sim_time_s"], "hint", f"hint {h['hint']} taken", h["step"] + 0.5)
    add(end, "end", "episode ended; the verification window followed (not listed: the timeline and its event "
        "counts stop here)")
    items.sort(key=lambda x: x[:3])
    return [(t, kind, text) for t, _, _, kind, text in items]


def _wide_changes_read(env: Episode, change: Any) -> int | None:
    """The first step whose get_changes look-back reached ``change`` (a latent cause older than the
    default window), or None."""
    w = env.world
    for t in env.trajectory:
        args = t.get("args") or {}
        if t.get("tool") != "get_changes" or not t.get("ok") or args.get("service") not in (None, "", change.service):
            continue
        asked_at = w.t_page + float(t["sim_time_s"])
        if float(args.get("window_h", CHANGES_WINDOW_S / 3600)) * 3600 >= asked_at - change.at:
            return int(t["step"])
    return None
