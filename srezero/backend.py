"""The Backend protocol: what the episode needs from the system it runs tools against.

The episode parses and validates actions against the one tool declaration, then hands the tool
name and validated arguments to a backend. :class:`SimBackend` (the default) runs the declared
implementations against the SimPy world; a Kubernetes backend (``srezero.backends.k8s``) maps the
same tools onto a live namespace and answers "not supported by this backend" for the rest.

Optionally, a backend names the tools it serves (``TOOLS``) and words their declarations for its
system (``describe(public) -> dict``, given and returning ``ToolSpec.public()``); a live episode then
offers the agent only those tools, in those words.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from srezero.tools.registry import ToolOutput, load_tools

if TYPE_CHECKING:
    from srezero.sim.world import World
    from srezero.tools.context import ToolContext


@runtime_checkable
class Backend(Protocol):
    name: str

    def call(self, tool: str, args: dict[str, Any]) -> ToolOutput:
        """Run one validated tool call; raise ToolError for input the backend cannot serve."""
        ...

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` of (simulated or real) time pass."""
        ...

    def now(self) -> float:
        """Seconds on the backend's clock."""
        ...


class SimBackend:
    """Runs tools against a :class:`~srezero.sim.world.World`."""

    name = "sim"

    def __init__(self, world: World, ctx: ToolContext) -> None:
        self.world = world
        self.ctx = ctx
        self._tools = load_tools()

    def call(self, tool: str, args: dict[str, Any]) -> ToolOutput:
        return self._tools[tool].fn(self.ctx, **args)

    def advance(self, seconds: float) -> None:
        self.world.advance(seconds)

    def now(self) -> float:
        return self.world.now
