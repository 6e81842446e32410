"""What a discrete agent has been shown: the rows of its own observations, for observation-grounded actions.

Some fixes need a value no fixed catalogue can hold: the old value of a config edit, a blocking pid, a
replication slot, a message id, a host process. The discrete env reaches them the way a person does,
by reading them off an observation the agent was shown. A :class:`Seen` names one such value by where
it was read ("the old value of the newest web_server edit in the last change history that listed
web_server"), and :class:`Memory` keeps the rows of the latest observation of each kind.

A claim's detail is built the same way: :class:`Detailed` resubmits the agent's own last claims with
one piece appended to the last claim's detail (a fixed phrase, a device, or a seen value such as an
edit's ``key=new`` or a deployed release).

Nothing else goes in: the memory is filled only from the text and data of the agent's own steps, so a
value the agent has not been shown cannot be bound, and these actions carry no ground truth.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from srezero.sim.changes import EMPTY, parse_edit, parse_rotation
from srezero.sim.components import SERVICE_KINDS

#: How many rows of each listing the catalogue reaches, and what one row holds. Edits are ranked newest
#: first (the history lists them oldest first); every other listing in the order it is printed.
RANKS = {"edit": 4, "sysctl": 2, "process": 6, "blocker": 2, "slot": 3, "message": 5, "slow_query": 2,
         "stale": 2, "release": 2, "claim": 1}

#: A sysctl edit in the history is the node's name, then an edit.
_SYSCTL = re.compile(r"^(?P<node>[^\s:]+): (?P<edit>.*)$")
#: A ``top`` row: ``name (qualifier)  CPU%  MEM MB  STATE``; pods print as ``service (replica)``.
_TOP_ROW = re.compile(r"^(?P<name>\S+) \([^)]*\)\s+[\d.]+\s+\d+\s")
_BLOCKER = re.compile(r"^blocking pid (\d+)", re.M)
#: A slow-query log line's lookup: ``duration: 3102.8 ms  statement: SELECT ... FROM orders WHERE customer_id = $1``.
_SLOW_LOOKUP = re.compile(r"duration: [\d.]+ ms\s+statement: SELECT .*? FROM (\w+) WHERE (\w+) = ")
#: A deploy in the history: ``deployed v1.20.5: upgrade HTTP client``.
_DEPLOY = re.compile(r"^deployed (\S+):")


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


@dataclass(frozen=True)
class Detailed:
    """The claims of the agent's own last accepted ``submit_diagnosis`` with ``piece`` appended to the
    detail of the last one: a phrase from a fixed list, a disk slot's device, or a :class:`Seen` value.
    A detail is built up a piece per step, from what the agent was shown."""

    piece: Any

    def __str__(self) -> str:
        piece = f'"{self.piece}"' if isinstance(self.piece, str) else str(self.piece)
        return f"<last claims, detail + {piece}>"


def with_detail(claims: Sequence[Mapping[str, Any]], piece: Any) -> list[dict[str, Any]]:
    """Copies of ``claims`` with ``piece`` (as text) appended to the last claim's detail."""
    out = [dict(c) for c in claims]
    last = out[-1]
    last["detail"] = f"{last.get('detail') or ''} {piece}".strip()
    return out


def literal(text: str) -> Any:
    """A value as the history prints it, back to what an agent would type: ``''`` is empty, ``True``
    and numbers are typed, anything else (a path, a URL, a port range) stays text."""
    if text == EMPTY:
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
    return {"key": parsed[0], "old": literal(parsed[1]), "setting": f"{parsed[0]}={parsed[2]}"} if parsed else None


class Memory:
    """The latest listing of each kind the agent read, keyed by ``(kind, scope name)``.

    Two kinds join or keep more than one observation shows at once:

    * ``stale``: a service's keys whose value, in its latest ``get_config``, is one the latest full
      ``get_changes`` shows was replaced elsewhere (a rotated secret, a synced setting), with the value
      that replaced it (followed to the newest). Text values only: a number two settings share is a
      coincidence, a version string is not.
    * ``claim``: the root causes of the agent's own last accepted ``submit_diagnosis``, so a second
      claim can be added to the first.
    """

    def __init__(self) -> None:
        self.rows: dict[tuple[str, str | None], list[dict[str, Any]]] = {}
        self.configs: dict[str, Mapping[str, Any]] = {}  # service -> its latest get_config data
        self.replaced: dict[str, str] = {}  # text value -> the value that replaced it, newest replacement first

    def clear(self) -> None:
        self.rows.clear()
        self.configs.clear()
        self.replaced.clear()

    def value(self, seen: Seen, scope_name: str | None) -> Any:
        """The value ``seen`` names, or ``None`` when the agent has not been shown that row."""
        rows = self.rows.get((seen.kind, scope_name), ())
        return rows[seen.rank][seen.field] if seen.rank < len(rows) else None

    def claims(self) -> list[dict[str, Any]]:
        """The claims of the agent's last accepted ``submit_diagnosis`` (empty before one, or for "no fault")."""
        return [row["claim"] for row in self.rows.get(("claim", None), ())]

    def observe(self, tool: str, args: Mapping[str, Any], text: str, data: Any) -> set[str]:
        """Keep the listings one successful step showed; returns the kinds whose listing changed."""
        found = _read(tool, args, text, data)
        if tool == "get_changes" and not args.get("service"):  # the full history shows who has no sysctl edits
            found.update({key: [] for key in self.rows if key[0] == "sysctl" and key not in found})
            self.replaced = _replacements(data)
            found.update({("stale", s): self._stale(s) for s in self.configs})
        elif tool == "get_config" and isinstance(data, Mapping) and args.get("service") in SERVICE_KINDS:
            self.configs[args["service"]] = data
            found["stale", args["service"]] = self._stale(args["service"])
        elif tool == "submit_diagnosis":
            found["claim", None] = [{"claim": dict(c)} for c in args.get("root_causes", ())]
        changed = {key[0] for key, rows in found.items() if self.rows.get(key, []) != rows}
        self.rows.update(found)
        return changed

    def _stale(self, service: str) -> list[dict[str, Any]]:
        """``service``'s keys that still hold a replaced value, the newest replacement first."""
        order = {old: i for i, old in enumerate(self.replaced)}
        rows = [(order[v], key, self.replaced[v]) for key, v in self.configs[service].items()
                if isinstance(v, str) and v in order]
        return [{"key": key, "value": new} for _, key, new in sorted(rows, key=lambda row: row[0])]


def _replacements(history: Any) -> dict[str, str]:
    """Each text value the history shows replaced (an edit's or a rotation's old value) -> the value that
    replaced it last, followed along later replacements; the newest replacement first."""
    pairs: dict[str, str] = {}
    for change in reversed(history if isinstance(history, Sequence) else ()):
        detail = str(change.get("detail", "")) if change.get("kind") == "config" else ""
        pair = (edit[1:] if (edit := parse_edit(detail)) else None) or parse_rotation(detail)
        if pair and all(isinstance(literal(v), str) and v != EMPTY for v in pair) and pair[0] not in pairs:
            pairs[pair[0]] = pair[1]
    newest = {}
    for old, new in pairs.items():  # v7 -> v8 and v8 -> v9: v7's successor is v9
        seen = {old}
        while new in pairs and new not in seen:
            seen.add(new)
            new = pairs[new]
        if new != old:  # not a value changed and changed back
            newest[old] = new
    return newest


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
    return [{"table": table, "column": column, "lookup": f"{table}.{column}"} for table, column in ranked]


def _after(header: str, text: str) -> list[str]:
    """The non-empty rows under a table's header line."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(header)), len(lines))
    return [line for line in lines[start + 1:] if line.strip()]


def _changes(service: str, history: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str | None], list[dict]]:
    """Config edits and deployed releases per service and sysctl edits per node, newest first. A
    history of one service lists only that service; the full history lists every service and every
    node's sysctl edits."""
    services = [service] if service else SERVICE_KINDS
    found: dict[tuple[str, str | None], list[dict]] = {(kind, s): [] for kind in ("edit", "release") for s in services}
    for change in reversed(history):
        detail, kind = str(change.get("detail", "")), change.get("kind")
        if kind == "config" and ("edit", change.get("service")) in found and (row := _edit(detail)):
            found["edit", change["service"]].append(row)
        elif kind == "deploy" and ("release", change.get("service")) in found and (deploy := _DEPLOY.match(detail)):
            found["release", change["service"]].append({"version": deploy[1]})
        elif kind == "sysctl" and not service and (node := _SYSCTL.match(detail)) and (row := _edit(node["edit"])):
            found.setdefault(("sysctl", node["node"]), []).append(row)
    return found
