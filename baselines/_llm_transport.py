"""The LLM agents' side of the wire: prices, request options, reading replies, classifying failures.

Private to :mod:`baselines.llm`; nothing here knows about episodes or conversations.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson

from srezero.agents.protocol import ProviderError

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
#: Per-request timeouts. A reasoning model may think for minutes before its first byte; a request that
#: times out may still be billed and is retried, so its default is the SDK's own (10 minutes).
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_TIMEOUT_S_REASONING = 600.0
#: Bounds of the raw reply kept per step in the record (``model_reply``).
MAX_REPLY_CHARS = 4000
MAX_ARGUMENT_CHARS = 2000
#: Model names that take ``max_completion_tokens`` and only the default temperature (o1, o3-mini,
#: o4-mini, gpt-5, gpt-5-mini, ...; a ``provider/`` prefix is ignored).
_REASONING = re.compile(r"^(?:o[1-9][0-9]*|gpt-5)(?![0-9a-z])", re.IGNORECASE)
#: How endpoints say a conversation outgrew the model's context: OpenAI's error code, llama.cpp's
#: error type, and the messages of vLLM, SGLang, llama.cpp and others (which often send no code).
_OVERFLOW_CODES = frozenset({"context_length_exceeded", "exceed_context_size_error"})
_OVERFLOW_TEXT = re.compile(r"context[ _](?:length|size|window)|maximum context|too many tokens|prompt is too long",
                            re.IGNORECASE)


class ContextOverflow(ProviderError):
    """The endpoint refused the conversation as longer than the model's context (HTTP 400).

    The agents catch it and elide old observations; should it escape, it is still a provider error."""


def load_prices(path: str | None) -> dict[str, tuple[float, float]]:
    """The default table updated from ``path`` (JSON or TOML: ``{model: {prompt, completion}}``)."""
    prices = dict(DEFAULT_PRICES)
    src = path or os.environ.get(PRICE_ENV)
    if not src:
        return prices
    p = Path(src)
    expected = "expected {model: {prompt: USD/1M, completion: USD/1M}}"
    try:
        raw = tomllib.loads(p.read_text()) if p.suffix == ".toml" else orjson.loads(p.read_bytes())
    except (OSError, ValueError, tomllib.TOMLDecodeError, orjson.JSONDecodeError) as exc:
        raise ValueError(f"price table {p}: {exc}; {expected}") from None
    if not isinstance(raw, dict):
        raise ValueError(f"price table {p}: a {type(raw).__name__}, not a table of models; {expected}")
    for model, entry in raw.items():
        try:
            pair = (float(entry["prompt"]), float(entry["completion"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"price table {p}: model {model!r}: {type(exc).__name__}: {exc}; {expected}") from None
        # a NaN or negative price would make every cost meaningless (NaN is written as null and breaks the summary)
        if not all(math.isfinite(x) and x >= 0 for x in pair):
            raise ValueError(f"price table {p}: model {model!r}: prices must be finite and >= 0, not {pair}")
        prices[str(model)] = pair
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
        out: dict[str, Any] = {"content": clip(self.content, MAX_REPLY_CHARS), "finish_reason": self.finish_reason}
        if with_calls:
            out["tool_calls"] = [{"id": cid, "name": clip(name, 200), "arguments": clip(args, MAX_ARGUMENT_CHARS)}
                                 for cid, name, args in self.tool_calls]
        if self.refusal:
            out["refusal"] = clip(self.refusal, MAX_REPLY_CHARS)
        return {"model_reply": out}


#: Request fields the agent sets itself (or must not be changed behind the record's back): ``extra_body``
#: cannot override them.
OWN_FIELDS = frozenset({"model", "messages", "seed", "temperature", "max_tokens", "max_completion_tokens",
                        "tools", "tool_choice", "n", "stream"})


def parse_extra_body(value: dict[str, Any] | str | None) -> dict[str, Any] | None:
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


def openai_module() -> Any:
    try:
        import openai
    except ImportError:
        raise ValueError("LLM agents need the openai package: pip install 'srezero[openai]'") from None
    return openai


def transport_errors() -> tuple[type[BaseException], ...]:
    """Network failures the client may let through unwrapped (retried like a refused connection)."""
    found: list[type[BaseException]] = [ConnectionError, TimeoutError]
    for name in ("httpx2", "httpx"):
        with contextlib.suppress(ImportError):
            mod = __import__(name)
            found.append(mod.TransportError)
    return tuple(found)


def is_context_overflow(exc: Exception) -> bool:
    """A 400 that says the conversation is longer than the model's context (any endpoint's wording)."""
    if getattr(exc, "status_code", None) != 400:
        return False
    if getattr(exc, "code", None) in _OVERFLOW_CODES or getattr(exc, "type", None) in _OVERFLOW_CODES:
        return True
    return bool(_OVERFLOW_TEXT.search(str(getattr(exc, "message", None) or exc)))


def is_out_of_quota(exc: Exception) -> bool:
    """OpenAI's 429 for an account without credit: retrying only burns the backoff, episode after episode."""
    return getattr(exc, "code", None) == "insufficient_quota"


def retry_delay(exc: Exception, attempt: int, backoff_s: float) -> float:
    """Exponential backoff, or what the endpoint asks for (``retry-after-ms``, ``Retry-After`` seconds), capped."""
    delay = backoff_s * 2**attempt
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is not None:
        for name, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
            value = headers.get(name)
            if value:
                with contextlib.suppress(ValueError):  # an HTTP date: keep the backoff
                    delay = float(value) * scale
                    break
    return max(0.0, min(MAX_BACKOFF_S, delay)) if math.isfinite(delay) else MAX_BACKOFF_S


def count(value: Any) -> int:
    """A token count as the endpoint reported it; anything that is not a count is 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def text_of(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return str(value)


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f" [... {len(text) - limit} more characters]"


def read_reply(resp: Any) -> Reply:
    """The first choice of a completion; ProviderError when the response is not one."""
    if not hasattr(resp, "choices"):
        raise ProviderError(f"the endpoint's response is not a chat completion: {clip(text_of(resp), 200)!r}")
    choices = resp.choices
    if not choices:
        raise ProviderError("the endpoint returned no choices")
    if not isinstance(choices, list):
        raise ProviderError(f"the endpoint returned malformed choices: {clip(text_of(choices), 200)!r}")
    first = choices[0]
    msg = getattr(first, "message", None)
    if msg is None:
        raise ProviderError("the endpoint returned a choice without a message")
    raw_calls = getattr(msg, "tool_calls", None) or []
    if not isinstance(raw_calls, list):
        raise ProviderError(f"the endpoint returned malformed tool_calls: {clip(text_of(raw_calls), 200)!r}")
    calls = []
    for c in raw_calls:  # a call without a function or name stays the model's malformed call
        fn = getattr(c, "function", None)
        calls.append((text_of(getattr(c, "id", None)), text_of(getattr(fn, "name", None)),
                      text_of(getattr(fn, "arguments", None))))
    reason = getattr(first, "finish_reason", None)
    refusal = getattr(msg, "refusal", None)
    return Reply(text_of(getattr(msg, "content", None)), calls, None if reason is None else text_of(reason),
                 text_of(refusal) if refusal else None)


def describe(exc: Exception) -> str:
    status = getattr(exc, "status_code", None)
    return f"{type(exc).__name__}{f' (HTTP {status})' if status else ''}: {str(exc)[:300]}"
