"""One sweep at a time per run directory.

Two sweeps into one ``--out`` would plan the same pending episodes, run each twice and race on the
manifest and the summary: the records would survive (each is written whole), the time and any API
spend would not. A sweep holds an exclusive ``flock`` on ``<out>/.sweep.lock`` while it runs; a second
one is refused at once with the first one's process id. The lock dies with its holder, so a killed
sweep never leaves a stale lock behind. Where ``fcntl`` is missing (Windows) there is no lock.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

LOCK = ".sweep.lock"


class RunDirBusy(ValueError):
    """Another sweep is writing to this run directory."""


@contextlib.contextmanager
def locked(out: str | Path) -> Iterator[None]:
    """Hold the run directory's lock for the ``with`` block; RunDirBusy if another process holds it."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    path = os.path.join(out, LOCK)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise RunDirBusy(f"another sweep (process {holder}) is writing to {out}; wait for it to finish, "
                             "or stop it (what it recorded is kept) and rerun, or use another --out") from None
        # the holder before us may have removed the file between our open and our lock: then we hold
        # the lock of a file nobody else can see, so start again with the file that is there now
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)  # under the lock, so a run directory does not keep the file
        os.close(fd)
