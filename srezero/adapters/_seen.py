"""What a discrete agent has been shown: the rows of its own observations, for observation-grounded actions.

Some fixes need a value no fixed catalogue can hold: the old value of a config edit, a blocking pid, a
replication slot, a message id, a host process. The discrete env reaches them the way a person does,
by reading them off an observation the agent was shown. A :class:`Seen` names one such value by where
it was read ("the old value of the newest web_server edit in the last change history that listed
web_server"), and :class:`Memory` keeps the rows of the latest observation of each kind.

Nothing else goes in: the memory is filled only from the text and data of the agent's own steps, so a
value the agent has not been shown cannot be bound, and these actions carry no ground truth.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from srezero.sim.changes import parse_edit
from srezero.sim.components import SERVICE_KINDS

#: How many rows of each listing the catalogue reaches, and what one row holds. Edits are ranked newest
#: first (the history lists them oldest first); every other listing in the order it is printed.
RANKS = {"edit": 4, "sysctl": 2, "process": 6, "blocker": 2, "slot": 3, "message": 5, "slow_query": 2}

#: A sysctl edit in the history is the node's name, then an edit.
_SYSCTL = re.compile(r"^(?P<node>[^\s:]+): (?P<edit>.*)$")
#: A ``top`` row: ``name (qualifier)  CPU%  MEM MB  STATE``; pods print as ``service (replica)``.
_TOP_ROW = re.compile(r"^(?P<name>\S+) \([^)]*\)\s+[\d.]+\s+\d+\s")
_BLOCKER = re.compile(r"^blocking pid (\d+)", re.M)
#: A slow-query log line's lookup: ``duration: 3102.8 ms  statement: SELECT ... FROM orders WHERE customer_id = $1``.
_SLOW_LOOKUP = re.compile(r"duration: [\d.]+ ms\s+statement: SELECT .*? FROM (\w+) WHERE (\w+) = ")


@dataclass(frozen=True)
class Seen:
    """The ``field`` of row ``rank`` of the latest ``kind`` listing the agent was shown for ``scope``
    (a service, a node slot, or ``None`` for a listing of its own, such as the database's locks)."""

    kind: str
    rank: int
    field: str
    scope: Any = None

    def __str__(self) -> str:
        of = f" of {str(self.scope).strip('<>')}" if self.scope is not None else ""
        return f"<seen {self.kind} {self.rank}{of}: {self.field}>"


def literal(text: str) -> Any:
    """A value as the history prints it, back to what an agent would type: ``''`` is empty, ``True``
    and numbers are typed, anything else (a path, a URL, a port range) stays text."""
    if text == "''":
        return ""
    if text in ("True", "False"):
        return text == "True"
    for parse in (int, float):
        try:
            return parse(text)
        except ValueError:
            pass
    return text


def _edit(detail: str) -> dict[str, Any] | None:
    parsed = parse_edit(detail)
    return {"key": parsed[0], "old": literal(parsed[1])} if parsed else None


class Memory:
    """The latest listing of each kind the agent read, keyed by ``(kind, scope name)``."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, str | None], list[dict[str, Any]]] = {}

    def clear(self) -> None:
        self.rows.clear()

    def value(self, seen: Seen, scope_name: str | None) -> Any:
        """The value ``seen`` names, or ``None`` when the agent has not been shown that row."""
        rows = self.rows.get((seen.kind, scope_name), ())
        return rows[seen.rank][seen.field] if seen.rank < len(rows) else None

    def observe(self, tool: str, args: Mapping[str, Any], text: str, data: Any) -> set[str]:
        """Keep the listings one successful step showed; returns the kinds whose listing changed."""
        found = _read(tool, args, text, data)
        if tool == "get_changes" and not args.get("service"):  # the full history shows who has no sysctl edits
            found.update({key: [] for key in self.rows if key[0] == "sysctl" and key not in found})
        changed = {key[0] for key, rows in found.items() if self.rows.get(key, []) != rows}
        self.rows.update(found)
        return changed


def _read(tool: str, args: Mapping[str, Any], text: str, data: Any) -> dict[tuple[str, str | None], list[dict]]:
    """The listings in one observation: what it shows and, as importantly, what it shows to be empty.
    Any other read falls through a few string comparisons (the text is only split for a listing)."""
    if tool == "get_changes" and isinstance(data, Sequence):
        return _changes(args.get("service") or "", data)
    if tool == "node_diagnostics" and args.get("check") == "top":
        rows = [m["name"] for line in text.splitlines() if (m := _TOP_ROW.match(line))]
        return {("process", args["node"]): [{"name": n} for n in rows if n not in SERVICE_KINDS]}
    if tool == "search_logs" and args.get("service") == "database":
        return {("slow_query", None): _slow_lookups(text)}
    view = args.get("view")
    if tool == "inspect_database" and view == "locks":
        return {("blocker", None): [{"pid": int(pid)} for pid in _BLOCKER.findall(text)]}
    if tool == "inspect_database" and view == "replication":
        return {("slot", None): [{"name": line.split()[0]} for line in _after("SLOT ", text)]}
    if tool == "inspect_queue" and view == "messages":
        return {("message", None): [{"id": line.split()[0]} for line in _after("MESSAGE ", text)]}
    return {}


def _slow_lookups(text: str) -> list[dict[str, str]]:
    """The distinct lookups slow-query lines show, the most frequent first (ties: the first listed)."""
    counts: dict[tuple[str, str], int] = {}
    for line in text.splitlines():
        if match := _SLOW_LOOKUP.search(line):
            counts[match[1], match[2]] = counts.get((match[1], match[2]), 0) + 1
    ranked = sorted(counts, key=lambda lookup: -counts[lookup])  # stable: first listed wins a tie
    return [{"table": table, "column": column} for table, column in ranked]


def _after(header: str, text: str) -> list[str]:
    """The non-empty rows under a table's header line."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(header)), len(lines))
    return [line for line in lines[start + 1:] if line.strip()]


def _changes(service: str, history: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str | None], list[dict]]:
    """Config edits per service and sysctl edits per node, newest first. A history of one service
    lists only that service; the full history lists every service and every node's sysctl edits."""
    found: dict[tuple[str, str | None], list[dict]] = {("edit", s): [] for s in ([service] if service else SERVICE_KINDS)}
    for change in reversed(history):
        detail, kind = str(change.get("detail", "")), change.get("kind")
        if kind == "config" and ("edit", change.get("service")) in found and (row := _edit(detail)):
            found["edit", change["service"]].append(row)
        elif kind == "sysctl" and not service and (node := _SYSCTL.match(detail)) and (row := _edit(node["edit"])):
            found.setdefault(("sysctl", node["node"]), []).append(row)
    return found
