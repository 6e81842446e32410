"""``srezero mcp``: serve one episode to an MCP client over stdio or streamable HTTP (127.0.0.1 only)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import click
import orjson

from srezero.commands import SEED
from srezero.commands.tasks import TASKS_DIR
from srezero.errors import message


@click.command("mcp")
@click.option("--task", "task_id", required=True, help="task id or path to a .toml file")
@click.option("--seed", type=SEED, help="the episode's seed  [default: 0]")
@click.option("--seeds", "seed_range", metavar="SEEDS",
              help="play the first of these seeds (a count 5, a list 3,7 or a range 0-9) that has no record "
                   "yet; each new server start moves on to the next (instead of --seed)")
@TASKS_DIR
@click.option("--record", "record", type=click.Path(dir_okay=False),
              help="where to write the episode record when it ends "
                   "[default: $XDG_STATE_HOME/srezero/runs/mcp/..., outside the agent's workspace]")
@click.option("--overwrite", is_flag=True, help="replace an existing record instead of refusing to start")
@click.option("--http", "http_port", type=click.IntRange(1, 65535), metavar="PORT",
              help="serve streamable HTTP on http://127.0.0.1:PORT/mcp instead of stdio "
                   "(every client of that URL shares the one episode)")
@click.option("--print-config", is_flag=True, help="print a ready-to-paste MCP client configuration and exit")
def mcp_cmd(task_id: str, seed: int | None, seed_range: str | None, dirs: tuple[str, ...], record: str | None,
            overwrite: bool, http_port: int | None, print_config: bool) -> None:
    """Serve one seeded episode; every srezero tool becomes an MCP tool. The record is written at the end."""
    if seed is not None and seed_range is not None:
        raise click.UsageError("give --seed or --seeds, not both")
    if seed_range is not None and record is not None:
        raise click.UsageError("--record names one file, so it cannot hold several seeds: use --seed with it")
    if print_config:
        args = _server_args(task_id, seed, seed_range, record, overwrite, tuple(dirs))
        sys.stdout.write(orjson.dumps(client_config(task_id, seed or 0, http_port, args=args),
                                      option=orjson.OPT_INDENT_2).decode() + "\n")
        return
    try:
        from srezero.adapters._common import default_record_path
        from srezero.adapters.mcp_server import EpisodeServer, serve
    except ImportError as exc:
        raise click.ClickException(f"the MCP server needs the mcp extra: pip install 'srezero[mcp]' ({exc})") from None
    from srezero.task.loader import TaskFileError, get_task

    try:
        spec = get_task(task_id, tuple(dirs))  # a path's task id names the default record
        if seed_range is not None:
            seed = _first_unplayed(spec.id, seed_range, overwrite)
        seed = seed or 0
        path = default_record_path("mcp", spec.id, seed) if record is None else Path(record)
        server = EpisodeServer(spec, seed, record=path, overwrite=overwrite)
    except (KeyError, ValueError, TaskFileError) as exc:
        raise click.ClickException(message(exc)) from None
    if http_port is not None and (why := _port_taken(http_port)):
        raise click.ClickException(f"cannot serve on 127.0.0.1:{http_port}: {why}; choose another --http port")
    click.echo(f"srezero mcp: {server.env.briefing.episode_id} (seed {seed}; "
               f"{'stdio' if http_port is None else f'http://127.0.0.1:{http_port}/mcp'}); "
               f"record -> {server.record_path}", err=True)
    serve(server, http_port)


def _port_taken(port: int) -> str | None:
    """Why the port cannot be bound, checked the way uvicorn binds it; None when it is free. Checked
    before the start-up line so that a busy port is one clear error, not a server that never started."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as exc:
            return exc.strerror or str(exc)
    return None


def _first_unplayed(task_id: str, seed_range: str, overwrite: bool) -> int:
    """The first seed of ``--seeds`` without a record at the default location (with ``--overwrite``: the first)."""
    from srezero.adapters._common import default_record_path
    from srezero.commands import parse_seeds

    seeds = parse_seeds(seed_range, 0)
    if overwrite:
        return seeds[0]
    for s in seeds:
        if not default_record_path("mcp", task_id, s).exists():
            return s
    where = default_record_path("mcp", task_id, seeds[0]).parent
    raise ValueError(f"every seed of --seeds {seed_range} already has a record in {where}; "
                     "give more seeds, or pass --overwrite to replay the first")


def _server_args(task_id: str, seed: int | None, seed_range: str | None, record: str | None,
                 overwrite: bool, dirs: tuple[str, ...] = ()) -> list[str]:
    """The command line a host should run: every option given here, a task file, task folders and the
    record as absolute paths (hosts start servers in a directory of their own)."""
    args = ["mcp", "--task", os.path.abspath(task_id) if task_id.endswith(".toml") else task_id]
    args += ["--seeds", seed_range] if seed_range is not None else ["--seed", str(seed or 0)]
    for d in dirs:
        args += ["--tasks-dir", os.path.abspath(d)]
    if record is not None:
        args += ["--record", os.path.abspath(record)]
    if overwrite:
        args.append("--overwrite")
    return args


def srezero_executable() -> str:
    """The ``srezero`` script of the Python running now (the one beside the interpreter, as pip installs
    it), so a host starts this install; the first one on ``PATH`` may be another (a pyenv shim, an older
    virtualenv)."""
    beside = Path(sys.executable).parent / ("srezero.exe" if os.name == "nt" else "srezero")
    return str(beside) if beside.is_file() else shutil.which("srezero") or "srezero"


def running_package() -> Path:
    """The directory of the srezero package this process runs."""
    import srezero

    return Path(srezero.__file__).resolve().parent


def installed_package() -> Path | None:
    """The srezero package this interpreter imports when a host starts it elsewhere (no PYTHONPATH, another
    working directory), or None when it imports none."""
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = "import pathlib, srezero; print(pathlib.Path(srezero.__file__).resolve().parent)"
    out = subprocess.run([sys.executable, "-c", probe], cwd=Path.home() if Path.home().is_dir() else "/",
                         env=env, capture_output=True, text=True, check=False)
    return Path(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip() else None


def client_config(task_id: str, seed: int, http_port: int | None = None, args: list[str] | None = None) -> dict:
    """The ``mcpServers`` block MCP hosts (Claude Code's .mcp.json, Claude Desktop, Cursor...) read.

    A host starts the server with its own working directory and environment. When this process runs a
    srezero that the interpreter would not import there (``python -m srezero`` from a clone that is not
    installed, or not the installed one), the block starts this interpreter on this clone instead of
    the installed script, so the host plays the code that printed it."""
    if http_port is not None:
        return {"mcpServers": {"srezero": {"type": "http", "url": f"http://127.0.0.1:{http_port}/mcp"}}}
    args = args or ["mcp", "--task", task_id, "--seed", str(seed)]
    running = running_package()
    if installed_package() != running:
        return {"mcpServers": {"srezero": {"type": "stdio", "command": sys.executable, "args": ["-m", "srezero", *args],
                                           "env": {"PYTHONPATH": str(running.parent)}}}}
    return {"mcpServers": {"srezero": {"type": "stdio", "command": srezero_executable(), "args": args}}}
