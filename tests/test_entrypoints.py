"""`python -m srezero` and `python -m srezero.cli` run the command line (of this working tree)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("module", ["srezero", "srezero.cli"])
def test_python_dash_m(module: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", module, "faults", "--layer", "hardware"], capture_output=True,
                         text=True, env=env, cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("primitive(s)") and "thermal_throttling" in out.stdout
    usage = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True, env=env,
                           cwd=ROOT, timeout=60).stdout
    assert usage.startswith("Usage: srezero ")
