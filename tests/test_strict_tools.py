"""Strict function calling: the schemas strict mode accepts, and null meaning the default (tools/strict.py)."""

from __future__ import annotations

from typing import Any

import pytest

import srezero
from srezero.tools.registry import load_tools, openai_tools

TASK, SEED = "inc-001", 2


def _objects(node: Any) -> list[dict[str, Any]]:
    found = []
    if isinstance(node, dict):
        if node.get("type") == "object" and "properties" in node:
            found.append(node)
        for value in node.values():
            found += _objects(value)
    elif isinstance(node, list):
        for value in node:
            found += _objects(value)
    return found


def _keys(node: Any) -> set[str]:
    if isinstance(node, dict):
        return set(node) | {k for key, v in node.items() if key != "properties" for k in _keys(v)} | \
            {k for v in node.get("properties", {}).values() for k in _keys(v)}
    if isinstance(node, list):
        return {k for v in node for k in _keys(v)}
    return set()


def test_strict_schemas_require_every_property_and_drop_what_strict_mode_refuses() -> None:
    tools = openai_tools(strict=True)
    assert len(tools) == len(load_tools()) and all(t["function"]["strict"] is True for t in tools)
    objects = [o for t in tools for o in _objects(t["function"]["parameters"])]
    assert len(objects) > len(tools)  # the submit tool's claim object is converted too
    for obj in objects:
        assert obj["additionalProperties"] is False
        assert sorted(obj["required"]) == sorted(obj["properties"])
    assert not _keys([t["function"]["parameters"] for t in tools]) & {"default", "maxLength", "minLength"}
    # what was dropped is still said, in words
    logs = next(t for t in tools if t["function"]["name"] == "search_logs")["function"]["parameters"]
    assert "(at most 500 characters)" in logs["properties"]["pattern"]["description"]
    assert "null for the default (20)" in logs["properties"]["limit"]["description"]
    assert {"type": "null"} in logs["properties"]["limit"]["anyOf"]
    assert openai_tools()[0]["function"].get("strict") is None  # the default form is unchanged


def _optional_nulls(name: str) -> dict[str, Any]:
    schema = load_tools()[name].schema
    return {k: None for k in schema.get("properties", {}) if k not in schema.get("required", [])}


def test_an_optional_argument_sent_as_null_means_its_default_for_every_tool() -> None:
    """The same calls, once without the optional arguments and once with each sent as null (what a strict
    model sends), give byte-identical observations and results."""
    plain, nulls = srezero.make(TASK, SEED), srezero.make(TASK, SEED)
    plain.reset(seed=SEED)
    nulls.reset(seed=SEED)
    checked = 0
    for action in plain.oracle_plan():
        name, args = action["tool"], dict(action.get("args", {}))
        nulled = {**_optional_nulls(name), **args}
        if name == "submit_diagnosis":
            nulled["root_causes"] = [{**c, "detail": None} for c in args["root_causes"]]
            args = {**args, "root_causes": [{k: v for k, v in c.items() if k != "detail"} for c in args["root_causes"]]}
        a, b = plain.step({"tool": name, "args": args}), nulls.step({"tool": name, "args": nulled})
        assert a[0].text == b[0].text and a[0].ok, (name, a[0].text)
        checked += nulled != args
    assert checked >= 2
    assert plain.result == nulls.result


@pytest.mark.parametrize("name", ["get_alerts", "get_traces", "get_events", "get_changes", "wait", "get_status"])
def test_reads_with_every_optional_argument_null_run(name: str) -> None:
    env = srezero.make(TASK, SEED)
    env.reset(seed=SEED)
    obs = env.step({"tool": name, "args": _optional_nulls(name)})[0]
    assert obs.ok, obs.text


def test_a_required_argument_sent_as_null_is_an_invalid_action_that_says_so() -> None:
    env = srezero.make(TASK, SEED)
    env.reset(seed=SEED)
    obs = env.step({"tool": "search_logs", "args": {"service": None, "limit": None}})[0]
    assert not obs.ok and "service: required, and null is no value" in obs.text
    assert env.step("get_config(service=None)")[0].text.startswith("error: invalid arguments for get_config")
