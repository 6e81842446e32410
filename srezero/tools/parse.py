"""Turn an action into ``(tool name, validated args)``; anything malformed becomes a ToolError.

Accepted forms:

* a dict ``{"tool": "search_logs", "args": {"service": "database"}}`` (``"name"``/``"arguments"``
  are accepted aliases, and ``"arguments"`` may be a JSON string, as OpenAI tool calls deliver it);
* a text call ``search_logs(service="database", pattern="timeout")``, positional arguments in the
  declared order, Python or JSON literals;
* a kubectl-style command ``kubectl get pods`` (see :mod:`srezero.tools.kubectl`);
* an :class:`Action`.

A text action wrapped in one markdown code fence (with or without a language tag) or one pair of
backticks is read without that wrapping: models often format a plain-text reply that way.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from srezero.errors import did_you_mean
from srezero.tools.registry import ToolError, load_tools

MAX_ACTION_CHARS = 20_000
#: Why a longer action is refused. The message does not say how long it was: a trajectory keeps only the
#: first MAX_ACTION_CHARS characters of it, and its replay must show the agent the same text.
TOO_LONG = f"the action is longer than the limit of {MAX_ACTION_CHARS:,} characters; send a shorter one"
CLIPPED = " [clipped]"
#: A code fence's info string: empty or one word such as ``json``, ``python``, ``bash``.
_FENCE_INFO = re.compile(r"[A-Za-z0-9_+.-]*")
_LITERAL_NAMES = {"true": True, "false": False, "null": None, "none": None, "True": True, "False": False, "None": None}


@dataclass(frozen=True)
class Action:
    tool: str
    args: dict[str, Any] = field(default_factory=dict)


def _literal(node: ast.expr, name: str = "") -> Any:
    if isinstance(node, ast.Name) and node.id in _LITERAL_NAMES:
        return _LITERAL_NAMES[node.id]
    if isinstance(node, ast.Name):  # service=database: the commonest slip, so say how to fix it
        arg = f"{name}=" if name else ""
        raise ToolError(f"{arg}{node.id[:40]}: a bare name is not a value; quote text: {arg}\"{node.id[:40]}\"")
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise ToolError("arguments must be literals (strings, numbers, booleans, lists or dicts)") from None


def unwrap_markdown(text: str) -> str:
    """``text`` (already stripped) without one surrounding code fence or pair of backticks.

    Only a single, complete wrapping is removed: text with backticks inside is left as it is, so it
    fails to parse as before instead of being guessed at."""
    if len(text) >= 6 and text.startswith("```") and text.endswith("```"):
        inner = text[3:-3]
        if "`" in inner:
            return text
        head, newline, body = inner.partition("\n")
        if newline and body.strip() and _FENCE_INFO.fullmatch(head.strip()):
            inner = body  # the opening line is a language tag (json, python, bash...) or empty
        return inner.strip()
    if len(text) >= 2 and text[0] == text[-1] == "`" and "`" not in text[1:-1]:
        return text[1:-1].strip()
    return text


def parse_text(text: str) -> tuple[str, dict[str, Any]]:
    text = text.strip()
    if len(text) > MAX_ACTION_CHARS:
        raise ToolError(TOO_LONG)
    text = unwrap_markdown(text)
    if not text:
        raise ToolError("empty action; write a tool call such as get_alerts()")
    if text.startswith(("kubectl ", "k ")) or text == "kubectl":
        try:
            from srezero.tools.kubectl import translate
        except ImportError:  # pragma: no cover - the kubectl translator ships with srezero
            raise ToolError("kubectl-style commands are not available in this build") from None
        return translate(text)
    if text.startswith("{"):
        try:
            return parse_dict(orjson.loads(text))
        except orjson.JSONDecodeError as e:
            raise ToolError(f"action looks like JSON but does not parse: {e}") from None
    tools = load_tools()
    if text.isidentifier():
        text += "()"
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as e:
        why = f" ({e.msg})" if isinstance(e, SyntaxError) and e.msg else ""
        raise ToolError(f"could not parse {text[:80]!r} as a tool call like search_logs(service=\"database\")"
                        f"{why}") from None
    call = tree.body
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        raise ToolError("an action must be a single tool call like get_status(service=\"web_server\")")
    name = call.func.id
    spec = tools.get(name)
    if spec is None:
        raise UnknownTool(name)
    if len(call.args) > len(spec.arg_names):
        n = len(spec.arg_names)
        if n == 0:
            raise ToolError(f"{name} takes no arguments: call {name}()")
        raise ToolError(f"{name} takes at most {n} positional argument{'' if n == 1 else 's'} ({', '.join(spec.arg_names)})")
    args: dict[str, Any] = {}
    for pname, node in zip(spec.arg_names, call.args):
        if isinstance(node, ast.Starred):
            raise ToolError("star-arguments are not supported")
        args[pname] = _literal(node, pname)
    for kw in call.keywords:
        if kw.arg is None:
            raise ToolError("**kwargs are not supported")
        if kw.arg in args:
            raise ToolError(f"argument {kw.arg!r} given twice")
        args[kw.arg] = _literal(kw.value, kw.arg)
    return name, args


def parse_dict(action: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    name = action.get("tool", action.get("name"))
    if not isinstance(name, str):
        raise ToolError('a dict action needs a "tool" name, e.g. {"tool": "get_alerts", "args": {}}')
    args = action.get("args", action.get("arguments", {}))
    if isinstance(args, str):
        try:
            args = orjson.loads(args) if args.strip() else {}
        except orjson.JSONDecodeError as e:
            raise _bad_args(name, f"are not valid JSON: {e}") from None
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise _bad_args(name, f"must be an object, got {type(args).__name__}")
    extra = set(action) - {"tool", "name", "args", "arguments", "id", "type"}
    if extra:
        raise ToolError(f"unexpected keys in action: {', '.join(sorted(map(str, extra)))}")
    return name, args


def _bad_args(name: str, problem: str) -> ToolError:
    """Arguments that are no JSON object; a known tool is still named (the record's ``tool`` field)."""
    return ToolError(f"arguments for {name} {problem}", name if name in load_tools() else None)


class UnknownTool(ToolError):
    """An action named a tool that does not exist; ``name`` is what it asked for."""

    def __init__(self, name: Any, offered: tuple[str, ...] | None = None) -> None:
        super().__init__(unknown_tool_message(name, offered))
        self.name = name


def unknown_tool_message(name: Any, offered: tuple[str, ...] | None = None) -> str:
    """The error for a tool that does not exist: the nearest name first (a typo is the usual cause),
    then every tool ``offered`` (default: all), so an agent that guessed a name from another benchmark
    learns the real set."""
    names = offered if offered is not None else tuple(load_tools())
    shown = str(name)[:60]
    hint = _nearest(shown, names) or ";"
    return f"unknown tool {shown!r}{hint} available tools: {', '.join(names)}"


@functools.lru_cache(maxsize=256)
def _nearest(name: str, names: tuple[str, ...]) -> str:
    """The did-you-mean hint for a tool name (cached: agents repeat their typos; tool names look alike)."""
    return did_you_mean(name, names, cutoff=0.75)


def canonical(action: Any) -> tuple[Any, Any]:
    """``(the action the episode acts on, the action its trajectory records)``.

    An action built of exact built-in types (nearly every one) is acted on as it is. One holding
    subclasses of them (a ``str`` whose ``encode`` or ``__eq__`` raises, a ``float`` orjson cannot write)
    is first made of their exact base types, so an agent's odd objects are an invalid action like any
    other, not an escaped exception or a "simulator bug"."""
    if type(action) is str:
        return action, _clipped(escaped_text(action))
    if type(action) is dict:
        try:  # fails on a subclass, a non-JSON value or an int beyond 64 bits: the slow path below
            blob = orjson.dumps(action, option=orjson.OPT_PASSTHROUGH_SUBCLASS)
        except TypeError:
            pass
        else:
            return action, (orjson.loads(blob) if len(blob) <= MAX_ACTION_CHARS else _clipped(blob.decode()))
    action = plain(action)
    return action, recordable(action)


def plain(value: Any, depth: int = 0) -> Any:
    """``value`` with every subclass of str, int, float, dict, list and tuple (and an Action's fields) made
    its exact base type, by the base type's own methods (a subclass may override any of its own)."""
    kind = type(value)
    if value is None or kind in (str, int, float, bool):
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if depth >= _MAX_DEPTH:
        return value
    if isinstance(value, dict):
        return {plain(k, depth + 1): plain(v, depth + 1) for k, v in dict.items(value)}
    if isinstance(value, list):
        return [plain(v, depth + 1) for v in list.__iter__(value)]
    if isinstance(value, tuple):
        return tuple(plain(v, depth + 1) for v in tuple.__iter__(value))
    if kind is Action:
        return Action(plain(value.tool, depth + 1), plain(value.args, depth + 1))
    return value


def recordable(action: Any) -> Any:
    """``action`` as a trajectory records it: JSON-safe and the same bytes in every process.

    Text and JSON-shaped dicts are kept; a typed :class:`Action` is its repr (the replay agent reads it
    back); any other object is named by its type, since a default repr carries a memory address and
    would make two runs of the same agent differ. Whatever is longer than ``MAX_ACTION_CHARS`` as JSON
    is kept as the first that many characters of its text, marked ``[clipped]``: an agent must not be
    able to make a record megabytes long, and ``parse_action`` refuses such an action and its replay alike."""
    if isinstance(action, str):
        return _clipped(json_safe(action))
    if isinstance(action, Action):
        return _clipped(f"Action(tool={json_safe(action.tool)!r}, args={json_safe(action.args)!r})")
    if isinstance(action, dict):
        try:  # the common case, in C: a copy (the agent may reuse its dict), or an error for what JSON cannot hold
            blob = orjson.dumps(action)
        except TypeError:
            kept = json_safe(action)
            blob = orjson.dumps(kept)
        if len(blob) > MAX_ACTION_CHARS:
            return _clipped(blob.decode())
        return orjson.loads(blob)
    kept = json_safe(action)  # a "<TypeName>" string, or plain data whose repr has no address in it
    return _clipped(kept if isinstance(kept, str) else repr(kept))


def _clipped(text: str) -> str:
    return text if len(text) <= MAX_ACTION_CHARS else text[:MAX_ACTION_CHARS] + CLIPPED


_MAX_DEPTH = 32


def escaped_text(text: str) -> str:
    """``text`` with what UTF-8 (and so JSON) cannot encode, lone surrogates, backslash-escaped."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def json_safe(value: Any, depth: int = 0) -> Any:
    """A JSON-safe copy of ``value``: strings (lone surrogates escaped; bytes decoded), 64-bit ints,
    floats, bools, None, lists and string-keyed dicts; anything else becomes ``"<TypeName>"``."""
    if value is None or isinstance(value, bool | float):
        return value if type(value) in (bool, float) or value is None else float.__float__(value)
    if isinstance(value, str):
        return escaped_text(str.__str__(value))  # the base type's methods: a subclass may override its own
    if isinstance(value, int):
        value = int.__int__(value)
        return value if -(2 ** 63) <= value < 2 ** 64 else str(value)
    if isinstance(value, bytes | bytearray):  # validation reads bytes as text too
        return bytes(value).decode("utf-8", "backslashreplace")
    if depth >= _MAX_DEPTH:
        return "<...>"
    if isinstance(value, dict):
        return {escaped_text(k) if type(k) is str else str(json_safe(k, depth + 1)): json_safe(v, depth + 1)
                for k, v in dict.items(value)}
    if isinstance(value, list):
        return [json_safe(v, depth + 1) for v in list.__iter__(value)]
    if isinstance(value, tuple):
        return [json_safe(v, depth + 1) for v in tuple.__iter__(value)]
    if type(value).__module__ == "numpy" and callable(getattr(value, "tolist", None)):  # scalars and arrays
        return json_safe(value.tolist(), depth + 1)
    return f"<{type(value).__name__}>"


def parse_action(action: Any, recorded: Any = None) -> tuple[str, dict[str, Any]]:
    """Parse and validate any accepted action form. Raises ToolError with a message for the agent.

    ``recorded`` is ``recordable(action)``, when the caller records it: an action too long to record
    whole is refused as its clipped record would be on replay."""
    if isinstance(recorded, str) and len(recorded) > MAX_ACTION_CHARS:
        raise ToolError(TOO_LONG)
    if isinstance(action, Action):
        if not isinstance(action.tool, str) or not isinstance(action.args, dict):
            raise ToolError("an Action needs a tool name (a string) and args (a dict)")
        name, args = action.tool, dict(action.args)
    elif isinstance(action, dict):
        name, args = parse_dict(action)
    elif isinstance(action, str):
        name, args = parse_text(action)
    else:
        raise ToolError(f"an action must be a dict, a string or an Action, not {type(action).__name__}")
    spec = load_tools().get(name)
    if spec is None:
        raise UnknownTool(name)
    try:
        return name, spec.validate(args)
    except ToolError as exc:  # keep which tool was asked for: the transcript and info name it
        exc.tool = name
        raise
