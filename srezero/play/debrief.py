"""The debrief shown when a play session ends: what happened, what you did, what it did, your marks.

It reads the ended episode (ground truth is fair game now) and the scored result; the timeline and
each write's metric deltas come from :mod:`srezero.play.timeline`.
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any

from srezero.play import goodpath as gp
from srezero.play.style import Style
from srezero.play.text import MIN_WIDTH, debrief_width, fmt, rel, wrap
from srezero.play.timeline import clock, timeline, write_deltas, write_start
from srezero.play.words import plain_pattern as plain_pattern  # re-exported: the debrief's own vocabulary
from srezero.play.words import plain_signal
from srezero.scoring import diagnosis as diag
from srezero.scoring import marks as mk

if TYPE_CHECKING:
    from srezero.episode import Episode

#: A timeline row's text column narrower than this wraps under the row's head instead of beside it.
TEXT_MIN = 40
#: The Marks section's label column.
LABEL_WIDTH = 40
NBSP = "\u00a0"  # textwrap breaks only at ASCII whitespace
#: The diagnosis checklist (srezero/scoring/diagnosis.py) in words: what a "yes" needed.
QUESTION_WORDS = {
    "localization.origin": "name each root cause (its entity, or a coarser name such as its service)",
    "localization.no_victim": "blame no downstream victim (a component suffering because of the cause)",
    "localization.no_healthy": "blame no component that had no part in the incident",
    "characterization.mechanism": "give each root cause its right category, after reading evidence of it",
    "characterization.detail": "give each root cause its concrete detail (key and value, device, release...)",
    "characterization.no_contradiction": "claim no root cause under two different categories",
    "scope.no_over": f"blame nothing but the root causes, with at most {diag.MAX_CLAIMS_PER_CAUSE} claims each",
    "scope.no_under": "leave no root cause out",
}
GATE_WORDS = {
    "no_claims": "nothing (or only 'none') was claimed, but something was broken",
    "low_precision": "at most half of the components you blamed are root causes (entity precision {precision:.2f}, "
                     f"{diag.MIN_PRECISION:g} or less): blaming at least as many innocents as culprits earns nothing",
    "hedged_categories": f"one root cause was claimed under {diag.HEDGE_CATEGORIES} or more categories "
                         "(hedging earns nothing)",
    "not_submitted": "no diagnosis was submitted; this was a false alarm, and the right answer was an empty diagnosis "
                     "(submit_diagnosis(root_causes=[]))",
    "unsupported": "this was a false alarm, but 'no fault' was declared before reading any of the metrics that show "
                   "the page was noise: an unchecked guess is not a decision",
    "blamed_a_healthy_system": "this was a false alarm (nothing was broken), but the diagnosis blamed something",
}


def term_lines(label: str, value: str) -> list[str]:
    """One row of the Marks section: the label in its column and the value after it; a label longer
    than the column wraps within it, the value on its last line (so the values stay in one column)."""
    lines = textwrap.wrap(label, LABEL_WIDTH, subsequent_indent="  ", break_long_words=False) or [""]
    return [f"  {ln}" for ln in lines[:-1]] + [f"  {lines[-1]:{LABEL_WIDTH}} {value}"]


def wrong_fix_label(n: int) -> str:
    """The wrong-fix term's label: the k-th wrong fix costs 10 k, so n of them cost 10 + 20 + ... ."""
    steps = [f"{mk.P_WRONG_FIX * k:g}" for k in range(1, n + 1)]
    shown = " + ".join(steps) if n <= 4 else f"{steps[0]} + {steps[1]} + ... + {steps[-1]}"
    return f"wrong fixes ({n}: {shown})"


def end_reason(env: Episode, result: dict[str, Any]) -> str:
    """Why the episode ended, in words."""
    if result.get("resolved"):
        return "you resolved the incident"
    if not result.get("truncated"):
        return "the episode ended"
    budget = env.spec.budget
    over = float(result.get("sim_seconds", 0.0)) - budget.time_s
    overran = f"; the last action ran {over / 60:.1f} min past it" if over >= 1.0 else ""
    return {"step_budget": f"the step budget ran out ({budget.steps} steps) before resolve()",
            "time_budget": f"the time budget ran out ({budget.time_s / 60:g} simulated minutes{overran}) before "
                           "resolve()",
            }.get(env.end_cause() or "",
                  "you stopped before resolve() (quit or end of input); it counts as truncated, not resolved")


def scope_hint(env: Episode, signal: str) -> str:
    """Why a read the player did make did not count for a missed signal: it was not aimed at the signal's
    entity (unscoped, or at another one). "" when the player never made that read at all."""
    from srezero.play.words import signal_parts
    from srezero.tools.registry import load_tools

    parts = signal_parts(signal)
    spec = load_tools().get(parts[0]) if parts else None
    if parts is None or spec is None or spec.target_arg is None:
        return ""
    entity = parts[1]
    steps = [t for t in env.trajectory if t.get("tool") == spec.name and t.get("ok")]
    if not steps or entity in ("", "*"):
        return ""
    unscoped = [t["step"] for t in steps if not (t.get("args") or {}).get(spec.target_arg)]
    if unscoped:
        return (f" (your {spec.name} at step {unscoped[0]} was not aimed at any one target; only a read aimed at "
                f"{entity}, e.g. {spec.name}({spec.target_arg}=\"{entity}\"), counts for it)")
    others = sorted({str(t["args"][spec.target_arg]) for t in steps})
    return f" (you ran {spec.name} on {', '.join(others)}, not on {entity})"


def victim_words(env: Episode, entity: str) -> str:
    """Why a claim counted as blaming a victim: a setting the service does not have (a typo that fell back
    on the service), a service that runs on the broken node or disk, or one downstream of the cause."""
    from srezero.errors import near_misses
    from srezero.scoring.naming import norm, service_of

    w = env.world
    e = norm(entity)
    svc, _, key = e.partition(".")
    if key and svc in w.services and key not in w.services[svc].config and key not in ("primary", "replica"):
        close = near_misses(key, sorted(w.services[svc].config), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        return (f"{svc} has no setting {key!r}{hint}, so the claim counted as blaming {svc} itself, "
                "a victim (it suffered downstream of the root cause)")
    service = service_of(w, e)
    hosts = {r.node.name for r in w.services[service].replicas} if service in w.services else set()
    for rc in env.ground_truth():
        node = rc["entity"].split("/", 1)[0]
        if node in hosts and node in w.topo.node_by_name:
            return (f"a victim, not a cause: it runs on {node}, where the fault is ({rc['entity']}); a fault in a "
                    "node, its disk or its kernel is named by the node or the disk (node/device), not by the "
                    "service on it")
    return "a victim, not a cause (it suffered downstream of the root cause)"


def diagnosis_lines(env: Episode, result: dict[str, Any]) -> list[str]:
    """The diagnosis: what was claimed, the score and, in words, why it was not full."""
    d = result["diagnosis"]
    out: list[str] = []
    claims = d.get("claims") or []
    submitted = env.diagnosis_submitted
    if not claims:
        out.append("  an empty diagnosis (no fault)" if submitted else "  (none submitted)")
    for c in claims:
        out.append(f"  claimed {c.get('entity')} [{c.get('category')}]: {c.get('detail', '')}")
    out.append(f"  score {d['score']:.3g} (entity precision {d.get('precision', 0):.2f}, "
               f"recall {d.get('recall', 0):.2f}): the share of {len(diag.QUESTIONS)} checklist questions answered yes")
    gate = d.get("gate")
    if gate == "no_claims" and not submitted:
        out.append("  why 0: no diagnosis was submitted (submit_diagnosis before resolve)")
    elif gate:
        why = GATE_WORDS.get(gate, gate.replace("_", " ")).format(precision=d.get("precision", 0.0))
        out.append(f"  why 0: {why}")
    elif d.get("checklist", {}).get("characterization.mechanism") == 0.0 and claims:
        unseen = any(pc.get("named") and not pc.get("grounded", True) for pc in d.get("per_cause") or [])
        out.append(f"  capped at {diag.MECHANISM_CAP:.2f}: no root cause was claimed with its right category"
                   + (" after reading evidence of it (a right guess is not a diagnosis)" if unseen else
                      " (naming where, without knowing what, is not a diagnosis)"))
    distractors = set(d.get("distractor_claims") or [])
    for e in d.get("victim_claims") or []:
        out.append(f"  {e}: {victim_words(env, e)}")
    false_alarm = bool(result.get("no_fault"))
    for e in d.get("healthy_claims") or []:
        if false_alarm:  # something may have happened there (a blip), but nothing was broken
            out.append(f"  {e}: nothing there needed fixing (a false alarm has no root cause)")
            continue
        tail = ": a red herring (something harmless happened there)" if e in distractors else ""
        out.append(f"  {e}: had no part in the incident{tail}")
    truth = {rc["entity"]: rc for rc in env.ground_truth()}
    for pc in d.get("per_cause") or []:
        rc = truth.get(pc["entity"], {})
        name = pc["entity"]
        if not pc.get("named"):
            out.append(f"  root cause {name}: not named")
        elif not pc.get("grounded", True) and rc.get("category") in (pc.get("categories_claimed") or []):
            out.append(f"  root cause {name}: named with the right category, but none of your reads had shown "
                       "any sign of it before the diagnosis, so the category and detail did not count")
        elif not pc.get("mechanism"):
            got = ", ".join(pc.get("categories_claimed") or []) or "no category"
            out.append(f"  root cause {name}: named, but as {got}; it is {rc.get('category', '?')}")
        elif not pc.get("detail"):
            out.append(f"  root cause {name}: named with the right category, but the detail fell short: "
                       f"{pc.get('detail_reason') or 'not the right detail'}")
        else:
            out.append(f"  root cause {name}: named, right category, right detail")
    misses = [k for k, v in (d.get("checklist") or {}).items() if v < 1.0]
    if misses and claims and not false_alarm:  # a false alarm's one question is the gate above
        out.append("  checklist answers that were not yes:")
        out += [f"    - {QUESTION_WORDS.get(k, k)}" for k in misses]
    return out


def collateral_lines(result: dict[str, Any]) -> list[str]:
    """What the wrong writes cost the users, measured against a replay without them (scoring/collateral.py).
    Metrics that recover after a wrong restart read like a fix; this says what the restart itself broke."""
    c = result.get("collateral") or {}
    if c.get("method") != "counterfactual":
        return []
    n = c.get("writes_removed", 0)
    which = "your wrong write" if n == 1 else f"your {n} wrong writes"
    harm = []
    if c.get("errors", 0.0) >= 1.0:
        harm.append(f"about {c['errors']:,.0f} more failed requests")
    if c.get("slo_breach_s", 0.0) > 0.0:
        harm.append(f"{c['slo_breach_s']:.0f} s more of broken SLOs at the edge")
    if c.get("p99_excess_ms", 0.0) >= 1.0:
        harm.append(f"an edge p99 {c['p99_excess_ms']:.0f} ms higher on average")
    if not harm:
        return [f"collateral: none measurable; a replay of the episode without {which} has the same edge"]
    return [f"collateral: against a replay of the episode without {which}, from the page to the end of the "
            f"settling period: {', '.join(harm)}"]


def _paint_first(lines: list[str], word: str, painted: str) -> list[str]:
    """Colour ``word`` where it first appears in wrapped ``lines`` (wrap first, then paint: escape codes
    must not count towards the width)."""
    if lines and word in lines[0]:
        lines[0] = lines[0].replace(word, painted, 1)
    return lines


def write_tag(env: Episode, result: dict[str, Any], write: dict[str, Any], path: gp.GoodPath | None) -> str:
    """How a write is judged, in words. A write that worked on the root cause while that fault was still
    in effect at the end was only part of the fix: the tag says what the good path still needed."""
    if not write["addresses_root_cause"]:
        return ("wrong fix" + (" (aimed at a red herring)" if write.get("distractor") else "")
                + f", {gp.why_wrong(env, result, write, path)}")
    fault = gp.fault_of(write)
    missing = gp.still_needed(env, result, path, fault) if path is not None and fault else None
    if missing is None:
        return "addressed the root cause"
    if missing:
        needed = "; ".join(gp.call_text(a) for a in missing)
        return f"part of the fix, but the root cause was still in effect at the end; still needed: {needed}"
    return ("part of the fix, but the root cause was still in effect at the end, although every fix step of the "
            "good path was made (see below for what still failed)")


def render(env: Episode, result: dict[str, Any], hints: list[dict[str, Any]], style: Style | None = None,
           width: int | None = None) -> str:
    """The whole debrief as text, wrapped to ``width`` columns (by default :func:`debrief_width`: the
    terminal's width, at most :data:`WIDTH`)."""
    s = style or Style(False)
    out: list[str] = []
    path = gp.good_path(env)
    width = max(MIN_WIDTH, width or debrief_width())

    def fit(text: str, indent: int | str = 0, hang: int = 0) -> list[str]:
        return wrap(text, indent, hang, width)

    def section(title: str) -> None:
        out.extend(["", s.bold(title), s.dim("-" * len(title))])

    verdict = "SUCCESS" if result["success"] else "NOT A FULL SUCCESS"
    out += [s.bold(line) for line in fit(f"DEBRIEF: {env.spec.title}", 0, 2)]
    summary = fit(f"{verdict.replace(' ', NBSP)}  marks {result['marks']:.1f}/100 · diagnosis "
                  f"{result['diagnosis']['score']:.2f} · mitigated {'yes' if result['mitigated'] else 'no'} · "
                  f"evidence {result['evidence_coverage']:.0%}", 0, 2)
    painted = s.green(verdict, "bold") if result["success"] else s.yellow(verdict, "bold")
    out += _paint_first(summary, verdict.replace(" ", NBSP), painted)
    reason = end_reason(env, result)
    head = f"Ended after {result['steps']} step{'' if result['steps'] == 1 else 's'} and {result['sim_seconds'] / 60:.1f} simulated minutes: "
    ended = fit(f"{head}{reason}.", 0, 2)
    if result.get("truncated"):  # the reason in yellow: wrap first, then paint (codes have no width)
        start = len(head) if ended[0].startswith(head) else len(ended[0])
        ended = [ended[0][:start] + s.yellow(ended[0][start:]) if ended[0][start:] else ended[0],
                 *[ln[:2] + s.yellow(ln[2:]) for ln in ended[1:]]]
    out += ended

    section("What really happened")
    out += fit(" ".join(env.spec.description.split()))
    truth = env.ground_truth()
    if not truth or result.get("no_fault"):
        out += fit("Root cause: none. This was a false alarm (a control task); the right call is an empty diagnosis.")
    for rc in truth:
        if result.get("no_fault"):
            break
        line = f"Root cause: {rc['entity']} [{rc['category']}, {rc['layer']} layer]: {rc['detail']}"
        out += _paint_first(fit(line, 0, 2), rc["entity"], s.bold(rc["entity"]))

    section("Timeline (T = the page; up to the end of the episode)")
    colours = {"fault": "red", "change": "magenta", "event": "yellow", "page": "red", "you": "cyan", "hint": "blue",
               "end": "dim"}
    rows = [(rel(t), clock(env, t), kind, text) for t, kind, text in timeline(env, result, hints)]
    rw = max((len(r) for r, _, _, _ in rows), default=7)
    cw = max((len(c) for _, c, _, _ in rows), default=8)
    for r, c, kind, text in rows:
        head = f"  {r:>{rw}}  {c:>{cw}}  "
        # on a narrow terminal the text column would be a sliver: continuation lines start further left
        hang = 0 if width - len(head) - 7 >= TEXT_MIN else 6 - len(head) - 7
        lines = fit(text, f"{head}{kind:6} ", hang)
        lines[0] = head + s.paint(f"{kind:6}", colours[kind]) + lines[0][len(head) + 6:]
        out += lines

    section("Your diagnosis")
    for line in diagnosis_lines(env, result):
        indent = len(line) - len(line.lstrip())
        out += fit(line.lstrip(), indent, 2)

    section("Evidence")
    out += [s.dim(x) for x in fit("A signal counts when you made that read on that entity (the service itself, one of "
                                  "its replicas, or a pod on that node; the alerts, the topology, the change history "
                                  "and the consoles count anywhere) and what you were shown contained the text, at a "
                                  "time when it showed. <n> stands for a number.", 2)]
    ev = result.get("evidence") or {}
    for item in ev.get("found", []):
        out += _paint_first(fit(f"found  {plain_signal(item)}", 2, 7), "found ", s.green("found "))
    for item in ev.get("missed", []):
        out += _paint_first(fit(f"missed {plain_signal(item)}{scope_hint(env, item)}", 2, 7), "missed",
                            s.red("missed"))

    section("What your actions did to the system")
    writes = result.get("writes") or []
    if not writes:
        out.append("  you changed nothing")
    for i, wr in enumerate(writes):
        args = ", ".join(f"{k}={v!r}" for k, v in wr["args"].items())
        tag = write_tag(env, result, wr, path)
        colour = "red" if tag.startswith("wrong") else "green" if tag.startswith("addressed") else "yellow"
        key = tag.split(",")[0]
        glued = key.replace(" ", NBSP)  # wrap never breaks the verdict, so it can be painted whole
        lines = fit(f"step {wr['step']} at {rel(wr['at'])}: {wr['tool']}({args}): {glued}{tag[len(key):]}", 2, 4)
        out += [line.replace(glued, s.paint(key, colour)) for line in lines]
        out += fit(wr["effect"], 6, 2)
        next_at = write_start(writes[i + 1]) if i + 1 < len(writes) else None
        for line in write_deltas(env, wr, next_at):
            out += fit(line, 6, 2)
    out += [line for text in collateral_lines(result) for line in fit(text, 2, 4)]
    m = result.get("mitigation") or {}
    for reason in m.get("reasons") or []:
        out += _paint_first(fit(f"not mitigated: {reason}", 2, 4), "not mitigated:", s.red("not mitigated:"))
    for item in m.get("destroyed") or []:
        out += _paint_first(fit(f"destroyed: {item}", 2, 4), "destroyed:", s.red("destroyed:"))
    if m.get("slo_worst"):
        worst = ", ".join(f"{k} {fmt(v)}" for k, v in m["slo_worst"].items())
        out += fit(f"worst during the verification window: {worst} (SLOs {'held' if m.get('slo_ok') else 'broken'})",
                   2, 4)

    section("Marks")
    for k, v in (result.get("marks_terms") or {}).items():
        label = mk.TERM_LABELS.get(k, k)
        if k == "wrong_fix_penalty" and result.get("wrong_fixes"):
            label = wrong_fix_label(int(result["wrong_fixes"]))
        out += term_lines(label, f"{v:+6.1f}")
    out += term_lines("total (clamped to 0..100)", f"{result['marks']:6.1f}")
    if hints:
        out.append(f"  hints taken: {len(hints)} (free; recorded in the transcript)")
    if result.get("ttd_s") is not None or result.get("ttm_s") is not None:
        ttd = "n/a" if result.get("ttd_s") is None else rel(result["ttd_s"])
        ttm = "n/a" if result.get("ttm_s") is None else rel(result["ttm_s"])
        out.append(f"  time to diagnose {ttd} · time to mitigate {ttm}")

    section("A good path")
    from srezero.tools.registry import load_tools

    tools = load_tools()
    plan_writes = any(a["tool"] in tools and tools[a["tool"]].kind == "write" for a in path.plan)
    fix = ("the smallest fix" if plan_writes else "no fix (nothing was broken, so any write would have done harm)"
           if result.get("no_fault") else "no write")
    out += fit("What the oracle, which knows the answer, does on this task and seed: the reads that show the "
               f"evidence, the diagnosis, {fix}, then resolve. Your own path can differ and still be good.", 2)
    for i, action in enumerate(path.plan, start=1):
        out += fit(gp.call_text(action), f"  {i:>2}. ", 2)
    return "\n".join(out)
