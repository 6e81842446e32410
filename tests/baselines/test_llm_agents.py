"""LLM agents against a scripted local OpenAI-compatible server (see conftest.py)."""

from __future__ import annotations

import json
import socket
import threading

import orjson
import pytest

import srezero
from baselines import llm
from srezero.agents import registry
from srezero.agents.protocol import ProviderError, agent_seed
from srezero.agents.runner import run_episode
from srezero.sweep import runner

FAST = {"backoff_s": 0.01, "timeout_s": 2.0}
DIAGNOSIS = json.dumps({"root_causes": [{"entity": "worker.env.DATABASE_URL", "category": "misconfiguration",
                                         "detail": "DATABASE_URL is empty"}]})


def play(name: str, fake, episode_seed: int = 1, model_name: str = "test-model", **options) -> dict:
    agent = registry.create(name, model=model_name, base_url=fake.base_url, **{**FAST, **options})
    return run_episode(srezero.make("inc-001", episode_seed), agent, episode_seed, catch=True)


def completion_bytes(model: str, content: str | None = None, calls: list[tuple[str, str]] | None = None) -> bytes:
    message: dict = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [{"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": a}}
                                 for i, (n, a) in enumerate(calls)]
    return json.dumps({"id": "chatcmpl-raw", "object": "chat.completion", "created": 0, "model": model,
                       "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}}).encode()


def test_react_tool_calls_malformed_calls_and_usage(fake_openai, tmp_path):
    prices = tmp_path / "prices.json"
    prices.write_bytes(orjson.dumps({"test-model": {"prompt": 1.0, "completion": 2.0}}))
    fake_openai.script = [
        {"tool_calls": [("get_status", '{"service": "worker"}')]},  # shows the crash loop: evidence
        {"tool_calls": [("search_logs", '{"service": "worker", ')]},  # truncated JSON
        {"tool_calls": [("reboot_everything", "{}")]},  # no such tool
        {"content": "I am not sure what to do."},  # no tool call at all
        {"tool_calls": [("submit_diagnosis", DIAGNOSIS), ("resolve", "{}")]},  # two calls in one reply
    ]
    rec = play("llm-react", fake_openai, temperature=0.3, seed=11, price_table=str(prices))
    assert rec["status"] == "ok"
    tools = [t["tool"] for t in rec["trajectory"]]
    assert tools == ["get_status", "search_logs", None, None, "submit_diagnosis", "resolve"]  # a known tool is named
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
    assert fake_openai.requests[0]["seed"] == agent_seed(1)  # the seed it is handed when none is fixed
    assert "tools" not in fake_openai.requests[0]
    assert "submit_diagnosis(" in fake_openai.requests[0]["messages"][0]["content"]


def test_prompt_agent_reads_markdown_and_says_how_it_read_the_last_reply(fake_openai):
    fake_openai.script = [
        {"content": "**ACTION:** `get_alerts()`"},  # Markdown around the action line
        {"content": "ACTION: get_status()\nACTION: get_changes()"},  # two actions: only the last runs
        {"content": "The worker looks unhappy."},  # no action line
        {"content": ""},  # an empty reply
        {"content": "ACTION: resolve()"},
    ]
    rec = play("llm-prompt", fake_openai, seed=None)
    assert [t["tool"] for t in rec["trajectory"]] == ["get_alerts", "get_changes", None, None, "resolve"]
    said = [r["messages"][-1]["content"] for r in fake_openai.requests]
    assert "had 2 ACTION lines; only the last was run" in said[2]
    assert "Your last reply had no action: end each reply with one line ACTION:" in said[3]
    assert "empty action" in said[4] and "(no tool call)" not in said[4]


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


def test_react_offers_the_model_only_the_tools_it_is_handed(fake_openai):
    """A live backend serves fewer tools, in its own words: the model must not be offered the others."""
    specs = [s for s in srezero.tool_specs() if s["name"] in ("get_alerts", "restart", "submit_diagnosis", "resolve")]
    specs[1] = {**specs[1], "description": "kubectl rollout restart of a deployment"}
    fake_openai.script = [{"tool_calls": [("get_alerts", "{}")]}]
    agent = registry.create("llm-react", model="m", base_url=fake_openai.base_url, **FAST)
    env = srezero.make("inc-001", 0)
    obs, _ = env.reset()
    agent.reset(env.briefing, 0, specs)
    assert agent.act(obs)["name"] == "get_alerts"
    offered = fake_openai.requests[0]["tools"]
    assert [t["function"]["name"] for t in offered] == [s["name"] for s in specs]
    assert offered[1]["function"]["description"] == "kubectl rollout restart of a deployment"


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


# ---------------------------------------------------------------------------- raw endpoint behaviour
class RawEndpoint:
    """An endpoint that answers with scripted raw bodies (what FakeOpenAI cannot send: non-JSON, wrong
    shapes, a dropped connection) and keeps each request's headers and body. When the script runs out
    it answers a valid completion with a resolve call."""

    def __init__(self, script: list[tuple[int, bytes]]) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.script = list(script)
        self.requests: list[tuple[dict, dict]] = []
        raw = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                raw.requests.append(({k.lower(): v for k, v in self.headers.items()}, body))
                if raw.script:
                    status, data = raw.script.pop(0)
                else:
                    status, data = 200, completion_bytes(body.get("model", "m"), "ACTION: resolve()",
                                                         [("resolve", "{}")] if body.get("tools") else None)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                length = len(data) if data != b"DROP" else 1000  # DROP: promise a body, then hang up
                self.send_header("Content-Length", str(length))
                self.end_headers()
                if data != b"DROP":
                    self.wfile.write(data)
                else:
                    self.wfile.write(b'{"id": "x", "choi')
                    self.wfile.flush()
                    self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> RawEndpoint:
        pytest.importorskip("openai")
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


BROKEN_RESPONSES = {
    "not json": b"this is not json",
    "a JSON list": b"[]",
    "a JSON string": b'"hello"',
    "no choices": b'{"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": []}',
    "null choices": b'{"id": "x", "choices": null}',
    "a choice without a message": b'{"id": "x", "choices": [{"index": 0, "message": null}]}',
    "tool_calls not a list": b'{"choices": [{"message": {"role": "assistant", "tool_calls": "get_alerts()"}}]}',
}


@pytest.mark.parametrize("name", ["llm-react", "llm-prompt"])
@pytest.mark.parametrize("what", sorted(BROKEN_RESPONSES))
def test_a_broken_response_is_a_provider_error_not_an_agent_error(name, what):
    """A 200 whose body is not a chat completion is the endpoint's failure (it was an agent_error)."""
    with RawEndpoint([(200, BROKEN_RESPONSES[what])]) as ep:
        agent = registry.create(name, model="m", base_url=ep.base_url, max_retries=0, **FAST)
        rec = run_episode(srezero.make("inc-001", 0), agent, 0, catch=True)
    assert rec["status"] == "provider_error", rec["error"]
    assert rec["error"].startswith("ProviderError: ")
    assert rec["usage"]["provider_errors"] == 1 and rec["trajectory"] == []


def test_a_dropped_connection_is_retried_then_a_provider_error():
    with RawEndpoint([(200, b"DROP")] * 2) as ep:
        agent = registry.create("llm-react", model="m", base_url=ep.base_url, max_retries=1, **FAST)
        rec = run_episode(srezero.make("inc-001", 0), agent, 0, catch=True)
    assert rec["status"] == "provider_error", rec["error"]
    assert (rec["usage"]["provider_errors"], rec["usage"]["retries"]) == (2, 1)


def test_odd_usage_and_tool_calls_are_read_not_fatal():
    """Token counts that are not numbers count 0; a tool call without a function is the model's
    malformed call (an invalid action), not a crash."""
    odd = json.dumps({"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [
        {"id": "a", "type": "function", "function": None}]}, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": "many", "completion_tokens": None}}).encode()
    with RawEndpoint([(200, odd)]) as ep:
        agent = registry.create("llm-react", model="m", base_url=ep.base_url, max_retries=0, **FAST)
        rec = run_episode(srezero.make("inc-001", 0), agent, 0, catch=True)
    assert rec["status"] == "ok", rec["error"]
    assert rec["result"]["invalid_actions"] == 1 and rec["usage"]["malformed"] == 1
    assert rec["usage"]["prompt_tokens"] == 100  # only the second (valid) reply's count


# ---------------------------------------------------------------------------- the model's raw replies
def test_records_keep_the_model_reply_behind_each_action(fake_openai):
    long = "x" * (llm.MAX_REPLY_CHARS + 50)
    fake_openai.script = [
        {"content": "The alerts come first.\nACTION: get_alerts()"},
        {"content": "I am not sure."},
        {"content": long + "\nACTION: resolve()"},
    ]
    rec = play("llm-prompt", fake_openai)
    replies = [t["model_reply"] for t in rec["trajectory"]]
    assert replies[0] == {"content": "The alerts come first.\nACTION: get_alerts()", "finish_reason": "stop"}
    assert replies[1]["content"] == "I am not sure."  # the model failure, readable afterwards
    assert len(replies[2]["content"]) < llm.MAX_REPLY_CHARS + 100 and "more characters" in replies[2]["content"]

    fake_openai.script = [
        {"content": "Checking alerts.", "tool_calls": [("get_alerts", "{}")]},
        {"content": "Now I know.", "tool_calls": [("submit_diagnosis", DIAGNOSIS), ("resolve", "{}")]},
    ]
    rec = play("llm-react", fake_openai)
    steps = rec["trajectory"]
    assert steps[0]["model_reply"] == {"content": "Checking alerts.", "finish_reason": "tool_calls",
                                       "tool_calls": [{"id": "call_0", "name": "get_alerts", "arguments": "{}"}]}
    assert [c["name"] for c in steps[1]["model_reply"]["tool_calls"]] == ["submit_diagnosis", "resolve"]
    assert "model_reply" not in steps[2]  # the reply's second call runs as the next step
    assert steps[2]["tool"] == "resolve"


def test_deterministic_agents_records_have_no_model_reply():
    rec = run_episode(srezero.make("inc-001", 0), registry.create("runbook"), 0, catch=True)
    assert all("model_reply" not in t for t in rec["trajectory"])


# ---------------------------------------------------------------------------- reasoning models
@pytest.mark.parametrize("model, expected", [
    ("o1", True), ("o1-mini", True), ("o3", True), ("o3-mini-2025-01-31", True), ("o4-mini", True),
    ("gpt-5", True), ("gpt-5-mini", True), ("openai/o3", True), ("gpt-4o", False), ("gpt-4o-mini", False),
    ("gpt-4.1", False), ("olmo-2", False), ("gpt-50", False), ("qwen2.5", False), ("o", False),
])
def test_reasoning_models_by_name(model, expected):
    assert llm.is_reasoning_model(model) is expected


def test_reasoning_models_get_max_completion_tokens_and_no_temperature(fake_openai):
    play("llm-react", fake_openai, model_name="o3-mini")
    body = fake_openai.requests[0]
    assert body["max_completion_tokens"] == llm.DEFAULT_MAX_TOKENS_REASONING
    assert "max_tokens" not in body and "temperature" not in body
    fake_openai.requests.clear()
    play("llm-prompt", fake_openai, model_name="o3-mini", reasoning_model=False, temperature=0.5, max_tokens=77)
    body = fake_openai.requests[0]
    assert (body["max_tokens"], body["temperature"]) == (77, 0.5) and "max_completion_tokens" not in body
    fake_openai.requests.clear()
    play("llm-react", fake_openai, model_name="my-thinker", reasoning_model=True, max_tokens=500)
    assert fake_openai.requests[0]["max_completion_tokens"] == 500 and "temperature" not in fake_openai.requests[0]
    settings = registry.create("llm-react", model="my-thinker", reasoning_model=True).settings()
    assert settings["reasoning_model"] is True and settings["temperature"] is None
    with pytest.raises(ValueError, match="default temperature"):
        registry.create("llm-react", model="o3", temperature=0.2)


def test_extra_body_reaches_the_endpoint_and_cannot_override_the_agents_own_fields(fake_openai):
    play("llm-react", fake_openai, extra_body='{"top_k": 20, "chat_template_kwargs": {"thinking": false}}')
    body = fake_openai.requests[0]
    assert body["top_k"] == 20 and body["chat_template_kwargs"] == {"thinking": False}
    assert body["temperature"] == 0.0 and body["model"] == "test-model"
    agent = registry.create("llm-prompt", model="m", extra_body={"top_k": 20})
    assert agent.settings()["extra_body"] == {"top_k": 20}  # recorded in the manifest
    for bad, says in (('{"temperature": 1}', "cannot set temperature"), ("[1]", "JSON object, not list"),
                      ("{top_k: 1}", "must be a JSON object")):
        with pytest.raises(ValueError, match=says):
            registry.create("llm-react", model="m", extra_body=bad)


# ---------------------------------------------------------------------------- the command line
def cli_run(*args: str):
    from click.testing import CliRunner

    from srezero.cli import cli

    return CliRunner().invoke(cli, list(args))


@pytest.mark.parametrize("script", [[{"status": 401}], [{"status": 500}] * 5])
def test_run_reports_a_provider_failure_in_one_line_and_keeps_the_record(fake_openai, tmp_path, monkeypatch, script):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    fake_openai.script = list(script)
    out = tmp_path / "rec.json"
    res = cli_run("run", "--task", "inc-001", "--agent", "llm-react", "--model", "test-model", "--quiet",
                  "--base-url", fake_openai.base_url, "--out", str(out))
    assert res.exit_code == 1, res.output
    assert "Traceback" not in res.output and isinstance(res.exception, SystemExit)  # click's exit, not a crash
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: inc-001 seed=0 agent=llm-react@test-model: provider_error: ")
    assert f"record written to {out}" in lines[0]
    rec = orjson.loads(out.read_bytes())
    assert rec["status"] == "provider_error" and rec["result"] is None and "HTTP " in rec["error"]


def test_run_records_are_sweep_records_and_can_be_reported_together(fake_openai, tmp_path, monkeypatch):
    """Same label (llm-react@<model>), schema, agent_name and task_hash as the sweep's record, so
    `srezero report` reads a directory of run --out files with two models (it used to refuse)."""
    from srezero.report.load import load_run
    from srezero.sweep import records

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    loose = tmp_path / "loose"
    for model in ("model-a", "model-b"):
        res = cli_run("run", "--task", "inc-001", "--agent", "llm-react", "--model", model, "--quiet",
                      "--base-url", fake_openai.base_url, "--out", str(loose / f"{model}.json"))
        assert res.exit_code == 0, res.output
    rec = orjson.loads((loose / "model-a.json").read_bytes())
    agent = runner.agent_spec("llm-react", model="model-a", base_url=fake_openai.base_url)
    spec = srezero.get_task("inc-001")
    swept = orjson.loads(records.dumps(runner.episode_record(spec, records.task_hash(spec), agent, 0, None)))
    for r in (rec, swept):
        r["usage"].pop("latency_s")
    assert rec == swept
    assert (rec["agent"], rec["agent_name"], rec["schema"]) == ("llm-react@model-a", "llm-react", records.SCHEMA)
    assert load_run(loose).agents == ["llm-react@model-a", "llm-react@model-b"]


def test_run_takes_the_sweeps_llm_options(fake_openai, tmp_path, monkeypatch):
    from srezero.commands.llm_options import PARAMS
    from srezero.commands.run import run_cmd
    from srezero.commands.sweep import sweep_cmd

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    llm_params = {p for p, _ in PARAMS}
    for cmd in (run_cmd, sweep_cmd):
        assert llm_params <= {p.name for p in cmd.params}, cmd.name
    prices = tmp_path / "prices.json"
    prices.write_bytes(orjson.dumps({"test-model": {"prompt": 1.0, "completion": 2.0}}))
    res = cli_run("run", "--task", "inc-001", "--agent", "llm-prompt", "--model", "test-model", "--json",
                  "--base-url", fake_openai.base_url, "--temperature", "0.4", "--llm-seed", "9", "--max-tokens", "99",
                  "--price-table", str(prices), "--extra-body", '{"top_p": 0.9}')
    assert res.exit_code == 0, res.output
    body = fake_openai.requests[0]
    assert (body["temperature"], body["seed"], body["max_tokens"], body["top_p"]) == (0.4, 9, 99, 0.9)
    assert orjson.loads(res.stdout)["usage"]["cost_usd"] == pytest.approx((100 * 1.0 + 10 * 2.0) / 1e6)
    fake_openai.requests.clear()
    res = cli_run("run", "--task", "inc-001", "--agent", "llm-react", "--model", "o4-mini", "--quiet",
                  "--base-url", fake_openai.base_url)
    assert res.exit_code == 0, res.output
    assert "max_completion_tokens" in fake_openai.requests[0] and "temperature" not in fake_openai.requests[0]
    res = cli_run("run", "--task", "inc-001", "--agent", "llm-react", "--model", "o4-mini", "--quiet",
                  "--base-url", fake_openai.base_url, "--temperature", "0.3")
    assert res.exit_code != 0 and "--no-reasoning-model" in res.output


# ---------------------------------------------------------------------------- the API key
def test_the_openai_key_is_not_sent_to_another_endpoint_unless_named(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-openai-key")
    monkeypatch.setenv("MY_ENDPOINT_KEY", "sk-for-my-endpoint")
    with RawEndpoint([]) as ep:
        base = ["run", "--task", "inc-001", "--agent", "llm-react", "--model", "m", "--quiet", "--base-url", ep.base_url]
        assert cli_run(*base).exit_code == 0
        assert cli_run(*base, "--api-key-env", "MY_ENDPOINT_KEY").exit_code == 0
        assert cli_run(*base, "--api-key-env", "OPENAI_API_KEY").exit_code == 0  # sent when asked to
    auth = [headers.get("authorization") for headers, _ in ep.requests]
    assert auth == ["Bearer EMPTY", "Bearer sk-for-my-endpoint", "Bearer sk-real-openai-key"]


def test_openai_base_url_counts_as_base_url_and_never_carries_the_openai_key(tmp_path, monkeypatch):
    """The SDK reads OPENAI_BASE_URL by itself: unchecked, the real key went there and the manifest said
    the OpenAI API was used."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-openai-key")
    with RawEndpoint([]) as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        res = cli_run("sweep", "--agents", "llm-react", "--model", "m", "--tasks", "inc-001", "--seeds", "1",
                      "--workers", "1", "--no-progress", "--no-probe", "--out", str(tmp_path / "run"))
        assert res.exit_code == 0, res.output
    assert ep.requests and {headers.get("authorization") for headers, _ in ep.requests} == {"Bearer EMPTY"}
    manifest = orjson.loads((tmp_path / "run" / "manifest.json").read_bytes())
    assert manifest["agents"]["llm-react@m"]["settings"]["base_url"] == ep.base_url


def test_a_missing_key_fails_before_any_episode(tmp_path, monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    with RawEndpoint([]) as ep:
        res = cli_run("run", "--task", "inc-001", "--agent", "llm-react", "--model", "m", "--base-url", ep.base_url,
                      "--api-key-env", "NO_SUCH_KEY_VAR", "--out", str(tmp_path / "rec.json"))
        assert res.exit_code == 1 and "NO_SUCH_KEY_VAR is not set" in res.output, res.output
        assert "Traceback" not in res.output and not (tmp_path / "rec.json").exists()
        res = cli_run("sweep", "--agents", "llm-react,llm-prompt", "--model", "m", "--base-url", ep.base_url,
                      "--api-key-env", "NO_SUCH_KEY_VAR", "--tasks", "inc-001", "--seeds", "2", "--workers", "1",
                      "--no-progress", "--out", str(tmp_path / "run"))
        assert res.exit_code == 1 and "agent llm-react@m: " in res.output and "NO_SUCH_KEY_VAR" in res.output
        assert not (tmp_path / "run").exists()  # no episode recorded as an agent error
    assert ep.requests == []


def test_the_manifest_records_the_key_variable_never_the_key(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_ENDPOINT_KEY", "sk-secret-value")
    with RawEndpoint([]) as ep:
        res = cli_run("sweep", "--agents", "llm-react", "--model", "m", "--base-url", ep.base_url,
                      "--api-key-env", "MY_ENDPOINT_KEY", "--tasks", "inc-001", "--seeds", "1", "--workers", "1",
                      "--no-progress", "--out", str(tmp_path / "run"))
        assert res.exit_code == 0, res.output
    assert ep.requests[0][0]["authorization"] == "Bearer sk-secret-value"
    manifest = orjson.loads((tmp_path / "run" / "manifest.json").read_bytes())
    agent = manifest["agents"]["llm-react@m"]
    assert agent["settings"]["api_key_env"] == agent["options"]["api_key_env"] == "MY_ENDPOINT_KEY"
    for path in (tmp_path / "run").rglob("*"):
        assert path.is_dir() or b"sk-secret-value" not in path.read_bytes(), path


# ---------------------------------------------------------------------------- the probe before a sweep
def test_a_sweep_probes_each_endpoint_once_and_stops_on_a_bad_model(fake_openai, tmp_path):
    """A wrong model name fails one request up front, not every episode; --no-probe skips the request."""
    args = ["sweep", "--agents", "llm-react,llm-prompt", "--model", "no-such-model", "--base-url",
            fake_openai.base_url, "--tasks", "inc-001", "--seeds", "1", "--workers", "1", "--no-progress"]
    fake_openai.script = [{"status": 404}]
    res = cli_run(*args, "--out", str(tmp_path / "bad"))
    assert res.exit_code == 1 and "a probe request to http://127.0.0.1" in res.output, res.output
    assert "model 'no-such-model' failed" in res.output and "--no-probe" in res.output
    assert len(fake_openai.requests) == 1 and not (tmp_path / "bad").exists()

    fake_openai.requests.clear()
    res = cli_run(*args, "--out", str(tmp_path / "good"))
    assert res.exit_code == 0, res.output
    probes = [r for r in fake_openai.requests if "tools" not in r and len(r["messages"]) == 1]
    assert len(probes) == 1  # both agents share the endpoint, model and settings: probed once
    fake_openai.requests.clear()
    res = cli_run(*args, "--no-probe", "--out", str(tmp_path / "unprobed"))
    assert res.exit_code == 0 and len(fake_openai.requests) == 2  # one resolve per episode, no probe
