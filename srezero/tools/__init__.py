"""The agent's tools, declared once in :mod:`read`, :mod:`write` and :mod:`submit`."""

from srezero.tools.registry import (
    TOOLS,
    ToolError,
    ToolOutput,
    ToolSpec,
    load_tools,
    openai_tools,
    tool,
    tool_specs,
)

__all__ = ["TOOLS", "ToolError", "ToolOutput", "ToolSpec", "load_tools", "openai_tools", "tool", "tool_specs"]
