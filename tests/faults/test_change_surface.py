"""A change's wording, version step, events and timing never tell a fault's change from a harmless one.

The adversarial audit that motivated srezero/sim/changes.py found a blind agent that only reverted
changes whose wording was not in the (small, fixed) vocabulary of benign changes: it beat the runbook
baseline by two to one without reading a symptom. These tests rebuild that attack's features and
check that none of them separates the two.
"""

from __future__ import annotations

import re
from collections import Counter
from itertools import pairwise

import pytest

import srezero
from srezero.sim import changes
from srezero.sim.components import Change
from srezero.sim.nodes import sysctl_value
from srezero.sim.world import World

SEEDS = (0, 1, 2, 3, 4)
_REASON = re.compile(r"\(([^()]*)\)\s*$")


def _worlds() -> list[World]:
    out = []
    for info in srezero.list_tasks():
        for seed in SEEDS:
            w = World.build(srezero.get_task(info.id), seed)
            w.page()
            out.append(w)
    return out


@pytest.fixture(scope="module")
def worlds() -> list[World]:
    return _worlds()


def _split(worlds: list[World]) -> tuple[list[tuple[World, Change]], list[tuple[World, Change]]]:
    """(fault changes, harmless changes) made before the page; the agent's own writes come later."""
    faulty, benign = [], []
    for w in worlds:
        for c in w.changes:
            if c.at <= w.t_page:
                (benign if c.noise else faulty).append((w, c))
    return faulty, benign


def _phrase(c: Change) -> str:
    """The words a change carries besides its content: a reason, or a release note."""
    if c.kind == "deploy":
        return c.detail.split(": ", 1)[1]
    m = _REASON.search(c.detail)
    return re.sub(r"\d+", "N", m.group(1)) if m else ""


def test_every_phrase_a_fault_uses_is_one_harmless_changes_use(worlds: list[World]) -> None:
    faulty, benign = _split(worlds)
    assert len(faulty) > 60 and len(benign) > 300
    fault_phrases = Counter(_phrase(c) for _, c in faulty)
    benign_phrases = Counter(_phrase(c) for _, c in benign)
    only_faults = set(fault_phrases) - set(benign_phrases)
    # reasons and notes come from one pool (the sync bot's "secret sync" included), so none is a fault's own
    assert not only_faults, only_faults
    pool = {re.sub(r"\{n\}", "N", r) for r in changes.REASONS} | set(changes.RELEASE_NOTES) | {
        "secret sync", "", "to be rebuilt CONCURRENTLY", "secret app-db-credentials vN -> vN"}  # the last two: content
    assert set(fault_phrases) <= pool, set(fault_phrases) - pool


def test_every_kind_of_change_a_fault_makes_also_happens_harmlessly(worlds: list[World]) -> None:
    faulty, benign = _split(worlds)
    assert {c.kind for _, c in faulty} <= {c.kind for _, c in benign}
    # the same shapes of detail: a key edit, a rotation, a migration, a slot, a sysctl, a release
    def shape(c: Change) -> str:
        return re.sub(r"\s+\S+", "", re.sub(r"^\S+: ", "KEY: ", c.detail))[:12] if c.kind == "config" else c.kind

    assert {shape(c) for _, c in faulty} <= {shape(c) for _, c in benign}


def test_config_edits_leave_the_same_event_whoever_made_them(worlds: list[World]) -> None:
    hits = {True: [0, 0], False: [0, 0]}  # noise -> [edits, edits with their ConfigChanged event]
    for w in worlds:
        events = {(e.entity, e.message) for e in w.events if e.reason == "ConfigChanged"}
        for c in w.changes:
            key, sep, _ = c.detail.partition(": ")
            if c.kind != "config" or not sep or " " in key or c.at > w.t_page:
                continue
            hits[c.noise][0] += 1
            hits[c.noise][1] += (c.service, f"configmap {c.service}-config updated ({key})") in events
    assert hits[True][0] > 100 and hits[False][0] > 30
    assert hits[True][0] == hits[True][1] and hits[False][0] == hits[False][1], hits


def test_every_edit_in_the_history_parses_back_to_a_key_its_owner_has(worlds: list[World]) -> None:
    """One parser (``changes.parse_edit``) reads edits back for the baselines and the discrete env. A
    key with a hyphen (``backend_weight.web-xtmpq``) once parsed as its tail, and a revert of it was an
    invalid action; a secret rotation is not an edit and must not parse as one."""
    parsed = {"config": 0, "sysctl": 0, "rotation": 0}
    for w in worlds:
        for c in w.changes:
            if c.kind == "sysctl":
                node, _, detail = c.detail.partition(": ")
                sysctl_value(w.topo.node_by_name[node], changes.parse_edit(detail)[0])  # a key the node has
            elif c.kind == "config" and c.detail.startswith("rotated "):
                assert changes.parse_edit(c.detail) is None and changes.parse_rotation(c.detail), c.detail
                parsed["rotation"] += 1
                continue
            elif c.kind == "config":
                key, old, new = changes.parse_edit(c.detail)
                assert key in w.services[c.service].config, c.detail
                assert c.detail.startswith(f"{key}: {old} -> {new}"), c.detail
            else:
                continue
            parsed[c.kind] += 1
    assert min(parsed.values()) > 10, parsed


def test_releases_step_and_roll_out_alike(worlds: list[World]) -> None:
    def patch(v: str) -> int:
        return int(v.rsplit(".", 1)[1])

    steps: dict[bool, Counter] = {True: Counter(), False: Counter()}
    for w in worlds:
        noisy = {c.detail.split(":")[0].removeprefix("deployed ") for c in w.changes if c.kind == "deploy" and c.noise}
        for svc in w.services.values():
            for prev, new in zip(svc.deploys, svc.deploys[1:], strict=False):
                if new.at > 0 and prev.version.rsplit(".", 1)[0] == new.version.rsplit(".", 1)[0] \
                        and "to v" not in new.message:  # a release, not an agent's rollback
                    steps[new.version in noisy][patch(new.version) - patch(prev.version)] += 1
            # a rolled-out release's pods are younger than it: none still shows the age of the old one
            # (a rolling update restarts one pod at a time: judge only releases whose rollout is over)
            pods = [r for r in svc.replicas if r.state != "Terminated"]
            if 0 < svc.deploys[-1].at < w.now - len(pods) * (svc.startup_s + 5.0):
                assert all(r.ready_at != 0.0 for r in svc.replicas if r.state != "Terminated"), (w.spec.id, svc.kind)
    assert set(steps[False]) <= set(steps[True]), steps


def test_past_and_live_rollouts_restart_pods_alike(worlds: list[World]) -> None:
    """A release rolled out days ago and one shipped live restart their pods with the same spacing
    (one at a time, each once the previous is up), so pod ages never tell a past release from a live one."""
    gaps: dict[bool, set[float]] = {True: set(), False: set()}
    for w in worlds:
        noisy = {c.at for c in w.changes if c.kind == "deploy" and c.noise}
        for svc in w.services.values():
            names = {r.name for r in svc.replicas}
            step = svc.startup_s + changes.ROLLOUT_GAP_S
            for release, after in zip(svc.deploys[1:], [*svc.deploys[2:], None], strict=False):
                # the rollout's own span: it starts within 30 s of the entry and a later one supersedes it
                end = min(after.at if after else w.t_page, release.at + 30.0 + len(names) * step)
                kills = sorted(e.at for e in w.events if e.reason == "Killing" and e.entity in names
                               and release.at <= e.at < end)
                if len(kills) > 1:
                    gaps[release.at in noisy and release.at < w.t_page - 3600].update(
                        round((b - a) / step, 6) for a, b in pairwise(kills))
    assert gaps[True] == {1.0}, gaps  # releases rolled out in the past
    assert gaps[False] == {1.0}, gaps  # releases shipped live, faulty or not


def test_the_onset_falls_on_any_minute_of_the_hour(worlds: list[World]) -> None:
    minutes = {w.stamp(w.t_page)[14:16] for w in worlds}
    assert len(minutes) > 30  # 129 worlds: the page's wall-clock minute is spread over the hour


def test_kernel_noise_also_speaks_during_the_incident() -> None:
    spec = srezero.get_task("inc-011")  # the control task: nothing is wrong, noise only
    spoke = 0
    for seed in range(6):
        w = World.build(spec.model_copy(update={"noise": spec.noise.model_copy(update={"profile": "noisy"})}), seed)
        onset = w.now
        w.page()
        w.advance(1500.0)
        spoke += any(t > onset for lines in w.dmesg_lines.values() for t, _ in lines)
    assert spoke >= 5


@pytest.mark.parametrize("task", ["inc-001", "inc-011", "inc-044"])
def test_the_first_data_point_does_not_place_the_onset(task: str) -> None:
    """The onset sits at a fixed simulated time after the world starts, and the longest metrics query
    reaches back to that start: with a fixed history, "the change stamped N seconds after the first data
    point" was the fault's (and "the page N seconds after it" a control's). The history's length varies
    by seed, so the gap between the first data point and the page does too, by up to an hour."""
    import datetime as dt

    gaps = []
    for seed in range(10):
        env = srezero.make(task, seed)
        obs, _ = env.reset()
        paged = dt.datetime.fromisoformat(obs.text.split(" ", 2)[1].rstrip(":").replace("Z", "+00:00"))
        out, *_ = env.step({"tool": "query_metrics", "args": {"target": "load_balancer", "metric": "error_rate",
                                                                "window_s": 7200}})
        start = dt.datetime.fromisoformat(out.data["start"].replace("Z", "+00:00"))
        gaps.append((paged - start).total_seconds())
    assert len(set(gaps)) >= 8, gaps
    assert max(gaps) - min(gaps) >= 1800, gaps


_EDIT = re.compile(r"^([\w.\-]+): (.+?) -> (.+?) \([^()]*\)$")


def _edits(worlds: list[World], noise: bool) -> list[tuple[str, str, str]]:
    out = []
    for w in worlds:
        for c in w.changes:
            m = _EDIT.match(c.detail)
            if c.kind == "config" and c.noise is noise and m and "secret sync" not in c.detail:
                out.append(m.groups())
    return out


def test_harmless_edits_take_the_shapes_faults_edits_take(worlds: list[World]) -> None:
    """The second audit's blind agent flagged any edit whose old value was not one of a few fixed
    steps from the new (x0.5, x0.75, x1.5, x2, +500...), or that switched a setting off or emptied it:
    noise never did, so every flag was a fault. Harmless edits now draw any ratio, and some set a
    bad-looking value that a later edit put back."""
    from tests.faults.test_noise import control

    # plus worlds with many harmless edits: an emptied value is rare (a days-old, reverted edit of a string
    # setting: 4 in 2,000 harmless edits), and seed 66 has one
    many = [World.build(control("quiet", {"benign_config_change": 10}), seed) for seed in range(60, 72)]
    for w in many:
        w.page()
    noise = _edits(worlds + many, True)
    ratios = set()
    for _, old, new in noise:
        try:
            a, b = float(old), float(new)
        except ValueError:
            continue
        if a > 0 and b > 0:
            ratios.add(round(a / b, 3))
    assert len(ratios) > 40  # not a handful of fixed steps
    assert any(0 < r < 0.3 or r > 3.5 for r in ratios)  # as large as faults' edits
    assert any(new == "''" for _, _, new in noise)  # a value emptied (and restored later)
    assert any(old == "True" and new == "False" for _, old, new in noise)
    for key, _, bad in noise:  # every bad-looking edit was put back: the world stays healthy
        if bad == "''":
            assert any(k == key and old == "''" for k, old, _ in noise), key


def test_big_steps_within_the_metrics_history_are_not_only_faults(worlds: list[World]) -> None:
    """Every fault edit made while the metrics history runs steps more than 2.6x; harmless ones
    there stayed within 2.5x, so a big recent step named the culprit. Now a harmless edit of a key
    with a safe envelope may step as far as a days-old one, always from a value that was safe too."""
    from srezero.faults.envelopes import ENVELOPES

    big = []
    for w in worlds:
        for c in w.changes:
            m = _EDIT.match(c.detail)
            if not (c.noise and c.kind == "config" and m and 0.0 <= c.at <= w.t_page):
                continue
            key, old, new = m.groups()
            try:
                a, b = float(old), float(new)
            except ValueError:
                continue
            if a > 0 and b > 0 and max(a / b, b / a) > 2.6:
                big.append((c.service, key))
                fits = ENVELOPES.get((c.service, key))
                if fits is not None:
                    assert fits(w, int(a) if old.lstrip("-").isdigit() else a), (w.spec.id, c.detail)
    assert len(big) >= 20 and len(set(big)) >= 6, big


def test_bots_make_harmless_changes_of_every_kind_faults_make(worlds: list[World]) -> None:
    bot_kinds = {c.kind for w in worlds for c in w.changes if c.noise and c.author in ("deploy-bot", "renovate")}
    assert {"config", "migration", "deploy"} <= bot_kinds, bot_kinds


def test_a_healthy_release_may_ship_minutes_before_the_page(worlds: list[World]) -> None:
    """Faults' releases ship minutes before the page; so do some healthy ones (never on the culprit)."""
    recent = [(w, c) for w in worlds for c in w.changes  # shipped live (earlier ones may be on any service)
              if c.kind == "deploy" and c.noise and max(w.t_page - 900.0, (w.history_cols - 1) * 30.0) < c.at <= w.t_page]
    assert len(recent) >= 5
    for w, c in recent:
        culprits = {f.target.name for f in w.faults} | {getattr(f, "service", None) for f in w.faults}
        assert c.service not in culprits, (w.spec.id, c.detail)


def test_kernel_limits_differ_between_worlds_and_agree_within_one(worlds: list[World]) -> None:
    limits = {(n.fd_max, n.conntrack_max, n.port_lo) for w in worlds for n in w.topo.nodes
              if not any(f.target.kind == "node" or f.target.kind == "disk" for f in w.faults)}
    assert len(limits) > 5
    for w in worlds:
        if not w.faults:
            assert len({(n.fd_max, n.conntrack_max, n.port_lo, n.ephemeral_ports) for n in w.topo.nodes}) == 1
