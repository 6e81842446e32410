"""The curated suite: valid, covering the system, graded in difficulty, documented, neutral ids."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from srezero.cli import cli
from srezero.faults.base import load_all
from srezero.task import suite
from srezero.task.loader import bundled_dir, load_specs
from srezero.task.table import markdown
from srezero.task.validate import validate_paths

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.fixture(scope="module")
def specs():
    return [s for s, _ in load_specs()]


def test_every_curated_file_validates() -> None:
    results, cross = validate_paths([bundled_dir()])
    assert cross == []
    assert [str(p) for _, _, problems in results for p in problems] == []


def test_tasks_json_lists_the_suite_with_its_coverage(specs) -> None:
    out = CliRunner().invoke(cli, ["tasks", "--json"])
    assert out.exit_code == 0, out.output
    rows = orjson.loads(out.output)
    assert len(rows) >= suite.MINIMUMS["tasks"]
    assert {r["id"] for r in rows} == {s.id for s in specs}
    assert suite.shortfalls(specs) == []


def test_both_published_splits_are_used(specs) -> None:
    splits = {s.split for s in specs}
    assert {"dev", "test"} <= splits
    assert sum(s.split == "test" for s in specs) >= len(specs) // 4


def test_difficulty_gradient(specs) -> None:
    by = {d: [suite.complexity(s) for s in specs if s.difficulty == d] for d in ("easy", "medium", "hard")}
    assert all(by.values()), by
    mean = {d: sum(v) / len(v) for d, v in by.items()}
    assert mean["easy"] < mean["medium"] < mean["hard"], mean


def test_every_task_explains_itself(specs) -> None:
    assert [(s.id, suite.curated_problems(s)) for s in specs if suite.curated_problems(s)] == []


def test_ids_are_neutral(specs) -> None:
    """Ids never name a fault, a layer or a symptom (DESIGN principle 2)."""
    words = set(load_all()) | {"disk", "leak", "oom", "retry", "crash", "config", "cache", "db", "queue", "lb", "dns"}
    for s in specs:
        assert all(w not in s.id for w in words), s.id
        assert s.id.startswith("inc-"), s.id


def test_docs_task_table_is_current(specs) -> None:
    assert (ROOT / "docs" / "tasks.md").read_text() == markdown(specs), \
        "regenerate with: srezero tasks --markdown > docs/tasks.md"
