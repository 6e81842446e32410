"""``srezero compare A B``: a paired comparison of two agents on the episodes both ran."""

from __future__ import annotations

import click


@click.command("compare")
@click.argument("a")
@click.argument("b")
@click.option("--json", "as_json", is_flag=True, help="print the comparison as JSON")
@click.option("--top", default=5, show_default=True, type=click.IntRange(min=0),
              help="tasks with the largest differences to list each way")
def compare_cmd(a: str, b: str, as_json: bool, top: int) -> None:
    """Compare agent A with agent B, each given as RUN_DIR:AGENT (or RUN_DIR when it holds one agent).

    Pairs every (task, seed) episode both ran and reports the mean difference in marks and success
    with a 95% CI that resamples tasks, and on how many tasks A scored higher, the same or lower.
    """
    from srezero.report.compare import compare, parse_side, verdict
    from srezero.report.load import RunDirError

    try:
        result = compare(parse_side(a), parse_side(b))
    except RunDirError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        import orjson

        click.echo(orjson.dumps(result, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2).decode())
        return
    m, s = result["marks"], result["success"]
    click.echo(f"A = {result['a']}   B = {result['b']}")
    click.echo(f"paired episodes: {result['episodes']} over {result['tasks']} tasks"
               + (f" (left out: {result['only_a']} only A ran, {result['only_b']} only B ran)"
                  if result["only_a"] or result["only_b"] else ""))
    if result["other_version"]:
        click.secho(f"left out {result['other_version']} shared episode(s) whose task file differs between the "
                    "two sides (task_hash)", fg="yellow", err=True)
    if len(result["engines"]) > 1:  # the same (task, seed) need not be the same incident under another build
        click.secho(f"warning: the records were made by {len(result['engines'])} different builds of the simulator or "
                    f"scoring (engine {', '.join(result['engines'])}), so a pair need not be the same incident: the "
                    "difference may come from the code change, not the agents; rerun both with one build",
                    fg="yellow", err=True)
    cap_a, cap_b = result["max_steps"]
    if cap_a != cap_b:  # one side had fewer steps: the difference measures the cap as much as the agents
        def cap(v: int | None) -> str:
            return "each task's budget" if v is None else f"--max-steps {v}"

        click.secho(f"warning: A ran with {cap(cap_a)} and B with {cap(cap_b)}, so the agents did not have the same "
                    "steps: the difference may come from the cap, not the agents", fg="yellow", err=True)
    ci_m = f"95% CI [{_signed(m['lo'], 1)}, {_signed(m['hi'], 1)}]" if m["lo"] is not None else "95% CI n/a"
    ci_s = (f"95% CI [{_signed(100 * s['lo'], 0)}%, {_signed(100 * s['hi'], 0)}%]" if s["lo"] is not None
            else "95% CI n/a")
    click.echo(f"marks     A {m['a']:6.1f}   B {m['b']:6.1f}   A - B {m['diff']:+6.1f}  {ci_m}")
    click.echo(f"success   A {100 * s['a']:5.0f}%   B {100 * s['b']:5.0f}%   A - B {100 * s['diff']:+5.0f}%  {ci_s}")
    click.echo(f"tasks: A higher on {result['wins']}, the same on {result['ties']}, lower on {result['losses']}")
    click.secho(verdict(result), bold=True)
    if top:
        per = result["per_task"]
        best = [p for p in per if p["diff"] > 0][:top]
        worst = [p for p in reversed(per) if p["diff"] < 0][:top]
        for label, rows in (("A ahead most", best), ("B ahead most", worst)):
            if rows:
                click.echo(f"{label}: " + ", ".join(f"{p['task']} ({p['diff']:+.1f})" for p in rows))


def _signed(x: float, digits: int) -> str:
    """``x`` with its sign; a bound that rounds to zero keeps more digits (up to 4), so "-0%" (which side of
    zero is it?) reads "-0.4%" and "+0.0" reads "+0.03"."""
    text = f"{x:+.{digits}f}"
    extra = 0
    while x != 0 and float(text) == 0 and extra < 4:
        extra += 1
        text = f"{x:+.{digits + extra}f}"
    return text
