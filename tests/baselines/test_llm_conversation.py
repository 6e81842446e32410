"""The LLM agents' conversation over a whole episode: its size, the model's context, the prompt, clipped
observations, cut replies, prices and quota, against a local endpoint that checks conversations the way
the OpenAI API does (every tool call answered) and can have a small context window."""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import Any

import orjson
import pytest

import srezero
from baselines import _llm_prompt, _llm_transport, llm
from srezero.agents import registry
from srezero.agents.runner import run_episode
from srezero.faults.base import CATEGORIES

FAST = {"backoff_s": 0.001, "timeout_s": 5.0}
READS = [("search_logs", '{"service": "web_server", "limit": 200}'), ("get_topology", "{}"),
         ("get_traces", '{"limit": 20}'), ("get_events", '{"limit": 200}'), ("get_changes", "{}")]


def unanswered_calls(messages: list[dict[str, Any]]) -> list[str]:
    """What the OpenAI API refuses: a tool call without its tool message before the next turn, or a
    tool message that answers no call."""
    problems, open_ids = [], []
    for m in messages:
        if m["role"] == "tool":
            if m.get("tool_call_id") not in open_ids:
                problems.append(f"tool message for unknown id {m.get('tool_call_id')}")
            else:
                open_ids.remove(m["tool_call_id"])
            continue
        if open_ids:
            problems.append(f"unanswered tool calls {open_ids}")
            open_ids = []
        open_ids = [c["id"] for c in m.get("tool_calls") or []]
        if len(set(open_ids)) < len(open_ids):
            problems.append(f"duplicate tool call ids {open_ids}")
    return problems


class Endpoint:
    """A chat-completions endpoint with a context ``window`` (characters of the request's messages) and
    a script of steps: ``{"calls": [(name, args)], "content": ..., "finish_reason": ...}`` or
    ``{"status": 429, "code": "insufficient_quota"}``. Past the script it answers a resolve call."""

    def __init__(self, script: list[dict[str, Any]] | None = None, window: int | None = None) -> None:
        self.script = list(script or [])
        self.window = window
        self.requests: list[dict[str, Any]] = []
        self.sizes: list[int] = []
        self.lock = threading.Lock()
        ep = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                status, payload = ep.answer(body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self.lock:
            self.requests.append(body)
            chars = len(json.dumps(body["messages"]))
            self.sizes.append(chars)
            problems = unanswered_calls(body["messages"])
            if problems:
                return 400, {"error": {"message": "; ".join(problems), "type": "invalid_request_error",
                                       "param": "messages", "code": None}}
            if self.window is not None and chars > self.window:
                return 400, {"error": {"message": f"This model's maximum context length is {self.window} "
                                                  f"characters. However, your messages resulted in {chars}.",
                                       "type": "invalid_request_error", "param": "messages",
                                       "code": "context_length_exceeded"}}
            step = self.script.pop(0) if self.script else {"calls": [("resolve", "{}")],
                                                           "content": "ACTION: resolve()"}
        if step.get("status"):
            return step["status"], {"error": {"message": "scripted", "type": "x", "code": step.get("code")}}
        ids = step.get("ids") or [f"call_{len(self.requests)}_{i}" for i in range(len(step.get("calls") or []))]
        calls = [{"id": cid, "type": "function", "function": {"name": n, "arguments": a}}
                 for cid, (n, a) in zip(ids, step.get("calls") or [])] if body.get("tools") else []
        message: dict[str, Any] = {"role": "assistant", "content": step.get("content")}
        if calls:
            message["tool_calls"] = calls
        reason = step.get("finish_reason") or ("tool_calls" if calls else "stop")
        return 200, {"id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
                     "choices": [{"index": 0, "message": message, "finish_reason": reason}],
                     "usage": {"prompt_tokens": chars // 4, "completion_tokens": 10, "total_tokens": chars // 4 + 10}}

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    pytest.importorskip("openai")
    ep = Endpoint()
    thread = threading.Thread(target=ep.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield ep
    finally:
        ep.server.shutdown()
        ep.server.server_close()


def reads(n: int) -> list[dict[str, Any]]:
    """``n`` replies with one large read each, as a native call and as a text call."""
    out = []
    for i in range(n):
        name, args = READS[i % len(READS)]
        text = ", ".join(f"{k}={v!r}" for k, v in json.loads(args).items())
        out.append({"calls": [(name, args)], "content": f"Looking.\nACTION: {name}({text})"})
    return out


def play(name: str, ep: Endpoint, task: str = "inc-002", seed: int = 1, **options: Any) -> dict[str, Any]:
    agent = registry.create(name, model="m", base_url=ep.base_url, **{**FAST, **options})
    return run_episode(srezero.make(task, seed), agent, seed, catch=True)


# ---------------------------------------------------------------------------- the model's context
@pytest.mark.parametrize("name", ["llm-react", "llm-prompt"])
def test_a_context_overflow_elides_old_observations_and_the_episode_goes_on(endpoint, name):
    """A 400 context_length_exceeded used to end the episode as a provider error, which --retry-errors
    could only repeat; now the oldest observations are elided and the model carries on."""
    endpoint.window = 40_000
    endpoint.script = reads(30)
    rec = play(name, endpoint)
    assert rec["status"] == "ok", rec["error"]
    u = rec["usage"]
    assert u["provider_errors"] == 0 and u["context_overflows"] >= 1 and u["elided"] > 0
    assert "stop_reason" not in u
    assert len(rec["trajectory"]) == 31 and rec["trajectory"][-1]["tool"] == "resolve"
    last = endpoint.requests[-1]["messages"]
    assert _llm_prompt.ELIDED in [m["content"] for m in last]
    assert last[0]["role"] == "system" and last[1]["content"].startswith("PAGE ")  # the prompt and page stay
    # after the first overflow the agent keeps below what overflowed, instead of hitting it every step
    assert sum(s > endpoint.window for s in endpoint.sizes) == u["context_overflows"] <= 2


@pytest.mark.parametrize("name", ["llm-react", "llm-prompt"])
def test_a_context_too_small_for_the_prompt_stops_the_episode_as_the_models_failure(endpoint, name):
    endpoint.window = 500
    rec = play(name, endpoint)
    assert rec["status"] == "ok" and rec["result"] is not None  # scored as it stands, not retried forever
    assert rec["trajectory"] == []
    u = rec["usage"]
    assert u["stop_reason"] == "context_length_exceeded" and u["context_overflows"] == 1
    assert u["provider_errors"] == 0 and len(endpoint.requests) == 1


@pytest.mark.parametrize("name", ["llm-react", "llm-prompt"])
def test_max_context_chars_bounds_every_request(endpoint, name):
    """Without a bound the conversation grows with every step (each request resends every earlier
    observation); with ``max_context_chars`` it stays under the bound, elided in batches."""
    endpoint.script = reads(30)
    rec = play(name, endpoint)
    unbounded = [_llm_prompt.size(r["messages"]) for r in endpoint.requests]
    assert unbounded[-1] > 60_000 and unbounded == sorted(unbounded)
    endpoint.requests.clear()
    endpoint.script = reads(30)
    rec = play(name, endpoint, max_context_chars=40_000)
    bounded = [_llm_prompt.size(r["messages"]) for r in endpoint.requests]
    assert rec["status"] == "ok" and len(bounded) == len(unbounded)
    assert max(bounded) <= 40_000 and rec["usage"]["context_overflows"] == 0
    shrinks = sum(b < a for a, b in itertools.pairwise(bounded))
    assert 1 <= shrinks <= len(bounded) // 5  # in batches: a cached prompt prefix survives in between
    assert registry.create(name, model="m", max_context_chars=20_000).settings()["max_context_chars"] == 20_000


def test_elided_conversations_still_answer_every_tool_call(endpoint):
    """Parallel calls, a malformed one and elision together: the endpoint (which refuses unanswered
    tool-call ids, as the OpenAI API does) accepts every request."""
    endpoint.window = 30_000
    endpoint.script = [{"calls": [("get_topology", "{}"), ("search_logs", '{"service": "web_server", "limit": 200}'),
                                  ("no_such_tool", "{")]}, *reads(12)]
    rec = play("llm-react", endpoint)
    assert rec["status"] == "ok", rec["error"]
    assert [t["tool"] for t in rec["trajectory"][:3]] == ["get_topology", "search_logs", None]
    assert all(not unanswered_calls(r["messages"]) for r in endpoint.requests)
    assert rec["usage"]["elided"] > 0


def test_repeated_call_ids_in_one_reply_are_told_apart(endpoint):
    """Some servers number calls per reply or reuse one id; answering two calls under one id is refused."""
    endpoint.script = [{"calls": [("get_topology", "{}"), ("get_alerts", "{}")], "ids": ["call_0", "call_0"]}]
    rec = play("llm-react", endpoint)
    assert rec["status"] == "ok", rec["error"]
    assert [t["tool"] for t in rec["trajectory"][:2]] == ["get_topology", "get_alerts"]
    assert all(not unanswered_calls(r["messages"]) for r in endpoint.requests)


def test_a_valid_text_call_in_place_of_a_native_one_is_run_and_not_counted_malformed(endpoint):
    endpoint.script = [{"content": "Let me look.\nACTION: get_topology()"}, {"content": "ACTION: no_such_tool()"}]
    rec = play("llm-react", endpoint)
    assert [t["tool"] for t in rec["trajectory"][:2]] == ["get_topology", None]
    assert rec["usage"]["malformed"] == 1  # only the unknown tool
    told = [r["messages"][-1]["content"] for r in endpoint.requests[1:3]]
    assert told[0].endswith("Your last reply wrote its call as text; it was run (result above). Use a native tool call.")
    assert "Unknown tool" in told[1] or "unknown tool" in told[1]


def test_elision_never_hides_results_the_model_has_not_seen_yet(endpoint):
    """After a reply with four parallel calls, all four answers are new to the model: eliding any of them
    (the old rule kept only the last two messages) told it to repeat calls it never saw."""
    endpoint.script = [*reads(6), {"calls": [READS[i % len(READS)] for i in range(4)]}, *reads(4)]
    rec = play("llm-react", endpoint, max_context_chars=15_000)
    assert rec["status"] == "ok", rec["error"]
    assert rec["usage"]["elided"] > 0
    for request in endpoint.requests:
        messages = request["messages"]
        last_reply = max(i for i, m in enumerate(messages) if m["role"] == "assistant") if len(messages) > 2 else 1
        assert not any((m.get("content") or "").startswith("[output elided") for m in messages[last_reply:])


def test_the_same_scripted_episode_gives_the_same_record(endpoint):
    records = []
    for _ in range(2):
        endpoint.requests.clear()  # the endpoint numbers its call ids by request
        endpoint.window = 30_000
        endpoint.script = [{"status": 500}, {"calls": [("get_alerts", "{}"), ("get_status", "{}")]},
                           {"content": "thinking", "finish_reason": "length"}, *reads(10)]
        rec = play("llm-react", endpoint)
        rec["usage"].pop("latency_s")
        records.append(orjson.dumps(rec))
    assert records[0] == records[1]


# ---------------------------------------------------------------------------- observations and replies
def test_a_long_observation_keeps_its_newest_lines_and_says_what_was_cut(endpoint):
    """search_logs lists the newest lines last: the old head-only clip kept the oldest lines and hid the
    newest behind a bare '[... truncated]'."""
    endpoint.script = [{"calls": [("search_logs", '{"service": "web_server", "limit": 200}')]}]
    rec = play("llm-react", endpoint)
    env = srezero.make("inc-002", 1)
    env.reset()
    full = env.step({"name": "search_logs", "arguments": {"service": "web_server", "limit": 200}})[0].text
    assert len(full) > 6000  # longer than max_obs_chars (4000)
    seen = endpoint.requests[1]["messages"][-1]["content"]
    assert seen.startswith(full.splitlines()[0])  # the header ("79 line(s) from web_server")
    assert full.splitlines()[-1] in seen  # the newest line
    assert "characters (" in seen and "cut from the middle" in seen
    assert len(seen) < 4300 and rec["status"] == "ok"


@pytest.mark.parametrize("name", ["llm-react", "llm-prompt"])
def test_a_reply_cut_at_the_token_cap_is_explained_to_the_model(endpoint, name):
    endpoint.script = [{"calls": [("search_logs", '{"service": "web')], "content": "ACTION: search_logs(service='web",
                        "finish_reason": "length"}, *reads(1)]
    rec = play(name, endpoint, max_tokens=50)
    assert rec["trajectory"][0]["model_reply"]["finish_reason"] == "length"
    told = endpoint.requests[1]["messages"][-1]["content"]
    assert "cut at the completion token cap (50 tokens)" in told
    assert "token cap" not in endpoint.requests[2]["messages"][-1]["content"]  # said once


# ---------------------------------------------------------------------------- the prompt
@pytest.mark.parametrize("name", ["llm-react", "llm-prompt"])
def test_the_prompt_explains_the_diagnosis_format_and_taxonomy(endpoint, name):
    play(name, endpoint)
    system, page = (m["content"] for m in endpoint.requests[0]["messages"][:2])
    for cat, meaning in CATEGORIES.items():  # the scorer's taxonomy, with what each category means
        assert f"{cat}: {meaning}" in system
    assert "<service>.<key>" in system and "<node>/<device>" in system and "finer name" in system
    assert "An empty list means a false alarm" in system
    if name == "llm-react":  # the prompt's own words name no device, key or replica: examples are placeholders
        assert "nvme" not in system and "db_" not in system
    assert page.startswith("PAGE 20") and "Budget: 40 steps" in page  # the page with its time, the budget


def test_the_prompt_agent_sees_argument_choices_and_descriptions_as_the_react_agent_does(endpoint):
    play("llm-prompt", endpoint)
    system = endpoint.requests[0]["messages"][0]["content"]
    assert 'check: "dmesg"|"disk"|"top"|"limits"' in system
    assert "    window_s: look-back window in seconds (60-7200)" in system
    assert 'root_causes: [{"entity": string (at most 200 characters), "category": "misconfiguration"|' in system
    # the bounds too: an out-of-range value is an invalid action, and the native tools carry them
    assert "limit: integer (1 to 200) = 20" in system and "replicas: integer (0 to 12))" in system
    assert "window_h: number (greater than 0, at most 240) = 72.0" in system
    assert "] (at most 20 items), summary: string (at most 4000 characters)" in system


@pytest.mark.parametrize("task", ["inc-001", "inc-002", "inc-003", "inc-010", "inc-020"])
def test_the_first_request_reveals_no_ground_truth(endpoint, task):
    for name in ("llm-react", "llm-prompt"):
        endpoint.requests.clear()
        play(name, endpoint, task=task, seed=2)
        sent = json.dumps(endpoint.requests[0]).lower()
        env = srezero.make(task, 2)
        env.reset()
        secrets = {task, *(f.primitive for f in env.spec.faults)}
        for step in env.oracle_plan():
            for claim in step["args"].get("root_causes", []) if step["tool"] == "submit_diagnosis" else []:
                if "." in claim["entity"]:  # a config key: its name would give the answer away
                    secrets.add(claim["entity"].split(".", 1)[1])
        assert not [s for s in secrets if s.lower() in sent], (name, task)


# ---------------------------------------------------------------------------- transport
def test_price_tables_that_are_not_tables_of_prices_are_refused_clearly(tmp_path):
    for body, says in (("[1, 2]", "not a table of models"), ('{"m": {"prompt": "nan", "completion": 1}}', "finite"),
                       ('{"m": {"prompt": 1, "completion": -2}}', ">= 0"), ('{"m": {"prompt": 1}}', "model 'm'")):
        path = tmp_path / "prices.json"
        path.write_text(body)
        with pytest.raises(ValueError, match=r"price table .*prices\.json") as info:
            llm.load_prices(str(path))
        assert says in str(info.value)


def test_a_price_table_without_the_model_is_refused_not_priced_at_zero(tmp_path, monkeypatch):
    """Someone who passes a price table wants costs: a model it does not price (a typo, a provider
    prefix) is an error naming the table and the model, not a silent $0. Without a table it costs 0."""
    path = tmp_path / "prices.toml"
    path.write_text('[my-model]\nprompt = 1.0\ncompletion = 2.0\n')
    monkeypatch.delenv(llm.PRICE_ENV, raising=False)
    assert llm.ReActAgent(model="my-model", price_table=str(path)).settings()["price_per_mtok"] == [1.0, 2.0]
    with pytest.raises(ValueError, match=r"prices\.toml has no entry for model 'my-modle' \(it prices .*my-model"):
        llm.ReActAgent(model="my-modle", price_table=str(path))
    monkeypatch.setenv(llm.PRICE_ENV, str(path))
    with pytest.raises(ValueError, match="no entry for model 'local'"):
        llm.PromptAgent(model="local")
    monkeypatch.delenv(llm.PRICE_ENV)
    assert llm.PromptAgent(model="local").settings()["price_per_mtok"] == [0.0, 0.0]


def test_an_account_out_of_quota_is_not_retried(endpoint):
    endpoint.script = [{"status": 429, "code": "insufficient_quota"}]
    rec = play("llm-react", endpoint, max_retries=4)
    assert rec["status"] == "provider_error" and "no quota left" in rec["error"]
    assert len(endpoint.requests) == 1 and rec["usage"]["retries"] == 0


def test_retry_after_ms_and_retry_after_are_honoured_and_capped():
    def exc(**headers: str) -> Any:
        return SimpleNamespace(response=SimpleNamespace(headers=headers))

    assert _llm_transport.retry_delay(exc(**{"retry-after-ms": "5"}), 0, 10.0) == pytest.approx(0.005)
    assert _llm_transport.retry_delay(exc(**{"retry-after": "2"}), 0, 10.0) == 2.0
    assert _llm_transport.retry_delay(exc(**{"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}), 1, 0.5) == 1.0
    assert _llm_transport.retry_delay(exc(**{"retry-after": "9999"}), 0, 1.0) == _llm_transport.MAX_BACKOFF_S


def test_reasoning_models_get_a_longer_default_timeout():
    """A reasoning model may think for minutes: a 60 s timeout retried them (each retry billed) into a
    provider error."""
    assert registry.create("llm-react", model="o3").settings()["timeout_s"] == llm.DEFAULT_TIMEOUT_S_REASONING
    assert registry.create("llm-react", model="gpt-4o").settings()["timeout_s"] == llm.DEFAULT_TIMEOUT_S
    assert registry.create("llm-react", model="o3", timeout_s=30).settings()["timeout_s"] == 30.0


def test_strict_tools_sends_strict_schemas_and_the_models_nulls_run_as_defaults(endpoint):
    endpoint.script = [{"calls": [("search_logs", '{"service": "database", "pattern": null, "level": null, '
                                                  '"window_s": null, "limit": null}')]}]
    rec = play("llm-react", endpoint, strict_tools=True)
    tools = endpoint.requests[0]["tools"]
    assert all(t["function"]["strict"] is True for t in tools)
    logs = next(t for t in tools if t["function"]["name"] == "search_logs")["function"]["parameters"]
    assert logs["required"] == ["service", "pattern", "level", "window_s", "limit"]
    assert rec["trajectory"][0]["ok"] and rec["usage"]["malformed"] == 0
    assert registry.create("llm-react", model="m", strict_tools=True).settings()["strict_tools"] is True
    assert "strict_tools" not in registry.create("llm-react", model="m").settings()  # old runs' identity kept
    plain = play("llm-react", endpoint)
    assert "strict" not in endpoint.requests[-1]["tools"][0]["function"]
    assert plain["status"] == "ok"
