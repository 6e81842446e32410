"""``srezero play``: work an incident yourself at the terminal, then read the debrief."""

from __future__ import annotations

import click


@click.command("play")
@click.argument("task_id")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--hints", is_flag=True, help="allow the `hint` command (graded hints, mildest first; recorded)")
@click.option("--record", "record_path", type=click.Path(dir_okay=False),
              help="where to save the transcript record [default: ./runs/play/<task>-<seed>.json]")
@click.option("--player", default="", help="a name for the record (agent label human:<name>), for classes")
@click.option("--color", "color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True,
              help="colour output; auto respects NO_COLOR and pipes")
def play_cmd(task_id: str, seed: int, hints: bool, record_path: str | None, player: str, color: str) -> None:
    """Play TASK_ID interactively: you are paged, you investigate and fix it, then a debrief.

    Type tool calls such as get_status(service="worker") or kubectl-style commands such as
    `kubectl logs worker --tail 20`; `help` lists every tool. See docs/play.md.
    """
    import sys

    import srezero
    from srezero.play import debrief, shell
    from srezero.play.session import PlaySession
    from srezero.play.style import Style, want_colour

    try:
        env = srezero.make(task_id, seed)
    except (KeyError, ValueError) as exc:
        raise click.ClickException(str(exc).strip("'\"")) from None
    if player and not player.replace("-", "").replace("_", "").isalnum():
        raise click.BadParameter("use letters, digits, - and _ only", param_hint="--player")
    style = Style(want_colour(sys.stdout, color))
    session = PlaySession(env, seed, hints_enabled=hints, player=player)
    if not shell.run(session, style):
        return
    result = session.info.get("result") or env.result
    click.echo(debrief.render(env, result, session.hints_used, style))
    suffix = f"-{player}" if player else ""
    path = session.save(record_path or f"runs/play/{env.spec.id}-{seed}{suffix}.json")
    click.echo(f"\ntranscript saved to {path}; replay it with: srezero report {path.parent}")
