"""The replay agent refuses a source it cannot replay, before any episode, and says what it takes."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

import srezero
from srezero.agents import registry
from srezero.agents.runner import run_episode
from srezero.cli import cli

ROOT = Path(__file__).resolve().parents[2]


def _record(tmp_path: Path, task: str, seed: int, agent: str = "oracle") -> Path:
    path = tmp_path / f"{task}-{seed}.json"
    path.write_bytes(orjson.dumps(run_episode(srezero.make(task, seed), registry.create(agent), seed)))
    return path


PASSWD = "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1::/usr/sbin:/usr/sbin/nologin\n"
#: file name -> (content, why it is refused)
NOT_REPLAYABLE = {
    "passwd": (PASSWD, "without an extension"),
    "task.toml": ((ROOT / "tasks" / "inc-001.toml").read_text(), "a .toml file"),
    "manifest.json": ('{"tasks": {}, "agents": {}}', "not an episode record (no trajectory)"),
    "list.json": ('[{"tool": "get_alerts", "args": {}}]', "not an episode record (no trajectory)"),
    "broken.json": ("{not json", "not JSON"),
    "passwd.txt": (PASSWD, "none of its 2 line(s) is an action"),
    "binary.txt": (b"\x89PNG\r\n\x1a\n\xff\xfe", "not a text file"),
}


@pytest.mark.parametrize("name", NOT_REPLAYABLE)
def test_a_file_that_is_neither_a_record_nor_an_action_file_is_refused(tmp_path: Path, name: str) -> None:
    content, why = NOT_REPLAYABLE[name]
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(ValueError) as err:
        registry.create("replay", path=str(path))
    assert why in str(err.value) and "the replay agent reads an episode record (.json" in str(err.value)
    assert "an action file (.jsonl or .txt" in str(err.value)


def test_the_cli_refuses_a_task_file_before_the_episode(tmp_path: Path) -> None:
    out = CliRunner().invoke(cli, ["run", "--task", "inc-001", "--agent", "replay", "--replay",
                                   str(ROOT / "tasks" / "inc-001.toml"), "--out", str(tmp_path / "r.json")])
    assert out.exit_code == 1 and "inc-001.toml is a .toml file; the replay agent reads" in out.output, out.output
    assert "marks" not in out.output and not (tmp_path / "r.json").exists()  # nothing played, nothing recorded


def test_an_action_file_with_some_bad_lines_still_replays(tmp_path: Path) -> None:
    """A hand-written session may hold typos: they are replayed as the invalid actions they are."""
    path = tmp_path / "session.txt"
    path.write_text("get_alerts()\nget_stauts(service='worker')\n")
    rec = run_episode(srezero.make("inc-003", 2), registry.create("replay", path=str(path)), 2)
    assert rec["status"] == "ok" and [t["ok"] for t in rec["trajectory"]] == [True, False, True]


def test_a_record_of_another_episode_is_refused_unless_asked_for(tmp_path: Path) -> None:
    path = _record(tmp_path, "inc-002", 1)
    for task, seed in (("inc-003", 1), ("inc-002", 4)):  # another task, another seed
        rec = run_episode(srezero.make(task, seed), registry.create("replay", path=str(path)), seed, catch=True)
        assert rec["status"] == "agent_error" and rec["trajectory"] == []
        assert f"{path} records inc-002 seed 1, another episode than this one: replay it with --task inc-002 " \
               "--seed 1, or add --agent-arg any_episode=true" in rec["error"]
    # asked for: its actions are played on this episode
    rec = run_episode(srezero.make("inc-003", 1), registry.create("replay", path=str(path), any_episode=True), 1)
    recorded = orjson.loads(path.read_bytes())
    assert rec["status"] == "ok" and [t["action"] for t in rec["trajectory"]] == [
        t["action"] for t in recorded["trajectory"]]
    with pytest.raises(ValueError, match="any_episode is true or false"):
        registry.create("replay", path=str(path), any_episode="yes")


def test_the_cli_names_the_episode_a_record_belongs_to(tmp_path: Path) -> None:
    path = _record(tmp_path, "inc-002", 1)
    base = ["run", "--agent", "replay", "--replay", str(path), "--quiet"]
    out = CliRunner().invoke(cli, [*base, "--task", "inc-003", "--seed", "1"])
    assert out.exit_code == 1 and "records inc-002 seed 1, another episode" in out.output, out.output
    out = CliRunner().invoke(cli, [*base, "--task", "inc-003", "--seed", "1", "--agent-arg", "any_episode=true"])
    assert out.exit_code == 0 and "inc-003 seed=1 agent=replay: marks" in out.output, out.output
    out = CliRunner().invoke(cli, [*base, "--task", "inc-002", "--seed", "1"])
    assert out.exit_code == 0 and "marks 100.0" in out.output, out.output
