"""``srezero tasks`` and ``srezero task show|validate|schema``."""

from __future__ import annotations

import sys

import click
import orjson


@click.command("tasks")
@click.option("--split", type=click.Choice(["dev", "test", "private"]), help="only this split")
@click.option("--difficulty", type=click.Choice(["easy", "medium", "hard"]), help="only this difficulty")
@click.option("--tag", "tags", multiple=True, help="only tasks with this tag (repeatable: all must match)")
@click.option("--layer", help="only tasks with a fault in this layer")
@click.option("--tasks-dir", "dirs", multiple=True, type=click.Path(exists=True, file_okay=False),
              help="extra task directory (also SREZERO_TASKS_PATH)")
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def tasks_cmd(split: str | None, difficulty: str | None, tags: tuple[str, ...], layer: str | None,
              dirs: tuple[str, ...], as_json: bool) -> None:
    """List tasks."""
    from srezero.task.loader import TaskFileError, list_tasks

    try:
        infos = list_tasks(tuple(dirs))
    except TaskFileError as exc:
        raise click.ClickException(str(exc)) from None
    rows = [t for t in infos
            if (not split or t.split == split) and (not difficulty or t.difficulty == difficulty)
            and all(tag in t.tags for tag in tags) and (not layer or layer in t.layers)]
    if as_json:
        sys.stdout.write(orjson.dumps([r.model_dump() for r in rows], option=orjson.OPT_INDENT_2).decode() + "\n")
        return
    click.echo(f"{'ID':14} {'SPLIT':5} {'DIFF':6} {'LAYERS':22} TITLE")
    for t in rows:
        click.echo(f"{t.id:14} {t.split:5} {t.difficulty:6} {','.join(t.layers):22} {t.title}")
    click.echo(f"{len(rows)} task(s)")


@click.group("task")
def task_group() -> None:
    """Show, validate or export the schema of task files."""


@task_group.command("show")
@click.argument("task_id")
@click.option("--spoilers", is_flag=True, help="include the description and ground truth")
@click.option("--seed", default=0, show_default=True, help="seed used to resolve names in the ground truth")
def show_cmd(task_id: str, spoilers: bool, seed: int) -> None:
    """Show a task as a human card. Ground truth only with --spoilers."""
    import srezero
    from srezero.task.loader import get_task

    try:
        spec = get_task(task_id)
    except (KeyError, ValueError) as exc:
        raise click.ClickException(str(exc).strip("'\"")) from None
    click.echo(f"{spec.id}  [{spec.difficulty}, {spec.split}]  {', '.join(spec.tags)}")
    click.echo(f"page: {spec.alert.name} on {spec.alert.entity}")
    click.echo(f"budget: {spec.budget.steps} steps, {spec.budget.time_s / 60:.0f} min simulated; "
               f"SLO: errors <= {spec.slo.error_rate:.1%}, p99 <= {spec.slo.latency_p99_ms:.0f} ms, "
               f"queue age <= {spec.slo.queue_age_s:.0f} s")
    click.echo(f"noise: {spec.noise.profile}; distractors: {dict(spec.distractors) or 'none'}")
    if not spoilers:
        click.echo("(title, description and ground truth hidden; use --spoilers)")
        return
    click.echo(f"title: {spec.title}")
    click.echo(spec.description.strip())
    env = srezero.make(spec, seed)
    env.reset()
    click.echo(f"ground truth (seed {seed}):")
    for rc in env.ground_truth() or [{"entity": "-", "category": "none", "detail": "no fault"}]:
        click.echo(f"  - {rc['entity']}  [{rc['category']}]  {rc['detail']}")
    click.echo("fix: " + "; ".join(f"{a['tool']}({a['args']})" for a in env.oracle_plan()
                                   if a["tool"] not in ("get_alerts", "submit_diagnosis", "resolve")
                                   and a["tool"] in ("restart", "rollback", "scale", "set_config", "failover", "drain_node")))


@task_group.command("validate")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
def validate_cmd(paths: tuple[str, ...]) -> None:
    """Validate task files (or directories of them); errors name file, field and problem."""
    from pathlib import Path

    from srezero.task.loader import TaskFileError, load_file

    files = []
    for p in map(Path, paths):
        files += sorted(p.glob("*.toml")) if p.is_dir() else [p]
    bad = 0
    for f in files:
        try:
            spec = load_file(f)
            _smoke(spec)
            click.echo(f"ok    {f}")
        except TaskFileError as exc:
            bad += 1
            click.echo(str(exc), err=True)
        except ValueError as exc:
            bad += 1
            click.echo(f"{f}: faults: {exc}", err=True)
    click.echo(f"{len(files) - bad} valid, {bad} invalid")
    if bad:
        sys.exit(1)


def _smoke(spec) -> None:
    """Build the world once so target selectors that only fail on a real topology are caught."""
    from srezero.sim.world import World

    World.build(spec, 0)


@task_group.command("schema")
def schema_cmd() -> None:
    """Print the JSON Schema of task files."""
    from srezero.task.spec import TaskSpec

    sys.stdout.write(orjson.dumps(TaskSpec.model_json_schema(), option=orjson.OPT_INDENT_2).decode() + "\n")
