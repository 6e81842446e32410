"""Plan and run a sweep: tasks x agents x seeds, batched over processes or Ray, resumably.

Why batches: starting a process or a Ray task per episode costs more than the episode (a few ms),
so pending episodes are cut into batches of about ``MAX_BATCH`` and each worker task runs a whole
batch. Jobs run seed by seed, each (task, seed) with all its agents, so a sweep stopped early has
whole cells that its agents can be compared on. Why per-episode files written by the worker: a
killed sweep loses only the episodes in flight, and a rerun skips every record that exists. On Ray the driver writes the records
(workers may not share the driver's file system), so a kill loses the batches in flight.

Nothing here reads the wall clock except the progress bar, and nothing of the progress bar reaches
a record or the summary. Where batches run is executors.py; one sweep at a time per run directory, lock.py.
"""

from __future__ import annotations

import inspect
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from srezero.sweep import records as rec
from srezero.sweep.progress import Progress

MAX_BATCH = 32


@dataclass(frozen=True)
class AgentSpec:
    """An agent as the sweep runs it: a label (directory name), a registry name and constructor options."""

    label: str
    name: str
    options: tuple[tuple[str, Any], ...] = ()

    def create(self) -> Any:
        from srezero.agents import registry

        return registry.create(self.name, **dict(self.options))


@dataclass
class Batch:
    """One worker task: the task specs and agents it needs, its jobs, and where to write (None: return bytes)."""

    specs: dict[str, Any]
    agents: dict[str, AgentSpec]
    jobs: list[tuple[str, str, int]]
    out: str | None
    max_steps: int | None = None
    owner: int | None = None  # pid of the sweep process; workers stop when it is gone (None: never)

    def orphaned(self) -> bool:
        """True in a worker whose sweep process died (say, killed with SIGKILL): its results have no
        reader, and a rerun of the sweep must not race it for the same record files."""
        return self.owner is not None and os.getpid() != self.owner and os.getppid() != self.owner


@dataclass
class SweepResult:
    out: Path
    total: int
    ran: int
    skipped: int
    rows: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    errors: int = 0  # episodes run by this invocation that ended in a provider, agent or environment error


class SweepStopped(ValueError):
    """The sweep stopped before its end (a provider outage); ``summary`` covers every record on disk."""

    def __init__(self, message: str, summary: dict[str, Any]) -> None:
        super().__init__(message)
        self.summary = summary


#: A sweep stops after this many provider errors in a row: the endpoint is down or the key is wrong, and
#: every further episode would only wait out its retries to record the same failure.
MAX_PROVIDER_ERRORS = 10


def agent_spec(name: str, label: str | None = None, *, agent_args: dict[str, Any] | None = None,
               strict: bool = True, **options: Any) -> AgentSpec:
    """Keep only the options this agent's constructor accepts (so --model reaches LLM agents only).

    ``agent_args`` (``--agent-arg``) are kept even when None; an agent that does not take one is an
    error with ``strict`` (``run``: one agent), else it is left out (a sweep hands them to every agent
    that takes them). Both become ``options``: recorded in the manifest, part of the agent's identity.
    """
    from srezero.agents import registry

    cls = registry.resolve(name)
    params = inspect.signature(cls).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    kept = {k: v for k, v in options.items() if v is not None and (takes_any or k in params)}
    for key, value in (agent_args or {}).items():
        if options.get(key) is not None:
            raise ValueError(f"--agent-arg {key} repeats what another option (--model, --replay, ...) sets; "
                             "give it once")
        if takes_any or key in params:
            kept[key] = value
        elif strict:
            takes = ", ".join(n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))
            raise ValueError(f"--agent-arg {key}: agent {name} does not take it (its constructor takes "
                             f"{takes or 'no arguments'})")
    if label is None:
        model = kept.get("model")
        label = f"{name}@{model}" if model else name.replace(":", ".")
    return AgentSpec(rec.safe(label), name, tuple(sorted(kept.items())))


#: which failure to point a developer at first: their own agent's exception before the rest
_DEBUG_ORDER = ("agent_error", "env_error", "provider_error")


def traceback_command(rows: Iterable[dict[str, Any]], agents: Iterable[AgentSpec],
                      dirs: tuple[str, ...] = ()) -> str | None:
    """``srezero run ... --traceback`` for one failed episode (deterministic choice), or None: the
    sweep records errors without tracebacks (records must be byte-reproducible), so say how to see one.
    ``dirs``: the sweep's ``--tasks-dir`` folders, which ``run`` needs to find the same task."""
    import shlex

    from srezero.agents import registry
    from srezero.commands.llm_options import PARAMS

    # a built-in agent's constructor argument -> the `srezero run` option that sets it (others: --agent-arg)
    run_options = {arg: "--" + param.replace("_", "-") for param, arg in PARAMS} | {"path": "--replay"}

    by_label = {a.label: a for a in agents}
    failed = sorted((_DEBUG_ORDER.index(r["status"]), r["agent"], r["task"], r["seed"]) for r in rows
                    if r["status"] in _DEBUG_ORDER and r["agent"] in by_label)
    if not failed:
        return None
    _, label, task, seed = failed[0]
    agent = by_label[label]
    words = ["srezero", "run", "--task", task, "--seed", str(seed), "--agent", agent.name]
    for d in dirs:
        words += ["--tasks-dir", d]
    builtin = agent.name in registry.BUILTIN  # a user's agent may take `seed` or `model` of any type
    for key, value in agent.options:
        if builtin and key == "reasoning_model" and isinstance(value, bool):
            words.append("--reasoning-model" if value else "--no-reasoning-model")
        elif builtin and key in run_options:
            words += [run_options[key], str(value)]
        else:
            words += ["--agent-arg", f"{key}={_arg_text(value)}"]
    return " ".join(shlex.quote(w) for w in words) + " --traceback"


def _arg_text(value: Any) -> str:
    """VALUE as ``--agent-arg`` reads it back: a plain string stays bare unless it would parse as JSON."""
    import orjson

    if isinstance(value, str):
        try:
            orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return orjson.dumps(value).decode()


def episode_record(spec: Any, thash: str, agent: AgentSpec, seed: int, max_steps: int | None) -> dict[str, Any]:
    """Run one episode and return its full record (nothing raised: failures become a status)."""
    from srezero.agents.runner import run_episode
    from srezero.episode import Episode
    from srezero.sim.dispose import dispose

    try:
        bot = agent.create()
    except Exception as exc:  # a broken agent constructor is that agent's failure, not the sweep's
        bot = _Broken(f"{type(exc).__name__}: {exc}")
    env = Episode(spec, seed, reward=rec.REWARD)
    record = run_episode(env, bot, seed, max_steps=max_steps, catch=True)
    # Nobody else holds this episode: cut its cycles (the world's, and the episode's with its tool
    # context) so both are freed now rather than by a garbage collection during later episodes.
    if env.world is not None:
        dispose(env.world)
    vars(env).clear()
    record.update({"schema": rec.SCHEMA, "agent": agent.label, "agent_name": agent.name, "task_hash": thash})
    return record


class _Broken:
    def __init__(self, message: str) -> None:
        self.message = message

    def reset(self, *args: Any) -> None:
        raise RuntimeError(self.message)


def run_batch(batch: Batch) -> list[tuple[dict[str, Any], bytes | None]]:
    """Worker entry point: run a batch; write each record (or return its bytes when ``out`` is None)."""
    hashes = {tid: rec.task_hash(s) for tid, s in batch.specs.items()}
    out: list[tuple[dict[str, Any], bytes | None]] = []
    for label, tid, seed in batch.jobs:
        if batch.orphaned():
            break
        record, data = rec.dumps_episode(
            episode_record(batch.specs[tid], hashes[tid], batch.agents[label], seed, batch.max_steps))
        if batch.out is not None:
            rec.write_atomic(os.path.join(rec.record_dir(batch.out, label, tid), rec.record_name(seed)), data)
            out.append((rec.row_of(record), None))
        else:
            out.append((rec.row_of(record), data))
    return out


def plan(out: Path, agents: list[AgentSpec], specs: dict[str, Any], seeds: list[int],
         retry_errors: bool = False) -> tuple[list[tuple[str, str, int]], list[Path]]:
    """Split (agent, task, seed) into pending jobs and existing record paths; linear in their number."""
    _distinct_folders("agent labels", [a.label for a in agents])
    _distinct_folders("task ids", list(specs))
    pending: list[tuple[str, str, int]] = []
    done: list[Path] = []
    for a in agents:
        for tid in specs:
            folder = rec.record_dir(out, a.label, tid)
            os.makedirs(folder, exist_ok=True)
            existing = set(os.listdir(folder))  # one listing per folder, not one stat per episode
            for seed in seeds:
                name = rec.record_name(seed)
                p = Path(folder, name)
                if name in existing and not (retry_errors and _failed(p)):
                    done.append(p)
                else:
                    pending.append((a.label, tid, seed))
    return pending, done


def _distinct_folders(what: str, names: list[str]) -> None:
    """Records live in one folder per agent label and task id, named by ``records.safe``, which maps some
    characters to ``_``: two names that map alike (``gen:x`` and a file task ``gen_x``) would share a folder,
    and each would resume from the other's records."""
    by_folder: dict[str, list[str]] = {}
    for name in names:
        by_folder.setdefault(rec.safe(name), []).append(name)
    for folder, same in by_folder.items():
        if len(same) > 1:
            raise ValueError(f"{what} {' and '.join(map(repr, same))} would share the record folder {folder!r}; "
                             "rename one of them")


def _failed(path: Path) -> bool:
    return rec.read_record(path).get("status") != "ok"


def make_batches(jobs: list[tuple[str, str, int]], specs: dict[str, Any], agents: dict[str, AgentSpec],
                 workers: int, out: str | None, max_steps: int | None, owner: int | None = None) -> list[Batch]:
    """Cut the jobs, in order, into batches of consecutive jobs: a sweep orders them seed by seed and
    (task, seed) by (task, seed) with all agents, so batches finish whole cells in that order (a run
    stopped early still compares its agents), and each batch mixes agents. About four batches per
    worker keep the load even."""
    if not jobs:
        return []
    size = max(1, min(MAX_BATCH, -(-len(jobs) // (max(1, workers) * 4))))
    size = -(-size // len(agents)) * len(agents)  # whole cells (all agents of a task and seed) per batch
    out_batches = []
    for start in range(0, len(jobs), size):
        part = jobs[start:start + size]
        tids = {t for _, t, _ in part}
        labels = {a for a, _, _ in part}
        out_batches.append(Batch({t: specs[t] for t in sorted(tids)}, {a: agents[a] for a in sorted(labels)},
                                 part, out, max_steps, owner))
    return out_batches


def sweep(out: str | Path, agents: list[AgentSpec], specs: dict[str, Any], seeds: list[int], workers: int = 1,
          executor: str = "process", ray_address: str | None = None, retry_errors: bool = False,
          max_steps: int | None = None, progress: bool | None = None,
          on_batch: Callable[[int], None] | None = None, allow_mixed: bool = False,
          max_provider_errors: int | None = MAX_PROVIDER_ERRORS) -> SweepResult:
    """Run every pending (agent, task, seed) into ``out``, then write the summary. Resumable; one sweep at a
    time per run directory (``lock.RunDirBusy``, a ValueError, for a second one)."""
    from srezero.sweep.lock import locked

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    with locked(out):
        return _sweep(out, agents, specs, seeds, workers, executor, ray_address, retry_errors, max_steps, progress,
                      on_batch, allow_mixed, max_provider_errors)


def _sweep(out: Path, agents: list[AgentSpec], specs: dict[str, Any], seeds: list[int], workers: int,
           executor: str, ray_address: str | None, retry_errors: bool, max_steps: int | None,
           progress: bool | None, on_batch: Callable[[int], None] | None, allow_mixed: bool,
           max_provider_errors: int | None) -> SweepResult:
    from srezero.sweep import stats
    from srezero.sweep.executors import WorkerLost, execute

    rec.clean_tmp(out)
    by_label = {a.label: a for a in agents}
    manifest = rec.merge_manifest(rec.load_manifest(out), rec.new_manifest(
        {tid: task_meta(s) for tid, s in specs.items()},
        {a.label: agent_meta(a) for a in agents}, seeds, max_steps), allow_mixed)
    rec.write_json(out / rec.MANIFEST, manifest)
    pending, done = plan(out, agents, specs, seeds, retry_errors)
    # seed by seed, each (task, seed) with all its agents: batches are consecutive runs of whole cells, so a
    # run stopped halfway has its first seeds done for every agent, and its agents can be compared on them
    task_order = {t: i for i, t in enumerate(specs)}
    agent_order = {a.label: i for i, a in enumerate(agents)}
    pending.sort(key=lambda job: (job[2], task_order[job[1]], agent_order[job[0]]))
    rows = [rec.row_of(r) for r in _load(done)]
    # the summary covers the whole run directory, not just what this invocation asked for (a rerun with
    # one more agent, or fewer seeds, must not shrink it); read the rest now, so a record that cannot be
    # counted stops the sweep before it spends anything
    planned = {rec.record_path(out, a, t, s) for a, t, s in pending} | set(done)
    others = [rec.row_of(r) for r in _load(p for p in rec.record_paths(out) if p not in planned)]
    total = len(pending) + len(done)
    ray_mode = executor == "ray"
    batches = make_batches(pending, specs, by_label, workers, None if ray_mode else str(out), max_steps,
                           None if ray_mode else os.getpid())  # Ray workers are not our children
    bar = Progress(total, initial=len(done), enabled=progress)
    streak = errors = 0
    stop: str | None = None
    try:
        for results in execute(batches, workers, executor, ray_address):
            for row, data in results:
                if data is not None:
                    rec.write_atomic(rec.record_path(out, row["agent"], row["task"], row["seed"]), data)
                rows.append(row)
                errors += row["status"] != "ok"
                streak = streak + 1 if row["status"] == "provider_error" else 0
                if max_provider_errors and streak >= max_provider_errors and stop is None:
                    stop = (f"stopped after {streak} provider errors in a row (the last: {row['agent']} on "
                            f"{row['task']} seed {row['seed']}); the endpoint looks down or the key is wrong. Fix it "
                            "and rerun the same command with --retry-errors: what was recorded is kept")
            bar.update(len(results))
            if on_batch is not None:
                on_batch(len(results))
            if stop is not None:
                break
    except KeyboardInterrupt:
        summarise_dir(out)  # from disk: a worker cut off mid-batch has written records it never reported
        raise
    except WorkerLost as exc:
        stop = str(exc)
    finally:
        bar.close()
    if stop is not None:
        raise SweepStopped(stop, summarise_dir(out))
    summary = write_summary(out, rows + others, stats)
    return SweepResult(out, total, len(pending), len(done), rows, summary, errors)


def _load(paths: Iterable[Path]) -> Iterator[dict[str, Any]]:
    for p in paths:
        yield rec.read_record(p)


def write_summary(out: Path, rows: list[dict[str, Any]], stats: Any = None) -> dict[str, Any]:
    """summary.json, summary.csv and episodes.csv from per-episode rows (sorted: order-independent)."""
    if stats is None:
        from srezero.sweep import stats
    rows = sorted(rows, key=lambda r: (r["agent"], r["task"], r["seed"]))
    summary = stats.summarise(rows)
    rec.write_json(out / rec.SUMMARY_JSON, summary)
    header, table = stats.csv_rows(summary)
    rec.write_csv(out / rec.SUMMARY_CSV, header, table)
    rec.write_episodes_csv(out, rows, (rec.load_manifest(out) or {}).get("tasks"))
    return summary


def summarise_dir(out: str | Path) -> dict[str, Any]:
    """Recompute the summary of an existing run directory from its records."""
    out = Path(out)
    return write_summary(out, [rec.row_of(r) for r in rec.iter_records(out)])


def task_meta(spec: Any) -> dict[str, Any]:
    return {"hash": rec.task_hash(spec), "difficulty": spec.difficulty, "split": spec.split, "tags": list(spec.tags)}


def agent_meta(agent: AgentSpec) -> dict[str, Any]:
    try:
        bot = agent.create()
    except Exception as exc:  # fail before running anything, naming the agent
        raise ValueError(f"agent {agent.label}: cannot create {agent.name}: {exc}") from None
    meta = {"name": agent.name, "options": dict(agent.options), "settings": _settings(agent, bot)}
    code = _user_code_hash(agent.name)
    if code:
        meta["code"] = code
    return meta


def _settings(agent: AgentSpec, bot: Any) -> dict[str, Any]:
    """The agent's ``settings()`` for the manifest: a mapping that JSON can hold, or a ValueError naming the
    agent (before anything runs; the manifest is how a rerun knows the agent is the same)."""
    import orjson

    from srezero.agents.runner import describe_error

    fn = getattr(bot, "settings", None)
    if not callable(fn):
        return {}
    try:
        settings = dict(fn())
        orjson.dumps(settings, option=orjson.OPT_SORT_KEYS)
    except Exception as exc:
        raise ValueError(f"agent {agent.label}: its settings() must return a mapping of JSON values (str keys; "
                         f"str, numbers, bools, None, lists and mappings of them): {describe_error(exc)}") from None
    return settings


def _user_code_hash(name: str) -> str | None:
    """A hash of a user agent's module file (``module:Class``), so a rerun notices an edited agent. The
    engine hash covers srezero and the baselines; a built-in agent has none of its own."""
    import hashlib

    from srezero.agents.registry import BUILTIN

    if name in BUILTIN or ":" not in name:
        return None
    path = getattr(sys.modules.get(name.partition(":")[0]), "__file__", None)
    if not path or not os.path.isfile(path):
        return None
    with open(path, "rb") as fh:
        return "sha256:" + hashlib.sha256(fh.read()).hexdigest()[:16]
