"""``srezero report RUN_DIR``: plots, a Markdown report and a static offline HTML report of a run."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("report")
@click.argument("run_dir", type=click.Path(exists=True, path_type=Path))
@click.option("--out", "out", type=click.Path(file_okay=False, path_type=Path),
              help="output folder [default: RUN_DIR-report next to the run directory]")
@click.option("--plots-only", is_flag=True,
              help="write only the plot files, straight into --out (how plots/ is regenerated)")
@click.option("--no-replay", is_flag=True, help="do not re-simulate episodes for the replay pages' metric charts")
def report_cmd(run_dir: Path, out: Path | None, plots_only: bool, no_replay: bool) -> None:
    """Write plots, report.md and an HTML report (open OUT/index.html in a browser, no network needed)."""
    from srezero.report.build import build_report, write_plots
    from srezero.report.load import RunDirError, load_run

    target = out or run_dir.resolve().with_name(run_dir.resolve().name + "-report")
    try:
        if plots_only:
            files = write_plots(load_run(run_dir), target)
            click.echo(f"wrote {len(files)} plot files to {target}")
            return
        with click.progressbar(length=1, label="episode pages", show_eta=True, file=click.get_text_stream("stderr"),
                               ) as bar:
            def progress(done: int, total: int) -> None:
                bar.length = total
                bar.update(1)

            built = build_report(run_dir, target, replay=not no_replay, progress=progress)
    except RunDirError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"wrote {built.pages} pages and {len(built.plots)} plot files to {built.out}")
    click.echo(f"open {(built.out / 'index.html').resolve().as_uri()}")
