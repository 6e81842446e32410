"""A small run in the sweep's record layout, shared by the report tests.

The run: 3 tasks x 2 seeds x (oracle, random), one "LLM" agent whose records carry usage and cost
(random play with a usage block, so no endpoint is needed), and one provider-error record.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import srezero

TASKS = ("inc-001", "inc-002", "inc-003")
SEEDS = (0, 1)
LLM = "llm-fake@m1"


def _record(agent: str, task: str, seed: int, name: str) -> dict[str, Any]:
    from srezero.agents import registry
    from srezero.agents.runner import run_episode

    # random play that never resolves early: it runs into its budget and makes invalid actions on every
    # seed, so the plots of errors are not empty whichever seeds the agent is handed
    bot = registry.create(name, resolve_p=0.0) if name == "random" else registry.create(name)
    rec = run_episode(srezero.make(task, seed), bot, seed)
    rec.setdefault("status", "ok")
    rec.setdefault("error", None)
    rec.update(agent=agent, agent_name=name, schema=1)
    return rec


def write_run(out: Path, with_llm: bool = True) -> list[dict[str, Any]]:
    """Write records (and a manifest) the way `srezero sweep` lays them out; returns the records."""
    from srezero.sweep.records import dumps, record_path, write_json

    recs = [_record(agent, t, s, agent) for agent in ("oracle", "random") for t in TASKS for s in SEEDS]
    if with_llm:
        for i, (t, s) in enumerate(((TASKS[0], 0), (TASKS[1], 1))):
            rec = _record(LLM, t, s, "random")
            rec["usage"] = {"calls": 9 + i, "prompt_tokens": 1000 * (i + 1), "completion_tokens": 100,
                            "cost_usd": 0.0125 * (i + 1), "provider_errors": i, "retries": i, "malformed": 0,
                            "latency_s": 1.5}
            recs.append(rec)
        recs.append({"agent": LLM, "agent_name": "llm-react", "task_id": TASKS[2], "seed": 0, "schema": 1,
                     "status": "provider_error", "error": "APIConnectionError: connection refused", "result": None,
                     "trajectory": [], "usage": {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0,
                                                 "cost_usd": 0.0, "provider_errors": 4, "retries": 3}})
    for rec in recs:
        p = record_path(out, rec["agent"], rec["task_id"], rec["seed"])
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(dumps(rec))
    infos = {t.id: t for t in srezero.list_tasks()}
    write_json(out / "manifest.json", {
        "schema": 1, "srezero_version": srezero.__version__, "git_revision": None, "python": "3.11", "platform": "test",
        "tasks": {t: {"hash": "sha256:0", "difficulty": infos[t].difficulty, "split": infos[t].split, "tags": []}
                  for t in TASKS},
        "agents": {"oracle": {"name": "oracle", "settings": {"upper_bound": True}},
                   "random": {"name": "random", "settings": {}}, LLM: {"name": "llm-react", "settings": {}}},
        "seeds": list(SEEDS)})
    return recs
