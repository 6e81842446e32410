"""No observation reveals the ground truth: no fault names, ids, spoiler text or hidden fields."""

from __future__ import annotations

import re

import pytest

import srezero
from srezero.faults.base import load_all
from tests.conftest import play

FORBIDDEN_WORDS = ("ground truth", "ground_truth", "root cause:", "injected", "fault_id", "primitive", "oracle",
                   "spoiler", "correct fix", "is_correct")


def _forbidden(task_id: str) -> list[str]:
    spec = srezero.get_task(task_id)
    words = [*list(FORBIDDEN_WORDS), spec.title]
    words += [name for name in load_all()]  # primitive names
    # sentences of the spoiler description (long enough to be distinctive)
    words += [s.strip() for s in re.split(r"[.;\n]", spec.description) if len(s.strip()) > 40]
    return [w.lower() for w in words]


@pytest.mark.parametrize("agent", ["oracle", "random"])
def test_observations_do_not_leak(task_ids, agent) -> None:
    for task in task_ids:
        forbidden = _forbidden(task)
        for seed in (0, 1):
            env = srezero.make(task, seed)
            obs, info = env.reset()
            texts = [obs.text, str(info["briefing"])]
            rec = play(task, seed, agent)
            texts += [t["text"] for t in rec["trajectory"]]
            blob = "\n".join(texts).lower()
            for word in forbidden:
                assert word not in blob, f"{task} seed {seed}: observation contains {word!r}"
            assert task not in blob, f"{task}: the task id appears in an observation"


def test_briefing_is_opaque(task_ids) -> None:
    for task in task_ids:
        env = srezero.make(task, 0)
        _, info = env.reset()
        assert task not in str(info) and srezero.get_task(task).title not in str(info)


def test_shaped_rewards_do_not_announce_a_control_task() -> None:
    """The generic first reads (alerts, the edge error rate and p99) are a control task's evidence;
    paying for them at once would say "nothing is broken" on step one. They pay at the end, and the
    rewards still sum to marks / 100."""
    controls = [t.id for t in srezero.list_tasks() if srezero.get_task(t.id).ground_truth.no_fault]
    assert controls
    first_reads = ["get_alerts()", 'query_metrics(target="load_balancer", metric="error_rate")',
                   'query_metrics(target="load_balancer", metric="latency_p99_ms")', "get_topology()"]
    for task in controls:
        env = srezero.make(task, 0)
        env.reset()
        rewards = [env.step(a)[1] for a in first_reads]
        assert rewards == [0.0] * len(first_reads), (task, rewards)
        env.step({"tool": "submit_diagnosis", "args": {"root_causes": []}})
        _obs, last, _term, _trunc, info = env.step("resolve()")
        assert info["result"]["evidence_coverage"] == 1.0  # the reads were evidence, paid at the end
        assert sum(rewards) + last == pytest.approx(info["result"]["marks"] / 100, abs=1e-9)
