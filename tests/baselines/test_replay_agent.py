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
    record = run_episode(srezero.make(task, seed), registry.create(agent), seed)
    path.write_bytes(orjson.dumps({**record, "agent": agent}))  # labelled, as `srezero run --out` writes it
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
    assert out.exit_code == 1 and "records inc-002 seed 1, not inc-003 seed 1: replay it with --task inc-002 " \
                                  "--seed 1" in " ".join(out.output.split()), out.output
    out = CliRunner().invoke(cli, [*base, "--task", "inc-003", "--seed", "1", "--agent-arg", "any_episode=true"])
    assert out.exit_code == 0 and "inc-003 seed=1 agent=replay: marks" in out.output, out.output
    out = CliRunner().invoke(cli, [*base, "--task", "inc-002", "--seed", "1"])
    assert out.exit_code == 0 and "marks 100.0" in out.output, out.output


# ---------------------------------------------------------------------- a run directory as the source


@pytest.fixture(scope="module")
def two_agents(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sweep's run directory: oracle and random on inc-001, seed 0."""
    from srezero.sweep import runner

    out = tmp_path_factory.mktemp("rv") / "sweep"
    runner.sweep(out, [runner.agent_spec("oracle"), runner.agent_spec("random")],
                 {"inc-001": srezero.get_task("inc-001")}, [0], progress=False)
    return out


def test_a_run_directory_of_several_agents_needs_one_named_before_any_episode(two_agents: Path,
                                                                               tmp_path: Path) -> None:
    base = ["run", "--task", "inc-001", "--agent", "replay", "--replay", str(two_agents), "--quiet"]
    for seed in ("0", "7"):  # the directory is ambiguous whatever the episode
        out = CliRunner().invoke(cli, [*base, "--seed", seed, "--out", str(tmp_path / "r.json")])
        assert out.exit_code == 1 and "agent_error" not in out.output, out.output
        assert f"{two_agents} holds records of several agents for the same episodes (oracle, random): choose " \
               "the one to replay with --agent-arg agent=NAME, e.g. --agent-arg agent=oracle" in out.output
        assert not (tmp_path / "r.json").exists()  # no failed episode recorded
    out = CliRunner().invoke(cli, [*base, "--seed", "0", "--agent-arg", "agent=oracle"])
    assert out.exit_code == 0 and "inc-001 seed=0 agent=replay: marks 100.0" in out.output, out.output
    out = CliRunner().invoke(cli, [*base, "--seed", "0", "--agent-arg", "agent=runbook"])
    assert out.exit_code == 1 and "no records of agent 'runbook'; the agents recorded there: oracle, random " \
                                  "(choose one with --agent-arg agent=NAME)" in out.output, out.output


def test_a_seed_without_a_record_is_named_as_such(two_agents: Path) -> None:
    out = CliRunner().invoke(cli, ["run", "--task", "inc-001", "--agent", "replay", "--replay", str(two_agents),
                                   "--seed", "7", "--agent-arg", "agent=oracle", "--quiet"])
    assert out.exit_code == 1, out.output
    assert f"{two_agents} has no record of agent oracle for inc-001 seed 7 (1 of the 1 episode(s) to play); it " \
           "holds inc-001 seed 0" in " ".join(out.output.split())
    assert "agent_error" not in out.output  # refused before the episode, not failed in it
    assert "two records" not in out.output


def test_a_sweep_of_an_ambiguous_directory_stops_before_running(two_agents: Path, tmp_path: Path) -> None:
    from srezero.sweep import records, runner

    replay = runner.agent_spec("replay", path=str(two_agents))
    with pytest.raises(ValueError, match=r"cannot create replay: .* several agents .*--agent-arg agent=NAME"):
        runner.sweep(tmp_path / "out", [replay], {"inc-001": srezero.get_task("inc-001")}, [0], progress=False)
    assert list(records.record_paths(tmp_path / "out")) == []


def test_loose_records_of_several_agents_replay_when_their_episodes_differ(tmp_path: Path) -> None:
    """A class's folder of play records: each student's episodes are theirs, so no agent need be named."""
    folder = tmp_path / "class"
    folder.mkdir()
    for agent, task in (("oracle", "inc-001"), ("random", "inc-003")):
        _record(tmp_path, task, 2, agent).rename(folder / f"{agent}.json")
    for agent, task in (("oracle", "inc-001"), ("random", "inc-003")):
        rec = run_episode(srezero.make(task, 2), registry.create("replay", path=str(folder)), 2)
        want = orjson.loads((folder / f"{agent}.json").read_bytes())
        assert rec["status"] == "ok" and orjson.loads(orjson.dumps(rec["result"])) == want["result"]
    # two records of one agent for one episode: which one to replay is the user's choice
    (folder / "again.json").write_bytes((folder / "oracle.json").read_bytes())
    with pytest.raises(ValueError, match=r"two records of agent oracle for inc-001 seed 2: .*again.json and "
                                         r".*oracle.json; give the one to replay with --replay FILE"):
        registry.create("replay", path=str(folder))
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.json").write_text('{"not": "a record"}')
    with pytest.raises(ValueError, match="no episode records in this folder"):
        registry.create("replay", path=str(empty))


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_help_says_how_to_choose_an_agent_in_a_run_directory(command: str) -> None:
    out = CliRunner().invoke(cli, [command, "--help"])
    assert "--agent-arg agent=NAME picks one agent's records" in " ".join(out.output.split())


def test_a_sweep_names_every_episode_its_replay_source_lacks_before_running(two_agents: Path, tmp_path: Path) -> None:
    out_dir = tmp_path / "again"
    out = CliRunner().invoke(cli, ["sweep", "--agents", "replay", "--replay", str(two_agents), "--agent-arg",
                                   "agent=oracle", "--tasks", "inc-001,inc-003", "--seeds", "2", "--out", str(out_dir),
                                   "--no-progress"])
    text = " ".join(out.output.split())
    assert out.exit_code == 1 and "has no record of agent oracle for inc-001 seed 1, inc-003 seed 0, inc-003 " \
                                  "seed 1 (3 of the 4 episode(s) to play); it holds inc-001 seed 0" in text, text
    assert not (out_dir / "episodes").exists()  # nothing ran
    out = CliRunner().invoke(cli, ["sweep", "--agents", "replay", "--replay", str(two_agents), "--agent-arg",
                                   "agent=oracle", "--tasks", "inc-001", "--seeds", "1", "--out", str(out_dir),
                                   "--no-progress"])
    assert out.exit_code == 0 and "replay" in out.output, out.output


def test_a_folder_is_read_once_per_process_until_a_record_lands_in_it(tmp_path: Path, monkeypatch) -> None:
    """A sweep creates a replay agent per episode; re-reading a run directory each time made a replay
    sweep quadratic (half a second per episode for the reference records)."""
    import shutil

    from baselines import replay
    from srezero.sweep.records import write_atomic

    folder = tmp_path / "run"
    (folder / "a").mkdir(parents=True)
    shutil.copy(_record(tmp_path, "inc-001", 0), folder / "a" / "seed-0000.json")
    monkeypatch.setattr(replay, "_RACY_NS", 0)  # trust the clock: a fresh folder may be cached at once
    reads = []
    real = replay._script
    monkeypatch.setattr(replay, "_script", lambda record, where: reads.append(where) or real(record, where))
    first = registry.create("replay", path=str(folder))
    second = registry.create("replay", path=str(folder))
    assert len(reads) == 1 and first._by_episode.keys() == second._by_episode.keys()
    write_atomic(folder / "a" / "seed-0003.json", _record(tmp_path, "inc-001", 3).read_bytes())
    third = registry.create("replay", path=str(folder))
    assert len(reads) == 3 and len(third._by_episode) == 2  # its folder changed: read again
    monkeypatch.setattr(replay, "_RACY_NS", 10**18)  # a folder that may still change is never kept
    replay._FOLDERS.clear()
    registry.create("replay", path=str(folder))
    registry.create("replay", path=str(folder))
    assert len(reads) == 7
