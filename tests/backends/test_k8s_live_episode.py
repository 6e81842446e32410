"""A live episode over the Kubernetes backend (fake client): parser, budgets, diagnosis, verification."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from k8s_fakes import NOW, NS, FakeProm, Recorder, ScriptedAgent, cluster_responses

from srezero.agents.runner import run_episode
from srezero.backends.k8s import KubernetesBackend
from srezero.backends.live_episode import DEFAULT_SLOS, LiveEpisode
from srezero.cli import cli


class Clock:
    def __init__(self) -> None:
        self.t = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        self.t += 3.0  # every look at the clock is a few seconds later
        return self.t

    def sleep(self, s: float) -> None:
        self.slept.append(s)
        self.t += s


def live(responses: dict[str, Any], prom: FakeProm | None = None, **kw: Any) -> tuple[LiveEpisode, list, Clock]:
    calls: list = []
    clock = Clock()
    backend = KubernetesBackend(NS, core=Recorder("core", calls, responses), apps=Recorder("apps", calls, responses),
                                prometheus_url="http://prom:9090" if prom else None, http_get=prom,
                                clock=clock, sleep=clock.sleep, wall=lambda: NOW)
    return LiveEpisode(backend, verify_s=90.0, **kw), calls, clock


def test_scripted_agent_is_recorded_and_verified() -> None:
    env, calls, clock = live(cluster_responses())
    rec = run_episode(env, ScriptedAgent(), 0)
    r = rec["result"]
    tools = [t["tool"] for t in rec["trajectory"]]
    assert tools == ["get_status", "search_logs", "get_traces", "submit_diagnosis", "set_config", "resolve"]
    assert [t["ok"] for t in rec["trajectory"]] == [True, True, False, True, True, True]
    assert rec["trajectory"][2]["error"] == "get_traces is not supported by this backend"
    assert r["diagnosis"]["claims"][0]["entity"] == "web.env.DB_URL" and r["diagnosis"]["score"] is None
    assert r["writes"][0]["tool"] == "set_config" and r["writes"][0]["args"]["key"] == "env.DB_URL"
    assert r["resolved"] and r["invalid_actions"] == 1 and r["marks"] is None and r["ground_truth"] is None
    # verification: waited, then read every deployment's availability
    assert clock.slept == [90.0]
    assert calls[-1] == ("apps.list_namespaced_deployment", {"namespace": NS})
    assert r["mitigation"]["deployments"] == {"web": "3/3", "db": "1/1"}
    assert r["mitigated"] and r["mitigation"]["slo_ok"] is None and "not checked" in r["mitigation"]["slo_note"]
    assert ("apps.patch_namespaced_deployment" in [c[0] for c in calls])
    orjson.dumps(rec)  # the record is JSON-able like a simulator record


def test_unready_deployment_is_not_mitigated() -> None:
    env, _, _ = live(cluster_responses(available=1))
    r = run_episode(env, ScriptedAgent(), 0)["result"]
    assert not r["mitigated"] and not r["mitigation"]["ready"]
    assert r["mitigation"]["reasons"] == ["deployment web has 1/3 replicas available"]


@pytest.mark.parametrize("error_rate,ok", [(0.004, True), (0.2, False)])
def test_slo_check_through_prometheus(error_rate: float, ok: bool) -> None:
    prom = FakeProm({"query": {"resultType": "vector", "result": [{"metric": {}, "value": [1, str(error_rate)]}]},
                     "alerts": {"alerts": []}})
    env, _, _ = live(cluster_responses(), prom,
                     slos={"error_rate": (DEFAULT_SLOS["error_rate"][0], 0.02)})
    obs, _ = env.reset()
    assert "incident reported" in obs.text  # no firing alert to page with
    for action in ScriptedAgent.SCRIPT:
        obs, *_ = env.step(action)
    r = env.result
    assert r["mitigated"] is ok and r["mitigation"]["slo_ok"] is ok
    assert r["mitigation"]["slo_worst"] == {"error_rate": error_rate}
    assert prom.params()["query"] == DEFAULT_SLOS["error_rate"][0].format(ns=NS)
    if not ok:
        assert r["mitigation"]["reasons"] == ["SLO error_rate is 0.2, above 0.02"]


def test_page_comes_from_a_firing_alert() -> None:
    prom = FakeProm({"alerts": {"alerts": [{"labels": {"alertname": "HighErrorRate", "severity": "critical"},
                                            "annotations": {"summary": "5xx at 9%"}, "state": "firing",
                                            "activeAt": "t"}]}})
    env, _, _ = live(cluster_responses(), prom)
    obs, _ = env.reset()
    assert obs.text.startswith("PAGE: [FIRING critical] HighErrorRate: 5xx at 9%")
    assert env.briefing.page.startswith("[FIRING critical] HighErrorRate")


def test_budgets_truncate_and_backend_failures_do_not_crash() -> None:
    responses = cluster_responses()
    responses["core.list_namespaced_event"] = None  # a malformed answer: .items on None
    env, _, _ = live(responses, steps=3)
    env.reset()
    obs, _, term, trunc, _ = env.step("kubectl get events")
    assert not obs.ok and obs.error.startswith("backend error: AttributeError")
    obs, _, term, trunc, _ = env.step("kubectl get pods")
    assert obs.ok and not (term or trunc) and obs.steps_left == 1
    obs, _, term, trunc, info = env.step("kubectl get pods")
    assert trunc and not term and info["result"]["truncated"] and info["result"]["backend_errors"] == 1
    assert info["result"]["invalid_actions"] == 0
    obs, *_ = env.step("kubectl get pods")
    assert obs.error == "episode has ended"
    with pytest.raises(RuntimeError, match="no ground truth"):
        env.oracle_plan()


def test_cli_run_against_a_namespace(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    calls: list = []
    responses = cluster_responses()
    monkeypatch.setattr(KubernetesBackend, "_connect", staticmethod(
        lambda kubeconfig, context, core, apps: (Recorder("core", calls, responses), Recorder("apps", calls, responses))))
    monkeypatch.setattr("srezero.backends.k8s.time.sleep", lambda s: None)
    out = CliRunner().invoke(cli, ["run", "--backend", "k8s", "--namespace", NS, "--agent", "k8s_fakes:ScriptedAgent",
                                   "--out", str(tmp_path / "rec.json"), "--promql", "queue_depth=sum(x)"])
    assert out.exit_code == 0, out.output
    assert f"{NS} (live)" in out.output and "mitigated=True" in out.output and "get_traces is not supported" in out.output
    rec = orjson.loads((tmp_path / "rec.json").read_bytes())
    assert rec["result"]["namespace"] == NS and rec["agent"] == "k8s_fakes:ScriptedAgent"
    bad = CliRunner().invoke(cli, ["run", "--backend", "k8s", "--agent", "oracle", "--namespace", NS])
    assert bad.exit_code != 0 and "ground truth" in bad.output
    bad = CliRunner().invoke(cli, ["run", "--backend", "k8s"])
    assert bad.exit_code != 0 and "--namespace" in bad.output
    bad = CliRunner().invoke(cli, ["run", "--backend", "k8s", "--namespace", NS, "--promql", "nonsense"])
    assert bad.exit_code != 0 and "NAME=EXPR" in bad.output
