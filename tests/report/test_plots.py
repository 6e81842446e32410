"""Plots are byte-identical on rerun (in another process too), carry no stamps, and plots/ is current."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from srezero.report.build import write_plots
from srezero.report.load import load_run
from srezero.report.plots import PLOTS

ROOT = Path(__file__).resolve().parents[2]
Run = tuple[Path, list[dict[str, Any]]]


def _files(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())}


def test_two_renders_are_byte_identical_across_processes(small_run: Run, tmp_path: Path) -> None:
    first = write_plots(load_run(small_run[0]), tmp_path / "a")
    assert sorted(p.name for p in first) == sorted(f"{p.name}.{ext}" for p in PLOTS for ext in ("png", "svg"))
    env = {**os.environ, "PYTHONHASHSEED": "12345", "MPLBACKEND": "pdf"}
    code = ("import sys; from srezero.report.build import write_plots; from srezero.report.load import load_run; "
            "write_plots(load_run(sys.argv[1]), __import__('pathlib').Path(sys.argv[2]))")
    subprocess.run([sys.executable, "-c", code, str(small_run[0]), str(tmp_path / "b")], check=True, env=env)
    a, b = _files(tmp_path / "a"), _files(tmp_path / "b")
    assert a.keys() == b.keys()
    assert [k for k in a if a[k] != b[k]] == []


def test_plot_files_carry_no_date_or_software_stamp(built_report: Path) -> None:
    for p in sorted((built_report / "plots").iterdir()):
        blob = p.read_bytes()
        assert b"Software" not in blob and b"matplotlib.org" not in blob and b"<dc:date>" not in blob, p.name
        if p.suffix == ".png":
            assert blob[:8] == b"\x89PNG\r\n\x1a\n" and b"tEXt" not in blob, p.name


def test_matplotlib_is_not_imported_by_the_cli_or_the_report_tables() -> None:
    code = ("import sys, srezero, srezero.cli, srezero.report.load, srezero.report.data, srezero.report.html; "
            "sys.exit('matplotlib' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_reference_run_reproduces_plots_byte_for_byte(tmp_path: Path) -> None:
    """plots/ holds the plots of the committed reference run in records/ (docs/report.md says how)."""
    records, plots = ROOT / "records", ROOT / "plots"
    if not (records / "episodes").is_dir() or not any(plots.glob("*.png")):
        pytest.skip("records/ or plots/ is empty: no committed reference run yet")
    write_plots(load_run(records), tmp_path)
    committed = {p.name: p.read_bytes() for p in sorted(plots.iterdir()) if p.suffix in (".png", ".svg")}
    fresh = _files(tmp_path)
    assert sorted(committed) == sorted(fresh), "regenerate with: srezero report records --plots-only --out plots"
    stale = [k for k in fresh if fresh[k] != committed[k]]
    assert stale == [], f"stale plots {stale}; regenerate with: srezero report records --plots-only --out plots"


def test_plots_use_the_dejavu_sans_shipped_with_matplotlib() -> None:
    """A system copy of DejaVu Sans (another version) must not be picked, or bytes would differ by machine."""
    import matplotlib
    from matplotlib import font_manager

    from srezero.report.plots import RC

    with matplotlib.rc_context():
        matplotlib.rcdefaults()
        matplotlib.rcParams.update(RC)
        path = Path(font_manager.findfont(font_manager.FontProperties(family=[RC["font.family"]])))
    assert path.name == "DejaVuSans.ttf"
    assert Path(matplotlib.get_data_path()) in path.parents
