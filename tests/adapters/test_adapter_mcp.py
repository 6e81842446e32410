"""The MCP front end: tool listing, oracle play in process and over stdio, errors, records, the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

mcp = pytest.importorskip("mcp")

import anyio  # noqa: E402
import orjson  # noqa: E402
from click.testing import CliRunner  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

import srezero  # noqa: E402
from srezero.adapters import _common  # noqa: E402
from srezero.adapters._common import episode_record, tool_declarations  # noqa: E402
from srezero.adapters.mcp_server import EpisodeServer  # noqa: E402
from srezero.cli import cli  # noqa: E402
from srezero.commands import mcp as mcp_command  # noqa: E402
from srezero.sweep.records import write_atomic  # noqa: E402
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
    assert "episode ended (resolved): marks" in results[-1].content[0].text
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
    monkeypatch.setattr(_common, "DEFAULT_RUNS_DIR", tmp_path / "runs")
    monkeypatch.chdir(tmp_path)
    out = CliRunner().invoke(cli, ["mcp", "--task", TASK, "--seed", "4", "--http", "8765"])
    assert out.exit_code == 0, out.output
    assert calls == [("streamable-http", {"host": "127.0.0.1", "port": 8765})]
    monkeypatch.setattr(mcp_command, "installed_package", mcp_command.running_package)  # an installed srezero
    out = CliRunner().invoke(cli, ["mcp", "--task", TASK, "--seed", "4", "--print-config"])
    conf = orjson.loads(out.output)["mcpServers"]["srezero"]
    assert conf["args"] == ["mcp", "--task", TASK, "--seed", "4"] and conf["type"] == "stdio"
    out = CliRunner().invoke(cli, ["mcp", "--task", "no-such-task"])
    assert out.exit_code != 0 and "unknown task" in out.output


# ---------------------------------------------------------------------- abandoned episodes, records


def _session(server: EpisodeServer, actions: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """One in-process client session that plays ``actions`` and leaves without resolve."""

    async def main() -> list[Any]:
        with anyio.fail_after(HANG_GUARD_S):
            async with mcp.Client(server) as client:
                return [await client.call_tool(name, args) for name, args in actions]

    return anyio.run(main)


#: A harmful write, then the client goes away: what an agent that stops early leaves behind.
LEAVE_EARLY = [("get_alerts", {}), ("restart", {"target": "database"})]


def _core_abandoned(seed: int) -> bytes:
    """The record the core API gives for LEAVE_EARLY then ``finish()``, as an abandoned MCP record."""
    from srezero.sweep.records import REWARD, dumps

    env = srezero.make(TASK, seed, reward=REWARD)  # records carry the sweep's shaped rewards
    env.reset(seed=seed)
    for name, args in LEAVE_EARLY:
        env.step({"tool": name, "args": args})
    env.finish()
    return dumps({**episode_record(env, "mcp"), "end": "abandoned"})


def test_a_session_that_ends_early_is_finished_truncated_and_recorded(tmp_path: Path) -> None:
    # a session that only looked (hosts list tools to check a server) leaves no record, and the episode open
    idle = EpisodeServer(TASK, SEED, record=tmp_path / "idle.json")
    assert _session(idle, []) == [] and idle.env.result is None and not (tmp_path / "idle.json").exists()

    record = tmp_path / "rec.json"
    server = EpisodeServer(TASK, SEED, record=record)
    results = _session(server, LEAVE_EARLY)
    assert not any(r.is_error for r in results)
    saved = orjson.loads(record.read_bytes())
    assert saved["end"] == "abandoned"
    assert saved["result"]["truncated"] is True and saved["result"]["resolved"] is False
    assert saved["result"]["wrong_fixes"] == 1  # the harmful restart is scored, not lost
    # the episode's own finish path, byte for byte (deterministic)
    assert record.read_bytes() == _core_abandoned(SEED)
    # replaying the record stops where the client left: the same truncated result, no resolve added
    from srezero.agents import registry
    from srezero.agents.runner import run_episode
    from srezero.sweep.records import REWARD

    replayed = run_episode(srezero.make(TASK, SEED, reward=REWARD), registry.create("replay", path=str(record)), SEED)
    replayed = orjson.loads(orjson.dumps(replayed))  # as saved: tuples become lists
    assert replayed["result"] == saved["result"] and replayed["trajectory"] == saved["trajectory"]
    # the server keeps answering, and says the episode is over
    after = _session(server, [("get_alerts", {})])[0]
    assert after.is_error and "episode has ended" in after.content[0].text


#: POSIX signals a host uses to stop a stdio server; stdin stays open, so only the signal ends it.
STOP = ["SIGTERM", "SIGHUP", "SIGINT"]


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
@pytest.mark.parametrize("how", ["eof", *STOP])
def test_stdio_server_records_the_episode_on_eof_and_on_signals(how: str, tmp_path: Path) -> None:
    import json
    import select
    import signal
    import subprocess

    record = tmp_path / "rec.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)}
    proc = subprocess.Popen([sys.executable, "-c", "from srezero.cli import main; main()", "mcp", "--task", TASK,
                             "--seed", str(SEED), "--record", str(record)], cwd=str(tmp_path), env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def rpc(msg: dict[str, Any]) -> dict[str, Any] | None:
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", **msg}) + "\n")
        proc.stdin.flush()
        if "id" not in msg:
            return None
        ready, _, _ = select.select([proc.stdout], [], [], HANG_GUARD_S)
        assert ready, "no answer from the server"
        return json.loads(proc.stdout.readline())

    try:
        rpc({"id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                                         "clientInfo": {"name": "test", "version": "0"}}})
        rpc({"method": "notifications/initialized"})
        for i, (name, args) in enumerate(LEAVE_EARLY, 2):
            assert not rpc({"id": i, "method": "tools/call", "params": {"name": name, "arguments": args}})[
                "result"].get("isError")
        if how == "eof":
            proc.stdin.close()
        else:
            proc.send_signal(getattr(signal, how))
        rc = proc.wait(timeout=HANG_GUARD_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    # a stop signal kills the process by that signal (after the record), EOF is a normal exit
    assert rc == (0 if how == "eof" else -getattr(signal, how))
    assert record.read_bytes() == _core_abandoned(SEED)


def test_a_record_that_cannot_be_written_is_never_named_to_the_agent(oracle, tmp_path: Path,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    server = EpisodeServer(TASK, SEED, record=tmp_path / "ok" / "rec.json")
    blocker = tmp_path / "secret-answers"
    blocker.write_text("a file, so nothing can be created under it")
    server.record_path = blocker / "rec.json"  # became unwritable after startup
    with caplog.at_level("ERROR", logger="srezero.mcp"):
        last = _session(server, [(a["tool"], a["args"]) for a in oracle.actions])[-1]
    text = last.content[0].text
    assert "episode ended (resolved): marks" in text and "could not write the record (see server log)" in text
    assert "secret-answers" not in text and str(tmp_path) not in text
    assert "secret-answers" in caplog.text  # the detail goes to the server's log (stderr)


def test_cli_refuses_a_record_it_would_overwrite_or_could_not_write(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path) -> None:
    served: list[EpisodeServer] = []
    monkeypatch.setattr("srezero.adapters.mcp_server.serve", lambda server, port=None: served.append(server))
    record = tmp_path / "rec.json"
    record.write_bytes(b"an earlier episode")
    out = CliRunner().invoke(cli, ["mcp", "--task", TASK, "--seed", "3", "--record", str(record)])
    assert out.exit_code != 0 and str(record) in out.output and "--overwrite" in out.output
    assert record.read_bytes() == b"an earlier episode" and served == []
    out = CliRunner().invoke(cli, ["mcp", "--task", TASK, "--seed", "3", "--record", str(record), "--overwrite"])
    assert out.exit_code == 0, out.output
    assert [s.record_path for s in served] == [record]
    # unwritable (under a regular file): fails at startup, not after a whole episode
    out = CliRunner().invoke(cli, ["mcp", "--task", TASK, "--record", str(record / "x.json")])
    assert out.exit_code != 0 and "cannot write the record" in out.output and len(served) == 1
    assert f"{record} is a file, not a folder" in " ".join(out.output.split())
    # missing folders are fine, and made only when a record is written: checking creates nothing
    deep = tmp_path / "new" / "deeper" / "rec.json"
    out = CliRunner().invoke(cli, ["mcp", "--task", TASK, "--seed", "3", "--record", str(deep)])
    assert out.exit_code == 0 and len(served) == 2 and not (tmp_path / "new").exists()
    out = CliRunner().invoke(cli, ["mcp", "--task", TASK, "--seed", "-1"])
    assert out.exit_code == 2 and "-1" in out.output and len(served) == 2


def test_cli_seeds_moves_on_to_the_first_seed_without_a_record(monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    served: list[EpisodeServer] = []
    monkeypatch.setattr("srezero.adapters.mcp_server.serve", lambda server, port=None: served.append(server))
    monkeypatch.setattr(_common, "DEFAULT_RUNS_DIR", tmp_path / "runs")
    seen = []
    for _ in range(3):
        out = CliRunner().invoke(cli, ["mcp", "--task", TASK, "--seeds", "4-6"])
        assert out.exit_code == 0, out.output
        seen.append(served[-1].env.seed)
        write_atomic(served[-1].record_path, b"played")  # what the end of that episode leaves
    assert seen == [4, 5, 6]
    out = CliRunner().invoke(cli, ["mcp", "--task", TASK, "--seeds", "4-6"])
    assert out.exit_code != 0 and "--overwrite" in out.output and len(served) == 3
    for bad in (["--seeds", "2", "--seed", "1"], ["--seeds", "2", "--record", "x.json"], ["--seeds", "-1"]):
        out = CliRunner().invoke(cli, ["mcp", "--task", TASK, *bad])
        assert out.exit_code != 0 and len(served) == 3, bad


def test_print_config_carries_every_option_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(mcp_command, "installed_package", mcp_command.running_package)

    def args(*extra: str) -> list[str]:
        out = CliRunner().invoke(cli, ["mcp", "--task", TASK, *extra, "--print-config"])
        assert out.exit_code == 0, out.output
        return orjson.loads(out.output)["mcpServers"]["srezero"]["args"]

    # hosts start servers in a directory of their own: the record path is made absolute
    assert args("--seed", "2", "--record", "r.json", "--overwrite") == [
        "mcp", "--task", TASK, "--seed", "2", "--record", str(tmp_path / "r.json"), "--overwrite"]
    assert args("--seeds", "0-4") == ["mcp", "--task", TASK, "--seeds", "0-4"]
    assert args() == ["mcp", "--task", TASK, "--seed", "0"]


def test_cli_serves_a_task_from_tasks_dir_and_its_config_carries_the_folder(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """As `run` and `play` take it; the host starts the printed command elsewhere, so the folder is absolute."""
    served: list[EpisodeServer] = []
    monkeypatch.setattr("srezero.adapters.mcp_server.serve", lambda server, port=None: served.append(server))
    monkeypatch.setattr(_common, "DEFAULT_RUNS_DIR", tmp_path / "runs")
    monkeypatch.setattr(mcp_command, "installed_package", mcp_command.running_package)
    monkeypatch.delenv("SREZERO_TASKS_PATH", raising=False)
    bundled = Path(ROOT) / "tasks" / "inc-001.toml"
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "class-01.toml").write_text(bundled.read_text().replace('id = "inc-001"', 'id = "class-01"', 1))
    monkeypatch.chdir(tmp_path)
    out = CliRunner().invoke(cli, ["mcp", "--task", "class-01", "--seed", "2"])
    assert out.exit_code != 0 and "unknown task 'class-01'" in out.output and served == []
    out = CliRunner().invoke(cli, ["mcp", "--task", "class-01", "--seed", "2", "--tasks-dir", "mine"])
    assert out.exit_code == 0, out.output
    assert served[0].env.spec.id == "class-01" and served[0].env.seed == 2
    assert served[0].record_path == tmp_path / "runs" / "mcp" / "episodes" / "mcp" / "class-01" / "seed-0002.json"
    out = CliRunner().invoke(cli, ["mcp", "--task", "class-01", "--tasks-dir", "mine", "--print-config"])
    args = orjson.loads(out.output)["mcpServers"]["srezero"]["args"]
    assert args == ["mcp", "--task", "class-01", "--seed", "0", "--tasks-dir", str(tmp_path / "mine")]
    monkeypatch.chdir(Path.home())  # where a host may start it
    out = CliRunner().invoke(cli, args)
    assert out.exit_code == 0 and served[-1].env.spec.id == "class-01", out.output


def test_print_config_names_this_installs_script_not_the_first_on_path(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A pyenv shim or an older virtualenv first on PATH would start another srezero than this one."""
    beside = Path(sys.executable).parent / "srezero"
    if not beside.is_file():
        pytest.skip("this interpreter has no srezero script beside it (not installed with pip)")
    shim = tmp_path / "shims" / "srezero"
    shim.parent.mkdir()
    shim.write_text("#!/bin/sh\nexit 1\n")
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setattr(mcp_command, "installed_package", mcp_command.running_package)
    out = CliRunner().invoke(cli, ["mcp", "--task", TASK, "--seed", "1", "--print-config"])
    assert out.exit_code == 0, out.output
    assert orjson.loads(out.output)["mcpServers"]["srezero"]["command"] == str(beside)


def test_print_config_gives_a_task_file_as_an_absolute_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A host starts the server in a directory of its own: a relative task file would not be found."""
    monkeypatch.setattr(mcp_command, "installed_package", mcp_command.running_package)
    (tmp_path / "mine.toml").write_text((Path(__file__).resolve().parents[2] / "tasks" / "inc-001.toml").read_text())
    monkeypatch.chdir(tmp_path)
    out = CliRunner().invoke(cli, ["mcp", "--task", "mine.toml", "--seed", "1", "--print-config"])
    assert out.exit_code == 0, out.output
    args = orjson.loads(out.output)["mcpServers"]["srezero"]["args"]
    assert args == ["mcp", "--task", str(tmp_path / "mine.toml"), "--seed", "1"]


def test_print_config_runs_this_clone_when_the_interpreter_would_import_another(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``python -m srezero`` from a clone that is not the installed srezero: the installed script would
    play other code, so the block starts this interpreter on this clone."""
    monkeypatch.setattr(mcp_command, "installed_package", lambda: tmp_path / "elsewhere" / "srezero")
    out = CliRunner().invoke(cli, ["mcp", "--task", TASK, "--seed", "1", "--print-config"])
    assert out.exit_code == 0, out.output
    conf = orjson.loads(out.output)["mcpServers"]["srezero"]
    clone = mcp_command.running_package().parent
    assert conf["command"] == sys.executable
    assert conf["args"] == ["-m", "srezero", "mcp", "--task", TASK, "--seed", "1"]
    assert conf["env"] == {"PYTHONPATH": str(clone)}
    # what the block starts imports this clone's srezero, from another directory and without our PYTHONPATH
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | conf["env"]
    probe = subprocess.run([conf["command"], "-c", "import srezero; print(srezero.__file__)"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, check=True)
    assert Path(probe.stdout.strip()).resolve().parent == mcp_command.running_package()


def test_records_have_the_sweep_keys_and_replay_from_the_run_directory(oracle, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from srezero.sweep import records as rec
    from srezero.sweep.runner import agent_spec
    from srezero.sweep.runner import episode_record as sweep_record
    from srezero.task.loader import get_task

    monkeypatch.setattr(_common, "DEFAULT_RUNS_DIR", tmp_path / "runs")
    server = EpisodeServer(TASK, SEED, record=_common.default_record_path("mcp", TASK, SEED))
    _session(server, [(a["tool"], a["args"]) for a in oracle.actions])
    saved = orjson.loads(server.record_written.read_bytes())
    spec = get_task(TASK)
    swept = sweep_record(spec, rec.task_hash(spec), agent_spec("random"), SEED, None)
    assert set(saved) == set(swept)
    assert saved["privileged"] is False and saved["episode_id"] == server.env.episode_id
    # the run directory replays through the ordinary CLI (replay matches records on episode_id)
    out = CliRunner().invoke(cli, ["run", "--task", TASK, "--seed", str(SEED), "--agent", "replay",
                                   "--replay", str(tmp_path / "runs" / "mcp"), "--json"])
    assert out.exit_code == 0, out.output
    replayed = orjson.loads(out.output)
    assert replayed["result"] == saved["result"]
    assert [t["action"] for t in replayed["trajectory"]] == [t["action"] for t in saved["trajectory"]]


def test_no_change_notifications_are_advertised() -> None:
    async def main() -> Any:
        with anyio.fail_after(HANG_GUARD_S):
            async with mcp.Client(EpisodeServer(TASK, SEED)) as client:
                return client.server_capabilities

    caps = anyio.run(main)
    assert caps.tools.list_changed is False and caps.prompts.list_changed is False
    assert not caps.resources.subscribe and not caps.resources.list_changed


def test_the_page_is_a_prompt_and_a_resource() -> None:
    """Both capabilities the server advertises have content: the brief and page, and nothing else (no
    ground truth, no record path)."""
    async def main() -> Any:
        with anyio.fail_after(HANG_GUARD_S):
            async with mcp.Client(EpisodeServer(TASK, SEED)) as client:
                resources = await client.list_resources()
                read = await client.read_resource("srezero://episode/page")
                prompt = await client.get_prompt("page")
                return resources, read, prompt

    resources, read, prompt = anyio.run(main)
    assert [str(r.uri) for r in resources.resources] == ["srezero://episode/page"]
    page = srezero.make(TASK, SEED).reset(seed=SEED)[0].text
    assert page in read.contents[0].text
    assert read.contents[0].text == prompt.messages[0].content.text


def test_the_last_result_says_which_budget_ended_the_episode() -> None:
    server = EpisodeServer(TASK, SEED)
    texts = [server.play("wait", {"seconds": 600}).content[0].text for _ in range(20) if server.env.result is None]
    assert "episode ended (the time budget is used up): marks" in texts[-1]
    assert all("episode ended" not in t for t in texts[:-1])


def test_a_busy_http_port_is_one_clear_error_before_anything_starts(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path) -> None:
    import socket

    served: list[EpisodeServer] = []
    monkeypatch.setattr("srezero.adapters.mcp_server.serve", lambda server, port=None: served.append(server))
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        out = CliRunner().invoke(cli, ["mcp", "--task", TASK, "--http", str(port), "--record", str(tmp_path / "r.json")])
    assert out.exit_code == 1 and f"cannot serve on 127.0.0.1:{port}" in out.output and "--http" in out.output
    assert served == [] and "record ->" not in out.output
