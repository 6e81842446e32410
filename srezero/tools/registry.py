"""Tools are declared once, with ``@tool``; every front end derives from that declaration.

A declaration is a typed Python function: its name is the tool name, its docstring's first
paragraph the description, its ``Annotated[type, "description"]`` parameters the arguments, and
the decorator gives the kind (read, write, submit), the simulated cost in seconds and, for a tool
aimed at one entity, which argument names it (``target_arg``). From that,
srezero derives the JSON schema, the validating pydantic model, the text-call parser's argument
order, the OpenAI tools list, the Gymnasium action handling, the MCP tools and the docs; the
entity argument tells the scoring which entity a call looked at or changed (evidence, write
judgement) and tells the oracle where to put a fault's entity when it reads a signal.

The function body is the simulator's implementation. Other backends (Kubernetes) implement the same
names and receive the same validated arguments.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import re
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from srezero.errors import DeclarationError, near_misses
from srezero.tools.strict import drop_null_optionals, strict_parameters

Kind = Literal["read", "write", "submit"]
_SCALARS = frozenset((str, int, float, bool, type(None)))
_TYPE_ORDER = ("integer", "number", "boolean", "string", "array", "object", "null")
_TYPE_WORDS = {"integer": "a whole number (without quotes)", "number": "a number (without quotes)",
               "boolean": "true or false (without quotes)", "string": "text (in quotes)", "array": "a list",
               "object": "an object", "null": "null"}
_MAX_VERDICTS = 4096  # per tool; cleared when full (agents' distinct calls per run are far fewer)


def _closest(word: str, options: tuple[str, ...]) -> str | None:
    """The option a mistyped ``word`` most likely meant, if one is close."""
    close = near_misses(word, options, n=1)
    return close[0] if close else None


class ToolError(Exception):
    """Raised by a tool for bad input it can explain (unknown service, unknown metric...).

    ``tool`` names the tool the action asked for when it is known (its arguments were wrong).
    """

    def __init__(self, message: str, tool: str | None = None) -> None:
        super().__init__(message)
        self.tool = tool


def _describe(value: Any) -> str:
    """A wrong-typed argument as the agent wrote it, briefly."""
    if type(value) is bool:
        return f"the boolean {str(value).lower()}"
    if type(value) is str:
        return f"the text {value[:40]!r}" + ("..." if len(value) > 40 else "")
    return f"the number {value!r}"


@dataclass
class ToolOutput:
    """What a tool returns: text the agent reads plus structured data for programs.

    ``echo_lines`` is how many opening lines of ``text`` restate the call, quoting its arguments back
    ("dmesg on node-3:", "no log lines matching 'x' in worker ..."). The agent reads them; the evidence
    scorer never does (:attr:`returned`), so an argument cannot surface a signal by being echoed.

    ``line_entities`` is set by listings that mix entities (events): the entity each line of
    :attr:`returned` is about. The evidence scorer then credits a line to its own entity, whatever
    filter the call used: a node's pod events read through their service, or unfiltered, still show
    that node.
    """

    text: str
    data: Any = None
    echo_lines: int = 0
    line_entities: tuple[str, ...] | None = None

    @property
    def returned(self) -> str:
        """The part of ``text`` that the world returned: everything after the echoed lines."""
        if not self.echo_lines:
            return self.text
        parts = self.text.split("\n", self.echo_lines)
        return parts[self.echo_lines] if len(parts) > self.echo_lines else ""


@dataclass
class ToolSpec:
    name: str
    description: str
    kind: Kind
    cost_s: float
    fn: Callable[..., ToolOutput]
    params: list[inspect.Parameter] = field(default_factory=list)
    target_arg: str | None = None  # the argument that names the entity the call is aimed at

    @functools.cached_property
    def arguments(self) -> dict[str, tuple[Any, str]]:
        """Each argument's type (with its constraints) and description. Checked for every tool when the
        tools are first loaded, so a missing description stops ``make()``, not a step (cheap: no model)."""
        out: dict[str, tuple[Any, str]] = {}
        hints = typing.get_type_hints(self.fn, localns={"ToolContext": object}, include_extras=True)
        for p in self.params:
            ann = hints[p.name]
            desc = ""
            if typing.get_origin(ann) is typing.Annotated:
                base, *meta = typing.get_args(ann)
                desc = next((m for m in meta if isinstance(m, str)), "")
                constraints = [m for m in meta if not isinstance(m, str)]
                if constraints:
                    base = typing.Annotated[(base, *constraints)]
            else:
                base = ann
            if not desc.strip():  # agents choose arguments from these descriptions alone
                raise DeclarationError(f"tool {self.name!r}: argument {p.name!r} has no description; declare it as "
                                       f"{p.name}: Annotated[<type>, \"what it is\"] (docs/extending.md)")
            out[p.name] = (base, desc)
        return out

    @functools.cached_property
    def model(self) -> type[BaseModel]:
        fields: dict[str, Any] = {}
        for p in self.params:
            base, desc = self.arguments[p.name]
            default = ... if p.default is inspect.Parameter.empty else p.default
            fields[p.name] = (base, Field(default, description=desc))
        return create_model(f"{self.name}_args", __config__=ConfigDict(extra="forbid"), **fields)

    @functools.cached_property
    def schema(self) -> dict[str, Any]:
        schema = self.model.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        schema.setdefault("required", [])
        schema["additionalProperties"] = False
        return schema

    @functools.cached_property
    def arg_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    @functools.cached_property
    def _verdicts(self) -> dict[tuple[Any, ...], dict[str, Any] | str]:
        return {}

    def validate(self, args: dict[str, Any]) -> dict[str, Any]:
        """Validate and coerce arguments; raise ToolError with a readable message.

        Agents repeat the same calls (and the same mistakes) all the time, so verdicts on flat,
        scalar arguments are memoised: the key holds each value's type (``1``, ``1.0`` and ``True``
        are equal in Python but not to the validator) and floats by ``repr`` (``-0.0``, ``nan``)."""
        if self._json_params and any(type(args.get(k)) is str for k in self._json_params):
            args = self._decode_json_text(args)
        if all(type(v) in _SCALARS for v in args.values()):
            key = tuple((k, type(v), repr(v) if type(v) is float else v) for k, v in args.items())
            verdict = self._verdicts.get(key)
            if verdict is None:
                try:
                    verdict = self._validate(args)
                    if not all(type(v) in _SCALARS for v in verdict.values()):  # mutable output: never share
                        return verdict
                except ToolError as exc:
                    verdict = str(exc)
                if len(self._verdicts) >= _MAX_VERDICTS:
                    self._verdicts.clear()
                self._verdicts[key] = verdict
            if type(verdict) is str:
                raise ToolError(verdict)
            return dict(verdict)
        return self._validate(args)

    @functools.cached_property
    def _json_params(self) -> tuple[str, ...]:
        return tuple(k for k, p in self.schema.get("properties", {}).items() if p.get("type") in ("array", "object"))

    def _decode_json_text(self, args: dict[str, Any]) -> dict[str, Any]:
        """Many model hosts send array/object arguments as JSON text; decode those (only those, and
        only when the text is such a value: anything else is left for the validator to reject)."""
        out = dict(args)
        for key in self._json_params:
            value = out.get(key)
            if type(value) is str:
                with contextlib.suppress(orjson.JSONDecodeError):
                    decoded = orjson.loads(value)
                    if isinstance(decoded, list | dict):
                        out[key] = decoded
        return out

    @functools.cached_property
    def _arg_types(self) -> dict[str, frozenset[str]]:
        """Each argument's JSON types, from the schema (``anyOf`` for a union)."""
        out = {}
        for name, prop in self.schema.get("properties", {}).items():
            types = [prop["type"]] if "type" in prop else [p.get("type") for p in prop.get("anyOf", ())]
            out[name] = frozenset(t for t in types if t)
        return out

    def _type_problems(self, args: dict[str, Any]) -> list[str]:
        """Scalars of the wrong JSON type. Pydantic's lax mode would read ``true`` as 1 and ``"2"`` as 2, and
        a write would then run on a value the agent never sent; the schema is the contract, so only an
        integral number stands in for an integer (``2.0``) and an integer for a number."""
        problems = []
        for name, value in args.items():
            want = self._arg_types.get(name)
            t = type(value)
            if value is None and want:  # optional ones sent as null were dropped already
                problems.append(f"{name}: required, and null is no value (it means the default only for an "
                                "optional argument)")
                continue
            if not want or t not in (bool, int, float, str):
                continue
            if t is int and not -(2 ** 63) <= value < 2 ** 63:
                problems.append(f"{name}: a number too large for a 64-bit integer")
                continue
            ok = ("boolean" in want if t is bool else "string" in want if t is str else
                  "integer" in want or "number" in want if t is int else
                  "number" in want or ("integer" in want and value.is_integer()))
            if not ok:
                problems.append(f"{name}: must be {_TYPE_WORDS[min(want, key=_TYPE_ORDER.index)]}, "
                                f"not {_describe(value)}")
        return problems

    def _validate(self, args: dict[str, Any]) -> dict[str, Any]:
        if self._json_params or any(v is None for v in args.values()):  # null: "the default" (tools/strict.py)
            args = drop_null_optionals(args, self.schema)
        problems = self._type_problems(args)
        if problems:
            raise ToolError(f"invalid arguments for {self.name}: " + "; ".join(problems))
        try:
            obj = self.model.model_validate(args)
        except ValidationError as exc:
            parts = []
            for err in exc.errors(include_url=False):
                loc = ".".join(str(x) for x in err["loc"]) or "arguments"
                msg = err["msg"]
                if err["type"] == "extra_forbidden":
                    msg = f"unknown argument; {self.name} takes {', '.join(self.arg_names) or 'no arguments'}"
                    hint = _closest(str(err["loc"][0]), self.arg_names)
                    msg += f" (did you mean {hint}?)" if hint else ""
                elif err["type"] == "missing":
                    msg = "required argument is missing"
                elif err["type"] == "literal_error":  # say what was sent, and the likely intended choice
                    choices = tuple(re.findall(r"'([^']*)'", str(err.get("ctx", {}).get("expected", ""))))
                    hint = _closest(str(err["input"]), choices)
                    msg += f", not {err['input']!r}" + (f" (did you mean {hint!r}?)" if hint else "")
                parts.append(f"{loc}: {msg}")
            raise ToolError(f"invalid arguments for {self.name}: " + "; ".join(parts)) from None
        return obj.model_dump()

    @functools.cached_property
    def _schema_bytes(self) -> bytes:
        return orjson.dumps(self.schema)

    def fresh_schema(self) -> dict[str, Any]:
        """A private copy of :attr:`schema`: a caller that edits it (say, to add a strict-mode flag)
        must not change what every other episode in the process is told."""
        return orjson.loads(self._schema_bytes)

    def public(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.fresh_schema(),
                "kind": self.kind, "cost_s": self.cost_s}

    def signature(self) -> str:
        parts = []
        for p in self.params:
            parts.append(p.name if p.default is inspect.Parameter.empty else f"{p.name}={p.default!r}")
        return f"{self.name}({', '.join(parts)})"


TOOLS: dict[str, ToolSpec] = {}


def tool(kind: Kind, cost_s: float, target_arg: str | None = None
         ) -> Callable[[Callable[..., ToolOutput]], Callable[..., ToolOutput]]:
    """Declare a tool. The first parameter of the function is the context and is not an argument.

    ``target_arg`` names the argument that holds the entity the call is aimed at (a service, replica,
    node...), e.g. ``"node"`` for ``node_diagnostics(node, check)``; leave it unset for a tool that is
    not aimed at one entity (``get_alerts``, ``inspect_database``). Evidence scoring matches a fault's
    signals on it, the write judge reads the target of a write from it, and the oracle puts the
    fault's entity there when it reads a signal (see :func:`target_arg`).
    """

    if kind not in typing.get_args(Kind):  # a typo would silently keep a read from counting as evidence
        raise DeclarationError(f"@tool kind {kind!r} is not one of {', '.join(typing.get_args(Kind))}")
    if not isinstance(cost_s, int | float) or isinstance(cost_s, bool) or not 0 <= cost_s < float("inf"):
        raise DeclarationError(f"@tool cost_s must be the simulated seconds a call takes (0 or more), not {cost_s!r}")

    def deco(fn: Callable[..., ToolOutput]) -> Callable[..., ToolOutput]:
        doc = inspect.getdoc(fn) or ""
        description = doc.split("\n\n")[0].replace("\n", " ").strip()
        params = list(inspect.signature(fn).parameters.values())[1:]
        if fn.__name__ in TOOLS:
            raise DeclarationError(f"tool {fn.__name__!r} declared twice")
        if target_arg is not None and target_arg not in {p.name for p in params}:
            raise DeclarationError(f"tool {fn.__name__!r}: target_arg {target_arg!r} is not one of its arguments")
        if not description:
            raise DeclarationError(f"tool {fn.__name__!r} has no docstring; its first paragraph is the description "
                                   "agents read (docs/extending.md)")
        TOOLS[fn.__name__] = ToolSpec(fn.__name__, description, kind, cost_s, fn, params, target_arg)
        return fn

    return deco


#: Modules that declare tools, in the order tools are listed. A new tool module is one more entry.
TOOL_MODULES = ("read", "consoles", "write", "write_services", "write_nodes", "submit")


@functools.cache
def _import_tool_modules() -> None:
    """Import every tool module once, then fix the order: by module in TOOL_MODULES, then by line of
    declaration, whatever happened to import first."""
    import importlib

    for name in TOOL_MODULES:
        importlib.import_module(f"srezero.tools.{name}")
    rank = {f"srezero.tools.{m}": i for i, m in enumerate(TOOL_MODULES)}
    ordered = sorted(TOOLS.values(), key=lambda t: (rank.get(t.fn.__module__, len(rank)), t.fn.__code__.co_firstlineno))
    TOOLS.clear()
    TOOLS.update((t.name, t) for t in ordered)


_checked_count = 0  # how many tools load_tools had checked; another is declared when TOOLS grows


def load_tools() -> dict[str, ToolSpec]:
    global _checked_count
    _import_tool_modules()
    if len(TOOLS) != _checked_count:  # parsing and validation call this on every step: check only when it grew
        for t in TOOLS.values():  # a DeclarationError for an undescribed argument stops make(), not a step
            t.arguments  # noqa: B018
        _checked_count = len(TOOLS)
    return TOOLS


def target_arg(name: str) -> str | None:
    """The argument of tool ``name`` that names its entity (declared with ``@tool(..., target_arg=...)``);
    None for a tool aimed at no single entity, or an unknown tool."""
    spec = load_tools().get(name)
    return spec.target_arg if spec is not None else None


def target_of(name: str, args: dict[str, Any]) -> str:
    """The entity a call of tool ``name`` with ``args`` is aimed at ("" when none is named)."""
    key = target_arg(name)
    return str(args.get(key) or "") if key else ""


def tool_specs() -> list[dict[str, Any]]:
    """Every tool as ``{"name", "description", "parameters" (JSON schema), "kind", "cost_s"}``."""
    return [t.public() for t in load_tools().values()]


def openai_tools(specs: list[dict[str, Any]] | None = None, strict: bool = False) -> list[dict[str, Any]]:
    """Tools in OpenAI's function-calling format: ``specs`` (as an agent is handed them: a live backend
    offers only the tools it serves, in its own words), or every simulator tool. ``strict``: in the form
    ``strict: true`` function calling accepts (optional arguments nullable, see :mod:`srezero.tools.strict`)."""
    if specs is None:
        specs = tool_specs()
    out = []
    for s in specs:
        params = strict_parameters(s["parameters"]) if strict else orjson.loads(orjson.dumps(s["parameters"]))
        out.append({"type": "function", "function": {"name": s["name"], "description": s["description"],
                                                     "parameters": params, **({"strict": True} if strict else {})}})
    return out
