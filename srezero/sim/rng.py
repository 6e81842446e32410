"""Seeded randomness. Every stream derives from (task id, seed, stream name) through a SeedSequence.

Python's ``hash()`` is salted per process, so names are turned into integers with blake2b instead.
"""

from __future__ import annotations

import hashlib

import numpy as np


def stable_int(*parts: object) -> int:
    """A process-independent 64-bit integer for a tuple of printable parts."""
    digest = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def stream(task_id: str, seed: int, name: str) -> np.random.Generator:
    """An independent generator for one purpose (topology, traffic, noise, logs...)."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([stable_int(task_id), seed, stable_int(name)])))


_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def suffix(rng: np.random.Generator, length: int = 5) -> str:
    """A Kubernetes-style random name suffix."""
    return "".join([_ALPHABET[i] for i in rng.integers(0, len(_ALPHABET), size=length).tolist()])
