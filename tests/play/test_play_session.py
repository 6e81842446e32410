"""Play-mode logic without a terminal: help, hints, quitting, completion, the debrief and the record."""

from __future__ import annotations

import io
import re
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

import srezero
from srezero.cli import cli
from srezero.play import debrief
from srezero.play import text as text_mod
from srezero.play import timeline as tl
from srezero.play.complete import Names, candidates
from srezero.play.session import PlaySession
from srezero.play.style import Style, want_colour
from srezero.tools.registry import load_tools

TASK, SEED = "inc-001", 0


def _session(hints: bool = False) -> PlaySession:
    s = PlaySession(srezero.make(TASK, SEED), SEED, hints_enabled=hints)
    s.start()
    return s


def test_help_covers_every_tool() -> None:
    s = _session()
    text = s.handle("help").text
    for spec in load_tools().values():
        assert spec.signature() in text
        one = s.handle(f"help {spec.name}").text
        assert one.startswith(spec.signature()) and spec.description in one and "example:" in one
        for name in spec.arg_names:
            assert f"    {name}: " in one
    assert "kubectl logs" in s.handle("help kubectl").text
    assert "no help for 'nope'" in s.handle("help nope").text
    assert s.obs.step == 0  # help is free


def test_hints_graded_recorded_and_free() -> None:
    s = _session(hints=True)
    hints = s.env.spec.hints
    assert len(hints) >= 2
    s.handle("get_status(service='worker')")
    shown = [s.handle("hint").text for _ in range(len(hints) + 1)]
    assert shown[:-1] == [f"hint {i}/{len(hints)}: {h}" for i, h in enumerate(hints, 1)]
    assert "no more hints" in shown[-1]
    assert s.obs.step == 1 and len(s.env.trajectory) == 1  # hints cost no step
    assert [h["hint"] for h in s.hints_used] == list(range(1, len(hints) + 1))
    assert all(h["step"] == 1 for h in s.hints_used)


def test_hints_off_without_the_flag() -> None:
    s = _session()
    r = s.handle("hint")
    assert r.kind == "error" and "--hints" in r.text and not s.hints_used


def test_actions_errors_and_quit() -> None:
    s = _session()
    r = s.handle("kubectl logs worker --tail 2")
    assert r.kind == "ok" and "search_logs(service='worker'" in r.header and "step 1" in r.header
    r = s.handle("kubectl exec -it x sh")
    assert r.kind == "error" and "unsupported kubectl command" in r.text
    assert s.steps_left == s.step_budget - 2
    assert not s.handle("quit").done and s.handle("quit").done
    assert s.done and s.stopped_early and s.env.result["truncated"]  # the work is kept: scored as truncated
    assert s.handle("").text == ""


def test_budget_exhaustion_ends_with_a_result(tmp_path: Path) -> None:
    s = _session()
    for _ in range(s.step_budget):
        r = s.handle("get_alerts()")
    assert r.done and "budget exhausted" in r.header and s.done
    rec = orjson.loads(s.save(tmp_path / "r.json").read_bytes())
    assert rec["status"] == "ok" and rec["result"]["truncated"] and rec["agent"] == "human"
    assert rec["episode_id"] == s.env.episode_id and rec["task_hash"].startswith("sha256:")


def test_completion_candidates() -> None:
    env = srezero.make(TASK, SEED)
    env.reset(seed=SEED)
    names = Names.of(env.world)
    pod = names.replicas[-1]
    assert "get_status(" in candidates("", "get_st", names)
    assert "kubectl " in candidates("", "kub", names)
    assert candidates("search_logs(", "", names)[:2] == ["service=", "pattern="]
    assert "service=" not in candidates('search_logs(service="worker", ', "", names)
    assert candidates('get_status(service="', "wor", names) == ["worker"]
    assert pod in candidates('search_logs(service="', pod[:4], names)
    assert pod not in candidates('get_config(service="', pod[:4], names)  # get_config takes services only
    assert candidates('node_diagnostics(node="x", check="', "", names) == ["dmesg", "disk", "top", "limits"]
    assert "queue_age_s" in candidates('query_metrics(target="message_queue", metric="', "queue", names)
    assert candidates('set_config(service="worker", key="', "con", names) == ["concurrency"]
    assert candidates('set_config(service="worker", key="', "en", names) == ["env."]
    assert candidates("kubectl ", "ro", names) == ["rollout"]
    assert candidates("kubectl rollout restart ", "deploy/wo", names) == ["deploy/worker"]
    assert set(candidates("kubectl drain ", "", names)) == set(names.nodes)
    assert candidates("kubectl logs worker ", "--p", names) == ["--previous"]
    assert candidates("help ", "submit", names) == ["submit_diagnosis"]
    assert candidates("no_such_tool(", "", names) == []


def test_style_respects_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tty:
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert want_colour(Tty()) and not want_colour(object())  # type: ignore[arg-type]
    monkeypatch.setenv("NO_COLOR", "1")
    assert not want_colour(Tty()) and want_colour(Tty(), "always")  # type: ignore[arg-type]
    assert Style(False).red("x") == "x" and Style(True).red("x") == "\x1b[31mx\x1b[0m"
    assert Style(True).paint("x", "bold", prompt=True) == "\001\x1b[1m\002x\001\x1b[0m\002"


def test_debrief_of_a_poor_session_explains_what_went_wrong() -> None:
    s = _session()
    for line in ("kubectl rollout restart deploy/web", "get_alerts()", "get_alerts()", "get_alerts()",
                 "get_alerts()", "get_alerts()", "get_alerts()", "get_alerts()", "get_alerts()", "get_alerts()",
                 "get_alerts()", "get_alerts()", "get_alerts()", "get_alerts()", "get_alerts()", "resolve()"):
        r = s.handle(line)
    assert r.done
    result = s.info["result"]
    text = debrief.render(s.env, result, s.hints_used)
    assert "restart(target='web_server'): wrong fix" in text
    assert "error_rate of web_server:" in text and "min later" in text  # metric deltas after the write
    assert "(none submitted)" in text
    assert 'missed a status read of worker showing "CrashLoopBackOff"' in text
    assert "/CrashLoopBackOff/" not in text  # the stored regex is not shown
    assert "root cause active at the end (-10)" in text and "-10.0" in text
    assert "not mitigated:" in text
    assert "Root cause: worker.env.DATABASE_URL" in text  # ground truth is shown after the end
    assert "\x1b[" not in text


def test_play_command_with_piped_input(tmp_path: Path) -> None:
    env = srezero.make(TASK, SEED)
    env.reset(seed=SEED)
    lines = [f"{a['tool']}({', '.join(f'{k}={v!r}' for k, v in a['args'].items())})" for a in env.oracle_plan()]
    out = CliRunner().invoke(cli, ["play", TASK, "--seed", str(SEED), "--record", str(tmp_path / "x.json"),
                                   "--player", "ada"], input="\n".join(lines) + "\n")
    assert out.exit_code == 0, out.output
    assert "DEBRIEF" in out.output and "\x1b[" not in out.output
    rec = orjson.loads((tmp_path / "x.json").read_bytes())
    assert rec["agent"] == "human:ada" and rec["result"]["marks"] == 100.0


def test_play_command_errors() -> None:
    out = CliRunner().invoke(cli, ["play", "no-such-task"])
    assert out.exit_code != 0 and "unknown task" in out.output
    out = CliRunner().invoke(cli, ["play", TASK, "--player", "a b"])
    assert out.exit_code != 0 and "--player" in out.output


# ---------------------------------------------------------------------- review fixes


def _play(lines: list[str], hints: bool = False) -> PlaySession:
    s = _session(hints)
    for line in lines:
        s.handle(line)
    return s


def test_write_deltas_take_before_from_the_start_of_the_step() -> None:
    # scaling web_server to zero takes effect within its own step: the value stamped at write["at"]
    # is already the outage, so "before" must come from the start of the step
    s = _play(["get_alerts()", "get_alerts()", "get_alerts()", 'scale(service="web_server", replicas=0)',
               "wait(seconds=300)", "resolve()"])
    wr = s.env.result["writes"][0]
    assert tl.write_start(wr) == wr["at"] - load_tools()["scale"].cost_s
    lines = tl.write_deltas(s.env, wr)
    assert any(line.startswith("ready_replicas of web_server: 3 -> 0") for line in lines), lines
    assert any(line.startswith("error_rate of web_server: 0 -> 1") for line in lines), lines


def test_write_deltas_do_not_credit_a_write_with_the_one_after_it() -> None:
    """A review: a step that began exactly on a tick read "before" from the tick that ran after the
    write, so a wrong restart seemed to end an outage that the next, real fix ended."""
    env = srezero.make("inc-014", 7)
    s = PlaySession(env, 7)
    s.start()
    node = env.ground_truth()[0]["entity"]
    pod = env.world.services["web_server"].replicas[1].name
    for line in ["get_alerts()", "get_changes()", f'restart("{pod}")', f'node_diagnostics("{node}", "dmesg")',
                 f'node_diagnostics("{node}", "limits")', f'node_diagnostics("{node}", "limits")',
                 f'set_sysctl("{node}", "net.netfilter.nf_conntrack_max", 131072)', "wait(300)", "resolve()"]:
        s.handle(line)
    restart, fix = env.result["writes"]
    assert tl.write_start(fix) % 30.0 == 0.0  # the fix's step began on a tick: the case that went wrong
    w = env.world
    row = w.row_of[("load_balancer", "error_rate")]
    edge = [ln for ln in tl.write_deltas(env, restart, tl.write_start(fix)) if "of load_balancer" in ln]
    seen = float(w.buf[row, int((env.t0 + tl.write_start(fix)) // 30.0) - 1])  # the last tick before the fix
    assert edge and seen > 0.05 and not edge[0].split(" -> ")[1].startswith("0 "), edge
    after_fix = [ln for ln in tl.write_deltas(env, fix) if "of load_balancer" in ln]
    assert after_fix[0].startswith(f"error_rate of load_balancer: {debrief.fmt(seen)} -> 0 "), after_fix


def test_wrong_fix_penalty_is_labelled_as_it_escalates() -> None:
    s = _play(["kubectl rollout restart deploy/web", "kubectl rollout restart deploy/cache", "resolve()"])
    text = debrief.render(s.env, s.info["result"], [])
    assert "(-10 each)" not in text
    assert re.search(r"wrong fixes \(2: 10 \+ 20\)\s+-30\.0", text)
    assert debrief.wrong_fix_label(5) == "wrong fixes (5: 10 + 20 + ... + 50)"


@pytest.mark.parametrize(("claims", "expected"), [
    (None, "why 0: no diagnosis was submitted"),
    ([{"entity": "web_server", "category": "misconfiguration", "detail": "x"}], "why 0: at most half of the components"),
    ([{"entity": "worker", "category": "capacity", "detail": "x"}], "capped at 0.25: no root cause was claimed"),
    ([{"entity": "worker", "category": "misconfiguration", "detail": "broken"}], "the detail fell short: the detail"),
    ([{"entity": "worker", "category": "misconfiguration", "detail": "env.DATABASE_URL is empty"}],
     "none of your reads had shown any sign of it"),
])
def test_diagnosis_explains_its_score(claims: list | None, expected: str) -> None:
    grounded = expected != "none of your reads had shown any sign of it"
    lines = ["get_alerts()", *(["kubectl get pods"] if grounded else [])]
    if claims is not None:
        lines.append(f"submit_diagnosis(root_causes={claims!r})")
    s = _play([*lines, "resolve()"])
    text = "\n".join(debrief.diagnosis_lines(s.env, s.info["result"]))
    assert expected in text, text
    assert "localization." not in text and "characterization." not in text  # plain words, not checklist ids
    if claims and claims[0]["entity"] == "web_server":
        assert "web_server: had no part in the incident" in text


def test_evidence_in_plain_words() -> None:
    assert debrief.plain_signal("get_status(worker) showing /CrashLoopBackOff/") == \
        'a status read of worker showing "CrashLoopBackOff"  [get_status]'
    assert debrief.plain_signal("query_metrics(cache, metric='hit_ratio')") == "the hit_ratio metric of cache  [query_metrics]"
    assert debrief.plain_signal(r"node_diagnostics(node-1, check='limits') showing /packet loss ([1-9]\d*)\.\d%/") == \
        'the limits check of node-1 showing "packet loss <n>%"  [node_diagnostics]'
    assert debrief.plain_pattern(r"feature_flag\.async_invoices: (False|false) -> (True|true)") == \
        "feature_flag.async_invoices: False -> True"
    assert debrief.plain_pattern(r"maxmemory_mb = 634(?![\w.])") == "maxmemory_mb = 634"
    assert debrief.plain_signal("not a signal") == "not a signal"


def test_eof_keeps_the_work(tmp_path: Path) -> None:
    from srezero.play.shell import PlayShell

    # piped input that ends without resolve(): the episode ends as truncated, nothing is lost
    s = _session()
    out = io.StringIO()
    PlayShell(s, Style(False), stdin=io.StringIO("get_alerts()\n"), stdout=out).cmdloop()
    assert s.done and s.env.result["truncated"] and not s.env.result["resolved"]
    assert "get_alerts()\n── step 1" in out.getvalue()  # piped commands are echoed
    # at a terminal the first Ctrl-D asks, like quit; the second ends it (and keeps the work too)
    s = _session()
    out = io.StringIO()
    PlayShell(s, Style(False), stdin=io.StringIO("get_alerts()\n"), stdout=out, interactive=True).cmdloop()
    assert "the incident is still open" in out.getvalue() and "the debrief follows" in out.getvalue()
    assert s.done and s.env.result["truncated"]
    assert "srezero> get_alerts()" not in out.getvalue()  # a terminal echoes by itself
    # with no action taken there is nothing to keep
    s = _session()
    PlayShell(s, Style(False), stdin=io.StringIO(""), stdout=io.StringIO()).cmdloop()
    assert not s.done


def test_play_command_eof_saves_a_truncated_record(tmp_path: Path) -> None:
    out = CliRunner().invoke(cli, ["play", TASK, "--record", str(tmp_path / "r.json")], input="get_alerts()\n")
    assert out.exit_code == 0, out.output
    assert "DEBRIEF" in out.output and "you stopped before resolve()" in out.output
    rec = orjson.loads((tmp_path / "r.json").read_bytes())
    assert rec["status"] == "ok" and rec["result"]["truncated"] and len(rec["trajectory"]) == 1


def test_records_are_never_overwritten(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    runs = [CliRunner().invoke(cli, ["play", TASK, "--player", "ada"], input="get_alerts()\nresolve()\n")
            for _ in range(2)]
    assert all(r.exit_code == 0 for r in runs), runs[0].output
    assert (tmp_path / "runs/play/inc-001-0-ada.json").exists() and (tmp_path / "runs/play/inc-001-0-ada-2.json").exists()
    assert "transcript saved to runs/play/inc-001-0-ada-2.json" in runs[1].output
    explicit = [CliRunner().invoke(cli, ["play", TASK, "--record", "mine.json"], input="get_alerts()\nresolve()\n")
                for _ in range(3)]
    assert [p.name for p in sorted(tmp_path.glob("mine*.json"))] == ["mine-2.json", "mine-3.json", "mine.json"]
    assert "transcript saved to mine-3.json" in explicit[2].output


def test_unwritable_record_path(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    out = CliRunner().invoke(cli, ["play", TASK, "--record", str(blocker / "r.json")], input="resolve()\n")
    assert out.exit_code != 0 and "cannot save the record" in out.output and "PAGE" not in out.output
    # if the place stops working during the session, the record goes to a temp file instead
    s = _play(["get_alerts()", "resolve()"])
    path, warning = s.save_or_fallback(blocker / "r.json")
    assert path.exists() and "saved it to" in warning and str(path) in warning
    assert orjson.loads(path.read_bytes())["result"]["steps"] == 2
    # the end message then offers a report on that file, not on the whole temporary directory
    from srezero.commands.play import end_message

    text = end_message(str(path), TASK, 0, folder=False)
    assert f"srezero report {path}" in text and "folder" not in text
    path.unlink()


@pytest.mark.parametrize("line", ["HELP", "Help", "help()", "quit()", "exit()", "q", "hint 2", "page me", "quit now",
                                  "Page", "HINT", "?"])
def test_shell_word_variants_cost_nothing(line: str) -> None:
    s = _session(hints=True)
    r = s.handle(line)
    assert s.obs.step == 0 and not s.env.trajectory, (line, r.text)
    assert "unknown tool" not in r.text


def test_help_for_shell_commands() -> None:
    s = _session()
    assert s.handle("help hint").text.startswith("hint:")
    assert s.handle("help quit").text.startswith("quit:")
    assert s.handle("Help page").text.startswith("page:")
    assert s.handle("help help").text.startswith("help:")
    assert s.handle("HELP get_status").text.startswith("get_status(")
    assert s.obs.step == 0


def test_completion_quotes_values_when_no_quote_was_typed() -> None:
    from srezero.tools.parse import parse_action

    env = srezero.make(TASK, SEED)
    env.reset(seed=SEED)
    names = Names.of(env.world)
    assert candidates("get_status(service=", "wor", names) == ['"worker"']
    assert '"worker"' in candidates("get_status(service=", "", names)
    assert candidates("get_status(service='", "wor", names) == ["worker"]
    assert candidates("inspect_database(view=", "lo", names) == ['"locks"']
    assert candidates("get_traces(errors_only=", "T", names) == ["True"]
    parse_action("get_status(service=" + candidates("get_status(service=", "wor", names)[0] + ")")


def test_failed_step_header_shows_what_was_typed() -> None:
    s = _session()
    r = s.handle("get_status(bogus=1)")
    assert r.kind == "error" and r.header.endswith("· get_status(bogus=1)") and "get_status()" not in r.header
    r = s.handle("frobnicate " + "x" * 300)
    assert r.header.endswith("...") and len(r.header) < 160


def test_timeline_keeps_a_hint_after_the_step_it_followed() -> None:
    s = _session(hints=True)
    s.handle("get_alerts()")
    s.handle("hint")
    s.handle("resolve()")  # resolve costs no time: the same second as step 1 and the hint
    kinds = [(t, text) for t, kind, text in tl.timeline(s.env, s.info["result"], s.hints_used)
             if kind in ("you", "hint")]
    assert [text.split(":")[0] for _, text in kinds] == ["step 1", "hint 1 taken", "step 2"]
    assert len({t for t, _ in kinds}) == 1


def test_debrief_says_the_budget_ended_it() -> None:
    s = _session()
    for _ in range(s.step_budget):
        s.handle("get_alerts()")
    text = debrief.render(s.env, s.info["result"], [])
    assert f"the step budget ran out ({s.step_budget} steps)" in text


def test_timeline_covers_earlier_changes_and_labels_red_herrings() -> None:
    s = _play(["get_alerts()", "resolve()"])
    rows = tl.timeline(s.env, s.info["result"], [])
    changes = [(t, text) for t, kind, text in rows if kind == "change"]
    early = [text for t, text in changes if t < -3600]
    assert early and all(text.endswith("<- a red herring (harmless)") for text in early)  # history hours before
    assert sum(text.endswith("<- the root cause") for _, text in changes) == 1
    assert text_mod.rel(-6845) == "T-1:54:05" and text_mod.rel(-272) == "T-04:32"


def test_help_examples_are_valid_calls() -> None:
    from srezero.faults.base import CATEGORIES
    from srezero.play.session import example_call, tool_help
    from srezero.tools.parse import parse_action

    for spec in load_tools().values():
        parse_action(example_call(spec))  # raises on a wrong type (pid='...', size_gb='...', view='...')
    tools = load_tools()
    assert "terminate_session(pid=12345)" in tool_help(tools["terminate_session"])
    assert "inspect_database(view='activity')" in tool_help(tools["inspect_database"])
    assert "'activity' | 'locks'" in tool_help(tools["inspect_database"])
    sub = tool_help(tools["submit_diagnosis"])
    assert all(c in sub for c in CATEGORIES) and "<node>/<device>" in sub and "<service>.<key>" in sub
    wait = tool_help(tools["wait"])
    assert "costs 0" not in wait and "as many simulated seconds as you wait" in wait


def test_piped_session_echoes_and_says_how_to_replay(tmp_path: Path) -> None:
    rec = tmp_path / "r.json"
    out = CliRunner().invoke(cli, ["play", TASK, "--seed", "3", "--record", str(rec)], input="get_alerts()\nresolve()\n")
    assert out.exit_code == 0, out.output
    assert "srezero> get_alerts()\n" in out.output and "srezero> resolve()\n" in out.output
    assert f"SREZERO_REPLAY={rec} srezero run --task {TASK} --agent replay --seed 3" in out.output
    assert f"srezero report {rec}" in out.output


def _debrief_of(task: str, seed: int, lines: list[str]) -> str:
    env = srezero.make(task, seed)
    s = PlaySession(env, seed)
    s.start()
    for line in lines:
        s.handle(line)
    return " ".join(debrief.render(env, env.result, []).split())


def test_a_misspelt_setting_is_not_called_a_victim_that_suffered_downstream() -> None:
    text = _debrief_of("inc-003", 5, ['submit_diagnosis(root_causes=[{"entity": "web_server.db_retrys", '
                                      '"category": "misconfiguration", "detail": "x"}])', "resolve()"])
    assert "web_server has no setting 'db_retrys' (did you mean db_retries?)" in text


def test_blaming_the_service_on_a_broken_disk_says_to_name_the_node_or_disk() -> None:
    env = srezero.make("inc-002", 2)
    env.reset()
    disk = env.ground_truth()[0]["entity"]
    text = _debrief_of("inc-002", 2, ['submit_diagnosis(root_causes=[{"entity": "database", "category": "hardware", '
                                      '"detail": "disk errors"}])', "resolve()"])
    assert f"it runs on {disk.split('/')[0]}, where the fault is ({disk})" in text
    assert "at least as many innocents as culprits" in text  # zero culprits named: "as many" was wrong


def test_a_missed_signal_says_when_the_read_was_made_but_not_aimed_at_its_entity() -> None:
    """A student who ran get_status() and saw CrashLoopBackOff was told only "missed": it read as "you
    never looked"."""
    text = _debrief_of("inc-001", 4, ["get_status()", 'search_logs("web_server")', "resolve()"])
    assert "your get_status at step 1 was not aimed at any one target" in text
    assert 'get_status(service="worker"), counts for it' in text
    assert "you ran search_logs on web_server, not on worker" in text
    after = text.split('the config of worker showing "env.DATABASE_URL" [get_config]')[1]
    assert not after.startswith(" (")  # never read at all: nothing to explain


def test_small_wordings_a_review_caught() -> None:
    text = _debrief_of("inc-001", 0, ["resolve()"])
    assert "Ended after 1 step and" in text
    s = _session(hints=True)
    assert s.handle("page").text.startswith(f"PAGE {s.env.world.stamp(s.env.t0)}: ")  # as the first page shows it
    s.handle("hint")
    assert "hint 1 the one you took again" in s.handle("hint 99").text  # not "hint 1-1 one"


def test_the_folders_report_is_suggested_only_for_a_folder_of_records(tmp_path: Path) -> None:
    """`play --record /tmp/x.json` suggested `srezero report /tmp`, which reads every JSON file under /tmp."""
    mixed, records = tmp_path / "mixed", tmp_path / "class"
    (mixed / "src").mkdir(parents=True)
    (mixed / "notes.txt").write_text("not a record")
    records.mkdir()
    for folder in (mixed, records):
        rec = folder / "ada.json"
        out = CliRunner().invoke(cli, ["play", TASK, "--record", str(rec), "--color", "never"], input="resolve()\n")
        assert out.exit_code == 0, out.output
        end = out.output[out.output.index("\ntranscript saved to"):]
        assert f"srezero debrief {rec}" in end and f"srezero report {rec}" in end  # the file itself, always
        assert (f"srezero report {folder}\n" in end) is (folder == records), end
