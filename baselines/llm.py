"""LLM agents through any OpenAI-compatible chat-completions endpoint (the ``openai`` extra).

* ``llm-prompt`` (:class:`PromptAgent`): the tools are described in the system prompt and the model
  answers with one text call per turn (``ACTION: search_logs(service="database")``), parsed by
  srezero's text-call parser.
* ``llm-react`` (:class:`ReActAgent`): native tool calls, with the tools list built from
  :func:`srezero.tools.registry.openai_tools`; several calls in one reply run one per step.

Options: ``model`` (required), ``base_url`` (default: the SDK's), ``api_key_env`` (the name of the
environment variable holding the API key; see :meth:`_LLMAgent.api_key` for which key goes where),
``temperature`` and ``seed`` (default: the seed the agent is handed, derived from the episode seed)
passed through, ``reasoning_model`` (send ``max_completion_tokens`` and no temperature; default: by
model name, see :func:`is_reasoning_model`), ``price_table`` (a JSON or TOML file, or
``SREZERO_PRICE_TABLE``; see docs/baselines.md), ``extra_body`` (more request-body fields for the
endpoint, a dict or JSON object text, e.g. ``{"top_k": 20}`` or ``{"reasoning_effort": "low"}``; it
cannot override what the agent sets itself), ``max_retries``, ``backoff_s``, ``timeout_s``,
``max_tokens``, ``max_obs_chars`` (each observation's clip), ``max_context_chars`` (elide the oldest
observations beyond this many characters of conversation; default: keep everything).

Failures are kept apart. A reply that is not a valid tool call is a *model* failure: it goes to the
episode as an invalid action (the model sees the error and may correct itself) and is counted in
``usage()["malformed"]``. A *provider* failure is anything that goes wrong at the endpoint: HTTP 429
or 5xx, a timeout, a refused or dropped connection (retried with exponential backoff, ``Retry-After``
honoured, capped), any other HTTP error, or a response that is not a chat completion (a body that is
not JSON, no choices, a choice without a message). Once retries run out, or at once for the
non-retryable ones, the agent raises :class:`~srezero.agents.protocol.ProviderError` and the
episode is recorded as a provider error, never as an agent error. A conversation longer than the
model's context (HTTP 400 ``context_length_exceeded`` or the endpoint's words for it) is neither: the
agent elides the oldest observations and asks again (``usage()["context_overflows"]``), and when
nothing is left to elide it stops the episode, which is scored as it stands
(``usage()["stop_reason"]``). ``usage()`` reports tokens, cost, call and error counts, and
``latency_s`` (wall clock, the one non-reproducible value in a record). ``step_info()`` hands the
runner the raw reply behind each action (``model_reply`` in the record's trajectory), so model
failures can be read afterwards.
"""

from __future__ import annotations

import os
import time
from typing import Any

from baselines._llm_prompt import action_lines, clip_output, elide, extract_call, size, system_prompt
from baselines._llm_transport import (
    DEFAULT_KEY_ENV,
    DEFAULT_MAX_TOKENS,
    DEFAULT_MAX_TOKENS_REASONING,
    DEFAULT_PRICES,
    DEFAULT_TIMEOUT_S,
    DEFAULT_TIMEOUT_S_REASONING,
    MAX_ARGUMENT_CHARS,
    MAX_REPLY_CHARS,
    NO_KEY,
    PRICE_ENV,
    ContextOverflow,
    Reply,
    count,
    describe,
    is_context_overflow,
    is_openai_url,
    is_out_of_quota,
    is_reasoning_model,
    load_prices,
    openai_module,
    parse_extra_body,
    read_reply,
    retry_delay,
    transport_errors,
)
from srezero.agents.protocol import ProviderError, StopEpisode
from srezero.episode import Briefing, Observation

__all__ = ["DEFAULT_MAX_TOKENS", "DEFAULT_MAX_TOKENS_REASONING", "DEFAULT_PRICES", "DEFAULT_TIMEOUT_S",
           "DEFAULT_TIMEOUT_S_REASONING", "MAX_ARGUMENT_CHARS", "MAX_REPLY_CHARS", "PRICE_ENV", "PromptAgent",
           "ReActAgent", "Reply", "extract_call", "is_openai_url", "is_reasoning_model", "load_prices"]


class _LLMAgent:
    """Shared plumbing: the client, retries with backoff, usage accounting, the conversation's size."""

    kind = "llm"

    def __init__(self, model: str | None = None, base_url: str | None = None, temperature: float | None = None,
                 seed: int | None = None, price_table: str | None = None, api_key_env: str | None = None,
                 reasoning_model: bool | None = None, max_retries: int = 4, backoff_s: float = 1.0,
                 timeout_s: float | None = None, max_tokens: int | None = None, max_obs_chars: int = 4000,
                 max_context_chars: int | None = None, extra_body: dict[str, Any] | str | None = None) -> None:
        if not model:
            raise ValueError("LLM agents need a model name (--model)")
        if api_key_env is not None and not api_key_env.strip():
            raise ValueError("--api-key-env needs the name of an environment variable")
        self.model = model
        # the SDK would read OPENAI_BASE_URL itself, unrecorded and with the OpenAI key attached: read it here
        # instead, so it is recorded like --base-url and the key rules below apply to it
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL", "").strip() or None
        self.reasoning_model = is_reasoning_model(model) if reasoning_model is None else bool(reasoning_model)
        if self.reasoning_model and temperature is not None:
            raise ValueError(f"{model} is treated as a reasoning model, which takes only its default temperature: "
                             "drop --temperature, or pass --no-reasoning-model if it is not one")
        self.temperature = None if self.reasoning_model else float(temperature or 0.0)
        self.seed = seed
        self.prices = load_prices(price_table)
        table = price_table or os.environ.get(PRICE_ENV)
        if table and model not in self.prices:  # a table was given to get costs: an unpriced model is a slip
            raise ValueError(f"price table {table} has no entry for model {model!r} (it prices "
                             f"{', '.join(sorted(self.prices))}); add {{{model!r}: {{prompt, completion}}}} "
                             "(0 and 0 for a free local model)")
        #: the variable the key is read from (None: no key is sent, a non-OpenAI endpoint gets NO_KEY)
        self.api_key_env = api_key_env.strip() if api_key_env else (DEFAULT_KEY_ENV if is_openai_url(self.base_url) else None)
        self.max_retries = int(max_retries)
        self.backoff_s = float(backoff_s)
        default_timeout = DEFAULT_TIMEOUT_S_REASONING if self.reasoning_model else DEFAULT_TIMEOUT_S
        self.timeout_s = float(timeout_s) if timeout_s is not None else default_timeout
        default_cap = DEFAULT_MAX_TOKENS_REASONING if self.reasoning_model else DEFAULT_MAX_TOKENS
        self.max_tokens = int(max_tokens) if max_tokens is not None else default_cap
        self.max_obs_chars = int(max_obs_chars)
        if max_context_chars is not None and int(max_context_chars) < 1:
            raise ValueError("max_context_chars must be a positive number of characters")
        self.max_context_chars = int(max_context_chars) if max_context_chars is not None else None
        self.extra_body = parse_extra_body(extra_body)
        self._client: Any = None
        self._usage = self._zero_usage()
        self._note: dict[str, Any] = {}
        self.messages: list[dict[str, Any]] = []

    def settings(self) -> dict[str, Any]:
        """What shapes the requests, for the run manifest (the key's variable name, never the key)."""
        return {"model": self.model, "base_url": self.base_url, "api_key_env": self.api_key_env,
                "reasoning_model": self.reasoning_model, "temperature": self.temperature, "seed": self.seed,
                "max_retries": self.max_retries, "timeout_s": self.timeout_s, "max_tokens": self.max_tokens,
                "max_obs_chars": self.max_obs_chars, "max_context_chars": self.max_context_chars,
                "extra_body": self.extra_body, "price_per_mtok": list(self.prices.get(self.model, (0.0, 0.0)))}

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
        openai_module()
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
                "retries": 0, "malformed": 0, "context_overflows": 0, "elided": 0, "latency_s": 0.0}

    def usage(self) -> dict[str, Any]:
        u = dict(self._usage)
        u["cost_usd"] = round(u["cost_usd"], 8)
        u["latency_s"] = round(u["latency_s"], 3)
        return u

    def _start(self, seed: int) -> None:
        self._usage = self._zero_usage()
        self._note = {}
        self._episode_seed = seed
        # lowered when the endpoint says the context overflowed; per episode, so that a record never
        # depends on which episodes the same agent object ran before
        self._limit = self.max_context_chars
        self._cut = False  # the last reply hit the completion token cap
        if self._client is None:
            openai = openai_module()
            # the SDK's own retries are off: ours count each failure in usage() and cap Retry-After
            self._client = openai.OpenAI(api_key=self.api_key(), base_url=self.base_url, max_retries=0,
                                         timeout=self.timeout_s)

    def _observe(self, obs: Observation) -> str:
        """An observation as the model reads it: clipped visibly, with the budget left (and a word when
        the model's last reply was cut by the token cap, which otherwise reads as a malformed call)."""
        text = f"{clip_output(obs.text, self.max_obs_chars)}\n[step {obs.step}; {obs.steps_left} steps and " \
               f"{obs.time_left_s:.0f} s left]"
        if self._cut:
            text += (f"\n[your last reply was cut at the completion token cap ({self.max_tokens} tokens): "
                     "keep replies shorter]")
            self._cut = False
        return text

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

    def _complete(self, tools: list[dict[str, Any]] | None = None) -> Reply:
        """The model's next reply to ``self.messages``, which are kept within the context: the oldest
        observations are elided beyond ``max_context_chars`` and, after the endpoint says the context
        overflowed, below three quarters of what overflowed. StopEpisode when nothing is left to elide."""
        while True:
            if self._limit is not None and size(self.messages) > self._limit:
                # down to 3/4 of the limit, so elision comes in batches and a cached prompt prefix
                # stays valid for several steps in between
                self._usage["elided"] += elide(self.messages, self._limit * 3 // 4)
            sent = size(self.messages)
            try:
                reply = self._chat(self.messages, tools)
            except ContextOverflow:
                self._usage["context_overflows"] += 1
                # what overflowed bounds the context from above: keep below 3/4 of it from now on
                self._limit = min(self._limit or sent, sent * 3 // 4)
                elided = elide(self.messages, self._limit * 3 // 4)
                if not elided:  # only the prompt, the page and the last exchange are left
                    self._usage["stop_reason"] = "context_length_exceeded"
                    raise StopEpisode("the conversation does not fit the model's context") from None
                self._usage["elided"] += elided
                continue
            self._cut = reply.finish_reason == "length"
            return reply

    def _chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> Reply:
        """One completion, retried on 429/5xx/timeouts/connection errors; ProviderError when it cannot.

        Whatever the client raises is the endpoint's failure (a ProviderError), never the agent's; a
        context overflow is a ContextOverflow (a ProviderError the agents handle themselves).
        """
        import openai

        kwargs = self.request(messages, tools)
        u = self._usage
        for attempt in range(self.max_retries + 1):
            t = time.perf_counter()
            try:
                resp = self._client.chat.completions.create(**kwargs)
            except (openai.RateLimitError, openai.InternalServerError, openai.APITimeoutError,
                    openai.APIConnectionError, *transport_errors()) as exc:
                u["latency_s"] += time.perf_counter() - t
                u["provider_errors"] += 1
                if is_out_of_quota(exc):
                    raise ProviderError(f"{describe(exc)} (the account has no quota left: not retried)") from None
                if attempt >= self.max_retries:
                    raise ProviderError(f"{describe(exc)} (gave up after {attempt} retries)") from None
                u["retries"] += 1
                time.sleep(retry_delay(exc, attempt, self.backoff_s))
                continue
            except openai.APIStatusError as exc:  # 400/401/403/404...: retrying will not help
                u["latency_s"] += time.perf_counter() - t
                if is_context_overflow(exc):
                    raise ContextOverflow(describe(exc)) from None
                u["provider_errors"] += 1
                hint = ""
                if getattr(exc, "status_code", None) in (401, 403) and self.api_key_env is None:
                    hint = f"; no API key was sent to {self.base_url}: name its variable with --api-key-env"
                raise ProviderError(describe(exc) + hint) from None
            except Exception as exc:  # a body that is not JSON, a broken response, any other client failure
                u["latency_s"] += time.perf_counter() - t
                u["provider_errors"] += 1
                raise ProviderError(f"unreadable response from the endpoint: {describe(exc)}") from None
            u["latency_s"] += time.perf_counter() - t
            u["calls"] += 1
            self._count_tokens(getattr(resp, "usage", None))
            try:
                return read_reply(resp)
            except ProviderError:
                u["provider_errors"] += 1
                raise
        raise ProviderError("unreachable")  # pragma: no cover

    def _count_tokens(self, usage: Any) -> None:
        if usage is None:
            return
        pt, ct = count(getattr(usage, "prompt_tokens", 0)), count(getattr(usage, "completion_tokens", 0))
        u = self._usage
        u["prompt_tokens"] += pt
        u["completion_tokens"] += ct
        pin, pout = self.prices.get(self.model, (0.0, 0.0))
        u["cost_usd"] += (pt * pin + ct * pout) / 1e6

    def _valid(self, action: Any) -> bool:
        from srezero.tools.parse import parse_action
        from srezero.tools.registry import ToolError

        try:
            parse_action(action)
            return True
        except ToolError:
            return False


class PromptAgent(_LLMAgent):
    """Text actions: the model writes ``ACTION: tool(args)``; malformed replies become invalid actions."""

    def reset(self, task_info: Briefing, seed: int, tool_specs: list[dict[str, Any]]) -> None:
        self._start(seed)
        self.messages = [{"role": "system", "content": system_prompt(tool_specs, text_tools=True)}]
        self._first = True
        self._tell = ""  # what the model should know about how its last reply was read

    def act(self, observation: Observation) -> Any:
        self._note = {}
        # the first observation is the page itself, with its time and the budgets
        self.messages.append({"role": "user", "content": self._observe(observation) + self._tell +
                              ("\nWhat is your first action?" if self._first else "")})
        self._first = False
        msg = self._complete()
        self._note = msg.note(with_calls=False)
        reply = msg.content
        self.messages.append({"role": "assistant", "content": reply})
        action = extract_call(reply)
        if action is None or not self._valid(action):
            self._usage["malformed"] += 1
        self._tell = ""
        if action is None:
            self._tell = ("\nYour last reply had no action: end each reply with one line "
                          "ACTION: tool(arguments), e.g. ACTION: get_alerts()")
        elif (n := action_lines(reply)) > 1:
            self._tell = f"\nYour last reply had {n} ACTION lines; only the last was run (one action per reply)."
        return action if action is not None else reply.strip()[:2000]


class ReActAgent(_LLMAgent):
    """Native tool calls; a reply without one (or with malformed arguments) is an invalid action.

    ``strict_tools``: send the tools for ``strict: true`` function calling (every argument required,
    optional ones nullable; the episode reads ``null`` as the default)."""

    def __init__(self, *args: Any, strict_tools: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.strict_tools = bool(strict_tools)

    def settings(self) -> dict[str, Any]:
        # only when set, so the settings (and a resumed sweep's identity) of existing runs are unchanged
        return {**super().settings(), **({"strict_tools": True} if self.strict_tools else {})}

    def reset(self, task_info: Briefing, seed: int, tool_specs: list[dict[str, Any]]) -> None:
        from srezero.tools.registry import openai_tools

        self._start(seed)
        # what this episode offers (a live cluster serves fewer)
        self.tools = openai_tools(tool_specs, strict=self.strict_tools)
        self.messages = [{"role": "system", "content": system_prompt(tool_specs, text_tools=False)}]
        self.queue: list[tuple[str, str, str]] = []  # (call id, name, arguments) not yet executed
        self.pending: str | None = None  # id of the call whose result the next observation is
        self._first = True
        self._ran_text_call = False  # the last reply wrote a call as text instead of a native one

    def act(self, observation: Observation) -> Any:
        self._note = {}
        if self.pending is not None:
            self.messages.append({"role": "tool", "tool_call_id": self.pending, "content": self._observe(observation)})
        elif self._first:  # the page itself, with its time and the budgets
            self.messages.append({"role": "user", "content": self._observe(observation) + "\nStart investigating."})
        else:  # the last reply had no native call; a call written as text was still run
            nudge = ("\nYour last reply wrote its call as text; it was run (result above). Use a native tool call."
                     if self._ran_text_call else "\nYour last reply had no tool call: reply with a tool call.")
            self.messages.append({"role": "user", "content": self._observe(observation) + nudge})
        self._first = False
        self._ran_text_call = False
        self.pending = None
        if not self.queue:
            msg = self._complete(self.tools)
            self._note = msg.note(with_calls=True)  # on the first step the reply drives; queued calls have none
            entry: dict[str, Any] = {"role": "assistant", "content": msg.content}
            if msg.tool_calls:
                seen: set[str] = set()
                for i, (cid, name, arguments) in enumerate(msg.tool_calls):
                    cid = cid or f"call_{len(self.messages)}_{i}"
                    if cid in seen:  # each answer names its call: a repeated id would answer two calls
                        cid = f"{cid}_{i}"
                    seen.add(cid)
                    self.queue.append((cid, name, arguments))
                entry["tool_calls"] = [{"id": cid, "type": "function", "function": {"name": n, "arguments": a}}
                                       for cid, n, a in self.queue]
            self.messages.append(entry)
            if not msg.tool_calls:  # a valid call written as text is run, and is not malformed
                text = msg.content.strip()
                action = extract_call(text)
                if action is None or not self._valid(action):
                    self._usage["malformed"] += 1
                self._ran_text_call = action is not None
                return action or text[:2000]  # empty: the core says "empty action"
        cid, name, arguments = self.queue.pop(0)
        self.pending = cid
        action = {"name": name, "arguments": arguments or "{}"}
        if not self._valid(action):
            self._usage["malformed"] += 1
        return action
