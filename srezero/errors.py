"""Errors in the declarations an extension makes (a fault primitive, a tool), and the near-miss
hints every error message about a mistyped name shares.

A mistake in a declaration is the extension author's, never a task file's: it is raised as
:class:`DeclarationError`, which is not a ``ValueError``, so task validation (pydantic turns
``ValueError`` into a field error of the file it is validating) cannot blame the task that happened to
load the registry first. The CLI prints it as one ``Error:`` line.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Iterable
from typing import Any


class DeclarationError(Exception):
    """A fault primitive or tool declared with a mistake; the message names it, its class and the field."""


def near_misses(word: str, options: Iterable[str], n: int = 2, cutoff: float = 0.6) -> list[str]:
    """The ``options`` a mistyped ``word`` most likely meant, best first (at most ``n``; none when nothing is
    close): those it is the start of, then difflib's. ``cutoff`` is difflib's similarity ratio: higher where
    the options look alike (tool names)."""
    options = list(options)
    # the same word in other case ("INC-001") first, then one cut short ("inc-01", "get_stat"): what it
    # is the start of
    same = [o for o in options if o.lower() == word.lower() and o != word]
    started = sorted(o for o in options if o.startswith(word) and o != word) if len(word) >= 3 else []
    close = difflib.get_close_matches(word, options, n=n, cutoff=cutoff)
    return list(dict.fromkeys(same + started + close))[:n]


def did_you_mean(word: str, options: Iterable[str], n: int = 2, cutoff: float = 0.6) -> str:
    """``"; did you mean a or b?"`` for the near misses of ``word``, else ``""`` (callers add where to look)."""
    close = near_misses(word, options, n, cutoff)
    if not close:
        return ""
    return f"; did you mean {close[0] if len(close) == 1 else ', '.join(close[:-1]) + ' or ' + close[-1]}?"


def toml_literal(value: Any) -> str:
    """A value as the task file spells it (``true``, ``"2"``, ``nan``), not as Python does (``True``, ``'2'``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if value != value else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml_literal(v)}" for k, v in value.items()) + " }" if value else "{}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_literal(v) for v in value) + "]"
    return repr(value)


def message(exc: BaseException) -> str:
    """An exception's text for an ``Error:`` line: a ``KeyError``'s own message, without the quotes its
    ``str()`` adds (stripping quote characters instead ate those of a message that starts with a quoted name)."""
    if isinstance(exc, KeyError) and len(exc.args) == 1:
        return str(exc.args[0])
    return str(exc)
