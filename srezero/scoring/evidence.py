"""Evidence coverage: which of the task's declared signals the agent's reads actually surfaced.

A signal is (tool, entity, required args, pattern), declared by the fault primitive
(``Fault.signals``). It is surfaced when the agent calls that tool on that entity (or one of its
replicas or the node's replicas; ``*`` means any target; the entity of a call is the argument the
tool declares with ``@tool(..., target_arg=...)``), with those arguments, and the observation
text the agent received matches the pattern. Looking in the right place at the wrong time (before
the symptom exists, or with a search pattern that filters it out) does not count. Coverage is the
share of signals surfaced; a control task (no fault) uses a few generic health reads.

Only what the world returned is matched (``ToolOutput.returned``): a tool declares how many opening
lines of its text restate the call (``ToolOutput.echo_lines``: "no log lines matching '<pattern>' in
worker ...", "error_rate of web_server over the last 15 min ...", "dmesg on node-x:"). Those lines
quote the agent's own arguments back, and an argument is not evidence: a search pattern that matches
nothing but spells every signal phrase surfaces nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from srezero.tools.registry import target_of

if TYPE_CHECKING:
    from srezero.faults.base import Fault
    from srezero.sim.world import World


@dataclass
class EvidenceTracker:
    signals: list[tuple[str, str, dict[str, Any], str]]
    children: dict[str, set[str]]  # entity -> names that count as that entity (its replicas)
    #: signal -> other reads that show the same fact (``Signal.alt``): any of them surfaces the signal
    alternatives: dict[int, list[tuple[str, str, dict[str, Any], str]]] = field(default_factory=dict)
    found: list[bool] = field(default_factory=list)
    found_at_step: dict[int, int] = field(default_factory=dict)
    #: signal -> first step whose read by the signal's tool showed its pattern (any entity or arguments): not
    #: coverage, but enough to say the agent saw the cause (diagnosis grounding)
    glimpsed_at_step: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.found = [False] * len(self.signals)
        # every read that can surface a signal, as (signal index, tool, entity, args, compiled pattern)
        reads = [(i, sig) for i, sig in enumerate(self.signals)]
        reads += [(i, alt) for i, alts in sorted(self.alternatives.items()) for alt in alts]
        self._reads = [(i, tool, ent, args, re.compile(p, re.IGNORECASE) if p else None)
                       for i, (tool, ent, args, p) in reads]

    def observe(self, step: int, tool: str, args: dict[str, Any], returned: str,
                line_entities: tuple[str, ...] | None = None) -> list[int]:
        """Mark the signals this read surfaced (``returned``: what the world returned, ``ToolOutput.returned``;
        ``line_entities``: the entity of each of its lines, for listings that mix entities); returns their
        indices."""
        new = []
        called_on = target_of(tool, args)
        text = returned
        for i, stool, ent, sargs, rx in self._reads:
            if self.found[i] or stool != tool:
                continue
            aimed = all(args.get(k) == v for k, v in sargs.items())
            here = aimed and (ent == "*" or called_on == ent or called_on in self.children.get(ent, ()))
            own = None if here or not aimed or line_entities is None else self._lines_of(ent, text, line_entities)
            if not here and own is None and (rx is None or i in self.glimpsed_at_step):
                continue  # nothing this read could add for the signal
            if rx is not None:
                if rx.search(text) is None:
                    continue
                self.glimpsed_at_step.setdefault(i, step)
            if not here and (own is None or (rx is not None and rx.search(own) is None)):
                continue  # (own, when there is one, is never empty)
            self.found[i] = True
            self.found_at_step[i] = step
            new.append(i)
        return new

    def _lines_of(self, ent: str, text: str, line_entities: tuple[str, ...]) -> str | None:
        """The lines of a mixed listing that are about ``ent`` or one of its replicas (None when none are)."""
        mine = self.children.get(ent, ())
        lines = [line for line, e in zip(text.split("\n"), line_entities, strict=False) if e == ent or e in mine]
        return "\n".join(lines) if lines else None

    @property
    def coverage(self) -> float:
        return sum(self.found) / len(self.found) if self.found else 1.0

    def seen_before(self, step: int) -> list[int]:
        """The signals surfaced or glimpsed by reads before ``step``: each by its first sighting, so a read
        after ``step`` cannot move it later (a signal's glimpse is never after its find)."""
        at = {**self.found_at_step, **self.glimpsed_at_step}
        return [i for i, s in at.items() if s < step]

    def report(self) -> dict[str, Any]:
        def desc(i: int) -> str:
            tool, ent, args, pat = self.signals[i]
            a = ", ".join(f"{k}={v!r}" for k, v in args.items())
            return f"{tool}({ent}{', ' + a if a else ''})" + (f" showing /{pat}/" if pat else "")

        return {"coverage": round(self.coverage, 6),
                "found": [desc(i) for i, f in enumerate(self.found) if f],
                "missed": [desc(i) for i, f in enumerate(self.found) if not f],
                "found_at_step": [self.found_at_step[i] for i, f in enumerate(self.found) if f]}


def alternatives_of(w: World, faults: list[Fault], signals: list[list[tuple[str, str, dict[str, Any], str]]]
                    ) -> dict[int, list[tuple[str, str, dict[str, Any], str]]]:
    """Each fault's ``Signal.alt`` reads, keyed by the index of their signal among all the faults'
    ``signals`` (each fault's, as resolved, in order: as the episode lists them)."""
    out: dict[int, list[tuple[str, str, dict[str, Any], str]]] = {}
    offset = 0
    for f, mine in zip(faults, signals, strict=True):
        for primary, alt in f.signal_alternatives(w, mine):
            if primary in mine:  # a fault that rewrites its signals may have dropped this one
                out.setdefault(offset + mine.index(primary), []).append(alt)
        offset += len(mine)
    return out
