"""Memorising adversary: a table learned from the public curated tasks, played on held-out seeds.

    python benchmarks/bench_memorise.py [--train 0-4] [--test 5-9] [--workers 2]

Re-measures docs/scoring.md's "The curated tasks are public, so they can be memorised" at today's suite.

**Learn** (reads ground truth: that is the threat). Per task and train seed: the oracle plan's writes
(not wait/submit_diagnosis/resolve) and the true root causes, with every seeded value rewritten as the
first *role* (in this order) that get_status and get_changes show it in: ``primary_node``/``replica_node``;
``bad_pod:S``/``bad_node:S`` (first pod of S not Running or restarted); ``old:S:K``/``new:S:K`` (value
before/after the newest change of key K, S = ``node`` for sysctls); ``key:S:K``/``keypod:S:K`` (a key
naming a pod, the pod as ``*`` in K); ``sysnode:K``; ``rot_old``/``rot_new`` (a credential rotation);
``deploy:S``/``ver:S`` (newest release, running version); last ``pod:S:i``/``node:S:i`` (i-th pod of S:
placement is seeded, so rarely right). Else a value stays literal: pids, message ids and slots only
symptom reads show, so they go stale (a literal varying across one task's seeds folds into the first
seen). In claims, config values are replaced only where their key is named or they look like a name.
An *entry* is an abstract fix with its count, its commonest abstract claims and the counts of its
*cues*: seed-free facts of the two reads (each changed key with its direction, deploys, rotations, the
newest change, unhealthy pods by service and state). The page key is the page with numbers as ``#`` and
pod/node names as ``<pod>``/``<node>``: 6 keys for 53 tasks, so the page alone cannot tell tasks apart.

**Play** (observations only: the page, get_status, get_changes; no logs, metrics, traces, alerts,
events, configs or node diagnostics): rank the page key's entries (an unknown key: every page's,
pooled), take the first whose fix roles all fill in, submit its claims, apply its writes, resolve.
``memorise_count`` ranks by count (the bare table: the page's commonest fix that fills in);
``memorise`` by naive Bayes on the cues present, which lets the two reads pick among a page's tasks.
Also played: ``runbook``, and ``ceiling`` (privileged, no adversary): the true claims and the oracle's
writes after the same two reads, a perfect memoriser under grounding. Limits: one guess per episode,
roles only from the two reads, the page's numbers unused, a decoy change can outvote the fault's.
"""

from __future__ import annotations

import argparse
import math
import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

# the sibling script: benchmarks/ is on the path of a script run from it
from bench_priors import Action, Scripted, call, seed_range

import srezero
from srezero.agents.registry import create
from srezero.agents.runner import run_episode
from srezero.sim.changes import parse_edit, parse_rotation
from srezero.tools.registry import load_tools

Rows = list[dict[str, Any]]
Fix = tuple[tuple[str, tuple[tuple[str, tuple[Any, ...]], ...]], ...]  # arg: ("lit", v) or ("role", r, type)
Claims = tuple[tuple[str, str, str], ...]
Sample = tuple[str, Fix, Claims, frozenset[str], str]  # page key, fix, claims, cues, task
WRITES = {n for n, t in load_tools().items() if t.kind == "write"} - {"wait", "submit_diagnosis", "resolve"}
#: weight of the pooled cue rate in an entry's: chosen on train seeds only (learn 0-2 play 3-4, learn 2-4
#: play 0-1: 1 -> 32 marks, 3-12 -> 33-37, the old add-1/2 rate -> 25), never on the default test seeds
SHRINK = 5.0
POOLED = "*"  # the table's key for every page pooled (no page starts with it)
AGENTS = ("memorise", "memorise_count", "runbook", "ceiling")


def page_key(page: str) -> str:
    page = re.sub(r"\b[a-z]+-[a-z0-9]{5}\b", "<pod>", re.sub(r"\bnode-[a-z0-9]{4}\b", "<node>", page))
    return re.sub(r"\b\d+(?:\.\d+)?\b", "#", page)


def _edit(change: dict[str, Any], pods: set[str]) -> tuple[str, str, str, str, str] | None:
    """(service, key with pods as ``*``, key, old, new) of a config or sysctl edit (sysctl: ``node``)."""
    svc, detail = change.get("service", ""), change.get("detail", "")
    if change.get("kind") == "sysctl":
        svc, detail = "node", detail.partition(": ")[2]
    edit = parse_edit(detail) if change.get("kind") in ("config", "sysctl") else None
    return (svc, re.sub("|".join(map(re.escape, sorted(pods))) or "^$", "*", edit[0]), *edit) if edit else None


def roles(status: Rows, changes: Rows) -> dict[str, str]:
    """Role -> value, highest priority first (a value's first role is the one memorised)."""
    r: dict[str, str] = {}
    pods = [p for p in status if isinstance(p, dict) and p.get("name")]
    names = {p["name"] for p in pods}
    for p in pods:
        if p.get("service") == "database" and p.get("role"):
            r.setdefault(f"{p['role']}_node", p.get("node", ""))
    for p in (p for p in pods if p.get("state") != "Running" or p.get("restarts")):
        r.setdefault(f"bad_pod:{p['service']}", p["name"])
        r.setdefault(f"bad_node:{p['service']}", p.get("node", ""))
    for c in reversed(changes):  # newest first: setdefault keeps each key's newest change
        detail = c.get("detail", "")
        if c.get("kind") == "deploy" and (m := re.match(r"deployed (\S+):", detail)):
            r.setdefault(f"deploy:{c.get('service')}", m[1])
        elif rot := parse_rotation(detail):
            r.setdefault("rot_old", rot[0])
            r.setdefault("rot_new", rot[1])
        elif edit := _edit(c, names):
            svc, pat, key, old, new = edit
            if svc == "node":
                r.setdefault(f"sysnode:{pat}", detail.partition(": ")[0])
            if pat != key:
                r.setdefault(f"key:{svc}:{pat}", key)
                r.setdefault(f"keypod:{svc}:{pat}", next(n for n in sorted(names) if n in key))
            r.setdefault(f"old:{svc}:{pat}", old)
            r.setdefault(f"new:{svc}:{pat}", new)
    for p in pods:
        r.setdefault(f"ver:{p.get('service')}", p.get("version", ""))
    for i, p in enumerate(pods):
        nth = sum(q.get("service") == p.get("service") for q in pods[:i])
        r[f"pod:{p.get('service')}:{nth}"], r[f"node:{p.get('service')}:{nth}"] = p["name"], p.get("node", "")
    return {k: v for k, v in r.items() if v not in ("", "''")}


def cues(status: Rows, changes: Rows) -> frozenset[str]:
    """Seed-free facts of the two reads, for the naive Bayes ranking."""
    out: set[str] = set()
    names = {p.get("name", "") for p in status if isinstance(p, dict)} - {""}
    for i, c in enumerate(reversed(changes)):
        svc, kind, detail = c.get("service", ""), c.get("kind", ""), c.get("detail", "")
        fact = (f"deploy:{svc}" if kind == "deploy" else "rotation" if parse_rotation(detail)
                else f"{kind}:{svc}:{detail.split(' ')[0]}")
        if kind != "deploy" and (edit := _edit(c, names)):
            old, new = edit[3], edit[4]
            try:
                way = "up" if float(new) > float(old) else "down" if float(new) < float(old) else "same"
            except ValueError:
                way = "emptied" if new in ("", "''") else new.lower() if new in ("True", "False") else "set"
            fact = f"{kind}:{edit[0]}:{edit[1]}:{way}"
        out |= {fact, f"newest {fact}"} if i == 0 else {fact}
    for p in status:
        if isinstance(p, dict) and (p.get("state") != "Running" or p.get("restarts")):
            out.add(f"pod:{p.get('service')}:{p.get('role') or ''}:{p.get('state')}:{bool(p.get('restarts'))}")
    return frozenset(out)


def _same(value: Any, text: str) -> bool:
    try:
        return str(value) == text or float(value) == float(text)
    except (TypeError, ValueError):
        return False


def abstract_fix(plan: list[Action], r: dict[str, str]) -> Fix:
    def arg(name: str, v: Any) -> tuple[Any, ...]:
        scalar = name != "service" and isinstance(v, str | int | float) and not isinstance(v, bool)
        role = next((k for k, text in r.items() if _same(v, text)), None) if scalar else None
        return ("role", role, type(v).__name__) if role else ("lit", v)

    return tuple((a["tool"], tuple(sorted((k, arg(k, v)) for k, v in a["args"].items())))
                 for a in plan if a["tool"] in WRITES)


def fill_fix(fix: Fix, r: dict[str, str]) -> list[Action] | None:
    """The concrete writes, or None when a role does not fill in (the entry does not apply)."""
    cast = {"int": lambda t: int(float(t)), "float": float, "str": str}
    try:
        return [{"tool": tool, "args": {k: a[1] if a[0] == "lit" else cast[a[2]](r[a[1]]) for k, a in args}}
                for tool, args in fix]
    except (KeyError, ValueError):
        return None


def template(text: str, r: dict[str, str]) -> str:
    """Values in a claim -> ``<<role>>``. A config value counts only where its key is named
    (``db_timeout_ms=5``) or when it looks like a name (``cache-auth-v3``): bare numbers are everywhere."""
    found: dict[str, str] = {}
    for role, value in r.items():
        words = [w for w in role.rsplit(":", 1)[-1].split(".") if w != "*"]
        named = re.search(r"[a-z]", value, re.I) is not None and re.search(r"[\d/:_-]", value) is not None
        if not role.startswith(("old:", "new:")) or named or (words and words[-1] in text):
            found.setdefault(value, role)
    alt = "|".join(re.escape(v) for v in sorted(found, key=len, reverse=True))
    return re.sub(rf"(?<![\w-])(?:{alt})(?![\w-]|\.\w)", lambda m: f"<<{found[m[0]]}>>", text) if alt else text


def fill(text: str, r: dict[str, str]) -> str:
    return re.sub(r"<<([^<>]+)>>", lambda m: r.get(m[1], ""), text)  # a role that does not fill in: empty


@dataclass
class Entry:
    n: int = 0
    claims: Counter[Claims] = field(default_factory=Counter)
    cues: Counter[str] = field(default_factory=Counter)
    tasks: Counter[str] = field(default_factory=Counter)  # for the report only; play never reads it


def _learn(job: tuple[str, list[int]]) -> list[Sample]:
    task, seeds = job
    out = []
    for seed in seeds:
        env = srezero.make(task, seed=seed)
        env.reset(seed=seed)
        plan, truth = env.oracle_plan(), env.ground_truth()
        status, changes = (env.step(call(t))[0].data or [] for t in ("get_status", "get_changes"))
        r = roles(status, changes)
        claims = tuple((template(t["entity"], r), t["category"], template(t["detail"], r)) for t in truth)
        out.append((page_key(env.briefing.page), abstract_fix(plan, r), claims, cues(status, changes), task))
    return out


def build(samples: list[Sample]) -> dict[str, dict[Fix, Entry]]:
    """Page key -> abstract fix -> Entry. A literal (not a service or key) that varies between one task's
    seeds (a pid, a replica count) folds into the first one seen rather than split the task into
    one-episode entries: learning may know the task, play may not."""
    table: dict[str, dict[Fix, Entry]] = defaultdict(dict)
    first: dict[tuple[str, Any], Fix] = {}
    for key, fix, claims, facts, task in samples:
        shape = tuple((tool, tuple((k, a if a[0] == "role" or k in ("service", "key") else ("lit",)) for k, a in args))
                      for tool, args in fix)
        fix = first.setdefault((task, shape), fix)
        for e in (table[key].setdefault(fix, Entry()), table[POOLED].setdefault(fix, Entry())):
            e.n += 1
            e.claims[claims] += 1
            e.cues.update(facts)
            e.tasks[task] += 1
    return dict(table)


def ranked(cands: dict[Fix, Entry], x: frozenset[str], select: str) -> list[tuple[Fix, Entry]]:
    """``count``: the training count. ``nb``: the count times, for each cue the reads show, how much
    likelier the entry makes it than the page's entries pooled (naive Bayes on the cues present only,
    each entry's rate shrunk toward the pooled one: otherwise absent cues, or one-episode entries with a
    rare decoy, outvote the one change that matters)."""
    n_all = sum(e.n for e in cands.values())
    pooled: Counter[str] = sum((e.cues for e in cands.values()), Counter())

    def nb(e: Entry) -> float:
        return math.log(e.n) + sum(math.log((e.cues[f] + SHRINK * pooled[f] / n_all) / (e.n + SHRINK)
                                            / (pooled[f] / n_all)) for f in sorted(x) if f in pooled)

    score = (lambda e: e.n) if select == "count" else nb
    return sorted(cands.items(), key=lambda kv: (-score(kv[1]), repr(kv[0])))


class Memoriser(Scripted):
    """Reads the page, get_status and get_changes (nothing else), then plays the best entry that fits."""

    def __init__(self, table: dict[str, dict[Fix, Entry]], select: str = "nb") -> None:
        self.table, self.select = table, select
        self.hit, self.picked = False, Entry()

    def script(self) -> Iterator[Action]:
        yield call("get_status")
        status = self.last.data if isinstance(self.last.data, list) else []
        yield call("get_changes")
        changes = self.last.data if isinstance(self.last.data, list) else []
        yield from self.play(roles(status, changes), cues(status, changes))

    def play(self, r: dict[str, str], x: frozenset[str]) -> Iterator[Action]:
        key = page_key(self.page)
        self.hit = key in self.table
        writes: list[Action] = []
        claims: Claims = ()
        for fix, entry in ranked(self.table.get(key) or self.table[POOLED], x, self.select):
            if (filled := fill_fix(fix, r)) is not None:
                writes, self.picked = filled, entry
                claims = min(entry.claims.items(), key=lambda kv: (-kv[1], repr(kv[0])))[0]
                break
        yield call("submit_diagnosis", summary="memorised",
                    root_causes=[{"entity": fill(e, r), "category": c, "detail": fill(d, r)} for e, c, d in claims])
        yield from writes


class Ceiling(Memoriser):
    """Privileged: the true claims and the oracle's writes after the same two reads."""

    wants_ground_truth = True

    def __init__(self) -> None:
        super().__init__({})

    def bind_oracle(self, plan: list[Action]) -> None:
        self.oracle = plan

    def play(self, r: dict[str, str], x: frozenset[str]) -> Iterator[Action]:
        yield from (a for a in self.oracle if a["tool"] == "submit_diagnosis" or a["tool"] in WRITES)


def _play(job: tuple[str, list[int], dict[str, dict[Fix, Entry]]]) -> list[tuple[str, str, float, bool, bool, bool]]:
    """(agent, task, marks, success, page key known, entry learned from this task) per episode."""
    task, seeds, table = job
    rows = []
    for seed in seeds:
        for name in AGENTS:
            agent = {"memorise": lambda: Memoriser(table), "memorise_count": lambda: Memoriser(table, "count"),
                     "ceiling": Ceiling}.get(name, lambda: create("runbook"))()
            res = run_episode(srezero.make(task, seed=seed), agent, seed)["result"]
            rows.append((name, task, res["marks"], bool(res["success"]), getattr(agent, "hit", True),
                         task in getattr(agent, "picked", Entry()).tasks))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train", default="0-4", help="seeds to learn on: a seed or an inclusive range")
    ap.add_argument("--test", default="5-9", help="seeds to play: a seed or an inclusive range")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    train, test = seed_range(args.train), seed_range(args.test)
    tasks = [t.id for t in srezero.list_tasks()]
    with ProcessPoolExecutor(args.workers) as pool:
        table = build([row for rows in pool.map(_learn, [(t, train) for t in tasks]) for row in rows])
        played = [row for rows in pool.map(_play, [(t, test, table) for t in tasks]) for row in rows]
    mem = [r for r in played if r[0] == "memorise"]
    print(f"{len(tasks)} tasks; learned on seeds {args.train} ({len(tasks) * len(train)} episodes), "
          f"played on seeds {args.test} ({len(mem)} episodes per agent)")
    print(f"page keys learned: {len(table) - 1}; abstract fixes learned: {len(table[POOLED])}; "
          f"test episodes on a known page key: {sum(r[4] for r in mem)}/{len(mem)}")
    print(f"{'agent':<16} {'marks':>6} {'success':>8}  entry learned from the episode's task")
    for name in AGENTS:
        mine = [r for r in played if r[0] == name]
        right = f"{sum(r[5] for r in mine)}/{len(mine)}" if name.startswith("memorise") else ""
        print(f"{name:<16} {statistics.fmean(r[2] for r in mine):6.1f} "
              f"{100 * statistics.fmean(r[3] for r in mine):7.0f}%  {right}")
    for name in AGENTS[:2]:
        means = {t: statistics.fmean(r[2] for r in played if r[0] == name and r[1] == t) for t in tasks}
        paying = [f"{t} {m:.0f}" for t, m in means.items() if m >= 50.0]
        print(f"{name} >= 50 on {len(paying)} tasks: {', '.join(paying) or 'none'}")


if __name__ == "__main__":
    main()
