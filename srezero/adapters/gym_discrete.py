"""Gymnasium front end with a finite action space: ``srezero/IncidentDiscrete-v0``.

Importing this module registers the environment (and ``srezero/Incident-v0``)::

    import gymnasium as gym
    env = gym.make("srezero.adapters.gym_discrete:srezero/IncidentDiscrete-v0", task="inc-002", seed=3)
    obs, info = env.reset()
    print(env.get_wrapper_attr("action_text")(0))      # get_alerts()
    obs, reward, terminated, truncated, info = env.step(0)

:class:`DiscreteActions` wraps :class:`~srezero.adapters.gym.IncidentEnv` (the text env) and maps
``Discrete(N)`` indices onto a fixed catalogue of concrete tool calls, so PPO/DQN code that needs a
finite action space can play srezero. Everything else (observations, rewards, ends, seeding,
``info``) is the text env's, so index ``i`` and the text call ``action_text(i)`` are the same step.

The catalogue is built from public information only: the tool declarations (names, argument enums,
bounds) and the system's visible shape (the six services, N node slots, the disks of each node),
never from a task's faults. Its entries name nodes by *slot*: slot ``k`` is the ``k``-th node that
``get_topology`` lists. Names vary with the seed, so each reset binds slots to the names the
``get_topology`` tool itself returns (read without charging a step; it is what any agent may read
at the cost of one call). Two tasks with the same topology size therefore have the same catalogue,
whatever their faults, and one seed's catalogue differs from another's only by those names.

Fixes that need a value no fixed list can hold (a config edit's old value, a blocking pid, a slot, a
message id, a host process) are entries that name *where* the value is read: "revert the newest
web_server edit the last change history showed". Each step binds them from the agent's own
observations (:mod:`srezero.adapters._seen`), so they too carry nothing the agent was not shown.
"""

from __future__ import annotations

import copy
import json
import numbers
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import orjson
from gymnasium import spaces
from gymnasium.error import InvalidAction

from srezero.adapters._seen import RANKS, Memory, Seen
from srezero.adapters.gym import IncidentEnv, _make_episode
from srezero.sim import metrics
from srezero.sim.components import SERVICE_KINDS
from srezero.task.spec import TaskSpec, TopologySpec
from srezero.tools.consoles import SCHEMA
from srezero.tools.registry import load_tools
from srezero.tools.write import SCALABLE

ENV_ID = "srezero/IncidentDiscrete-v0"
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
#: A claim's detail. The real detail (the bad value, the release, how a disk fails) has to be read from
#: observations, so a fixed catalogue cannot hold it: characterization.detail is always "no" (D <= 0.875).
DETAIL_PLACEHOLDER = ""

#: Reads whose structured data the seen values are read from (the rest are read from their text).
_DATA_READS = frozenset({"get_changes", "get_config"})

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
        if isinstance(value, NodeSlot | DiskSlot | Seen):
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
            for e in claims for c in _categories())],
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


class DiscreteActions(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """srezero/IncidentDiscrete-v0: the incident env with ``Discrete(N)`` actions over a catalogue of tool calls.

    **Description.** The same seeded incident as ``srezero/Incident-v0`` (investigate, mitigate,
    diagnose, resolve), for RL code that needs a finite action space. ``actions`` lists the concrete
    calls of the current episode, ``action_text(i)`` shows one, ``catalogue`` holds the seed-free
    entries (nodes as slots).

    **Actions.** ``Discrete(N)``: index ``i`` steps catalogue entry ``i``. Reads: alerts, topology,
    status (all and per service), key metrics per service and every node metric per node, warn-level
    logs per service, traces, events, config, changes (all and per service, over the default 72 h and
    the longest 240 h), every ``node_diagnostics`` check per node, ``wait`` 60 s/300 s, every
    database/cache/queue view. Writes: restart and rollback per service, scale web_server/worker to
    every declared count (0-12), failover, drain/cordon/uncordon and sync_clock per node, cleanup_disk
    per disk, vacuum (all tables or one), renew_certificate, purge_queue; and, with values read off the
    agent's own observations (:class:`~srezero.adapters._seen.Seen`), the revert of each of a service's
    4 newest config edits and a node's 2 newest sysctl edits, the newer value for 2 of a service's keys
    that still hold one the history shows replaced (a rotated secret), kill_process for a node's first
    6 host processes in ``top``, terminate_session for 2 blocking pids, drop_replication_slot for 3
    slots, dead_letter_message for 5 head messages and create_index for the 2 lookups slow-query log
    lines show most. Submits: "no fault", one claim per (service or node) x category with an empty
    detail, the same claim added to the first claim of the agent's last submission (two causes), and
    resolve. Tools whose arguments cannot be listed or read off a listing are left out
    (:data:`EXCLUDED`). ``N`` is 293 + 45 per node slot: 518 with the default 5 slots.
    ``info["action_mask"]`` and ``action_masks()`` (int8, for ``action_space.sample(mask=...)`` and
    sb3-contrib's MaskablePPO) are 0 for a slot the seed's topology lacks (a 4-node seed) and for a
    value the agent has not been shown yet; stepping one is an invalid action (error observation,
    counted). The mask says which slots exist and what was read, never which action helps. An
    index outside ``0..N-1`` or a non-integer raises ``gymnasium.error.InvalidAction`` and changes
    nothing: it is a bug in the caller, not an agent's choice.

    **Observations.** The text env's ``Text`` observation, unchanged; ``info`` is the text env's plus
    ``action_mask`` at reset and at every step.

    **Rewards.** The text env's (``reward="shaped"`` or ``"sparse"``, ``gamma``): see docs/scoring.md.
    With the placeholder detail, a diagnosis scores at most 7/8 on a faulty task, so ``success`` is out
    of reach there; a control task ("no fault") can still score 100.

    **Episode end.** As the text env: ``terminated`` after ``resolve``, ``truncated`` when a budget runs
    out (``budget_terminates=True`` reports it as terminated), ``info["result"]`` at the end.

    ``node_slots`` (default: the task's most nodes, 5 unless ``[topology] nodes`` is set) sizes the node
    part; pass ``MAX_NODES`` (8) for one action space across every task, e.g. with
    ``reset(options={"task": ...})`` or vector envs over different tasks.
    """

    def __init__(self, env: gym.Env, node_slots: int | None = None) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, node_slots=node_slots)  # env.spec can rebuild a manual wrap
        gym.Wrapper.__init__(self, env)
        if not isinstance(env.unwrapped, IncidentEnv):
            raise TypeError(f"DiscreteActions wraps srezero's IncidentEnv, not {type(env.unwrapped).__name__}")
        needed = max_nodes(self._base.episode.spec)
        if node_slots is None:
            node_slots = needed
        if isinstance(node_slots, bool) or not isinstance(node_slots, numbers.Integral) \
                or not needed <= node_slots <= MAX_NODES:
            raise ValueError(f"node_slots must be an integer from {needed} (this task's most nodes) to {MAX_NODES}, "
                             f"not {node_slots!r}")
        self.node_slots = int(node_slots)
        self.catalogue = build_catalogue(self.node_slots)
        self.action_space = spaces.Discrete(len(self.catalogue))
        self._calls: list[dict[str, Any]] | None = None  # the catalogue bound to this episode's names, at reset
        self._mask = np.ones(len(self.catalogue), dtype=np.int8)
        self._names: dict[NodeSlot | DiskSlot, tuple[str, bool]] = {}  # each slot's name this episode, at reset
        self._memory = Memory()  # the listings the agent's own reads showed, this episode
        # Each entry's args with slots and seen values in place, built once; a reset puts this episode's
        # names at the slots' places (new containers along the way: these are never changed).
        self._base_calls = [{"tool": e.tool, "args": copy.deepcopy(dict(e.args))} for e in self.catalogue]
        self._slot_places = [(i, places) for i, call in enumerate(self._base_calls)
                             if (places := tuple(_places(call["args"], (NodeSlot, DiskSlot))))]
        # Entries with seen values, grouped by which values they hold and where: the 88 added claims are one
        # group. A read that changes a listing looks each of its groups' values up once and masks the group
        # at once; an entry's call is only put together when it is stepped or shown (_call).
        groups: dict[tuple[tuple[tuple[Any, ...], Seen], ...], list[int]] = {}
        for i, call in enumerate(self._base_calls):
            if places := tuple(_places(call["args"], (Seen,))):
                groups.setdefault(places, []).append(i)
        self._groups = [(places, np.array(entries)) for places, entries in groups.items()]
        self._group_of = np.full(len(self.catalogue), -1)
        self._kind_groups: dict[str, list[int]] = {}
        for g, (places, entries) in enumerate(self._groups):
            self._group_of[entries] = g
            for kind in {seen.kind for _, seen in places}:
                self._kind_groups.setdefault(kind, []).append(g)
        self._group_values: list[tuple[Any, ...]] = []  # per group, its values this episode (a Seen until shown)
        self._slot_ok = np.ones(len(self.catalogue), dtype=np.int8)  # whether an entry's slots exist, at reset

    @property
    def _base(self) -> IncidentEnv:
        return self.env.unwrapped  # type: ignore[return-value]

    @property
    def spec(self) -> Any:
        # Registered through make_discrete_env, the wrapper is part of the env id: gym.make(env.spec) must
        # rebuild it once, not add it again as an extra wrapper.
        inner = self.env.spec
        return inner if inner is not None and inner.id == ENV_ID else super().spec

    # ------------------------------------------------------------------ Gymnasium API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        if isinstance(options, Mapping) and "task" in options:  # refuse before the text env switches task
            needed = max_nodes(_make_episode(options["task"], 0, "sparse", "reset option 'task'").spec)
            if needed > self.node_slots:
                raise ValueError(f"task {options['task']!r} can have {needed} nodes, more than this env's "
                                 f"{self.node_slots} node slots: create it with node_slots={MAX_NODES}")
        obs, info = self.env.reset(seed=seed, options=options)
        self._bind_slots()
        return obs, {**info, "action_mask": self._mask.copy()}

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        index = self._index(action)
        if self._calls is None:
            raise RuntimeError("call reset() before step(): node slots are bound to names at reset")
        call = self._call(index)
        obs, reward, terminated, truncated, info = self.env.step(call)
        if info.get("ok") and not info.get("invalid"):
            data = orjson.loads(info["data"]) if call["tool"] in _DATA_READS else None
            for kind in self._memory.observe(call["tool"], call["args"], obs, data):
                self._rebind_seen(kind)
        return obs, reward, terminated, truncated, {**info, "action_mask": self._mask.copy()}

    # ------------------------------------------------------------------ inspection
    @property
    def actions(self) -> list[dict[str, Any]]:
        """Every action as the concrete call its index steps in this episode (``{"tool", "args"}``, copies)."""
        if self._calls is None:
            raise RuntimeError("call reset() first: node slots are bound to names at reset (see catalogue)")
        return [copy.deepcopy(self._call(i)) for i in range(len(self._calls))]

    def action_text(self, index: int) -> str:
        """Action ``index`` as a text call: concrete after reset, with slots such as ``<node 2>`` before
        and a value not yet seen as ``<seen edit 0 of web_server: key>``."""
        i = self._index(index)
        if self._calls is None:
            return self.catalogue[i].text
        call = self._call(i, shown=True)
        return call_text(call["tool"], call["args"])

    def action_masks(self) -> np.ndarray:
        """1 for every action whose slots exist in this episode's topology and whose seen values were shown
        (int8; all 1 before reset)."""
        return self._mask.copy()

    # ------------------------------------------------------------------ binding
    def _index(self, action: Any) -> int:
        if isinstance(action, np.ndarray) and action.shape == () and np.issubdtype(action.dtype, np.integer):
            action = action.item()
        if isinstance(action, bool) or not isinstance(action, numbers.Integral) \
                or not 0 <= action < len(self.catalogue):
            raise InvalidAction(f"action must be an integer index in 0..{len(self.catalogue) - 1} "
                                f"(Discrete({len(self.catalogue)})), not {action!r}")
        return int(action)

    def _bind_slots(self) -> None:
        """Bind node and disk slots to the names the get_topology tool itself returns (its data, not the
        world's internals: whatever the tool does not show cannot reach the catalogue). Seen values are
        unbound until the agent reads them."""
        data = self._base.episode.backend.call("get_topology", {}).data
        nodes = [(name, tuple(node["disks"])) for name, node in data["nodes"].items()]
        # A missing slot becomes a name no node has, which the core refuses as an invalid action.
        self._names = {}
        for k in range(self.node_slots):
            self._names[NodeSlot(k)] = (nodes[k][0], True) if k < len(nodes) else (f"<no node {k}>", False)
            for d in range(DISKS_PER_NODE):
                ok = k < len(nodes) and d < len(nodes[k][1])
                self._names[DiskSlot(k, d)] = (nodes[k][1][d], True) if ok else (f"<no disk {d} of node {k}>", False)
        self._memory.clear()
        self._calls = calls = list(self._base_calls)
        self._slot_ok = np.ones(len(self.catalogue), dtype=np.int8)
        names = self._names
        for i, places in self._slot_places:
            args = calls[i]["args"]
            for path, slot in places:
                name, exists = names[slot]
                args = _replaced(args, path, name)
                if not exists:
                    self._slot_ok[i] = 0
            calls[i] = {"tool": calls[i]["tool"], "args": args}
        self._mask = np.where(self._group_of < 0, self._slot_ok, 0).astype(np.int8)  # nothing is seen yet
        self._group_values = [tuple(seen for _, seen in places) for places, _ in self._groups]

    def _rebind_seen(self, kind: str) -> None:
        """Look up the values of the groups that read a ``kind`` listing, after a read changed what it shows."""
        for g in self._kind_groups[kind]:
            places, entries = self._groups[g]
            values = []
            for _, seen in places:
                scope = self._names[seen.scope][0] if type(seen.scope) is NodeSlot else seen.scope
                value = self._memory.value(seen, scope)
                values.append(seen if value is None else value)
            self._group_values[g] = tuple(values)
            shown = not any(type(v) is Seen for v in values)
            self._mask[entries] = self._slot_ok[entries] if shown else 0

    def _call(self, index: int, shown: bool = False) -> dict[str, Any]:
        """Entry ``index`` as this episode's concrete call: its slots bound at reset, its seen values
        as last looked up (new containers along their paths, so a call once sent never changes). An
        argument holding a value not yet seen is left out, so the core refuses the call as missing it;
        with ``shown`` it stays, as its :class:`Seen`, for the text."""
        assert self._calls is not None
        call, g = self._calls[index], self._group_of[index]
        if g < 0:
            return call
        bound = list(zip(self._groups[g][0], self._group_values[g]))
        missing = set() if shown else {path[0] for (path, _), value in bound if type(value) is Seen}
        args = {k: v for k, v in call["args"].items() if k not in missing}
        for (path, _), value in bound:
            if path[0] not in missing:
                args = _replaced(args, path, value)
        return {"tool": call["tool"], "args": args}


def _places(value: Any, types: tuple[type, ...], path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Where the values of ``types`` in ``value`` sit (a path of keys and indices), and each one: the
    slots a reset names, the seen values a read binds."""
    if isinstance(value, types):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _places(item, types, (*path, key))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _places(item, types, (*path, index))


def _replaced(container: Any, path: tuple[Any, ...], value: Any) -> Any:
    """``container`` with ``value`` at ``path``: new dicts and lists along the path, the rest shared."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(container, dict):
        return {**container, head: _replaced(container[head], rest, value)}
    items = list(container)
    items[head] = _replaced(items[head], rest, value)
    return items


def make_discrete_env(task: str | None = None, node_slots: int | None = None, **kwargs: Any) -> DiscreteActions:
    """The registered entry point: ``IncidentEnv(task, **kwargs)`` wrapped in :class:`DiscreteActions`."""
    return DiscreteActions(IncidentEnv(task, **kwargs), node_slots=node_slots)


if ENV_ID not in gym.registry:
    gym.register(id=ENV_ID, entry_point=f"{__name__}:make_discrete_env")
