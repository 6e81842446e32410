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
"""

from __future__ import annotations

import copy
import json
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.error import InvalidAction

from srezero.adapters.gym import IncidentEnv, _make_episode
from srezero.sim import metrics
from srezero.sim.components import SERVICE_KINDS
from srezero.task.spec import TaskSpec, TopologySpec
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
#: A claim's detail. The real detail (the bad value, the release, how a disk fails) has to be read from
#: observations, so a fixed catalogue cannot hold it: characterization.detail is always "no" (D <= 0.875).
DETAIL_PLACEHOLDER = ""

#: Tools left out of the catalogue, and why: their arguments are values a fixed list cannot hold
#: without guessing or without reading them from observations (a test checks every declared tool is
#: either here or in the catalogue).
EXCLUDED = {
    "set_config": "the value to set is task-specific (a key's safe value depends on the task and seed)",
    "set_sysctl": "the value to set is task-specific, like set_config's",
    "expand_volume": "a size must exceed the disk's current size, which only node_diagnostics shows",
    "kill_process": "process names come from node_diagnostics(check='top'); a fault can add its own",
    "terminate_session": "pids come from inspect_database(view='activity')",
    "create_index": "table and column come from the database's query logs and inspect_database",
    "drop_replication_slot": "slot names come from inspect_database(view='replication')",
    "dead_letter_message": "message ids come from inspect_queue(view='messages')",
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
        if isinstance(value, NodeSlot | DiskSlot):
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
        "get_changes": [{}, *({"service": s} for s in services)],
        "node_diagnostics": [{"node": n, "check": c} for n in nodes for c in _enum("node_diagnostics", "check")],
        "wait": [{"seconds": s} for s in WAIT_SECONDS],
        "inspect_database": [{"view": v} for v in _enum("inspect_database", "view")],
        "inspect_cache": [{"section": v} for v in _enum("inspect_cache", "section")],
        "inspect_queue": [{"view": v} for v in _enum("inspect_queue", "view")],
        "restart": [{"target": s} for s in services],
        "rollback": [{"service": s} for s in services],
        "scale": [{"service": s, "replicas": k} for s in SCALABLE for k in _bounds("scale", "replicas")],
        "failover": [{}],
        "drain_node": [{"node": n} for n in nodes],
        "cordon_node": [*({"node": n} for n in nodes), *({"node": n, "uncordon": True} for n in nodes)],
        "sync_clock": [{"node": n} for n in nodes],
        "cleanup_disk": [{"node": node_of[d], "device": d} for d in disks],
        "vacuum": [{}],
        "renew_certificate": [{}],
        "purge_queue": [{"queue": q} for q in _enum("purge_queue", "queue")],
        "submit_diagnosis": [{"root_causes": []}, *(
            {"root_causes": [{"entity": e, "category": c, "detail": DETAIL_PLACEHOLDER}]}
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
    logs per service, traces, events, config and changes (all and per service/node), every
    ``node_diagnostics`` check per node, ``wait`` 60 s/300 s, every database/cache/queue view. Writes:
    restart and rollback per service, scale web_server/worker to every declared count (0-12),
    failover, drain/cordon/uncordon and sync_clock per node, cleanup_disk per disk, vacuum,
    renew_certificate, purge_queue. Submits: "no fault", one claim per (service or node) x category
    with an empty detail, and resolve. Tools whose arguments cannot be listed without guessing are
    left out (:data:`EXCLUDED`). ``N`` is 184 + 29 per node slot: 329 with the default 5 slots. A slot
    the seed's topology lacks (a 4-node seed) is an invalid action (error observation, counted) and is
    0 in ``info["action_mask"]`` and ``action_masks()`` (int8, for ``action_space.sample(mask=...)``
    and sb3-contrib's MaskablePPO); the mask says only which slots exist, never which action helps. An index outside ``0..N-1`` or a
    non-integer raises ``gymnasium.error.InvalidAction`` and changes nothing: it is a bug in the
    caller, not an agent's choice.

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
        obs, reward, terminated, truncated, info = self.env.step(self._calls[index])
        return obs, reward, terminated, truncated, {**info, "action_mask": self._mask.copy()}

    # ------------------------------------------------------------------ inspection
    @property
    def actions(self) -> list[dict[str, Any]]:
        """Every action as the concrete call its index steps in this episode (``{"tool", "args"}``, copies)."""
        if self._calls is None:
            raise RuntimeError("call reset() first: node slots are bound to names at reset (see catalogue)")
        return copy.deepcopy(self._calls)

    def action_text(self, index: int) -> str:
        """Action ``index`` as a text call: concrete after reset, with slots such as ``<node 2>`` before."""
        i = self._index(index)
        if self._calls is None:
            return self.catalogue[i].text
        return call_text(self._calls[i]["tool"], self._calls[i]["args"])

    def action_masks(self) -> np.ndarray:
        """1 for every action whose slots exist in this episode's topology (int8; all 1 before reset)."""
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
        world's internals: whatever the tool does not show cannot reach the catalogue)."""
        data = self._base.episode.backend.call("get_topology", {}).data
        nodes = [(name, tuple(node["disks"])) for name, node in data["nodes"].items()]

        def bind(value: Any) -> tuple[Any, bool]:
            """The concrete value and whether its slot exists; a missing slot becomes a name no node has,
            which the core refuses as an invalid action."""
            if isinstance(value, NodeSlot):
                ok = value.index < len(nodes)
                return (nodes[value.index][0] if ok else f"<no node {value.index}>"), ok
            if isinstance(value, DiskSlot):
                ok = value.node < len(nodes) and value.disk < len(nodes[value.node][1])
                return (nodes[value.node][1][value.disk] if ok else f"<no disk {value.disk} of node {value.node}>"), ok
            if isinstance(value, list | tuple):
                pairs = [bind(v) for v in value]
                return [v for v, _ in pairs], all(ok for _, ok in pairs)
            if isinstance(value, dict):
                pairs = {k: bind(v) for k, v in value.items()}
                return {k: v for k, (v, _) in pairs.items()}, all(ok for _, ok in pairs.values())
            return value, True

        calls, mask = [], []
        for entry in self.catalogue:
            args, ok = bind(dict(entry.args))
            calls.append({"tool": entry.tool, "args": args})
            mask.append(ok)
        self._calls, self._mask = calls, np.array(mask, dtype=np.int8)


def make_discrete_env(task: str | None = None, node_slots: int | None = None, **kwargs: Any) -> DiscreteActions:
    """The registered entry point: ``IncidentEnv(task, **kwargs)`` wrapped in :class:`DiscreteActions`."""
    return DiscreteActions(IncidentEnv(task, **kwargs), node_slots=node_slots)


if ENV_ID not in gym.registry:
    gym.register(id=ENV_ID, entry_point=f"{__name__}:make_discrete_env")
