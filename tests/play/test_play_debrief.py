"""Play mode, second review: attempts, the debrief's latent root-cause change, partial fixes, the good
path, help without answers, hint numbers, the timeline's end, width, days, non-UTF-8 terminals."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

import srezero
from srezero.cli import cli
from srezero.play import debrief
from srezero.play import goodpath as gp
from srezero.play import text as text_mod
from srezero.play import timeline as tl
from srezero.play.session import PlaySession
from srezero.task.loader import list_tasks
from srezero.tools.parse import parse_action
from srezero.tools.registry import load_tools

SGR = re.compile(r"\x1b\[[0-9;]*m")


def _play(task: str, seed: int, lines: list[str], hints: bool = False) -> PlaySession:
    s = PlaySession(srezero.make(task, seed), seed, hints_enabled=hints)
    s.start()
    for line in lines:
        s.handle(line)
    return s


# ---------------------------------------------------------------------- 2: a second attempt


def test_a_second_attempt_gets_its_own_label_and_the_folder_still_reports(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    play = ["get_alerts()\nresolve()\n", "get_status(service=\"worker\")\nresolve()\n", "resolve()\n"]
    for i, moves in enumerate(play):
        out = CliRunner().invoke(cli, ["play", "inc-001", "--seed", "7", "--player", "ada", "--record", "class/ada.json"],
                                 input=moves)
        assert out.exit_code == 0, out.output
        assert ("as human:ada#" in out.output) == (i > 0)  # the player is told the attempt's label
    for name in ("x", "y"):  # two anonymous players, different files, same task and seed
        out = CliRunner().invoke(cli, ["play", "inc-001", "--seed", "7", "--record", f"class/{name}.json"],
                                 input="get_alerts()\nresolve()\n")
        assert out.exit_code == 0, out.output
    agents = {p.name: orjson.loads(p.read_bytes())["agent"] for p in (tmp_path / "class").glob("*.json")}
    assert agents == {"ada.json": "human:ada", "ada-2.json": "human:ada#2", "ada-3.json": "human:ada#3",
                      "x.json": "human", "y.json": "human#2"}
    # another task or seed is a different cell: no suffix needed
    out = CliRunner().invoke(cli, ["play", "inc-001", "--seed", "8", "--player", "ada", "--record", "class/ada8.json"],
                             input="resolve()\n")
    assert orjson.loads((tmp_path / "class/ada8.json").read_bytes())["agent"] == "human:ada"

    from srezero.report.load import load_run

    assert sorted(e.agent for e in load_run(tmp_path / "class").episodes if e.seed == 7) == \
        ["human", "human#2", "human:ada", "human:ada#2", "human:ada#3"]
    rep = CliRunner().invoke(cli, ["report", "class", "--out", "rep", "--no-replay"])
    assert rep.exit_code == 0, rep.output
    text = (tmp_path / "rep/report.md").read_text()
    assert "human:ada#2" in text and "human:ada#3" in text


# ---------------------------------------------------------------------- 4: the latent change


@pytest.mark.parametrize(("task", "key"), [("inc-003", "db_retries"), ("inc-026", "autovacuum"),
                                           ("inc-027", "cache_coalescing")])
def test_the_change_that_caused_it_is_marked_however_early(task: str, key: str) -> None:
    s = _play(task, 0, ["get_alerts()", "resolve()"])
    changes = [(t, text) for t, kind, text in tl.timeline(s.env, s.info["result"], []) if kind == "change"]
    causes = [(t, text) for t, text in changes if text.endswith("<- the root cause")]
    # inc-003's one edit set two keys (db_timeout_ms and db_retries): one history entry per key
    assert len(causes) == (2 if task == "inc-003" else 1), changes
    t = next(t for t, text in causes if f"{key}: " in text)
    onset = min(f.injected_at for f in s.env.faults) - s.env.t0
    assert t < onset - 3600  # made hours or days before the onset
    cause_keys = {key, "db_timeout_ms"} if task == "inc-003" else {key}
    assert all(not text.endswith("<- the root cause") for _, text in changes
               if not any(f"{k}: " in text for k in cause_keys))


def test_a_benign_change_to_another_service_is_not_the_root_cause() -> None:
    s = _play("inc-003", 1, ["get_alerts()", "resolve()"])
    assert tl.root_cause_keys(s.env) >= {("web_server", "db_retries"), ("web_server", "db_timeout_ms")}
    text = debrief.render(s.env, s.info["result"], [])
    cause = next(line for line in text.splitlines() if "db_retries: 0 -> 4" in line)
    assert re.search(r"-\dd \d\d:\d\d:\d\d", cause)  # a day offset: the edit was days before the page
    assert "max_clients" not in cause and text.count("<- the root cause") == 2  # db_timeout_ms and db_retries


# ---------------------------------------------------------------------- 6: partial fixes, the good path

PARTIAL = ["get_config(service=\"web_server\")", "set_config(service=\"web_server\", key=\"db_retries\", value=0)",
           "wait(seconds=180)",
           'submit_diagnosis(root_causes=[{"entity": "web_server.db_retries", "category": "misconfiguration", '
           '"detail": "db_retries=4 with db_timeout_ms=6"}])', "resolve()"]


def test_a_partial_fix_says_what_was_still_needed() -> None:
    s = _play("inc-003", 1, PARTIAL)
    result = s.info["result"]
    assert not result["mitigated"] and result["writes"][0]["addresses_root_cause"]
    text = debrief.render(s.env, result, [])
    original = s.env.faults[0].original["db_timeout_ms"]
    flat = " ".join(text.split())  # the debrief wraps its lines
    assert ("set_config(service='web_server', key='db_retries', value=0): part of the fix, but the root cause was "
            "still in effect at the end; still needed: "
            f'set_config(service="web_server", key="db_timeout_ms", value={original})') in flat
    assert "addressed the root cause" not in text


def test_a_full_fix_addressed_the_root_cause_and_the_good_path_ends_the_debrief() -> None:
    env = srezero.make("inc-003", 1)
    env.reset(seed=1)
    plan = env.oracle_plan()
    s = _play("inc-003", 1, [gp.call_text(a) for a in plan])
    result = s.info["result"]
    assert result["mitigated"] and result["marks"] == 100.0
    text = debrief.render(s.env, result, [])
    flat = " ".join(text.split())
    assert flat.count("): addressed the root cause") == 2 and "part of the fix" not in text
    tail = text[text.index("A good path"):]
    assert text.index("A good path") > text.index("Marks")
    steps = [line for line in tail.splitlines() if re.match(r"^\s+\d+\. ", line)]
    assert len(steps) == len(plan) and steps[-1].endswith("resolve()")
    assert '"entity": "web_server.db_retries"' in tail and "oracle" not in steps[0]


def test_the_harm_of_a_wrong_restart_is_shown_even_when_metrics_recover_after_it() -> None:
    # inc-011 is a false alarm that heals by itself: after a restart the metrics improve, which reads like a fix
    s = _play("inc-011", 2, ['restart(target="database")', "submit_diagnosis(root_causes=[])", "resolve()"])
    result = s.info["result"]
    assert result["collateral"]["method"] == "counterfactual" and result["collateral"]["errors"] > 100
    flat = " ".join(debrief.render(s.env, result, [], width=100).split())
    assert "collateral: against a replay of the episode without your wrong write" in flat
    assert f"about {result['collateral']['errors']:,.0f} more failed requests" in flat
    clean = _play("inc-011", 2, ["submit_diagnosis(root_causes=[])", "resolve()"])
    assert "collateral:" not in debrief.render(clean.env, clean.info["result"], [])


def test_a_blamed_false_alarm_gets_its_gate_not_the_checklist_of_a_real_fault() -> None:
    claim = '{"entity": "database", "category": "capacity", "detail": "slow"}'
    s = _play("inc-011", 2, [f"submit_diagnosis(root_causes=[{claim}])", "resolve()"])
    text = " ".join(debrief.render(s.env, s.info["result"], [], width=100).split())
    assert "why 0: this was a false alarm" in text and "database: nothing there needed fixing" in text
    assert "checklist answers that were not yes" not in text and "had no part in the incident" not in text


@pytest.mark.parametrize(("task", "moves"), [("inc-040", ["kubectl scale deploy/worker --replicas 1"]),
                                              ("inc-012", ["kubectl rollout restart deploy/worker"])])
def test_the_good_path_does_not_depend_on_what_the_player_did(task: str, moves: list[str]) -> None:
    s = _play(task, 0, [*moves, "resolve()"])
    fresh = srezero.make(task, 0)
    fresh.reset(seed=0)
    assert gp.good_path(s.env).plan == fresh.oracle_plan()


def test_every_good_path_step_is_a_call_a_person_can_type() -> None:
    for info in list_tasks():
        env = srezero.make(info.id, 0)
        env.reset(seed=0)
        for action in gp.good_path(env).plan:
            tool, args = parse_action(gp.call_text(action))
            wanted = {k: v for k, v in action["args"].items() if (tool, k) not in gp._NOISE_ARGS}
            assert tool == action["tool"] and {k: args[k] for k in wanted} == wanted, (info.id, action)


def test_rendering_the_debrief_changes_nothing_in_the_record() -> None:
    from srezero.sweep.records import dumps

    s = _play("inc-003", 1, PARTIAL)
    before = dumps(s.record())
    debrief.render(s.env, s.info["result"], [])
    assert dumps(s.record()) == before


# ---------------------------------------------------------------------- 7: help names no answer


def _truths() -> list[tuple[str, str, str]]:
    out = []
    for info in list_tasks():
        for seed in (0, 1):
            env = srezero.make(info.id, seed)
            env.reset(seed=seed)
            services = set(env.world.services)
            for rc in env.truth:
                for name in (rc.entity, *rc.aliases):
                    out.append((info.id, name, rc.detail))
                    svc, _, key = name.partition(".")
                    if key and svc in services:
                        out.append((info.id, key, rc.detail))
            out += [(info.id, tok, rc.detail) for rc in env.truth for tok in rc.detail_tokens
                    if re.search(r"[_\d]", tok) and not re.fullmatch(r"-?[\d.]+", tok)]
    # identifiers (customer_id, db_retries), not plain words or bare numbers (a bad value such as 30)
    return out


def test_help_names_no_ground_truth_of_any_task() -> None:
    s = _play("inc-001", 0, [], hints=True)
    tools = load_tools()
    texts = {"help": s.help(""), "kubectl": s.help("kubectl")}
    texts.update({name: s.help(name) for name in tools})
    for name, spec in tools.items():  # the declared descriptions are the agents' tool specs too: not play's to say
        for desc in [spec.description, *(p.get("description", "") for p in spec.schema["properties"].values())]:
            texts[name] = texts[name].replace(desc, "")
    services = {"load_balancer", "web_server", "cache", "database", "message_queue", "worker"}
    for task, name, detail in _truths():
        for where, text in texts.items():
            assert detail not in text, (task, where)
            if name in services and where != "submit_diagnosis":
                continue  # read examples name services; every task's topology shows them anyway
            assert not re.search(rf"(?<![\w.<]){re.escape(name)}(?![\w>])", text), (task, name, where)


# ---------------------------------------------------------------------- P3: hints, timeline, width


def test_hint_numbers_that_are_not_hints_use_up_nothing() -> None:
    s = _play("inc-001", 0, ["get_alerts()"], hints=True)
    total = len(s.env.spec.hints)
    for arg in ("0", "-1", str(total + 2), "2"):  # 2: ahead of the next (hint 1)
        r = s.handle(f"hint {arg}")
        assert r.kind == "error" and not s.hints_used, (arg, r.text)
    assert f"are {total} hints" in s.handle("hint 0").text and "nothing was used up" in s.handle("hint 2").text
    assert s.handle("hint 1").text.startswith(f"hint 1/{total}: ")  # the next one, asked by number
    assert s.handle("hint please").text.startswith(f"hint 2/{total}: ")  # words still mean "the next"
    assert s.handle("hint 1").text.startswith(f"hint 1/{total} (again)")
    r = s.handle(f"hint {total + 1}")
    assert r.kind == "error" and f"there are {total} hints" in r.text and len(s.hints_used) == 2


def test_the_timeline_stops_at_the_end_and_counts_only_what_came_before() -> None:
    s = _play("inc-003", 3, ["get_alerts()", "resolve()"])  # a seed with a change after the end
    env, result = s.env, s.info["result"]
    end = result["sim_seconds"]
    assert any(c.at > env.t0 + end for c in env.world.changes)  # the verification window had changes...
    items = tl.timeline(env, result, [])
    assert all(t <= end for t, kind, _ in items if kind in ("change", "event", "you", "hint"))  # ...not listed
    assert items[-1][1] == "end" and "stop here" in items[-1][2]
    for t, kind, text in items:
        m = re.search(r"^(\w+) (\S+): .*\(x(\d+)", text) if kind == "event" else None
        if m:
            rep = env.world.topo.replicas.get(m.group(2))
            svc = rep.kind if rep is not None else m.group(2)
            same = [e for e in env.world.events if e.kind == "Warning" and e.reason == m.group(1)
                    and (env.world.topo.replicas[e.entity].kind if e.entity in env.world.topo.replicas else e.entity)
                    == svc and env.t0 + t <= e.at <= env.t0 + end]
            assert int(m.group(3)) == len(same), text


def test_the_debrief_fits_a_readable_width_and_shows_days() -> None:
    s = _play("inc-003", 1, PARTIAL)
    for style in (debrief.Style(False), debrief.Style(True)):
        text = SGR.sub("", debrief.render(s.env, s.info["result"], [], style))
        assert max(len(line) for line in text.splitlines()) <= text_mod.WIDTH
    assert tl.clock(s.env, 0.0) == s.env.world.stamp(s.env.t0)[11:19]
    assert re.fullmatch(r"-[12]d \d\d:\d\d:\d\d", tl.clock(s.env, -36 * 3600.0))


def test_a_bare_name_says_to_quote_it_and_is_still_an_invalid_action() -> None:
    s = _play("inc-001", 0, [])
    r = s.handle("search_logs(service=database)")
    assert r.kind == "error" and 'quote text: service="database"' in r.text
    assert s.env.trajectory[-1]["ok"] is False and s.steps_left == s.step_budget - 1


# ---------------------------------------------------------------------- 10: a terminal that is not UTF-8


@pytest.mark.parametrize("encoding", ["ascii", "cp1252"])
def test_play_survives_a_terminal_that_is_not_utf8(tmp_path: Path, encoding: str) -> None:
    rec = tmp_path / "r.json"
    env = dict(os.environ, PYTHONIOENCODING=encoding, NO_COLOR="1")
    proc = subprocess.run([sys.executable, "-c", "from srezero.cli import main; main()", "play", "inc-001",
                           "--record", str(rec)], input="get_alerts()\nget_status(service=\"w\u00f6rker\")\nresolve()\n"
                          .encode(), capture_output=True, env=env, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    assert b"Traceback" not in proc.stderr
    out = proc.stdout.decode(encoding)  # every byte in the terminal's encoding, the debrief's too
    assert "-- step 1 " in out and "DEBRIEF" in out and "transcript saved to" in out
    assert f"marks 0.0/100 {'|' if encoding == 'ascii' else chr(183)} diagnosis" in out  # cp1252 has the dot
    assert [t["tool"] for t in orjson.loads(rec.read_bytes())["trajectory"]] == ["get_alerts", "get_status", "resolve"]


def test_a_wrong_fix_says_why_it_did_not_help() -> None:
    """Each wrong write gets its reason: the wrong place (naming the cause), the right place with a write
    that does not cure it (naming what does), after the cure, or any write on a false alarm."""
    s = _play("inc-001", 2, ['restart(target="worker")', 'scale(service="web_server", replicas=6)'])
    fix = next(a for a in gp.good_path(s.env).plan if a["tool"] == "set_config")
    s.handle(gp.call_text(fix))
    s.handle("wait(seconds=300)")
    s.handle('restart(target="worker")')
    s.handle("resolve()")
    text = " ".join(debrief.render(s.env, s.info["result"], [], width=400).split())
    assert ("restart(target='worker'): wrong fix, worker is where a root cause acts, but restart does not cure it "
            f"(what does: {gp.call_text(fix)})") in text
    assert "replicas=6): wrong fix, web_server is not where the root cause is (worker.env.DATABASE_URL)" in text
    assert "wrong fix, the root cause was already mitigated by then" in text
    # a service on a failing disk's node is a victim in the diagnosis, so a write at it must not call it the cause
    d = _play("inc-002", 3, ['restart(target="database")', "resolve()"])
    text = " ".join(debrief.render(d.env, d.info["result"], [], width=400).split())
    disk = d.env.truth[0].entity
    assert "/" in disk and f"database is not the root cause, only tied to it ({disk}), and restart does not cure it" in text
    assert "database is where a root cause acts" not in text
    control = next(t.id for t in list_tasks() if srezero.get_task(t.id).ground_truth.no_fault)
    c = _play(control, 0, ['restart(target="web_server")', "resolve()"])
    assert re.search(r"wrong fix( \(aimed at a red herring\))?, nothing was broken \(a false alarm\)", " ".join(
        debrief.render(c.env, c.info["result"], [], width=400).split()))
