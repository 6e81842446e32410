"""Generated variants: enough of them, opaque decodable ids, same API and scoring, and viable."""

from __future__ import annotations

import contextlib
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

import srezero
from srezero.cli import cli
from srezero.faults.base import load_all
from srezero.task import generate as gen
from srezero.task.loader import get_task
from srezero.task.validate import viable

SAMPLE_SEED = 2026
SAMPLE_SIZE = 200


def test_at_least_3000_variants() -> None:
    assert gen.count() >= 3000


def test_every_primitive_contributes_variants() -> None:
    names = {v.primitive for v in gen.variants()}
    assert names == set(load_all())


def test_ids_round_trip_and_are_opaque() -> None:
    allv = list(gen.variants())
    ids = [v.id for v in allv]
    assert len(set(ids)) == len(ids)
    prims = set(load_all())
    for v in allv[:: max(1, len(allv) // 300)]:
        assert gen.Variant.decode(v.id) == v
        assert not any(p in v.id for p in prims)
        spec = get_task(v.id)
        assert spec.id == v.id and spec.split == "generated"
        assert spec.faults[0].primitive == v.primitive and spec.faults[0].target == v.target


def test_enumeration_is_deterministic() -> None:
    assert [v.id for v in gen.variants()] == [v.id for v in gen.variants()]
    assert [v.id for v in gen.sample(20, 1)] == [v.id for v in gen.sample(20, 1)]


@pytest.mark.parametrize("bad", ["gen:", "gen:zzzzzzzzzz", "gen:ABC", "gen:1234567", "gen-abcdefgh"])
def test_bad_ids_get_a_clear_error(bad: str) -> None:
    with pytest.raises((ValueError, KeyError)) as err:
        get_task(bad)
    assert "generated task id" in str(err.value) or "unknown task" in str(err.value)


def test_tampered_id_is_rejected_clearly() -> None:
    v = next(iter(gen.variants()))
    code = v.id
    flipped = code[:-3] + ("a" if code[-3] != "a" else "b") + code[-2:]
    with pytest.raises(ValueError, match="does not generate"):
        gen.Variant.decode(flipped)
    with pytest.raises(ValueError, match="not a valid generated task id"):
        gen.Variant.decode("gen:not-hex")


def test_ids_are_opaque() -> None:
    """An id can reach an agent (an MCP config, a log line): it must not spell or encode the fault."""
    import base64
    import binascii

    for v in gen.spread(60):
        code = v.id.removeprefix("gen:")
        assert v.primitive not in v.id
        prefix = v.primitive.split("_")[0]
        if not set(prefix) <= set("0123456789abcdef"):  # "db", "bad": a hex id may spell those by chance
            assert prefix not in code
        with contextlib.suppress(binascii.Error, ValueError):
            decoded = base64.b32decode(code.upper() + "=" * (-len(code) % 8))
            assert v.primitive.encode() not in decoded


def test_sample_of_variants_is_solved_by_the_oracle() -> None:
    """A fixed sample: the page fires on its own and the oracle scores >= 95 through the normal API."""
    failures = []
    for v in gen.sample(SAMPLE_SIZE, SAMPLE_SEED):
        ok, why = viable(srezero.get_task(v.id), 0)
        if not ok:
            failures.append((v.id, v.primitive, v.target, v.case, why))
    assert failures == []


def test_retry_storm_upper_level_is_viable_everywhere() -> None:
    """TUNING keeps the example's surge at every level: a larger surge replayed in verification overloaded
    the web tier whatever the retry policy, so the oracle's fix failed on some seeds (8 pairs on seeds 0-4)."""
    upper = [v for v in gen.variants(("retry_storm",)) if v.case == 1]
    assert len(upper) >= 20 and all(v.params()["surge"] == 1.7 for v in upper)
    failures = [(v.noise, v.distractors, v.size, seed, why) for v in upper for seed in range(4)
                for ok, why in [viable(srezero.get_task(v.id), seed)] if not ok]
    assert failures == []


def test_variant_runs_through_the_same_api() -> None:
    v = gen.sample(1, 3)[0]
    env = srezero.make(v.id, 4)
    obs, info = env.reset()
    assert v.id not in obs.text and v.primitive not in obs.text
    obs, _reward, terminated, _truncated, info = env.step({"tool": "resolve", "args": {}})
    assert terminated and info["result"]["task_id"] == v.id


def test_generate_cli_json_and_out(tmp_path: Path) -> None:
    out = CliRunner().invoke(cli, ["generate", "--count", "4", "--json", "--out", str(tmp_path)])
    assert out.exit_code == 0, out.output
    rows = [orjson.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert len(rows) == 4 and all(r["id"].startswith("gen:") for r in rows)
    files = sorted(tmp_path.glob("gen-*.toml"))
    assert len(files) == 4
    listed = CliRunner().invoke(cli, ["tasks", "--tasks-dir", str(tmp_path), "--json"])
    ids = {r["id"] for r in orjson.loads(listed.output)}
    assert {f.stem for f in files} <= ids
    valid = CliRunner().invoke(cli, ["task", "validate", str(tmp_path)])
    assert valid.exit_code == 0, valid.output


def test_generate_cli_summary_and_filters() -> None:
    out = CliRunner().invoke(cli, ["generate"])
    assert out.exit_code == 0 and f"{gen.count()} variant(s)" in out.output
    out = CliRunner().invoke(cli, ["generate", "--primitive", "crash_loop", "--json"])
    assert out.exit_code == 0
    assert {orjson.loads(line)["primitive"] for line in out.output.splitlines()} == {"crash_loop"}
    out = CliRunner().invoke(cli, ["generate", "--primitive", "nope"])
    assert out.exit_code != 0 and "unknown fault primitive" in out.output


def test_check_prints_a_viability_summary() -> None:
    """Without --json, a passing --check used to print only the count table."""
    res = CliRunner().invoke(cli, ["generate", "--primitive", "bad_timeout", "--count", "3", "--check", "2"])
    assert res.exit_code == 0, res.output
    assert res.output.splitlines()[-1] == "3/3 viable on seeds 0-1"
    res = CliRunner().invoke(cli, ["generate", "--primitive", "bad_timeout", "--count", "1", "--check", "1", "--json"])
    assert [orjson.loads(line)["viable"] for line in res.stdout.splitlines()] == [True]
    assert "1/1 viable on seed 0" in res.stderr
