"""Did-you-mean suggestions (srezero/errors.py), shared by task ids, tools, arguments and services."""

from __future__ import annotations

from srezero.errors import did_you_mean, near_misses

IDS = [f"inc-{i:03d}" for i in range(1, 45)]


def test_a_word_cut_short_suggests_what_it_begins_before_lookalikes() -> None:
    assert near_misses("inc-01", IDS, n=3) == ["inc-010", "inc-011", "inc-012"]
    assert near_misses("get_stat", ["get_traces", "get_config", "get_status"])[0] == "get_status"
    assert did_you_mean("inc-01", IDS, n=3) == "; did you mean inc-010, inc-011 or inc-012?"


def test_typos_still_get_lookalikes_and_nonsense_gets_nothing() -> None:
    assert "inc-001" in near_misses("inc-0001", IDS, n=3)
    assert near_misses("databse", ["database", "cache", "worker"]) == ["database"]
    assert near_misses("zzz", ["database", "cache", "worker"]) == [] and did_you_mean("zzz", ["cache"]) == ""
    assert near_misses("in", IDS) == []  # too short to be a prefix of anything meant
