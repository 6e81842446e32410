"""What every adapter shares: self-contained tool schemas, the agent instructions, episode records.

No framework imports here: this module is the part of the adapters that ``import srezero``-light
code (the CLI, tests) may load without any optional extra installed.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from srezero.tools.registry import load_tools

if TYPE_CHECKING:
    from srezero.episode import Episode

def _state_home() -> Path:
    import os

    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "srezero" / "runs"


#: Default directory of records written by front ends that run one episode at a time (MCP). It is
#: outside the working directory on purpose: a record holds the ground truth, and an MCP client's
#: agent can read its workspace, so a record there would leak the answer to the next seed.
DEFAULT_RUNS_DIR = _state_home()

INSTRUCTIONS = """\
You are the on-call site-reliability engineer for a small production system (load balancer, web \
servers, cache, database with a replica, message queue and workers, on a few nodes). You have been \
paged. Investigate with the read tools, mitigate with the write tools (their effects take simulated \
time and every write has consequences), then call submit_diagnosis with the root causes (entity + \
category + concrete detail) and finally resolve. Every tool call, valid or not, costs one step of \
the budget and some simulated time; invalid calls are penalised. The episode ends at resolve or \
when a budget runs out."""


def inline_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of a tool's JSON schema with every local ``$ref`` expanded and ``$defs``/titles dropped.

    Some front ends (inspect's ToolParams, several MCP clients) do not follow ``$ref``; the
    declaration's schemas are small and acyclic, so inlining is exact.
    """
    defs = schema.get("$defs", {})

    def expand(node: Any, depth: int = 0) -> Any:
        if depth > 32:
            raise ValueError("tool schema nests too deeply (a recursive $ref?)")
        if isinstance(node, list):
            return [expand(v, depth + 1) for v in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            merged = {**defs[ref.removeprefix("#/$defs/")], **{k: v for k, v in node.items() if k != "$ref"}}
            return expand(merged, depth + 1)
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("$defs", "title"):
                continue
            if key == "properties" and isinstance(value, dict):  # property names are data, not keywords
                out[key] = {name: expand(sub, depth + 1) for name, sub in value.items()}
            else:
                out[key] = expand(value, depth + 1)
        return out

    return expand(copy.deepcopy(schema))


def tool_declarations() -> list[dict[str, Any]]:
    """Every tool as ``{"name", "description", "parameters", "kind", "cost_s"}``, schemas inlined.

    A fresh copy per call (callers may mutate it), decoded from a cached encoding because adapters
    call this on every reset."""
    return orjson.loads(_encoded_declarations(tuple(load_tools())))


@functools.cache
def _encoded_declarations(names: tuple[str, ...]) -> bytes:
    tools = load_tools()
    return orjson.dumps([{"name": tools[n].name, "description": tools[n].description,
                          "parameters": inline_schema(tools[n].schema), "kind": tools[n].kind,
                          "cost_s": tools[n].cost_s} for n in names])


def episode_record(env: Episode, agent: str) -> dict[str, Any]:
    """The record of a finished episode, with the keys sweeps write (docs/records.md), so
    ``srezero report`` and the sweep statistics read it like any other."""
    from srezero.sweep.records import SCHEMA, task_hash

    # episode_id is what `--agent replay` matches a run directory on; a front end's agent is never
    # handed the ground truth, so its records rank with the baselines
    return {"schema": SCHEMA, "agent": agent, "agent_name": agent, "task_id": env.spec.id,
            "task_hash": task_hash(env.spec), "seed": env.seed, "episode_id": env.episode_id,
            "privileged": False, "status": "ok", "error": None, "result": env.result,
            "trajectory": env.trajectory}


def default_record_path(front_end: str, task_id: str, seed: int) -> Path:
    """``$XDG_STATE_HOME/srezero/runs/<front_end>/episodes/...``: a run directory reports can read."""
    from srezero.sweep.records import record_path

    return record_path(DEFAULT_RUNS_DIR / front_end, front_end, task_id, seed)


def write_record(path: str | Path, record: dict[str, Any]) -> Path:
    """Write a record atomically with the sweep's canonical bytes; returns the path written. A value JSON
    cannot hold never loses the record: it is written as the sweep writes one (``dumps_episode``)."""
    from srezero.sweep.records import dumps_episode, write_atomic

    path = Path(path)
    write_atomic(path, dumps_episode(record)[1])
    return path


#: How an episode ended (:meth:`Episode.end_cause`), in words an agent reads after the end.
END_WORDS = {"resolve": "resolved", "step_budget": "the step budget is used up",
             "time_budget": "the time budget is used up", "stopped": "stopped before resolve"}


def budget_line(env: Episode, obs: Any) -> str:
    """What every front end appends to a tool result: the budget left, or how the episode ended
    (MCP adds the marks to the latter; the score never reaches the agent before the end)."""
    if obs.done:
        return f"[episode ended: {END_WORDS.get(env.end_cause() or '', 'ended')}]"
    return f"[step {obs.step} of {env.spec.budget.steps}; {obs.time_left_s / 60:.1f} min of simulated time left]"


def summary_line(result: dict[str, Any]) -> str:
    """One line an agent may read after the end: the score, no ground truth."""
    return (f"marks {result['marks']:.1f}/100, success={result['success']}, "
            f"diagnosis={result['diagnosis']['score']:.2f}, mitigated={result['mitigated']}, "
            f"steps={result['steps']}")
