"""The discrete env's catalogue: every action ``srezero/IncidentDiscrete-v0`` offers, as tool calls.

A function of the tool declarations and the number of node slots only (no task, seed or fault goes in).
Entries name nodes and disks by slot, and values that no fixed list can hold by where they are read
(:mod:`srezero.adapters._seen`); :mod:`srezero.adapters.gym_discrete` binds both per episode. A new
tool gets entries in :func:`_entries` or a reason in :data:`EXCLUDED`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from srezero.adapters._seen import RANKS, Detailed, Seen
from srezero.sim import metrics
from srezero.sim.components import SERVICE_KINDS
from srezero.task.spec import TaskSpec, TopologySpec
from srezero.tools.consoles import SCHEMA
from srezero.tools.registry import load_tools
from srezero.tools.write import SCALABLE

#: The most nodes a seed picks when the task leaves ``[topology] nodes`` unset (srezero.sim.topology: 4-5).
SEEDED_MAX_NODES = 5
#: The most nodes any task may declare (``TopologySpec.nodes``): ``node_slots=MAX_NODES`` fits every task.
MAX_NODES = next(m.le for m in TopologySpec.model_fields["nodes"].metadata if hasattr(m, "le"))
#: Every node has a root and a data disk (srezero.sim.topology); slots bind to the devices get_topology lists.
DISKS_PER_NODE = 2
#: Metrics queried for every service, on top of that service's own extras (get_topology lists both).
KEY_SERVICE_METRICS = ("error_rate", "latency_p99_ms", "request_rate")
#: The log search every service gets: warnings and errors (a fixed pattern would be a guess at the answer).
LOG_LEVEL = "warn"
WAIT_SECONDS = (60, 300)
#: The longest look-back get_changes takes, beside its default (72 h): an edit made a week before the
#: page (a switched-off autovacuum whose bloat took days to bite) shows only here.
CHANGES_WINDOW_H = load_tools()["get_changes"].schema["properties"]["window_h"]["maximum"]
#: A new claim's detail. The real detail (the bad value, the release, how a disk fails) is read from
#: observations, so it is appended a piece per step afterwards (:class:`~srezero.adapters._seen.Detailed`).
DETAIL_PLACEHOLDER = ""
#: Phrases a claim's detail can be given, the same for every task: how things fail, in an incident
#: report's words (one or two per mechanism family of docs/scoring.md's lexicon, and which way a value
#: is wrong). The concrete part (a key and its value, a device, a release, a pid) comes from observations.
DETAIL_WORDS = (
    "too low", "too high", "memory leak", "out of memory", "crash loop", "sector errors", "disk full",
    "fail-slow disk", "ecc errors", "thermal throttling", "power failure", "packet loss", "link flapping",
    "conntrack table full", "file descriptors exhausted", "ephemeral ports exhausted", "clock skew",
    "certificate expired", "credential rotation", "connection pool exhausted", "retry storm",
    "cpu throttling", "queue backlog", "poison messages", "dead-letter queue full", "thundering herd",
    "hot key", "cache evictions", "lock contention", "missing index", "table bloat", "replication lag",
    "bad release", "unhandled exceptions",
)

#: Tools left out of the catalogue, and why: their arguments are values a fixed list cannot hold
#: without guessing and that no observation lists as a row to pick (a test checks every declared tool
#: is either here or in the catalogue).
EXCLUDED = {
    "expand_volume": "a size must exceed the disk's current size: any fixed size is a guess",
}


@dataclass(frozen=True)
class NodeSlot:
    """The ``index``-th node get_topology lists in this episode."""

    index: int

    def __str__(self) -> str:
        return f"<node {self.index}>"


@dataclass(frozen=True)
class DiskSlot:
    """The ``disk``-th device get_topology lists for node slot ``node``."""

    node: int
    disk: int

    def __str__(self) -> str:
        return f"<disk {self.disk} of node {self.node}>"


@dataclass(frozen=True)
class Entry:
    """One catalogue action: a tool and its arguments, some of them slots bound at each reset."""

    tool: str
    args: tuple[tuple[str, Any], ...] = ()

    @property
    def text(self) -> str:
        """The call with its slots unbound, e.g. ``drain_node(node=<node 2>)``: the same for every seed."""
        return call_text(self.tool, dict(self.args))


def call_text(tool: str, args: Mapping[str, Any]) -> str:
    """A call as the text a person would type (slots as ``<node 2>``); the core's parser reads a concrete
    call back to the same tool and arguments."""
    def literal(value: Any) -> str:
        if isinstance(value, NodeSlot | DiskSlot | Seen | Detailed):
            return str(value)
        if isinstance(value, list):
            return "[" + ", ".join(literal(v) for v in value) + "]"
        if isinstance(value, dict):
            return "{" + ", ".join(f"{json.dumps(k)}: {literal(v)}" for k, v in value.items()) + "}"
        return json.dumps(value, ensure_ascii=False)

    return f"{tool}({', '.join(f'{k}={literal(v)}' for k, v in args.items())})"


def _enum(tool: str, arg: str) -> tuple[Any, ...]:
    """An argument's declared choices (JSON schema ``enum``), in declaration order."""
    return tuple(load_tools()[tool].schema["properties"][arg]["enum"])


def _bounds(tool: str, arg: str) -> range:
    """Every integer an argument's declared ``minimum``..``maximum`` allows."""
    prop = load_tools()[tool].schema["properties"][arg]
    return range(prop["minimum"], prop["maximum"] + 1)


def _categories() -> tuple[str, ...]:
    """Claim categories from submit_diagnosis's schema, without ``none`` (the empty list says "no fault")."""
    claim = load_tools()["submit_diagnosis"].schema["$defs"]["Claim"]
    return tuple(c for c in claim["properties"]["category"]["enum"] if c != "none")


def _entries(node_slots: int) -> dict[str, list[dict[str, Any]]]:
    """Argument sets per tool. Services and metric names are the fixed shape every world has."""
    services, nodes = SERVICE_KINDS, [NodeSlot(k) for k in range(node_slots)]
    disks = [DiskSlot(k, d) for k in range(node_slots) for d in range(DISKS_PER_NODE)]
    node_of = {disk: NodeSlot(disk.node) for disk in disks}
    claims = [*services, *nodes]  # a service localises its keys and replicas, a node its disks (docs/scoring.md)
    pieces = [  # what can be appended to the detail of the last claim
        *DETAIL_WORDS, *disks,
        *(Seen(kind, r, field, s) for kind, field in (("edit", "setting"), ("stale", "value"), ("release", "version"))
          for s in services for r in range(RANKS[kind])),
        *(Seen(kind, r, field, n) for kind, field in (("sysctl", "setting"), ("process", "name"))
          for n in nodes for r in range(RANKS[kind])),
        *(Seen(kind, r, field) for kind, field in (("blocker", "pid"), ("slot", "name"), ("message", "id"),
                                                   ("slow_query", "lookup")) for r in range(RANKS[kind]))]
    return {
        "get_alerts": [{}],
        "get_topology": [{}],
        "get_status": [{}, *({"service": s} for s in services)],
        "query_metrics": [*({"target": s, "metric": m} for s in services
                            for m in (*KEY_SERVICE_METRICS, *metrics.SERVICE_EXTRA.get(s, ()))),
                          *({"target": n, "metric": m} for n in nodes for m in metrics.NODE_METRICS)],
        "search_logs": [{"service": s, "level": LOG_LEVEL} for s in services],
        "get_traces": [{}, {"errors_only": True}, *({"service": s, "errors_only": True} for s in services)],
        "get_events": [{}, *({"entity": e} for e in (*services, *nodes))],
        "get_config": [{"service": s} for s in services],
        "get_changes": [{}, *({"service": s} for s in services),
                        {"window_h": CHANGES_WINDOW_H}, *({"service": s, "window_h": CHANGES_WINDOW_H} for s in services)],
        "node_diagnostics": [{"node": n, "check": c} for n in nodes for c in _enum("node_diagnostics", "check")],
        "wait": [{"seconds": s} for s in WAIT_SECONDS],
        "inspect_database": [{"view": v} for v in _enum("inspect_database", "view")],
        "inspect_cache": [{"section": v} for v in _enum("inspect_cache", "section")],
        "inspect_queue": [{"view": v} for v in _enum("inspect_queue", "view")],
        "restart": [{"target": s} for s in services],
        "rollback": [{"service": s} for s in services],
        "scale": [{"service": s, "replicas": k} for s in SCALABLE for k in _bounds("scale", "replicas")],
        "set_config": [*({"service": s, "key": Seen("edit", r, "key", s), "value": Seen("edit", r, "old", s)}
                         for s in services for r in range(RANKS["edit"])),
                       *({"service": s, "key": Seen("stale", r, "key", s), "value": Seen("stale", r, "value", s)}
                         for s in services for r in range(RANKS["stale"]))],
        "failover": [{}],
        "drain_node": [{"node": n} for n in nodes],
        "cordon_node": [*({"node": n} for n in nodes), *({"node": n, "uncordon": True} for n in nodes)],
        "sync_clock": [{"node": n} for n in nodes],
        "cleanup_disk": [{"node": node_of[d], "device": d} for d in disks],
        "set_sysctl": [{"node": n, "key": Seen("sysctl", r, "key", n), "value": Seen("sysctl", r, "old", n)}
                       for n in nodes for r in range(RANKS["sysctl"])],
        "kill_process": [{"node": n, "process": Seen("process", r, "name", n)} for n in nodes
                         for r in range(RANKS["process"])],
        "terminate_session": [{"pid": Seen("blocker", r, "pid")} for r in range(RANKS["blocker"])],
        "drop_replication_slot": [{"slot": Seen("slot", r, "name")} for r in range(RANKS["slot"])],
        "dead_letter_message": [{"message_id": Seen("message", r, "id")} for r in range(RANKS["message"])],
        "create_index": [{"table": Seen("slow_query", r, "table"), "column": Seen("slow_query", r, "column")}
                         for r in range(RANKS["slow_query"])],
        "vacuum": [{}, *({"table": t} for t in SCHEMA)],
        "renew_certificate": [{}],
        "purge_queue": [{"queue": q} for q in _enum("purge_queue", "queue")],
        "submit_diagnosis": [{"root_causes": []}, *(
            {"root_causes": [{"entity": e, "category": c, "detail": DETAIL_PLACEHOLDER}]}
            for e in claims for c in _categories()), *(
            {"root_causes": [Seen("claim", 0, "claim"), {"entity": e, "category": c, "detail": DETAIL_PLACEHOLDER}]}
            for e in claims for c in _categories()),
            *({"root_causes": Detailed(piece)} for piece in pieces)],
        "resolve": [{}],
    }


def build_catalogue(node_slots: int) -> tuple[Entry, ...]:
    """The catalogue for a system with ``node_slots`` node slots: a function of that number and the tool
    declarations only (no task, seed or fault goes in), in the registry's tool order."""
    per_tool = _entries(node_slots)
    tools = load_tools()
    unknown = sorted(set(per_tool) - set(tools))
    if unknown:  # a renamed tool must fail here, not as invalid actions during training
        raise RuntimeError(f"the discrete catalogue names undeclared tools: {', '.join(unknown)}")
    return tuple(Entry(name, tuple(args.items())) for name in tools for args in per_tool.get(name, ()))


def max_nodes(spec: TaskSpec) -> int:
    """The most nodes any seed of ``spec`` builds: its fixed ``[topology] nodes``, else the seeded maximum."""
    return spec.topology.nodes or SEEDED_MAX_NODES
