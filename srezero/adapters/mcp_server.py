"""MCP front end: one seeded episode served to an MCP client (Claude Code, Codex, any MCP host).

Every srezero tool is listed with its declared description and JSON schema (``$ref``-free), and a
call is one :meth:`Episode.step`: the same parser, validation, simulated cost and scoring as the
core API. A bad call (unknown tool, wrong or missing argument, a call after the end) comes back as
an MCP tool error (``is_error``) with the episode's message, and counts as an invalid action as it
would anywhere else; nothing a client sends can crash the server. When the episode ends (``resolve``
or a budget), its record is written atomically and the last tool result says the marks.

In-process use (tests, notebooks)::

    server = EpisodeServer("inc-001", seed=3)
    async with mcp.Client(server) as client:
        await client.call_tool("get_alerts", {})

From the command line: ``srezero mcp --task inc-001 --seed 3`` (stdio) or ``--http 8765``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from mcp.types import Tool as MCPTool

import srezero
from srezero._version import __version__
from srezero.adapters._common import (
    INSTRUCTIONS,
    episode_record,
    summary_line,
    tool_declarations,
    write_record,
)

log = logging.getLogger("srezero.mcp")

AGENT_LABEL = "mcp"


def _annotations(kind: str) -> ToolAnnotations:
    """Hints MCP hosts use to decide what needs the user's approval: reads are read-only, writes are not."""
    return ToolAnnotations(read_only_hint=kind == "read", destructive_hint=kind == "write", open_world_hint=False)


class EpisodeServer(MCPServer):
    """An MCP server whose tools drive one :class:`~srezero.episode.Episode` (reset on construction)."""

    def __init__(self, task: str, seed: int = 0, record: str | Path | None = None,
                 log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "WARNING") -> None:
        self.env = srezero.make(task, seed)
        obs, _info = self.env.reset(seed=seed)
        self.page = obs.text
        self.record_path = Path(record) if record is not None else None
        self.record_written: Path | None = None
        brief = f"{INSTRUCTIONS}\n\n{self.page}"
        super().__init__(name="srezero", title="srezero incident", version=__version__, instructions=brief,
                         log_level=log_level)

        def page() -> str:
            return brief

        # hosts show prompts as commands (Claude Code: /mcp__srezero__page): one way to hand over the page
        self.prompt(name="page", title="the page", description="The on-call brief and the page that started "
                                                               "this incident.")(page)

    # ------------------------------------------------------------------ MCP surface
    async def list_tools(self) -> list[MCPTool]:
        """The declared tools; built per request so a client can never mutate a shared schema."""
        return [MCPTool(name=d["name"], title=d["name"].replace("_", " "), description=d["description"],
                        input_schema=d["parameters"], annotations=_annotations(d["kind"]))
                for d in tool_declarations()]

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> CallToolResult:
        """Every call, known tool or not, is one episode step (so malformed calls count as in the core)."""
        return self.play(name, arguments)

    # ------------------------------------------------------------------ the episode
    def play(self, name: str, arguments: dict[str, Any] | None) -> CallToolResult:
        """One step; returns the observation text, flagged ``is_error`` when the action was invalid."""
        if self.env.result is not None:
            # never name the record's path: it holds the ground truth, and the agent may read files
            text = f"error: the episode has ended ({summary_line(self.env.result)})"
            return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
        # array/object arguments sent as JSON text are decoded by the core's validator, as everywhere
        obs, _reward, _terminated, _truncated, info = self.env.step({"tool": str(name), "args": arguments or {}})
        text = obs.text
        if obs.done:
            text += "\n\n" + self._finish(info["result"])
        else:
            text += (f"\n\n[step {obs.step} of {self.env.spec.budget.steps}; "
                     f"{obs.time_left_s / 60:.1f} min of simulated time left]")
        return CallToolResult(content=[TextContent(type="text", text=text)], is_error=not obs.ok)

    def _finish(self, result: dict[str, Any]) -> str:
        line = "episode ended: " + summary_line(result)
        if self.record_path is not None:
            try:
                self.record_written = write_record(self.record_path, episode_record(self.env, AGENT_LABEL))
            except OSError as exc:
                log.error("could not write the episode record to %s: %s", self.record_path, exc)
                return f"{line}\n(could not write the record: {exc})"
            log.info("episode record written to %s", self.record_written)
        return line


def serve(server: EpisodeServer, http_port: int | None = None) -> None:
    """Run until the client disconnects (stdio) or the process is stopped (streamable HTTP, 127.0.0.1 only)."""
    if http_port is None:
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=http_port)
