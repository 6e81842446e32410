"""Docs that are generated stay current, and the README's promises hold."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_tools_reference_is_current() -> None:
    from srezero.commands.tools import reference_markdown

    assert (ROOT / "docs" / "tools.md").read_text() == reference_markdown(), \
        "regenerate with: srezero tools --markdown > docs/tools.md"


def test_readme_starts_with_setup_then_main_job() -> None:
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
    assert blocks[0].strip().splitlines() == ['pip install -e ".[test]"', "python -m pytest"]
    assert blocks[1].strip() == "srezero sweep --seeds 5"
    ci = (ROOT / ".ci" / "run").read_text()
    assert 'pip install --quiet -e ".[test]"' in ci and "python -m pytest" in ci


def test_readme_links_exist() -> None:
    text = (ROOT / "README.md").read_text()
    for link in re.findall(r"\]\(((?:docs|plots)/[^)#]+)\)", text):
        assert (ROOT / link).exists(), link


def test_one_guide_to_adding_a_primitive() -> None:
    """extending.md holds the guide (with the regeneration step); the generated faults.md links to it."""
    from srezero.commands.faults import REGENERATE

    guide = (ROOT / "docs" / "extending.md").read_text()
    section = guide[guide.index("## Add a fault primitive"):guide.index("## Add a noise primitive")]
    for needed in (REGENERATE, "oracle_reads", "oracle_fix", '{"tool":', "w.rng_world", "detail_tokens",
                   "target_arg", "hint"):
        assert needed in section, needed
    assert "](extending.md#add-a-fault-primitive)" in (ROOT / "docs" / "faults.md").read_text()


def test_readme_python_snippet_runs_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    """The quick start's Python block, executed verbatim: every action in it is valid (a guessed
    node name used to make one an error observation)."""
    text = (ROOT / "README.md").read_text()
    snippet = re.search(r"From Python.*?```python\n(.*?)```", text, re.S)
    assert snippet, "README.md: the 'From Python' snippet is gone"
    namespace: dict[str, Any] = {}
    exec(compile(snippet.group(1), "README.md", "exec"), namespace)
    env = namespace["env"]
    assert env.trajectory and [s["error"] for s in env.trajectory if not s["ok"]] == []
    assert "PAGE" in capsys.readouterr().out
