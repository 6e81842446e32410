"""Seeded randomness. Every stream derives from (task id, seed, stream name).

Python's ``hash()`` is salted per process, so names are turned into integers with blake2b instead.
A world draws a few hundred scalars while it is built (names, sizes, healthy config, noise times), so
streams are Python's Mersenne Twister behind the small numpy-style API the simulator uses: a scalar
draw costs a fraction of a microsecond, where a numpy ``Generator`` call costs one or two.
"""

from __future__ import annotations

import hashlib
import random

import numpy as np


def stable_int(*parts: object) -> int:
    """A process-independent 64-bit integer for a tuple of printable parts."""
    digest = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


class Stream(random.Random):
    """A seeded stream with the numpy ``Generator`` methods the simulator uses, for scalars.

    ``integers(low, high)`` draws from ``[low, high)``; ``uniform(low, high)`` and ``random()`` are
    Python's; ``normal(loc, scale, size)`` returns a numpy array drawn by a PCG64 seeded from this
    stream (bulk draws stay vectorised).
    """

    def integers(self, low: int, high: int | None = None) -> int:
        if high is None:
            low, high = 0, low
        n = high - low
        if n <= 0:
            raise ValueError(f"integers: high ({high}) must be above low ({low})")
        # random.Random._randbelow_with_getrandbits, inlined (a world draws a few hundred of these):
        # the same getrandbits calls, so the same values
        k = n.bit_length()
        r = self.getrandbits(k)
        while r >= n:
            r = self.getrandbits(k)
        return low + r

    def permutation(self, n: int) -> list[int]:
        order = list(range(n))
        self.shuffle(order)
        return order

    def normal(self, loc: float, scale: float, size: int) -> np.ndarray:
        bulk = np.random.Generator(np.random.PCG64(self.getrandbits(128)))
        return bulk.normal(loc, scale, size=size)


def stream(task_id: str, seed: int, name: str) -> Stream:
    """An independent generator for one purpose (topology, traffic, noise, logs...)."""
    return Stream(stable_int(task_id, seed, name))


_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


_ALPHABET_N = float(len(_ALPHABET))


def suffix(rng: Stream, length: int = 5) -> str:
    """A Kubernetes-style random name suffix."""
    # rng.choices(_ALPHABET, k=length), inlined: the same draws (int() is floor() for these positives)
    rand = rng.random
    return "".join([_ALPHABET[int(rand() * _ALPHABET_N)] for _ in range(length)])
