"""Environment speed and memory: steps/s, reset time, episodes/s, peak memory, import time.

    python benchmarks/bench_env.py [--episodes-per-task N] [--json]

Run on an otherwise idle machine; figures go into docs/benchmarks.md. Steps are timed around
``env.step`` only (agent time excluded). "step" counts non-final steps; the final step also runs
the verification window and scoring, reported separately as "finish".
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import subprocess
import sys
import time


def _child_ms(code: str, repeat: int = 7) -> float:
    """Best time, measured inside a fresh interpreter, of running ``code`` (ms)."""
    timer = f"import time; t = time.perf_counter(); {code}; print((time.perf_counter() - t) * 1000)"
    runs = [float(subprocess.run([sys.executable, "-c", timer], check=True, capture_output=True, text=True).stdout)
            for _ in range(repeat)]
    return min(runs)


def import_time_ms() -> float:
    """``import srezero`` in a fresh interpreter (the public API is lazy)."""
    return _child_ms("import srezero")


def cold_start_ms() -> float:
    """Fresh interpreter to a paged episode: import, load a task, build the world, reset."""
    return _child_ms("import srezero; srezero.make('inc-001', 0).reset()", repeat=5)


def tick_us(task_ids: list[str], n: int = 1000) -> float:
    """Median over tasks of the best-of-5 cost of one tick of the model (no alerts, no SimPy)."""
    import statistics

    import srezero
    from srezero.sim.model import tick
    from srezero.sim.world import World

    costs = []
    for tid in task_ids:
        w = World.build(srezero.get_task(tid), 0)
        w.advance(300)
        best = float("inf")
        for _ in range(5):
            t = time.perf_counter()
            for _ in range(n):
                tick(w)
            best = min(best, (time.perf_counter() - t) / n * 1e6)
        costs.append(best)
    return statistics.median(costs)


def bench_agent(agent_name: str, task_ids: list[str], seeds: range) -> dict[str, float]:
    import srezero
    from srezero.agents import registry
    from srezero.agents.protocol import agent_seed

    step_t = finish_t = reset_t = 0.0
    steps = episodes = 0
    wall = time.perf_counter()
    for tid in task_ids:
        for seed in seeds:
            env = srezero.make(tid, seed)
            t = time.perf_counter()
            obs, _ = env.reset(seed=seed)
            reset_t += time.perf_counter() - t
            agent = registry.create(agent_name)
            agent.reset(env.briefing, agent_seed(seed), env.tool_specs())
            if getattr(agent, "wants_ground_truth", False):
                agent.bind_oracle(env.oracle_plan())
            done = False
            while not done:
                action = agent.act(obs)
                t = time.perf_counter()
                obs, _r, terminated, truncated, _info = env.step(action)
                dt = time.perf_counter() - t
                done = terminated or truncated
                if done:
                    finish_t += dt
                else:
                    step_t += dt
                    steps += 1
            episodes += 1
    wall = time.perf_counter() - wall
    return {
        "agent": agent_name,
        "episodes": episodes,
        "steps": steps,
        "steps_per_s": steps / step_t if step_t else 0.0,
        "step_us": step_t / max(steps, 1) * 1e6,
        "reset_ms": reset_t / episodes * 1000,
        "finish_ms": finish_t / episodes * 1000,
        "episodes_per_s": episodes / wall,
    }


def discrete_overhead_us(task_ids: list[str], steps: int = 60) -> float | None:
    """What ``srezero/IncidentDiscrete-v0`` adds to a step (us): masked random play, the wrapper's step
    timed minus the text env's step inside it, in the same pass. None without gymnasium."""
    try:
        import numpy as np

        from srezero.adapters.gym_discrete import make_discrete_env
    except ImportError:
        return None
    inner_t = outer_t = 0.0
    count = 0
    for k, tid in enumerate(task_ids):
        env, rng = make_discrete_env(tid, seed=0, reward="sparse"), np.random.default_rng(k)
        text_step = env.env.step

        def timed(action: object, text_step: object = text_step) -> object:
            nonlocal inner_t
            t = time.perf_counter()
            out = text_step(action)
            inner_t += time.perf_counter() - t
            return out

        env.env.step = timed
        _, info = env.reset()
        for _ in range(steps):
            i = int(rng.choice(np.flatnonzero(info["action_mask"])))
            t = time.perf_counter()
            _, _, terminated, truncated, info = env.step(i)
            outer_t += time.perf_counter() - t
            count += 1
            if terminated or truncated:
                break
    return (outer_t - inner_t) / max(count, 1) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--episodes-per-task", type=int, default=10)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    import srezero

    task_ids = [t.id for t in srezero.list_tasks()]
    bench_agent("random", task_ids[:2], range(2))  # warm caches and imports
    gc.collect()
    rows = [bench_agent(a, task_ids, range(args.episodes_per_task)) for a in ("oracle", "random")]
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out = {"tasks": len(task_ids), "import_ms": import_time_ms(), "cold_start_ms": cold_start_ms(),
           "tick_us": tick_us(task_ids[:: max(1, len(task_ids) // 8)]),
           "discrete_overhead_us": discrete_overhead_us(task_ids[:: max(1, len(task_ids) // 8)]),
           "peak_rss_mb": peak_mb, "agents": rows,
           "python": sys.version.split()[0]}
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"tasks: {out['tasks']}   python {out['python']}   import srezero: {out['import_ms']:.1f} ms   "
          f"cold start to first page: {out['cold_start_ms']:.0f} ms   tick: {out['tick_us']:.1f} us   "
          f"peak RSS: {peak_mb:.0f} MB")
    if out["discrete_overhead_us"] is not None:
        print(f"IncidentDiscrete-v0 wrapper: {out['discrete_overhead_us']:.1f} us per step on top of the text env")
    print(f"{'agent':8} {'episodes':>8} {'steps':>7} {'steps/s':>9} {'step us':>8} {'reset ms':>9} "
          f"{'finish ms':>10} {'episodes/s':>11}")
    for r in rows:
        print(f"{r['agent']:8} {r['episodes']:>8} {r['steps']:>7} {r['steps_per_s']:>9.0f} {r['step_us']:>8.1f} "
              f"{r['reset_ms']:>9.2f} {r['finish_ms']:>10.2f} {r['episodes_per_s']:>11.1f}")


if __name__ == "__main__":
    main()
