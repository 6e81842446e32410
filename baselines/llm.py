"""LLM agents through any OpenAI-compatible chat-completions endpoint (the ``openai`` extra).

* ``llm-prompt`` (:class:`PromptAgent`): the tools are described in the system prompt and the model
  answers with one text call per turn (``ACTION: search_logs(service="database")``), parsed by
  srezero's text-call parser.
* ``llm-react`` (:class:`ReActAgent`): native tool calls, with the tools list built from
  :func:`srezero.tools.registry.openai_tools`; several calls in one reply run one per step.

Options: ``model`` (required), ``base_url`` (default: the SDK's), ``api_key_env`` (the name of the
environment variable holding the API key; see :meth:`_LLMAgent.api_key` for which key goes where),
``temperature`` and ``seed`` (default: the seed the agent is handed, derived from the episode seed) passed through, ``reasoning_model`` (send
``max_completion_tokens`` and no temperature; default: by model name, see :func:`is_reasoning_model`),
``price_table`` (a JSON or TOML file, or ``SREZERO_PRICE_TABLE``; see docs/baselines.md),
``extra_body`` (more request-body fields for the endpoint, a dict or JSON object text, e.g.
``{"top_k": 20}`` or ``{"reasoning_effort": "low"}``; it cannot override what the agent sets itself),
``max_retries``, ``backoff_s``, ``timeout_s``, ``max_tokens``, ``max_obs_chars``.

Failures are kept apart. A reply that is not a valid tool call is a *model* failure: it goes to the
episode as an invalid action (the model sees the error and may correct itself) and is counted in
``usage()["malformed"]``. A *provider* failure is anything that goes wrong at the endpoint: HTTP 429
or 5xx, a timeout, a refused or dropped connection (retried with exponential backoff, ``Retry-After``
honoured, capped), any other HTTP error, or a response that is not a chat completion (a body that is
not JSON, no choices, a choice without a message). Once retries run out, or at once for the
non-retryable ones, the agent raises :class:`~srezero.agents.protocol.ProviderError` and the
episode is recorded as a provider error, never as an agent error. ``usage()`` reports tokens, cost,
call and error counts, and ``latency_s`` (wall clock, the one non-reproducible value in a record).
``step_info()`` hands the runner the raw reply behind each action (``model_reply`` in the record's
trajectory), so model failures can be read afterwards.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

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
#: The variable the key comes from for the OpenAI API itself (no ``base_url``, or api.openai.com).
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
#: Sent to a non-OpenAI ``base_url`` when no ``api_key_env`` is given (local servers ignore it).
NO_KEY = "EMPTY"
OPENAI_HOSTS = ("api.openai.com",)
#: Completion caps: reasoning tokens count against a reasoning model's cap, so its default is larger.
DEFAULT_MAX_TOKENS = 1024
DEFAULT_MAX_TOKENS_REASONING = 16384
#: Bounds of the raw reply kept per step in the record (``model_reply``).
MAX_REPLY_CHARS = 4000
MAX_ARGUMENT_CHARS = 2000
#: Model names that take ``max_completion_tokens`` and only the default temperature (o1, o3-mini,
#: o4-mini, gpt-5, gpt-5-mini, ...; a ``provider/`` prefix is ignored).
_REASONING = re.compile(r"^(?:o[1-9][0-9]*|gpt-5)(?![0-9a-z])", re.IGNORECASE)

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


def is_reasoning_model(model: str) -> bool:
    """True for OpenAI reasoning models by name (o1, o3, o4-mini, gpt-5...; ``openai/o3`` too)."""
    return bool(_REASONING.match(model.rsplit("/", 1)[-1]))


def is_openai_url(base_url: str | None) -> bool:
    """True when requests go to the OpenAI API: no ``base_url`` (the SDK's default) or api.openai.com."""
    if not base_url:
        return True
    return (urlsplit(base_url).hostname or "").lower() in OPENAI_HOSTS


@dataclass
class Reply:
    """A chat completion's first choice, read defensively (endpoints differ in what they omit)."""

    content: str
    tool_calls: list[tuple[str, str, str]] = field(default_factory=list)  # (id, name, arguments JSON text)
    finish_reason: str | None = None
    refusal: str | None = None

    def note(self, with_calls: bool) -> dict[str, Any]:
        """The ``model_reply`` of a trajectory entry: the raw reply, clipped."""
        out: dict[str, Any] = {"content": _clip(self.content, MAX_REPLY_CHARS), "finish_reason": self.finish_reason}
        if with_calls:
            out["tool_calls"] = [{"id": cid, "name": _clip(name, 200), "arguments": _clip(args, MAX_ARGUMENT_CHARS)}
                                 for cid, name, args in self.tool_calls]
        if self.refusal:
            out["refusal"] = _clip(self.refusal, MAX_REPLY_CHARS)
        return {"model_reply": out}


#: Request fields the agent sets itself (or must not be changed behind the record's back): ``extra_body``
#: cannot override them.
OWN_FIELDS = frozenset({"model", "messages", "seed", "temperature", "max_tokens", "max_completion_tokens",
                        "tools", "tool_choice", "n", "stream"})


def _extra_body(value: dict[str, Any] | str | None) -> dict[str, Any] | None:
    """``extra_body`` as a dict: a JSON object (the command line's ``--extra-body``) or a dict."""
    if value is None or value == {}:
        return None
    if isinstance(value, str):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError as exc:
            raise ValueError(f"--extra-body must be a JSON object, e.g. '{{\"top_k\": 20}}': {exc}") from None
    if not isinstance(value, dict):
        raise ValueError(f"--extra-body must be a JSON object, not {type(value).__name__}")
    clash = sorted(OWN_FIELDS & value.keys())
    if clash:
        raise ValueError(f"--extra-body cannot set {', '.join(clash)}: the agent sets "
                         f"{'it' if len(clash) == 1 else 'them'} (use its own option, e.g. --temperature)")
    return value


class _LLMAgent:
    """Shared plumbing: the client, retries with backoff, usage accounting, observation formatting."""

    kind = "llm"

    def __init__(self, model: str | None = None, base_url: str | None = None, temperature: float | None = None,
                 seed: int | None = None, price_table: str | None = None, api_key_env: str | None = None,
                 reasoning_model: bool | None = None, max_retries: int = 4, backoff_s: float = 1.0,
                 timeout_s: float = 60.0, max_tokens: int | None = None, max_obs_chars: int = 4000,
                 extra_body: dict[str, Any] | str | None = None) -> None:
        if not model:
            raise ValueError("LLM agents need a model name (--model)")
        if api_key_env is not None and not api_key_env.strip():
            raise ValueError("--api-key-env needs the name of an environment variable")
        self.model = model
        self.base_url = base_url
        self.reasoning_model = is_reasoning_model(model) if reasoning_model is None else bool(reasoning_model)
        if self.reasoning_model and temperature is not None:
            raise ValueError(f"{model} is treated as a reasoning model, which takes only its default temperature: "
                             "drop --temperature, or pass --no-reasoning-model if it is not one")
        self.temperature = None if self.reasoning_model else float(temperature or 0.0)
        self.seed = seed
        self.prices = load_prices(price_table)
        #: the variable the key is read from (None: no key is sent, a non-OpenAI endpoint gets NO_KEY)
        self.api_key_env = api_key_env.strip() if api_key_env else (DEFAULT_KEY_ENV if is_openai_url(base_url) else None)
        self.max_retries = int(max_retries)
        self.backoff_s = float(backoff_s)
        self.timeout_s = float(timeout_s)
        default_cap = DEFAULT_MAX_TOKENS_REASONING if self.reasoning_model else DEFAULT_MAX_TOKENS
        self.max_tokens = int(max_tokens) if max_tokens is not None else default_cap
        self.max_obs_chars = int(max_obs_chars)
        self.extra_body = _extra_body(extra_body)
        self._client: Any = None
        self._usage = self._zero_usage()
        self._note: dict[str, Any] = {}

    def settings(self) -> dict[str, Any]:
        """What shapes the requests, for the run manifest (the key's variable name, never the key)."""
        return {"model": self.model, "base_url": self.base_url, "api_key_env": self.api_key_env,
                "reasoning_model": self.reasoning_model, "temperature": self.temperature, "seed": self.seed,
                "max_retries": self.max_retries, "timeout_s": self.timeout_s, "max_tokens": self.max_tokens,
                "max_obs_chars": self.max_obs_chars, "extra_body": self.extra_body,
                "price_per_mtok": list(self.prices.get(self.model, (0.0, 0.0)))}

    def api_key(self) -> str:
        """The key to send. From ``api_key_env`` when given; for the OpenAI API from OPENAI_API_KEY;
        a non-OpenAI ``base_url`` without ``api_key_env`` gets a dummy key, so a real OpenAI key never
        leaves for another host unless asked to (``--api-key-env OPENAI_API_KEY``)."""
        if self.api_key_env is None:
            return NO_KEY
        key = os.environ.get(self.api_key_env, "").strip()
        if not key:
            hint = ("named by --api-key-env" if self.api_key_env != DEFAULT_KEY_ENV else
                    "needed for the OpenAI API; name another variable with --api-key-env, or give --base-url "
                    "for a local endpoint")
            raise ValueError(f"the API key variable {self.api_key_env} is not set ({hint})")
        return key

    def preflight(self) -> None:
        """Fail before any episode runs: the openai package is installed and the API key is set."""
        _openai()
        self.api_key()

    def probe(self) -> None:
        """One short request with this agent's settings before a sweep, so a wrong model name, endpoint,
        key or unsupported parameter fails once, up front, instead of in every episode. Its tokens are
        not counted in any record."""
        self._start(0)
        try:
            self._chat([{"role": "user", "content": "Reply with the single word: ok"}])
        except ProviderError as exc:
            where = self.base_url or "the OpenAI API"
            raise ValueError(f"a probe request to {where} for model {self.model!r} failed: {exc} "
                             "(--no-probe skips this check)") from None

    def step_info(self) -> dict[str, Any]:
        """Added to the trajectory entry of the action just taken: the raw reply behind it, if any."""
        note, self._note = self._note, {}
        return note

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
        self._note = {}
        self._episode_seed = seed
        if self._client is None:
            openai = _openai()
            self._client = openai.OpenAI(api_key=self.api_key(), base_url=self.base_url, max_retries=0,
                                         timeout=self.timeout_s)

    def _clip(self, obs: Observation) -> str:
        text = obs.text if len(obs.text) <= self.max_obs_chars else obs.text[: self.max_obs_chars] + "\n[... truncated]"
        return f"{text}\n[step {obs.step}; {obs.steps_left} steps and {obs.time_left_s:.0f} s left]"

    def request(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """The request body's parameters (reasoning models: ``max_completion_tokens``, no temperature)."""
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages,
                                  "seed": self.seed if self.seed is not None else self._episode_seed}
        if self.reasoning_model:
            kwargs["max_completion_tokens"] = self.max_tokens
        else:
            kwargs["temperature"] = self.temperature
            kwargs["max_tokens"] = self.max_tokens
        if tools:
            kwargs["tools"] = tools
        if self.extra_body:
            kwargs["extra_body"] = self.extra_body
        return kwargs

    def _chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> Reply:
        """One completion, retried on 429/5xx/timeouts/connection errors; ProviderError when it cannot.

        Whatever the client raises is the endpoint's failure (a ProviderError), never the agent's.
        """
        import openai

        kwargs = self.request(messages, tools)
        u = self._usage
        for attempt in range(self.max_retries + 1):
            t = time.perf_counter()
            try:
                resp = self._client.chat.completions.create(**kwargs)
            except (openai.RateLimitError, openai.InternalServerError, openai.APITimeoutError,
                    openai.APIConnectionError, *_transport_errors()) as exc:
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
                hint = ""
                if getattr(exc, "status_code", None) in (401, 403) and self.api_key_env is None:
                    hint = f"; no API key was sent to {self.base_url}: name its variable with --api-key-env"
                raise ProviderError(_describe(exc) + hint) from None
            except Exception as exc:  # a body that is not JSON, a broken response, any other client failure
                u["latency_s"] += time.perf_counter() - t
                u["provider_errors"] += 1
                raise ProviderError(f"unreadable response from the endpoint: {_describe(exc)}") from None
            u["latency_s"] += time.perf_counter() - t
            u["calls"] += 1
            self._count_tokens(getattr(resp, "usage", None))
            try:
                return _read_reply(resp)
            except ProviderError:
                u["provider_errors"] += 1
                raise
        raise ProviderError("unreachable")  # pragma: no cover

    def _count_tokens(self, usage: Any) -> None:
        if usage is None:
            return
        pt, ct = _count(getattr(usage, "prompt_tokens", 0)), _count(getattr(usage, "completion_tokens", 0))
        u = self._usage
        u["prompt_tokens"] += pt
        u["completion_tokens"] += ct
        pin, pout = self.prices.get(self.model, (0.0, 0.0))
        u["cost_usd"] += (pt * pin + ct * pout) / 1e6

    def _delay(self, exc: Exception, attempt: int) -> float:
        delay = self.backoff_s * 2**attempt
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None)
        header = headers.get("retry-after") if headers is not None else None
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


def _openai() -> Any:
    try:
        import openai
    except ImportError:
        raise ValueError("LLM agents need the openai package: pip install 'srezero[openai]'") from None
    return openai


def _transport_errors() -> tuple[type[BaseException], ...]:
    """Network failures the client may let through unwrapped (retried like a refused connection)."""
    found: list[type[BaseException]] = [ConnectionError, TimeoutError]
    for name in ("httpx2", "httpx"):
        with contextlib.suppress(ImportError):
            mod = __import__(name)
            found.append(mod.TransportError)
    return tuple(found)


def _count(value: Any) -> int:
    """A token count as the endpoint reported it; anything that is not a count is 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return str(value)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f" [... {len(text) - limit} more characters]"


def _read_reply(resp: Any) -> Reply:
    """The first choice of a completion; ProviderError when the response is not one."""
    if not hasattr(resp, "choices"):
        raise ProviderError(f"the endpoint's response is not a chat completion: {_clip(_text(resp), 200)!r}")
    choices = resp.choices
    if not choices:
        raise ProviderError("the endpoint returned no choices")
    if not isinstance(choices, list):
        raise ProviderError(f"the endpoint returned malformed choices: {_clip(_text(choices), 200)!r}")
    first = choices[0]
    msg = getattr(first, "message", None)
    if msg is None:
        raise ProviderError("the endpoint returned a choice without a message")
    raw_calls = getattr(msg, "tool_calls", None) or []
    if not isinstance(raw_calls, list):
        raise ProviderError(f"the endpoint returned malformed tool_calls: {_clip(_text(raw_calls), 200)!r}")
    calls = []
    for c in raw_calls:  # a call without a function or name stays the model's malformed call
        fn = getattr(c, "function", None)
        calls.append((_text(getattr(c, "id", None)), _text(getattr(fn, "name", None)),
                      _text(getattr(fn, "arguments", None))))
    reason = getattr(first, "finish_reason", None)
    refusal = getattr(msg, "refusal", None)
    return Reply(_text(getattr(msg, "content", None)), calls, None if reason is None else _text(reason),
                 _text(refusal) if refusal else None)


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
        self._note = {}
        if not self._first:
            self.messages.append({"role": "user", "content": self._clip(observation)})
        self._first = False
        msg = self._chat(self.messages)
        self._note = msg.note(with_calls=False)
        reply = msg.content
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
        self.tools = openai_tools(tool_specs)  # what this episode offers (a live cluster serves fewer)
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"PAGE: {task_info.page}\nBudget: {task_info.step_budget} steps, "
                                        f"{task_info.time_budget_s / 60:.0f} minutes. Start investigating."}]
        self.queue: list[tuple[str, str, str]] = []  # (call id, name, arguments) not yet executed
        self.pending: str | None = None  # id of the call whose result the next observation is
        self._first = True

    def act(self, observation: Observation) -> Any:
        self._note = {}
        if self.pending is not None:
            self.messages.append({"role": "tool", "tool_call_id": self.pending, "content": self._clip(observation)})
        elif not self._first:
            self.messages.append({"role": "user", "content": self._clip(observation) +
                                  "\nReply with a tool call."})
        self._first = False
        self.pending = None
        if not self.queue:
            msg = self._chat(self.messages, self.tools)
            self._note = msg.note(with_calls=True)  # on the first step the reply drives; queued calls have none
            entry: dict[str, Any] = {"role": "assistant", "content": msg.content}
            if msg.tool_calls:
                for i, (cid, name, arguments) in enumerate(msg.tool_calls):
                    self.queue.append((cid or f"call_{len(self.messages)}_{i}", name, arguments))
                entry["tool_calls"] = [{"id": cid, "type": "function", "function": {"name": n, "arguments": a}}
                                       for cid, n, a in self.queue]
            self.messages.append(entry)
            if not msg.tool_calls:
                self._usage["malformed"] += 1
                text = msg.content.strip()
                return extract_call(text) or text[:2000] or "(no tool call)"
        cid, name, arguments = self.queue.pop(0)
        self.pending = cid
        action = {"name": name, "arguments": arguments or "{}"}
        if not self._valid(action):
            self._usage["malformed"] += 1
        return action
