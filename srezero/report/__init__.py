"""Reports of a run: plots, a Markdown report and a static offline HTML report (``srezero report``).

Modules: ``load`` (the one reader of the record layout -> flat ``Ep`` rows), ``data`` (the numbers
of every table and plot), ``plots`` (matplotlib, imported lazily), ``markdown``, ``html`` and
``episode_page`` (pages), ``replay`` (re-simulation and inline SVG charts), ``build`` (writes the
folder). See docs/report.md.
"""

from __future__ import annotations

from typing import Any


def build_report(run_dir: Any, out_dir: Any, **kwargs: Any) -> Any:
    """Write the report of ``run_dir`` into ``out_dir`` (see :func:`srezero.report.build.build_report`)."""
    from srezero.report.build import build_report as build

    return build(run_dir, out_dir, **kwargs)
