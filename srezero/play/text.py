"""Plain-text helpers for the debrief: wrapping to the terminal, cutting long texts, numbers and times."""

from __future__ import annotations

import sys
import textwrap
from typing import Any

from srezero.play.style import columns

#: Paragraphs and long lines are wrapped to this many columns, or to the terminal's width when narrower
#: (but never below MIN_WIDTH).
WIDTH = 100
MIN_WIDTH = 40


def wrap(text: str, indent: int | str = 0, hang: int = 0, width: int = WIDTH) -> list[str]:
    """``text`` wrapped to ``width``: the first line starts with ``indent`` (spaces, or a string such as a
    timeline row's head), the rest with as many spaces plus ``hang``. Words are never broken (a long name
    or call stays whole, so it can be copied)."""
    first = " " * indent if isinstance(indent, int) else indent
    return textwrap.wrap(text, width, initial_indent=first, subsequent_indent=" " * (len(first) + hang),
                         break_long_words=False, break_on_hyphens=False) or [first]


def debrief_width(stream: Any = None) -> int:
    """:data:`WIDTH`, or the terminal's width when ``stream`` (stdout by default) is a narrower terminal."""
    cols = columns(stream if stream is not None else sys.stdout)
    return max(MIN_WIDTH, min(WIDTH, cols)) if cols else WIDTH


def shorten(text: str, limit: int, long_word: int = 0) -> str:
    """``text`` on one line, cut to ``limit`` characters at a word's end where one is near, with "..."
    when something was cut, so a shortened error never reads as the whole message. With ``long_word``,
    a longer word (a pasted blob) is cut the same way."""
    words = text.split()
    if long_word:
        words = [w if len(w) <= long_word else w[: long_word - 3] + "..." for w in words]
    text = " ".join(words)
    if len(text) <= limit:
        return text
    cut = text[: limit - 3]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip(" ,;:") + "..."


def fmt(v: float | None) -> str:
    if v is None:
        return "n/a"
    a = abs(v)
    if a == 0:
        return "0"
    if a >= 100 or float(v).is_integer():
        return f"{v:.0f}"
    if a >= 1:
        return f"{v:.1f}"
    return f"{v:.3f}"


def rel(seconds: float) -> str:
    """``T-04:30`` (minutes:seconds from the page), ``T-1:54:05`` beyond an hour."""
    sign = "-" if seconds < 0 else "+"
    s = round(abs(seconds))
    if s >= 3600:
        return f"T{sign}{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"
    return f"T{sign}{s // 60:02d}:{s % 60:02d}"


#: A help table's signature column; a longer signature gets a line of its own.
SIGNATURE_COLUMN = 48
_NARROWEST_DESCRIPTION = 30  # below this a description moves under its signature instead of beside it


def help_row(signature: str, cost: str, description: str, width: int) -> list[str]:
    """One row of a help table for ``width`` columns: ``signature cost description`` on one line when it
    fits; else the description wrapped in a column beside the signature while that column is wide
    enough; else the signature and cost on a line and the description indented under them."""
    head = f"  {signature:{SIGNATURE_COLUMN}} {cost}  "
    if len(head) + len(description) <= width:
        return [head + description]
    if len(signature) <= SIGNATURE_COLUMN and width - len(head) >= _NARROWEST_DESCRIPTION:
        return wrap(description, head, 0, width)
    top = [f"  {signature:{SIGNATURE_COLUMN}} {cost}"]
    if len(top[0]) > width:  # a long signature wraps between its arguments, the cost after its last
        top = wrap(f"{signature}  {cost.strip()}", 2, 4, width)
    return [*top, *wrap(description, 6, 0, width)]
