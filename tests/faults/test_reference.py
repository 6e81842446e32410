"""The fault reference (docs/faults.md) is generated from the registry and kept current; the CLI lists it."""

from __future__ import annotations

from pathlib import Path

import orjson
from click.testing import CliRunner

from srezero.cli import cli
from srezero.commands.faults import REGENERATE, render_markdown
from srezero.faults.base import CATEGORIES, LAYERS, load_all
from srezero.faults.noise import NOISE

DOC = Path(__file__).resolve().parents[2] / "docs" / "faults.md"


def test_docs_faults_md_is_current() -> None:
    fresh = render_markdown([cls for _, cls in sorted(load_all().items())])
    assert DOC.read_text() == fresh, f"docs/faults.md is stale; regenerate with: {REGENERATE}"


def test_reference_covers_every_primitive_and_noise_item() -> None:
    text = render_markdown([cls for _, cls in sorted(load_all().items())])
    for name, cls in load_all().items():
        assert f"### `{name}`" in text
        for s in cls.meta.signals:
            assert f"`{s.tool}`" in text
    for name in NOISE:
        assert f"| `{name}` |" in text
    for cat in CATEGORIES:
        assert f"| `{cat}` |" in text


def test_every_primitive_declares_complete_metadata() -> None:
    for name, cls in load_all().items():
        m = cls.meta
        assert m.layer in LAYERS and m.category in CATEGORIES, name
        assert m.targets and m.description and m.signals and m.remedies and m.wrong_fix_effects, name
        assert m.example, name
        for p in m.params:
            if p.type in (int, float):
                assert p.choices or p.lo is not None, (name, p.name, "a numeric parameter needs a range")


def test_cli_filters_by_layer_and_emits_json() -> None:
    runner = CliRunner()
    out = runner.invoke(cli, ["faults", "--layer", "kernel", "--json"])
    assert out.exit_code == 0, out.output
    rows = orjson.loads(out.output)
    assert rows and {r["layer"] for r in rows} == {"kernel"}
    assert {"fd_exhaustion", "conntrack_full", "clock_skew"} <= {r["name"] for r in rows}
    bad = runner.invoke(cli, ["faults", "--layer", "nonsense"])
    assert bad.exit_code != 0 and "unknown layer" in bad.output
    md = runner.invoke(cli, ["faults", "--markdown", "--layer", "hardware"])
    assert md.exit_code == 0 and "### `node_down`" in md.output and "### `fd_exhaustion`" not in md.output
