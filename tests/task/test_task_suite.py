"""The curated suite: valid, covering the system, graded in difficulty, documented, neutral ids."""

from __future__ import annotations

import collections
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

import srezero
from srezero.cli import cli
from srezero.faults.base import load_all
from srezero.task import suite
from srezero.task.loader import bundled_dir, load_specs
from srezero.task.table import markdown
from srezero.task.validate import validate_paths
from srezero.tools.registry import load_tools

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


def test_no_page_has_one_blind_cure() -> None:
    """A page must not give its fix away. An agent that reads nothing but the page and applies the fix
    most tasks with that page share (roll back on a latency page, fail over on errors) would otherwise
    score without diagnosing (docs/scoring.md, "Reading everything, then guessing"). For each alert
    that pages at least three curated tasks, no write that needs no value (anything but set_config)
    is in the oracle's fix of more than 40% of them. It reads the oracle's plan on seed 0, so a write
    that cures a task without being its planned fix (a failover ending a lock session) is not counted."""
    tools = load_tools()
    pages: collections.Counter[str] = collections.Counter()
    cures: dict[str, dict[tuple, set[str]]] = collections.defaultdict(lambda: collections.defaultdict(set))
    for info in srezero.list_tasks():
        page = srezero.get_task(info.id).alert.name
        pages[page] += 1
        env = srezero.make(info.id, 0)
        env.reset(seed=0)
        for action in env.oracle_plan():
            if tools[action["tool"]].kind != "write" or action["tool"] in ("set_config", "wait"):
                continue
            args = tuple(sorted((k, "<node>" if k == "node" else str(v)) for k, v in action["args"].items()))
            cures[page][(action["tool"], args)].add(info.id)
    shares = {(page, write): sorted(ids) for page, by_write in cures.items() for write, ids in by_write.items()
              if pages[page] >= 3 and len(ids) > 0.4 * pages[page]}
    assert shares == {}, "one blind write cures too many tasks of a page: add tasks with that page and another fix"
