"""MCP front end: one seeded episode served to an MCP client (Claude Code, Codex, any MCP host).

Every srezero tool is listed with its declared description and JSON schema (``$ref``-free), and a
call is one :meth:`Episode.step`: the same parser, validation, simulated cost and scoring as the
core API. A bad tool call (unknown tool, wrong or missing argument, a call after the end) comes back
as an MCP tool error (``is_error``) with the episode's message, and counts as an invalid action as
it would anywhere else; a malformed protocol message is answered by the SDK with a JSON-RPC error
and never reaches the episode. Nothing a client sends can crash the server. When the episode ends
(``resolve`` or a budget), its record is written atomically and the last tool result says the marks.
When the client goes away first (disconnect, stdin EOF, the server stopped by a signal), the episode
is finished as truncated and its record is written with ``"end": "abandoned"``.

In-process use (tests, notebooks)::

    server = EpisodeServer("inc-001", seed=3)
    async with mcp.Client(server) as client:
        await client.call_tool("get_alerts", {})

From the command line: ``srezero mcp --task inc-001 --seed 3`` (stdio) or ``--http 8765``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from mcp.types import Tool as MCPTool

import srezero
from srezero._version import __version__
from srezero.adapters._common import (
    END_WORDS,
    INSTRUCTIONS,
    budget_line,
    episode_record,
    summary_line,
    tool_declarations,
    write_record,
)
from srezero.sweep.records import REWARD

if TYPE_CHECKING:
    from srezero.task.spec import TaskSpec

log = logging.getLogger("srezero.mcp")

AGENT_LABEL = "mcp"

#: The record's ``end`` value when the client left before ``resolve`` or a budget (records of
#: episodes that ended normally have no ``end`` key, like sweep records).
ABANDONED = "abandoned"


def _annotations(kind: str) -> ToolAnnotations:
    """Hints MCP hosts use to decide what needs the user's approval: reads are read-only, writes are not."""
    return ToolAnnotations(read_only_hint=kind == "read", destructive_hint=kind == "write", open_world_hint=False)


def check_record_path(path: str | Path, overwrite: bool = False) -> Path:
    """Fail fast (``ValueError``) when the record could not be written at the end, or would replace an
    earlier episode's record: better at startup than after a whole episode has been played."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"the record path {path} is a directory; give a file name (--record PATH.json)")
    if path.exists() and not overwrite:
        raise ValueError(f"a record already exists at {path} (this task and seed were played before); "
                         "pass --overwrite (overwrite=True in Python) to replace it, or choose another seed")
    folder = path.parent  # folders still missing are made only when the record is written
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise ValueError(f"cannot write the record at {path}: {folder} is a file, not a folder")
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".probe")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ValueError(f"cannot write the record at {path}: {exc.strerror or exc}") from None
    return path


class EpisodeServer(MCPServer):
    """An MCP server whose tools drive one :class:`~srezero.episode.Episode` (reset on construction).

    ``record``: where the record is written at the end (checked now, see :func:`check_record_path`;
    ``overwrite`` allows replacing an existing one). A client session that ends before the episode
    does (the in-process client exits, stdin closes, the HTTP server stops) finishes it as truncated.
    """

    def __init__(self, task: str | TaskSpec, seed: int = 0, record: str | Path | None = None, overwrite: bool = False,
                 log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "WARNING") -> None:
        # an unknown task fails here, before anything is created; rewards as the sweep records them
        self.env = srezero.make(task, seed, reward=REWARD)
        # a record that exists, or could not be written at the end, stops the server now rather than
        # after a whole episode
        self.record_path = check_record_path(record, overwrite) if record is not None else None
        obs, _info = self.env.reset(seed=seed)
        self.page = obs.text
        self.record_written: Path | None = None
        self._told_empty = False  # log "no record" once, not at both the lifespan's and serve()'s exit
        brief = f"{INSTRUCTIONS}\n\n{self.page}"
        # subscriptions=False: nothing here ever changes, so advertise no listChanged/subscribe
        super().__init__(name="srezero", title="srezero incident", version=__version__, instructions=brief,
                         log_level=log_level, lifespan=_session, subscriptions=False)

        def page() -> str:
            return brief

        # hosts show prompts as commands (Claude Code: /mcp__srezero__page): one way to hand over the page
        self.prompt(name="page", title="the page", description="The on-call brief and the page that started "
                                                               "this incident.")(page)
        # and as a resource, for hosts that attach context from resources rather than prompts
        self.resource("srezero://episode/page", name="page", title="the page", mime_type="text/plain",
                      description="The on-call brief and the page that started this incident.")(page)

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
            why = END_WORDS.get(self.env.end_cause() or "", "ended")
            line = f"episode ended ({why}): " + summary_line(info["result"])
            # a failure's detail names the path (which holds the ground truth): it goes to the log only
            text += f"\n\n{line}" if self._write() else f"\n\n{line}\n(could not write the record (see server log))"
        else:
            text += "\n\n" + budget_line(self.env, obs)
        return CallToolResult(content=[TextContent(type="text", text=text)], is_error=not obs.ok)

    def abandon(self) -> None:
        """The client left before the end: finish the episode as truncated and write its record.

        Idempotent. A session without a single tool call leaves no record (hosts connect just to list
        tools, e.g. ``claude mcp list``; recording that would use up the seed) and the episode open."""
        if self.env.result is not None:
            return
        if not self.env.trajectory:
            if not self._told_empty:
                log.warning("srezero mcp: the client left before any tool call; no record written")
                self._told_empty = True
            return
        self.env.finish()
        log.warning("srezero mcp: the session ended (client gone or server stopped) before resolve or a "
                    "budget; episode finished as truncated")
        self._write(end=ABANDONED)

    def _write(self, end: str | None = None) -> bool:
        """Write the record if a path is set; False when that failed (the detail goes to the log only)."""
        if self.record_path is None:
            return True
        record = episode_record(self.env, AGENT_LABEL)
        if end is not None:
            record["end"] = end
        try:
            self.record_written = write_record(self.record_path, record)
        except OSError as exc:
            log.error("srezero mcp: could not write the episode record to %s: %s", self.record_path, exc)
            return False
        log.info("episode record written to %s", self.record_written)
        return True


@contextlib.asynccontextmanager
async def _session(server: EpisodeServer) -> AsyncIterator[dict[str, Any]]:
    """The server's lifespan: entered per stdio or in-process session, once for the HTTP server's life.
    Leaving it before the episode's end (EOF, disconnect, shutdown, cancellation) abandons the episode."""
    try:
        yield {}
    finally:
        server.abandon()


#: Signals that stop a stdio server (a host closing it, Ctrl-C in a terminal).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT) if os.name == "posix" else ()


async def _stdio_until_signal(server: EpisodeServer) -> None:
    """Serve stdio until EOF or a stop signal (Python's default would kill the process unrecorded)."""
    async with anyio.create_task_group() as tg:

        async def stop_on_signal() -> None:
            with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
                signum = await anext(signals)
            # delivered by the event loop, so never in the middle of a step
            log.warning("srezero mcp: stopped by signal %d", signum)
            server.abandon()
            # the SDK reads stdin in a thread that cancellation cannot interrupt: unwinding would wait
            # for the client's next line. The record is written; die by the signal, as the sender expects.
            sys.stdout.flush()
            sys.stderr.flush()
            signal.signal(signum, signal.SIG_DFL)  # not asyncio's SIGINT handler, which would unwind
            os.kill(os.getpid(), signum)
            os._exit(128 + signum)

        if STOP_SIGNALS:
            tg.start_soon(stop_on_signal)
        await server.run_stdio_async()
        tg.cancel_scope.cancel()


def serve(server: EpisodeServer, http_port: int | None = None) -> None:
    """Run until the client disconnects (stdio) or the process is stopped (streamable HTTP, 127.0.0.1
    only; uvicorn turns SIGINT/SIGTERM into a graceful shutdown). Either way an unfinished episode is
    finished as truncated and recorded."""
    try:
        if http_port is None:
            anyio.run(_stdio_until_signal, server)
        else:
            server.run("streamable-http", host="127.0.0.1", port=http_port)
    except KeyboardInterrupt:  # Ctrl-C: the same as any other way of stopping the server
        pass
    finally:
        server.abandon()  # a no-op when the lifespan's exit already did it
