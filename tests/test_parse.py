"""The text-action parser: markdown wrapping around a plain-text action is read through, once."""

from __future__ import annotations

import pytest

import srezero
from srezero.tools.parse import parse_action, unwrap_markdown
from srezero.tools.registry import ToolError


@pytest.mark.parametrize("wrapped", [
    "```\nget_alerts()\n```",
    "```python\nget_alerts()\n```",
    "  ```\nget_alerts()\n```\n",
    "```get_alerts()```",
    "`get_alerts()`",
    "` get_alerts() `",
])
def test_one_code_fence_or_pair_of_backticks_is_stripped(wrapped: str) -> None:
    assert parse_action(wrapped) == parse_action("get_alerts()")


def test_fenced_json_kubectl_and_arguments_parse_like_the_bare_action() -> None:
    call = 'search_logs(service="database", pattern="timeout")'
    assert parse_action(f"```\n{call}\n```") == parse_action(call)
    assert parse_action('```json\n{"tool": "get_alerts", "args": {}}\n```') == parse_action("get_alerts()")
    assert parse_action("```bash\nkubectl get pods\n```") == parse_action("kubectl get pods")
    # a one-word fenced action is the action, not a language tag
    assert parse_action("```\nget_alerts\n```") == parse_action("```get_alerts\n```") == parse_action("get_alerts()")


@pytest.mark.parametrize("text", [
    "``get_alerts()``",                            # two pairs of backticks: not one wrapping
    "```\n```get_alerts()```\n```",                # nested fences
    "`get_alerts()` then `get_status()`",          # prose with inline code
    "```\nget_alerts()\n```\n```\nget_status()\n```",  # two fenced blocks
    "```\nget_alerts()",                           # an unclosed fence
])
def test_anything_but_a_single_wrapping_is_left_alone_and_rejected(text: str) -> None:
    assert unwrap_markdown(text.strip()) == text.strip()
    with pytest.raises(ToolError):
        parse_action(text)


@pytest.mark.parametrize("text", ["``", "```\n```", "``````", "` `"])
def test_an_empty_wrapping_is_an_empty_action(text: str) -> None:
    with pytest.raises(ToolError, match="empty action"):
        parse_action(text)


def test_a_wrapped_action_steps_the_episode_exactly_like_the_bare_one() -> None:
    def play(actions: list[str]) -> list[str]:
        env = srezero.make("inc-002", 3)
        env.reset(seed=3)
        texts = [env.step(a)[0].text for a in actions]
        assert env.st.invalid == 0
        return texts

    bare = ["get_alerts()", 'get_config(service="database")']
    assert play([f"```\n{bare[0]}\n```", f"`{bare[1]}`"]) == play(bare)


def test_a_recorded_action_is_json_safe_and_has_no_memory_address() -> None:
    import numpy as np
    import orjson

    from srezero.tools.parse import Action, recordable

    odd = {"tool": "get_status", "args": {"service": object(), "n": np.int64(3), "b": b"cache", 7: {1, 2},
                                          "deep": [[[[]]]], "big": 10 ** 30, "text": "x\ud800"}}
    assert recordable(odd) == {"tool": "get_status", "args": {"service": "<object>", "n": 3, "b": "cache", "7": "<set>",
                                                            "deep": [[[[]]]], "big": str(10 ** 30), "text": "x\\ud800"}}
    orjson.dumps(recordable(odd))
    assert recordable(object()) == "<object>" and recordable(("a", 1)) == "['a', 1]" and recordable(None) == "None"
    assert recordable(Action("get_status", {"service": "cache"})) == "Action(tool='get_status', args={'service': 'cache'})"
    plain = {"tool": "get_alerts", "args": {}}
    kept = recordable(plain)
    assert kept == plain and kept is not plain  # a copy: the agent may reuse its dict
    nested: list = []
    for _ in range(100):
        nested = [nested]
    orjson.dumps(recordable({"tool": nested}))  # no RecursionError, no orjson depth error


@pytest.mark.parametrize(("action", "reason"), [
    ('{"tool": "get_alerts",}', "trailing comma is not allowed: line 1 column 22"),
    ({"tool": "search_logs", "args": '{"service": "database",'}, "unexpected end of data"),
    ('search_logs(service="database"', "was never closed"),
])
def test_an_unparsable_action_says_why_and_where(action: object, reason: str) -> None:
    """A model fixes a malformed call faster when told what the decoder choked on, not only that it did."""
    with pytest.raises(ToolError, match=reason):
        parse_action(action)  # type: ignore[arg-type]
