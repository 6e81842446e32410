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
import numbers
from collections.abc import Iterator, Mapping
from typing import Any

import gymnasium as gym
import numpy as np
import orjson
from gymnasium import spaces
from gymnasium.error import InvalidAction

from srezero.adapters._catalogue import (  # noqa: F401 (re-exported: the catalogue is part of this env's API)
    CHANGES_WINDOW_H,
    DETAIL_PLACEHOLDER,
    DETAIL_WORDS,
    DISKS_PER_NODE,
    EXCLUDED,
    KEY_SERVICE_METRICS,
    LOG_LEVEL,
    MAX_NODES,
    SEEDED_MAX_NODES,
    WAIT_SECONDS,
    DiskSlot,
    Entry,
    NodeSlot,
    build_catalogue,
    call_text,
    max_nodes,
)
from srezero.adapters._seen import Detailed, Memory, Seen, with_detail
from srezero.adapters.gym import IncidentEnv, _make_episode

ENV_ID = "srezero/IncidentDiscrete-v0"
#: Reads whose structured data the seen values are read from (the rest are read from their text).
_DATA_READS = frozenset({"get_changes", "get_config"})

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
    detail, the same claim added to the first claim of the agent's last submission (two causes), the
    last submission with one piece appended to the detail of its last claim (a phrase of
    :data:`DETAIL_WORDS`, a disk slot's device, or a value read off an observation: an edit's
    ``key=new``, a release, a stale value, a process, a pid, a slot, a message id, a lookup), and
    resolve. Tools whose arguments cannot be listed or read off a listing are left out
    (:data:`EXCLUDED`). ``N`` is 387 + 55 per node slot: 662 with the default 5 slots.
    ``info["action_mask"]`` and ``action_masks()`` (int8, for ``action_space.sample(mask=...)`` and
    sb3-contrib's MaskablePPO) are 0 for a slot the seed's topology lacks (a 4-node seed) and for a
    value the agent has not been shown yet; stepping one is an invalid action (error observation,
    counted). The mask says which slots exist and what was read, never which action helps. An
    index outside ``0..N-1`` or a non-integer raises ``gymnasium.error.InvalidAction`` and changes
    nothing: it is a bug in the caller, not an agent's choice.

    **Observations.** The text env's ``Text`` observation, unchanged; ``info`` is the text env's plus
    ``action_mask`` at reset and at every step.

    **Rewards.** The text env's (``reward="shaped"`` or ``"sparse"``, ``gamma``): see docs/scoring.md.
    A right detail takes a step per piece after its claim (``db_timeout_ms=3``, then ``too low``).

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
        # Detail entries (144 with 5 slots): masked unless a claim was submitted and the piece is bound. A new
        # claim masks them all at once; only a piece's own listing looks pieces up, and the claims go in
        # only when an entry is stepped or shown.
        self._detail = {i: call["args"]["root_causes"] for i, call in enumerate(self._base_calls)
                        if type(call["args"].get("root_causes")) is Detailed}
        self._detail_idx = np.array(sorted(self._detail))
        self._seen_pieces: dict[str, list[int]] = {}
        for i, detailed in self._detail.items():
            if type(detailed.piece) is Seen:
                self._seen_pieces.setdefault(detailed.piece.kind, []).append(i)
        self._piece: dict[int, Any] = {}  # per detail entry, its piece this episode (None until shown)
        self._piece_ok = np.zeros(len(self.catalogue), dtype=np.int8)

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
        for i, detailed in self._detail.items():  # phrases are bound from the start, devices at reset
            piece = detailed.piece
            self._piece[i] = (piece if type(piece) is str
                              else names[piece][0] if type(piece) is DiskSlot and names[piece][1] else None)
            self._piece_ok[i] = self._piece[i] is not None
        self._mask[self._detail_idx] = 0  # no claim yet

    def _rebind_seen(self, kind: str) -> None:
        """Look up the values of the groups that read a ``kind`` listing, after a read changed what it shows."""
        for g in self._kind_groups.get(kind, ()):
            places, entries = self._groups[g]
            values = []
            for _, seen in places:
                value = self._value(seen)
                values.append(seen if value is None else value)
            self._group_values[g] = tuple(values)
            shown = not any(type(v) is Seen for v in values)
            self._mask[entries] = self._slot_ok[entries] if shown else 0
        for i in self._seen_pieces.get(kind, ()):
            self._piece[i] = self._value(self._detail[i].piece)
            self._piece_ok[i] = self._piece[i] is not None
        if kind == "claim" or kind in self._seen_pieces:
            claimed = bool(self._memory.claims())
            self._mask[self._detail_idx] = self._piece_ok[self._detail_idx] if claimed else 0

    def _value(self, seen: Seen) -> Any:
        """What ``seen`` stands for in this episode, or ``None`` while the agent has not been shown it."""
        scope = self._names[seen.scope][0] if type(seen.scope) is NodeSlot else seen.scope
        return self._memory.value(seen, scope)

    def _call(self, index: int, shown: bool = False) -> dict[str, Any]:
        """Entry ``index`` as this episode's concrete call: its slots bound at reset, its seen values
        as last looked up (new containers along their paths, so a call once sent never changes). An
        argument holding a value not yet seen is left out, so the core refuses the call as missing it;
        with ``shown`` it stays, as its :class:`Seen`, for the text."""
        assert self._calls is not None
        call, g = self._calls[index], self._group_of[index]
        if index in self._detail:  # the agent's last claims, with the piece appended to the last one's detail
            claims, piece = self._memory.claims(), self._piece[index]
            if claims and piece is not None:
                return {"tool": call["tool"], "args": {"root_causes": with_detail(claims, piece)}}
            return call if shown else {"tool": call["tool"], "args": {}}
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
