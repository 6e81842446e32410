"""Write a TaskSpec back out as a task file (TOML), e.g. for ``srezero generate --out``.

The standard library reads TOML but does not write it; task files use only strings, numbers,
booleans, arrays, tables and arrays of tables, so this small writer covers them. Only fields that
differ from their defaults are written, which keeps generated files as short as hand-written ones.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from srezero.task.spec import TaskSpec

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(k: str) -> str:
    return k if _BARE.match(k) else _value(k)


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str):
        return orjson.dumps(v).decode()  # a JSON string is a valid TOML basic string
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + " }" if v else "{}"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def _is_table_list(v: Any) -> bool:
    return isinstance(v, list | tuple) and bool(v) and all(isinstance(x, dict) for x in v)


def _emit(data: dict[str, Any], prefix: str, out: list[str]) -> None:
    for k, v in data.items():
        if not isinstance(v, dict) and not _is_table_list(v):
            out.append(f"{_key(k)} = {_value(v)}")
    for k, v in data.items():
        name = f"{prefix}{_key(k)}"
        if isinstance(v, dict):
            out.append(f"\n[{name}]")
            _emit(v, f"{name}.", out)
        elif _is_table_list(v):
            for item in v:
                out.append(f"\n[[{name}]]")
                for ik, iv in item.items():  # nested values inside an array of tables stay inline
                    out.append(f"{_key(ik)} = {_value(iv)}")


def to_toml(spec: TaskSpec, header: str = "") -> str:
    """The task file text for ``spec`` (round-trips through :func:`srezero.task.loader.parse_text`)."""
    data = spec.model_dump(mode="json", exclude_defaults=True)
    for required in ("id", "title", "description", "difficulty"):
        data.setdefault(required, getattr(spec, required))
    order = ["id", "title", "description", "difficulty", "rationale", "tags", "split", "hints"]
    data = {k: data[k] for k in order if k in data} | {k: v for k, v in data.items() if k not in order}
    lines = [f"# {line}" for line in header.splitlines()]
    _emit(data, "", lines)
    return "\n".join(lines).strip() + "\n"
