"""Healthy configuration varies by seed, so a config value is wrong only against its own world
(DESIGN.md principle 5; round-2 audit N4: diffing against values learned from public seeds)."""

from __future__ import annotations

from collections import defaultdict

import pytest

import srezero
from srezero.sim import config
from srezero.sim.rng import stream
from srezero.sim.topology import TopologySize, build
from srezero.sim.world import World

#: Safety switches whose one healthy setting is the point (turning them off is the fault), and keys
#: that describe the world rather than configure it.
ONE_HEALTHY_VALUE = {("database", "autovacuum"), ("web_server", "cache_coalescing"),
                     ("load_balancer", "sticky_sessions")}
SEEDS = range(60)


def _healthy_values() -> dict[tuple[str, str], set]:
    seen: dict[tuple[str, str], set] = defaultdict(set)
    control = srezero.get_task("inc-011")  # a false alarm: nothing in the world is broken
    for seed in SEEDS:
        for kind, svc in World.build(control, seed).services.items():
            for key, value in svc.config.items():
                if not key.startswith(("backend_weight.", "feature_flag.")):
                    seen[(kind, key)].add(value)
    return seen


def test_no_setting_has_one_healthy_value_in_every_world() -> None:
    seen = _healthy_values()
    for spec in config.KEYS:
        values = seen[(spec.service, spec.key)]
        if (spec.service, spec.key) in ONE_HEALTHY_VALUE:
            assert len(values) == 1
        else:
            assert len(values) >= 2, (spec.service, spec.key, values)
    for dep, key in config.HOST_KEYS.items():  # an address is one of several a world may use
        assert seen[("web_server", key)] == set(config.ENDPOINTS[dep])
    assert seen[("load_balancer", "health_check_path")] == set(config.HEALTH_PATHS)
    assert len(seen[("web_server", "env.DATABASE_URL")]) == len(config.ENDPOINTS["database"])


def test_the_conventions_stream_leaves_placement_alone() -> None:
    """Conventions draw from their own stream: the same topology seed gives the same nodes and names."""
    a = build(TopologySize(), stream("t", 1, "topology"), stream("t", 1, "conventions"))
    b = build(TopologySize(), stream("t", 1, "topology"), stream("t", 2, "conventions"))
    assert sorted(a.replicas) == sorted(b.replicas) and [n.name for n in a.nodes] == [n.name for n in b.nodes]


@pytest.mark.parametrize(("primitive", "key", "pool"), [
    ("bad_host", "db_host", config.ENDPOINTS["database"]),
    ("bad_host", "cache_host", config.ENDPOINTS["cache"]),
    ("bad_host", "queue_host", config.ENDPOINTS["message_queue"]),
    ("wrong_health_check_path", "health_check_path", config.HEALTH_PATHS),
])
def test_a_wrong_address_is_right_in_other_worlds(primitive: str, key: str, pool: tuple[str, ...]) -> None:
    """A value learned as healthy from public seeds does not clear a suspect address: the incident's
    value is another world's healthy one, so only this world's own evidence (the value before the
    change, failing calls) tells. The incident still bites: the address is wrong here."""
    target = "load_balancer" if key == "health_check_path" else "web_server"
    params = {"value": "/status"} if key == "health_check_path" else {"key": key}
    base = srezero.get_task("inc-004")
    fault = base.faults[0].model_copy(update={"primitive": primitive, "target": target, "params": params})
    spec = base.model_copy(update={"faults": (fault,)})
    in_pool = 0
    for seed in range(12):
        w = World.build(spec, seed)
        w.advance(120.0)
        bad = w.services[target].config[key]
        own = w.topo.conventions.health_path if key == "health_check_path" else \
            w.topo.conventions.endpoints[next(d for d, k in config.HOST_KEYS.items() if k == key)]
        assert bad != own
        in_pool += bad in pool
        assert not w.faults[0].neutralised(w)  # it bites
    assert in_pool >= 8 if key == "health_check_path" else in_pool == 12


NUMERIC = [k for k in config.KEYS if k.type in (int, float)]


def test_every_numeric_key_declares_what_its_service_accepts_and_healthy_values_fit() -> None:
    seen = _healthy_values()
    for spec in NUMERIC:
        assert spec.valid is not None, f"{spec.service}.{spec.key} declares no valid range"
        lo, hi = spec.valid
        assert all(lo <= v <= hi for v in seen[(spec.service, spec.key)]), (spec.service, spec.key)


@pytest.mark.parametrize("task", [t.id for t in srezero.list_tasks()])
def test_no_fault_sets_a_value_its_service_would_refuse(task: str) -> None:
    """What a fault writes, set_config must be able to write back (and the other way round)."""
    for seed in (0, 1):
        w = World.build(srezero.get_task(task), seed)
        w.page()
        w.advance(600)
        for kind, svc in w.services.items():
            for key, value in svc.config.items():
                config.check_range(kind, key, value)  # raises, naming service, key and value


def test_values_a_service_refuses_change_nothing_and_its_limits_keep_the_model_running() -> None:
    """A review found set_config(cache, ttl_s, -5) accepted and load_balancer.max_connections = 0 applied
    and then crashing every tick ("internal error in ...")."""
    for spec in NUMERIC:
        if (spec.service, spec.key) in config.READ_ONLY:
            continue
        lo, hi = spec.valid
        below = lo - (1 if spec.type is int else 0.005)
        for value, accepted in ((below, False), (hi * 2, False), (lo, True), (hi, True)):
            env = srezero.make("inc-001", 0)
            env.reset()
            before = env.world.services[spec.service].config[spec.key]
            args = {"service": spec.service, "key": spec.key, "value": spec.type(value)}
            obs, *_ = env.step({"tool": "set_config", "args": args})
            assert obs.ok is accepted, (args, obs.text)
            if not accepted:
                assert env.world.services[spec.service].config[spec.key] == before
                assert f"{spec.service} accepts {spec.key} from" in obs.text and "nothing was changed" in obs.text
            for action in ("get_status()", f"get_config(service='{spec.service}')", "resolve()"):
                *_, info = env.step(action)
            assert info["result"]["internal_errors"] == [], (args, info["result"]["internal_errors"])


def _drawn_range(spec: config.ConfigKey) -> set:
    """Every value the key's healthy default draws (the draws are small grids)."""
    return {spec.default(stream("range", n, spec.key)) for n in range(400)}


def test_some_worlds_keep_an_odd_but_harmless_value_no_healthy_draw_gives() -> None:
    """A value a learner never saw in other worlds is no evidence by itself: most worlds have a
    setting their operators left outside the healthy range long ago, harmlessly (config.QUIRKS)."""
    from srezero.faults.envelopes import within

    control = srezero.get_task("inc-011")
    counts: dict[int, int] = defaultdict(int)
    seen: dict[tuple[str, str], set] = defaultdict(set)
    for seed in SEEDS:
        w = World.build(control, seed)
        quirks = w.topo.conventions.quirks
        counts[len(quirks)] += 1
        for (svc, key), value in quirks.items():
            assert w.services[svc].config[key] == value
            assert within(w, svc, key, value) is not False, (svc, key, value)  # inside any safe envelope
            seen[(svc, key)].add(value)
    assert set(counts) == {0, 1, 2} and counts[1] > counts[0] and counts[1] > counts[2], counts
    assert set(seen) == {(svc, key) for svc, key, _ in config.QUIRKS}
    for (svc, key), values in seen.items():
        healthy = _drawn_range(config.BY_SERVICE[svc][key])
        assert values and not values & healthy, (svc, key, values, healthy)


@pytest.mark.parametrize("task", ["inc-001", "inc-025", "inc-050"])
def test_a_quirk_changes_no_metric(task: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The quirks are keys no model reads or limits that bind only further from the load: the same
    world without its quirk runs the same numbers (its config and history text aside)."""
    import numpy as np

    spec = srezero.get_task(task)
    checked = 0
    for seed in range(8):
        with_quirks = World.build(spec, seed)
        if not with_quirks.topo.conventions.quirks:
            continue
        monkeypatch.setattr(config, "QUIRK_COUNTS", (0,))
        plain = World.build(spec, seed)
        monkeypatch.undo()
        assert not plain.topo.conventions.quirks
        for w in (with_quirks, plain):
            w.page()
            w.advance(900)
        assert with_quirks.t_page == plain.t_page
        assert np.allclose(with_quirks.buf, plain.buf, rtol=1e-9, atol=1e-9)
        checked += 1
    assert checked >= 4
