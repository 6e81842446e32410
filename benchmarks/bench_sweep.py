"""Sweep throughput and scaling: the default sweep, then 1,000 and 10,000 episodes.

    python benchmarks/bench_sweep.py [--workers N] [--sizes 1000,10000] [--full-sizes 1000] [--json]

Three measurements, each in a fresh temporary run directory:

* ``default``: ``srezero sweep --seeds 5`` as the lead runs it (all curated tasks x DEFAULT_SWEEP).
* ``overhead N``: the sweep machinery alone (planning, batching, worker IPC, record serialisation,
  atomic writes, the summary) with every episode replaced by a canned real record, so the figure does
  not move when the simulator gets faster or slower. ``resume`` re-plans the finished run (every
  episode skipped, every row re-read). Per-episode cost must stay flat from 1,000 to 10,000.
* ``full N``: real episodes (agents x tasks x seeds cycling), to see the end-to-end rate.

Wall-clock figures: run on an otherwise idle machine and quote them in docs/baselines.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import srezero
from srezero.agents.registry import DEFAULT_SWEEP
from srezero.sweep import runner


def _specs() -> dict[str, Any]:
    return {t.id: srezero.get_task(t.id) for t in srezero.list_tasks()}


def _grid(n: int, specs: dict[str, Any]) -> tuple[list[runner.AgentSpec], dict[str, Any], list[int]]:
    """Agents x tasks x enough seeds for at least ``n`` episodes."""
    agents = [runner.agent_spec(a) for a in DEFAULT_SWEEP]
    per_seed = len(agents) * len(specs)
    return agents, specs, list(range(-(-n // per_seed)))


def cpu_s() -> float:
    """CPU seconds of this process and its reaped children (robust to a busy machine, unlike wall time)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def timed_sweep(out: Path, agents: list[runner.AgentSpec], specs: dict[str, Any], seeds: list[int],
                workers: int) -> tuple[float, float, int]:
    t, c = time.perf_counter(), cpu_s()
    res = runner.sweep(out, agents, specs, seeds, workers=workers, progress=False)
    return time.perf_counter() - t, cpu_s() - c, res.total


def bench_default(workers: int, specs: dict[str, Any]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as d:
        agents = [runner.agent_spec(a) for a in DEFAULT_SWEEP]
        wall, cpu, n = timed_sweep(Path(d), agents, specs, list(range(5)), workers)
    return {"episodes": n, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "episodes_per_s": round(n / wall, 1),
            "cpu_ms_per_episode": round(cpu / n * 1000, 2)}


def bench_overhead(n: int, workers: int, specs: dict[str, Any]) -> dict[str, Any]:
    """The machinery alone: episodes are a canned record (patched in before the workers fork)."""
    sample = runner.episode_record(next(iter(specs.values())), "sha256:0", runner.agent_spec("runbook"), 0, None)
    real = runner.episode_record

    def canned(spec: Any, thash: str, agent: runner.AgentSpec, seed: int, max_steps: int | None) -> dict[str, Any]:
        return {**sample, "agent": agent.label, "agent_name": agent.name, "task_id": spec.id, "seed": seed,
                "task_hash": thash}

    runner.episode_record = canned
    try:
        with tempfile.TemporaryDirectory() as d:
            agents, specs_, seeds = _grid(n, specs)
            wall, cpu, total = timed_sweep(Path(d), agents, specs_, seeds, workers)
            t = time.perf_counter()
            runner.sweep(Path(d), agents, specs_, seeds, workers=workers, progress=False)
            resume = time.perf_counter() - t
            t = time.perf_counter()
            runner.summarise_dir(Path(d))
            summary = time.perf_counter() - t
    finally:
        runner.episode_record = real
    return {"episodes": total, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
            "cpu_us_per_episode": round(cpu / total * 1e6), "resume_s": round(resume, 2),
            "summary_only_s": round(summary, 2)}


def bench_full(n: int, workers: int, specs: dict[str, Any]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as d:
        agents, specs_, seeds = _grid(n, specs)
        wall, cpu, total = timed_sweep(Path(d), agents, specs_, seeds, workers)
    return {"episodes": total, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
            "episodes_per_s": round(total / wall, 1), "cpu_ms_per_episode": round(cpu / total * 1000, 2)}


def _sizes(ap: argparse.ArgumentParser, flag: str, text: str) -> list[int]:
    """Comma-separated positive episode counts ('' for none)."""
    try:
        sizes = [int(n) for n in text.split(",") if n.strip()]
    except ValueError:
        ap.error(f"{flag}: {text!r} is not a comma-separated list of episode counts")
    if any(n < 1 for n in sizes):
        ap.error(f"{flag}: episode counts must be at least 1 (pass '' to skip)")
    return sizes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--sizes", default="1000,10000", help="episode counts for the overhead scaling")
    ap.add_argument("--full-sizes", default="1000", help="episode counts with real episodes ('' to skip)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    sizes, full_sizes = _sizes(ap, "--sizes", args.sizes), _sizes(ap, "--full-sizes", args.full_sizes)
    specs = _specs()
    report: dict[str, Any] = {"workers": args.workers, "tasks": len(specs), "agents": list(DEFAULT_SWEEP)}
    report["default"] = bench_default(args.workers, specs)
    report["overhead"] = [bench_overhead(n, args.workers, specs) for n in sizes]
    report["full"] = [bench_full(n, args.workers, specs) for n in full_sizes]
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    d = report["default"]
    print(f"workers={args.workers} tasks={len(specs)} agents={','.join(DEFAULT_SWEEP)}")
    print(f"default sweep (--seeds 5): {d['episodes']} episodes in {d['wall_s']} s wall ({d['episodes_per_s']} ep/s), "
          f"{d['cpu_s']} s CPU ({d['cpu_ms_per_episode']} ms/episode)")
    for o in report["overhead"]:
        print(f"overhead {o['episodes']:>6} episodes: {o['wall_s']:>6} s wall  {o['cpu_s']:>6} s CPU  "
              f"{o['cpu_us_per_episode']:>5} us CPU/episode  resume {o['resume_s']} s  summary-only {o['summary_only_s']} s")
    for f in report["full"]:
        print(f"full     {f['episodes']:>6} episodes: {f['wall_s']:>6} s wall  {f['episodes_per_s']} ep/s  "
              f"{f['cpu_ms_per_episode']} ms CPU/episode")
    return 0


if __name__ == "__main__":
    sys.exit(main())
