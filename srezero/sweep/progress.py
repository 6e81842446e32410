"""A dependency-free progress bar on stderr: episodes done, rate and ETA.

The only wall-clock reader of a sweep; what it measures never reaches a record. On a terminal it
redraws one line at most ten times a second; elsewhere (CI logs) it prints a line every ten percent.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


def _clock(seconds: float) -> str:
    s = int(seconds + 0.5)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


class Progress:
    def __init__(self, total: int, initial: int = 0, enabled: bool | None = None, stream: TextIO | None = None,
                 width: int = 24) -> None:
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.tty = self.stream.isatty()
        self.total, self.initial, self.done = total, initial, initial
        self.width = width
        self.t0 = time.monotonic()
        self.last_draw = 0.0
        self.last_decile = -1
        if self.enabled:
            self._draw(force=True)

    def line(self) -> str:
        """The bar's text: done/total, percent, episodes per second (this run) and the ETA."""
        elapsed = max(1e-9, time.monotonic() - self.t0)
        ran = self.done - self.initial
        rate = ran / elapsed
        frac = self.done / self.total if self.total else 1.0
        fill = int(frac * self.width)
        left = self.total - self.done
        eta = _clock(left / rate) if rate > 0 else "?"
        return (f"sweep [{'#' * fill}{'.' * (self.width - fill)}] {self.done}/{self.total} {frac:4.0%} "
                f"{rate:7.1f} ep/s  ETA {eta}  elapsed {_clock(elapsed)}")

    def update(self, n: int = 1) -> None:
        self.done += n
        if self.enabled:
            self._draw()

    def _draw(self, force: bool = False) -> None:
        now = time.monotonic()
        if self.tty:
            if force or now - self.last_draw >= 0.1 or self.done >= self.total:
                self.stream.write("\r" + self.line())
                self.stream.flush()
                self.last_draw = now
            return
        decile = int(10 * self.done / self.total) if self.total else 10
        if force or decile > self.last_decile:
            self.stream.write(self.line() + "\n")
            self.stream.flush()
            self.last_decile = decile

    def close(self) -> None:
        if self.enabled:
            if self.tty:
                self.stream.write("\r" + self.line() + "\n")
            elif self.last_decile < 10:
                self.stream.write(self.line() + "\n")
            self.stream.flush()
            self.enabled = False  # closed: a second close draws nothing
