"""Strict function calling: the tool schemas in the form OpenAI's ``strict: true`` accepts, and the rule
that makes the episode read what such a model sends.

Strict mode requires every property to be listed in ``required``, ``additionalProperties: false`` on
every object, no ``default``, and only the bound keywords it supports. An optional argument therefore
becomes nullable, and the model sends ``null`` for "leave it at the default". The episode reads an
optional argument sent as ``null`` as omitted, in any mode (:func:`drop_null_optionals`), so the same
call means the same thing with or without strict mode. A required argument sent as ``null`` stays an
invalid action.
"""

from __future__ import annotations

import copy
from typing import Any

from srezero.tools.schema_words import bound_words, resolve_ref

#: Bound keywords strict mode refuses; they move into the description, in words.
UNSUPPORTED_BOUNDS = frozenset({"minLength", "maxLength"})


def strict_parameters(schema: dict[str, Any]) -> dict[str, Any]:
    """A strict-mode copy of a tool's parameter schema (``$defs`` kept, they are supported)."""
    out = copy.deepcopy(schema)
    _strict_object(out)
    for sub in out.get("$defs", {}).values():
        _strict_object(sub)
    return out


def _strict_object(node: dict[str, Any]) -> None:
    props = node.get("properties")
    if node.get("type") != "object" or not isinstance(props, dict):
        return
    required = set(node.get("required", ()))
    for name, prop in props.items():
        _strict_value(prop)
        if name not in required:
            default = prop.pop("default", None)
            note = f"null for the default ({default!r})" if default not in (None, "") else "null to leave it out"
            desc = prop.pop("description", "")
            props[name] = {"anyOf": [prop, {"type": "null"}], "description": f"{desc}; {note}" if desc else note}
    node["required"] = list(props)
    node["additionalProperties"] = False


def _strict_value(prop: dict[str, Any]) -> None:
    words = bound_words(prop, UNSUPPORTED_BOUNDS)
    for key in UNSUPPORTED_BOUNDS:
        prop.pop(key, None)
    if words:
        prop["description"] = f"{prop.get('description', '')} ({', '.join(words)})".lstrip()
    if prop.get("type") == "array" and isinstance(prop.get("items"), dict):
        _strict_value(prop["items"])
        _strict_object(prop["items"])


def drop_null_optionals(args: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """``args`` without the optional arguments (and optional fields of nested objects) sent as ``null``."""
    defs = schema.get("$defs", {})

    def walk(value: Any, node: dict[str, Any]) -> Any:
        node = resolve_ref(node, defs)
        props = node.get("properties")
        if isinstance(value, dict) and isinstance(props, dict):
            required = set(node.get("required", ()))
            return {k: walk(v, props.get(k, {})) for k, v in value.items()
                    if not (v is None and k in props and k not in required)}
        if isinstance(value, list) and isinstance(node.get("items"), dict):
            return [walk(v, node["items"]) for v in value]
        return value

    return walk(args, schema)
