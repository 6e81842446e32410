"""Play mode, third review: red herrings on the onset tick, a cause older than the change window, cut
texts that say so, narrow terminals, quitting with nothing done, help and completion that lead to valid
calls."""

from __future__ import annotations

import io
import itertools
import os
import re
import sys
from pathlib import Path

import pytest

import srezero
from srezero.play import debrief
from srezero.play import shell as shell_mod
from srezero.play import style as style_mod
from srezero.play import text as text_mod
from srezero.play import timeline as tl
from srezero.play.complete import Names, candidates
from srezero.play.session import PlaySession
from srezero.play.style import Style
from srezero.tools.parse import parse_action
from srezero.tools.registry import load_tools
from tests.play.test_play_debrief import SGR, _play


def _change_rows(s: PlaySession) -> list[tuple[float, str]]:
    return [(t, text) for t, kind, text in tl.timeline(s.env, s.info["result"], []) if kind == "change"]


# ---------------------------------------------------------------------- the timeline's marks


#: (task, seed) pairs where, at the time of writing, a distractor or noise change landed on the tick the fault
#: began (inc-038 seed 4: a benign web_server release 7 s before the onset)
ONSET_TICK = [("inc-031", 4), ("inc-032", 3), ("inc-033", 2), ("inc-038", 4), ("inc-043", 2)]


def test_a_red_herring_on_the_onset_tick_is_not_the_root_cause() -> None:
    """A distractor or noise change can land within a tick of the fault's onset; it is still harmless."""
    on_tick = 0
    for task, seed in ONSET_TICK:
        s = _play(task, seed, ["get_alerts()", "resolve()"])
        onsets = [f.injected_at - s.env.t0 for f in s.env.faults]
        noisy = {round(c.at - s.env.t0, 6) for c in s.env.world.changes if c.noise}
        for t, text in _change_rows(s):
            if round(t, 6) not in noisy:
                continue
            on_tick += any(0 <= onset - t < 30 for onset in onsets)
            assert text.endswith("<- a red herring (harmless)"), (task, seed, text)
    assert on_tick  # the case at hand occurred at least once


def test_a_root_cause_change_older_than_the_change_window_is_still_listed() -> None:
    old = []
    for seed in range(5):  # inc-026: autovacuum was turned off days before the page
        s = _play("inc-026", seed, ["get_alerts()", "resolve()"])
        rows = _change_rows(s)
        causes = [(t, text) for t, text in rows if "<- the root cause" in text]
        assert len(causes) == 1 and "autovacuum: True -> False" in causes[0][1], rows
        # other changes that old stay out (get_changes would not show them by default)
        assert all(t >= -tl.CHANGES_WINDOW_S for t, text in rows if "<- the root cause" not in text)
        if causes[0][0] < -tl.CHANGES_WINDOW_S:
            assert "get_changes(window_h=" in causes[0][1]
            old.append(s)
    assert old  # the case at hand occurred at least once
    # the wider time column still lines up: every row's kind starts in the same column
    text = debrief.render(old[0].env, old[0].info["result"], [], width=100)
    block = text[text.index("Timeline"):text.index("Your diagnosis")]
    row = re.compile(r"^  +T[-+][\d:]+ +\S+(?: \S+)?  (change|fault|event|page|you|end) ")
    starts = [m.start(1) for m in map(row.match, block.splitlines()) if m]
    assert len(starts) > 5 and len(set(starts)) == 1, block


def test_cut_texts_in_the_timeline_say_they_were_cut() -> None:
    claim = ('submit_diagnosis(root_causes=[{"entity":"worker.env.DATABASE_URL","category":"misconfiguration",'
             '"detail":"DATABASE_URL is empty so the worker cannot start at all"}])')
    s = _play("inc-001", 0, ["get_stauts()", claim, "resolve()"])
    you = [text for _, kind, text in tl.timeline(s.env, s.info["result"], []) if kind == "you"]
    err = s.env.trajectory[0]["error"]
    assert len(err) > 90 and you[0].endswith("...") and err.startswith(you[0].split("error: ")[1][:-3])
    # JSON typed without spaces is shown spaced, so the row can wrap between words
    assert '"category": "misconfiguration"' in you[1]
    assert text_mod.shorten("a" * 300, 110).endswith("...") and len(text_mod.shorten("a" * 300, 110)) <= 110
    assert text_mod.shorten("a" * 300, 110, 40) == "a" * 37 + "..."


# ---------------------------------------------------------------------- narrow terminals


LONG = ["get_stauts()", "x" * 300, 'restart(target="nosuch")', 'get_config(service="web_server")',
        'set_config(service="web_server", key="db_retries", value=0)', "wait(seconds=180)",
        'submit_diagnosis(root_causes=[{"entity": "web_server.db_retries", "category": "misconfiguration", '
        '"detail": "db_retries=4 with db_timeout_ms=6"}])', "resolve()"]


@pytest.mark.parametrize("width", [60, 80])
def test_the_debrief_fits_a_narrow_terminal(width: int) -> None:
    s = _play("inc-003", 1, LONG)
    for style in (Style(False), Style(True)):
        text = SGR.sub("", debrief.render(s.env, s.info["result"], [], style, width=width))
        assert max(len(line) for line in text.splitlines()) <= width, text
    marks = text[text.index("\nMarks"):text.index("A good path")]
    ends = [len(line) for line in marks.splitlines() if re.search(r"\d\.\d$", line)]
    assert len(ends) >= 9 and len(set(ends)) == 1, marks  # a long label wraps within its column: the values stay aligned


def test_the_debrief_takes_the_terminal_width(monkeypatch: pytest.MonkeyPatch) -> None:
    r, w = os.pipe()  # says it is a terminal, but its size cannot be read: $COLUMNS serves

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

        def fileno(self) -> int:
            return r

    monkeypatch.setenv("COLUMNS", "64")
    assert style_mod.columns(Tty()) == 64 and text_mod.debrief_width(Tty()) == 64
    assert style_mod.columns(io.StringIO()) is None and text_mod.debrief_width(io.StringIO()) == text_mod.WIDTH  # a pipe
    monkeypatch.setenv("COLUMNS", "300")
    assert text_mod.debrief_width(Tty()) == text_mod.WIDTH  # never wider than WIDTH
    monkeypatch.setenv("COLUMNS", "20")
    assert text_mod.debrief_width(Tty()) == text_mod.MIN_WIDTH
    monkeypatch.delenv("COLUMNS")
    assert style_mod.columns(Tty()) is None and text_mod.debrief_width(Tty()) == text_mod.WIDTH
    os.close(r)
    os.close(w)


def test_replies_are_wrapped_to_the_terminal_but_output_is_not(monkeypatch: pytest.MonkeyPatch) -> None:
    s = _play("inc-001", 0, [])
    out = io.StringIO()
    sh = shell_mod.PlayShell(s, Style(False), stdin=io.StringIO(), stdout=out)
    monkeypatch.setattr(shell_mod, "columns", lambda stream: 50)
    sh.show(s.handle("get_stauts()"))  # an error naming every tool
    sh.onecmd("help")  # laid out for the terminal's width, not re-wrapped from a wider layout
    sh.onecmd("help submit_diagnosis")
    table = s.handle("get_status()")
    sh.show(table)
    lines = out.getvalue().splitlines()
    data = set(table.text.splitlines())
    assert max(len(line) for line in lines if line not in data) <= 50
    assert any(len(line) > 50 for line in data) and data <= set(lines)  # tool output is data: kept as it is
    assert "get_topology," in out.getvalue()  # whole names, never split


def test_a_narrow_terminal_session(tmp_path: Path) -> None:
    pexpect = pytest.importorskip("pexpect")
    # an exported $COLUMNS from elsewhere (pytest-xdist exports 80) must not beat the terminal's own size
    env = dict(os.environ, SREZERO_PLAY_HISTORY=str(tmp_path / "history"), TERM="xterm", NO_COLOR="1", COLUMNS="200")
    child = pexpect.spawn(sys.executable, ["-c", "from srezero.cli import main; main()", "play", "inc-001",
                                           "--record", str(tmp_path / "rec.json")],
                          env=env, encoding="utf-8", timeout=60, dimensions=(40, 60), cwd=str(tmp_path))
    child.logfile_read = seen = io.StringIO()
    child.expect("srezero> ")
    for line in ("help", "get_stauts()", "help get_statu", "quit"):
        child.sendline(line)
        child.expect("srezero> ")
    child.sendline("quit")
    child.expect("transcript saved to")
    child.expect(pexpect.EOF)
    child.close()
    text = re.sub(r"\x1b\[[?0-9;]*[A-Za-z]", "", seen.getvalue()).replace("\r", "")  # readline's own codes
    session = text.partition("transcript saved to")[0]  # the end message is the command's, printed after
    assert "did you mean help get_status?" in session
    assert max(len(line) for line in session.splitlines()) <= 60, max(session.splitlines(), key=len)
    assert "Root cause: worker.env.DATABASE_URL" in session


# ---------------------------------------------------------------------- quitting, help


def test_quit_with_no_action_does_not_promise_a_record() -> None:
    s = _play("inc-001", 0, [])
    first = s.handle("quit")
    assert "record is saved" not in first.text and "no record" in first.text and not first.done
    second = s.handle("quit")
    assert second.done and not s.env.trajectory
    s = _play("inc-001", 0, ["get_alerts()"])
    assert "the record is saved" in s.handle("quit").text  # with work done, the first quit says it is kept


def test_help_suggests_the_nearest_topic() -> None:
    s = _play("inc-001", 0, [])
    assert "did you mean help get_status?" in s.handle("help get_statu").text
    assert "did you mean help kubectl?" in s.handle("help kubeclt").text
    assert "did you mean" not in s.handle("help zzzzzz").text
    assert s.obs.step == 0


# ---------------------------------------------------------------------- completion


def _names(task: str = "inc-003", seed: int = 0) -> Names:
    env = srezero.make(task, seed)
    env.reset(seed=seed)
    return Names.of(env.world)


def test_metric_completion_offers_only_what_the_target_has() -> None:
    from srezero.sim import metrics as M

    names = _names()
    node, replica = names.nodes[0], names.replicas[0]
    assert candidates(f'query_metrics(target="{node}", metric="', "", names) == list(M.NODE_METRICS)
    assert candidates(f'query_metrics("{replica}", metric="', "", names) == list(M.REPLICA_METRICS)
    worker = candidates('query_metrics(target="worker", metric=', "", names)
    assert '"processed_per_s"' in worker and '"queue_age_s"' not in worker
    assert "queue_age_s" in candidates('query_metrics(metric="', "", names)  # no target yet: every name
    env = srezero.make("inc-003", 0)
    env.reset(seed=0)
    for target in ("worker", node, replica):  # each offered value is a valid query
        for metric in candidates(f'query_metrics(target="{target}", metric="', "", names):
            obs, *_ = env.step(f'query_metrics(target="{target}", metric="{metric}")')
            assert obs.ok, obs.text


def test_completion_reads_positional_arguments() -> None:
    names = _names()
    keys = candidates('set_config("worker", key="', "", names)
    assert "concurrency" in keys and "db_pool_size" not in keys  # the worker's keys, not every service's
    assert candidates('set_config("worker", "', "", names) == keys
    assert candidates('query_metrics("cache", "', "hit", names) == ["hit_ratio"]
    assert candidates('get_status("', "wor", names) == ["worker"]
    assert candidates('node_diagnostics("x", "', "d", names) == ["dmesg", "disk"]
    parse_action('set_config("worker", "' + keys[0] + '", 1)')


def test_help_completes_every_topic_it_has() -> None:
    names = _names()
    assert candidates("help ", "h", names) == ["hint"]
    assert {"page", "quit", "kubectl", "get_status"} <= set(candidates("help ", "", names))


def test_the_end_says_when_the_last_action_overran_the_time_budget() -> None:
    # 30 min budget: a wait stops at it, but a write under way (20 s) finishes 10 s past it
    s = _play("inc-004", 0, ["wait(seconds=600)", "wait(seconds=600)", "wait(seconds=590)",
                             'scale(service="worker", replicas=3)'])
    result = s.info["result"]
    assert result["truncated"] and result["sim_seconds"] == s.time_budget_s + 10
    reason = debrief.end_reason(s.env, result)
    assert reason.startswith("the time budget ran out (30 simulated minutes; the last action ran 0.2 min past it)")
    s = _play("inc-004", 0, ["wait(seconds=600)"] * 3)  # exactly used up: nothing overran
    assert debrief.end_reason(s.env, s.info["result"]) == \
        "the time budget ran out (30 simulated minutes) before resolve()"


def test_the_good_path_of_a_false_alarm_has_no_fix() -> None:
    s = _play("inc-011", 0, ["get_alerts()", "resolve()"])
    text = debrief.render(s.env, s.info["result"], [])
    good = text[text.index("A good path"):]
    assert "no fix (nothing was broken" in good and "the smallest fix" not in good
    s = _play("inc-001", 0, ["resolve()"])
    assert "the smallest fix" in debrief.render(s.env, s.info["result"], [])


def test_the_end_of_play_commands_stay_whole_and_the_prose_fits_the_terminal(tmp_path, monkeypatch):
    import shlex

    from srezero.commands.play import end_message

    monkeypatch.chdir(tmp_path)
    record = "runs/my play/inc-001-0.json"  # a space: the commands must quote it
    text = end_message(record, "inc-001", 0, label="you#2", width=50)
    commands = [line.strip() for line in text.splitlines() if "srezero " in line]
    assert [shlex.split(c) for c in commands] == [
        [f"SREZERO_REPLAY={record}", "srezero", "run", "--task", "inc-001", "--agent", "replay", "--seed", "0"],
        ["srezero", "debrief", record],
        ["srezero", "report", record],
        ["srezero", "report", "runs/my play"]]
    prose = [line for line in text.splitlines() if "srezero " not in line]
    assert prose and all(len(line) <= 50 for line in prose)
    assert "the same actions give the same result" in " ".join(" ".join(prose).split())


@pytest.mark.parametrize("width", [50, 60, 80, 100, 140])
def test_help_is_laid_out_once_for_the_width(monkeypatch: pytest.MonkeyPatch, width: int) -> None:
    """Help is wrapped once, at the width it is shown at: no prose line ends short of a word that would
    have fitted (the mark of text wrapped twice), and a tool row's first line ends with its cost or holds
    its description whole beside it."""
    s = _play("inc-001", 0, [])
    out = io.StringIO()
    sh = shell_mod.PlayShell(s, Style(False), stdin=io.StringIO(), stdout=out)
    monkeypatch.setattr(shell_mod, "columns", lambda stream: width)
    sh.onecmd("help")
    lines = out.getvalue().splitlines()
    intro = lines[: lines.index("")]
    for a, b in itertools.pairwise(intro):
        if not a.endswith("."):  # a paragraph's last line may be short
            assert len(a) + 1 + len(b.split()[0]) > width, (a, b)
    tools = load_tools()
    starts = [i for i, ln in enumerate(lines) if re.match(r"  [a-z_]+\(", ln) and ln[2:].split("(")[0] in tools]
    assert len(starts) == len(tools)
    for i in starts:
        row = [lines[i]]
        for ln in lines[i + 1:]:
            if not ln.startswith("    "):
                break
            row.append(ln)
        spec = tools[lines[i][2:].split("(")[0]]
        cost = "Ns" if spec.name == "wait" else f"{spec.cost_s:.0f}s"
        assert " ".join(" ".join(row).split()) == " ".join(f"{spec.signature()} {cost} {spec.description}".split())
        beside = [ln for ln in row if re.search(rf"\s{cost}  \S", ln)]
        if beside:  # the description starts beside the cost: it continues in that column
            column = beside[0].index(f"{cost}  ") + len(cost) + 2
            assert all(ln[:column].strip() == "" for ln in row[row.index(beside[0]) + 1:]), row
        else:  # or it starts on a line of its own, under a signature whose cost ends its last line
            assert any(ln.endswith(cost) for ln in row), row
    assert max(len(ln) for ln in lines) <= width


def test_piped_help_is_wrapped_to_the_default_width() -> None:
    s = _play("inc-001", 0, [])
    out = io.StringIO()  # not a terminal
    shell_mod.PlayShell(s, Style(False), stdin=io.StringIO(), stdout=out).onecmd("help")
    assert max(len(line) for line in out.getvalue().splitlines()) <= text_mod.WIDTH


def test_an_old_root_cause_change_the_player_did_reach_says_so() -> None:
    """The window note tells a player who widened get_changes that their read reached the change, instead
    of telling them how to (a review found the advice repeated after get_changes(window_h=80))."""
    for seed in range(5):
        s = _play("inc-026", seed, ["get_alerts()", "resolve()"])
        cause = next(text for _, text in _change_rows(s) if "<- the root cause" in text)
        if "window_h=" in cause:
            break
    else:
        pytest.skip("no seed with a root cause older than the window")
    wide = _play("inc-026", seed, ["get_changes(window_h=24)", 'get_changes(service="cache", window_h=200)',
                                   'get_changes(service="database", window_h=200)', "resolve()"])
    cause = next(text for _, text in _change_rows(wide) if "<- the root cause" in text)
    assert cause.endswith("your get_changes at step 3 reached it)"), cause
