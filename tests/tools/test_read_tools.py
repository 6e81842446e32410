"""What the read tools print: every number with its unit, and no silent thinning of a series."""

from __future__ import annotations

import re

import srezero
from srezero.sim import metrics as M
from srezero.tools.read import SPARK_WIDTH


def test_every_metric_names_its_unit() -> None:
    """A dogfooding review could not tell whether db_pool_in_use was a share or a count."""
    names = {*M.REPLICA_METRICS, *M.SERVICE_BASE, *M.NODE_METRICS, *(m for ms in M.SERVICE_EXTRA.values() for m in ms)}
    assert names <= set(M.UNITS), sorted(names - set(M.UNITS))


def test_a_long_window_says_it_thins_its_values_and_keeps_its_sparkline_short() -> None:
    env = srezero.make("inc-009", 8)
    env.reset()
    env.step("wait(seconds=600)")
    short, *_ = env.step('query_metrics(target="web_server", metric="db_pool_in_use", window_s=600)')
    assert re.search(r"^  values: ", short.text, re.M) and "every" not in short.text
    long, *_ = env.step('query_metrics(target="web_server", metric="db_pool_in_use", window_s=7200)')
    lines = long.text.splitlines()
    head, extremes, spark, values = lines[:4]
    assert "(all the history kept)" in head  # less history than the 2 hours asked for: said so
    assert re.match(r"  values \(every \d+(nd|rd|th) sample, \d+s apart; min and max above cover all\): ", values)
    assert len(spark.split()[1]) <= SPARK_WIDTH
    top = float(re.search(r"max (\S+)", extremes).group(1))
    assert spark.split()[1][-1] == "█" and top > 50  # the leak's climb at the end is drawn, not thinned away


def _status_row(env: srezero.Env, name: str) -> list[str]:
    obs, *_ = env.step("get_status()")
    return next(line.split() for line in obs.text.splitlines() if line.startswith(name + " "))


def test_a_pod_age_counts_from_its_creation_not_its_last_container_start() -> None:
    # inc-001 seed 0: the worker release crash-loops from the moment it rolled out
    env = srezero.make("inc-001", seed=0)
    env.reset()
    w = env.world
    looping = [r for r in w.services["worker"].replicas if r.state == "CrashLoopBackOff"]
    assert looping and all(r.restarts >= 2 for r in looping)
    rep = looping[0]
    _name, _svc, _ready, status, restarts, age, *_ = _status_row(env, rep.name)
    assert (status, int(restarts)) == ("CrashLoopBackOff", rep.restarts)
    assert age not in ("0s", "4d") and rep.age_s(w.now) >= 60  # rolled out minutes ago, crashed since
    env.step(f"restart(target='{rep.name}')")  # the agent replaces the pod: a new one, a new age
    assert rep.age_s(w.now) < 60
    assert _status_row(env, rep.name)[5].endswith("s")
