"""A tool's entity argument is declared once, on ``@tool(..., target_arg=...)``; evidence scoring,
the write judge and the oracle's reads all derive from that declaration.

The regression these guard against: a new read tool used as a primitive's evidence signal made the
oracle send it without its entity (an invalid action) and could never count as evidence when its
entity argument was not one of the four names hard-coded in three tables.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Annotated

import pytest

import srezero
from srezero.errors import DeclarationError
from srezero.faults.base import Signal, read_action
from srezero.faults.kernel import FdExhaustion
from srezero.scoring.evidence import EvidenceTracker
from srezero.tools.registry import TOOLS, ToolError, ToolOutput, load_tools, target_arg, target_of, tool
from tests.conftest import play

#: What the tables hard-coded before target_arg existed (service, target, node, entity): these tools
#: must keep declaring the same argument. A new tool needs no entry here: its declaration is checked
#: by the derived test below.
EXPECTED = {
    "get_status": "service", "query_metrics": "target", "search_logs": "service", "get_traces": "service",
    "get_events": "entity", "get_config": "service", "get_changes": "service", "node_diagnostics": "node",
    "restart": "target", "rollback": "service", "scale": "service", "set_config": "service", "failover": "service",
    "drain_node": "node", "renew_certificate": "service", "cordon_node": "node", "set_sysctl": "node",
    "sync_clock": "node", "kill_process": "node", "cleanup_disk": "node", "expand_volume": "node",
}


def _pinned_declarations_hold() -> None:
    declared = {name: t.target_arg for name, t in load_tools().items() if t.target_arg}
    assert {name: declared.get(name) for name in EXPECTED} == EXPECTED


def test_declared_entity_arguments_of_the_bundled_tools() -> None:
    _pinned_declarations_hold()


def test_every_entity_argument_is_a_string_argument() -> None:
    """Derived from the declarations, so a new tool is covered without editing this file."""
    for name, t in load_tools().items():
        if t.target_arg:
            assert t.schema["properties"][t.target_arg].get("type") == "string", (name, t.target_arg)


def test_target_arg_must_name_an_argument() -> None:
    with pytest.raises(DeclarationError, match="target_arg 'nod' is not one of its arguments"):
        @tool("read", 5, target_arg="nod")
        def misdeclared_probe(ctx, node: Annotated[str, "node name"]) -> ToolOutput:  # pragma: no cover
            return ToolOutput(node)
    assert "misdeclared_probe" not in TOOLS


@pytest.fixture()
def iostat_probe() -> Iterator[str]:
    """A read tool whose entity argument has a name no table ever listed (``host``)."""
    load_tools()

    @tool("read", 5, target_arg="host")
    def iostat_probe(ctx, host: Annotated[str, "node name"],
                     top: Annotated[int, "how many processes"] = 5) -> ToolOutput:
        """Per-process disk I/O on a node (test tool)."""
        if host not in {n.name for n in ctx.world.topo.nodes}:
            raise ToolError(f"unknown node {host!r}")
        return ToolOutput(f"{host}: shipper 80 MB/s")

    try:
        yield "iostat_probe"
    finally:
        TOOLS.pop("iostat_probe", None)


def test_a_new_tool_needs_no_entry_in_expected(iostat_probe: str) -> None:
    _pinned_declarations_hold()
    test_every_entity_argument_is_a_string_argument()


def test_a_new_tool_with_its_own_entity_argument(iostat_probe: str) -> None:
    assert target_arg(iostat_probe) == "host" and target_of(iostat_probe, {"host": "n1", "top": 3}) == "n1"
    assert read_action(iostat_probe, "n1", {}, "shipper") == {"tool": iostat_probe, "args": {"host": "n1"}}
    ev = EvidenceTracker([(iostat_probe, "n1", {}, "shipper")], {"n1": {"web-1"}})
    assert ev.observe(1, iostat_probe, {"host": "n2"}, "n2: shipper 80 MB/s") == []
    assert ev.observe(2, iostat_probe, {"host": "n1"}, "n1: shipper 80 MB/s") == [0]


def test_a_new_tool_as_a_node_fault_signal_keeps_the_oracle_perfect(iostat_probe: str,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The reviewer's case: a node primitive that declares the new tool as evidence. The oracle must
    call it on the fault's node (no invalid action) and it must count as evidence."""
    base = play("inc-013", 0, "oracle")["result"]
    meta = FdExhaustion.meta
    monkeypatch.setattr(FdExhaustion, "meta", dataclasses.replace(
        meta, signals=(*meta.signals, Signal(iostat_probe, "node", pattern="shipper", description="the leaker"))))
    env = srezero.make("inc-013", 0)
    env.reset()
    reads = [a for a in env.oracle_plan() if a["tool"] == iostat_probe]
    node = env.world.faults[0].node.name
    assert reads == [{"tool": iostat_probe, "args": {"host": node}}]
    r = play("inc-013", 0, "oracle")["result"]
    assert r["invalid_actions"] == 0 and r["evidence"]["coverage"] == 1.0, r["evidence"]
    assert r["marks"] == base["marks"]
