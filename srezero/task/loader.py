"""Find, parse and validate task files. Errors name the file, the field and the problem.

Task directories, in order: the tasks bundled with srezero (``tasks/`` in a checkout, shipped in the
wheel), then every directory on ``SREZERO_TASKS_PATH`` (``os.pathsep``-separated) for private
held-out tasks, then directories passed explicitly. A later file with the same id is an error, not
a silent override.
"""

from __future__ import annotations

import functools
import os
import tomllib
from pathlib import Path

from pydantic import ValidationError

from srezero.task.spec import TaskInfo, TaskSpec


class TaskFileError(ValueError):
    """A task file is broken. ``str()`` is ``<file>: <field>: <problem>``, one line per problem."""

    def __init__(self, path: str | Path, problems: list[tuple[str, str]]) -> None:
        self.path = str(path)
        self.problems = problems
        super().__init__("\n".join(f"{self.path}: {field}: {problem}" for field, problem in problems))


def bundled_dir() -> Path:
    here = Path(__file__).resolve().parent.parent
    packaged = here / "_bundled_tasks"
    return packaged if packaged.is_dir() else here.parent / "tasks"


def task_dirs(extra: tuple[str, ...] = ()) -> list[Path]:
    dirs = [bundled_dir()]
    env = os.environ.get("SREZERO_TASKS_PATH", "")
    dirs += [Path(p) for p in env.split(os.pathsep) if p]
    dirs += [Path(p) for p in extra]
    return dirs


def _field(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(file)"


def parse_text(text: str, path: str | Path = "<string>") -> TaskSpec:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TaskFileError(path, [("(syntax)", f"not valid TOML: {exc}")]) from None
    return parse_data(data, path)


def parse_data(data: dict, path: str | Path = "<data>") -> TaskSpec:
    try:
        return TaskSpec.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors(include_url=False):
            loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
            msg = err["msg"].removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                msg = "unknown field (check the spelling; see docs/writing-tasks.md)"
            elif err["type"] == "missing":
                msg = "required field is missing"
            problems.append((_field(loc), msg))
        raise TaskFileError(path, problems) from None


def load_file(path: str | Path) -> TaskSpec:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise TaskFileError(p, [("(file)", f"cannot read: {exc.strerror}")]) from None
    spec = parse_text(text, p)
    if spec.id != p.stem and not p.stem.startswith("_"):
        raise TaskFileError(p, [("id", f"id {spec.id!r} must match the file name {p.stem!r}")])
    return spec


@functools.cache
def _index(extra: tuple[str, ...]) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for d in task_dirs(extra):
        if not d.is_dir():
            continue
        for p in sorted(d.glob("*.toml")):
            tid = p.stem
            if tid in found:
                raise TaskFileError(p, [("id", f"duplicate task id {tid!r}, also in {found[tid]}")])
            found[tid] = p
    return found


@functools.cache
def _load_cached(path: str, mtime: float) -> TaskSpec:
    return load_file(path)


def get_task(task_id: str, extra: tuple[str, ...] = ()) -> TaskSpec:
    """Load a task by id (or by path to a .toml file)."""
    if task_id.endswith(".toml"):
        p = Path(task_id)
        return _load_cached(str(p.resolve()), p.stat().st_mtime)
    if task_id.startswith("gen:"):
        from srezero.task.generate import variant

        return variant(task_id)
    idx = _index(extra)
    if task_id not in idx:
        close = sorted(t for t in idx if task_id.split("-")[0] in t)[:5]
        hint = f"; did you mean {', '.join(close)}?" if close else "; run `srezero tasks` to list them"
        raise KeyError(f"unknown task {task_id!r}{hint}")
    p = idx[task_id]
    return _load_cached(str(p), p.stat().st_mtime)


def list_tasks(extra: tuple[str, ...] = ()) -> list[TaskInfo]:
    out = []
    for tid, p in _index(extra).items():
        spec = get_task(tid, extra)
        out.append(TaskInfo(id=spec.id, title=spec.title, difficulty=spec.difficulty, tags=spec.tags,
                            split=spec.split, layers=spec.layers, path=str(p)))
    return out
