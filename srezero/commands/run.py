"""``srezero run``: one agent, one task, one seed; the transcript and the result."""

from __future__ import annotations

import sys

import click
import orjson


@click.command("run")
@click.option("--task", "task_id", required=True, help="task id or path to a .toml file")
@click.option("--agent", default="random", show_default=True, help="agent name or package.module:Class")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--json", "as_json", is_flag=True, help="print the whole record as JSON")
@click.option("--quiet", is_flag=True, help="print only the result line")
@click.option("--out", type=click.Path(dir_okay=False), help="also write the record to this file")
@click.option("--model", help="model name, for LLM agents")
@click.option("--base-url", help="OpenAI-compatible endpoint, for LLM agents")
def run_cmd(task_id: str, agent: str, seed: int, as_json: bool, quiet: bool, out: str | None, model: str | None,
            base_url: str | None) -> None:
    """Run one episode and print what happened."""
    import srezero
    from srezero.agents import registry
    from srezero.agents.runner import run_episode

    try:
        env = srezero.make(task_id, seed)
    except (KeyError, ValueError) as exc:
        raise click.ClickException(str(exc).strip("'\"")) from None
    kwargs = {k: v for k, v in (("model", model), ("base_url", base_url)) if v}
    try:
        bot = registry.create(agent, **kwargs)
    except (ValueError, TypeError) as exc:
        raise click.ClickException(str(exc)) from None
    record = run_episode(env, bot, seed)
    record["agent"] = agent
    data = orjson.dumps(record, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2)
    if out:
        with open(out, "wb") as fh:
            fh.write(data)
    if as_json:
        sys.stdout.write(data.decode() + "\n")
        return
    r = record["result"]
    if not quiet:
        for t in record["trajectory"]:
            call = t["tool"] or "?"
            click.secho(f"[{t['step']:>2} +{t['sim_time_s']:>6.0f}s] > {call}({_args(t['args'])})",
                        fg="cyan" if t["ok"] else "red")
            text = t["text"] if len(t["text"]) < 1500 else t["text"][:1500] + "\n  ..."
            click.echo("  " + text.replace("\n", "\n  "))
    click.secho(f"{task_id} seed={seed} agent={agent}: marks {r['marks']:.1f}  success={r['success']}  "
                f"diagnosis={r['diagnosis']['score']:.2f}  mitigated={r['mitigated']}  "
                f"evidence={r['evidence_coverage']:.2f}  steps={r['steps']}  invalid={r['invalid_actions']}  "
                f"wrong_fixes={r['wrong_fixes']}", bold=True)
    for reason in r["mitigation"]["reasons"]:
        click.echo(f"  not mitigated: {reason}")


def _args(args: dict) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in (args or {}).items())
