"""No observation reveals the ground truth: no fault names, ids, spoiler text or hidden fields."""

from __future__ import annotations

import inspect
import itertools
import re
from collections.abc import Iterator
from typing import Annotated, Any

import pytest

import srezero
from srezero.episode import Episode
from srezero.faults.base import load_all
from srezero.tools.context import ToolContext
from srezero.tools.registry import TOOLS, ToolError, ToolOutput, ToolSpec, load_tools
from tests.conftest import play

FORBIDDEN_WORDS = ("ground truth", "ground_truth", "root cause:", "injected", "fault_id", "primitive", "oracle",
                   "spoiler", "correct fix", "is_correct")


def _forbidden(task_id: str) -> list[str]:
    spec = srezero.get_task(task_id)
    words = [*list(FORBIDDEN_WORDS), spec.title]
    words += [name for name in load_all()]  # primitive names
    # sentences of the spoiler description (long enough to be distinctive)
    words += [s.strip() for s in re.split(r"[.;\n]", spec.description) if len(s.strip()) > 40]
    return [w.lower() for w in words]


@pytest.mark.parametrize("agent", ["oracle", "random"])
def test_observations_do_not_leak(task_ids, agent) -> None:
    for task in task_ids:
        forbidden = _forbidden(task)
        for seed in (0, 1):
            env = srezero.make(task, seed)
            obs, info = env.reset()
            texts = [obs.text, str(info["briefing"])]
            rec = play(task, seed, agent)
            texts += [t["text"] for t in rec["trajectory"]]
            blob = "\n".join(texts).lower()
            for word in forbidden:
                assert word not in blob, f"{task} seed {seed}: observation contains {word!r}"
            assert task not in blob, f"{task}: the task id appears in an observation"


# ---------------------------------------------------------------- every read tool, every target
#
# What the oracle and random agents happen to read covers only the tools a fault's signals name (and
# random's rare valid calls), so a new read tool that printed a fault's name would pass the test
# above. The sweep below calls every read tool in the registry with arguments derived from its
# declaration (its JSON schema and target_arg) and the world's entities, on every curated task: seed
# 0 at the page, seed 1 ten simulated minutes later, once the fault has had time to grow (every
# seed at both moments doubles the cost, about 6 s of CPU, for little more).

CURATED = [t.id for t in srezero.list_tasks()]
SWEEPS = ((0, 0), (1, 600))  # (seed, seconds after the page)


def _hidden(env: Episode) -> list[str]:
    """What no observation may contain: the words and texts of :func:`_forbidden`, the task id, each
    root cause's detail sentence, and the task's fault target selectors (``node(database.primary)``)."""
    words = [*_forbidden(env.spec.id), env.spec.id.lower()]
    words += [rc["detail"].lower() for rc in env.ground_truth() if len(rc["detail"]) > 20]
    words += [f.target.lower() for f in env.spec.faults if re.search(r"[(\[]", f.target)]
    return words


def _values(spec: ToolSpec, name: str, prop: dict[str, Any], required: bool, entities: list[str],
            metrics: list[str]) -> list[Any]:
    """The values the sweep passes for one argument, from its JSON schema.

    An enum gives all of its values, a boolean both; a number, or an optional union, its default. The entity argument
    (``target_arg``) gets every entity name (services, replicas, nodes, disks; invalid ones are error
    observations, also checked) plus its default (usually "" for "all"); another required string
    gets every metric name (``query_metrics(metric)``), an optional one its default. An argument
    none of these fit is a new case: teach this function about it.
    """
    if "enum" in prop:
        return list(prop["enum"])
    if "anyOf" in prop and "default" in prop:  # an optional number or null (wait's watch bounds): its default
        return [prop["default"]]
    kind = prop.get("type")
    if kind == "boolean":
        return [False, True]
    if kind in ("integer", "number"):
        return [prop["default"] if "default" in prop else prop.get("minimum", 1)]
    if kind == "string":
        default = [prop["default"]] if "default" in prop else []
        if name == spec.target_arg:
            return default + entities
        if required:
            return metrics
        if default:
            return default
    raise AssertionError(f"{spec.name}({name}): the leak sweep has no values for a {kind} argument {prop}; "
                         "add a pool for it to _values in tests/test_no_leak.py")


def _calls(spec: ToolSpec, entities: list[str], metrics: list[str]) -> list[dict[str, Any]]:
    """Every combination of :func:`_values` over the tool's arguments."""
    props = spec.schema["properties"]
    required = set(spec.schema["required"])
    pools = [_values(spec, k, p, k in required, entities, metrics) for k, p in props.items()]
    return [dict(zip(props, combo)) for combo in itertools.product(*pools)]


def _strings(data: Any) -> Iterator[str]:
    """The text in a tool's structured ``data``: its keys and string values (numbers say no names)."""
    if isinstance(data, str):
        yield data
    elif isinstance(data, dict):
        for key, value in data.items():
            yield str(key)
            yield from _strings(value)
    elif isinstance(data, list | tuple):
        for value in data:
            yield from _strings(value)


def _sweep(env: Episode, seen: dict[str, set[str]], lines: dict[str, tuple[str, dict[str, Any]]]) -> None:
    """Call every read tool with every derived argument set, the way an episode runs it (validate,
    then the backend). Every line an agent could read (each text, each error, the strings of each
    ``data``) goes into ``lines``, with the first call that showed it; ``seen`` collects, per tool, the
    entities of its valid calls ("" for a call aimed at none)."""
    w = env.world
    names = w.entity_names()
    entities = [n for kind in ("service", "replica", "node", "disk") for n in names[kind]]
    metrics = sorted({m for _entity, m in w.row_of})
    for name, spec in load_tools().items():
        if spec.kind != "read":
            continue
        for args in _calls(spec, entities, metrics):
            try:
                out = env.backend.call(name, spec.validate(args))
            except ToolError as exc:
                texts = [str(exc)]
            else:
                seen.setdefault(name, set()).add(str(args.get(spec.target_arg, "")) if spec.target_arg else "")
                texts = [out.text, *_strings(out.data)]
            for text in texts:  # log lines repeat across calls: keep each once
                for line in text.splitlines():
                    lines.setdefault(line, (name, args))


def _leaks(task: str, seed: int, after_s: int = 0) -> tuple[list[str], dict[str, set[str]], dict[str, list[str]]]:
    """Sweep the read tools on one episode ``after_s`` seconds after the page; return what leaked
    (one line each), the entities each tool answered for, and the world's entities by kind."""
    env = srezero.make(task, seed)
    env.reset()
    if after_s:
        env.step({"tool": "wait", "args": {"seconds": after_s}})
    seen: dict[str, set[str]] = {}
    lines: dict[str, tuple[str, dict[str, Any]]] = {}
    _sweep(env, seen, lines)
    blob = "\n".join(lines).lower()
    found = []
    for word in (w for w in _hidden(env) if w in blob):  # then say where
        found += [f"{task} seed {seed} +{after_s}s: {word!r} in {tool}({args}): {line[:200]!r}"
                  for line, (tool, args) in lines.items() if word in line.lower()]
    return found, seen, env.world.entity_names()


@pytest.mark.parametrize("task", CURATED)
def test_no_read_tool_leaks_on_any_target(task: str) -> None:
    reads = {n: t for n, t in load_tools().items() if t.kind == "read"}
    for seed, after_s in SWEEPS:
        found, seen, names = _leaks(task, seed, after_s)
        assert not found, "\n".join(found[:10])
        # the sweep reached every read tool with valid arguments, each aimed tool on some entity, and
        # every service, replica and node through some tool: otherwise its arguments are wrong
        assert set(reads) <= set(seen), f"read tools never called validly: {set(reads) - set(seen)}"
        assert all(seen[n] - {""} for n, t in reads.items() if t.target_arg), seen
        reached = set().union(*seen.values())
        assert not [e for kind in ("service", "replica", "node") for e in names[kind] if e not in reached]


@pytest.fixture()
def leaky_iostat() -> Iterator[str]:
    """The reviewer's case: a new read tool no fault signal names, that prints a fault's primitive."""
    load_tools()

    def iostat(ctx: ToolContext, node: Annotated[str, "node name"],
               device: Annotated[str, "a block device; empty for all"] = "") -> ToolOutput:
        """Per-device I/O statistics of a node (test tool)."""
        if node not in ctx.world.topo.node_by_name:
            raise ToolError(f"unknown node {node!r}")
        faults = ", ".join(f.spec.primitive for f in ctx.world.faults)
        return ToolOutput(f"{node} nvme1n1 r/s 10 w/s 20 %util 5.0 (ground truth: {faults})")

    # a name no one adds for real (docs/extending.md's example read tool is an ``iostat``), and whatever
    # sat under it is put back: a user review found a real ``iostat`` gone for the rest of the process
    name = "zz_leaky_iostat"
    before = TOOLS.get(name)
    TOOLS[name] = ToolSpec(name, "Per-device I/O statistics", "read", 10, iostat,
                           list(inspect.signature(iostat).parameters.values())[1:], target_arg="node")
    try:
        yield name
    finally:
        if before is None:
            TOOLS.pop(name, None)
        else:
            TOOLS[name] = before


def test_the_sweep_catches_a_new_leaky_read_tool(leaky_iostat: str) -> None:
    """The agents' test above misses it (no signal names the tool, so the oracle never calls it); the
    sweep calls it on every node, with valid arguments, and reports each leaking call."""
    task = "inc-001"
    assert all(step["tool"] != leaky_iostat for step in play(task, 0, "oracle")["trajectory"])
    found, seen, names = _leaks(task, 0)
    nodes = set(names["node"])
    assert seen[leaky_iostat] == nodes
    assert found and all("'ground truth'" in f or "'crash_loop'" in f for f in found), found[:3]
    assert {n for n in nodes if any(n in f for f in found)} == nodes


def test_briefing_is_opaque(task_ids) -> None:
    for task in task_ids:
        env = srezero.make(task, 0)
        _, info = env.reset()
        assert task not in str(info) and srezero.get_task(task).title not in str(info)


def test_shaped_rewards_do_not_announce_a_control_task() -> None:
    """A control task's evidence is generic first reads (alerts, edge and tier metrics); paying for them
    at once would say "nothing is broken" on step one. They pay at the end, and the rewards still sum
    to marks / 100."""
    from srezero.faults.noise import FALSE_ALARMS

    controls = [t.id for t in srezero.list_tasks() if srezero.get_task(t.id).ground_truth.no_fault]
    assert len(controls) >= 2
    for task in controls:
        extra = srezero.get_task(task).noise.extra
        evidence = [f'query_metrics(target="{e}", metric="{m}")'
                    for name, reads in FALSE_ALARMS.items() if extra.get(name) for e, m in reads]
        assert evidence, task
        first_reads = ["get_alerts()", *evidence, "get_topology()"]
        env = srezero.make(task, 0)
        env.reset()
        rewards = [env.step(a)[1] for a in first_reads]
        assert rewards == [0.0] * len(first_reads), (task, rewards)
        env.step({"tool": "submit_diagnosis", "args": {"root_causes": []}})
        _obs, last, _term, _trunc, info = env.step("resolve()")
        assert info["result"]["evidence_coverage"] == 1.0  # the reads were evidence, paid at the end
        assert sum(rewards) + last == pytest.approx(info["result"]["marks"] / 100, abs=1e-9)


def test_a_control_task_shares_its_page_and_budget_with_a_faulty_task() -> None:
    """The first page shows the alert and the budget: a pair only a control has would mark it."""
    specs = [srezero.get_task(t.id) for t in srezero.list_tasks()]
    faulty = {(s.alert.name, s.budget.steps, s.budget.time_s) for s in specs if not s.ground_truth.no_fault}
    for s in specs:
        if s.ground_truth.no_fault:
            assert (s.alert.name, s.budget.steps, s.budget.time_s) in faulty, s.id
