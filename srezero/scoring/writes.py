"""Judging each write when it is made: does it address a root cause, is it destructive, a distractor?

A write *addresses a root cause* when either

* it is one of the writes of a still-active fault's minimal fix (same tool and same arguments as in
  ``Fault.oracle_fix``, except ``value``), and a ``value`` it sets is safe: inside the config key's
  envelope (:mod:`srezero.faults.envelopes`) for ``set_config`` keys that have one, otherwise the
  fix's own value, or
* it neutralised a fault (active before the write, neutralised right after it) and it is aimed at
  that fault: its target is the fault's entity, an alias, or the fault's service or node, or the
  tool is one of the primitive's declared remedies, or
* it is one of the primitive's declared remedies, aimed at the fault, and the fault is neutralised
  within ``DEFER_S`` of it (its effect unfolds in simulated time: a volume resizes in a minute). Such
  a write is judged a wrong fix when made and credited when the fault heals, at a later step or in
  the verification window (:meth:`WriteJudge.settle`), unless another write healed it first.

Anything else is a *wrong fix*: on a control task every write is one. A write is *destructive* when
it appended to ``World.destroyed`` (the world records the consequence, not the intent). A wrong fix
aimed at something only noise or a distractor touched (``World.noise_entities``) is a *distractor
failure*.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from srezero.faults.envelopes import ENVELOPES
from srezero.scoring.naming import accepted_names, norm
from srezero.tools.registry import target_of

if TYPE_CHECKING:
    from srezero.faults.base import Fault, RootCause
    from srezero.sim.world import World

#: The reasons of a write judged to work on a fault, formatted with the fault's primitive name. The
#: play debrief reads the primitive back out of a record's reason (:func:`fault_of_reason`).
PART_OF_FIX = "part of the fix of {}"
#: How long after a declared remedy its effect may complete and still be its own (a resize, a rollout).
DEFER_S = 300.0
NEUTRALISED = "neutralised {}"


def fault_of_reason(reason: str) -> str | None:
    """The fault primitive a :data:`PART_OF_FIX` or :data:`NEUTRALISED` reason names, else None."""
    for template in (PART_OF_FIX, NEUTRALISED):
        prefix = template.format("")
        name = reason[len(prefix):]
        if reason.startswith(prefix) and name and not any(c.isspace() for c in name):
            return name
    return None


def write_key(tool: str, args: dict[str, Any]) -> tuple[Any, ...]:
    """What makes two writes "the same write": the tool and every argument but ``value``, after
    validation fills defaults (so ``failover()`` and ``failover(service="database")`` agree)."""
    from srezero.tools.registry import ToolError, load_tools

    spec = load_tools().get(tool)
    full = dict(args)
    if spec is not None:
        with contextlib.suppress(ToolError):
            full = spec.validate(args)
    return (tool, *sorted((k, repr(v)) for k, v in full.items() if k != "value"))


@dataclass
class Judgement:
    addresses_root_cause: bool
    destructive: list[str]
    distractor: bool
    reason: str
    awaits: tuple[int, ...] = ()  # faults (indices) this remedy may still heal once its effect completes


class WriteJudge:
    """Built once per episode from the faults' (privileged) knowledge; judges writes as they happen."""

    def __init__(self, w: World, faults: list[Fault], truth: list[RootCause]) -> None:
        self.faults = faults
        self.pending: list[tuple[Any, tuple[int, ...], float]] = []  # remedies whose effect is still unfolding
        self.fixes: list[dict[tuple[Any, ...], Any]] = []
        self.related: list[frozenset[str]] = []
        self.remedies: list[frozenset[str]] = []
        for f, rc in zip(faults, truth):
            plan = f.oracle_fix(w)
            self.fixes.append({write_key(a["tool"], a["args"]): a["args"].get("value") for a in plan})
            names = set(accepted_names(w, rc)) | {norm(f.target.name)}
            obj = f.target.obj
            for attr in ("service", "node"):
                sub = getattr(obj, attr, None)
                if sub is not None:
                    names.add(norm(getattr(sub, "kind", None) or sub.name))
            names |= {norm(a["args"].get("service") or "") for a in plan} - {""}
            self.related.append(frozenset(names))
            self.remedies.append(frozenset(r.tool for r in f.meta.remedies))

    def active(self, w: World) -> list[bool]:
        """Which faults are injected and not neutralised right now."""
        return [f.injected and not f.neutralised(w) for f in self.faults]

    def judge(self, w: World, tool: str, args: dict[str, Any], active_before: list[bool],
              destroyed_before: int) -> Judgement:
        active_after = self.active(w)
        destructive = list(w.destroyed[destroyed_before:])
        key = write_key(tool, args)
        target = norm(target_of(tool, args))
        reason = "addresses no root cause"
        ok = False
        for i, fix in enumerate(self.fixes):
            if not active_before[i]:
                continue
            if key in fix and self._value_ok(w, tool, args, fix[key]):
                ok, reason = True, PART_OF_FIX.format(self.faults[i].meta.name)
                break
            if key in fix:
                reason = f"right place, unsafe value for {self.faults[i].meta.name}"
            if not active_after[i] and (target in self.related[i] or tool in self.remedies[i]):
                ok, reason = True, NEUTRALISED.format(self.faults[i].meta.name)
                break
        distractor = not ok and bool(target) and target in {norm(x) for x in sorted(w.noise_entities)} \
            and not any(target in r for r in self.related)
        if ok:  # this write healed it: a remedy still unfolding did not
            healed = {i for i, (was, now) in enumerate(zip(active_before, active_after, strict=True)) if was and not now}
            self.pending = [p for p in self.pending if not healed & set(p[1])]
            return Judgement(ok, destructive, distractor, reason)
        awaits = tuple(i for i, (was, now) in enumerate(zip(active_before, active_after, strict=True))
                       if was and now and tool in self.remedies[i] and target in self.related[i])
        return Judgement(ok, destructive, distractor, reason, awaits)

    def await_effect(self, write: Any, awaits: tuple[int, ...], at: float) -> None:
        """Keep ``write`` (its ``addresses_root_cause`` and ``reason`` are set when it is credited) until one of
        ``awaits`` heals or ``DEFER_S`` passes."""
        self.pending.append((write, awaits, at + DEFER_S))

    def settle(self, w: World) -> None:
        """Credit each waiting remedy whose fault has healed since; forget those past ``DEFER_S``."""
        if not self.pending:
            return
        active = self.active(w)
        keep = []
        for write, awaits, deadline in self.pending:
            healed = next((i for i in awaits if not active[i]), None)
            if healed is not None:
                write.addresses_root_cause = True
                write.reason = NEUTRALISED.format(self.faults[healed].meta.name)
            elif w.now < deadline:
                keep.append((write, awaits, deadline))
        self.pending = keep

    @staticmethod
    def _value_ok(w: World, tool: str, args: dict[str, Any], fix_value: Any) -> bool:
        """A write with a ``value`` must set a safe one: inside the config key's envelope when it
        has one, otherwise the fix's own value (other safe values still count when they neutralise)."""
        if "value" not in args:
            return True
        if tool == "set_config":
            service, key = str(args.get("service")), str(args.get("key"))
            check = ENVELOPES.get((service, key))
            svc = w.services.get(service)
            value = svc.config.get(key) if svc is not None else args.get("value")
            if check is not None:
                try:
                    return bool(check(w, value))
                except (TypeError, ValueError):
                    return False
            return value == fix_value
        return args.get("value") == fix_value or str(args.get("value")) == str(fix_value)
