"""``srezero report RUN_DIR``: plots, a Markdown report and a static offline HTML report of a run."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

import click

from srezero.commands import split_names
from srezero.commands.tasks import TASKS_DIR

if TYPE_CHECKING:
    from srezero.report.load import Run


@click.command("report")
@click.argument("run_dir", type=click.Path(exists=True, path_type=Path))
@click.option("--out", "out", type=click.Path(file_okay=False, path_type=Path),
              help="output folder [default: RUN_DIR-report next to the run directory; for a record file "
                   "FILE.json, FILE-report next to it]")
@click.option("--plots-only", is_flag=True,
              help="write only the plot files, straight into --out (how plots/ is regenerated)")
@click.option("--no-replay", is_flag=True, help="do not re-simulate episodes for the replay pages' metric charts")
@click.option("--agents", "agents", multiple=True, help="only these agent labels (comma-separated or repeated)")
@click.option("--tasks", "tasks", multiple=True, help="only these task ids (comma-separated or repeated)")
@click.option("--split", type=click.Choice(["dev", "test", "private"]), help="only tasks of this split")
@click.option("--common", is_flag=True,
              help="only the (task, seed) cells every ranked agent has, so agents are compared on the same episodes")
@TASKS_DIR
def report_cmd(run_dir: Path, out: Path | None, plots_only: bool, no_replay: bool, agents: tuple[str, ...],
               tasks: tuple[str, ...], split: str | None, common: bool, dirs: tuple[str, ...]) -> None:
    """Write plots, report.md and an HTML report (open OUT/index.html in a browser, no network needed)."""
    from srezero.report.load import RunDirError, load_run, select
    from srezero.sweep.records import writable_problem
    from srezero.task.loader import more_task_dirs

    target = out or default_out(run_dir)
    if run_dir.is_dir() and target.resolve().is_relative_to(run_dir.resolve()):
        raise click.BadParameter(f"{target} is inside the run directory {run_dir}: a report there mixes its pages "
                                 "into the records; write it elsewhere (the default is RUN_DIR-report next to it)",
                                 param_hint="--out")
    made = not target.exists()
    problem = writable_problem(target, directory=True)  # before the records are read and pages built
    if problem:
        raise click.BadParameter(f"cannot write the report to {target}: {problem}",
                                 param_hint="--out" if out else None)
    try:
        run = select(load_run(run_dir), split_names(agents, "--agents"), split_names(tasks, "--tasks"), split, common)
        with more_task_dirs(dirs):  # the replays and task pages look the run's tasks up by id
            _report(run_dir, target, plots_only, no_replay, run)
    except RunDirError as exc:
        if made:  # the check made the folder: a run with nothing to report leaves none behind
            with contextlib.suppress(OSError):
                target.rmdir()  # only when still empty
        raise click.ClickException(str(exc)) from None
    except OSError as exc:  # a disk that fills up on the way: the run itself is only read, never touched
        where = f" ({exc.filename})" if exc.filename else ""
        raise click.ClickException(f"cannot write the report to {target}: {exc.strerror or exc}{where}") from None


def default_out(run_dir: Path) -> Path:
    """``RUN_DIR-report`` next to a run directory; ``FILE-report`` next to a record file ``FILE.json``
    (not ``FILE.json-report``, a folder named like a file)."""
    where = run_dir.resolve()
    return where.with_name(f"{where.stem if where.is_file() else where.name}-report")


def _report(run_dir: Path, target: Path, plots_only: bool, no_replay: bool, run: Run) -> None:
    from srezero.report import data as D
    from srezero.report.build import build_report, write_plots

    cov = D.coverage(run.episodes, run.manifest)
    for warning in cov["warnings"]:
        click.secho(f"warning: {warning}", fg="yellow", err=True)
    for note in cov["notes"]:
        click.echo(f"note: {note}", err=True)
    if plots_only:
        files = write_plots(run, target)
        click.echo(f"wrote {len(files)} plot files to {target}")
        return
    stderr = click.get_text_stream("stderr")
    if stderr.isatty():
        with click.progressbar(length=1, label="episode pages", show_eta=True, file=stderr) as bar:
            def progress(done: int, total: int) -> None:
                bar.length = total
                bar.update(1)

            built = build_report(run_dir, target, replay=not no_replay, progress=progress, run=run)
    else:  # no bar (and no stray label) in logs and pipes
        built = build_report(run_dir, target, replay=not no_replay, run=run)
    click.echo(f"wrote {built.pages} pages and {len(built.plots)} plot files to {built.out}")
    click.echo(f"open {(built.out / 'index.html').resolve().as_uri()}")
