"""Terminal colour that switches itself off where it would hurt (NO_COLOR, pipes, dumb terminals), and
ASCII stand-ins on streams that cannot encode UTF-8 (a crash there would lose the session)."""

from __future__ import annotations

import codecs
import contextlib
import io
import os
import sys
from typing import TextIO

#: How the few non-ASCII characters the play mode prints look on a stream that cannot encode them
#: (a legacy Windows console, PYTHONIOENCODING=ascii); anything else becomes "?".
FALLBACKS = {"─": "-", "·": "|", "…": "...", "→": "->", "←": "<-", "×": "x", "—": "-", "–": "-", "’": "'", "“": '"',
             "”": '"', "└": "`-", "├": "|-", "«": "<<", "»": ">>",
             **dict(zip("▁▂▃▄▅▆▇█", "_.-~=+*#"))}  # sparkline levels
ERRORS = "srezero-play-fallback"
CODES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "blue": "34", "magenta": "35",
         "cyan": "36"}


def want_colour(stream: TextIO | None = None, mode: str = "auto") -> bool:
    """Colour on a terminal unless NO_COLOR is set (https://no-color.org) or TERM is dumb."""
    if mode in ("always", "never"):
        return mode == "always"
    stream = stream or sys.stdout
    if os.environ.get("NO_COLOR", "") != "" or os.environ.get("TERM") == "dumb":
        return False
    return bool(getattr(stream, "isatty", lambda: False)())


class Style:
    """``style.red("x")`` etc.; plain text when disabled. ``prompt=True`` wraps codes for readline."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def paint(self, text: str, *styles: str, prompt: bool = False) -> str:
        if not self.enabled or not styles:
            return text
        start = "\x1b[" + ";".join(CODES[s] for s in styles) + "m"
        end = "\x1b[0m"
        if prompt:  # readline must not count escape codes as printed width
            start, end = f"\001{start}\002", f"\001{end}\002"
        return f"{start}{text}{end}"

    def __getattr__(self, name: str):
        if name in CODES:
            return lambda text, *more, prompt=False: self.paint(text, name, *more, prompt=prompt)
        raise AttributeError(name)


def _fallback(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    bad = exc.object[exc.start:exc.end]
    return "".join(FALLBACKS.get(ch, "?") for ch in bad), exc.end


codecs.register_error(ERRORS, _fallback)


def safe_streams(*streams: object) -> None:
    """Make text streams that cannot encode the play mode's characters print ASCII stand-ins instead
    of raising (a crash mid-session would lose the record). Streams that can, or that are not real
    text files (a test's StringIO), are left alone."""
    for stream in streams:
        if not isinstance(stream, io.TextIOWrapper) or stream.errors not in ("strict", None):
            continue
        try:
            "─·…".encode(stream.encoding or "ascii")
        except (UnicodeEncodeError, LookupError):
            with contextlib.suppress(ValueError, OSError):  # a closed or detached stream
                stream.reconfigure(errors=ERRORS)


def safe_input(stream: object) -> None:
    """Let a text input stream that is not UTF-8 decode bytes it cannot as U+FFFD instead of raising:
    such a line becomes an invalid action, never a crash."""
    if isinstance(stream, io.TextIOWrapper) and stream.errors == "strict" and \
            codecs.lookup(stream.encoding or "ascii").name != "utf-8":
        with contextlib.suppress(ValueError, OSError):
            stream.reconfigure(errors="replace")


def columns(stream: object) -> int | None:
    """The width of the terminal ``stream`` writes to, or None when it is not a terminal: piped output is
    not re-wrapped. The terminal's own size wins over ``$COLUMNS`` (an exported value can be stale, or
    inherited from another terminal); ``$COLUMNS`` serves when the size cannot be read."""
    try:
        if not stream.isatty():  # type: ignore[attr-defined]
            return None
        fd = stream.fileno()  # type: ignore[attr-defined]
    except (AttributeError, ValueError, OSError):  # a closed or fake stream
        return None
    try:
        size = os.get_terminal_size(fd).columns
    except OSError:
        size = 0
    env = os.environ.get("COLUMNS", "")
    return size or (int(env) if env.isdigit() and int(env) > 0 else None)
