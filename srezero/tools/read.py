"""Read tools: what an on-call engineer looks at. Each costs a few simulated seconds."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field

from srezero.errors import did_you_mean
from srezero.sim import metrics as M
from srezero.sim.clock import TICK_S
from srezero.telemetry import logs, traces
from srezero.telemetry import node as nodediag
from srezero.tools.registry import ToolError, ToolOutput, tool
from srezero.tools.watch import is_met, watch_answer, watch_bound

if TYPE_CHECKING:
    from srezero.sim.world import World
    from srezero.tools.context import ToolContext

SPARK = "▁▂▃▄▅▆▇█"
#: The longest sparkline ``query_metrics`` draws (a 2-hour window has 240 samples).
SPARK_WIDTH = 60
Window = Annotated[int, Field(ge=60, le=7200)]


def unknown_service(w: World, name: str, what: str = "service", also: str = "") -> ToolError:
    """The error for a name that is no ``what``: every service, then the near miss of a misspelt one."""
    return ToolError(f"unknown {what} {name!r}; services: {', '.join(w.services)}{also}"
                     f"{did_you_mean(name[:60], w.services)}")


def _service(ctx: ToolContext, name: str) -> str:
    w = ctx.world
    if name in w.services:
        return name
    raise unknown_service(w, name)


def _service_or_replica(ctx: ToolContext, name: str) -> tuple[str, list]:
    w = ctx.world
    if name in w.services:
        return name, list(w.services[name].replicas)
    rep = w.topo.replicas.get(name)
    if rep is not None:
        return rep.kind, [rep]
    raise unknown_service(w, name, "service or replica", " (get_status lists replicas)")


def _node(ctx: ToolContext, name: str):
    node = ctx.world.topo.node_by_name.get(name)
    if node is None:
        raise ToolError(f"unknown node {name!r}; nodes: {', '.join(ctx.world.topo.node_by_name)}")
    return node


def _ago(seconds: float) -> str:
    s = max(0.0, seconds)
    if s < 120:
        return f"{s:.0f}s"
    if s < 7200:
        return f"{s / 60:.0f}m"
    if s < 172800:
        return f"{s / 3600:.0f}h"
    return f"{s / 86400:.0f}d"


def _fmt(v: float) -> str:
    a = abs(v)
    if a == 0:
        return "0"
    if a >= 1000:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 0.01:
        return f"{v:.3f}"
    return f"{v:.2g}"


@tool("read", 5)
def get_alerts(ctx: ToolContext) -> ToolOutput:
    """List firing alerts and those resolved in the last hour, newest first. A summary quotes the value
    the alert fired with; query_metrics shows the value now."""
    w = ctx.world
    items = sorted(w.alerts.listing(w.now - 3600), key=lambda a: -a.started_at)
    lines = []
    data = []
    for a in items:
        state = "FIRING" if a.firing else "resolved"
        until = "" if a.firing else f", resolved {w.stamp(a.resolved_at)}"
        lines.append(f"[{state} {a.severity}] {a.name} on {a.entity}: {a.summary} (since {w.stamp(a.started_at)}{until})")
        data.append({"name": a.name, "severity": a.severity, "entity": a.entity, "summary": a.summary,
                     "firing": a.firing, "started_at": w.stamp(a.started_at)})
    return ToolOutput("\n".join(lines) if lines else "no alerts firing", data)


@tool("read", 5)
def get_topology(ctx: ToolContext) -> ToolOutput:
    """Show services, their replicas and nodes, the call graph, and the metric names you can query."""
    w = ctx.world
    lines = ["call graph: clients -> load_balancer -> web_server -> cache, database, message_queue; "
             "message_queue -> worker -> database", "services:"]
    data: dict = {"services": {}, "nodes": {}}
    for kind, svc in w.services.items():
        reps = ", ".join(f"{r.name}{'(' + r.role + ')' if r.role else ''}@{r.node.name}"
                         for r in svc.replicas if r.state != "Terminated")
        lines.append(f"  {kind}: {reps}")
        data["services"][kind] = [r.name for r in svc.replicas if r.state != "Terminated"]
    lines.append("nodes:")
    for n in w.topo.nodes:
        flags = ("" if n.up else " NotReady") + (" cordoned" if n.cordoned else "")
        lines.append(f"  {n.name} ({n.zone}, {n.cores} cores, {n.mem_total_mb / 1024:.0f} GiB, disks "
                     f"{', '.join(d.device for d in n.disks)}){flags}")
        data["nodes"][n.name] = {"zone": n.zone, "disks": [d.device for d in n.disks]}
    lines.append("metrics: service: " + ", ".join(M.SERVICE_BASE) + " (+ per service: " +
                 "; ".join(f"{k}: {', '.join(v)}" for k, v in M.SERVICE_EXTRA.items()) + ")")
    lines.append("         replica: " + ", ".join(M.REPLICA_METRICS))
    lines.append("         node: " + ", ".join(M.NODE_METRICS))
    return ToolOutput("\n".join(lines), data)


@tool("read", 5, target_arg="service")
def get_status(ctx: ToolContext,
               service: Annotated[str, "service to show; empty for every service"] = "") -> ToolOutput:
    """List replicas (pods) with readiness, status, restarts, age, node and version."""
    w = ctx.world
    kinds = [_service(ctx, service)] if service else list(w.services)
    lines = [f"{'NAME':16} {'SERVICE':14} {'READY':5} {'STATUS':17} {'RESTARTS':8} {'AGE':5} {'NODE':10} {'VERSION':8} ROLE"]
    data = []
    for kind in kinds:
        for r in w.services[kind].replicas:
            if r.state == "Terminated":
                continue
            ready = "1/1" if r.state == "Running" else "0/1"
            age = _ago(r.age_s(w.now))
            lines.append(f"{r.name:16} {kind:14} {ready:5} {r.state:17} {r.restarts:<8} {age:5} {r.node.name:10} "
                         f"{r.version:8} {r.role}")
            data.append({"name": r.name, "service": kind, "state": r.state, "restarts": r.restarts,
                         "node": r.node.name, "version": r.version, "role": r.role})
    return ToolOutput("\n".join(lines), data)


def _metric_row(w: World, target: str, metric: str) -> int:
    """The buffer row of ``metric`` of ``target`` (a service, replica or node), or a ToolError naming the choices."""
    kind = w.entity_kind(target)
    if kind in (None, "disk"):
        raise ToolError(f"unknown target {target!r}; use a service ({', '.join(w.services)}), a replica or a node")
    names = M.metric_names(target if kind == "service" else kind)
    if metric not in names:
        raise ToolError(f"{target} has no metric {metric!r}; available: {', '.join(names)}")
    return w.row_of[(target, metric)]


@tool("read", 10, target_arg="target")
def query_metrics(ctx: ToolContext,
                  target: Annotated[str, "a service, replica or node name"],
                  metric: Annotated[str, "metric name, e.g. error_rate, latency_p99_ms (get_topology lists all)"],
                  window_s: Annotated[Window, "look-back window in seconds (60-7200)"] = 900) -> ToolOutput:
    """Query one metric's time series for a service, replica or node over a recent window."""
    w = ctx.world
    row = _metric_row(w, target, metric)
    c1 = w.col
    c0 = max(0, c1 - int(window_s // TICK_S) + 1)
    values = w.series(row, c0, c1)
    vals = values.tolist()
    lo, hi = min(vals), max(vals)
    span = hi - lo
    # at most 60 characters: each one the most extreme sample of its stretch, so no spike hides
    per, mean = -(-len(vals) // SPARK_WIDTH), sum(vals) / len(vals)
    marks = [max(vals[i:i + per], key=lambda v: abs(v - mean)) for i in range(0, len(vals), per)]
    spark = "".join(SPARK[min(7, int((v - lo) / span * 8))] if span > 0 else SPARK[0] for v in marks)
    step = max(1, len(vals) // 30)
    shown = vals[::-1][::step][::-1]
    unit = M.UNITS.get(metric, "")
    nth = {2: "2nd", 3: "3rd"}.get(step, f"{step}th")
    every = "" if step == 1 else f" (every {nth} sample, {TICK_S * step:.0f}s apart; min and max above cover all)"
    covered = len(vals) * TICK_S
    period = f"{window_s // 60} min" if covered >= window_s else f"{covered / 60:.0f} min (all the history kept)"
    text = (f"{metric} of {target} over the last {period} ({TICK_S:.0f}s step{', ' + unit if unit else ''})\n"
            f"  min {_fmt(lo)}  avg {_fmt(sum(vals) / len(vals))}  max {_fmt(hi)}  last {_fmt(vals[-1])}\n"
            f"  {w.stamp(c0 * TICK_S)[11:16]} {spark} {w.stamp(c1 * TICK_S)[11:16]}\n"
            f"  values{every}: {' '.join(_fmt(v) for v in shown)}")
    return ToolOutput(text, {"target": target, "metric": metric, "start": w.stamp(c0 * TICK_S), "step_s": TICK_S * step,
                             "values": [round(v, 6) for v in shown]}, echo_lines=1)


@tool("read", 10, target_arg="service")
def search_logs(ctx: ToolContext,
                service: Annotated[str, "service or replica whose logs to search"],
                pattern: Annotated[str, Field(max_length=500),
                                   "case-insensitive regular expression; empty matches every line"] = "",
                level: Annotated[Literal["", "debug", "info", "warn", "error"], "minimum level"] = "",
                window_s: Annotated[Window, "look-back window in seconds (60-7200)"] = 900,
                limit: Annotated[int, Field(ge=1, le=200), "maximum lines returned"] = 20) -> ToolOutput:
    """Search recent log lines of a service (all replicas) or one replica, newest lines last."""
    import re

    _, reps = _service_or_replica(ctx, service)
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ToolError(f"invalid pattern {pattern!r}: {exc}") from None
    if problem := _slow_pattern(pattern):  # Python's re backtracks: (.*)*! never returns on a long line
        raise ToolError(f"pattern {pattern!r} {problem}")
    lines, _, truncated = logs.search(ctx.world, reps, pattern, level, float(window_s), limit)
    if not lines:
        return ToolOutput(f"no log lines matching {pattern!r} in {service} over the last {window_s // 60} min", [],
                          echo_lines=1)
    head = f"{len(lines)} line(s) from {service}" + (" (limit reached; older matches not shown)" if truncated else "")
    return ToolOutput(head + "\n" + "\n".join(lines), lines, echo_lines=1)


@tool("read", 10, target_arg="service")
def get_traces(ctx: ToolContext,
               service: Annotated[str, "only traces that touch this service; empty for all"] = "",
               errors_only: Annotated[bool, "only failed requests"] = False,
               limit: Annotated[int, Field(ge=1, le=20), "number of traces"] = 5) -> ToolOutput:
    """Sample recent request traces along load_balancer -> web_server -> cache/database/queue."""
    kind = _service_or_replica(ctx, service)[0] if service else None
    w = ctx.world
    sampled = traces.sample(w, service or None, errors_only, limit)
    if not sampled:
        return ToolOutput(traces.none_sampled(w, kind, service, errors_only), sampled)
    return ToolOutput(traces.render(sampled, w.services["load_balancer"].replicas[0].name), sampled)


@tool("read", 5, target_arg="entity")
def get_events(ctx: ToolContext,
               entity: Annotated[str, "service, replica or node; empty for all"] = "",
               window_s: Annotated[Annotated[int, Field(ge=60, le=86400)], "look-back window in seconds"] = 3600,
               limit: Annotated[int, Field(ge=1, le=200), "maximum events"] = 30) -> ToolOutput:
    """Cluster events (restarts, OOM kills, probe failures, rollouts, scheduling), newest last."""
    w = ctx.world
    names: set[str] | None = None
    if entity:
        kind = w.entity_kind(entity)
        if kind is None or kind == "disk":
            raise ToolError(f"unknown entity {entity!r}; use a service, replica or node name")
        if kind == "service":
            names = {entity} | {r.name for r in w.services[entity].replicas}
        elif kind == "node":
            names = {entity} | {r.name for r in w.topo.node_by_name[entity].replicas}
        else:
            names = {entity}
    since = w.now - window_s
    evs = [e for e in w.events if e.at >= since and e.at <= w.now and (names is None or e.entity in names)]
    evs.sort(key=lambda e: e.at)
    evs = evs[-limit:]
    lines = [f"{w.stamp(e.at)} {e.kind:7} {e.reason:18} {e.entity}: {e.message}" for e in evs]
    return ToolOutput("\n".join(lines) if lines else "no events in the window",
                      [{"at": w.stamp(e.at), "kind": e.kind, "reason": e.reason, "entity": e.entity, "message": e.message}
                       for e in evs], line_entities=tuple(e.entity for e in evs))


@tool("read", 5, target_arg="service")
def get_config(ctx: ToolContext, service: Annotated[str, "service whose live configuration to show"]) -> ToolOutput:
    """Show a service's live configuration (key = value), including feature flags and environment."""
    name = _service(ctx, service)
    cfg = ctx.world.services[name].config
    lines = [f"{k} = {v!r}" if isinstance(v, str) else f"{k} = {str(v).lower() if isinstance(v, bool) else v}"
             for k, v in sorted(cfg.items())]
    return ToolOutput(f"{name} configuration:\n" + "\n".join(lines), dict(sorted(cfg.items())), echo_lines=1)


@tool("read", 5, target_arg="service")
def get_changes(ctx: ToolContext,
                service: Annotated[str, "only changes to this service; empty for all"] = "",
                window_h: Annotated[Annotated[float, Field(gt=0, le=240)], "look-back window in hours"] = 72.0
                ) -> ToolOutput:
    """Change history: deploys, config edits, scaling and operations, newest last."""
    w = ctx.world
    if service:
        _service(ctx, service)
    since = w.now - window_h * 3600
    items = [c for c in w.changes if c.at >= since and c.at <= w.now and (not service or c.service == service)]
    items.sort(key=lambda c: c.at)
    lines = [f"{w.stamp(c.at)} {c.service:14} {c.kind:9} {c.detail}  (by {c.author})" for c in items]
    deploys = []
    for kind, svc in w.services.items():
        if service and kind != service:
            continue
        deploys.append(f"  {kind}: " + " -> ".join(d.version for d in svc.deploys[-3:]) + " (current)")
    text = ("\n".join(lines) if lines else f"no changes in the last {window_h:g} h") + "\nreleases:\n" + "\n".join(deploys)
    return ToolOutput(text, [{"at": w.stamp(c.at), "service": c.service, "kind": c.kind, "detail": c.detail,
                              "author": c.author} for c in items], echo_lines=0 if lines else 1)


@tool("read", 10, target_arg="node")
def node_diagnostics(ctx: ToolContext,
                     node: Annotated[str, "node name"],
                     check: Annotated[Literal["dmesg", "disk", "top", "limits"],
                                      "dmesg: kernel log; disk: SMART health; top: processes; "
                                      "limits: fds, conntrack, ports, memory, clock, cgroups"]) -> ToolOutput:
    """Inspect a node: check 'dmesg' (kernel log), 'disk' (SMART health), 'top' (processes) or 'limits'
    (kernel and cgroup limits)."""
    n = _node(ctx, node)
    w = ctx.world
    render = {"dmesg": nodediag.dmesg, "disk": nodediag.disk_health, "top": nodediag.top, "limits": nodediag.limits}
    return ToolOutput(f"{check} on {node}:\n" + render[check](w, n), echo_lines=1)


@tool("read", 0)
def wait(ctx: ToolContext,
         seconds: Annotated[int, Field(ge=10, le=600), "how long to watch before the next action (10-600)"] = 60,
         target: Annotated[str, "with metric and below or above: a service, replica or node to watch"] = "",
         metric: Annotated[str, "with target: the metric whose sample ends the watch early"] = "",
         below: Annotated[float | None, "end the watch at the first sample of the metric below this value"] = None,
         above: Annotated[float | None, "end the watch at the first sample of the metric above this value"] = None,
         ) -> ToolOutput:
    """Let simulated time pass without acting, e.g. while a fix takes effect; shows the edge afterwards. Given a
    target's metric and a bound (below or above), the watch ends at the first 30 s sample past the bound (at once
    if the latest one is). The watch ends where the episode's time budget does."""
    w = ctx.world
    ep = ctx.episode
    watch = watch_bound(target, metric, below, above)
    limit = seconds
    if ep is not None:  # watching past the budget would let the world run on after the episode ended
        limit = min(seconds, math.ceil(ep.time_left_s()))
    cut = limit < seconds
    if watch is None:
        w.advance(limit)
        head, data = f"waited {limit} s" + (f" of {seconds} (the time budget ran out)" if cut else ""), {"waited_s": limit}
    else:
        bound, is_below = watch
        row = _metric_row(w, target, metric)
        start = w.now
        end = start + limit
        value = _latest(w, row)
        while not is_met(value, bound, is_below) and w.now < end:
            # one second past the next sample, so that the tick due then has run
            w.advance(min(end, (w.col + 1) * TICK_S + 1.0) - w.now)
            value = _latest(w, row)
        head, data = watch_answer(round(w.now - start, 3), seconds, cut, target, metric, value, bound, is_below)
    err = _latest(w, w.row_of[("load_balancer", "error_rate")])
    p99 = _latest(w, w.row_of[("load_balancer", "latency_p99_ms")])
    firing = sorted({a.name for a in w.alerts.listing(w.now) if a.firing})
    return ToolOutput(f"{head}; edge error ratio {err:.2%}, p99 {p99:.0f} ms; "
                      f"firing alerts: {', '.join(firing) or 'none'}", data)


def _latest(w: World, row: int) -> float:
    """The latest sample of a row as query_metrics shows it (measurement noise included)."""
    return round(w.measured(row), 6)


#: The most unbounded repeats a pattern may hold: each one multiplies the backtracking over a line that
#: does not match (on the logs of a two-hour window, 2 took 0.05 s, 3 took 1.9 s and 4 more than 5 s).
MAX_UNBOUNDED_REPEATS = 2


def _slow_pattern(pattern: str) -> str | None:
    """Why ``pattern`` could backtrack for a very long time in Python's re, or None. The shapes refused:
    a repeat inside a repeat where either is unbounded ((a+)+, (.*.*){1,50}), an alternation inside a
    repeat whose alternatives can match at one place ((.|.)*, (a|aa)*; (error|warn)+ is fine), and
    more than :data:`MAX_UNBOUNDED_REPEATS` unbounded repeats (.*.*.*#)."""
    from re import _parser as parser  # the stdlib's own parse tree; no third-party regex engine needed

    repeats = (parser.MAX_REPEAT, parser.MIN_REPEAT, parser.POSSESSIVE_REPEAT)
    unbounded = 0

    def walk(items: Any, outer: int) -> str | None:  # outer: the most times an enclosing repeat repeats
        nonlocal unbounded
        for op, av in items:
            if op in repeats:
                _lo, hi, sub = av
                endless = hi > 100  # MAXREPEAT when unbounded
                unbounded += endless
                if hi > 1 and outer > 1 and (endless or outer > 100):
                    return ("repeats a group that itself repeats without bound, which can take exponential time; "
                            "drop the outer repetition, e.g. (a+)+ -> a+")
                if problem := walk(sub, max(outer, hi)):
                    return problem
            elif op == parser.BRANCH:
                firsts = [b[0] if len(b) else (None, None) for b in av[1]]
                # alternatives that start with distinct literals, (error|warn)+, cannot both match at one place
                distinct = all(o == parser.LITERAL for o, _ in firsts) and len({c for _, c in firsts}) == len(firsts)
                if outer > 10 and not distinct:
                    return ("repeats an alternation, which can take exponential time; use a character class "
                            "([ab]* for (a|b)*) or search for each alternative without the repetition")
                if problem := next((p for b in av[1] if (p := walk(b, outer))), None):
                    return problem
            elif op in (parser.SUBPATTERN, parser.ASSERT, parser.ASSERT_NOT) and (problem := walk(av[-1], outer)):
                return problem
        return None

    problem = walk(parser.parse(pattern), 0)
    if problem is None and unbounded > MAX_UNBOUNDED_REPEATS:
        problem = (f"has {unbounded} unbounded repeats, which can take a very long time on lines that do not match; "
                   f"use at most {MAX_UNBOUNDED_REPEATS} (a search matches anywhere in a line: a leading or "
                   "trailing .* is not needed)")
    return problem
