"""`srezero tasks`, `srezero task show|validate|schema`, and private task directories."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

import srezero
from srezero.cli import cli

PRIVATE = """
id = "{id}"
title = "Held-out incident the agents must not see"
description = "A private task used by the split tests."
difficulty = "medium"
rationale = "Private copy of a simple config fault, only used to test the private-task mechanism."
split = "private"
hints = ["one", "two"]

[[faults]]
primitive = "bad_config"
target = "load_balancer"
params = {{ key = "health_check_path", value = "/status" }}
at = 60
"""


def _invoke(*args: str, env: dict | None = None, input: str | None = None):
    return CliRunner().invoke(cli, list(args), env=env, input=input)


@pytest.fixture()
def private_dir(tmp_path: Path) -> Path:
    (tmp_path / "held-out-1.toml").write_text(PRIVATE.format(id="held-out-1"))
    return tmp_path


def test_filters() -> None:
    rows = orjson.loads(_invoke("tasks", "--json").output)
    for flag, key, value in (("--split", "split", "test"), ("--difficulty", "difficulty", "hard")):
        sub = orjson.loads(_invoke("tasks", flag, value, "--json").output)
        assert sub and {r[key] for r in sub} == {value}
        assert {r["id"] for r in sub} == {r["id"] for r in rows if r[key] == value}
    sub = orjson.loads(_invoke("tasks", "--tag", "misleading", "--json").output)
    assert sub and all("misleading" in r["tags"] for r in sub)
    sub = orjson.loads(_invoke("tasks", "--layer", "disk", "--json").output)
    assert sub and all("disk" in r["layers"] for r in sub)
    sub = orjson.loads(_invoke("tasks", "--root", "database", "--json").output)
    assert sub and all("database" in r["roots"] for r in sub)
    text = _invoke("tasks").output
    assert f"{len(rows)} task(s)" in text


def test_show_hides_spoilers_unless_asked() -> None:
    spec = srezero.get_task("inc-002")
    plain = _invoke("task", "show", "inc-002")
    assert plain.exit_code == 0
    for secret in (spec.title, "latent_sector_errors", "nvme", "failover", spec.hints[0], *spec.tags,
                   *spec.distractors):
        assert secret not in plain.output
    full = _invoke("task", "show", "inc-002", "--spoilers", "--seed", "2")
    assert spec.title in full.output and "latent_sector_errors" in full.output and "failover" in full.output
    js = orjson.loads(_invoke("task", "show", "inc-002", "--json").output)
    assert not {"faults", "title", "hints", "tags", "distractors", "noise"} & set(js)
    js = orjson.loads(_invoke("task", "show", "inc-002", "--json", "--spoilers").output)
    assert js["faults"][0]["primitive"] == "latent_sector_errors" and js["ground_truth_resolved"]


def test_task_list_without_spoilers_names_no_cause() -> None:
    plain = _invoke("tasks", "--no-spoilers")
    rows = orjson.loads(_invoke("tasks", "--no-spoilers", "--json").output)
    assert len(rows) == len(srezero.list_tasks()) and set(rows[0]) == {"id", "split", "difficulty", "steps", "minutes"}
    for info in srezero.list_tasks():
        spec = srezero.get_task(info.id)
        assert spec.id in plain.output and spec.title not in plain.output
    for word in ("application", "database", "disk", "kernel", "hardware", "LAYERS", "TITLE"):
        assert word not in plain.output


def test_task_list_without_spoilers_as_markdown_is_a_handout() -> None:
    """--markdown must not override --no-spoilers: an instructor makes a handout this way."""
    out = _invoke("tasks", "--no-spoilers", "--markdown")
    lines = [line for line in out.output.splitlines() if line.startswith("| inc-")]
    assert out.exit_code == 0 and len(lines) == len(srezero.list_tasks())
    for info in srezero.list_tasks():
        spec = srezero.get_task(info.id)
        assert spec.id in out.output and spec.title not in out.output
    for word in ("application", "database", "misconfiguration", "crash_loop", "layer"):
        assert word not in out.output


def test_show_unknown_task_is_a_clear_error() -> None:
    out = _invoke("task", "show", "inc-0002")
    assert out.exit_code != 0 and "unknown task 'inc-0002'" in out.output and "did you mean" in out.output


def test_private_tasks_via_env_and_flag(private_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert "held-out-1" not in {t.id for t in srezero.list_tasks()}
    out = _invoke("tasks", "--split", "private", "--tasks-dir", str(private_dir), "--json")
    assert [r["id"] for r in orjson.loads(out.output)] == ["held-out-1"]
    assert _invoke("task", "show", "held-out-1", "--tasks-dir", str(private_dir)).exit_code == 0
    out = _invoke("run", "--task", "held-out-1", "--tasks-dir", str(private_dir), "--agent", "oracle", "--quiet")
    assert out.exit_code == 0 and "held-out-1 seed=0 agent=oracle: marks" in out.output, out.output
    out = _invoke("play", "held-out-1", "--tasks-dir", str(private_dir), input="quit\nquit\n")
    assert out.exit_code == 0 and "PAGE" in out.output, out.output
    monkeypatch.setenv("SREZERO_TASKS_PATH", str(private_dir))
    assert "held-out-1" in {t.id for t in srezero.list_tasks()}
    env = srezero.make("held-out-1", 0)  # every entry point that takes an id sees private tasks
    obs, _ = env.reset()
    assert "held-out" not in obs.text
    out = _invoke("run", "--task", "held-out-1", "--agent", "oracle", "--quiet")
    assert out.exit_code == 0 and "marks" in out.output


def test_private_task_colliding_with_a_bundled_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "inc-001.toml").write_text(PRIVATE.format(id="inc-001"))
    monkeypatch.setenv("SREZERO_TASKS_PATH", str(tmp_path))
    out = _invoke("tasks")
    assert out.exit_code != 0 and "duplicate task id 'inc-001'" in out.output


def test_a_broken_file_on_the_task_path_is_named_and_the_others_still_list_and_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "held-out-1.toml").write_text(PRIVATE.format(id="held-out-1"))
    (tmp_path / "broken.toml").write_text('id = "broken"\ntitle = 3\n')
    monkeypatch.setenv("SREZERO_TASKS_PATH", str(tmp_path))
    out = CliRunner().invoke(cli, ["tasks", "--json"])
    assert out.exit_code == 1
    assert "held-out-1" in {t["id"] for t in orjson.loads(out.stdout)}
    assert "broken.toml: title: Input should be a valid string" in out.stderr
    assert "1 task file(s) not loaded" in out.stderr
    assert _invoke("run", "--task", "held-out-1", "--agent", "oracle", "--quiet").exit_code == 0
    assert "broken.toml: title" in _invoke("task", "show", "broken").output


def test_a_task_whose_world_cannot_be_built_is_a_clear_error_in_run_and_play(tmp_path: Path) -> None:
    """A parameter only a built world can check (a config key the service lacks, a value it refuses)
    ended `run` in a traceback; it now names file, field and problem as `task validate` does."""
    for case, params, field, says in (("key", '{ key = "ttl", value = 60 }', "params.key", "has no config key 'ttl'"),
                                      ("value", '{ key = "ttl_s", value = 0 }', "params.value",
                                       "cache accepts ttl_s from 1 to 31536000, not 0")):
        path = tmp_path / f"held-out-{case}.toml"
        path.write_text(PRIVATE.format(id=f"held-out-{case}").replace('"load_balancer"', '"cache"').replace(
            '{ key = "health_check_path", value = "/status" }', params))
        for cmd in (["run", "--task", str(path), "--agent", "oracle"], ["play", str(path)]):
            out = _invoke(*cmd, input="")
            assert out.exit_code == 1 and isinstance(out.exception, SystemExit), out.output
            assert f"{path}: faults[0].{field}: the world cannot be built (seed 0): " in out.output, out.output
            assert says in out.output and "Traceback" not in out.output


def test_missing_private_dir_is_reported(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SREZERO_TASKS_PATH", str(tmp_path / "nowhere"))
    out = _invoke("tasks")
    assert out.exit_code != 0 and "task directory does not exist" in out.output


def test_private_tasks_as_an_installed_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "my_heldout_tasks"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "held-out-2.toml").write_text(PRIVATE.format(id="held-out-2"))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("SREZERO_TASKS_PATH", "pkg:my_heldout_tasks")
    assert srezero.get_task("held-out-2").split == "private"


def test_validate_exit_codes(tmp_path: Path, private_dir: Path) -> None:
    assert _invoke("task", "validate", "tasks").exit_code == 0
    (tmp_path / "broken.toml").write_text("id = 'broken'\n")
    out = _invoke("task", "validate", str(tmp_path / "broken.toml"))
    assert out.exit_code == 1 and f"{tmp_path / 'broken.toml'}: title: required field is missing" in out.output


def test_schema_is_json_schema() -> None:
    out = _invoke("task", "schema")
    schema = orjson.loads(out.output)
    assert schema["type"] == "object" and {"id", "faults", "alert", "slo", "hints"} <= set(schema["properties"])
    assert schema["additionalProperties"] is False


def test_markdown_page_never_lists_private_or_extra_tasks(tmp_path, monkeypatch) -> None:
    """docs/tasks.md is public: a held-out task on SREZERO_TASKS_PATH must not leak into it."""
    src = (Path(__file__).resolve().parents[2] / "tasks" / "inc-001.toml").read_text()
    (tmp_path / "held-out-1.toml").write_text(src.replace('id = "inc-001"', 'id = "held-out-1"')
                                              .replace('split = "dev"', 'split = "private"'))
    monkeypatch.setenv("SREZERO_TASKS_PATH", str(tmp_path))
    listed = CliRunner().invoke(cli, ["tasks"])
    assert "held-out-1" in listed.output  # the private task is usable...
    page = CliRunner().invoke(cli, ["tasks", "--markdown"])
    assert page.exit_code == 0 and "held-out-1" not in page.output  # ...but never published


def test_show_toml_prints_a_task_file_to_start_from_even_without_a_clone(tmp_path: Path) -> None:
    """writing-tasks.md's five-minute version copies a curated task with `task show --toml`: a pip install
    has no tasks/ folder. It prints the shipped file verbatim (comments kept), and only with --spoilers."""
    shipped = next(t for t in srezero.list_tasks() if t.id == "inc-013").path
    refused = _invoke("task", "show", "inc-013", "--toml")
    assert refused.exit_code != 0 and "add --spoilers" in refused.output
    out = _invoke("task", "show", "inc-013", "--toml", "--spoilers")
    assert out.exit_code == 0 and out.output == Path(shipped).read_text()
    # the five-minute recipe: save, rename the id, and it loads as a task of its own
    (tmp_path / "class-01.toml").write_text(out.output.replace('id = "inc-013"', 'id = "class-01"'))
    assert _invoke("task", "validate", str(tmp_path)).exit_code == 0
    gen = "gen:8b0fb5e8226ecf4747e0"  # the id writing-tasks.md shows; a variant has no file, it gets its TOML
    text = _invoke("task", "show", gen, "--toml", "--spoilers").output
    (tmp_path / "g1.toml").write_text(text.replace(f'id = "{gen}"', 'id = "g1"'))
    assert "set id" in text and _invoke("task", "validate", str(tmp_path / "g1.toml")).exit_code == 0


@pytest.mark.parametrize(("args", "text"), [
    (("--layer", "nosuch"), "layer 'nosuch' is unknown (layers: application, database,"),
    (("--root", "databse"), "root 'databse' is unknown; did you mean database?"),
    (("--tag", "misleadng"), "tag 'misleadng' is on no task; did you mean misleading?"),
])
def test_a_misspelt_listing_filter_is_an_error_not_an_empty_list(args: tuple[str, ...], text: str) -> None:
    res = CliRunner().invoke(cli, ["tasks", *args])
    assert res.exit_code == 2 and text in res.output, res.output


def test_listing_filters_that_exist_still_filter() -> None:
    res = CliRunner().invoke(cli, ["tasks", "--root", "none", "--json"])
    controls = {t.id for t in srezero.list_tasks() if "none" in t.roots}
    assert res.exit_code == 0 and {r["id"] for r in orjson.loads(res.output)} == controls == {"inc-011", "inc-044"}


def test_a_task_id_in_other_case_is_suggested() -> None:
    with pytest.raises(KeyError, match=r"did you mean inc-001\?"):
        srezero.make("INC-001")
