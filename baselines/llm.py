"""LLM agents through any OpenAI-compatible chat-completions endpoint (the ``openai`` extra).

* ``llm-prompt`` (:class:`PromptAgent`): the tools are described in the system prompt and the model
  answers with one text call per turn (``ACTION: search_logs(service="database")``), parsed by
  srezero's text-call parser.
* ``llm-react`` (:class:`ReActAgent`): native tool calls, with the tools list built from
  :func:`srezero.tools.registry.openai_tools`; several calls in one reply run one per step.

Options: ``model`` (required), ``base_url`` (default: the SDK's), the API key from the environment
variable named by ``api_key_env`` (``OPENAI_API_KEY``; a local endpoint without one gets a dummy
key), ``temperature`` and ``seed`` (default: the episode seed) passed through, ``price_table`` (a
JSON or TOML file, or ``SREZERO_PRICE_TABLE``; see docs/baselines.md), ``max_retries``,
``backoff_s``, ``timeout_s``, ``max_tokens``, ``max_obs_chars``.

Failures are kept apart. A reply that is not a valid tool call is a *model* failure: it goes to the
episode as an invalid action (the model sees the error and may correct itself) and is counted in
``usage()["malformed"]``. A *provider* failure (HTTP 429 or 5xx, a timeout, a refused connection)
is retried with exponential backoff (``Retry-After`` honoured, capped); once retries run out, or
on any other HTTP error, the agent raises :class:`~srezero.agents.protocol.ProviderError` and the
sweep records the episode as a provider error. ``usage()`` reports tokens, cost, call and error
counts, and ``latency_s`` (wall clock, the one non-reproducible value in a record).
"""

from __future__ import annotations

import contextlib
import os
import re
import time
import tomllib
from pathlib import Path
from typing import Any

import orjson

from srezero.agents.protocol import ProviderError
from srezero.episode import Briefing, Observation

#: USD per million tokens (prompt, completion). Override with a price table; unpriced models cost 0.
DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
}
PRICE_ENV = "SREZERO_PRICE_TABLE"
MAX_BACKOFF_S = 30.0

SYSTEM = """You are the on-call site-reliability engineer for a production system (load balancer, web servers, \
cache, database with a replica, message queue, workers, and the nodes they run on). You have been paged. \
Investigate with the read tools, fix the root cause with the write tools (every write has consequences: \
avoid guesses), submit a structured diagnosis with submit_diagnosis(root_causes=[{"entity": ..., \
"category": ..., "detail": ...}]) and then call resolve(). Budgets are limited: each action costs a step \
and simulated time."""

PROMPT_FORMAT = """Tools (call exactly one per reply):
{tools}

Diagnosis categories: {categories}.

Reply with at most a few sentences of reasoning, then a final line of the form
ACTION: tool_name(arg="value", other=3)
using Python or JSON literals for arguments."""


def load_prices(path: str | None) -> dict[str, tuple[float, float]]:
    """The default table updated from ``path`` (JSON or TOML: ``{model: {prompt, completion}}``)."""
    prices = dict(DEFAULT_PRICES)
    src = path or os.environ.get(PRICE_ENV)
    if not src:
        return prices
    p = Path(src)
    try:
        raw = tomllib.loads(p.read_text()) if p.suffix == ".toml" else orjson.loads(p.read_bytes())
        for model, entry in raw.items():
            prices[str(model)] = (float(entry["prompt"]), float(entry["completion"]))
    except (OSError, ValueError, KeyError, TypeError, tomllib.TOMLDecodeError, orjson.JSONDecodeError) as exc:
        raise ValueError(f"price table {p}: {exc}; expected {{model: {{prompt: USD/1M, completion: USD/1M}}}}") \
            from None
    return prices


class _LLMAgent:
    """Shared plumbing: the client, retries with backoff, usage accounting, observation formatting."""

    kind = "llm"

    def __init__(self, model: str | None = None, base_url: str | None = None, temperature: float = 0.0,
                 seed: int | None = None, price_table: str | None = None, api_key_env: str = "OPENAI_API_KEY",
                 max_retries: int = 4, backoff_s: float = 1.0, timeout_s: float = 60.0, max_tokens: int = 1024,
                 max_obs_chars: int = 4000) -> None:
        if not model:
            raise ValueError("LLM agents need a model name (--model)")
        self.model = model
        self.base_url = base_url
        self.temperature = float(temperature)
        self.seed = seed
        self.prices = load_prices(price_table)
        self.api_key_env = api_key_env
        self.max_retries = int(max_retries)
        self.backoff_s = float(backoff_s)
        self.timeout_s = float(timeout_s)
        self.max_tokens = int(max_tokens)
        self.max_obs_chars = int(max_obs_chars)
        self._client: Any = None
        self._usage = self._zero_usage()

    def settings(self) -> dict[str, Any]:
        return {"model": self.model, "base_url": self.base_url, "temperature": self.temperature, "seed": self.seed,
                "max_retries": self.max_retries, "timeout_s": self.timeout_s, "max_tokens": self.max_tokens,
                "max_obs_chars": self.max_obs_chars, "price_per_mtok": list(self.prices.get(self.model, (0.0, 0.0)))}

    @staticmethod
    def _zero_usage() -> dict[str, Any]:
        return {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0, "provider_errors": 0,
                "retries": 0, "malformed": 0, "latency_s": 0.0}

    def usage(self) -> dict[str, Any]:
        u = dict(self._usage)
        u["cost_usd"] = round(u["cost_usd"], 8)
        u["latency_s"] = round(u["latency_s"], 3)
        return u

    def _start(self, seed: int) -> None:
        self._usage = self._zero_usage()
        self._episode_seed = seed
        if self._client is None:
            try:
                import openai
            except ImportError:
                raise ValueError("LLM agents need the openai package: pip install 'srezero[openai]'") from None
            key = os.environ.get(self.api_key_env) or ("EMPTY" if self.base_url else None)
            if key is None:
                raise ValueError(f"set {self.api_key_env} (or give --base-url for a local endpoint)")
            self._client = openai.OpenAI(api_key=key, base_url=self.base_url, max_retries=0, timeout=self.timeout_s)

    def _clip(self, obs: Observation) -> str:
        text = obs.text if len(obs.text) <= self.max_obs_chars else obs.text[: self.max_obs_chars] + "\n[... truncated]"
        return f"{text}\n[step {obs.step}; {obs.steps_left} steps and {obs.time_left_s:.0f} s left]"

    def _chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> Any:
        """One completion, retried on 429/5xx/timeouts/connection errors; ProviderError when it cannot."""
        import openai

        kwargs: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": self.temperature,
                                  "seed": self.seed if self.seed is not None else self._episode_seed,
                                  "max_tokens": self.max_tokens}
        if tools:
            kwargs["tools"] = tools
        u = self._usage
        for attempt in range(self.max_retries + 1):
            t = time.perf_counter()
            try:
                resp = self._client.chat.completions.create(**kwargs)
            except (openai.RateLimitError, openai.InternalServerError, openai.APITimeoutError,
                    openai.APIConnectionError) as exc:
                u["latency_s"] += time.perf_counter() - t
                u["provider_errors"] += 1
                if attempt >= self.max_retries:
                    raise ProviderError(f"{_describe(exc)} (gave up after {attempt} retries)") from None
                u["retries"] += 1
                time.sleep(self._delay(exc, attempt))
                continue
            except openai.APIStatusError as exc:  # 400/401/403/404...: retrying will not help
                u["latency_s"] += time.perf_counter() - t
                u["provider_errors"] += 1
                raise ProviderError(_describe(exc)) from None
            except (openai.APIError, openai.OpenAIError) as exc:  # unreadable response and the like
                u["latency_s"] += time.perf_counter() - t
                u["provider_errors"] += 1
                raise ProviderError(_describe(exc)) from None
            u["latency_s"] += time.perf_counter() - t
            u["calls"] += 1
            if resp.usage is not None:
                pt, ct = int(resp.usage.prompt_tokens or 0), int(resp.usage.completion_tokens or 0)
                u["prompt_tokens"] += pt
                u["completion_tokens"] += ct
                pin, pout = self.prices.get(self.model, (0.0, 0.0))
                u["cost_usd"] += (pt * pin + ct * pout) / 1e6
            if not resp.choices:
                raise ProviderError("the endpoint returned no choices")
            return resp.choices[0].message
        raise ProviderError("unreachable")  # pragma: no cover

    def _delay(self, exc: Exception, attempt: int) -> float:
        delay = self.backoff_s * 2**attempt
        response = getattr(exc, "response", None)
        header = response.headers.get("retry-after") if response is not None else None
        if header:
            with contextlib.suppress(ValueError):
                delay = float(header)
        return max(0.0, min(MAX_BACKOFF_S, delay))

    def _valid(self, action: Any) -> bool:
        from srezero.tools.parse import parse_action
        from srezero.tools.registry import ToolError

        try:
            parse_action(action)
            return True
        except ToolError:
            return False


def _describe(exc: Exception) -> str:
    status = getattr(exc, "status_code", None)
    return f"{type(exc).__name__}{f' (HTTP {status})' if status else ''}: {str(exc)[:300]}"


def _categories(specs: list[dict[str, Any]]) -> list[str]:
    """The category enum, found wherever the submit tool's schema declares it."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            cat = node.get("properties", {}).get("category") if isinstance(node.get("properties"), dict) else None
            if isinstance(cat, dict) and "enum" in cat:
                found.extend(cat["enum"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(specs)
    return list(dict.fromkeys(found))


def _signature(spec: dict[str, Any]) -> str:
    props = spec.get("parameters", {}).get("properties", {})
    required = spec.get("parameters", {}).get("required", [])
    parts = []
    for name, p in props.items():
        typ = p.get("type") or "/".join(x.get("type", "?") for x in p.get("anyOf", [])) or "object"
        parts.append(f"{name}: {typ}" + ("" if name in required else f" = {p.get('default')!r}"))
    return f"{spec['name']}({', '.join(parts)}): {spec.get('description', '')}"


_ACTION = re.compile(r"^\s*(?:\*\*)?ACTION(?:\*\*)?\s*:\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)
_CALL = re.compile(r"^\s*`*([a-z_]+\(.*\))`*\s*$", re.MULTILINE | re.DOTALL)


def extract_call(reply: str) -> str | None:
    """The action line of a prompt-agent reply: the last ``ACTION:`` line, else a bare call."""
    found = _ACTION.findall(reply or "")
    if found:
        return found[-1].strip().strip("`")
    m = _CALL.search((reply or "").strip())
    return m.group(1) if m else None


class PromptAgent(_LLMAgent):
    """Text actions: the model writes ``ACTION: tool(args)``; malformed replies become invalid actions."""

    def reset(self, task_info: Briefing, seed: int, tool_specs: list[dict[str, Any]]) -> None:
        self._start(seed)
        tools = "\n".join(f"- {_signature(s)}" for s in tool_specs)
        cats = ", ".join(_categories(tool_specs)) or "see submit_diagnosis"
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM + "\n\n" + PROMPT_FORMAT.format(tools=tools, categories=cats)},
            {"role": "user", "content": f"PAGE: {task_info.page}\nBudget: {task_info.step_budget} steps, "
                                        f"{task_info.time_budget_s / 60:.0f} minutes. What is your first action?"}]
        self._first = True

    def act(self, observation: Observation) -> Any:
        if not self._first:
            self.messages.append({"role": "user", "content": self._clip(observation)})
        self._first = False
        msg = self._chat(self.messages)
        reply = msg.content or ""
        self.messages.append({"role": "assistant", "content": reply})
        action = extract_call(reply)
        if action is None or not self._valid(action):
            self._usage["malformed"] += 1
        return action if action is not None else (reply.strip()[:2000] or "(empty reply)")


class ReActAgent(_LLMAgent):
    """Native tool calls; a reply without one (or with malformed arguments) is an invalid action."""

    def reset(self, task_info: Briefing, seed: int, tool_specs: list[dict[str, Any]]) -> None:
        from srezero.tools.registry import openai_tools

        self._start(seed)
        self.tools = openai_tools()
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"PAGE: {task_info.page}\nBudget: {task_info.step_budget} steps, "
                                        f"{task_info.time_budget_s / 60:.0f} minutes. Start investigating."}]
        self.queue: list[tuple[str, str, str]] = []  # (call id, name, arguments) not yet executed
        self.pending: str | None = None  # id of the call whose result the next observation is
        self._first = True

    def act(self, observation: Observation) -> Any:
        if self.pending is not None:
            self.messages.append({"role": "tool", "tool_call_id": self.pending, "content": self._clip(observation)})
        elif not self._first:
            self.messages.append({"role": "user", "content": self._clip(observation) +
                                  "\nReply with a tool call."})
        self._first = False
        self.pending = None
        if not self.queue:
            msg = self._chat(self.messages, self.tools)
            calls = list(msg.tool_calls or [])
            entry: dict[str, Any] = {"role": "assistant", "content": msg.content or ""}
            if calls:
                for i, c in enumerate(calls):
                    cid = c.id or f"call_{len(self.messages)}_{i}"
                    self.queue.append((cid, c.function.name or "", c.function.arguments or ""))
                entry["tool_calls"] = [{"id": cid, "type": "function", "function": {"name": n, "arguments": a}}
                                       for cid, n, a in self.queue]
            self.messages.append(entry)
            if not calls:
                self._usage["malformed"] += 1
                text = (msg.content or "").strip()
                return extract_call(text) or text[:2000] or "(no tool call)"
        cid, name, arguments = self.queue.pop(0)
        self.pending = cid
        action = {"name": name, "arguments": arguments or "{}"}
        if not self._valid(action):
            self._usage["malformed"] += 1
        return action
