"""Grounding in whole episodes: a diagnosis counts for the root causes whose evidence the agent's reads
showed before it was submitted (srezero/scoring/diagnosis.py), so a blind guess that the suite's
priors make likely earns no diagnosis credit."""

from __future__ import annotations

import statistics

from scoring_helpers import LOOK, control_spec, crash_loop_spec, run, truth_claims

import srezero
from srezero.scoring import diagnosis as diag


def test_the_right_diagnosis_counts_only_after_evidence_of_it() -> None:
    _env, blind, _ = run(crash_loop_spec(), [truth_claims])
    _env, seen, _ = run(crash_loop_spec(), [LOOK, truth_claims])
    assert blind["diagnosis"]["score"] == diag.MECHANISM_CAP and not blind["diagnosis"]["per_cause"][0]["grounded"]
    assert seen["diagnosis"]["score"] == 1.0 and seen["diagnosis"]["per_cause"][0]["grounded"]


def test_a_read_after_the_diagnosis_does_not_ground_it_but_a_resubmission_does() -> None:
    _env, late, _ = run(crash_loop_spec(), [truth_claims, LOOK])
    _env, again, _ = run(crash_loop_spec(), [truth_claims, LOOK, truth_claims])
    assert late["diagnosis"]["score"] == diag.MECHANISM_CAP and late["evidence_coverage"] > 0
    assert again["diagnosis"]["score"] == 1.0


def test_a_later_read_does_not_unground_an_earlier_glimpse() -> None:
    """A signal glimpsed (its pattern in the same tool's output elsewhere) before the diagnosis and found
    on its own entity only after it stays seen before the diagnosis: a signal counts from its first
    sighting, whatever the agent reads later."""
    from srezero.scoring.evidence import EvidenceTracker

    tracker = EvidenceTracker([("search_logs", "worker", {}, "exited with code")], {"worker": {"worker-a"}})
    tracker.observe(3, "search_logs", {"service": "web_server"}, "job runner exited with code 1")
    assert tracker.seen_before(5) == [0]
    assert tracker.observe(10, "search_logs", {"service": "worker"}, "exited with code 1") == [0]
    assert tracker.seen_before(5) == [0] and tracker.seen_before(3) == []


def test_a_read_that_shows_nothing_of_the_cause_does_not_ground() -> None:
    _env, r, _ = run(crash_loop_spec(), ['get_status(service="web_server")', "get_alerts()", truth_claims])
    assert r["diagnosis"]["score"] == diag.MECHANISM_CAP


def test_the_cause_quoted_in_another_service_s_logs_grounds_without_counting_as_coverage() -> None:
    """inc-019's disk fills; the web tier's logs quote the database's "No space left on device". That is
    not where the task's evidence lies (coverage 0), but the agent has seen the cause."""
    env = srezero.make("inc-019", 0)
    env.reset()
    env.step('search_logs(service="web_server", level="warn")')
    env.step(truth_claims(env))
    *_, info = env.step("resolve()")
    r = info["result"]
    assert r["evidence_coverage"] == 0.0 and r["diagnosis"]["score"] == 1.0


def test_a_false_alarm_is_called_only_after_reading_what_shows_it_was_noise() -> None:
    none = {"tool": "submit_diagnosis", "args": {"root_causes": []}}
    metric = {"tool": "query_metrics", "args": {"target": "load_balancer", "metric": "error_rate"}}
    _env, blind, _ = run(control_spec(), [none])
    _env, alerts_only, _ = run(control_spec(), ["get_alerts()", none])
    _env, checked, _ = run(control_spec(), [metric, none])
    for r in (blind, alerts_only):
        assert r["diagnosis"]["gate"] == "unsupported" and not r["mitigated"]
        assert r["marks"] == round(10 * r["evidence_coverage"], 4)  # get_alerts is one of its 3 signals
    assert checked["success"] and checked["diagnosis"]["score"] == 1.0


class BlindEvacuation:
    """The fourth adversarial review's blind policy: never read a symptom; fail the database over, drain the
    old primary's node, blame that node's hardware with a detail naming every way hardware fails."""

    DETAIL = "sector errors / ecc / thermal / power / NotReady / fail-slow slow disk latency"

    def reset(self, briefing, seed, tool_specs):
        self.plan, self.last = self._script(), None

    def act(self, obs):
        self.last = obs
        return next(self.plan, {"tool": "resolve", "args": {}})

    def _script(self):
        yield {"tool": "get_status", "args": {}}
        primary = next(r["node"] for r in self.last.data if r.get("role") == "primary")
        yield {"tool": "failover", "args": {"service": "database"}}
        yield {"tool": "drain_node", "args": {"node": primary}}
        yield {"tool": "wait", "args": {"seconds": 300}}
        claim = {"entity": primary, "category": "hardware", "detail": self.DETAIL}
        yield {"tool": "submit_diagnosis", "args": {"root_causes": [claim]}}


def test_a_blind_evacuation_of_the_primary_s_node_stays_below_shotgun_s_bound() -> None:
    """Before grounding and the split hardware mechanisms it scored 11.1 on curated seeds 5-14, above the
    bound of 10 the shotgun adversary is held to: hardware faults in the suite often sit under the database
    primary, so the blind guess paid 80-90 there."""
    from srezero.agents.runner import run_episode

    marks, hardware = [], []
    for task in srezero.list_tasks():
        for seed in (0, 1):
            rec = run_episode(srezero.make(task.id, seed=seed), BlindEvacuation(), seed)
            r = rec["result"]
            marks.append(r["marks"])
            for cause in r["diagnosis"].get("per_cause", ()):
                if cause["mechanism"] and not cause["grounded"]:
                    raise AssertionError(f"{task.id}: an ungrounded claim was characterised")
                if cause["mechanism"]:
                    hardware.append((task.id, cause["detail"]))
    assert statistics.mean(marks) <= 10.0, statistics.mean(marks)
    assert hardware and not any(ok for _, ok in hardware)  # the every-mechanism detail passes nowhere
