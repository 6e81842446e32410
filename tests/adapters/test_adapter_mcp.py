"""The MCP front end: tool listing, oracle play in process and over stdio, errors, records, the CLI."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

mcp = pytest.importorskip("mcp")

import anyio  # noqa: E402
import orjson  # noqa: E402
from click.testing import CliRunner  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

from srezero.adapters._common import tool_declarations  # noqa: E402
from srezero.adapters.mcp_server import EpisodeServer  # noqa: E402
from srezero.cli import cli  # noqa: E402
from tests.adapters.conftest import SEED, TASK, core_rollout  # noqa: E402

HANG_GUARD_S = 120  # only stops a hung server from blocking the suite; never a performance bound


async def _play(client: mcp.Client, actions: list[dict[str, Any]]) -> list[Any]:
    return [await client.call_tool(a["tool"], a["args"]) for a in actions]


def _list_and_play(server: Any, actions: list[dict[str, Any]]) -> list[Any]:
    """Connect (in process or through a transport), check the listing, play the actions."""

    async def main() -> list[Any]:
        with anyio.fail_after(HANG_GUARD_S):
            async with mcp.Client(server) as client:
                _check_listing(await client.list_tools())
                page = await client.get_prompt("page")
                assert "PAGE" in page.messages[0].content.text
                return await _play(client, actions)

    return anyio.run(main)


def _check_listing(listing: Any) -> None:
    decls = {d["name"]: d for d in tool_declarations()}
    tools = {t.name: t for t in listing.tools}
    assert set(tools) == set(decls)
    for name, t in tools.items():
        assert t.description == decls[name]["description"]
        assert t.input_schema == decls[name]["parameters"]
        assert "$ref" not in orjson.dumps(t.input_schema).decode()
    assert tools["get_alerts"].annotations.read_only_hint is True
    assert tools["restart"].annotations.destructive_hint is True


def test_in_process_client_plays_the_oracle_to_the_core_marks(oracle, tmp_path: Path) -> None:
    record = tmp_path / "rec.json"
    server = EpisodeServer(TASK, SEED, record=record)
    *results, after_end = _list_and_play(server, [*oracle.actions, {"tool": "get_alerts", "args": {}}])
    assert not any(r.is_error for r in results)
    # the record holds the ground truth: no tool result may tell the agent where it is
    assert after_end.is_error and "episode has ended" in after_end.content[0].text
    assert all(str(tmp_path) not in r.content[0].text and "rec.json" not in r.content[0].text
               for r in [*results, after_end])
    assert [r.content[0].text.startswith(t) for r, t in zip(results, oracle.texts)] == [True] * len(results)
    assert "episode ended: marks" in results[-1].content[0].text
    assert server.env.result == oracle.result
    saved = orjson.loads(record.read_bytes())
    assert saved["result"]["marks"] == oracle.result["marks"] and saved["agent"] == "mcp"
    assert [t["tool"] for t in saved["trajectory"]] == [a["tool"] for a in oracle.actions]


def test_malformed_calls_are_mcp_errors_counted_like_the_core(oracle) -> None:
    claims = oracle.actions[-3]["args"]["root_causes"]
    assert oracle.actions[-3]["tool"] == "submit_diagnosis"
    bad = [("no_such_tool", {}), ("query_metrics", {"target": 3}), ("query_metrics", {"target": "database"}),
           ("get_alerts", {"verbose": True}), ("scale", {"service": "worker", "replicas": "many"}),
           ("submit_diagnosis", {"root_causes": "not json"})]
    server = EpisodeServer(TASK, SEED)

    async def main() -> tuple[list[Any], Any, Any]:
        with anyio.fail_after(HANG_GUARD_S):
            async with mcp.Client(server) as client:
                errors = [await client.call_tool(name, args) for name, args in bad]
                # a JSON-encoded array argument (some hosts send those) is decoded, not rejected
                as_text = await client.call_tool("submit_diagnosis", {"root_causes": orjson.dumps(claims).decode()})
                await _play(client, oracle.actions)
                return errors, as_text, await client.call_tool("get_alerts", {})

    errors, as_text, after_end = anyio.run(main)
    assert all(r.is_error and r.content[0].text.startswith("error:") for r in errors)
    assert not as_text.is_error
    assert after_end.is_error and "episode has ended" in after_end.content[0].text
    core = core_rollout(TASK, SEED, [{"tool": n, "args": a} for n, a in bad]
                        + [{"tool": "submit_diagnosis", "args": {"root_causes": claims}}] + oracle.actions)
    assert server.env.result["invalid_actions"] == len(bad)
    assert server.env.result == core.result


#: The checkout these tests belong to: the server subprocess must import it, not an installed srezero.
ROOT = str(Path(__file__).resolve().parents[2])


def test_stdio_subprocess_plays_the_oracle(oracle, tmp_path: Path) -> None:
    record = tmp_path / "stdio.json"
    # Without env the mcp SDK passes the server only HOME, PATH, SHELL and TERM: PYTHONPATH is dropped
    # and the subprocess would run whichever srezero is installed.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)}
    code = f"import srezero, sys; sys.exit(f'wrong srezero: {{srezero.__file__}}') if not srezero.__file__.startswith({ROOT!r}) " \
           "else None; from srezero.cli import main; main()"
    params = StdioServerParameters(command=sys.executable,
                                   args=["-c", code, "mcp", "--task", TASK,
                                         "--seed", str(SEED), "--record", str(record)], cwd=str(tmp_path), env=env)
    results = _list_and_play(params, oracle.actions)
    assert not any(r.is_error for r in results)
    saved = orjson.loads(record.read_bytes())
    assert saved["result"] == orjson.loads(orjson.dumps(oracle.result))


def test_cli_http_binds_localhost_and_prints_a_client_config(monkeypatch: pytest.MonkeyPatch,
                                                            tmp_path: Path) -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(EpisodeServer, "run", lambda self, transport, **kw: calls.append((transport, kw)))
    monkeypatch.chdir(tmp_path)
    out = CliRunner().invoke(cli, ["mcp", "--task", TASK, "--seed", "4", "--http", "8765"])
    assert out.exit_code == 0, out.output
    assert calls == [("streamable-http", {"host": "127.0.0.1", "port": 8765})]
    out = CliRunner().invoke(cli, ["mcp", "--task", TASK, "--seed", "4", "--print-config"])
    conf = orjson.loads(out.output)["mcpServers"]["srezero"]
    assert conf["args"] == ["mcp", "--task", TASK, "--seed", "4"] and conf["type"] == "stdio"
    out = CliRunner().invoke(cli, ["mcp", "--task", "no-such-task"])
    assert out.exit_code != 0 and "unknown task" in out.output
