"""The report folder: Markdown tables, offline HTML pages, replay pages true to the records, the CLI."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from report_helpers import LLM

from srezero.cli import cli
from srezero.report.build import build_report
from srezero.report.load import load_run, safe_name
from srezero.report.replay import resimulate

Run = tuple[Path, list[dict[str, Any]]]


def _page(built: Path, rec: dict[str, Any]) -> str:
    name = f"{safe_name(rec['agent'])}--{safe_name(rec['task_id'])}--s{rec['seed']:04d}.html"
    return (built / "episodes" / name).read_text()


def test_folder_layout(built_report: Path, small_run: Run) -> None:
    recs = small_run[1]
    for name in ("index.html", "report.md", "data.json", "assets/report.css", "assets/report.js"):
        assert (built_report / name).is_file(), name
    assert len(list((built_report / "episodes").glob("*.html"))) == len(recs)
    assert sorted(p.stem for p in (built_report / "tasks").glob("*.html")) == ["inc-001", "inc-002", "inc-003"]
    data = orjson.loads((built_report / "data.json").read_bytes())
    assert [r["agent"] for r in data["leaderboard"]] == data["plots"]["overall_marks"]["agents"]


def test_pages_are_offline(built_report: Path) -> None:
    for page in sorted(built_report.rglob("*.html")):
        text = page.read_text()
        assert not re.search(r"""(src|href)=["']?(https?:)?//""", text), page.name
        for ref in re.findall(r"""(?:src|href)="([^"#]+)""", text):
            assert (page.parent / ref).exists(), f"{page.name} links to missing {ref}"


def test_markdown_report(built_report: Path, small_run: Run) -> None:
    md = (built_report / "report.md").read_text()
    for heading in ("## Leaderboard", "## Marks by difficulty", "## Marks by fault layer", "## Failure categories",
                    "## Run manifest"):
        assert heading in md
    board = md.split("## Leaderboard")[1].split("##")[0]
    rows = [line for line in board.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert [r.split("|")[1].strip() for r in rows] == [f"**{LLM}**", "**random**", "*oracle (upper bound)*"]
    assert "100.0" in rows[-1]
    fail = md.split("## Failure categories")[1].split("##")[0]
    llm_row = next(line for line in fail.splitlines() if line.startswith(f"| {LLM} "))
    assert llm_row.split("|")[2].strip() == "3"  # episodes, including the provider error
    assert "provider error" in fail and "premature resolution" in fail and "budget exhausted" in fail
    for p in (built_report / "plots").glob("*.png"):
        assert f"(plots/{p.name})" in md
    assert "srezero_version" in md and "| inc-002 |" in md


def test_replay_matches_the_record(small_run: Run) -> None:
    """Re-simulating (task, seed, actions) rebuilds the recorded episode: same steps, same marks."""
    for rec in small_run[1]:
        if rec["status"] != "ok" or rec["agent"] != "random":
            continue
        rep = resimulate(rec)
        assert rep is not None and rep.diverged == "", rep and rep.diverged
        assert rep.marks == rec["result"]["marks"]
        assert [a["step"] for a in rep.actions] == [t["step"] for t in rec["trajectory"]]
        assert {(s.entity, s.metric) for s in rep.series} >= {("load_balancer", "error_rate")}
        assert all(len(s.values) == len(rep.times) for s in rep.series)
        assert rep.times[0] < 0 < rep.end_s < rep.times[-1]  # history before the page, verification after


def test_replay_flags_a_record_that_no_longer_matches(small_run: Run) -> None:
    rec = next(r for r in small_run[1] if r["agent"] == "oracle")
    tampered = {**rec, "result": {**rec["result"], "marks": 12.5}}
    assert "12.5" in resimulate(tampered).diverged


def test_episode_page_shows_what_happened(built_report: Path, small_run: Run) -> None:
    failed = next(r for r in small_run[1] if r["agent"] == "random" and r["status"] == "ok"
                  and not r["result"]["mitigated"])
    page = _page(built_report, failed)
    assert page.count('class="step ') == len(failed["trajectory"])
    assert page.count('<svg class="chart"') >= 3
    for t in failed["trajectory"]:
        assert f'href="#step-{t["step"]}"' in page and f'id="step-{t["step"]}"' in page
    for reason in failed["result"]["mitigation"]["reasons"]:
        assert reason.replace("'", "&#x27;") in page
    assert "not mitigated" in page and "Re-simulation differs" not in page
    truth = failed["result"]["ground_truth"][0]
    assert truth["entity"] in page and truth["fault"] in page
    ok = next(r for r in small_run[1] if r["agent"] == "oracle")
    page = _page(built_report, ok)
    for claim in ok["result"]["diagnosis"]["claims"]:
        assert claim["entity"] in page
    assert "upper bound" in page and "every fault neutralised" in page


def test_provider_error_page_and_report_are_deterministic(built_report: Path, small_run: Run, tmp_path: Path) -> None:
    err = next(r for r in small_run[1] if r["status"] == "provider_error")
    assert "not scored: provider_error" in _page(built_report, err)
    build_report(small_run[0], tmp_path)
    for p in sorted(built_report.rglob("*")):
        if p.is_file():
            assert p.read_bytes() == (tmp_path / p.relative_to(built_report)).read_bytes(), p.name


def test_cli(small_run: Run, tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(cli, ["report", str(small_run[0]), "--out", str(tmp_path / "r"), "--no-replay"])
    assert res.exit_code == 0, res.output
    assert "index.html" in res.output and (tmp_path / "r" / "index.html").is_file()
    assert "--no-replay" in next((tmp_path / "r" / "episodes").glob("random--*.html")).read_text()
    res = runner.invoke(cli, ["report", str(small_run[0]), "--plots-only", "--out", str(tmp_path / "p")])
    assert res.exit_code == 0 and len(list((tmp_path / "p").glob("*.svg"))) == 9
    (tmp_path / "empty").mkdir()
    res = runner.invoke(cli, ["report", str(tmp_path / "empty")])
    assert res.exit_code == 1 and "no episode records found" in res.output and "Traceback" not in res.output
    for inside in (small_run[0], small_run[0] / "report"):  # a review wrote index.html into its run folder
        res = runner.invoke(cli, ["report", str(small_run[0]), "--out", str(inside), "--no-replay"])
        assert res.exit_code == 2 and "is inside the run directory" in res.output, res.output
    assert not (small_run[0] / "index.html").exists() and not (small_run[0] / "report").exists()


def test_too_few_tasks_for_an_interval_is_said_in_the_report(built_report: Path, small_run: Run) -> None:
    """The sweep's table warned that intervals over fewer than 5 tasks are not 95% intervals; the report
    showed the same intervals without a word."""
    tasks = len({r["task_id"] for r in small_run[1]})
    assert tasks < 5
    note = f"over {tasks} task(s) they are not 95% intervals"
    assert note in (built_report / "report.md").read_text() and note in (built_report / "index.html").read_text()


def test_breakdown_tables_show_intervals_and_sizes(built_report: Path) -> None:
    """Difficulty, layer and split tables give each mean its interval and size, in both reports; an interval
    over 2-4 tasks is starred, one task has none."""
    md = (built_report / "report.md").read_text()
    page = (built_report / "index.html").read_text()
    split = md.split("## Marks by split")[1].split("##")[0]
    dev = next(line for line in split.splitlines() if line.startswith("| dev |"))
    assert "*] (3 tasks, 6 ep.)" in dev  # the small run: three dev tasks at two seeds
    easy = next(line for line in md.split("## Marks by difficulty")[1].splitlines() if line.startswith("| easy |"))
    assert "[n/a] (1 task, 2 ep.)" in easy
    assert 'id="breakdowns"' in page and "(3 t, 6 ep.)" in page and "marked *" in page


def test_loader_sorts_episodes(small_run: Run) -> None:
    eps = load_run(small_run[0]).episodes
    assert [(e.agent, e.task_id, e.seed) for e in eps] == sorted((e.agent, e.task_id, e.seed) for e in eps)


@pytest.mark.parametrize("agent", ["oracle", "random"])
def test_task_page_links_every_episode(built_report: Path, small_run: Run, agent: str) -> None:
    page = (built_report / "tasks" / "inc-001.html").read_text()
    for rec in small_run[1]:
        if rec["task_id"] == "inc-001" and rec["agent"] == agent:
            assert f"../episodes/{agent}--inc-001--s{rec['seed']:04d}.html" in page


def test_agents_that_ran_different_cells_are_flagged_and_can_be_compared_on_common_ones(
        small_run: Run, built_report: Path, tmp_path: Path) -> None:
    """The LLM agent ran 3 of the 6 (task, seed) cells: ranking it against random's 6 is not a comparison.
    The report says so; --common keeps the shared cells; --agents/--tasks/--split select."""
    from srezero.report import data as D
    from srezero.report.load import RunDirError, select

    run = load_run(small_run[0])
    cov = D.coverage(run.episodes, run.manifest)
    assert cov["agents"][LLM]["cells"] == 3 and cov["agents"]["random"]["cells"] == 6 and cov["common_cells"] == 3
    assert len(cov["warnings"]) == 1 and f"{LLM} 3" in cov["warnings"][0] and "--common" in cov["warnings"][0]
    assert "Not comparable as it stands" in (built_report / "report.md").read_text()
    assert "Not comparable as it stands" in (built_report / "index.html").read_text()
    common = select(run, common=True)
    assert {(e.task_id, e.seed) for e in common.episodes if e.agent == "random"} == \
        {(e.task_id, e.seed) for e in run.episodes if e.agent == LLM}
    assert D.coverage(common.episodes, common.manifest)["warnings"] == []
    only = select(run, agents=["random"], tasks=["inc-001"])
    assert {(e.agent, e.task_id) for e in only.episodes} == {("random", "inc-001")}
    with pytest.raises(RunDirError, match="no records for agent"):
        select(run, agents=["nobody"])
    res = CliRunner().invoke(cli, ["report", str(small_run[0]), "--out", str(tmp_path / "c"), "--no-replay", "--common",
                                   "--agents", f"random,{LLM}"])
    assert res.exit_code == 0, res.output
    assert "Not comparable" not in (tmp_path / "c" / "report.md").read_text()
    assert orjson.loads((tmp_path / "c" / "data.json").read_bytes())["coverage"]["common_cells"] == 3


def test_a_run_extended_by_another_build_is_flagged(small_run: Run, tmp_path: Path) -> None:
    """`sweep --allow-mixed` records the builds in the manifest; the report showed their episodes side by side
    without a word."""
    import shutil

    from srezero.report import data as D

    shutil.copytree(small_run[0], tmp_path / "run")
    manifest = orjson.loads((tmp_path / "run" / "manifest.json").read_bytes())
    builds = [{"srezero_version": "0", "git_revision": None, "engine": e} for e in ("sha256:a", "sha256:b")]
    (tmp_path / "run" / "manifest.json").write_bytes(orjson.dumps({**manifest, "builds": builds}))
    run = load_run(tmp_path / "run")
    warnings = D.coverage(run.episodes, run.manifest)["warnings"]
    assert any("made by 2 builds of the simulator or scoring" in w and "sha256:a, sha256:b" in w for w in warnings)
    one = {**manifest, "builds": builds[:1] * 2}  # one build that wrote twice: nothing to say
    assert not any("builds" in w for w in D.coverage(run.episodes, one)["warnings"])


def test_the_markdown_names_every_kind_of_unscored_episode(built_report: Path) -> None:
    text = (built_report / "report.md").read_text()
    assert "not scored: provider, agent or environment errors" in text
    assert "provider / agent / environment error = the episode could not be scored" in text


def test_a_record_file_dropped_next_to_episodes_is_named_not_silently_left_out(
        small_run: Run, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    shutil.copytree(small_run[0], tmp_path / "run")
    oracle = next(r for r in small_run[1] if r["agent"] == "oracle")
    (tmp_path / "run" / "mine.json").write_bytes(orjson.dumps({**oracle, "agent": "mine", "seed": 9}))
    (tmp_path / "run" / "notes.json").write_text("{not json")  # not a record: no note, no error
    run = load_run(tmp_path / "run")
    assert "mine" not in run.agents
    err = capsys.readouterr().err
    assert "ignored 1 record file(s) outside episodes/ (mine.json)" in err and "notes.json" not in err


def test_a_run_from_another_version_is_flagged(small_run: Run, tmp_path: Path) -> None:
    """A review reported a manifest of schema 99 without a word."""
    import shutil

    from srezero.report import data as D

    run = tmp_path / "run"
    shutil.copytree(small_run[0], run)
    manifest = orjson.loads((run / "manifest.json").read_bytes())
    assert not [w for w in D.coverage(load_run(run).episodes, manifest)["warnings"] if "schema" in w]
    for change, says in (({"schema": 99}, "has schema 99, and this srezero"), ({"srezero_version": "9.9"},
                                                                               "recorded by srezero 9.9")):
        (run / "manifest.json").write_bytes(orjson.dumps({**manifest, **change}))
        res = CliRunner().invoke(cli, ["report", str(run), "--plots-only", "--out", str(tmp_path / "p")])
        assert res.exit_code == 0 and says in res.output, res.output


def test_a_private_task_is_replayed_from_tasks_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run of a task of one's own: its replay pages need the task file, which --tasks-dir gives (as it
    does for run, play and debrief); without it the page says how to give it."""
    import os

    bundled = Path(__file__).resolve().parents[2] / "tasks" / "inc-001.toml"
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "mine-001.toml").write_text(bundled.read_text().replace('id = "inc-001"', 'id = "mine-001"', 1))
    monkeypatch.delenv("SREZERO_TASKS_PATH", raising=False)
    runner = CliRunner()
    res = runner.invoke(cli, ["run", "--task", str(mine / "mine-001.toml"), "--agent", "oracle", "--seed", "0",
                              "--out", str(tmp_path / "run" / "oracle.json")])
    assert res.exit_code == 0, res.output
    pages = {}
    for name, extra in (("without", []), ("with", ["--tasks-dir", str(mine)])):
        res = runner.invoke(cli, ["report", str(tmp_path / "run"), "--out", str(tmp_path / name), *extra])
        assert res.exit_code == 0, res.output
        pages[name] = next((tmp_path / name / "episodes").glob("*.html")).read_text()
    assert "not available here" in pages["without"] and "--tasks-dir" in pages["without"]
    assert "not available here" not in pages["with"] and "<svg" in pages["with"]
    assert "<svg" not in pages["without"].split("not available here")[1]
    assert "SREZERO_TASKS_PATH" not in os.environ  # the lookup path is the command's, not left behind


def test_the_default_output_folder_is_named_after_the_run_or_the_file(small_run: Run, tmp_path: Path) -> None:
    """`srezero report x.json` wrote x.json-report, a folder named like a file."""
    record = next(small_run[0].rglob("seed-*.json"))
    loose = tmp_path / "runs" / "ada.json"
    loose.parent.mkdir()
    loose.write_bytes(record.read_bytes())
    res = CliRunner().invoke(cli, ["report", str(loose), "--no-replay"])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "runs" / "ada-report" / "index.html").is_file()
    assert not (tmp_path / "runs" / "ada.json-report").exists()
    res = CliRunner().invoke(cli, ["report", str(loose.parent), "--plots-only"])
    assert res.exit_code == 0 and f"to {tmp_path / 'runs-report'}" in res.output, res.output
    # the help says so (compared without spaces: click may wrap the line at the hyphen)
    assert "forarecordfileFILE.json,FILE-reportnexttoit" in "".join(
        CliRunner().invoke(cli, ["report", "--help"]).output.split())


def test_an_output_folder_that_cannot_be_made_is_one_line_before_any_work(small_run: Run, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """`report RUN --out /proc/x` was a FileNotFoundError traceback from mkdir, after reading the run."""
    import srezero.report.load as load

    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    unwritable = [(blocker / "r", f"{blocker} is a file, not a directory")]
    if Path("/proc/self").is_dir():  # Linux: permission bits let root "write" /proc, which takes no new folders
        unwritable.append((Path("/proc/srezero-report"), "cannot write in /proc/srezero-report"))

    def no_work(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the run was read before the output folder was checked")

    monkeypatch.setattr(load, "load_run", no_work)
    for out, why in unwritable:
        res = CliRunner().invoke(cli, ["report", str(small_run[0]), "--out", str(out)])
        assert res.exit_code == 2 and f"cannot write the report to {out}: {why}" in res.output, res.output
        assert "Traceback" not in res.output and not out.exists()
    monkeypatch.undo()
    # the check makes the folder; a run with nothing to report does not leave it behind
    (tmp_path / "no-records").mkdir()
    res = CliRunner().invoke(cli, ["report", str(tmp_path / "no-records"), "--out", str(tmp_path / "empty-out")])
    assert res.exit_code == 1 and "no episode records found" in res.output and not (tmp_path / "empty-out").exists()
    # a failure on the way (a full disk) is one line too
    import srezero.report.build as build

    def full(*args: Any, **kwargs: Any) -> None:
        raise OSError(28, "No space left on device", str(tmp_path / "r" / "index.html"))

    monkeypatch.setattr(build, "build_report", full)
    res = CliRunner().invoke(cli, ["report", str(small_run[0]), "--out", str(tmp_path / "r"), "--no-replay"])
    assert res.exit_code == 1 and res.output.splitlines()[-1] == (
        f"Error: cannot write the report to {tmp_path / 'r'}: No space left on device ({tmp_path / 'r' / 'index.html'})")
    assert "Traceback" not in res.output
