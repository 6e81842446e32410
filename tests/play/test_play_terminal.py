"""`srezero play` in a real terminal (pexpect pty): page, completion, history, budgets, debrief, record."""

from __future__ import annotations

import io
import os
import re
import sys
from pathlib import Path

import orjson
import pytest

import srezero

pexpect = pytest.importorskip("pexpect")

TASK, SEED = "inc-001", 0
PROMPT = "srezero> "
SGR = re.compile(r"\x1b\[[0-9;]*m")  # colour codes (readline's own bracketed-paste codes are not colour)


def _text_call(action: dict) -> str:
    args = ", ".join(f"{k}={v!r}" for k, v in action["args"].items())
    return f"{action['tool']}({args})"


def _spawn(tmp_path: Path, *extra: str, color: bool = False):
    env = dict(os.environ, SREZERO_PLAY_HISTORY=str(tmp_path / "history"), TERM="xterm")
    env.pop("NO_COLOR", None)
    if not color:
        env["NO_COLOR"] = "1"
    argv = ["-c", "from srezero.cli import main; main()", "play", TASK, "--seed", str(SEED), "--record", str(tmp_path / "rec.json"), *extra]
    return pexpect.spawn(sys.executable, argv, env=env, encoding="utf-8", timeout=60, dimensions=(60, 220),
                         cwd=str(tmp_path))


@pytest.fixture(scope="module")
def plan() -> list[dict]:
    env = srezero.make(TASK, SEED)
    env.reset(seed=SEED)
    return env.oracle_plan()


def test_oracle_session_to_debrief(tmp_path: Path, plan: list[dict]) -> None:
    child = _spawn(tmp_path, "--hints")
    child.logfile_read = seen = io.StringIO()
    child.expect("PAGE ")
    child.expect("QueueBacklogGrowing")
    child.expect(re.escape("[40/40 steps · 30m00s left]"))
    child.expect(PROMPT)
    # shell commands are free: help, help TOOL, a hint
    child.sendline("help search_logs")
    child.expect("costs 10 simulated seconds")
    child.expect("arguments:")
    child.expect(PROMPT)
    child.sendline("hint")
    child.expect(r"hint 1/\d+: ")
    child.expect(re.escape("[40/40 steps"))
    child.expect(PROMPT)
    # tab completion of a tool name, then of an argument value
    first = plan[1]
    assert first["tool"] == "get_status"
    child.send("get_sta\t")
    child.expect(re.escape("get_status("))
    child.send("serv\t")
    child.expect("service=")
    child.send('"work\t')
    child.expect('"worker"')
    child.sendline(")")
    child.expect("CrashLoopBackOff")
    child.expect(re.escape("[39/40 steps"))
    child.expect(PROMPT)
    # the rest of the oracle plan, typed as text calls; the prompt counts the steps down
    rest = [plan[0], *plan[2:]]
    for i, action in enumerate(rest, start=2):
        child.sendline(_text_call(action))
        if action["tool"] == "resolve":
            break
        child.expect(re.escape(f"── step {i} "))
        child.expect(re.escape(f"[{40 - i}/40 steps"))
        child.expect(PROMPT)
    child.expect(pexpect.EOF)
    child.close()
    debrief = seen.getvalue().partition("DEBRIEF")[2]
    for section in ("What really happened", "Root cause: worker.env.DATABASE_URL", "Timeline", "PAGE:",
                    "fault begins: crash_loop", "<- the root cause", "step 6: set_config(", "Your diagnosis",
                    "found  a log search of worker", "What your actions did", "addressed the root cause",
                    "ready_replicas of worker", "Marks", "SUCCESS  marks 100.0/100",
                    "hints taken: 1", "transcript saved to"):
        assert section in debrief, section
    order = [debrief.index(h) for h in ("What really happened", "Timeline", "Your diagnosis", "Evidence",
                                        "What your actions did", "Marks")]
    assert order == sorted(order)
    assert re.search(r"total \(clamped to 0\.\.100\)\s+100\.0", debrief)
    assert child.exitstatus == 0

    rec = orjson.loads((tmp_path / "rec.json").read_bytes())
    assert rec["agent"] == "human" and rec["status"] == "ok" and rec["task_id"] == TASK and rec["seed"] == SEED
    assert rec["result"]["marks"] == 100.0 and rec["result"]["success"]
    assert [t["tool"] for t in rec["trajectory"]] == ["get_status", "get_alerts", *[a["tool"] for a in plan[2:]]]
    assert len(rec["hints"]) == 1 and rec["hints"][0]["step"] == 0
    # the record replays in the report loader like any sweep record
    from srezero.report.load import load_run

    run = load_run(tmp_path / "rec.json")
    assert run.episodes[0].agent == "human" and run.episodes[0].marks == 100.0
    # command history was written for the next session
    assert "get_status(" in (tmp_path / "history").read_text()


def test_history_recall_colour_and_quit(tmp_path: Path) -> None:
    child = _spawn(tmp_path, color=True)
    child.logfile_read = seen = io.StringIO()
    child.expect(PROMPT)
    assert SGR.search(seen.getvalue())  # colour on a terminal without NO_COLOR
    child.sendline("kubectl get pods -l app=worker")
    child.expect(re.escape("39/40 steps"))
    child.expect(PROMPT)
    child.send("\x1b[A")  # up arrow recalls the last command
    child.expect(re.escape("kubectl get pods -l app=worker"))
    child.send("\x15")  # ^U clears the line
    child.sendline("QUIT()")  # a near miss of quit is still quit, not an action
    child.expect("Type quit again")
    child.sendline("quit")
    child.expect("the debrief follows")
    child.expect("DEBRIEF")
    child.expect("transcript saved to")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    rec = orjson.loads((tmp_path / "rec.json").read_bytes())  # quitting keeps the work: a truncated episode
    assert rec["result"]["truncated"] and [t["tool"] for t in rec["trajectory"]] == ["get_status"]


def test_no_colour_with_no_color(tmp_path: Path) -> None:
    child = _spawn(tmp_path)
    child.logfile_read = seen = io.StringIO()
    child.expect(PROMPT)
    child.sendline("bogus_tool()")
    child.expect("unknown tool")
    child.expect(PROMPT)
    child.send("get_status(service=wor\t")  # no quote typed: completion supplies a quoted value
    child.expect(re.escape('"worker"'))
    child.sendline(")")
    child.expect("CrashLoopBackOff")
    child.expect(PROMPT)
    child.sendeof()  # at a terminal one Ctrl-D asks first, like quit
    child.expect("the incident is still open")
    child.expect(PROMPT)
    child.sendeof()
    child.expect("DEBRIEF")
    child.expect(pexpect.EOF)
    child.close()
    assert "PAGE" in seen.getvalue() and not SGR.search(seen.getvalue())
    assert orjson.loads((tmp_path / "rec.json").read_bytes())["result"]["truncated"]


def test_first_tab_on_a_value_lists_the_choices(tmp_path: Path) -> None:
    child = _spawn(tmp_path)
    child.logfile_read = seen = io.StringIO()
    child.expect(PROMPT)
    child.send('query_metrics(target="worker", metric=\t')  # one Tab: the opening quote and the list
    child.expect("processed_per_s")  # the worker's own metrics, not the queue's (that would be an error)
    child.expect(re.escape('metric="'))  # the line is redrawn with the quote typed
    child.send("error_r\t")
    child.expect(re.escape('error_rate"'))
    child.sendline(")")
    child.expect(re.escape("── step 1 "))
    child.expect(PROMPT)
    child.sendline("quit")
    child.sendline("quit")
    child.expect("DEBRIEF")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    rec = orjson.loads((tmp_path / "rec.json").read_bytes())
    assert rec["trajectory"][0]["args"] == {"target": "worker", "metric": "error_rate", "window_s": 900}, seen.getvalue()
    assert "queue_age_s" not in seen.getvalue().partition("DEBRIEF")[0]
