"""Same task, seed and actions give byte-identical records, in this process and in another.

Across processes, under other ``PYTHONHASHSEED`` values: two curated tasks with both agents, and
every fault primitive's example (so a primitive added later is covered) with the oracle and the
random agent.
"""

from __future__ import annotations

import os
import subprocess
import sys

import orjson

from tests.conftest import play

SCRIPT = """
import orjson, sys
sys.path.insert(0, {root!r})
from tests.conftest import play
sys.stdout.buffer.write(orjson.dumps(play({task!r}, {seed}, {agent!r}), option=orjson.OPT_SORT_KEYS))
"""


def _dump(task: str, seed: int, agent: str) -> bytes:
    return orjson.dumps(play(task, seed, agent), option=orjson.OPT_SORT_KEYS)


def test_same_inputs_same_bytes(task_ids) -> None:
    for task in task_ids[:3]:
        for agent in ("random", "oracle"):
            assert _dump(task, 4, agent) == _dump(task, 4, agent)


def test_seeds_change_the_surface() -> None:
    assert _dump("inc-002", 1, "oracle") != _dump("inc-002", 2, "oracle")


def test_identical_in_a_subprocess_with_another_hash_seed() -> None:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for task, agent in (("inc-002", "random"), ("inc-003", "oracle")):
        here = _dump(task, 7, agent)
        for hashseed in ("1", "12345"):
            env = {**os.environ, "PYTHONHASHSEED": hashseed}
            out = subprocess.run([sys.executable, "-c", SCRIPT.format(root=root, task=task, seed=7, agent=agent)],
                                 capture_output=True, env=env, check=True).stdout
            assert out == here


#: Every primitive's example as a generated variant (example target and parameters) under noisy noise
#: and every distractor, played by the oracle and the random agent on one seed: sha256 of each
#: record, by primitive and agent.
PRIMITIVES_SCRIPT = """
import hashlib, orjson, sys
sys.path.insert(0, {root!r})
from tests.test_determinism import primitive_digests
sys.stdout.write(orjson.dumps(primitive_digests()).decode())
"""


def primitive_digests(seed: int = 3) -> dict[str, str]:
    import hashlib

    from srezero.faults.base import load_all
    from srezero.task import generate as gen

    out = {}
    for name in sorted(load_all()):
        v = next(v for v in gen.variants((name,)) if v.case == 0 and v.noise == "noisy" and v.distractors == 3)
        for agent in ("oracle", "random"):
            out[f"{name}/{agent}"] = hashlib.sha256(_dump(v.id, seed, agent)).hexdigest()
    return out


def test_every_primitive_is_identical_under_another_hash_seed() -> None:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    here = primitive_digests()
    env = {**os.environ, "PYTHONHASHSEED": "4242"}
    out = subprocess.run([sys.executable, "-c", PRIMITIVES_SCRIPT.format(root=root)], capture_output=True, env=env,
                         check=True).stdout
    there = orjson.loads(out)
    assert sorted(there) == sorted(here)
    assert [key for key in here if there[key] != here[key]] == []
