"""The HTML report in real headless Chromium: no console errors, leaderboard and a replay page render.

Errors are detected without a DevTools client: every page installs a hook that writes a
``#js-error`` marker into the DOM on any script error, console.error or failed resource load, and
the dumped DOM must not contain it (a control page with a deliberate error proves the hook works
in this browser). Skipped only when chromium is not installed (``.ci/run`` installs it).
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest
from report_helpers import LLM

from srezero.report.html import page

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0")


def chromium(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [CHROMIUM, *FLAGS, f"--user-data-dir={tmp / 'profile'}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True)


def dom(tmp: Path, url: str) -> str:
    """The DOM after scripts ran; fails on an uncaught error in Chromium's console log."""
    res = chromium(tmp, "--dump-dom", url)
    assert "Uncaught" not in res.stderr, [line for line in res.stderr.splitlines() if "CONSOLE" in line]
    return res.stdout


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def test_error_hook_catches_errors_in_this_browser(tmp_path: Path) -> None:
    (tmp_path / "bad.html").write_text(page("control", '<script>notDefined();</script><img src="missing.png">'))
    res = chromium(tmp_path, "--dump-dom", (tmp_path / "bad.html").as_uri())
    assert 'id="js-error"' in res.stdout and "notDefined" in res.stdout and "missing.png" in res.stdout
    assert "Uncaught ReferenceError" in res.stderr


def test_leaderboard_renders_and_sorts(built_report: Path, tmp_path: Path) -> None:
    url = (built_report / "index.html").as_uri()
    html = dom(tmp_path, url)
    assert 'id="js-error"' not in html and 'data-ready="1"' in html
    assert html.count('<figure id="plot-') == 9
    html = dom(tmp_path, url + "#sort=leaderboard-table.agent")
    assert 'id="js-error"' not in html
    table = html.split('id="leaderboard-table"')[1].split("</table>")[0]
    assert 'data-sorted-by="agent"' in table.split(">")[0] and 'aria-sort="descending"' in table
    body, ub = table.split('<tbody class="upper-bound">')
    order = [a for a in ("random", LLM) if a in body]
    assert sorted(order, key=body.index) == ["random", LLM]  # sorted by the script, z -> a
    assert "oracle" in ub and "oracle" not in body  # the upper bound stays apart
    assert 'id="tasks-table"' in html and "tasks/inc-002.html" in html


def test_replay_page_renders(built_report: Path, small_run: Any, tmp_path: Path) -> None:
    rec = next(r for r in small_run[1] if r["agent"] == "random" and r["task_id"] == "inc-002" and r["status"] == "ok")
    path = built_report / "episodes" / f"random--inc-002--s{rec['seed']:04d}.html"
    html = dom(tmp_path, path.as_uri())
    assert 'id="js-error"' not in html and 'data-ready="1"' in html
    assert html.count('class="chart"') >= 3 and html.count('class="step ') == len(rec["trajectory"])
    assert 'id="score-table"' in html and "Ground truth" in html
    shot = tmp_path / "episode.png"
    chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,2400", path.as_uri())
    assert png_size(shot) == (1280, 2400) and shot.stat().st_size > 50_000


def test_index_screenshot(built_report: Path, tmp_path: Path) -> None:
    shot = tmp_path / "index.png"
    chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,1800", (built_report / "index.html").as_uri())
    assert png_size(shot) == (1280, 1800) and shot.stat().st_size > 50_000
