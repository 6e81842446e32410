"""Invalid and hostile actions never raise: each is an error observation and counts as invalid."""

from __future__ import annotations

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import srezero

_ENV = srezero.make("inc-002", 0)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=30),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12,
)
tool_names = st.sampled_from([t["name"] for t in _ENV.tool_specs()]) | st.text(max_size=20)
actions = (
    st.text(max_size=200)
    | st.builds(lambda n, a: f"{n}({a})", tool_names, st.text(max_size=60))
    | st.fixed_dictionaries({"tool": tool_names, "args": st.dictionaries(st.text(max_size=12), json_values, max_size=4)})
    | st.dictionaries(st.text(max_size=8), json_values, max_size=3)
    | json_values
)


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(actions, min_size=1, max_size=6))
def test_step_never_raises_and_counts_invalid(batch) -> None:
    env = srezero.make("inc-002", 0)
    env.reset()
    invalid = 0
    for action in batch:
        obs, _reward, terminated, truncated, _info = env.step(action)
        assert isinstance(obs.text, str) and obs.text
        if not obs.ok:
            invalid += 1
            assert obs.text.startswith("error:") or "ended" in obs.text
        if terminated or truncated:
            break
    assert env.st.invalid == invalid
    orjson.dumps(env.trajectory)  # whatever was sent, the record can be written


def _scale_outcome(args: dict) -> tuple[str, int]:
    env = srezero.make("inc-002", 0)
    env.reset()
    obs, *_ = env.step({"tool": "scale", "args": {"service": "worker", **args}})
    orjson.dumps(env.trajectory)
    return obs.text, env.st.invalid


def test_a_value_of_the_wrong_json_type_is_refused_not_converted() -> None:
    """Lax conversion would read true as 1 and run a write the agent never asked for."""
    for replicas, shown in ((True, "the boolean true"), ("2", "the text '2'"), (2.5, "the number 2.5")):
        text, invalid = _scale_outcome({"replicas": replicas})
        assert invalid == 1 and f"replicas: must be a whole number (without quotes), not {shown}" in text
    text, invalid = _scale_outcome({"replicas": 2.0})  # an integral number is an integer in JSON
    assert invalid == 0 and "to 2 replica(s)" in text
    env = srezero.make("inc-002", 0)
    env.reset()
    for args, problem in (({"errors_only": "yes"}, "errors_only: must be true or false"),
                          ({"service": 5}, "service: must be text (in quotes), not the number 5")):
        obs, *_ = env.step({"tool": "get_traces" if "errors_only" in args else "get_status", "args": args})
        assert not obs.ok and problem in obs.text


def test_an_integer_beyond_64_bits_is_refused_and_the_record_still_writes() -> None:
    for args in ({"replicas": 2 ** 64}, {"replicas": -(2 ** 70)}):
        text, invalid = _scale_outcome(args)
        assert invalid == 1 and "a number too large for a 64-bit integer" in text
    env = srezero.make("inc-002", 0)
    env.reset()
    obs, *_ = env.step({"tool": "set_config", "args": {"service": "web_server", "key": "workers", "value": 2 ** 64}})
    assert not obs.ok and "64-bit" in obs.text
    *_, info = env.step("resolve()")
    assert orjson.dumps({"trajectory": env.trajectory, "result": info["result"]})


def test_specific_bad_inputs_have_clear_errors() -> None:
    env = srezero.make("inc-002", 0)
    env.reset()
    cases = {
        "nonexistent_tool()": "unknown tool 'nonexistent_tool'; available tools: get_alerts",
        'get_statu(service="database")': "unknown tool 'get_statu'; did you mean get_status?",
        'get_status(service="nope")': "unknown service",
        'query_metrics(target="database", metric="bogus")': "has no metric",
        "query_metrics(": "could not parse",
        '{"tool": 3}': "tool",
        'search_logs(service="database", pattern="(")': "invalid pattern",
        'scale(service="database", replicas=3)': "cannot be scaled",
        'scale(service="web_server", replicas=99)': "less than or equal",
        'set_config(service="web_server", key="no_such_key", value=1)': "no config key",
        'set_config(service="web_server", key="db_pool_size", value="lots")': "expected an integer",
        "get_alerts(1, 2, 3)": "get_alerts takes no arguments: call get_alerts()",
        'get_status("web_server", "database")': "get_status takes at most 1 positional argument (service)",
        "__import__('os').system('echo hi')": "single tool call",
        # a wrong choice is echoed, with the choice it most likely meant
        'node_diagnostics(node="x", check="limitz")': "or 'limits', not 'limitz' (did you mean 'limits'?)",
        'node_diagnostics(node="x", check="smart")': "not 'smart'",
        'submit_diagnosis(root_causes=[{"entity": "database", "category": "misconfig", "detail": "x"}], summary="s")':
            "not 'misconfig' (did you mean 'misconfiguration'?)",
        'query_metrics(target="database", metrc="cpu_cores")': "(did you mean metric?)",
    }
    for action, expected in cases.items():
        obs, *_ = env.step(action)
        assert not obs.ok, action
        assert expected in obs.text, (action, obs.text)
    assert env.st.invalid == len(cases)


def test_oversized_and_mistyped_input_gets_a_bounded_error_not_an_internal_one() -> None:
    from srezero.episode import ERROR_TEXT_LIMIT
    from srezero.tools.parse import Action

    env = srezero.make("inc-002", 0)
    env.reset()
    obs, *_ = env.step({"tool": "search_logs", "args": {"service": "x" * 15_000}})  # under the action limit
    assert not obs.ok and "unknown service" in obs.text and len(obs.text) < ERROR_TEXT_LIMIT + 50
    obs, *_ = env.step({"tool": "search_logs", "args": {"service": "x" * 1_000_000}})  # over it
    assert not obs.ok and "longer than the limit of 20,000 characters" in obs.text
    for bad in (Action(tool=["get_alerts"]), Action(tool="get_alerts", args=[1])):  # type: ignore[arg-type]
        obs, *_ = env.step(bad)
        assert not obs.ok and "Action needs a tool name" in obs.text
    assert env.result is None and env.st.internal_errors == []  # input errors, not tool bugs


def test_a_step_after_the_end_repeats_how_it_ended() -> None:
    from srezero.episode import Episode

    spec = srezero.get_task("inc-002")
    env = Episode(spec.model_copy(update={"budget": spec.budget.model_copy(update={"steps": 2})}), 0)
    env.reset()
    env.step("get_alerts()")
    _obs, _r, terminated, truncated, info = env.step("get_alerts()")
    assert truncated and not terminated and info["result"]["truncated"]
    obs, reward, terminated2, truncated2, info2 = env.step("get_alerts()")
    assert (terminated2, truncated2, reward, obs.ok) == (False, True, 0.0, False)
    assert info2["result"] == info["result"] and info2["invalid"] and "sim_time_s" in info2 and "tool" in info2


def test_the_result_in_info_is_the_callers_copy() -> None:
    env = srezero.make("inc-002", 0)
    env.reset()
    *_, info = env.step("resolve()")
    info["result"]["marks"] = 1e9
    info["result"]["ground_truth"].clear()
    assert env.result["marks"] <= 100 and env.result["ground_truth"]
    *_, info2 = env.step("get_alerts()")
    assert info2["result"] == env.result and info2["result"] is not env.result


def test_an_argument_error_names_the_tool_that_was_asked_for() -> None:
    env = srezero.make("inc-002", 0)
    env.reset()
    for action, tool in (("get_config(service=1)", "get_config"), ({"tool": "scale", "args": {"bogus": 1}}, "scale"),
                         ("get_confg()", None), ("get_config(", None),
                         ({"name": "search_logs", "arguments": '{"service": "worker", level: error'}, "search_logs"),
                         ({"name": "get_status", "arguments": "[1, 2]"}, "get_status"),
                         ({"name": "get_statu", "arguments": "{bad"}, None)):
        obs, _, _, _, info = env.step(action)
        assert not obs.ok and info["invalid"]
        assert info["tool"] == obs.tool == env.trajectory[-1]["tool"] == tool, action


scalars = st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=True) | st.sampled_from(
    ["", "database", "web_server", "error", "1", "-0.0", "true"])
arg_names = st.sampled_from(["service", "target", "replicas", "limit", "window_s", "errors_only", "value", "key", "x"])


@settings(max_examples=600, deadline=None)
@given(st.sampled_from([t["name"] for t in _ENV.tool_specs()]),
       st.lists(st.dictionaries(arg_names, scalars, max_size=3), min_size=1, max_size=4))
def test_memoised_validation_matches_the_validator(tool, calls) -> None:
    """Verdicts on scalar arguments are memoised (1, 1.0 and True are equal in Python, not to the
    validator): each call, repeated, gets exactly what a fresh validation gives, as a fresh dict."""
    from srezero.tools.registry import ToolError, load_tools

    spec = load_tools()[tool]
    for args in calls + calls:
        try:
            want: object = spec._validate(args)
        except ToolError as exc:
            want = f"error: {exc}"
        try:
            got: object = spec.validate(args)
        except ToolError as exc:
            got = f"error: {exc}"
        assert repr(got) == repr(want)
        if isinstance(got, dict):
            got["mutated"] = 1  # the caller owns its dict: the memo is unaffected


def test_a_catastrophic_regex_is_refused_not_run() -> None:
    """(.*)*! backtracks exponentially on a long line: before, search_logs never returned (an MCP server
    stopped answering, an inspect time limit did nothing), and so did (.|.)*# and (.*.*){1,50}# until an
    audit found them. Now each is an invalid action with a way out."""
    env = srezero.make("inc-001", 0)
    env.reset()
    for pattern in ("(.*)*!", "(a+)+$", "(?:x|y+)*z", "(.|.)*#", "(.*.*){1,50}#", r"(.|\s)*ZZZ", "(a|aa)*b"):
        obs, _r, _te, _tr, info = env.step({"tool": "search_logs", "args": {"service": "web_server", "pattern": pattern}})
        assert info["invalid"] and "exponential time" in obs.text, obs.text
    # each unbounded repeat multiplies the backtracking on a line that does not match (4 took over 5 s)
    obs, *_, info = env.step({"tool": "search_logs", "args": {"service": "web_server", "pattern": ".*.*.*#"}})
    assert info["invalid"] and "at most 2" in obs.text, obs.text
    for pattern in ("(error|warn)+", ".*timeout.*db", "(a|b){2}"):
        obs, *_ = env.step({"tool": "search_logs", "args": {"service": "web_server", "pattern": pattern}})
        assert obs.ok, (pattern, obs.text)


def test_a_misspelt_service_gets_a_did_you_mean_after_the_list() -> None:
    env = srezero.make("inc-002", 0)
    env.reset()
    for action, near in (('get_status(service="workers")', "worker"), ('search_logs(service="databse")', "database"),
                         ('restart(target="web-server")', "web_server")):
        obs, *_ = env.step(action)
        assert not obs.ok and obs.text.endswith(f"; did you mean {near}?"), obs.text
    obs, *_ = env.step('get_status(service="zzz")')
    assert "did you mean" not in obs.text and "services: load_balancer" in obs.text


class _HostileStr(str):
    def encode(self, *args, **kwargs):
        raise RuntimeError("encode")

    def strip(self, *args):
        raise RuntimeError("strip")

    def __eq__(self, other):
        raise RuntimeError("eq")

    __hash__ = str.__hash__


class _HostileFloat(float):
    def __format__(self, spec):
        raise RuntimeError("format")


class _HostileInt(int):
    def __index__(self):
        raise RuntimeError("index")


def test_subclasses_of_builtin_types_are_acted_on_as_their_values() -> None:
    """An agent's str whose encode raised escaped step; one whose __eq__ raised was reported as a simulator
    bug; a float subclass made the record unwritable. Each is now the plain value it holds."""
    import orjson

    from srezero.agents.runner import run_episode
    from srezero.replay import rerun

    actions = [_HostileStr("get_alerts()"), {"tool": _HostileStr("get_status"), "args": {}},
               {"tool": "get_status", "args": {_HostileStr("service"): _HostileStr("database")}},
               {"tool": "query_metrics", "args": {"target": "database", "metric": "error_rate",
                                                  "window_s": _HostileFloat(600.0)}},
               {"tool": "query_metrics", "args": {"target": "database", "metric": "error_rate",
                                                  "window_s": _HostileInt(600)}}]

    class Scripted:
        def reset(self, *_: object) -> None:
            self.todo = list(actions)

        def act(self, _obs: object) -> object:
            return self.todo.pop(0) if self.todo else "resolve()"

    record = run_episode(srezero.make("inc-002", 0), Scripted(), 0)
    steps = record["trajectory"][:len(actions)]
    assert [s["ok"] for s in steps] == [True] * len(actions), [s["error"] for s in steps]
    assert record["result"]["internal_errors"] == []
    saved = orjson.loads(orjson.dumps(record))
    assert saved["trajectory"][2]["action"] == {"tool": "get_status", "args": {"service": "database"}}
    assert rerun(saved).diverged == ""
