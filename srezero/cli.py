"""The ``srezero`` command line. Subcommands import their heavy modules lazily, inside the command.

Commands are registered in ``COMMANDS`` as ``name -> "module:function"`` and loaded on first use, so
``srezero --help`` and every command start fast; a new command is one module plus one line here.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys

import click

from srezero._version import __version__

COMMANDS: dict[str, str] = {
    "tasks": "srezero.commands.tasks:tasks_cmd",
    "task": "srezero.commands.tasks:task_group",
    "run": "srezero.commands.run:run_cmd",
    "faults": "srezero.commands.faults:faults_cmd",
    "tools": "srezero.commands.tools:tools_cmd",
    "sweep": "srezero.commands.sweep:sweep_cmd",
    "report": "srezero.commands.report:report_cmd",
    "compare": "srezero.commands.compare:compare_cmd",
    "generate": "srezero.commands.generate:generate_cmd",
    "play": "srezero.commands.play:play_cmd",
    "debrief": "srezero.commands.debrief:debrief_cmd",
    "mcp": "srezero.commands.mcp:mcp_cmd",
}

HELP = {
    "tasks": "List bundled and your own tasks (SREZERO_TASKS_PATH, --tasks-dir).",
    "task": "Show, validate, check (play on seeds) or export the schema of task files.",
    "run": "Run one agent on one task and seed; print the transcript and result.",
    "faults": "List fault primitives and their metadata.",
    "tools": "List the agent tools with their arguments.",
    "sweep": "Run tasks x agents x seeds in parallel, resumably, into a run directory.",
    "report": "Plots, Markdown and a static HTML report from a run directory.",
    "compare": "Paired comparison of two agents on the episodes both ran.",
    "generate": "Enumerate generated task variants (fault x target x noise).",
    "play": "Play an incident interactively at the terminal.",
    "debrief": "The play debrief of recorded episodes (a class's play records, a sweep's).",
    "mcp": "Serve one episode to an MCP client (stdio or streamable HTTP).",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name in COMMANDS if self._available(name)]

    def _available(self, name: str) -> bool:
        module = COMMANDS[name].split(":")[0]
        return importlib.util.find_spec(module) is not None

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        ref = COMMANDS.get(name)
        if ref is None or not self._available(name):
            return None
        module, _, attr = ref.partition(":")
        return getattr(importlib.import_module(module), attr)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, HELP.get(name, "")) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="srezero")
def cli() -> None:
    """srezero: a deterministic incident simulator and benchmark for SRE agents."""


def main() -> None:
    from srezero.errors import DeclarationError

    try:
        cli(standalone_mode=True, prog_name="srezero")
    except KeyboardInterrupt:
        sys.exit(130)
    except DeclarationError as exc:  # an extension's mistake: one line, not a traceback or a task's error
        click.echo(f"Error: {exc}", err=True)
        sys.exit(1)


if __name__ == "__main__":  # python -m srezero.cli (python -m srezero goes through srezero/__main__.py)
    main()
