"""A class's play records in one folder: the report shows hints taken and words its caveats for players."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from srezero.cli import cli


def _play(folder: Path, player: str, seed: int, lines: list[str]) -> None:
    out = CliRunner().invoke(cli, ["play", "inc-001", "--seed", str(seed), "--player", player, "--hints",
                                   "--record", str(folder / f"{player}.json")], input="\n".join(lines) + "\n")
    assert out.exit_code == 0, out.output


def test_class_report_counts_hints_and_speaks_to_a_teacher(tmp_path: Path) -> None:
    folder = tmp_path / "class"
    _play(folder, "ada", 7, ["hint", "hint", "get_alerts()", "resolve()"])
    _play(folder, "bo", 8, ["get_alerts()", "resolve()"])
    res = CliRunner().invoke(cli, ["report", str(folder), "--out", str(tmp_path / "rep")])
    assert res.exit_code == 0, res.output
    md = (tmp_path / "rep" / "report.md").read_text()
    header = next(line for line in md.splitlines() if line.startswith("| agent | episodes"))
    assert header.endswith("| hints/ep |")
    rows = {line.split("|")[1].strip("* "): line.split("|")[-2].strip() for line in md.splitlines()
            if line.startswith("| **human:")}
    assert rows == {"human:ada": "2.0", "human:bo": "0.0"}
    assert "The players played different (task, seed) episodes" in md and "rerun the sweep" not in md
    html = (tmp_path / "rep" / "index.html").read_text()
    assert "hints/ep" in html
    page = next((tmp_path / "rep" / "episodes").glob("human_ada*.html")).read_text()
    assert "hints taken" in page


def test_a_sweep_report_has_no_hints_column(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert CliRunner().invoke(cli, ["sweep", "--tasks", "inc-001", "--agents", "random,runbook", "--seeds", "1",
                                    "--workers", "1", "--no-progress", "--out", str(run)]).exit_code == 0
    res = CliRunner().invoke(cli, ["report", str(run), "--out", str(tmp_path / "rep")])
    assert res.exit_code == 0, res.output
    assert "hints/ep" not in (tmp_path / "rep" / "report.md").read_text()
