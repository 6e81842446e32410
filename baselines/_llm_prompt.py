"""What the LLM agents tell the model: the system prompt, the tools in words, clipped observations,
and a conversation trimmed to fit the model's context.

Private to :mod:`baselines.llm`. Everything here is the same for every task and seed: the prompt
explains the published diagnosis format and taxonomy, never anything about a particular incident.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from srezero.faults.base import CATEGORIES
from srezero.tools.schema_words import bound_words

SYSTEM = """You are the on-call site-reliability engineer for a production system (load balancer, web servers, \
cache, database with a replica, message queue, workers, and the nodes they run on). You have been paged. \
Investigate with the read tools, fix the root cause with the write tools (every write has consequences: \
avoid guesses), submit a structured diagnosis with submit_diagnosis and then call resolve(). Budgets are \
limited: each action costs a step and simulated time, and every observation ends with the steps and time left."""

DIAGNOSIS = """The diagnosis: submit_diagnosis(root_causes=[{{"entity": ..., "category": ..., "detail": ...}}], \
summary="...") with one claim per root cause.
- entity: where the fault is, named exactly as the tools show it (get_topology, get_status, get_config): \
a service (web_server), a replica or a node by its name, a disk as <node>/<device>, \
a configuration key as <service>.<key>. A service also names a fault in one of its replicas or keys, and \
a node one in its disks; a finer name than the fault's own does not.
- category: one of
{categories}
- detail: what is wrong, concretely, not only where: the key and its bad value, the device and how it \
fails, the release.
Blaming healthy entities, or claiming one cause under two categories, costs the diagnosis. An empty \
list means a false alarm (no fault). The last submission counts; the summary is kept but not scored."""

REACT_NOTE = "Call the tools to act. Several tool calls in one reply run in order, one step each."

PROMPT_FORMAT = """Tools (call exactly one per reply):
{tools}

Reply with at most a few sentences of reasoning, then a final line of the form
ACTION: tool_name(arg="value", other=3)
using Python or JSON literals for arguments."""

#: What replaces an old observation (or an old reply's reasoning) elided to fit the model's context.
ELIDED = "[output elided to fit the model's context window; repeat the call if you need it again]"
_ELIDED_REASONING = "[reasoning elided to fit the model's context window]"


def system_prompt(tool_specs: list[dict[str, Any]], text_tools: bool) -> str:
    """The system prompt: the job, the diagnosis format and taxonomy, and for the prompt agent the tools."""
    cats = categories(tool_specs)
    lines = "\n".join(f"  {c}: {CATEGORIES[c]}" if c in CATEGORIES else f"  {c}" for c in cats)
    parts = [SYSTEM, DIAGNOSIS.format(categories=lines or "  (see submit_diagnosis)")]
    if text_tools:
        parts.append(PROMPT_FORMAT.format(tools="\n".join(signature(s) for s in tool_specs)))
    else:
        parts.append(REACT_NOTE)
    return "\n\n".join(parts)


def categories(specs: list[dict[str, Any]]) -> list[str]:
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


def _type(p: dict[str, Any], defs: dict[str, Any], depth: int = 0) -> str:
    """A schema in a line: literal choices, unions, lists and (one level of) objects, as the model writes
    them, each with its bounds (``integer (1 to 200)``): an out-of-range value is an invalid action."""
    if "$ref" in p:
        p = {**defs.get(p["$ref"].rsplit("/", 1)[-1], {}), **{k: v for k, v in p.items() if k != "$ref"}}
    bounds = bound_words(p)
    return _bare_type(p, defs, depth) + (f" ({', '.join(bounds)})" if bounds else "")


def _bare_type(p: dict[str, Any], defs: dict[str, Any], depth: int) -> str:
    if "enum" in p:
        return "|".join(orjson.dumps(v).decode() for v in p["enum"])
    if "anyOf" in p:
        return "|".join(_type(x, defs, depth) for x in p["anyOf"])
    kind = p.get("type")
    if kind == "array":
        return f"[{_type(p.get('items', {}), defs, depth)}, ...]"
    if kind == "object" and p.get("properties") and depth < 2:
        required = p.get("required", [])
        fields = [f'"{k}": {_type(v, defs, depth + 1)}' + ("" if k in required else " (optional)")
                  for k, v in p["properties"].items()]
        return "{" + ", ".join(fields) + "}"
    return str(kind or "object")


def signature(spec: dict[str, Any]) -> str:
    """One tool for the prompt agent: its call with argument types, choices and defaults, its purpose,
    and each argument's description (what the native tools list gives the ReAct agent)."""
    params = spec.get("parameters", {})
    defs = params.get("$defs", {})
    props = params.get("properties", {})
    required = params.get("required", [])
    parts, notes = [], []
    for name, p in props.items():
        default = "" if name in required else f" = {p.get('default')!r}"
        parts.append(f"{name}: {_type(p, defs)}{default}")
        if p.get("description"):
            notes.append(f"    {name}: {p['description']}")
    return "\n".join([f"- {spec['name']}({', '.join(parts)}): {spec.get('description', '')}", *notes])


_ACTION = re.compile(r"^\s*(?:\*\*)?ACTION(?:\*\*)?\s*:\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)
_CALL = re.compile(r"^\s*`*([a-z_]+\(.*\))`*\s*$", re.MULTILINE | re.DOTALL)


def extract_call(reply: str) -> str | None:
    """The action line of a prompt-agent reply: the last ``ACTION:`` line, else a bare call."""
    found = _ACTION.findall(reply or "")
    if found:  # Markdown around it is common: **ACTION:** `get_status()`
        return found[-1].strip(" *`")
    m = _CALL.search((reply or "").strip())
    return m.group(1) if m else None


def action_lines(reply: str) -> int:
    """How many ``ACTION:`` lines a reply has (only the last is run)."""
    return len(_ACTION.findall(reply or ""))


def clip_output(text: str, limit: int) -> str:
    """At most about ``limit`` characters of a tool's output: its head and its tail, cut at line ends,
    with a visible note of what was cut from the middle. Logs, events and changes list the newest
    last and alerts the newest first, so both ends matter; a head-only clip hid the newest lines."""
    if len(text) <= limit:
        return text
    head, tail = text[: limit // 2], text[len(text) - (limit - limit // 2):]
    if "\n" in head:
        head = head[: head.rindex("\n")]
    if "\n" in tail:
        tail = tail[tail.index("\n") + 1:]
    middle = text[len(head): len(text) - len(tail)]
    note = (f"[... {len(middle)} characters ({middle.count(chr(10))} lines) cut from the middle of this output; "
            "narrow the call (a pattern, a level, a smaller limit or window) to see them ...]")
    return f"{head}\n{note}\n{tail}"


def size(messages: list[dict[str, Any]]) -> int:
    """Characters of a conversation's texts and tool-call arguments: what grows with each step."""
    n = 0
    for m in messages:
        n += len(m.get("content") or "")
        for call in m.get("tool_calls") or ():
            n += len(call["function"]["arguments"]) + len(call["function"]["name"])
    return n


def elide(messages: list[dict[str, Any]], target: int) -> int:
    """Elide the oldest observations (and the reasoning of old text replies, keeping their action line)
    until the conversation is at most ``target`` characters; the system prompt, the page and the last
    exchange (the last reply and every answer after it: the model has not seen those yet, however many
    parallel calls it made) stay whole, and every tool call keeps its answer (the API requires one).
    Returns how many messages were elided."""
    done = 0
    total = size(messages)
    last_reply = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=len(messages))
    for m in messages[2: max(2, last_reply)]:
        if total <= target:
            break
        old = m.get("content") or ""
        if m["role"] in ("tool", "user"):
            new = ELIDED
        elif m["role"] == "assistant" and "tool_calls" not in m:
            action = extract_call(old)
            new = f"{_ELIDED_REASONING}\nACTION: {action}" if action else _ELIDED_REASONING
        else:
            new = ""  # a tool-calling reply keeps its calls; its text goes
        if len(new) < len(old) and not old.startswith(("[output elided", _ELIDED_REASONING)):
            m["content"] = new
            total -= len(old) - len(new)
            done += 1
    return done
