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


def test_readme_variant_count_is_the_generators() -> None:
    """The README quotes how many generated variants there are; a new primitive or target changes it."""
    from srezero.task.generate import variants

    text = (ROOT / "README.md").read_text()
    quoted = re.search(r"\| generated task variants \(([\d,]+)\) \|", text)
    assert quoted, "README.md: the `srezero generate` row no longer quotes the variant count"
    real = sum(1 for _ in variants())
    assert int(quoted.group(1).replace(",", "")) == real, \
        f"README.md says {quoted.group(1)} generated variants; `srezero generate` counts {real:,}"


def test_model_surface_names_what_a_read_tool_needs() -> None:
    """Disk fields, node.up and MOUNTS are in extending.md's model surface table, and exist in the code."""
    from srezero.sim.components import Disk, Node
    from srezero.telemetry.node import MOUNTS, unreachable

    guide = (ROOT / "docs" / "extending.md").read_text()
    table = guide[guide.index("### Model surface for fault authors"):guide.index("### How the detail is judged")]
    for attr in ("capacity_gb", "device", "used_frac", "used_gb"):
        assert hasattr(Disk, attr) and f"`.{attr}`" in table, attr
    assert "up" in Node.__slots__ and "| `node.up` |" in table
    assert MOUNTS and "`MOUNTS`" in table and unreachable.__name__ in table
    assert "stable_int(w.spec.id, w.seed," in table  # keyed like every stream (srezero/sim/rng.py)


def test_the_tool_guide_examples_work_as_written() -> None:
    """Both tools in extending.md's "Add a tool", run as printed: each answers, and the write changes the world."""
    import srezero
    from srezero.tools.registry import TOOLS, load_tools

    section = (ROOT / "docs" / "extending.md").read_text().split("## Add a tool")[1].split("\n## ")[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 2
    load_tools()
    module: dict[str, Any] = {"__name__": "srezero.tools.my_tools"}
    try:
        for block in blocks:
            exec(compile(block, "docs/extending.md", "exec"), module)
        env = srezero.make("inc-001", 0)
        env.reset()
        node = env.world.topo.nodes[0].name
        obs, *_ = env.step(f'node_uptime(node="{node}")')
        assert obs.ok and re.search(r"up \d+ days, \d+ pods, load average: \d+\.\d\d \(\d+ cores\)", obs.text), obs.text
        assert not env.step('node_uptime(node="nope")')[0].ok
        before = env.world.state.cache_ready_since
        obs, *_ = env.step("flush_cache(fraction=0.5)")
        assert obs.ok and env.world.state.cache_ready_since > before, obs.text
        assert "flushed 50% of keys" in env.step('get_changes(service="cache")')[0].text
    finally:
        TOOLS.pop("flush_cache", None)
        TOOLS.pop("node_uptime", None)
