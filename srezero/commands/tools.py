"""``srezero tools``: the agent's tools with signatures, kinds and costs."""

from __future__ import annotations

import sys

import click
import orjson


@click.command("tools")
@click.option("--json", "as_json", is_flag=True, help="the JSON schema of every tool")
def tools_cmd(as_json: bool) -> None:
    """List the tools an agent can call."""
    from srezero.tools.registry import load_tools, tool_specs

    if as_json:
        sys.stdout.write(orjson.dumps(tool_specs(), option=orjson.OPT_INDENT_2).decode() + "\n")
        return
    for t in load_tools().values():
        click.echo(f"{t.kind:6} {t.cost_s:>4.0f}s  {t.signature()}")
        click.echo(f"              {t.description}")
