"""Terminal colour that switches itself off where it would hurt (NO_COLOR, pipes, dumb terminals)."""

from __future__ import annotations

import os
import sys
from typing import TextIO

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
