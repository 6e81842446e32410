"""``srezero debrief``: the play debrief of any recorded episode, rebuilt by replaying it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from srezero.commands import SEED
from srezero.commands.tasks import TASKS_DIR
from srezero.errors import message

if TYPE_CHECKING:
    from srezero.play.style import Style


@click.command("debrief")
@click.argument("records", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--agent", "agents", multiple=True, help="only records of this agent label, e.g. human:ada (repeatable)")
@click.option("--task", "tasks", multiple=True, metavar="TASK_ID", help="only records of this task (repeatable)")
@click.option("--seed", "seeds", multiple=True, type=SEED, help="only this seed (repeatable)")
@TASKS_DIR
@click.option("--width", type=click.IntRange(min=40),
              help="wrap to this many columns [default: the terminal's, at most 100]")
@click.option("--color", "color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True,
              help="colour output; auto respects NO_COLOR and pipes")
def debrief_cmd(records: tuple[str, ...], agents: tuple[str, ...], tasks: tuple[str, ...], seeds: tuple[int, ...],
                dirs: tuple[str, ...], width: int | None, color: str) -> None:
    """Print the debrief of each recorded episode in RECORDS (files or folders of records).

    The debrief `srezero play` shows at the end, for any record: a student's play record, a
    `srezero run --out` file, or a sweep's episodes. The episode is replayed from the record's task,
    seed and actions (the simulator is deterministic), so the debrief is the one the player saw, hints
    included. A replay that does not reproduce the record (the task file changed since) is flagged.
    See docs/play.md.
    """
    import sys

    from srezero.play.style import Style, safe_streams, want_colour
    from srezero.report.load import RunDirError, read_records

    found = []
    for source in records:
        try:
            found += read_records(source)[1]
        except RunDirError as exc:
            raise click.ClickException(str(exc)) from None
    chosen = [(p, r) for p, r in found if (not agents or str(r.get("agent")) in agents)
              and (not tasks or str(r.get("task_id")) in tasks) and (not seeds or r.get("seed") in seeds)]
    if not chosen:
        raise click.ClickException(f"none of the {len(found)} record(s) matches --agent/--task/--seed")
    safe_streams(sys.stdout, sys.stderr)
    style = Style(want_colour(sys.stdout, color))
    failed = printed = 0
    for path, record in chosen:
        text, problem = debrief_of(record, str(path), tuple(dirs), style, width)
        if text and printed:  # a rule between debriefs, none around a record that has none
            sys.stdout.write("\n" + "=" * (width or 72) + "\n\n")
        if problem:  # before the debrief it concerns, not after a screenful of it
            failed += not text
            sys.stdout.flush()
            sys.stderr.write(style.red(problem) + "\n")
            sys.stderr.flush()
        if text:
            sys.stdout.write(text + "\n")
            printed += 1
    sys.stdout.flush()
    if failed:
        raise click.ClickException(f"{failed} of {len(chosen)} record(s) could not be debriefed (see above)")


def debrief_of(record: dict[str, Any], where: str, dirs: tuple[str, ...] = (), style: Style | None = None,
               width: int | None = None) -> tuple[str, str]:
    """``(debrief text, problem)`` for one record. The text is empty when no debrief can be made (the
    task is unknown here, the episode never ended); the problem is empty when the replay reproduced the
    record."""
    from srezero.play import debrief
    from srezero.replay import rerun
    from srezero.sweep.records import task_hash
    from srezero.task.loader import get_task

    task_id, seed, label = record["task_id"], record["seed"], record.get("agent", "?")
    head = f"{where}: {label} on {task_id}, seed {seed}"
    if not isinstance(record.get("result"), dict):
        why = record.get("error") or "no result"
        return "", f"{head}: no debrief, the episode did not end ({record.get('status', '?')}: {why})"
    try:
        spec = get_task(str(task_id), dirs)
        run = rerun(record, spec)
    except (KeyError, ValueError) as exc:
        hint = "" if dirs or "--tasks-dir" in str(exc) else " (a task of your own? give its folder with --tasks-dir)"
        return "", f"{head}: no debrief, cannot load task {task_id!r}: {message(exc)}{hint}"
    problem = ""
    if run.diverged:
        changed = record.get("task_hash") not in (None, task_hash(spec))
        cause = "the task file changed since the record was made" if changed else \
            "it was recorded by another version of srezero, or by hand"
        problem = (f"{head}: the replay does not reproduce the record ({run.diverged}); {cause}. "
                   "The debrief below is of the replay.")
    hints = record.get("hints") or []
    title = f"{label} on {task_id}, seed {seed} ({where})"
    body = debrief.render(run.env, run.result or {}, hints if isinstance(hints, list) else [], style, width)
    return f"{title}\n{body}", problem
