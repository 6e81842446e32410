"""Every plot's data, and the tables, checked against the records they come from (not pixels)."""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

import pytest
from report_helpers import LLM, write_run

import srezero
from srezero.report import data as D
from srezero.report.load import RunDirError, load_run, to_ep
from srezero.report.plots import PLOTS, plot_data

Run = tuple[Path, list[dict[str, Any]]]


def close(x: float, tol: float = 2e-6) -> Any:
    """Report numbers are rounded to 6 decimals (so their bytes are stable)."""
    return pytest.approx(x, abs=tol)


def _ok(recs: list[dict[str, Any]], agent: str) -> list[dict[str, Any]]:
    return [r for r in recs if r["agent"] == agent and r["status"] == "ok"]


ZERO_RESULT = {"marks": 0.0, "success": False, "evidence_coverage": 0.0, "marks_terms": {}}


def _outcomes(recs: list[dict[str, Any]], agent: str) -> list[dict[str, Any]]:
    """Every episode of ``agent`` as the outcome the report counts: a failed one is a zero, so an agent
    cannot improve its numbers by raising an exception (or by its provider failing)."""
    return [{**r, "result": r["result"] if r["status"] == "ok" else ZERO_RESULT}
            for r in recs if r["agent"] == agent]


@pytest.fixture(scope="module")
def pdata(small_run: Run) -> dict[str, dict[str, Any]]:
    return plot_data(load_run(small_run[0]).episodes)


def test_every_plot_has_data(pdata: dict[str, dict[str, Any]]) -> None:
    assert set(pdata) == {p.name for p in PLOTS}
    assert len(PLOTS) == 9


def test_agent_order_puts_the_oracle_last_and_apart(pdata: dict[str, dict[str, Any]]) -> None:
    d = pdata["overall_marks"]
    assert d["agents"][-1] == "oracle" and d["upper_bound"] == [False, False, True]
    assert set(d["agents"]) == {"oracle", "random", LLM}


def test_overall_marks_match_records_and_the_sweep_summary(small_run: Run, pdata: dict[str, dict[str, Any]]) -> None:
    from srezero.sweep.records import row_of
    from srezero.sweep.stats import summarise

    recs = small_run[1]
    d = pdata["overall_marks"]
    summary = {g["agent"]: g for g in summarise([row_of(r) for r in recs])["groups"] if g["task"] == "*"}
    for agent, mean, lo, hi, n in zip(d["agents"], d["mean"], d["lo"], d["hi"], d["n"]):
        # every episode counts; one that did not finish is a zero (as in summary.json)
        marks = [r["result"]["marks"] if r["status"] == "ok" else 0.0 for r in recs if r["agent"] == agent]
        assert n == len(marks)
        assert mean == close(statistics.fmean(marks))
        assert lo <= mean <= hi
        m = summary[agent]["metrics"]["marks"]
        assert (mean, lo, hi) == (m["mean"], m["lo"], m["hi"])  # same CI as summary.json
    assert d["mean"][d["agents"].index("oracle")] == 100.0


def test_success_against_evidence(small_run: Run, pdata: dict[str, dict[str, Any]]) -> None:
    recs = small_run[1]
    d = pdata["success_vs_evidence"]
    for i, agent in enumerate(d["agents"]):
        ok = _outcomes(recs, agent)
        cov = [r["result"]["evidence_coverage"] for r in ok]
        succ = [float(r["result"]["success"]) for r in ok]
        assert d["evidence"][i] == close(statistics.fmean(cov))
        assert d["success"][i] == close(statistics.fmean(succ))
        assert d["points"][i] == [[close(c), int(s)] for c, s in zip(cov, succ)]
        gathers = [c >= D.EVIDENCE_HIGH and not s for c, s in zip(cov, succ)]
        assert d["gathers_but_fails"][i] == close(statistics.fmean(gathers))
        assert d["solved"][i] + d["gathers_but_fails"][i] + d["little_evidence_fails"][i] == close(1.0, 1e-5)


def test_errors_per_agent(small_run: Run, pdata: dict[str, dict[str, Any]]) -> None:
    recs = small_run[1]
    d = pdata["errors"]
    fields = {"invalid": "invalid_actions", "wrong_fixes": "wrong_fixes", "destructive": "destructive_actions",
              "distractor": "distractor_actions"}
    for k, kind in enumerate(d["kinds"]):
        for i, agent in enumerate(d["agents"]):
            if kind == "provider_errors":
                all_recs = [r for r in recs if r["agent"] == agent]
                # usage counts every failed request, the last of a failed episode too (not counted twice)
                want = statistics.fmean((r["usage"]["provider_errors"] if "provider_errors" in (r.get("usage") or {})
                                         else float(r["status"] == "provider_error")) for r in all_recs)
            else:
                want = statistics.fmean(r["result"][fields[kind]] for r in _ok(recs, agent))
            assert d["values"][k][i] == close(want), (kind, agent)
    assert max(d["values"][0]) > 0  # random play makes invalid actions: the plot is not trivially empty


def test_marks_components(small_run: Run, pdata: dict[str, dict[str, Any]]) -> None:
    recs = small_run[1]
    d = pdata["marks_components"]
    assert d["terms"][:4] == ["diagnosis", "mitigation", "evidence", "success"]
    for i, agent in enumerate(d["agents"]):
        ok = _outcomes(recs, agent)
        for t, term in enumerate(d["terms"]):
            assert d["values"][t][i] == close(statistics.fmean(r["result"]["marks_terms"].get(term, 0.0) for r in ok))
        unclamped = statistics.fmean(sum(r["result"]["marks_terms"].values()) for r in ok)
        assert sum(d["values"][t][i] for t in range(len(d["terms"]))) == close(unclamped, 1e-4)
    oracle = d["agents"].index("oracle")
    assert [d["values"][t][oracle] for t in range(4)] == [40.0, 40.0, 10.0, 10.0]


def test_success_heatmap(small_run: Run, pdata: dict[str, dict[str, Any]]) -> None:
    recs = small_run[1]
    d = pdata["success_heatmap"]
    assert d["tasks"] == ["inc-001", "inc-002", "inc-003"]
    for r, task in enumerate(d["tasks"]):
        for c, agent in enumerate(d["agents"]):
            ok = [x for x in _outcomes(recs, agent) if x["task_id"] == task]
            want = statistics.fmean(float(x["result"]["success"]) for x in ok) if ok else None
            assert d["success"][r][c] == (close(want) if ok else None)
            assert d["n"][r][c] == len(ok)
    # its only inc-003 episode errored: a failure on that task, not a gap in the map
    assert d["success"][2][d["agents"].index(LLM)] == 0.0


def test_marks_by_difficulty_and_layer(small_run: Run, pdata: dict[str, dict[str, Any]]) -> None:
    recs = small_run[1]
    tasks = {t.id: t for t in srezero.list_tasks()}
    for name, groups_of in (("marks_by_difficulty", lambda t: [t.difficulty]), ("marks_by_layer", lambda t: t.layers)):
        d = pdata[name]
        expected_groups = sorted({g for r in recs for g in groups_of(tasks[r["task_id"]])})
        assert sorted(d["groups"]) == expected_groups
        for g, group in enumerate(d["groups"]):
            for a, agent in enumerate(d["agents"]):
                marks = [r["result"]["marks"] for r in _outcomes(recs, agent) if group in groups_of(tasks[r["task_id"]])]
                assert d["n"][g][a] == len(marks)
                assert d["mean"][g][a] == (close(statistics.fmean(marks)) if marks else None)
    difficulties = pdata["marks_by_difficulty"]["groups"]
    assert difficulties == [x for x in D.DIFFICULTIES if x in difficulties]  # easy -> hard order


def test_breakdowns_carry_a_ci_over_their_tasks(small_run: Run) -> None:
    """A review found the difficulty, layer and split tables gave means with no interval."""
    import numpy as np

    from srezero.sweep.stats import bootstrap

    eps = load_run(small_run[0]).episodes
    tasks = {t.id: t for t in srezero.list_tasks()}
    for kind, d, groups_of in (("difficulty", D.difficulty_data(eps), lambda t: [t.difficulty]),
                               ("layer", D.layer_data(eps), lambda t: t.layers),
                               ("split", D.split_data(eps), lambda t: [t.split])):
        checked = 0
        for g, group in enumerate(d["groups"]):
            for a, agent in enumerate(d["agents"]):
                members = [e for e in eps if e.agent == agent and group in groups_of(tasks[e.task_id])]
                ids = {e.task_id for e in members}
                assert d["tasks"][g][a] == len(ids) and d["n"][g][a] == len(members)
                lo, hi = d["lo"][g][a], d["hi"][g][a]
                if len(ids) < 2:  # one task's seeds are not the units of a group: no interval
                    assert lo is None and hi is None
                    continue
                ref = bootstrap(np.array([e.marks for e in members]), f"{agent}\x1f{kind}={group}\x1fmarks",
                                clusters=np.array([e.task_id for e in members]))
                assert (lo, hi) == (close(ref["lo"]), close(ref["hi"]))
                assert lo <= d["mean"][g][a] <= hi
                checked += 1
        assert kind != "split" or checked, "no split group spans two tasks: the test checks no interval"
    assert D.split_data(eps)["groups"] == [s for s in ("dev", "test") if s in D.split_data(eps)["groups"]]


def test_ttd_ttm_distributions(small_run: Run, pdata: dict[str, dict[str, Any]]) -> None:
    recs = small_run[1]
    d = pdata["ttd_ttm"]
    for i, agent in enumerate(d["agents"]):
        ok = _ok(recs, agent)
        assert d["ttd_s"][i] == [r["result"]["ttd_s"] for r in ok if r["result"]["ttd_s"] is not None]
        assert d["ttm_s"][i] == [r["result"]["ttm_s"] for r in ok if r["result"]["ttm_s"] is not None]
        assert d["n"][i] == len(ok)
    assert len(d["ttd_s"][d["agents"].index("oracle")]) == 6  # the oracle diagnoses every episode


def test_cost_plot_shows_only_llm_episodes(small_run: Run, pdata: dict[str, dict[str, Any]]) -> None:
    d = pdata["marks_vs_cost"]
    assert d["agents"] == [LLM]
    assert d["cost_usd"] == [[0.0125, 0.025, 0.0]]  # the provider-error episode too: spend is spend
    assert d["tokens"] == [[1100, 2100, 0]]
    assert d["marks"] == [[r["result"]["marks"] for r in _outcomes(small_run[1], LLM)]]


def test_cost_plot_empty_state_without_llm(tmp_path: Path, small_run: Run) -> None:
    from srezero.report.plots import PLOTS, render

    write_run(tmp_path / "run", with_llm=False)
    eps = load_run(tmp_path / "run").episodes
    assert D.cost_data(eps) == {"agents": [], "cost_usd": [], "marks": [], "tokens": []}
    spec = next(p for p in PLOTS if p.name == "marks_vs_cost")
    render(spec, spec.data(eps), tmp_path)  # the explanatory empty-state figure, not an error
    render(spec, spec.data(load_run(small_run[0]).episodes), tmp_path / "run")
    assert (tmp_path / "marks_vs_cost.png").stat().st_size > 1000
    assert (tmp_path / "marks_vs_cost.svg").read_bytes() != (tmp_path / "run" / "marks_vs_cost.svg").read_bytes()


def test_failure_categories(small_run: Run) -> None:
    recs = small_run[1]
    f = D.failures(load_run(small_run[0]).episodes)
    cat = f["categories"]
    for i, agent in enumerate(f["agents"]):
        mine = [r for r in recs if r["agent"] == agent]
        ok = [r["result"] for r in mine if r["status"] == "ok"]
        counts = dict(zip(cat, f["counts"][i]))
        assert counts["wrong_fix"] == sum(r["wrong_fixes"] > 0 for r in ok)
        assert counts["premature"] == sum(r["premature_resolution"] for r in ok)
        assert counts["distractor"] == sum(r["distractor_actions"] > 0 for r in ok)
        assert counts["budget"] == sum(r["end"] in ("step_budget", "time_budget") for r in ok)
        assert counts["stopped"] == sum(r["end"] == "stopped" for r in ok)
        assert counts["invalid"] == sum(r["invalid_actions"] > 0 for r in ok)
        assert counts["provider_error"] == sum(r["status"] == "provider_error" for r in mine)
        assert f["episodes"][i] == len(mine)
    assert dict(zip(cat, f["counts"][f["agents"].index(LLM)]))["provider_error"] == 1
    assert sum(f["counts"][f["agents"].index("oracle")]) == 0


def test_a_stopped_episode_is_not_counted_as_budget_exhausted() -> None:
    """A player's quit (or a harness's finish()) with budget left is "stopped early"; a record written
    before results named their end still counts a truncation as the budget."""
    env = srezero.make("inc-001", 0)
    env.reset(seed=0)
    env.step("get_alerts()")
    rec = {"agent": "human", "task_id": "inc-001", "seed": 0, "status": "ok", "result": env.finish(),
           "trajectory": env.trajectory}
    old = {**rec, "result": {k: v for k, v in env.result.items() if k != "end"}}
    meta = ("easy", ("application",), "dev")
    labels = [[lbl for _, lbl, pred in D.FAILURES if pred(to_ep(r, {}, meta))] for r in (rec, old)]
    assert "stopped early" in labels[0] and "budget exhausted" not in labels[0]
    assert "budget exhausted" in labels[1] and "stopped early" not in labels[1]


def test_leaderboard_counts_errors_apart(small_run: Run) -> None:
    rows = {r["agent"]: r for r in D.leaderboard(load_run(small_run[0]).episodes)}
    assert rows[LLM]["episodes"] == 3 and rows[LLM]["n"] == 2 and rows[LLM]["errors"] == 1
    assert rows[LLM]["cost_usd"] == close((0.0125 + 0.025 + 0.0) / 3)  # over every episode, as paid
    assert rows["random"]["cost_usd"] is None
    assert rows["oracle"]["upper_bound"] and rows["oracle"]["success"] == 1.0
    assert not math.isnan(rows["random"]["marks"])


def test_loader_reads_runner_records_and_rejects_bad_dirs(tmp_path: Path, small_run: Run) -> None:
    import orjson

    rec = dict(small_run[1][0])
    for k in ("status", "error", "schema", "agent_name"):
        rec.pop(k)
    (tmp_path / "loose").mkdir()
    (tmp_path / "loose" / "one.json").write_bytes(orjson.dumps(rec))
    run = load_run(tmp_path / "loose")
    assert [(e.agent, e.task_id, e.ok, e.upper_bound) for e in run.episodes] == [("oracle", "inc-001", True, True)]
    (tmp_path / "empty").mkdir()
    with pytest.raises(RunDirError, match="no episode records"):
        load_run(tmp_path / "empty")
    with pytest.raises(RunDirError, match="no such run directory"):
        load_run(tmp_path / "missing")
    (tmp_path / "loose" / "sub").mkdir()  # the error names both files, so the user knows which to move
    (tmp_path / "loose" / "sub" / "two.json").write_bytes(orjson.dumps(rec))
    with pytest.raises(RunDirError, match=r"two records .*seed 0: one\.json and sub/two\.json; move one out"):
        load_run(tmp_path / "loose")
    (tmp_path / "loose" / "sub" / "two.json").unlink()
    (tmp_path / "loose" / "three.json").write_text("{not json")
    with pytest.raises(RunDirError, match=r"three\.json"):
        load_run(tmp_path / "loose")


def test_leaderboard_means_equal_the_summary_to_the_digit(small_run: Run) -> None:
    from srezero.sweep.records import row_of
    from srezero.sweep.stats import summarise

    summary = {g["agent"]: g["metrics"] for g in summarise([row_of(r) for r in small_run[1]])["groups"]
               if g["task"] == "*"}
    for row in D.leaderboard(load_run(small_run[0]).episodes):
        m = summary[row["agent"]]
        for ours, theirs in (("marks", "marks"), ("success", "success"), ("diagnosis", "diagnosis_score"),
                             ("mitigation", "mitigation"), ("evidence", "evidence")):
            assert row[ours] == m[theirs]["mean"], (row["agent"], ours)
