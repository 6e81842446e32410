"""The LLM agents' command-line options, declared once for ``srezero run`` and ``srezero sweep``.

``@llm_options`` adds the options and hands the command one ``llm`` dict of agent constructor
arguments (``--llm-seed`` becomes ``seed``); options left unset are ``None``, which
:func:`srezero.sweep.runner.agent_spec` drops, so non-LLM agents never see them.
:func:`preflight` checks what an LLM agent needs (the openai package, the API key) before any
episode runs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

import click

#: command parameter -> agent constructor argument
PARAMS: tuple[tuple[str, str], ...] = (
    ("model", "model"), ("base_url", "base_url"), ("api_key_env", "api_key_env"), ("temperature", "temperature"),
    ("llm_seed", "seed"), ("reasoning_model", "reasoning_model"), ("max_tokens", "max_tokens"),
    ("price_table", "price_table"), ("extra_body", "extra_body"),
)

_DECLARATIONS = (
    click.option("--model", help="model name, for LLM agents"),
    click.option("--base-url", help="OpenAI-compatible endpoint, for LLM agents [default: $OPENAI_BASE_URL, else "
                                    "the OpenAI API]; "
                                    "another endpoint gets no API key unless --api-key-env names one"),
    click.option("--api-key-env", metavar="NAME",
                 help="environment variable holding the API key, for LLM agents (its name is recorded, never "
                      "the key) [default: OPENAI_API_KEY for the OpenAI API; none for another --base-url]"),
    click.option("--temperature", type=float, help="sampling temperature, for LLM agents [default: 0]"),
    click.option("--llm-seed", type=int, help="fixed sampling seed for LLM agents [default: a hash of the episode seed, agent_seed]"),
    click.option("--reasoning-model/--no-reasoning-model", default=None,
                 help="send max_completion_tokens and no temperature, as OpenAI reasoning models require "
                      "[default: by model name: o1, o3, o4-mini, gpt-5, ...]"),
    click.option("--max-tokens", type=click.IntRange(min=1),
                 help="completion token cap per request, for LLM agents [default: 1024; 16384 for reasoning models]"),
    click.option("--price-table", type=click.Path(dir_okay=False, exists=True),
                 help="JSON or TOML price table for LLM cost (docs/baselines.md)"),
    click.option("--extra-body", metavar="JSON",
                 help="more request-body fields for the endpoint, as a JSON object, for LLM agents "
                      "(e.g. '{\"top_k\": 20}' for vLLM, '{\"reasoning_effort\": \"low\"}'); recorded in the manifest"),
)


def llm_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Add the LLM options to a click command; it receives them as ``llm=`` (constructor arguments)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        llm = {arg: kwargs.pop(param) for param, arg in PARAMS}
        return fn(*args, llm=llm, **kwargs)

    for declare in reversed(_DECLARATIONS):  # as if stacked in this order above the function
        wrapper = declare(wrapper)
    return wrapper


def preflight(agents: Iterable[Any], probe: bool = False) -> None:
    """Fail before any episode runs when an agent with a ``preflight()`` (the LLM agents: the openai
    package, the API key) cannot work; other agents are not touched. With ``probe``, agents that have
    a ``probe()`` also send one short request, once per endpoint, model and settings."""
    from srezero.agents import registry

    probed: set[str] = set()
    for agent in agents:
        cls = registry.resolve(agent.name)
        if not hasattr(cls, "preflight"):
            continue
        try:
            bot = agent.create()
            bot.preflight()
            key = repr(sorted(agent.options))
            if probe and hasattr(bot, "probe") and key not in probed:
                probed.add(key)
                bot.probe()
        except (ValueError, TypeError) as exc:
            raise click.ClickException(f"agent {agent.label}: {exc}") from None
