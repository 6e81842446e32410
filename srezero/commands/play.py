"""``srezero play``: work an incident yourself at the terminal, then read the debrief."""

from __future__ import annotations

import os
from pathlib import Path

import click

from srezero.commands import SEED
from srezero.commands.tasks import TASKS_DIR
from srezero.errors import message


@click.command("play")
@click.argument("task_id", required=False)
@click.option("--task", "task_opt", metavar="TASK_ID", help="the task, as `run --task` takes it (or give it positionally)")
@click.option("--seed", default=0, show_default=True, type=SEED)
@TASKS_DIR
@click.option("--hints", is_flag=True, help="allow the `hint` command (graded hints, mildest first; recorded)")
@click.option("--record", "record_path", type=click.Path(dir_okay=False),
              help="where to save the transcript record [default: ./runs/play/<task>-<seed>[-<player>].json]; "
                   "an existing file is never overwritten (the next free name -2, -3... is used)")
@click.option("--player", default="", help="a name for the record (agent label human:<name>), for classes")
@click.option("--color", "color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True,
              help="colour output; auto respects NO_COLOR and pipes")
def play_cmd(task_id: str | None, task_opt: str | None, seed: int, dirs: tuple[str, ...], hints: bool,
             record_path: str | None, player: str, color: str) -> None:
    """Play TASK_ID interactively: you are paged, you investigate and fix it, then a debrief.

    Type tool calls such as get_status(service="worker") or kubectl-style commands such as
    `kubectl logs worker --tail 20`; `help` lists every tool. See docs/play.md.
    """
    import sys

    import srezero
    from srezero.play import debrief, shell
    from srezero.play.session import PlaySession
    from srezero.play.style import Style, columns, want_colour
    from srezero.task.loader import get_task

    if task_id and task_opt and task_id != task_opt:
        raise click.UsageError(f"two tasks given ({task_id} and --task {task_opt}): give one")
    task_id = task_id or task_opt
    if not task_id:
        raise click.UsageError("which task? e.g. srezero play inc-001 (`srezero tasks --no-spoilers` lists them without giving "
                               "away their causes)")
    from srezero.sweep.records import REWARD, writable_problem
    from srezero.task.validate import check_builds

    try:
        spec = get_task(task_id, tuple(dirs))
        check_builds(spec, task_id, seed)
        env = srezero.make(spec, seed, reward=REWARD)  # as the sweep records it
    except (KeyError, ValueError) as exc:
        raise click.ClickException(message(exc)) from None
    if player and not player.replace("-", "").replace("_", "").isalnum():
        raise click.BadParameter("use letters, digits, - and _ only", param_hint="--player")
    suffix = f"-{player}" if player else ""
    target = record_path or f"runs/play/{env.spec.id}-{seed}{suffix}.json"
    problem = writable_problem(target)
    if problem:  # say so now, not after a half-hour session
        hint = "" if record_path else " (choose another place with --record PATH)"
        raise click.BadParameter(f"cannot save the record to {target}: {problem}{hint}",
                                 param_hint="--record" if record_path else None)
    style = Style(want_colour(sys.stdout, color))
    session = PlaySession(env, seed, hints_enabled=hints, player=player)
    if not shell.run(session, style):
        return
    result = session.info.get("result") or env.result
    # sys.stdout, not click.echo: click rewraps an ASCII stream as UTF-8, which would bypass the ASCII
    # stand-ins that safe_streams set up for such a terminal
    sys.stdout.write(debrief.render(env, result, session.hints_used, style) + "\n")
    path, warning = session.save_or_fallback(target)
    if warning:
        sys.stdout.flush()
        sys.stderr.write(style.red(f"\n{warning}") + "\n")
    sys.stdout.write(end_message(str(path), env.spec.id, seed, session.agent_label, columns(sys.stdout),
                                 folder=not warning and _holds_only_records(path.parent),
                                 tasks_dir=_own_tasks_dir(task_id, dirs)) + "\n")
    sys.stdout.flush()


def _holds_only_records(folder: Path) -> bool:
    """Whether ``folder`` holds nothing but JSON files (hidden ones aside), as runs/play or a class's folder
    does: a report on a folder reads every JSON file under it, which in /tmp or a project directory is slow
    and meets files that are no records, so the folder's report is suggested only for such a folder."""
    try:
        with os.scandir(folder) as entries:
            return all(e.is_file() and e.name.endswith(".json") for e in entries if not e.name.startswith("."))
    except OSError:
        return False


def _own_tasks_dir(task_id: str, dirs: tuple[str, ...]) -> str | None:
    """The folder of a task that is not bundled (a path, --tasks-dir, SREZERO_TASKS_PATH), or None."""
    from srezero.task.loader import bundled_dir, task_file

    path = task_file(task_id, dirs)
    if path is None or path.resolve().parent == bundled_dir().resolve():
        return None
    return str(path.resolve().parent)


def end_message(path: str, task_id: str, seed: int, label: str = "",
                width: int | None = None, folder: bool = True, tasks_dir: str | None = None) -> str:
    """Where the record went, how to replay it and how to report on it. Each command is a line of its
    own, never wrapped, so it can be copied whole; the prose around it wraps to ``width`` columns.
    ``folder=False`` (a record saved to a temporary file instead, or in a folder that holds more than
    records, such as /tmp) leaves out the folder's report: the commands on the file itself remain. ``tasks_dir``: the folder of a
    task of one's own, which each command is then given (they look the task up by id)."""
    import shlex

    from srezero.play.shell import fit

    here = os.getcwd()
    if os.path.isabs(path) and os.path.commonpath([here, path]) == here:
        path = os.path.relpath(path, here)
    q = shlex.quote(path)
    own = f" --tasks-dir {shlex.quote(tasks_dir)}" if tasks_dir else ""
    replay_note = "the same actions give the same result"
    where = shlex.quote(os.path.dirname(path) or ".")
    attempt = f" as {label} (a repeat of this task and seed in that folder)" if "#" in label else ""
    lines = [fit(f"transcript saved to {path}{attempt}", width),
             fit(f"  replay it ({replay_note}):", width),
             f"    SREZERO_REPLAY={q} srezero run --task {shlex.quote(task_id)} --agent replay --seed {seed}{own}",
             fit("  print this debrief again:", width),
             f"    srezero debrief {q}{own}",
             fit("  report on it (HTML, with a step-by-step replay page):", width),
             f"    srezero report {q}{own}"]
    if folder:
        lines += [fit("  or on the folder's records together:", width), f"    srezero report {where}{own}"]
    return "\n" + "\n".join(lines)
