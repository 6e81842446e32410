"""A tool author's mistakes surface as a DeclarationError naming the tool, never as a tool that is
silently missing or that agents cannot understand."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import pytest

from srezero.errors import DeclarationError
from srezero.tools import registry
from srezero.tools.registry import TOOLS, ToolOutput, load_tools, tool

TOOLS_DIR = Path(registry.__file__).parent


def _declares_tools(path: Path) -> bool:
    """Does the module apply ``@tool(...)`` to a function?"""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef):
            for deco in node.decorator_list:
                if isinstance(deco, ast.Call) and getattr(deco.func, "id", None) == "tool":
                    return True
    return False


def test_every_module_that_declares_tools_is_listed() -> None:
    """A module left out of TOOL_MODULES is never imported: its tools would vanish without a word."""
    declaring = {p.stem for p in TOOLS_DIR.glob("*.py") if _declares_tools(p)}
    assert declaring and declaring == set(registry.TOOL_MODULES), (
        "list each module that declares tools in TOOL_MODULES (srezero/tools/registry.py)")


def test_every_listed_module_declares_a_loaded_tool() -> None:
    loaded = {t.fn.__module__.rsplit(".", 1)[-1] for t in load_tools().values()}
    assert loaded == set(registry.TOOL_MODULES)


def test_a_tool_without_a_docstring_is_refused() -> None:
    with pytest.raises(DeclarationError, match="tool 'mute_probe' has no docstring"):
        @tool("read", 5)
        def mute_probe(ctx, node: Annotated[str, "node name"]) -> ToolOutput:  # pragma: no cover
            return ToolOutput(node)
    assert "mute_probe" not in TOOLS


@pytest.fixture
def bare_probe() -> Iterator[str]:
    """A read tool whose argument has no description, declared for one test and removed after it."""
    load_tools()

    @tool("read", 5, target_arg="node")
    def bare_probe(ctx, node: str) -> ToolOutput:  # pragma: no cover
        """Probe a node (test tool)."""
        return ToolOutput(node)

    try:
        yield "bare_probe"
    finally:
        TOOLS.pop("bare_probe", None)


def test_an_argument_without_a_description_is_refused(bare_probe: str) -> None:
    with pytest.raises(DeclarationError, match="tool 'bare_probe': argument 'node' has no description"):
        _ = TOOLS[bare_probe].schema


@pytest.mark.parametrize(("kind", "cost", "problem"), [
    ("reed", 5, "kind 'reed' is not one of read, write, submit"),  # its reads would never count as evidence
    ("read", -5, "cost_s must be the simulated seconds a call takes (0 or more), not -5"),  # time would run back
    ("read", float("nan"), "not nan"),
])
def test_a_tool_of_an_unknown_kind_or_impossible_cost_is_refused(kind: str, cost: float, problem: str) -> None:
    with pytest.raises(DeclarationError, match=re.escape(problem)):
        tool(kind, cost)  # type: ignore[arg-type]


def test_srezero_tools_checks_every_declaration_before_listing(bare_probe: str) -> None:
    """Plain `srezero tools` listed a tool whose argument had no description, and exited 0."""
    from click.testing import CliRunner

    from srezero.cli import cli

    res = CliRunner().invoke(cli, ["tools"])  # main() prints a DeclarationError as one line
    assert isinstance(res.exception, DeclarationError) and "argument 'node' has no description" in str(
        res.exception) and bare_probe not in res.output, res.output


def test_make_refuses_a_tool_without_an_argument_description(bare_probe: str) -> None:
    """Through the Python API the episode started and the first call came back as an opaque 'internal
    error in the action'; the declaration error now stops make(), naming the tool and the argument."""
    import srezero

    with pytest.raises(DeclarationError, match="tool 'bare_probe': argument 'node' has no description"):
        srezero.make("inc-001", 0)


def test_every_front_end_shows_what_each_category_means() -> None:
    """The diagnosis is scored on the exact category, so an agent that only sees the tool schemas
    (MCP, inspect_ai, native tool calls) must be told what each category means, not only its name."""
    from srezero.adapters._common import tool_declarations
    from srezero.faults.base import CATEGORIES

    submit = next(d for d in tool_declarations() if d["name"] == "submit_diagnosis")
    category = submit["parameters"]["properties"]["root_causes"]["items"]["properties"]["category"]
    assert category["enum"] == list(CATEGORIES)
    for name, meaning in CATEGORIES.items():
        assert f"{name} = {meaning}" in category["description"]
