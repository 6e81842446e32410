"""``srezero sweep``: tasks x agents x seeds into a resumable, byte-reproducible run directory.

The layout of the run directory is specified in docs/records.md.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from typing import Any

import click

from srezero.commands import SEED, check_episodes, parse_seeds, split_names
from srezero.commands.llm_options import llm_options
from srezero.commands.tasks import TASKS_DIR
from srezero.errors import message

#: Agents shown apart from the baselines: they read the ground truth.
UPPER_BOUND = ("oracle",)


def _upper(group: dict) -> bool:
    """Shown apart from the baselines: the agent read the ground truth."""
    return bool(group.get("privileged")) or group["agent"] in UPPER_BOUND


@click.command("sweep")
@click.option("--seeds", default="5", show_default=True, help="a count N (seeds 0..N-1), a list 3,7 or a range 0-9")
@click.option("--seed-start", default=0, show_default=True, type=SEED, help="first seed when --seeds is a count")
@click.option("--agents", "agent_names", multiple=True,
              help="comma-separated agent names or package.module:Class [default: the deterministic baselines]")
@click.option("--agent-arg", "agent_args", multiple=True, metavar="KEY=VALUE",
              help="constructor argument for every agent that takes KEY, VALUE read as JSON if it parses, else a "
                   "string (repeatable; recorded in the manifest)")
@click.option("--label", "labels", multiple=True, help="label per --agents entry, in order (comma-separated or repeated; directory name in the run)")
@click.option("--tasks", "task_ids", multiple=True, help="comma-separated task ids or .toml paths [default: all curated]")
@click.option("--split", type=click.Choice(["dev", "test", "private"]), help="only tasks of this split")
@click.option("--difficulty", type=click.Choice(["easy", "medium", "hard"]), help="only tasks of this difficulty")
@TASKS_DIR
@click.option("--workers", type=click.IntRange(min=1), default=None, help="parallel workers [default: CPU count]")
@click.option("--executor", type=click.Choice(["process", "ray"]), default="process", show_default=True)
@click.option("--ray-address", help="Ray cluster address for --executor ray (default: start a local Ray)")
@click.option("--out", default="runs/sweep", show_default=True, type=click.Path(file_okay=False),
              help="run directory (created; a rerun resumes it)")
@click.option("--allow-mixed", is_flag=True,
              help="extend a run recorded by a different simulator/scoring build (refused by default)")
@click.option("--retry-errors", is_flag=True, help="rerun episodes recorded with a provider/agent/env error")
@click.option("--summary-only", is_flag=True, help="only recompute the summary and CSVs from the records in --out")
@click.option("--max-steps", type=click.IntRange(min=1), help="cap on agent steps per episode [default: the task's budget]")
@llm_options
@click.option("--replay", "replay_path", type=click.Path(exists=True),
              help="for the replay agent: a record file, an action file or a run directory (or SREZERO_REPLAY); "
                   "--agent-arg agent=NAME picks one agent's records in a run directory of several")
@click.option("--progress/--no-progress", default=True, show_default=True, help="progress bar on stderr")
@click.option("--markdown", is_flag=True, help="print the summary as Markdown tables (for docs/baselines.md)")
@click.option("--probe/--no-probe", default=True, show_default=True,
              help="LLM agents: send one short request per endpoint and model before any episode runs")
def sweep_cmd(seeds: str, seed_start: int, agent_names: tuple[str, ...], agent_args: tuple[str, ...],
              labels: tuple[str, ...],
              task_ids: tuple[str, ...], split: str | None, difficulty: str | None, dirs: tuple[str, ...],
              workers: int | None,
              executor: str, ray_address: str | None, out: str, allow_mixed: bool, retry_errors: bool, summary_only: bool,
              max_steps: int | None, llm: dict, replay_path: str | None, progress: bool, markdown: bool,
              probe: bool) -> None:
    """Run tasks x agents x seeds in parallel, resumably, into a run directory."""
    from srezero.sweep import runner

    if summary_only:
        _refuse_run_options()
        if not os.path.isdir(os.path.join(out, "episodes")):
            raise click.ClickException(f"{out}: no episodes/ directory to summarise")
        try:
            summary = runner.summarise_dir(out)
        except ValueError as exc:  # an unreadable record, named
            raise click.ClickException(str(exc)) from None
        _print_markdown(summary, _manifest_tasks(out)) if markdown else _print_table(summary)
        return
    specs = _select_tasks(split_names(task_ids, "--tasks"), split, difficulty, tuple(dirs))
    agents = _select_agents(split_names(agent_names, "--agents"), split_names(labels, "--label"), probe, agent_args,
                            path=replay_path, **llm)
    seed_list = parse_seeds(seeds, seed_start)
    check_episodes(agents, [(tid, seed) for tid in specs for seed in seed_list])  # a replay source's gaps, now
    n_workers = workers if workers is not None else (os.cpu_count() or 1)
    from srezero.task.loader import more_task_dirs

    try:
        # the batches carry the task specs; the lookup path is extended too, so a worker process (spawned
        # or forked) that looks a task up by id finds the same one
        with _sigterm_interrupts(), more_task_dirs(tuple(dirs)):
            result = runner.sweep(out, agents, specs, seed_list, workers=n_workers, executor=executor,
                                  ray_address=ray_address, retry_errors=retry_errors, max_steps=max_steps,
                                  progress=progress, allow_mixed=allow_mixed)
    except runner.SweepStopped as exc:  # the table of what was recorded, then why it stopped
        _print_markdown(exc.summary, _manifest_tasks(out)) if markdown else _print_table(exc.summary)
        raise click.ClickException(str(exc)) from None
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:  # --out under a file, no permission, a full disk: nothing recorded is lost
        where = f" ({exc.filename})" if exc.filename else ""
        raise click.ClickException(f"cannot write the run directory {out}: {exc.strerror or exc}{where}. The "
                                   "records written before are kept (each is written whole or not at all); fix "
                                   "that and rerun the same command to resume") from None
    except KeyboardInterrupt:
        from srezero.sweep.records import record_paths

        click.echo(f"\ninterrupted: {sum(1 for _ in record_paths(out))} episode(s) recorded in {out} (the summary "
                   "covers them); rerun the same command to resume", err=True)
        raise SystemExit(130) from None
    click.echo(f"{result.total} episode(s): ran {result.ran}, already recorded {result.skipped}; "
               f"run directory {result.out}", err=True)
    _print_markdown(result.summary, _manifest_tasks(out)) if markdown else _print_table(result.summary)
    if result.errors:  # a script sees the failure in the exit status
        debug = runner.traceback_command(result.rows, agents, tuple(dirs))
        raise click.ClickException(f"{result.errors} of the {result.ran} episode(s) run ended in a provider, agent "
                                   "or environment error (see each record's status and error); --retry-errors runs "
                                   "them again, which helps with a provider outage (a deterministic agent fails the "
                                   "same way: fix it and sweep into a fresh --out)"
                                   + (f"; replay one with its traceback: {debug}" if debug else ""))


@contextlib.contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM (a scheduler's kill, `timeout`) stops a sweep as Ctrl-C does: records kept, summary written."""
    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread (an embedding program): leave its signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


#: What --summary-only reads; every other option only says what to run.
_SUMMARY_OPTIONS = ("summary_only", "out", "markdown", "progress", "probe")


def _refuse_run_options() -> None:
    """--summary-only summarises every record in --out; a --agents or --tasks given with it would be
    silently ignored, and the table taken for a filtered one."""
    from click.core import ParameterSource

    ctx = click.get_current_context()
    given = [p.opts[0] for p in ctx.command.params if p.name not in _SUMMARY_OPTIONS and p.name is not None
             and ctx.get_parameter_source(p.name) is ParameterSource.COMMANDLINE]  # not a variable set for runs
    if given:
        raise click.UsageError(f"--summary-only summarises every record in --out; {', '.join(given)} only say(s) "
                               "what to run. To look at part of a run: srezero report DIR --agents/--tasks/--split")


def _select_tasks(ids: list[str], split: str | None, difficulty: str | None, dirs: tuple[str, ...] = ()) -> dict:
    from srezero.sweep.records import task_hash
    from srezero.task.loader import get_task, list_tasks

    try:
        if not ids:
            ids = [t.id for t in list_tasks(dirs)]
        specs, given = {}, {}
        for tid in ids:
            spec = get_task(tid, dirs)
            if spec.id in given and task_hash(spec) != task_hash(given[spec.id][1]):
                # records are kept under the task's id: one of the two would be silently dropped
                raise click.UsageError(f"--tasks: {given[spec.id][0]} and {tid} are different tasks with the same "
                                       f"id {spec.id!r}; a run keys its records by task id, so give one of them "
                                       "(or change the id of your copy)")
            given.setdefault(spec.id, (tid, spec))
            if (split and spec.split != split) or (difficulty and spec.difficulty != difficulty):
                continue
            specs[spec.id] = spec
    except (KeyError, ValueError, OSError) as exc:  # a TaskFileError is a ValueError
        raise click.ClickException(message(exc)) from None
    if not specs:
        raise click.ClickException("no task matches the selection (see `srezero tasks`)")
    return specs


def _select_agents(names: list[str], labels: list[str], probe: bool = False, agent_args: tuple[str, ...] = (),
                   **options) -> list:
    from srezero.agents.registry import DEFAULT_SWEEP, parse_agent_args
    from srezero.commands.llm_options import preflight
    from srezero.sweep.runner import agent_spec

    names = names or list(DEFAULT_SWEEP)
    if labels and len(labels) != len(names):
        raise click.ClickException(f"--label gives {len(labels)} label(s) for {len(names)} agent(s); give one per "
                                   "agent, in order (comma-separated or repeated)")
    if any(n.startswith("llm-") for n in names) and not options.get("model"):
        raise click.ClickException("LLM agents need --model (and --base-url for a non-OpenAI endpoint)")
    try:
        args = parse_agent_args(agent_args)
        agents = [agent_spec(n, labels[i] if labels else None, agent_args=args, strict=False, **options)
                  for i, n in enumerate(names)]
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    unused = sorted(set(args) - {k for a in agents for k, _ in a.options})  # a typo must not pass silently
    if unused:
        raise click.ClickException(f"--agent-arg {', '.join(unused)}: no agent in this sweep takes it")
    seen = [a.label for a in agents]
    dup = sorted({x for x in seen if seen.count(x) > 1})
    if dup:
        raise click.ClickException(f"agent label(s) used twice: {', '.join(dup)}; give --label per agent")
    preflight(agents, probe)  # an LLM agent without its key, or (probe) whose endpoint fails, stops here
    return agents


def _fmt(m: dict, scale: float = 1.0, digits: int = 1) -> str:
    if m["mean"] is None:
        return "-"
    if m["lo"] is None:  # a single independent unit: no interval
        return f"{m['mean'] * scale:.{digits}f} [n/a]"
    return f"{m['mean'] * scale:.{digits}f} [{m['lo'] * scale:.{digits}f}, {m['hi'] * scale:.{digits}f}]"


def _mean_n(m: dict) -> str:
    """A mean over the episodes where it is defined, with how many those are (TTD and TTM)."""
    return "-" if m["mean"] is None else f"{m['mean']:.0f} ({m['n']})"


def _print_table(summary: dict) -> None:
    """Per-agent marks and rates with their 95% CIs (the full table is in summary.csv)."""
    rows = sorted((g for g in summary.get("groups", []) if g["task"] == "*"), key=lambda g: (_upper(g), g["agent"]))
    click.echo(f"{'AGENT':24} {'N':>5}  {'MARKS [95% CI]':22} {'SUCCESS %':18} {'DIAGNOSIS %':18} "
               f"{'MITIGATED %':18} ERRORS")
    for g in rows:
        m = g["metrics"]
        errs = g["provider_errors"] + g["agent_errors"] + g["env_errors"]
        name = g["agent"] + (" (upper bound)" if _upper(g) else "")  # listed apart, never ranked
        click.echo(f"{name:24} {g['n']:>5}  {_fmt(m['marks']):22} {_fmt(m['success'], 100, 0):18} "
                   f"{_fmt(m['diagnosis'], 100, 0):18} {_fmt(m['mitigation'], 100, 0):18} {errs}")
    for line in caveats(summary):
        click.echo(f"note: {line}")


def caveats(summary: dict) -> list[str]:
    """What keeps the table from being read as a ranking: agents that ran different episodes (a sweep
    stopped early), or too few tasks for the intervals to be 95% intervals (srezero compare's rule)."""
    from srezero.report.compare import few_tasks_caveat

    per_task: dict[str, dict[str, int]] = {}
    for g in summary.get("groups", []):
        if g["task"] != "*" and not _upper(g):
            per_task.setdefault(g["agent"], {})[g["task"]] = g["n"]
    out = []
    if len({tuple(sorted(cells.items())) for cells in per_task.values()}) > 1:
        counts = ", ".join(f"{a} {sum(c.values())}" for a, c in sorted(per_task.items()))
        out.append(f"the agents ran different episodes ({counts}), so their rows are not comparable as they stand: "
                   "run the missing (agent, task, seed) cells (rerunning a stopped sweep does), or rank them on "
                   "the shared episodes with `srezero report --common`")
    few = few_tasks_caveat(max((len(c) for c in per_task.values()), default=0))
    if few:
        out.append(few)
    return out


def _manifest_tasks(out: str) -> dict:
    """The run's task metadata (difficulty, split, tags) from its manifest; empty if there is none."""
    from srezero.sweep.records import load_manifest

    try:
        return dict((load_manifest(out) or {}).get("tasks") or {})
    except (OSError, ValueError, AttributeError):  # an unreadable manifest only costs the group table
        return {}


#: Task groups of the Markdown summary: (column, predicate on a task's manifest entry).
TASK_GROUPS = (
    ("easy", lambda t: t.get("difficulty") == "easy"),
    ("medium", lambda t: t.get("difficulty") == "medium"),
    ("hard", lambda t: t.get("difficulty") == "hard"),
    ("misleading", lambda t: "misleading" in t.get("tags", ())),
    ("not misleading", lambda t: "misleading" not in t.get("tags", ())),
    ("dev", lambda t: t.get("split") == "dev"),
    ("test", lambda t: t.get("split") == "test"),
)


def _print_group_table(agents: list[str], tasks: list[str], marks: dict, tasks_meta: dict, upper: set[str]) -> None:
    """Mean over tasks of each task's mean marks, per task group (the task count in brackets)."""
    cols = [(name, [t for t in tasks if t in tasks_meta and pred(tasks_meta[t])]) for name, pred in TASK_GROUPS]
    cols = [(name, members) for name, members in cols if members]
    click.echo("\nMean marks by task group (number of tasks in brackets):\n")
    click.echo("| agent | " + " | ".join(name for name, _ in cols) + " |")
    click.echo("|---|" + "---:|" * len(cols))
    for a in agents:
        cells = []
        for _, members in cols:
            vals = [marks[(a, t)] for t in members if marks.get((a, t)) is not None]
            cells.append(f"{sum(vals) / len(vals):.1f} ({len(vals)})" if vals else "-")
        click.echo(f"| {a}{' (upper bound)' if a in upper else ''} | " + " | ".join(cells) + " |")


def _print_markdown(summary: dict, tasks_meta: dict | None = None) -> None:
    """Per-agent rates with CIs, marks by task group, then marks per task x agent: the tables
    docs/baselines.md quotes."""
    groups = sorted(summary.get("groups", []), key=lambda g: (_upper(g), g["agent"], g["task"]))
    agents = [g["agent"] for g in groups if g["task"] == "*"]
    click.echo("| agent | episodes | marks [95% CI] | success % | all seeds % | diagnosis % | mitigated % | "
               "evidence % | wrong-fix rate | TTD s (n) | TTM s (n) |")
    click.echo("|---|---:|---|---|---|---|---|---|---|---:|---:|")
    for g in groups:
        if g["task"] != "*":
            continue
        m = g["metrics"]
        name = g["agent"] + (" (upper bound)" if _upper(g) else "")
        click.echo(f"| {name} | {g['n']} | {_fmt(m['marks'])} | {_fmt(m['success'], 100, 0)} | "
                   f"{_fmt(g['consistency'], 100, 0)} | {_fmt(m['diagnosis'], 100, 0)} | {_fmt(m['mitigation'], 100, 0)} | {_fmt(m['evidence'], 100, 0)} | "
                   f"{_fmt(m['wrong_fix_rate'], 1, 2)} | {_mean_n(m['ttd_s'])} | {_mean_n(m['ttm_s'])} |")
    for line in caveats(summary):
        click.echo(f"\n> Note: {line}.")
    marks = {(g["agent"], g["task"]): g["metrics"]["marks"]["mean"] for g in groups if g["task"] != "*"}
    tasks = sorted({t for _, t in marks})
    if tasks_meta:
        upper = {g["agent"] for g in groups if g["task"] == "*" and _upper(g)}
        _print_group_table(agents, tasks, marks, tasks_meta, upper)
    click.echo("")
    click.echo("| task | " + " | ".join(agents) + " |")
    click.echo("|---|" + "---:|" * len(agents))
    for t in tasks:
        cells = [marks.get((a, t)) for a in agents]
        click.echo(f"| {t} | " + " | ".join("-" if c is None else f"{c:.1f}" for c in cells) + " |")
