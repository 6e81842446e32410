"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, run in a thread by each test.

openai 3.x is built on httpx2, which httpx mocking libraries do not intercept, so the LLM agents
are tested against a real HTTP server. Each scripted step is one of:

* ``{"tool_calls": [(name, arguments_json), ...], "content": "..."}`` - a reply with tool calls;
* ``{"content": "..."}`` - a plain text reply;
* ``{"status": 429, "headers": {...}}`` - an HTTP error with an OpenAI-style error body;
* ``{"sleep": seconds, **reply}`` - wait first (to trigger the client's timeout), then answer.

When the script runs out the server answers with ``default`` (a resolve call unless changed).
``requests`` keeps every request body for assertions.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


class FakeOpenAI:
    def __init__(self) -> None:
        self.script: list[dict[str, Any]] = []
        self.default: dict[str, Any] = {"tool_calls": [("resolve", "{}")], "content": "ACTION: resolve()"}
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def next_step(self, body: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.requests.append(body)
            return self.script.pop(0) if self.script else self.default

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                step = fake.next_step(body)
                if step.get("sleep"):
                    time.sleep(step["sleep"])
                status = int(step.get("status", 200))
                if status != 200:
                    payload = {"error": {"message": f"scripted {status}", "type": "server_error", "code": None}}
                    self._send(status, payload, step.get("headers", {}))
                    return
                self._send(200, completion(body.get("model", "m"), step), {})

            def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str]) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
                    pass

        return Handler


def completion(model: str, step: dict[str, Any]) -> dict[str, Any]:
    calls = [{"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": a}}
             for i, (n, a) in enumerate(step.get("tool_calls") or [])]
    message: dict[str, Any] = {"role": "assistant", "content": step.get("content")}
    if calls:
        message["tool_calls"] = calls
    return {"id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}}


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    pytest.importorskip("openai")
    fake = FakeOpenAI()
    fake.thread.start()
    try:
        yield fake
    finally:
        fake.server.shutdown()
        fake.server.server_close()
