"""``srezero debrief RECORD``: an instructor reprints the debrief a player saw, from the saved record."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from srezero.cli import cli

PLAY = "get_alerts()\nhint\nget_status(service=\"worker\")\nrestart(service=\"worker\")\nquit\nquit\n"


def _debrief_block(play_output: str) -> str:
    start = play_output.index("DEBRIEF: ")
    return play_output[start:play_output.index("\ntranscript saved to", start)].rstrip("\n")


@pytest.fixture
def played(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    monkeypatch.chdir(tmp_path)
    out = CliRunner().invoke(cli, ["play", "inc-001", "--seed", "3", "--hints", "--player", "ada",
                                   "--record", "class/ada.json", "--color", "never"], input=PLAY)
    assert out.exit_code == 0, out.output
    return out.output, tmp_path / "class" / "ada.json"


def test_the_debrief_of_a_play_record_is_the_one_the_player_saw(played: tuple[str, Path]) -> None:
    output, record = played
    assert orjson.loads(record.read_bytes())["hints"]  # a hint taken, a wrong restart, a quit: all replayed
    out = CliRunner().invoke(cli, ["debrief", str(record), "--color", "never"])
    assert out.exit_code == 0, out.output
    title, _, body = out.output.partition("\n")
    assert title == f"human:ada on inc-001, seed 3 ({record})"
    assert body.rstrip("\n") == _debrief_block(output)
    assert "hints taken: 1" in body and "stopped" in body


def test_a_folder_is_filtered_and_each_record_gets_its_debrief(played: tuple[str, Path]) -> None:
    _, record = played
    second = CliRunner().invoke(cli, ["play", "inc-002", "--seed", "1", "--record", "class/bo.json",
                                      "--player", "bo", "--color", "never"], input="get_alerts()\nresolve()\n")
    assert second.exit_code == 0, second.output
    both = CliRunner().invoke(cli, ["debrief", str(record.parent), "--width", "60"])
    assert both.exit_code == 0, both.output
    assert both.output.count("DEBRIEF: ") == 2 and "=" * 60 in both.output
    # every line fits, except the titles' file paths, which are never broken (they are copied whole)
    assert max(len(line) for line in both.output.splitlines() if str(record.parent) not in line) <= 60
    one = CliRunner().invoke(cli, ["debrief", str(record.parent), "--agent", "human:bo"])
    assert one.output.count("DEBRIEF: ") == 1 and one.output.startswith("human:bo on inc-002, seed 1")
    none = CliRunner().invoke(cli, ["debrief", str(record.parent), "--task", "inc-009"])
    assert none.exit_code == 1 and "none of the 2 record(s) matches" in none.output


def test_a_sweep_record_gets_a_debrief_too() -> None:
    path = Path(__file__).resolve().parents[2] / "records/episodes/greedy/inc-005/seed-0004.json"
    out = CliRunner().invoke(cli, ["debrief", str(path)])
    assert out.exit_code == 0, out.output
    assert "greedy on inc-005, seed 4" in out.output and "Root cause: load_balancer.max_connections" in out.output


def test_a_record_the_replay_does_not_reproduce_is_flagged_first(played: tuple[str, Path]) -> None:
    _, record = played
    rec = orjson.loads(record.read_bytes())
    rec["result"]["marks"] = 77.0
    record.write_bytes(orjson.dumps(rec))
    out = CliRunner().invoke(cli, ["debrief", str(record)])
    assert out.exit_code == 0, out.output
    warning = out.output.index("the replay does not reproduce the record")
    assert warning < out.output.index("DEBRIEF: ")  # the warning comes before the debrief it concerns
    assert "replay scored" in out.output and "77.0" in out.output


def test_records_that_cannot_be_debriefed_say_why(tmp_path: Path, played: tuple[str, Path]) -> None:
    _, record = played
    rec = orjson.loads(record.read_bytes())
    unknown = tmp_path / "unknown.json"
    unknown.write_bytes(orjson.dumps({**rec, "task_id": "my-own-task"}))
    out = CliRunner().invoke(cli, ["debrief", str(unknown)])
    assert out.exit_code == 1
    assert "cannot load task 'my-own-task'" in out.output and out.output.count("--tasks-dir") == 1  # one hint
    unfinished = tmp_path / "crashed.json"
    unfinished.write_bytes(orjson.dumps({**rec, "status": "agent_error", "error": "boom", "result": None}))
    out = CliRunner().invoke(cli, ["debrief", str(unfinished)])
    assert out.exit_code == 1 and "the episode did not end (agent_error: boom)" in out.output
    # records with no debrief print no rules around nothing; a rule only between debriefs
    out = CliRunner().invoke(cli, ["debrief", str(unknown), str(unfinished), str(record), str(unfinished), str(record)])
    assert out.exit_code == 1 and out.stdout.count("=" * 60) == 1 and out.stdout.startswith("human:ada")
    out = CliRunner().invoke(cli, ["debrief", str(tmp_path / "nothing.json")])
    assert out.exit_code == 2 and "does not exist" in out.output


def test_a_quit_session_replays_to_its_own_result_as_the_end_message_says(played: tuple[str, Path],
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    output, record = played
    assert "the same actions give the same result" in " ".join(output.split())
    monkeypatch.setenv("SREZERO_REPLAY", str(record))
    out = CliRunner().invoke(cli, ["run", "--task", "inc-001", "--agent", "replay", "--seed", "3", "--json"])
    assert out.exit_code == 0, out.output
    saved, replayed = orjson.loads(record.read_bytes()), orjson.loads(out.output)
    assert saved["result"]["end"] == "stopped" and replayed["result"] == saved["result"]
    # step by step too, rewards included: play records with the sweep's reward mode, as `srezero run` does
    assert replayed["trajectory"] == saved["trajectory"]


def test_the_commands_play_prints_at_the_end_work_for_a_task_of_ones_own(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """After playing a private task, the replay, debrief and report commands play prints must find it too."""
    import shlex

    bundled = Path(__file__).resolve().parents[2] / "tasks" / "inc-001.toml"
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "class-01.toml").write_text(bundled.read_text().replace('id = "inc-001"', 'id = "class-01"', 1))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SREZERO_TASKS_PATH", raising=False)
    for how in (["class-01", "--tasks-dir", "mine"], [str(mine / "class-01.toml")]):
        out = CliRunner().invoke(cli, ["play", *how, "--record", "r.json", "--color", "never"], input="resolve()\n")
        assert out.exit_code == 0, out.output
        end = out.output[out.output.index("\ntranscript saved to"):]
        commands = [line.split() for line in end.splitlines() if line.startswith("    ")]
        # replay, debrief and report of the file; not the folder's report (it holds mine/, not only records)
        assert len(commands) == 3 and all("--tasks-dir" in c for c in commands), commands
        for words in commands:
            env = dict(w.split("=", 1) for w in words if w.startswith("SREZERO_REPLAY="))
            args = shlex.split(" ".join(w for w in words if not w.startswith("SREZERO_REPLAY=")))[1:]
            if args[0] == "report":
                args += ["--out", str(tmp_path.with_name(f"{tmp_path.name}-report-{len(how)}-{len(args)}")), "--no-replay"]
            ran = CliRunner().invoke(cli, args, env=env)
            assert ran.exit_code == 0, (words, ran.output)
        (tmp_path / "r.json").unlink()
