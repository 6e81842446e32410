"""Submit tools: the structured diagnosis and the end of the episode."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from srezero.faults.base import CATEGORIES
from srezero.tools.registry import ToolError, ToolOutput, tool

if TYPE_CHECKING:
    from srezero.tools.context import ToolContext

Category = Literal[tuple(CATEGORIES)]  # type: ignore[valid-type]

# The meanings live in the schema so that every front end (native tool calls, MCP, inspect_ai, the
# Gymnasium envs' tool_specs) shows the same taxonomy the diagnosis is scored against.
CATEGORY_HELP = "fault category, one of: " + "; ".join(f"{name} = {meaning}" for name, meaning in CATEGORIES.items())


class Claim(BaseModel):
    """One root cause: where it is, what kind of fault it is, and the concrete detail."""

    model_config = ConfigDict(extra="forbid")
    entity: str = Field(max_length=200, description="where the fault is, named as get_topology and get_config show it: "
                        "a service (web_server), a replica or node by its name, a disk as <node>/<device>, a config "
                        "key as <service>.<key>. A coarser name also counts (a key's or replica's service, a disk's "
                        "node); a finer one does not (a replica for a fault of its whole service)")
    category: Category = Field(description=CATEGORY_HELP)
    detail: str = Field("", max_length=500, description="what is wrong, not only where: the key and its bad value, the device and how it fails, the release...")


@tool("submit", 5)
def submit_diagnosis(ctx: ToolContext,
                     root_causes: Annotated[list[Claim], Field(max_length=20),
                                            "root causes; an empty list means no fault (a false alarm, or a transient that is over)"],
                     summary: Annotated[str, Field(max_length=4000), "free-text summary (kept, not scored)"] = ""
                     ) -> ToolOutput:
    """Submit your diagnosis: the root causes as entity + category + detail. The last submission counts."""
    if ctx.episode is None:
        raise ToolError("submit_diagnosis is only available inside an episode")
    n = ctx.episode.record_diagnosis(root_causes, summary)
    return ToolOutput(f"diagnosis recorded ({n} root cause(s)); call resolve() when the incident is mitigated")


@tool("submit", 0)
def resolve(ctx: ToolContext, note: Annotated[str, Field(max_length=2000), "closing note"] = "") -> ToolOutput:
    """Declare the incident resolved and end the episode; the system is then verified for a while."""
    if ctx.episode is None:
        raise ToolError("resolve is only available inside an episode")
    ctx.episode.request_resolve(note)
    return ToolOutput("incident marked resolved; verifying the system")
