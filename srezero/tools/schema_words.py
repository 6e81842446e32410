"""A tool argument's JSON-schema bounds in words, and its local ``$ref`` resolved.

For the places that show a tool to a reader rather than to a validator: the prompt agent's signatures,
docs/tools.md, and inspect_ai's descriptions (its schema model drops some keywords). The episode
enforces every bound either way; an out-of-range value is an invalid action.
"""

from __future__ import annotations

from typing import Any

#: Each bound keyword and how it reads; ``minimum`` with ``maximum`` reads as a range instead.
BOUND_WORDS = {"minimum": "at least {}", "exclusiveMinimum": "greater than {}",
               "maximum": "at most {}", "exclusiveMaximum": "less than {}",
               "minLength": "at least {} characters", "maxLength": "at most {} characters",
               "minItems": "at least {} items", "maxItems": "at most {} items"}


def bound_words(prop: dict[str, Any], keys: frozenset[str] | set[str] | None = None) -> list[str]:
    """The bounds ``prop`` declares (only those in ``keys``, if given), each as a short phrase."""
    present = [k for k in BOUND_WORDS if k in prop and (keys is None or k in keys)]
    words = []
    if "minimum" in present and "maximum" in present:
        words.append(f"{prop['minimum']:g} to {prop['maximum']:g}")
        present = [k for k in present if k not in ("minimum", "maximum")]
    words += [BOUND_WORDS[k].format(f"{prop[k]:g}") for k in present]
    return words


def resolve_ref(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """The ``$defs`` entry a local ``{"$ref": "#/$defs/Name"}`` points to, else ``node`` itself."""
    ref = node.get("$ref")
    return defs.get(ref.rsplit("/", 1)[-1], node) if isinstance(ref, str) else node
