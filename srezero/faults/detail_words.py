"""The words a root cause's concrete detail may use for a bad setting: its value as the config tools
show it, or which way a number went wrong. Fault primitives build their ``detail_tokens`` from these;
:mod:`srezero.scoring.detail` reads the direction words."""

from __future__ import annotations

from typing import Any

#: Words that say a value is gone: the concrete detail of an emptied setting.
MISSING_WORDS = ("empty", "emptied", "missing", "unset", "not set", "removed", "dropped", "deleted", "cleared",
                 "blank", "absent", "erased", "wiped", "no value", "keyerror", "''", '""')


def value_tokens(value: Any) -> tuple[str, ...]:
    """Detail tokens for a setting's bad value, written as the config tools show it: ``40``,
    ``pgbouncer:6432``, ``False`` (or off/disabled), and for an empty value the words that say so.
    A config fault's entity already names the key; its detail must say what the key was set to."""
    if isinstance(value, bool):
        return ("true", "on", "enabled") if value else ("false", "off", "disabled")
    if value is None or value == "":
        return MISSING_WORDS
    if isinstance(value, float) and value.is_integer():
        return (str(value), str(int(value)))
    return (str(value),)


#: Words that say which way a number went wrong; a detail that uses both directions gets credit for
#: neither (srezero.scoring.detail).
LOWER_WORDS = ("too low", "too small", "too short", "too few", "lowered", "reduced", "decreased", "cut to", "shrunk")
HIGHER_WORDS = ("too high", "too large", "too big", "too long", "too many", "raised", "increased")


def direction_tokens(original: Any, bad: Any) -> tuple[str, ...]:
    """For a number set too low or too high, the words that say so ("db_timeout_ms too low" says what
    is wrong without the value); nothing for other values."""
    numbers = (int, float)
    if isinstance(original, bool) or isinstance(bad, bool) or not isinstance(original, numbers) \
            or not isinstance(bad, numbers) or bad == original:
        return ()
    return LOWER_WORDS if bad < original else HIGHER_WORDS
