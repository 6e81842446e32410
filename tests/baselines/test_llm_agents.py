"""LLM agents against a scripted local OpenAI-compatible server (see conftest.py)."""

from __future__ import annotations

import json
import socket

import orjson
import pytest

import srezero
from srezero.agents import registry
from srezero.agents.protocol import ProviderError
from srezero.agents.runner import run_episode
from srezero.sweep import runner

FAST = {"backoff_s": 0.01, "timeout_s": 2.0}
DIAGNOSIS = json.dumps({"root_causes": [{"entity": "worker.env.DATABASE_URL", "category": "misconfiguration",
                                         "detail": "DATABASE_URL is empty"}]})


def play(name: str, fake, episode_seed: int = 1, **options) -> dict:
    agent = registry.create(name, model="test-model", base_url=fake.base_url, **{**FAST, **options})
    return run_episode(srezero.make("inc-001", episode_seed), agent, episode_seed, catch=True)


def test_react_tool_calls_malformed_calls_and_usage(fake_openai, tmp_path):
    prices = tmp_path / "prices.json"
    prices.write_bytes(orjson.dumps({"test-model": {"prompt": 1.0, "completion": 2.0}}))
    fake_openai.script = [
        {"tool_calls": [("get_alerts", "{}")]},
        {"tool_calls": [("search_logs", '{"service": "worker", ')]},  # truncated JSON
        {"tool_calls": [("reboot_everything", "{}")]},  # no such tool
        {"content": "I am not sure what to do."},  # no tool call at all
        {"tool_calls": [("submit_diagnosis", DIAGNOSIS), ("resolve", "{}")]},  # two calls in one reply
    ]
    rec = play("llm-react", fake_openai, temperature=0.3, seed=11, price_table=str(prices))
    assert rec["status"] == "ok"
    tools = [t["tool"] for t in rec["trajectory"]]
    assert tools == ["get_alerts", None, None, None, "submit_diagnosis", "resolve"]
    assert rec["result"]["invalid_actions"] == 3
    assert rec["result"]["diagnosis"]["score"] >= 0.99  # the right claim still counts after model failures
    u = rec["usage"]
    assert (u["calls"], u["malformed"], u["provider_errors"]) == (5, 3, 0)
    assert (u["prompt_tokens"], u["completion_tokens"]) == (500, 50)
    assert u["cost_usd"] == pytest.approx((500 * 1.0 + 50 * 2.0) / 1e6)
    first = fake_openai.requests[0]
    assert first["temperature"] == 0.3 and first["seed"] == 11 and first["model"] == "test-model"
    assert {t["function"]["name"] for t in first["tools"]} >= {"get_alerts", "submit_diagnosis", "resolve"}
    # the model sees the error of its malformed call as the tool result
    second = fake_openai.requests[2]["messages"]
    assert second[-1]["role"] == "tool" and "error" in second[-1]["content"]


def test_prompt_agent_parses_text_calls(fake_openai):
    fake_openai.script = [
        {"content": "Let me look at the alerts first.\nACTION: get_alerts()"},
        {"content": "ACTION: search_logs(service='worker', pattern='DATABASE_URL')"},
        {"content": "Hmm, the worker is unhappy."},  # no action line: an invalid action
        {"content": "ACTION: search_logs(service=worker)"},  # not a literal: an invalid action
        {"content": f"ACTION: submit_diagnosis(**{DIAGNOSIS})"},  # star-args are rejected too
        {"content": "ACTION: resolve()"},
    ]
    rec = play("llm-prompt", fake_openai, seed=None)
    assert rec["status"] == "ok", rec["error"]
    tools = [t["tool"] for t in rec["trajectory"]]
    assert tools == ["get_alerts", "search_logs", None, None, None, "resolve"]
    assert rec["usage"]["malformed"] == 3 and rec["result"]["invalid_actions"] == 3
    assert fake_openai.requests[0]["seed"] == 1  # the episode seed when none is fixed
    assert "tools" not in fake_openai.requests[0]
    assert "submit_diagnosis(" in fake_openai.requests[0]["messages"][0]["content"]


def test_retries_on_429_500_and_timeouts(fake_openai):
    fake_openai.script = [
        {"status": 429, "headers": {"Retry-After": "0"}},
        {"status": 500},
        {"status": 503},
        {"sleep": 1.0, "tool_calls": [("get_alerts", "{}")]},  # longer than the client timeout
        {"tool_calls": [("get_alerts", "{}")]},
    ]
    rec = play("llm-react", fake_openai, timeout_s=0.4, max_retries=4)
    assert rec["status"] == "ok"
    u = rec["usage"]
    assert (u["provider_errors"], u["retries"], u["calls"]) == (4, 4, 2)
    assert rec["result"]["invalid_actions"] == 0
    assert [t["tool"] for t in rec["trajectory"]] == ["get_alerts", "resolve"]


def test_provider_failure_is_recorded_not_raised(fake_openai):
    fake_openai.script = [{"tool_calls": [("get_alerts", "{}")]}] + [{"status": 500}] * 3
    rec = play("llm-react", fake_openai, max_retries=2)
    assert rec["status"] == "provider_error" and rec["result"] is None
    assert "InternalServerError" in rec["error"] and "HTTP 500" in rec["error"]
    assert rec["usage"]["provider_errors"] == 3 and rec["usage"]["retries"] == 2
    assert len(rec["trajectory"]) == 1  # what happened before the failure is kept
    with pytest.raises(ProviderError):  # outside a sweep the failure propagates
        play_uncaught = registry.create("llm-react", model="m", base_url=fake_openai.base_url, max_retries=0, **FAST)
        fake_openai.script = [{"status": 502}]
        run_episode(srezero.make("inc-001", 0), play_uncaught, 0)


def test_non_retryable_status_and_refused_connection(fake_openai):
    fake_openai.script = [{"status": 401}]
    rec = play("llm-prompt", fake_openai)
    assert rec["status"] == "provider_error" and "HTTP 401" in rec["error"]
    assert len(fake_openai.requests) == 1  # not retried
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"  # bound, not listening: connection refused
        agent = registry.create("llm-react", model="m", base_url=dead, max_retries=1, **FAST)
        rec = run_episode(srezero.make("inc-001", 0), agent, 0, catch=True)
    assert rec["status"] == "provider_error" and "APIConnectionError" in rec["error"]


def test_sweep_with_llm_agent_keeps_going_and_separates_provider_errors(fake_openai, tmp_path):
    fake_openai.script = [{"status": 500}] * 2  # the first episode exhausts its retries
    specs = {"inc-001": srezero.get_task("inc-001")}
    agent = runner.agent_spec("llm-react", model="test-model", base_url=fake_openai.base_url, max_retries=1,
                              **FAST)
    assert agent.label == "llm-react@test-model"
    res = runner.sweep(tmp_path, [agent], specs, [0, 1, 2], workers=1, progress=False)
    statuses = [r["status"] for r in sorted(res.rows, key=lambda r: r["seed"])]
    assert statuses == ["provider_error", "ok", "ok"]
    group = next(g for g in res.summary["groups"] if g["task"] == "*")
    assert group["provider_errors"] == 1 and group["n"] == 3  # every episode counts; the failed one scores 0
    # one completion per ok episode; the failed one used no tokens but still counts (spend is spend)
    assert group["metrics"]["tokens"]["mean"] == pytest.approx(220.0 / 3, abs=1e-5)
    assert group["metrics"]["tokens"]["n"] == 3
    rec = orjson.loads((tmp_path / "episodes" / agent.label / "inc-001" / "seed-0001.json").read_bytes())
    assert set(rec["usage"]) >= {"latency_s", "prompt_tokens", "completion_tokens", "cost_usd", "provider_errors"}
    manifest = orjson.loads((tmp_path / "manifest.json").read_bytes())
    assert manifest["agents"][agent.label]["settings"]["model"] == "test-model"
    # rerunning with --retry-errors retries only the failed episode
    res2 = runner.sweep(tmp_path, [agent], specs, [0, 1, 2], workers=1, progress=False, retry_errors=True)
    assert (res2.ran, res2.skipped) == (1, 2)
    assert all(r["status"] == "ok" for r in res2.rows)


def test_llm_agents_need_a_model():
    with pytest.raises(ValueError, match="model"):
        registry.create("llm-react")
