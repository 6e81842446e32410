"""The discrete Gymnasium front end: a finite catalogue of tool calls that never depends on the ground truth."""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium")

from gymnasium.error import InvalidAction  # noqa: E402
from gymnasium.utils.env_checker import check_env  # noqa: E402
from gymnasium.vector import SyncVectorEnv  # noqa: E402

import srezero  # noqa: E402
from srezero.adapters._seen import RANKS, Detailed, Seen  # noqa: E402
from srezero.adapters.gym_discrete import (  # noqa: E402
    DETAIL_WORDS,
    DISKS_PER_NODE,
    ENV_ID,
    EXCLUDED,
    MAX_NODES,
    SEEDED_MAX_NODES,
    DiscreteActions,
    DiskSlot,
    Entry,
    NodeSlot,
    build_catalogue,
    make_discrete_env,
)
from srezero.backend import SimBackend  # noqa: E402
from srezero.episode import Episode  # noqa: E402
from srezero.sim.components import SERVICE_KINDS  # noqa: E402
from srezero.task.spec import TopologySpec  # noqa: E402
from srezero.tools.parse import parse_action  # noqa: E402
from srezero.tools.registry import load_tools, target_of  # noqa: E402

MAKE_ID = f"srezero.adapters.gym_discrete:{ENV_ID}"
ROOT = Path(__file__).resolve().parents[2]
TASK_IDS = [t.id for t in srezero.list_tasks()]
#: Per node slot: 10 node metrics, 4 diagnostics, events, drain, cordon, uncordon, sync_clock, 2 cleanups, 8 claims,
#: 8 claims added to a first one, 2 seen sysctl edits to revert and 6 seen host processes to kill; as detail
#: pieces, its 2 disks' devices, the 2 sysctl edits' settings and the 6 processes' names.
PER_NODE = 55
#: Entries that name no node: reads, service writes, claims, the seen edits, stale values, pids, slots and
#: message ids, and the detail pieces (34 phrases; per service 4 edits' settings, 2 stale values and 2
#: releases; 2 pids, 3 slots, 5 message ids and 2 lookups).
FIXED = 387
#: Curated tasks whose oracle fix the catalogue holds on seed 0 (measured). The rest: a fix that is not
#: one read off an observation (inc-003's retries set to 0 where this seed's history shows 1 -> 4;
#: inc-039's raised limit).
NOT_EXPRESSIBLE = {"inc-003", "inc-039"}
EXPRESSIBLE = set(TASK_IDS) - NOT_EXPRESSIBLE
CONTROL = {"inc-011", "inc-044"}
CATEGORIES = [c for c in load_tools()["submit_diagnosis"].schema["$defs"]["Claim"]["properties"]["category"]["enum"]
              if c != "none"]


def _env(task: str = "inc-002", seed: int = 1, **kwargs: Any) -> DiscreteActions:
    env = make_discrete_env(task, seed=seed, **kwargs)
    env.reset()
    return env


def _has_seen(entry: Entry) -> bool:
    """Whether an entry holds a seen value, as an argument or (a claim) in one, or is a detail piece."""
    return any(isinstance(v, Seen | Detailed) or (isinstance(v, list) and any(isinstance(c, Seen) for c in v))
               for _, v in entry.args)


def _is_piece(entry: Entry) -> bool:
    """Whether an entry appends a piece to the detail of the last claim."""
    return any(isinstance(v, Detailed) for _, v in entry.args)


def _node_slots_of(entry: Entry) -> set[int]:
    """The node slots an entry names, directly, through a disk or as the scope of a seen value."""
    def slots(value: Any) -> set[int]:
        if isinstance(value, NodeSlot):
            return {value.index}
        if isinstance(value, DiskSlot):
            return {value.node}
        if isinstance(value, Seen):
            return slots(value.scope)
        if isinstance(value, Detailed):
            return slots(value.piece)
        if isinstance(value, dict):
            return set().union(*map(slots, value.values()))
        if isinstance(value, list | tuple):
            return set().union(*map(slots, value))
        return set()
    return slots(dict(entry.args))


def _node_names(env: DiscreteActions) -> list[str]:
    return list(env.unwrapped.episode.backend.call("get_topology", {}).data["nodes"])


def test_the_space_is_discrete_over_the_catalogue_and_texts_parse_back() -> None:
    env = gym.make(MAKE_ID, task="inc-002", seed=3)
    _, info = env.reset()
    wrapper = env.get_wrapper_attr("catalogue")
    assert isinstance(env.action_space, gym.spaces.Discrete)
    assert env.action_space.n == len(wrapper) == FIXED + PER_NODE * SEEDED_MAX_NODES == 662
    actions = env.get_wrapper_attr("actions")
    assert len(actions) == env.action_space.n and actions[0] == {"tool": "get_alerts", "args": {}}
    assert actions[-1] == {"tool": "resolve", "args": {}}
    text = env.get_wrapper_attr("action_text")
    tools = load_tools()
    for i, call in enumerate(actions):
        if _has_seen(wrapper[i]):  # nothing read yet: the text shows what the call will be read from
            assert ("<last claims" if _is_piece(wrapper[i]) else "<seen ") in text(i) and not info["action_mask"][i]
            continue
        tool, args = parse_action(text(i))  # the text is the same call, as a person would type it
        assert (tool, args) == (call["tool"], tools[tool].validate(dict(call["args"]))), text(i)
    assert len({text(i) for i in range(len(actions))}) == len(actions), "every index is a different call"
    assert info["action_mask"].dtype == np.int8 and info["action_mask"].shape == (env.action_space.n,)


def test_every_declared_tool_is_catalogued_or_excluded_with_a_reason() -> None:
    catalogued = {e.tool for e in build_catalogue(SEEDED_MAX_NODES)}
    assert catalogued.isdisjoint(EXCLUDED) and all(EXCLUDED.values())
    assert catalogued | set(EXCLUDED) == set(load_tools()), "decide whether a new tool belongs in the catalogue"


def test_sizes_grow_only_with_node_slots() -> None:
    for slots in range(3, MAX_NODES + 1):
        assert len(build_catalogue(slots)) == FIXED + PER_NODE * slots
    assert build_catalogue(5) == build_catalogue(5)  # no set iteration, no state


def test_every_action_is_well_formed_on_every_curated_task() -> None:
    """Every action validates against its declaration and names only services, nodes and devices
    get_topology shows; only the slots of a missing 5th node are masked."""
    tools = load_tools()
    for tid in TASK_IDS:
        env = _env(tid, seed=0)
        topo = env.unwrapped.episode.backend.call("get_topology", {}).data
        nodes = set(topo["nodes"])
        devices = {d for n in topo["nodes"].values() for d in n["disks"]}
        mask = env.action_masks()
        unseen = {i for i, e in enumerate(env.catalogue) if _has_seen(e)}
        missing = {i for i, e in enumerate(env.catalogue) if _node_slots_of(e) - set(range(len(nodes)))}
        assert set(np.flatnonzero(mask == 0)) == unseen | missing, tid
        for call, ok in zip(env.actions, mask):
            if not ok:
                continue
            args = tools[call["tool"]].validate(dict(call["args"]))
            named = [target_of(call["tool"], args)] + [c["entity"] for c in args.get("root_causes", ())]
            assert all(n in ("", *SERVICE_KINDS, *nodes) for n in named), (tid, call)
            assert args.get("device", "nvme0n1") in devices, (tid, call)


@pytest.mark.parametrize("task", ["inc-002", "inc-022"])
def test_every_action_steps_once_without_an_invalid_action_error(task: str) -> None:
    """Reads and submits in a few episodes, every write (and resolve) on a fresh one. The only refusals:
    a missing node slot (masked) and a node write on a node that is down (inc-022: "No route to host"),
    which is what the same text call gets from the core."""
    tools = load_tools()
    env = _env(task, seed=0)
    mask = env.action_masks()
    down = {n.name for n in env.unwrapped.episode.world.topo.nodes if not n.up}  # the harness may look
    refused = []

    def play(indices: list[int]) -> None:
        env.reset(seed=0)
        for i in indices:
            *_, terminated, truncated, info = env.step(i)
            if info["invalid"]:
                refused.append((i, info["error"]))
            assert not truncated, "a chunk must fit in the budgets"
            if terminated:
                return

    free = [i for i, e in enumerate(env.catalogue) if tools[e.tool].kind == "read" or e.tool == "submit_diagnosis"]
    for k in range(0, len(free), 30):
        play(free[k:k + 30])
    for i in sorted(set(range(len(env.catalogue))) - set(free)):
        play([i])
    for i, error in refused:
        call = env.actions[i]
        assert not mask[i] or (call["args"].get("node") in down and "No route to host" in error), (call, error)
    assert (task == "inc-022") == bool(down)


def test_same_seed_and_indices_give_identical_episodes() -> None:
    def rollout() -> list[Any]:
        env = gym.make(MAKE_ID, task="inc-019", seed=4)
        _, info = env.reset()
        rng = np.random.default_rng(0)
        out: list[Any] = []
        for _ in range(12):
            i = int(rng.choice(np.flatnonzero(info["action_mask"])))
            obs, reward, terminated, truncated, info = env.step(i)
            out.append((i, obs, reward, terminated, truncated, info["data"], info["invalid"]))
            if terminated or truncated:
                break
        return out

    first = rollout()
    assert first == rollout()


def test_an_index_is_the_same_step_as_its_text_call_on_the_core_api() -> None:
    """The wrapper's own topology read at reset is free and changes nothing: the same calls sent as text
    through srezero.make give byte-identical trajectories and results."""
    env = gym.make(MAKE_ID, task="inc-002", seed=3)
    _, info = env.reset()
    rng = np.random.default_rng(7)
    texts = []
    for _ in range(15):
        i = int(rng.choice(np.flatnonzero(info["action_mask"])))
        texts.append(env.get_wrapper_attr("action_text")(i))
        _, _, terminated, truncated, info = env.step(i)
        if terminated or truncated:
            break
    core = srezero.make("inc-002", 3, reward="shaped")  # the adapters' default
    core.reset()
    for text in texts:
        core.step(text)
    wrapped = env.unwrapped.episode
    assert [(t["tool"], t["args"], t["text"], t["reward"]) for t in wrapped.trajectory] == \
        [(t["tool"], t["args"], t["text"], t["reward"]) for t in core.trajectory]
    assert wrapped.finish() == core.finish()


def test_the_catalogue_is_the_same_in_another_process_and_hash_seed() -> None:
    code = ("import json; from srezero.adapters.gym_discrete import build_catalogue; "
            "print(json.dumps([e.text for e in build_catalogue(5)]))")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env, cwd=ROOT)
    assert json.loads(out.stdout) == [e.text for e in build_catalogue(5)]


# ---------------------------------------------------------------------- no ground truth in the action list
def test_every_curated_task_has_the_same_catalogue() -> None:
    catalogues = {tid: make_discrete_env(tid).catalogue for tid in TASK_IDS}
    assert len({tuple(e.text for e in c) for c in catalogues.values()}) == 1


def test_same_topology_different_faults_give_identical_actions() -> None:
    """inc-001's faults under inc-002's id (hence inc-002's seeded topology): the concrete calls are the
    same, name for name, although the root causes differ."""
    real = srezero.get_task("inc-002")
    other = srezero.get_task("inc-001").model_copy(update={"id": real.id})
    assert real.faults != other.faults and real.topology == other.topology
    for seed in (0, 1, 2):
        a, b = _env(real, seed=seed), _env(other, seed=seed)
        assert a.unwrapped.episode.ground_truth() != b.unwrapped.episode.ground_truth()
        assert a.actions == b.actions and (a.action_masks() == b.action_masks()).all()


def test_the_wrapper_reads_only_the_get_topology_tool(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    original = SimBackend.call

    def spy(self: SimBackend, tool: str, args: dict[str, Any]) -> Any:
        calls.append(tool)
        return original(self, tool, args)

    def refuse(*_: Any) -> Any:
        raise AssertionError("the discrete wrapper read the ground truth")

    monkeypatch.setattr(SimBackend, "call", spy)
    monkeypatch.setattr(Episode, "ground_truth", refuse)
    monkeypatch.setattr(Episode, "oracle_plan", refuse)
    env = make_discrete_env("inc-013", seed=2)
    env.reset()
    assert calls == ["get_topology"]
    env.step(0)
    assert calls == ["get_topology", "get_alerts"] and env.actions and env.action_text(5)


def _strings(value: Any) -> set[str]:
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return set().union(*map(_strings, value.values()))
    if isinstance(value, list):
        return set().union(*map(_strings, value))
    return set()


def _enums(schema: Any) -> set[str]:
    """Every declared choice anywhere in a JSON schema."""
    if isinstance(schema, dict):
        return set(schema.get("enum", ())).union(*map(_enums, schema.values()))
    if isinstance(schema, list):
        return set().union(*map(_enums, schema))
    return set()


def test_every_string_in_the_catalogue_is_public_vocabulary() -> None:
    """At reset, every name and value the actions hold is a service, a node or device get_topology
    lists, a declared choice (schema enum), a metric name get_topology lists, or a fixed default: no
    key, value, pid, process, slot or message id (those wait for a read to show them), so nothing can
    come from a fault. And every service and node is
    named alike, so the culprit is never singled out."""
    from srezero.sim import metrics

    enums = set().union(*(_enums(t["parameters"]) for t in srezero.tool_specs()))
    for tid in TASK_IDS:
        env = _env(tid, seed=0)
        topo = env.unwrapped.episode.backend.call("get_topology", {}).data
        nodes = list(topo["nodes"])
        missing = {f"<no node {k}>" for k in range(len(nodes), SEEDED_MAX_NODES)}
        missing |= {f"<no disk {d} of node {k}>" for k in range(len(nodes), SEEDED_MAX_NODES)
                    for d in range(DISKS_PER_NODE)}
        devices = {d for n in topo["nodes"].values() for d in n["disks"]}
        metric_names = {*metrics.SERVICE_BASE, *metrics.NODE_METRICS, *sum(metrics.SERVICE_EXTRA.values(), ())}
        tables = env.unwrapped.episode.backend.call("inspect_database", {"view": "tables"}).text.splitlines()[2:]
        public = {*SERVICE_KINDS, *nodes, *devices, *missing, *enums, *metric_names, "", "warn",
                  *(row.split()[0] for row in tables)}  # the database's tables, as its tables view lists them
        strings = _strings([a["args"] for a in env.actions])
        assert strings <= public, (tid, strings - public)
        claimed = {c["entity"] for a in env.actions for c in a["args"].get("root_causes", ())}
        assert claimed == {*SERVICE_KINDS, *nodes} | {m for m in missing if "disk" not in m}, tid
        for rc in env.unwrapped.episode.truth:  # finer names than a node or a service never appear
            if rc.entity not in {*SERVICE_KINDS, *nodes}:
                assert rc.entity not in strings, (tid, rc.entity)


# ---------------------------------------------------------------------- API edges
def test_out_of_range_and_non_integer_indices_raise_and_change_nothing() -> None:
    env = _env()
    n = env.action_space.n
    for bad in (n, -1, np.int64(n), 1.0, True, "0", None, np.array([0])):
        with pytest.raises(InvalidAction, match=r"integer index in 0\.\."):
            env.step(bad)
    with pytest.raises(InvalidAction):
        env.action_text(n)
    *_, info = env.step(np.int64(0))
    assert info["step"] == 1 and not info["invalid"]  # the refused indices cost nothing
    *_, info = env.step(np.array(0))
    assert info["step"] == 2


def test_before_reset_the_catalogue_shows_slots() -> None:
    env = make_discrete_env("inc-002", seed=0)
    assert env.action_text(env.catalogue.index(next(e for e in env.catalogue if e.tool == "drain_node"))) \
        == "drain_node(node=<node 0>)"
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    with pytest.raises(RuntimeError, match="reset"):
        _ = env.actions


def test_check_env_passes_for_every_curated_task() -> None:
    for tid in TASK_IDS:
        env = gym.make(MAKE_ID, task=tid, seed=7)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check_env(env)
        messages = [str(w.message) for w in caught]
        # the checker always says a wrapper is not the unwrapped env: that is what this is
        assert all("different from the unwrapped version" in m for m in messages), (tid, messages)
        env.close()
    rebuilt = gym.make(env.spec)  # the spec names the wrapped env once: no second DiscreteActions
    assert rebuilt.action_space == env.action_space


def test_a_missing_node_slot_is_masked_and_an_invalid_step() -> None:
    seed = next(s for s in range(50) if len(_node_names(_env("inc-001", seed=s))) < SEEDED_MAX_NODES)
    env = _env("inc-001", seed=seed)
    masked = np.flatnonzero(env.action_masks() == 0)
    masked = np.array([i for i in masked if not _has_seen(env.catalogue[i])])  # unseen values are masked too
    # less the claims added to a first one and the detail pieces (the devices, sysctl settings and processes)
    assert len(masked) == PER_NODE - 2 * (RANKS["sysctl"] + RANKS["process"]) - len(CATEGORIES) - DISKS_PER_NODE
    obs, _, *_, info = env.step(int(masked[0]))
    assert info["invalid"] and "<no node 4>" in obs
    assert not set(env.action_space.sample(mask=env.action_masks()) for _ in range(200)) & set(masked.tolist())


def test_the_seeded_topology_fits_the_default_slots() -> None:
    for tid in ("inc-001", "inc-020"):
        for seed in range(10):
            nodes = _env(tid, seed=seed).unwrapped.episode.backend.call("get_topology", {}).data["nodes"]
            assert len(nodes) <= SEEDED_MAX_NODES and all(len(n["disks"]) == DISKS_PER_NODE for n in nodes.values())


def test_node_slots_size_the_space_and_guard_task_switches() -> None:
    wide = make_discrete_env("inc-002", seed=0, node_slots=MAX_NODES)
    assert wide.action_space.n == FIXED + PER_NODE * MAX_NODES
    wide.reset(options={"task": "inc-043"})
    assert wide.unwrapped.task == "inc-043" and wide.action_masks().sum() <= FIXED + PER_NODE * SEEDED_MAX_NODES
    six = srezero.get_task("inc-002").model_copy(update={"topology": TopologySpec(nodes=6)})
    assert make_discrete_env(six).action_space.n == FIXED + PER_NODE * 6
    env = _env("inc-002", seed=0)
    before = env.actions
    with pytest.raises(ValueError, match="node_slots=8"):
        env.reset(options={"task": six})
    assert env.unwrapped.task == "inc-002" and env.actions == before
    for bad in (4, 9, True, 5.0):
        with pytest.raises(ValueError, match="node_slots"):
            make_discrete_env("inc-002", node_slots=bad)
    with pytest.raises(TypeError):
        DiscreteActions(gym.make("CartPole-v1"))


def test_vector_env_batches_the_mask_and_steps_indices() -> None:
    venv = SyncVectorEnv([lambda: gym.make(MAKE_ID, task="inc-001") for _ in range(2)])
    _, info = venv.reset(seed=[0, 1])
    assert info["action_mask"].shape == (2, venv.single_action_space.n)
    _, _, _, _, info = venv.step(np.array([0, 1]))
    assert list(info["tool"]) == ["get_alerts", "get_topology"]


def test_deepcopy_continues_like_the_original() -> None:
    env = _env("inc-002", seed=5)
    env.step(0)
    twin = copy.deepcopy(env)
    assert twin.actions == env.actions
    assert twin.step(7)[0] == env.step(7)[0]


# ---------------------------------------------------------------------- what the catalogue can solve
#: The read an agent makes to see the value an observation-grounded write needs.
#: For each write with seen values, the reads that can show them, tried in turn until the write is bound:
#: a revert is read off the service's history (its default window, then the longest); a stale value off
#: the full history and the service's config.
GROUNDING = {"set_config": lambda a: [("get_changes", {"service": a["service"]}),
                                      ("get_changes", {"service": a["service"], "window_h": 240}),
                                      ("get_changes", {}), ("get_config", {"service": a["service"]})],
             "set_sysctl": lambda a: [("get_changes", {})],
             "kill_process": lambda a: [("node_diagnostics", {"node": a["node"], "check": "top"})],
             "terminate_session": lambda a: [("inspect_database", {"view": "locks"})],
             "drop_replication_slot": lambda a: [("inspect_database", {"view": "replication"})],
             "dead_letter_message": lambda a: [("inspect_queue", {"view": "messages"})],
             "create_index": lambda a: [("search_logs", {"service": "database", "level": "warn"})]}


def _index_of(env: DiscreteActions, tool: str, args: dict[str, Any], near: bool) -> int | None:
    """The unmasked index whose concrete call is ``tool(args)`` (defaults filled in), or with ``near``
    the first one on the same tool and target."""
    tools = load_tools()
    key = (tool, tools[tool].validate(dict(args)))
    concrete = [(a["tool"], tools[a["tool"]].validate(dict(a["args"]))) if ok else None
                for a, ok in zip(env.actions, env.action_masks())]
    if key in concrete:
        return concrete.index(key)
    if near:
        return next((i for i, c in enumerate(concrete) if c and c[0] == tool and target_of(*c) == target_of(*key)),
                    None)
    return None


#: The reads that list the values a detail piece can be read from, made when no piece bound so far makes
#: the detail right: the history (default window, then the longest) and each node's host processes.
DETAIL_READS = [("get_changes", {}), ("get_changes", {"window_h": 240})]


def _pieces(env: DiscreteActions) -> dict[int, str]:
    """The unmasked detail-piece entries, each with the text it would append to the last claim's detail."""
    base = (env._memory.claims() or [{}])[-1].get("detail") or ""
    return {i: env.actions[i]["args"]["root_causes"][-1]["detail"][len(base):].strip()
            for i, entry in enumerate(env.catalogue) if _is_piece(entry) and env.action_masks()[i]}


def _detail_steps(env: DiscreteActions, rc: Any) -> list[int] | None:
    """The one or two detail pieces (a value read off an observation, then a phrase) whose text makes the
    last claim's detail right for ``rc`` (the scorer's own check: the planner reads the ground truth)."""
    from srezero.scoring import detail, naming

    vocabulary = naming.concrete_vocabulary(env.unwrapped.episode.world)
    claim = env._memory.claims()[-1]
    pieces = _pieces(env)
    words = {i: text for i, text in pieces.items() if text in DETAIL_WORDS}
    for i, text in pieces.items():
        if detail.check(f"{claim['detail']} {text}", claim["entity"], rc, vocabulary)[0]:
            return [i]
    for i, text in pieces.items():
        for j, word in words.items():
            if i not in words and detail.check(f"{claim['detail']} {text} {word}", claim["entity"], rc, vocabulary)[0]:
                return [i, j]
    return None


def _give_detail(env: DiscreteActions, rc: Any) -> None:
    """Append pieces to the last claim until its detail is right for ``rc``, reading the listings that show
    more values (the history, each node's processes) while none is."""
    topo = env.unwrapped.episode.backend.call("get_topology", {}).data
    reads = iter([*DETAIL_READS, *(("node_diagnostics", {"node": n, "check": "top"}) for n in topo["nodes"])])
    while (steps := _detail_steps(env, rc)) is None and (read := next(reads, None)):
        env.step(_index_of(env, *read, near=False))
    for i in steps or ():  # an entry appends the same piece whatever the detail so far
        env.step(i)


def _play_mapped_oracle(env: DiscreteActions) -> tuple[dict[str, Any], bool]:
    """The oracle plan played on the catalogue: writes and resolve exactly (a seen value after the reads
    that show it), reads the same call or else the same tool on the same target, the diagnosis on the
    coarsest names (a key's service, a disk's node, a replica's service), each claim's detail built from
    pieces, and a second cause as a claim added to the first. Returns the result and whether every write
    and the diagnosis had an index."""
    tools = load_tools()
    episode = env.unwrapped.episode
    topo = episode.backend.call("get_topology", {}).data
    service_of = {r: s for s, reps in topo["services"].items() for r in reps}
    complete, info = True, {}
    for step in episode.oracle_plan():
        tool, args = step["tool"], dict(step["args"])
        if tool == "submit_diagnosis":
            claims = [{"entity": service_of.get(c["entity"], re.split(r"[./:]", c["entity"])[0]),
                       "category": c["category"], "detail": ""} for c in args["root_causes"]]
            complete &= len(claims) <= 2
            if not claims:
                env.step(_index_of(env, tool, {"root_causes": []}, near=False))
            for k, (claim, rc) in enumerate(zip(claims[:2], episode.truth)):
                first = [env._memory.claims()[0], claim] if k else [claim]  # added to the first
                env.step(_index_of(env, tool, {"root_causes": first}, near=False))
                _give_detail(env, rc)
            continue
        calls = [{}] if tool == "resolve" else [args]
        for call in calls:
            index = _index_of(env, tool, call, near=tools[tool].kind == "read")
            for read in GROUNDING.get(tool, lambda a: [])(call):
                if index is not None:
                    break
                env.step(_index_of(env, *read, near=False))
                index = _index_of(env, tool, call, near=False)
            if index is None:
                complete &= tools[tool].kind == "read"
                continue
            *_, terminated, truncated, info = env.step(index)
            if terminated or truncated:
                return info["result"], complete
    return info["result"], complete


def test_the_oracle_plan_maps_onto_the_catalogue_where_its_fix_is_expressible() -> None:
    """Measured, not hoped: on seed 0, 51 of the 53 curated tasks have their fix in the catalogue, most
    of them through a value read off an observation (two-cause tasks through a claim added to the first).
    Every faulty task's diagnosis reaches D = 1 with details built from pieces; the expressible tasks are
    a success, and on the rest the mapped plan mitigates nothing."""
    expressible = set()
    for tid in TASK_IDS:
        env = _env(tid, seed=0, reward="sparse")
        result, complete = _play_mapped_oracle(env)
        assert result["end"] == "resolve" and result["invalid_actions"] == 0 and result["wrong_fixes"] == 0, tid
        assert result["diagnosis"]["score"] == 1.0, (tid, result["diagnosis"]["per_cause"])
        if complete:
            expressible.add(tid)
            # marks: 100, or a little less where a read mapped to its nearest entry misses some evidence
            assert result["mitigated"] and result["success"] and result["marks"] >= 90.0, tid
        else:
            assert not result["mitigated"], tid
    assert expressible == EXPRESSIBLE


def test_the_docs_quote_the_measured_sizes_and_their_snippet_runs() -> None:
    text = (ROOT / "docs" / "integrations.md").read_text()
    section = text[text.index("### Discrete actions"):text.index("## MCP")]
    assert f"{len(build_catalogue(SEEDED_MAX_NODES))} actions" in section
    assert f"{len(EXPRESSIBLE)} of the {len(TASK_IDS)} curated tasks" in section
    assert f"{len(DETAIL_WORDS)} fixed phrases" in section
    assert all(name in section for name in EXCLUDED)
    snippet = re.search(r"```python\n(.*?)```", section, re.S)
    assert snippet, "docs/integrations.md: the discrete env's snippet is gone"
    namespace: dict[str, Any] = {}
    exec(compile(snippet.group(1), "integrations.md", "exec"), namespace)
    assert namespace["env"].action_space.n == 662 and namespace["info"]["step"] == 1


# ---------------------------------------------------------------------- values read off observations
def _index(env: DiscreteActions, text: str) -> int:
    """The index whose current text is ``text``."""
    return next(i for i in range(env.action_space.n) if env.action_text(i) == text)


def _shown(value: Any) -> str:
    """How a seen value reads in the text it was read from."""
    return "''" if value == "" else str(value)


#: The reads whose listings bind seen values (the rest of the reads show none).
_LISTINGS = {"get_changes", "get_config", "node_diagnostics", "inspect_database", "inspect_queue", "search_logs"}


def _claim_added(entry: Entry) -> bool:
    return entry.tool == "submit_diagnosis" and _has_seen(entry) and not _is_piece(entry)


@pytest.mark.parametrize("task", ["inc-013", "inc-014", "inc-024", "inc-025", "inc-030", "inc-032", "inc-034",
                                  "inc-037", "inc-053"])
def test_a_seen_value_is_one_the_agent_was_shown(task: str) -> None:
    """Random masked play weighted to the reads that list values: after every step, every bound seen
    value appears in the text of an observation this episode returned, and the wrapper never asked the
    world for it. (A claim added to the last submission is the agent's own: tested below.)"""
    env = _env(task, seed=3)
    seen = [i for i, e in enumerate(env.catalogue) if _has_seen(e) and e.tool != "submit_diagnosis"]
    reads = [i for i, e in enumerate(env.catalogue) if load_tools()[e.tool].kind == "read"]
    listings = [i for i in reads if env.catalogue[i].tool in _LISTINGS]
    rng = np.random.default_rng(11)
    texts, bound_any = [], False
    for _ in range(60):
        mask = env.action_masks()
        pool = np.flatnonzero(mask[seen]) if rng.random() < 0.2 else []
        i = int(np.asarray(seen)[rng.choice(pool)]) if len(pool) else int(rng.choice(
            listings if rng.random() < 0.5 else reads))
        obs, _, terminated, truncated, _ = env.step(i)
        texts.append(obs)
        if terminated or truncated:
            break
        history = "\n".join(texts)
        for j in np.flatnonzero(env.action_masks()[seen]):
            call = env.actions[seen[j]]
            values = [v for k, v in call["args"].items() if isinstance(dict(env.catalogue[seen[j]].args)[k], Seen)]
            assert values and all(_shown(v) in history for v in values), (task, call)
            bound_any = True
    assert bound_any, f"{task}: the reads never showed a value to act on"


def _piece_shown(piece: str, history: str, devices: set[str]) -> bool:
    """Whether a detail piece is a fixed phrase, a device get_topology lists, or a value the history of
    observations shows: an edit's ``key=new`` as ``key: old -> new``, a lookup ``table.column`` as a
    slow query's ``FROM table WHERE column =``, anything else as itself."""
    if piece in DETAIL_WORDS or piece in devices or piece in history:
        return True
    key, eq, new = piece.partition("=")
    if eq:
        return re.search(rf"(^|\s){re.escape(key)}: .* -> {re.escape(new)}( \(|$)", history, re.M) is not None
    table, _, column = piece.partition(".")
    return f"FROM {table} WHERE {column} =" in history


@pytest.mark.parametrize("task", ["inc-013", "inc-016", "inc-024", "inc-025", "inc-030", "inc-032", "inc-037",
                                  "inc-043"])
def test_a_detail_piece_is_a_phrase_a_device_or_a_value_the_agent_was_shown(task: str) -> None:
    """Random masked play after a first claim, weighted to the reads that list values: after every step,
    every piece a detail entry would append is one of the fixed phrases, a device get_topology lists, or
    a value an observation of this episode showed, and it goes to the end of the last claim's detail."""
    env = _env(task, seed=3)
    pieces = [i for i, e in enumerate(env.catalogue) if _is_piece(e)]
    assert not env.action_masks()[pieces].any(), "no claim yet: nothing to append to"
    topo = env.unwrapped.episode.backend.call("get_topology", {}).data
    devices = {d for n in topo["nodes"].values() for d in n["disks"]}
    reads = [i for i, e in enumerate(env.catalogue) if load_tools()[e.tool].kind == "read"]
    listings = [i for i in reads if env.catalogue[i].tool in _LISTINGS]
    env.step(_index(env, f"submit_diagnosis(root_causes=[{_claim_text('web_server', 'misconfiguration')}])"))
    rng = np.random.default_rng(5)
    texts, kinds = [], set()
    for _ in range(60):
        pool = np.flatnonzero(env.action_masks()[pieces])
        some = [i for i in (listings if rng.random() < 0.6 else reads) if env.action_masks()[i]]
        i = int(pieces[rng.choice(pool)]) if rng.random() < 0.2 and len(pool) else int(rng.choice(some))
        obs, _, terminated, truncated, info = env.step(i)
        assert not info["invalid"], (task, env.action_text(i), obs)
        texts.append(obs)
        if terminated or truncated:
            break
        history = "\n".join(texts)
        claims = env._memory.claims()
        detail = claims[-1]["detail"]
        for j in np.flatnonzero(env.action_masks()[pieces]):
            after = env.actions[pieces[j]]["args"]["root_causes"]
            assert claims[:-1] == after[:-1] and after[-1]["detail"].startswith(detail)
            piece = after[-1]["detail"][len(detail):].strip()
            assert _piece_shown(piece, history, devices), (task, piece)
            kinds.add(type(env.catalogue[pieces[j]].args[0][1].piece).__name__)
    assert kinds == {"str", "DiskSlot", "Seen"}, f"{task}: the reads never showed a value to append"


def _entry(env: DiscreteActions, text: str) -> int:
    """The index of the catalogue entry whose seed-free text is ``text``."""
    return next(i for i, e in enumerate(env.catalogue) if e.text == text)


def test_a_detail_is_built_a_piece_per_step_on_the_last_claim() -> None:
    """inc-031 has two causes. A piece is masked until there is a claim; then each piece appends to the
    last claim's detail and the first claim keeps its own. A value piece waits for the read that shows it."""
    env = _env("inc-031", seed=0)
    phrase = _entry(env, 'submit_diagnosis(root_causes=<last claims, detail + "too low">)')
    obs, *_, info = env.step(phrase)
    assert info["invalid"] and "root_causes: required argument is missing" in obs
    env.step(_index(env, f"submit_diagnosis(root_causes=[{_claim_text('web_server', 'misconfiguration')}])"))
    env.step(phrase)
    setting = _entry(env, 'submit_diagnosis(root_causes=<last claims, detail + <seen edit 0 of web_server: setting>>)')
    assert not env.action_masks()[setting]
    env.step(_index(env, 'get_changes(service="web_server")'))
    newest = env._memory.rows[("edit", "web_server")][0]
    *_, info = env.step(setting)
    assert not info["invalid"]
    assert env.unwrapped.episode.st.claims == [{"entity": "web_server", "category": "misconfiguration",
                                                "detail": f"too low {newest['key']}={newest['setting'].split('=', 1)[1]}"}]
    node = _node_names(env)[0]
    device = env.unwrapped.episode.backend.call("get_topology", {}).data["nodes"][node]["disks"][1]
    env.step(_index(env, f"submit_diagnosis(root_causes=[{{\"entity\": \"web_server\", \"category\": "
                         f"\"misconfiguration\", \"detail\": \"too low {newest['setting']}\"}}, "
                         f"{_claim_text(node, 'resource_exhaustion')}])"))
    env.step(_entry(env, 'submit_diagnosis(root_causes=<last claims, detail + <disk 1 of node 0>>)'))
    env.step(_entry(env, 'submit_diagnosis(root_causes=<last claims, detail + "disk full">)'))
    assert [c["detail"] for c in env.unwrapped.episode.st.claims] == [f"too low {newest['setting']}",
                                                                       f"{device} disk full"]


def test_an_unseen_value_is_masked_and_stepping_it_is_an_invalid_action() -> None:
    env = _env("inc-053", seed=0)
    i = next(i for i, e in enumerate(env.catalogue) if e.tool == "set_config")
    assert not env.action_masks()[i] and env.action_text(i).startswith('set_config(service="load_balancer", key=<seen')
    obs, _, _, _, info = env.step(i)
    assert info["invalid"] and "key: required argument is missing" in obs
    assert not env.action_masks()[i], "a refused call shows nothing"


def _claim_text(entity: str, category: str) -> str:
    return f'{{"entity": "{entity}", "category": "{category}", "detail": ""}}'


def test_a_second_claim_is_added_to_the_first_of_the_last_submission() -> None:
    """inc-012 has two causes. Before any submission the added claims are masked and stepping one is
    invalid; after one, each adds its claim to the submitted one, and the episode keeps both."""
    env = _env("inc-012", seed=0)
    added = [i for i, e in enumerate(env.catalogue) if _claim_added(e)]
    assert len(added) == len(CATEGORIES) * (len(SERVICE_KINDS) + SEEDED_MAX_NODES)
    assert not env.action_masks()[added].any()
    obs, *_, info = env.step(added[0])
    assert info["invalid"] and "root_causes: required argument is missing" in obs
    first = _claim_text("load_balancer", "misconfiguration")
    *_, info = env.step(_index(env, f"submit_diagnosis(root_causes=[{first}])"))
    assert not info["invalid"] and env.action_masks()[added].all()
    both = f"submit_diagnosis(root_causes=[{first}, {_claim_text('worker', 'code_defect')}])"
    assert both in {env.action_text(i) for i in added}
    *_, info = env.step(_index(env, both))
    assert not info["invalid"]
    assert [(c["entity"], c["category"]) for c in env.unwrapped.episode.st.claims] == [
        ("load_balancer", "misconfiguration"), ("worker", "code_defect")]
    # the first claim stays the first: adding again replaces the second
    again = f"submit_diagnosis(root_causes=[{first}, {_claim_text('worker', 'capacity')}])"
    assert again in {env.action_text(i) for i in added}
    env.reset(seed=0)
    assert not env.action_masks()[added].any(), "a reset forgets the submission"


def test_a_stale_value_is_set_to_the_one_that_replaced_it() -> None:
    """inc-030: the database password rotated and the sync missed the worker. The full history shows
    the rotation, the worker's config the old version; the entry sets the new one, and that mitigates."""
    env = _env("inc-030", seed=0)
    stale = [i for i, e in enumerate(env.catalogue) if e.tool == "set_config" and "stale" in str(dict(e.args)["key"])]
    env.step(_index(env, "get_changes()"))
    assert not env.action_masks()[stale].any(), "the history alone names no key"
    env.step(_index(env, 'get_config(service="worker")'))
    bound = [env.action_text(i) for i in stale if env.action_masks()[i]]
    assert bound == ['set_config(service="worker", key="env.CREDENTIALS_VERSION", value="v8")']
    env.step(_index(env, bound[0]))
    env.step(_index(env, "wait(seconds=300)"))
    *_, info = env.step(_index(env, "resolve()"))
    assert info["result"]["mitigated"] and info["result"]["wrong_fixes"] == 0


def test_a_read_binds_the_revert_of_the_edit_it_listed() -> None:
    """inc-053: the web tier's history lists the edit that cut its threads; the newest web_server edit
    entry becomes that revert, and stepping it mitigates."""
    env = _env("inc-053", seed=0)
    env.step(_index(env, 'get_changes(service="web_server")'))
    newest = env.catalogue.index(next(e for e in env.catalogue if e.tool == "set_config"
                                      and dict(e.args)["service"] == "web_server"))
    assert env.action_masks()[newest]
    assert env.actions[newest] == {"tool": "set_config", "args": {"service": "web_server", "key": "workers",
                                                                  "value": 22}}
    *_, info = env.step(newest)
    assert not info["invalid"]
    env.step(_index(env, 'get_changes(service="web_server")'))  # the agent's own edit is now the newest
    assert env.actions[newest]["args"] == {"service": "web_server", "key": "workers", "value": 1}
    env.step(_index(env, "resolve()"))
    assert env.unwrapped.episode.finish()["mitigated"]


def test_a_listing_that_shows_nothing_unbinds_and_reset_forgets() -> None:
    """inc-024: the locks view names the blocker; once it is terminated, the next locks view shows no
    blocker, so the entry is masked again. A reset forgets everything read."""
    env = _env("inc-024", seed=0)
    locks = _index(env, 'inspect_database(view="locks")')
    first = next(i for i, e in enumerate(env.catalogue) if e.tool == "terminate_session")
    env.step(locks)
    assert env.action_masks()[first] and env.action_text(first).startswith("terminate_session(pid=")
    *_, info = env.step(first)
    assert not info["invalid"]
    env.step(_index(env, 'wait(seconds=60)'))
    env.step(locks)
    assert not env.action_masks()[first]
    env.reset()
    assert not env.action_masks()[[i for i, e in enumerate(env.catalogue) if _has_seen(e)]].any()


def test_deepcopy_keeps_what_was_seen() -> None:
    env = _env("inc-053", seed=0)
    env.step(_index(env, 'get_changes(service="web_server")'))
    twin = copy.deepcopy(env)
    assert twin.actions == env.actions and (twin.action_masks() == env.action_masks()).all()
