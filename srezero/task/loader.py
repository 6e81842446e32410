"""Find, parse and validate task files. Errors name the file, the field and the problem.

Task directories, in order: the tasks bundled with srezero (``tasks/`` in a checkout, shipped in the
wheel), then every entry on ``SREZERO_TASKS_PATH`` (``os.pathsep``-separated) for private held-out
tasks, then directories passed explicitly (``--tasks-dir``). An entry is a directory of ``*.toml``
files or ``pkg:<python.package>``, the directory of an installed package (so held-out tasks can ship
as a private wheel). A later file with the same id is an error, not a silent override. Ids starting
with ``gen:`` are generated variants, decoded by :func:`srezero.task.generate.variant`.
"""

from __future__ import annotations

import codecs
import contextlib
import functools
import math
import os
import re
import tomllib
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from srezero.errors import did_you_mean, near_misses, toml_literal
from srezero.task.spec import TaskInfo, TaskSpec


class TaskFileError(ValueError):
    """A task file is broken. ``str()`` is ``<file>: <field>: <problem>``, one line per problem."""

    def __init__(self, path: str | Path, problems: list[tuple[str, str]]) -> None:
        self.path = str(path)
        self.problems = problems
        super().__init__("\n".join(f"{self.path}: {field}: {problem}" for field, problem in problems))


class UnknownTaskError(KeyError):
    """No task has this id. A ``KeyError`` (a lookup that missed) whose ``str()`` is the message itself,
    without the quotes ``KeyError`` adds around its key."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def bundled_dir() -> Path:
    here = Path(__file__).resolve().parent.parent
    packaged = here / "_bundled_tasks"
    return packaged if packaged.is_dir() else here.parent / "tasks"


def _resolve_dir(entry: str) -> Path:
    """A task-path entry: a directory, or ``pkg:<package>`` for an installed package's directory."""
    if entry.startswith("pkg:"):
        import importlib.util

        try:
            spec = importlib.util.find_spec(entry[4:])
        except (ImportError, ValueError):
            spec = None
        if spec is None or not spec.submodule_search_locations:
            raise TaskFileError(entry, [("(path)", f"no installed package {entry[4:]!r} (SREZERO_TASKS_PATH / --tasks-dir)")])
        return Path(next(iter(spec.submodule_search_locations)))
    return Path(entry)


def task_dirs(extra: tuple[str, ...] = ()) -> list[Path]:
    """Where tasks are looked up, in order: bundled, ``SREZERO_TASKS_PATH``, then ``extra``."""
    env = re.sub(r"(^|[:;])pkg:", r"\1pkg=", os.environ.get("SREZERO_TASKS_PATH", ""))  # pkg:x survives the split
    entries = [p.replace("pkg=", "pkg:", 1) for p in env.split(os.pathsep) if p] + list(extra)
    return [bundled_dir()] + [_resolve_dir(e) for e in entries]


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
        return parse_data(data, path)
    except tomllib.TOMLDecodeError as exc:
        raise TaskFileError(path, [("(syntax)", f"not valid TOML: {exc}")]) from None
    except RecursionError:  # tomllib and validation both recurse per level of nesting
        raise TaskFileError(path, [("(syntax)", "arrays or tables nested too deeply to read (thousands of "
                                                "levels); no task field nests more than a few")]) from None


#: Field names people reach for, and the one the format uses.
_ALIASES = {"onset": "at", "start": "at", "delay": "at", "start_s": "at", "silent": "visible", "name": "primitive",
            "fault": "primitive", "type": "primitive", "level": "difficulty", "max_steps": "steps"}
#: What to write instead, for the type errors a hand-written file most often has.
_TYPE_HINTS = {
    "bool_type": "write true or false, without quotes",
    "int_type": "write a whole number, without quotes",
    "float_type": "write a number, without quotes",
    "string_type": "write text in quotes",
}


#: What an inline table looks like, for a field given a plain value (``params = 0.2``).
_TABLE_EXAMPLES = {"params": "params = { loss = 0.15 }", "extra": "extra = { false_alarm_blip = 1 }",
                   "distractors": "distractors = { benign_deploy = 1 }"}


def _fields_at(loc: tuple[Any, ...]) -> list[str]:
    """The field names a TaskSpec accepts at ``loc`` (for "did you mean" hints)."""
    model: Any = TaskSpec
    for part in loc:
        if isinstance(part, int):
            continue
        field = getattr(model, "model_fields", {}).get(part)
        if field is None:
            return []
        ann = field.annotation
        for cand in (ann, *typing.get_args(ann)):
            if isinstance(cand, type) and hasattr(cand, "model_fields"):
                model = cand
                break
        else:
            return []
    return list(getattr(model, "model_fields", {}))


def parse_data(data: dict, path: str | Path = "<data>") -> TaskSpec:
    try:
        return TaskSpec.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors(include_url=False):
            loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
            text = err["msg"].removeprefix("Value error, ")
            if text.startswith("@"):  # validators name the field below their model: "@params.value: problem"
                for part in text[1:].split("\n@"):
                    rel, _, msg = part.partition(": ")
                    sub = tuple(int(x) if x.isdigit() else x for x in re.split(r"[.\[\]]+", rel) if x)
                    problems.append((_field(loc + sub), msg))
                continue
            msg = text
            given = err.get("input")
            if isinstance(given, float) and not math.isfinite(given):  # nan fails every range check: say so
                msg = f"must be a finite number, not {toml_literal(given)}"
            elif err["type"] in ("model_type", "model_attributes_type") and loc[:1] == ("faults",):
                msg = ("each fault is a table: write it under its own [[faults]] header, e.g. "
                       '[[faults]] then primitive = "bad_config" on the next line')
            elif err["type"] in ("model_type", "model_attributes_type"):
                msg = (f"must be a table: write it under its own [{_field(loc)}] header, with one field per line "
                       f"(got {toml_literal(given)})")
            elif err["type"] == "extra_forbidden":
                name, known = str(loc[-1]), _fields_at(loc[:-1])
                close = near_misses(name, known)
                close = close or [a for a in (_ALIASES.get(name),) if a in known]
                msg = (f"unknown field; did you mean {' or '.join(close)}? (see docs/writing-tasks.md)" if close
                       else "unknown field (check the spelling; see docs/writing-tasks.md)")
            elif err["type"] in _TYPE_HINTS:
                msg = f"{text} ({_TYPE_HINTS[err['type']]}; got {toml_literal(given)})"
            elif err["type"] == "missing":
                msg = "required field is missing"
            elif err["type"] == "dict_type":
                example = _TABLE_EXAMPLES.get(str(loc[-1]) if loc else "", "name = { key = value }")
                msg = f"must be a table: write an inline table, e.g. {example} (got {toml_literal(given)})"
            elif err["type"] in ("tuple_type", "list_type") and loc[:1] == ("faults",):
                msg = "faults must be an array of tables: write each fault under its own [[faults]] header"
            elif err["type"] in ("tuple_type", "list_type"):
                given = err.get("input")
                msg = f'must be a list, e.g. ["{given}"]' if isinstance(given, str) else 'must be a list, e.g. ["a", "b"]'
            elif err["type"] == "string_pattern_mismatch" and loc == ("id",):
                msg = "ids are 2-64 characters: lowercase letters, digits, '-' and '_', starting with a letter or digit"
            problems.append((_field(loc), msg))
        raise TaskFileError(path, problems) from None


def load_file(path: str | Path) -> TaskSpec:
    """Load and validate one task file (``srezero.load_task``); for a task id use ``srezero.get_task``.

    Raises TaskFileError (a ValueError) naming the file, each field and its problem."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        what = "a directory, not a task file" if p.is_dir() else f"cannot read: {exc.strerror}"
        if not p.suffix and not p.exists():  # an id passed where a path goes
            what += f" (load_task takes a file path; for a task id use srezero.get_task({str(path)!r}))"
        raise TaskFileError(p, [("(file)", what)]) from None
    if data.startswith(codecs.BOM_UTF8):  # what some Windows editors save: TOML allows no byte-order mark
        raise TaskFileError(p, [("(file)", "starts with a UTF-8 byte-order mark, which TOML does not allow; save "
                                           "it as UTF-8 without a BOM")])
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise TaskFileError(p, [("(file)", f"not UTF-8 (byte 0x{data[exc.start]:02x} on line {line}); save it as "
                                           "UTF-8")]) from None
    try:
        spec = parse_text(text, p)
    except TaskFileError as exc:  # report a misnamed file in this round too, not after the rest is fixed
        fields = {f for f, _ in exc.problems}
        raw = None if fields & {"(syntax)", "id"} else tomllib.loads(text).get("id")
        if isinstance(raw, str) and (why := _misnamed(raw, p)):
            raise TaskFileError(p, [*exc.problems, ("id", why)]) from None
        raise
    if why := _misnamed(spec.id, p):
        raise TaskFileError(p, [("id", why)])
    return spec


def _misnamed(task_id: str, p: Path) -> str:
    """Why ``task_id`` cannot live in file ``p`` ("" when it can; a draft ``_name.toml`` may hold any id)."""
    if task_id == p.stem or p.stem.startswith("_"):
        return ""
    return f"id {task_id!r} must match the file name {p.stem!r}"


@contextlib.contextmanager
def more_task_dirs(dirs: tuple[str, ...]) -> Iterator[None]:
    """Look tasks up in ``dirs`` too (after ``SREZERO_TASKS_PATH``) until the block ends: for a command whose
    task lookups are deep in code that takes only a task id (the report's replays and task pages). It
    extends ``SREZERO_TASKS_PATH`` itself, so worker processes started inside the block see it too."""
    if not dirs:
        yield
        return
    before = os.environ.get("SREZERO_TASKS_PATH")
    os.environ["SREZERO_TASKS_PATH"] = os.pathsep.join([*([before] if before else []), *map(str, dirs)])
    try:
        yield
    finally:
        if before is None:
            del os.environ["SREZERO_TASKS_PATH"]
        else:
            os.environ["SREZERO_TASKS_PATH"] = before


def _index(extra: tuple[str, ...]) -> dict[str, Path]:
    return _index_for(extra, os.environ.get("SREZERO_TASKS_PATH", ""))


@functools.cache
def _index_for(extra: tuple[str, ...], env: str) -> dict[str, Path]:
    found: dict[str, Path] = {}
    seen: set[Path] = set()
    for d in task_dirs(extra):
        if not d.is_dir():
            raise TaskFileError(d, [("(path)", "task directory does not exist (SREZERO_TASKS_PATH / --tasks-dir)")])
        if d.resolve() in seen:
            continue  # the same directory named twice is not a duplicate task
        seen.add(d.resolve())
        for p in sorted(d.glob("*.toml")):
            if p.stem.startswith("_"):
                continue  # _name.toml: drafts and templates, never listed
            tid = p.stem
            if tid in found:
                raise TaskFileError(p, [("id", f"duplicate task id {tid!r}, also in {found[tid]}")])
            found[tid] = p
    return found


@functools.cache
def _load_cached(path: str, mtime: float) -> TaskSpec:
    return load_file(path)


def get_task(task_id: str, extra: tuple[str, ...] = ()) -> TaskSpec:
    """Load a task by id, by ``gen:`` variant id, or by path to a .toml file.

    Raises KeyError for an unknown id and TaskFileError (a ValueError) for a broken file.
    """
    if task_id.endswith(".toml"):
        p = Path(task_id)
        if not p.exists():  # a directory is load_file's to name
            raise TaskFileError(p, [("(file)", "no such task file")])
        return _load_cached(str(p.resolve()), p.stat().st_mtime)
    if task_id.startswith("gen:"):
        from srezero.task.generate import variant

        return variant(task_id)
    idx = _index(extra)
    if task_id not in idx:
        # a number written short (inc-01, inc-1) means the zero-padded id, which string likeness ranks low
        padded = re.sub(r"(\d+)$", lambda m: m.group(1).zfill(3), task_id)
        hint = (f"; did you mean {padded}?" if padded != task_id and padded in idx else did_you_mean(task_id, idx, n=3)
                ) or "; `srezero tasks --no-spoilers` lists them"
        raise UnknownTaskError(f"unknown task {task_id!r}{hint} (a task of your own: give the path to its .toml "
                               "file, or its directory with --tasks-dir or on SREZERO_TASKS_PATH)")
    p = idx[task_id]
    return _load_cached(str(p), p.stat().st_mtime)


def task_file(task_id: str, extra: tuple[str, ...] = ()) -> Path | None:
    """The file a task is read from: the path itself, the file an id is indexed under, or None (a ``gen:``
    variant has no file, and neither has an unknown id)."""
    if task_id.endswith(".toml"):
        return Path(task_id)
    return None if task_id.startswith("gen:") else _index(extra).get(task_id)


def load_specs(extra: tuple[str, ...] = (), errors: list[TaskFileError] | None = None) -> list[tuple[TaskSpec, Path]]:
    """Every curated task (bundled, SREZERO_TASKS_PATH, ``extra``) with its file, in id order per directory.

    A broken file raises its TaskFileError, unless ``errors`` is given: then it is appended there and
    the other tasks still load (a listing shows what works and names what does not)."""
    out = []
    for tid, p in _index(extra).items():
        try:
            out.append((get_task(tid, extra), p))
        except TaskFileError as exc:
            if errors is None:
                raise
            errors.append(exc)
    return out


def list_tasks(extra: tuple[str, ...] = ()) -> list[TaskInfo]:
    """Every task (bundled, then ``SREZERO_TASKS_PATH``, then ``extra`` directories) as a :class:`TaskInfo`:
    id, title, difficulty, tags, split, layers, where the root causes sit (``roots``: a service, kernel,
    disk or hardware; none for a false alarm) and the file path. Spoilers, for people choosing tasks;
    agents are never shown it."""
    return [spec.info(str(p)) for spec, p in load_specs(extra)]
