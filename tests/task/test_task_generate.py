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


#: (variant, seed) pairs that were not viable before the 2026-11-22 tuning (seeds 0-2), one per cause; the last
#: one before the oracle watched a visibility timeout fix drain the backlog (a later session, same day).
RETUNED_PAIRS = (
    ("gen:a127154d540ec9a276b1", 1),  # bad_worker_count: one thread per replica served a quiet 4-replica world
    ("gen:543939a5cfed35aef67b", 0),  # bad_worker_count, the lower level
    ("gen:ee299542dab457e61f6c", 2),  # cache_hot_key: edge p99 stayed under HighLatencyP99's threshold
    ("gen:c6ba7f276a41ad752309", 2),  # cache_ttl_misconfig: HighErrorRate paged only with noise on
    ("gen:9a4e49cd61c998202c07", 1),  # sticky_session_hotspot: 1.7x load + a restart broke the SLO after the fix
    ("gen:ac3c8060b78bea27bc66", 0),  # ephemeral_port_exhaustion: the limits read missed the exhausted range
    ("gen:feea2c4cdeeb37d28576", 2),  # ephemeral_port_exhaustion, on a numbered replica's node
    ("gen:382178275b4a004f73c3", 2),  # conntrack_full: the limits read missed the full table
    ("gen:5a90c1fc34b30083657a", 1),  # bad_config maxmemory_mb: the refill kept edge p99 over its SLO
    ("gen:39cb1e8762b072f82334", 0),  # visibility_timeout_low: resolved before the backlog drained (182 s > 180)
)


def test_retuned_variants_are_viable_where_they_failed() -> None:
    """Each pair failed `generate --check 3` before its TUNING (or BAD_CONFIGS) change: page, marks, evidence."""
    failures = [(task_id, seed, why) for task_id, seed in RETUNED_PAIRS
                for ok, why in [viable(get_task(task_id), seed)] if not ok]
    assert failures == []


def test_tuning_drops_the_levels_and_size_that_could_not_page_or_heal() -> None:
    """The slow upper levels of memory_leak, thermal_throttling and node_oom missed the page on some seeds, and the
    5-replica cache_eviction_storm kept edge p99 over its SLO while the cache refilled: they are not generated."""
    levels = {p: {v.case for v in gen.variants((p,))} for p in ("memory_leak", "thermal_throttling", "node_oom")}
    assert levels == {"memory_leak": {0, 2}, "thermal_throttling": {0, 2}, "node_oom": {0, 2}}
    assert {v.size for v in gen.variants(("cache_eviction_storm",))} == {0}


def test_topology_and_traffic_tuning_reach_the_spec() -> None:
    """TUNING's topology and traffic knobs land in the TaskSpec and the --json fields; other variants keep the
    seed's choices (no traffic entry: the scale stays 1)."""
    v = next(iter(gen.variants(("bad_worker_count",))))
    spec = v.spec()
    assert spec.topology.web_replicas == 3 and spec.traffic.scale == 1.1
    assert v.fields()["topology"] == {"web_replicas": 3} and v.fields()["traffic"] == 1.1
    other = next(iter(gen.variants(("crash_loop",))))
    assert other.spec().traffic.scale == 1.0 and other.spec().topology.web_replicas is None
    assert other.fields()["traffic"] == 1.0


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
    assert out.exit_code != 0 and "unknown fault primitive 'nope'" in out.output
    out = CliRunner().invoke(cli, ["generate", "--primitive", "crash_lop"])
    assert out.exit_code != 0 and "unknown fault primitive 'crash_lop'; did you mean crash_loop?" in out.output


def test_check_prints_a_viability_summary() -> None:
    """Without --json, a passing --check used to print only the count table."""
    res = CliRunner().invoke(cli, ["generate", "--primitive", "bad_timeout", "--count", "3", "--check", "2"])
    assert res.exit_code == 0, res.output
    assert res.output.splitlines()[-1] == "3/3 viable on seeds 0-1"
    res = CliRunner().invoke(cli, ["generate", "--primitive", "bad_timeout", "--count", "1", "--check", "1", "--json"])
    assert [orjson.loads(line)["viable"] for line in res.stdout.splitlines()] == [True]
    assert "1/1 viable on seed 0" in res.stderr


def test_generate_refuses_bad_sampling_and_outputs_before_any_work(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    cases = {("--count", "3", "--sample", "-1"): "-1 is not in the range x>=0",
             ("--sample", "3"): "--sample draws a random sample of --count variants: give --count N too",
             ("--count", "2", "--out", str(blocker)): "is a file",
             ("--count", "2", "--out", str(blocker / "sub")): f"{blocker} is a file, not a directory"}
    for args, text in cases.items():
        res = CliRunner().invoke(cli, ["generate", *args])
        assert res.exit_code == 2 and text in res.output and "Traceback" not in res.output, (args, res.output)
    sampled = CliRunner().invoke(cli, ["generate", "--count", "3", "--sample", "0", "--json"])
    assert sampled.exit_code == 0 and len(sampled.output.splitlines()) == 3
