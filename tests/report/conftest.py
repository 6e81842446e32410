"""Fixtures of the report tests: a small run (see report_helpers) and its report, built once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from report_helpers import write_run


@pytest.fixture(scope="session")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    out = tmp_path_factory.mktemp("run")
    return out, write_run(out)


@pytest.fixture(scope="session")
def built_report(small_run: tuple[Path, list[dict[str, Any]]], tmp_path_factory: pytest.TempPathFactory) -> Path:
    from srezero.report.build import build_report

    out = tmp_path_factory.mktemp("report")
    build_report(small_run[0], out)
    return out
