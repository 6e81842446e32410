"""``srezero tasks`` and ``srezero task show|validate|check|schema``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import orjson

from srezero.commands import SEED, parse_seeds
from srezero.errors import message

if TYPE_CHECKING:
    from srezero.task.spec import TaskSpec

TASKS_DIR = click.option("--tasks-dir", "dirs", multiple=True, type=click.Path(exists=True, file_okay=False),
                         help="extra task directory, e.g. private held-out tasks (repeatable; also SREZERO_TASKS_PATH)")


@click.command("tasks")
@click.option("--split", type=click.Choice(["dev", "test", "private"]), help="only this split")
@click.option("--difficulty", type=click.Choice(["easy", "medium", "hard"]), help="only this difficulty")
@click.option("--tag", "tags", multiple=True, help="only tasks with this tag (repeatable: all must match)")
@click.option("--layer", help="only tasks with a fault in this layer (application, disk, kernel, ...)")
@click.option("--root", help="only tasks with this root (a service, kernel, disk or hardware; it comes from the "
                             "fault primitive's layer first, then its target: see docs/tasks.md)")
@TASKS_DIR
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
@click.option("--markdown", is_flag=True,
              help="the docs/tasks.md page: bundled tasks only, never private ones (spoilers: layers and failure modes); "
                   "with --no-spoilers, the spoiler-free list as a Markdown table")
@click.option("--no-spoilers", is_flag=True,
              help="only id, split, difficulty and budget: safe to show students or an agent (titles and layers name the cause)")
def tasks_cmd(split: str | None, difficulty: str | None, tags: tuple[str, ...], layer: str | None, root: str | None,
              dirs: tuple[str, ...], as_json: bool, markdown: bool, no_spoilers: bool) -> None:
    """List tasks: the bundled curated ones, plus those in SREZERO_TASKS_PATH and --tasks-dir
    directories (generated variants: `srezero generate`). Titles, layers and tags are spoilers: use
    --no-spoilers for a list you can hand to students."""
    from srezero.task.loader import TaskFileError, load_specs

    broken: list[TaskFileError] = []
    try:  # the published page must come from every file; a listing shows what loads and names what does not
        specs = load_specs(tuple(dirs), None if markdown else broken)
    except TaskFileError as exc:
        raise click.ClickException(str(exc)) from None
    _check_filters(specs, tags, layer, root)
    _list(specs, split, difficulty, tags, layer, root, as_json, markdown, no_spoilers)
    if broken:  # after the listing, whichever form it took
        for exc in broken:
            click.echo(f"Error: {exc}", err=True)
        click.echo(f"{len(broken)} task file(s) not loaded (fix them or move them out of the task directory)", err=True)
        raise click.exceptions.Exit(1)


def _check_filters(specs: list[tuple[TaskSpec, Path]], tags: tuple[str, ...], layer: str | None,
                   root: str | None) -> None:
    """A misspelt filter is an error naming what exists, not an empty listing."""
    from srezero.errors import did_you_mean
    from srezero.faults.base import LAYERS
    from srezero.sim.components import SERVICE_KINDS
    from srezero.task.spec import LAYER_ROOT

    roots = (*SERVICE_KINDS, *LAYER_ROOT.values(), "none", *(r for s, _ in specs for r in s.roots))
    known = {"layer": (layer and (layer,), LAYERS, "is unknown"), "root": (root and (root,), roots, "is unknown"),
             "tag": (tags, sorted({t for s, _ in specs for t in s.tags}), "is on no task")}
    for what, (given, values, missing) in known.items():
        values = tuple(dict.fromkeys(values))
        for value in given or ():
            if value not in values:
                raise click.BadParameter(f"{what} {value!r} {missing}{did_you_mean(value, values)} "
                                         f"({what}s: {', '.join(values)})", param_hint=f"--{what}")


def _list(specs: list[tuple[TaskSpec, Path]], split: str | None, difficulty: str | None, tags: tuple[str, ...], layer: str | None,
          root: str | None, as_json: bool, markdown: bool, no_spoilers: bool) -> None:
    rows = [(s, p) for s, p in specs
            if (not split or s.split == split) and (not difficulty or s.difficulty == difficulty)
            and all(tag in s.tags for tag in tags) and (not layer or layer in s.layers)
            and (not root or root in s.roots)]
    if markdown and not no_spoilers:
        # the published page lists only the bundled tasks and never a private one: it is public and it
        # names each task's layers and failure modes
        from srezero.task.loader import bundled_dir
        from srezero.task.table import markdown as render

        bundled = bundled_dir().resolve()
        sys.stdout.write(render([s for s, p in rows if Path(p).resolve().parent == bundled and s.split != "private"]))
        return
    if no_spoilers:
        public = [{"id": s.id, "split": s.split, "difficulty": s.difficulty, "steps": s.budget.steps,
                   "minutes": round(s.budget.time_s / 60)} for s, _ in rows]
        if markdown:  # a handout: what a student may know before playing, as a table
            click.echo("| task | split | difficulty | budget |\n|---|---|---|---|")
            for row in public:
                click.echo(f"| {row['id']} | {row['split']} | {row['difficulty']} | {row['steps']} steps, {row['minutes']} min |")
            return
        if as_json:
            sys.stdout.write(orjson.dumps(public, option=orjson.OPT_INDENT_2).decode() + "\n")
            return
        click.echo(f"{'ID':12} {'SPLIT':5} {'DIFF':6} BUDGET")
        for row in public:
            click.echo(f"{row['id']:12} {row['split']:5} {row['difficulty']:6} {row['steps']} steps, {row['minutes']} min")
        click.echo(f"{len(rows)} task(s)")
        return
    if as_json:
        data = [s.info(str(p)).model_dump() for s, p in rows]
        sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n")
        return
    click.echo(f"{'ID':12} {'SPLIT':5} {'DIFF':6} {'LAYERS':22} TITLE")
    for s, _ in rows:
        click.echo(f"{s.id:12} {s.split:5} {s.difficulty:6} {','.join(s.layers):22} {s.title}")
    click.echo(f"{len(rows)} task(s)")


@click.group("task")
def task_group() -> None:
    """Show, validate, check (play on seeds) or export the schema of task files."""


@task_group.command("show")
@click.argument("task_id")
@click.option("--spoilers", is_flag=True, help="include title, description, faults and the resolved ground truth")
@click.option("--seed", default=0, show_default=True, type=SEED,
              help="seed used to resolve names in the ground truth")
@TASKS_DIR
@click.option("--json", "as_json", is_flag=True, help="the task as JSON (ground truth only with --spoilers)")
@click.option("--toml", "as_toml", is_flag=True,
              help="the task file itself, comments included, to copy and edit (all spoilers: needs --spoilers)")
def show_cmd(task_id: str, spoilers: bool, seed: int, dirs: tuple[str, ...], as_json: bool, as_toml: bool) -> None:
    """Show a task (id, gen: id or .toml path) as a card. Ground truth only with --spoilers."""
    from srezero.task.loader import get_task

    try:
        spec = get_task(task_id, tuple(dirs))
    except (KeyError, ValueError) as exc:
        raise click.ClickException(message(exc)) from None
    if as_toml:
        if not spoilers:
            raise click.UsageError("--toml prints the whole task file, ground truth included: add --spoilers")
        sys.stdout.write(_task_file_text(spec, task_id, tuple(dirs)))
        return
    if as_json:
        data = spec.model_dump(mode="json")
        if not spoilers:
            data = {k: v for k, v in data.items() if k in _PUBLIC}
        else:
            data["ground_truth_resolved"] = _truth(spec, seed)[0]
        sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n")
        return
    click.echo(f"{spec.id}  [{spec.difficulty}, {spec.split}]")
    click.echo(f"page: {spec.alert.name}" + (f" ({spec.alert.entity} {spec.alert.metric} {spec.alert.op} "
                                           f"{spec.alert.threshold:g} for {spec.alert.for_s:g}s)" if spec.alert.metric else ""))
    topo = {k: v for k, v in spec.topology.model_dump().items() if v is not None}
    click.echo(f"system: {', '.join(f'{k}={v}' for k, v in topo.items()) or 'size chosen by the seed'}; "
               f"traffic x{spec.traffic.scale:g}")
    click.echo(f"budget: {spec.budget.steps} steps, {spec.budget.time_s / 60:.0f} min simulated; "
               f"SLO: errors <= {spec.slo.error_rate:.1%}, p99 <= {spec.slo.latency_p99_ms:.0f} ms, "
               f"queue age <= {spec.slo.queue_age_s:.0f} s; verification {spec.verify_window_s:.0f} s")
    click.echo(f"noise: {spec.noise.profile}")
    click.echo(f"hints: {len(spec.hints)} (shown one at a time in classroom play)")
    if not spoilers:
        click.echo("(title, tags, description, faults, distractors and ground truth hidden; use --spoilers)")
        return
    extra = ", ".join(f"{k} x{n}" for k, n in spec.noise.extra.items())
    click.echo(f"\ntitle: {spec.title}")
    click.echo(f"tags: {', '.join(spec.tags) or '-'}")
    click.echo(f"noise extras: {extra or 'none'}; "
               f"distractors: {', '.join(f'{k} x{n}' for k, n in spec.distractors.items()) or 'none'}")
    click.echo(spec.description.strip())
    if spec.split != "generated":
        from srezero.task.suite import difficulty_line

        click.echo(f"difficulty {difficulty_line(spec)}")
    if spec.rationale:
        click.echo(f"why {spec.difficulty}: {spec.rationale}")
    for f in spec.faults:
        click.echo(f"fault: {f.primitive} on {f.target} at +{f.at:g}s {f.params or ''}"
                   f"{' (silent)' if not f.visible else ''}")
    for i, hint in enumerate(spec.hints, 1):
        click.echo(f"hint {i}: {hint}")
    truth, fix = _truth(spec, seed)
    click.echo(f"ground truth (seed {seed}):")
    for rc in truth or [{"entity": "-", "category": "none", "detail": "no fault: change nothing, submit no root causes"}]:
        click.echo(f"  - {rc['entity']}  [{rc['category']}]  {rc['detail']}")
    click.echo("fix: " + ("; ".join(fix) or "none"))


#: What ``task show --json`` prints without --spoilers: nothing that hints at the cause (tags and
#: distractors do: "disk, hardware"; "a benign deploy").
_PUBLIC = ("id", "difficulty", "split", "topology", "traffic", "budget", "alert", "slo", "verify_window_s")


def _truth(spec, seed: int) -> tuple[list[dict], list[str]]:
    import srezero

    env = srezero.make(spec, seed)
    env.reset()
    writes = {t["name"] for t in env.tool_specs() if t.get("kind") == "write"}
    fix = [f"{a['tool']}({', '.join(f'{k}={v!r}' for k, v in a['args'].items())})"
           for a in env.oracle_plan() if a["tool"] in writes]
    truth = [{k: rc[k] for k in ("entity", "category", "detail", "fault", "visible")} for rc in env.ground_truth()]
    return truth, fix


@task_group.command("validate", short_help="Validate task files or directories (each error names file, field and problem).")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--quiet", is_flag=True, help="print only problems and the summary")
@TASKS_DIR
def validate_cmd(paths: tuple[str, ...], quiet: bool, dirs: tuple[str, ...]) -> None:
    """Validate task files or directories; every error names the file, the field and the problem.

    Also checks that no id is already taken in the task lookup (bundled tasks, SREZERO_TASKS_PATH,
    --tasks-dir), and prints each valid task's difficulty points and the range its difficulty allows."""
    from srezero.task.suite import difficulty_line
    from srezero.task.validate import validate_paths

    results, cross = validate_paths(list(paths), tuple(dirs))
    bad = 0
    for f, spec, problems in results:
        if problems:
            bad += 1
            for p in problems:
                click.echo(str(p), err=True)
        elif not quiet:
            click.echo(f"ok    {f}")
            if spec is not None and spec.split != "generated":
                click.echo(f"      {difficulty_line(spec)}")
    for p in cross:
        click.echo(str(p), err=True)
    click.echo(f"{len(results) - bad} valid, {bad} invalid" + (f", {len(cross)} other problem(s)" if cross else ""))
    if bad or cross:
        sys.exit(1)


#: The most seeds `task check` plays per task (each seed plays the oracle and the random agent).
MAX_CHECK_SEEDS = 1000


@task_group.command("check")
@click.argument("tasks", nargs=-1, required=True, metavar="ID_OR_PATH...")
@click.option("--seeds", default="5", show_default=True,
              help=f"a count N (seeds 0..N-1), a list (3,7) or a range (0-9), as `sweep` takes them; at most "
                   f"{MAX_CHECK_SEEDS}")
@click.option("--seed-start", default=0, show_default=True, type=SEED,
              help="first seed of a count: check seeds S..S+N-1, e.g. a held-out range")
@click.option("--min-marks", type=click.FloatRange(0, 100),
              help="the oracle's bar [default: 98; 95 for generated variants]")
@TASKS_DIR
def check_cmd(tasks: tuple[str, ...], seeds: str, seed_start: int, min_marks: float | None,
              dirs: tuple[str, ...]) -> None:
    """Play tasks on seeds 0..N-1 (or from --seed-start, or the seeds listed) and print what happened per seed.

    Each task is an id (bundled, SREZERO_TASKS_PATH or --tasks-dir), a gen: id, a .toml path or a
    directory (its .toml files, as `task validate` reads it). A task passes when, on every seed, the page fires on its own, the oracle makes no invalid action,
    surfaces every evidence signal and reaches the bar, and the random agent does not succeed.
    The page column is seconds from the first fault's onset to the page firing on its own.
    """
    from pathlib import Path

    from srezero.task.loader import get_task
    from srezero.task.validate import check_seed, min_marks_for, task_files

    try:
        seed_list = parse_seeds(seeds, seed_start)
    except click.BadParameter as exc:
        exc.param_hint = "--seeds"
        raise
    if len(seed_list) > MAX_CHECK_SEEDS:
        raise click.BadParameter(f"{seeds!r} is {len(seed_list)} seeds; check at most {MAX_CHECK_SEEDS} at a time",
                                 param_hint="--seeds")
    expanded = []
    for tid in tasks:
        if Path(tid).is_dir():
            files = task_files([tid])
            if not files:
                raise click.ClickException(f"{tid}: no .toml task files in this directory")
            expanded += [str(f) for f in files]
        else:
            expanded.append(tid)
    bad = 0
    for tid in expanded:
        try:
            spec = get_task(tid, tuple(dirs))
        except (KeyError, ValueError) as exc:
            raise click.ClickException(message(exc)) from None
        bar = min_marks_for(spec) if min_marks is None else min_marks
        results = [check_seed(spec, seed, bar, random_agent=True) for seed in seed_list]
        problems = [f"seed {c.seed}: {p}" for c in results for p in c.problems]
        bad += bool(problems)
        which = (f"{len(seed_list)} seed(s)" + (f" from {seed_list[0]}" if seed_list[0] else "")
                 if seed_list == list(range(seed_list[0], seed_list[0] + len(seed_list)))
                 else "seeds " + ",".join(map(str, seed_list)))
        click.echo(f"{'ok  ' if not problems else 'FAIL'}  {spec.id}  ({which}, oracle needs {bar:g} marks)")
        click.echo(f"      {'seed':>4}  {'page':>7}  {'oracle':>6}  {'evidence':>8}  {'invalid':>7}  {'random':>6}")
        for c in results:
            page = f"+{c.page_s:.0f}s" if c.page_s is not None else "never"
            rnd = f"{c.random_marks:.1f}" + ("!" if c.random_success else "")
            click.echo(f"      {c.seed:>4}  {page:>7}  {c.oracle_marks:>6.1f}  {c.evidence:>8.2f}  {c.invalid:>7}  {rnd:>6}")
        for p in problems:
            click.echo(f"      {p}")
    if bad:
        sys.exit(1)


@task_group.command("schema", short_help="Print the JSON Schema of task files (for editors).")
@click.option("--out", type=click.Path(dir_okay=False), help="write to this file instead of stdout")
def schema_cmd(out: str | None) -> None:
    """Print the JSON Schema of task files (for editors and other tools)."""
    from srezero.task.spec import TaskSpec

    schema = TaskSpec.model_json_schema()
    schema["title"] = "srezero task file"
    text = orjson.dumps(schema, option=orjson.OPT_INDENT_2).decode() + "\n"
    if out:
        with open(out, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)


def _task_file_text(spec: Any, task_id: str, dirs: tuple[str, ...]) -> str:
    """A task's file as written (curated tasks ship inside the package, so a pip install has no tasks/ to
    copy from); a generated variant has no file and gets the TOML it decodes to."""
    from srezero.task.export import to_toml
    from srezero.task.loader import task_file

    path = task_file(task_id, dirs)
    if path is not None:
        return path.read_text(encoding="utf-8-sig")
    return to_toml(spec, header=f"{spec.id}: a generated variant (srezero generate). To edit it, save it as NAME.toml "
                   f"and set id = \"NAME\" (a task's id is its file name).")
