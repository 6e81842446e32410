"""Play-mode logic without a terminal: help, hints, quitting, completion, the debrief and the record."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

import srezero
from srezero.cli import cli
from srezero.play import debrief
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
    assert "missed get_status(worker)" in text
    assert "premature resolve (-10)" in text and "-10.0" in text
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
