"""``srezero mcp``: serve one episode to an MCP client over stdio or streamable HTTP (127.0.0.1 only)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import click
import orjson


@click.command("mcp")
@click.option("--task", "task_id", required=True, help="task id or path to a .toml file")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--record", "record", type=click.Path(dir_okay=False),
              help="where to write the episode record when it ends "
                   "[default: $XDG_STATE_HOME/srezero/runs/mcp/..., outside the agent's workspace]")
@click.option("--http", "http_port", type=click.IntRange(1, 65535), metavar="PORT",
              help="serve streamable HTTP on http://127.0.0.1:PORT/mcp instead of stdio")
@click.option("--print-config", is_flag=True, help="print a ready-to-paste MCP client configuration and exit")
def mcp_cmd(task_id: str, seed: int, record: str | None, http_port: int | None, print_config: bool) -> None:
    """Serve one seeded episode; every srezero tool becomes an MCP tool. The record is written at the end."""
    if print_config:
        sys.stdout.write(orjson.dumps(client_config(task_id, seed, http_port), option=orjson.OPT_INDENT_2).decode()
                         + "\n")
        return
    try:
        from srezero.adapters._common import default_record_path
        from srezero.adapters.mcp_server import EpisodeServer, serve
    except ImportError as exc:
        raise click.ClickException(f"the MCP server needs the mcp extra: pip install 'srezero[mcp]' ({exc})") from None
    try:
        server = EpisodeServer(task_id, seed)
    except (KeyError, ValueError) as exc:
        raise click.ClickException(str(exc).strip("'\"")) from None
    server.record_path = default_record_path("mcp", server.env) if record is None else Path(record)
    click.echo(f"srezero mcp: {server.env.briefing.episode_id} ({'stdio' if http_port is None else f'http://127.0.0.1:{http_port}/mcp'}); "
               f"record -> {server.record_path}", err=True)
    serve(server, http_port)


def client_config(task_id: str, seed: int, http_port: int | None = None) -> dict:
    """The ``mcpServers`` block MCP hosts (Claude Code's .mcp.json, Claude Desktop, Cursor...) read."""
    if http_port is not None:
        return {"mcpServers": {"srezero": {"type": "http", "url": f"http://127.0.0.1:{http_port}/mcp"}}}
    exe = shutil.which("srezero") or "srezero"
    return {"mcpServers": {"srezero": {"type": "stdio", "command": exe,
                                       "args": ["mcp", "--task", task_id, "--seed", str(seed)]}}}
