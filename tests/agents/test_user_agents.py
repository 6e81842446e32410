"""A user's own agent: found like `python -m` finds a module, checked up front, given constructor
arguments with --agent-arg, debuggable from a sweep, and documented once (docs/extending.md)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from srezero.agents import registry
from srezero.agents.protocol import agent_seed
from srezero.cli import cli
from srezero.sweep import runner

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"

AGENTS = '''
from srezero.agents.protocol import agent_seed


class WithArgs:
    def __init__(self, threshold, name="x"):
        self.threshold, self.name = threshold, name

    def reset(self, briefing, seed, tool_specs):
        pass

    def act(self, observation):
        return "resolve()"

    def step_info(self):
        return {"seen": [self.threshold, self.name]}


class FailsOn:
    """Raises in act on one seed only, so the sweep's hint must name that seed."""

    def __init__(self, fail_seed=1):
        self.fail_seed = fail_seed

    def reset(self, briefing, seed, tool_specs):
        self.seed = seed

    def act(self, observation):
        if self.seed == agent_seed(self.fail_seed):  # agents are handed a hash of the episode seed
            raise LookupError("agent bug on seed %d" % self.seed)
        return "resolve()"


class Unserialisable:
    """Sends what JSON cannot hold: an object, then an object as an argument; its usage is an object too."""

    def reset(self, briefing, seed, tool_specs):
        self.n = 0

    def act(self, observation):
        self.n += 1
        return [object(), {"tool": "get_status", "args": {"service": object()}}, "resolve()"][self.n - 1]

    def usage(self):
        return {"tokens": object()}


def a_function(briefing, seed, tool_specs):
    pass


class NoAct:
    def reset(self, briefing, seed, tool_specs):
        pass


class OldReset:
    def reset(self, task_info):
        pass

    def act(self, observation):
        return "resolve()"


instance = WithArgs(1)
'''


@pytest.fixture
def agents_mod(tmp_path, monkeypatch) -> str:
    """A fresh module of test agents on sys.path; its name is unique per test (sys.modules caches)."""
    name = "user_agents_" + re.sub(r"\W", "_", tmp_path.name)
    (tmp_path / f"{name}.py").write_text(AGENTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def _cli_without_cwd_on_path(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """The `srezero` console script: `python -P` keeps the current directory off sys.path, as there."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-P", "-c", "from srezero.cli import main; main()", *args],
                          capture_output=True, text=True, cwd=cwd, env=env, timeout=120)


# ------------------------------------------------------------------ finding and checking the class
def test_the_documented_example_runs_from_its_own_directory_with_an_agent_arg() -> None:
    out = _cli_without_cwd_on_path(["run", "--task", "inc-001", "--seed", "3", "--agent", "first_agent:TriageAgent",
                                    "--agent-arg", "max_log_reads=1", "--json"], EXAMPLES)
    assert out.returncode == 0, out.stderr
    record = orjson.loads(out.stdout)
    assert record["status"] == "ok" and record["agent"] == "first_agent.TriageAgent"
    steps = record["trajectory"]
    assert all(s["ok"] for s in steps) and record["result"]["invalid_actions"] == 0
    # every action form the docs list reached a tool: a text call, a dict, an Action (shown by repr)
    assert steps[0]["action"] == "get_alerts()"
    assert steps[1]["action"] == {"tool": "get_status", "args": {}}
    assert steps[2]["action"].startswith("Action(tool='get_changes'")
    assert [s["tool"] for s in steps].count("search_logs") == 1  # --agent-arg max_log_reads=1 reached __init__
    assert all(s.get("why") for s in steps)  # step_info() is merged into each trajectory entry
    assert [s["tool"] for s in steps][-2:] == ["submit_diagnosis", "resolve"]


def test_a_missing_module_names_pythonpath_and_the_current_directory(tmp_path) -> None:
    out = _cli_without_cwd_on_path(["run", "--task", "inc-001", "--agent", "no_such_agent_module:A"], tmp_path)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "PYTHONPATH" in out.stderr and str(tmp_path) in out.stderr


def test_the_current_directory_is_searched_after_sys_path(tmp_path, monkeypatch) -> None:
    name = "cwd_agent_" + re.sub(r"\W", "_", tmp_path.name)
    (tmp_path / f"{name}.py").write_text(AGENTS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    try:
        cls = registry.resolve(f"{name}:WithArgs")
        assert cls.__module__ == name and sys.path[-1] == str(tmp_path)  # appended: never shadows a package
    finally:
        sys.modules.pop(name, None)


def test_a_file_shadowed_by_an_installed_module_is_named_in_the_error(tmp_path, monkeypatch) -> None:
    """A user review: an agent file named after an installed module (``test.py``) silently lost to it,
    and the error only said the module had no such class."""
    (tmp_path / "json.py").write_text(AGENTS)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError) as exc:
        registry.resolve("json:WithArgs")
    text = str(exc.value)
    assert f"({json.__file__})" in text and f"{tmp_path / 'json.py'} was not imported" in text and "rename" in text


def test_user_source_is_the_code_a_remote_worker_needs(tmp_path, monkeypatch) -> None:
    """What `--executor ray` ships: a user's module (file, or its top-level package) that is not installed."""
    name = "src_agent_" + re.sub(r"\W", "_", tmp_path.name)
    (tmp_path / f"{name}.py").write_text(AGENTS)
    (tmp_path / f"{name}_pkg" / "sub").mkdir(parents=True)
    (tmp_path / f"{name}_pkg" / "__init__.py").write_text("")
    (tmp_path / f"{name}_pkg" / "sub" / "__init__.py").write_text("")
    (tmp_path / f"{name}_pkg" / "sub" / "agent.py").write_text(AGENTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert registry.user_source(f"{name}:WithArgs") == str((tmp_path / f"{name}.py").resolve())
        assert registry.user_source(f"{name}_pkg.sub.agent:WithArgs") == str((tmp_path / f"{name}_pkg").resolve())
        assert registry.user_source("runbook") is None  # built-in: installed with srezero
        assert registry.user_source("baselines.runbook:RunbookAgent") is None
    finally:
        for mod in [m for m in sys.modules if m.startswith(name)]:
            sys.modules.pop(mod)


def test_a_missing_dependency_or_a_syntax_error_is_named_as_such(tmp_path, monkeypatch) -> None:
    (tmp_path / "needs_dep_agent.py").write_text("import no_such_dependency_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match="No module named 'no_such_dependency_xyz'") as err:
        registry.resolve("needs_dep_agent:A")
    assert "PYTHONPATH" not in str(err.value)
    (tmp_path / "broken_syntax_agent.py").write_text("class A(:\n")
    with pytest.raises(ValueError, match="cannot import agent module 'broken_syntax_agent': SyntaxError"):
        registry.resolve("broken_syntax_agent:A")


@pytest.mark.parametrize("attr, says", [
    ("a_function", "a_function is a function"),
    ("instance", "instance is a WithArgs"),
    ("NoAct", "NoAct is a class without act()"),
])
def test_anything_but_an_agent_class_is_refused_up_front(agents_mod, attr, says) -> None:
    with pytest.raises(ValueError, match="module:Class must name a class with reset\\(\\) and act\\(\\)") as err:
        registry.resolve(f"{agents_mod}:{attr}")
    assert says in str(err.value)
    out = CliRunner().invoke(cli, ["run", "--task", "inc-001", "--agent", f"{agents_mod}:{attr}"])
    assert out.exit_code == 1 and "must name a class with reset() and act()" in out.output
    assert "NoneType" not in out.output and out.exception is not None and isinstance(out.exception, SystemExit)


def test_an_old_reset_signature_is_refused_with_the_expected_one(agents_mod, tmp_path) -> None:
    out = CliRunner().invoke(cli, ["sweep", "--agents", f"{agents_mod}:OldReset", "--tasks", "inc-001", "--seeds", "1",
                                   "--out", str(tmp_path / "run"), "--no-progress"])
    assert out.exit_code == 1 and "must accept (briefing, seed, tool_specs)" in out.output
    assert not (tmp_path / "run").exists()  # refused before the run directory was made


def test_every_builtin_agent_passes_the_check() -> None:
    for name in registry.BUILTIN:
        assert registry.resolve(name).__name__


# ------------------------------------------------------------------ --agent-arg
def test_agent_arg_values_are_json_when_they_parse() -> None:
    got = registry.parse_agent_args(["n=3", "p=0.5", "on=true", "none=null", "xs=[1, 2]", "s=abc", 'zip="007"',
                                     "url=http://h/?a=b"])
    assert got == {"n": 3, "p": 0.5, "on": True, "none": None, "xs": [1, 2], "s": "abc", "zip": "007",
                   "url": "http://h/?a=b"}
    for bad in (["novalue"], ["1x=2"], ["=3"], ["a=1", "a=2"]):
        with pytest.raises(ValueError, match="--agent-arg"):
            registry.parse_agent_args(bad)


def test_run_passes_agent_args_to_the_constructor(agents_mod) -> None:
    args = ["run", "--task", "inc-001", "--agent", f"{agents_mod}:WithArgs", "--json"]
    out = CliRunner().invoke(cli, [*args, "--agent-arg", "threshold=0.25", "--agent-arg", "name=[1]"])
    assert out.exit_code == 0, out.output
    assert orjson.loads(out.output)["trajectory"][0]["seen"] == [0.25, [1]]
    missing = CliRunner().invoke(cli, args)
    assert missing.exit_code == 1 and "pass --agent-arg threshold=VALUE" in missing.output
    unknown = CliRunner().invoke(cli, [*args, "--agent-arg", "threshold=1", "--agent-arg", "treshold=2"])
    assert unknown.exit_code == 1 and "--agent-arg treshold: agent" in unknown.output
    assert "takes threshold, name" in unknown.output


def test_an_agent_arg_may_not_repeat_an_llm_option() -> None:
    with pytest.raises(ValueError, match="--agent-arg model repeats"):
        runner.agent_spec("llm-react", agent_args={"model": "a"}, model="b")
    assert dict(runner.agent_spec("llm-react", agent_args={"model": "a"}).options) == {"model": "a"}


def test_sweep_agent_args_reach_the_agents_that_take_them_and_are_part_of_their_identity(agents_mod, tmp_path) -> None:
    out = tmp_path / "run"
    base = ["sweep", "--agents", f"{agents_mod}:WithArgs,random", "--tasks", "inc-001", "--seeds", "2",
            "--out", str(out), "--no-progress", "--workers", "1"]
    first = CliRunner().invoke(cli, [*base, "--agent-arg", "threshold=2", "--agent-arg", "resolve_p=1"])
    assert first.exit_code == 0, first.output
    agents = orjson.loads((out / "manifest.json").read_bytes())["agents"]
    assert agents[f"{agents_mod}.WithArgs"]["options"] == {"threshold": 2}
    assert agents["random"]["options"] == {"resolve_p": 1}  # each agent gets only the arguments it takes
    record = orjson.loads((out / "episodes" / f"{agents_mod}.WithArgs" / "inc-001" / "seed-0000.json").read_bytes())
    assert record["trajectory"][0]["seen"] == [2, "x"]

    same = CliRunner().invoke(cli, [*base, "--agent-arg", "threshold=2", "--agent-arg", "resolve_p=1"])
    assert same.exit_code == 0 and "ran 0, already recorded 4" in same.output  # resumed: nothing to do
    changed = CliRunner().invoke(cli, [*base, "--agent-arg", "threshold=3", "--agent-arg", "resolve_p=1"])
    assert changed.exit_code == 1
    assert f"agent {agents_mod}.WithArgs has different settings" in changed.output
    assert "options.threshold: 2 -> 3" in changed.output
    typo = CliRunner().invoke(cli, [*base, "--agent-arg", "threshold=2", "--agent-arg", "treshold=1"])
    assert typo.exit_code == 1 and "--agent-arg treshold: no agent in this sweep takes it" in typo.output


# ------------------------------------------------------------------ what JSON cannot hold
def test_an_agent_sending_objects_is_recorded_the_same_every_run(agents_mod, tmp_path) -> None:
    """A reviewer's agent returned object(): the sweep crashed writing its record (losing the others'),
    and `run --out` wrote the object's memory address, so two runs differed."""
    runs = []
    for name in ("a", "b"):
        out = CliRunner().invoke(cli, ["sweep", "--agents", f"{agents_mod}:Unserialisable,random", "--tasks", "inc-001",
                                       "--seeds", "2", "--out", str(tmp_path / name), "--no-progress", "--workers", "1"])
        assert out.exit_code == 0, out.output
        runs.append({p.relative_to(tmp_path / name): p.read_bytes() for p in (tmp_path / name / "episodes").rglob("*.json")})
    assert len(runs[0]) == 4 and runs[0] == runs[1]
    record = orjson.loads(next(v for k, v in runs[0].items() if "Unserialisable" in str(k)))
    assert record["status"] == "ok" and record["usage"] == {"tokens": "<object>"}
    assert [s["action"] for s in record["trajectory"]] == [
        "<object>", {"tool": "get_status", "args": {"service": "<object>"}}, "resolve()"]


def test_a_rerun_notices_that_a_user_agents_code_changed(agents_mod, tmp_path) -> None:
    """A reviewer edited their agent between two sweeps into one directory: the rerun resumed and mixed
    both versions' episodes under one name. Its module file's hash is now part of its identity."""
    base = ["sweep", "--agents", f"{agents_mod}:WithArgs", "--agent-arg", "threshold=1", "--tasks", "inc-001",
            "--out", str(tmp_path / "run"), "--no-progress", "--workers", "1"]
    assert CliRunner().invoke(cli, [*base, "--seeds", "1"]).exit_code == 0
    code = orjson.loads((tmp_path / "run" / "manifest.json").read_bytes())["agents"][f"{agents_mod}.WithArgs"]["code"]
    assert re.fullmatch(r"sha256:[0-9a-f]{16}", code)
    again = CliRunner().invoke(cli, [*base, "--seeds", "2"])  # unchanged code resumes
    assert again.exit_code == 0 and "already recorded 1" in again.output, again.output
    module = tmp_path / f"{agents_mod}.py"
    module.write_text(module.read_text() + "\n# tuned\n")
    sys.modules.pop(agents_mod, None)
    registry.resolve.cache_clear()
    changed = CliRunner().invoke(cli, [*base, "--seeds", "3"])
    assert changed.exit_code == 1, changed.output
    assert f"agent {agents_mod}.WithArgs has different code or settings from the recorded run (code: " in changed.output


# ------------------------------------------------------------------ from a sweep's error to a traceback
def test_a_sweep_with_agent_errors_prints_a_run_command_that_shows_the_traceback(agents_mod, tmp_path) -> None:
    out = CliRunner().invoke(cli, ["sweep", "--agents", f"{agents_mod}:FailsOn", "--agent-arg", "fail_seed=2",
                                   "--tasks", "inc-001", "--seeds", "3", "--out", str(tmp_path / "run"),
                                   "--no-progress", "--workers", "1"])
    assert out.exit_code == 1
    m = re.search(r"replay one with its traceback: (srezero run .*--traceback)", out.output)
    assert m, out.output
    words = shlex.split(m.group(1))
    assert words[:2] == ["srezero", "run"] and "--seed" in words and words[words.index("--seed") + 1] == "2"
    rerun = CliRunner().invoke(cli, words[1:])
    assert isinstance(rerun.exception, LookupError) and f"agent bug on seed {agent_seed(2)}" in str(rerun.exception)


def test_the_traceback_command_prefers_agent_errors_and_round_trips_options() -> None:
    agents = [runner.AgentSpec("mine", "pkg.mod:A", (("mode", "7"), ("seed", 3), ("xs", [1, "a b"]))),
              runner.AgentSpec("llm", "llm-react", (("model", "m-1"), ("reasoning_model", False), ("seed", 4)))]
    rows = [{"agent": "llm", "task": "inc-001", "seed": 0, "status": "provider_error"},
            {"agent": "mine", "task": "inc-002", "seed": 5, "status": "agent_error"},
            {"agent": "mine", "task": "inc-001", "seed": 9, "status": "ok"}]
    cmd = runner.traceback_command(rows, agents)
    words = shlex.split(cmd)
    assert words[:8] == ["srezero", "run", "--task", "inc-002", "--seed", "5", "--agent", "pkg.mod:A"]
    args = [words[i + 1] for i, w in enumerate(words) if w == "--agent-arg"]
    assert registry.parse_agent_args(args) == {"mode": "7", "seed": 3, "xs": [1, "a b"]}  # "7" stays a string
    llm = shlex.split(runner.traceback_command(rows[:1], agents))
    assert llm[7:] == ["llm-react", "--model", "m-1", "--no-reasoning-model", "--llm-seed", "4", "--traceback"]
    assert runner.traceback_command(rows[2:], agents) is None


# ------------------------------------------------------------------ the docs tell one story
def _section(path: Path, start: str, end: str) -> str:
    text = path.read_text()
    return text[text.index(start):text.index(end)]


def test_the_agent_guide_documents_every_field_form_and_hook() -> None:
    from srezero.episode import Briefing, Observation

    guide = _section(ROOT / "docs" / "extending.md", "## Add an agent", "## Add a CLI command")
    for cls in (Briefing, Observation):
        for f in dataclasses.fields(cls):
            assert f"`{f.name}`" in guide, f"{cls.__name__}.{f.name} is not documented"
    for needed in ("reset(briefing, seed, tool_specs)", "act(observation)", "Action(", '{"tool":', "kubectl",
                   "--agent-arg", "PYTHONPATH", "settings()", "usage()", "step_info()", "ProviderError",
                   "wants_ground_truth", "bind_oracle", "upper bound", "--traceback",
                   "](examples/first_agent.py)"):
        assert needed in guide, needed
    for cmd in re.findall(r"^srezero (?:run|sweep) .*?(?=\s+#|$)", guide, re.M):  # the example's commands name it
        assert "first_agent:TriageAgent" in cmd, cmd


def test_no_doc_contradicts_the_agent_protocol() -> None:
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "srezero" / "agents" / "protocol.py"]
    for path in docs:
        assert "reset(task_info" not in path.read_text(), path
    baselines = _section(ROOT / "docs" / "baselines.md", "## Writing your own agent", "## Sweeps")
    assert "reset(briefing, seed, tool_specs)" in baselines and "](extending.md#add-an-agent)" in baselines
    assert (EXAMPLES / "first_agent.py").is_file()


class Broken:
    """An agent whose constructor fails with something other than a ValueError or TypeError."""

    def __init__(self) -> None:
        raise RuntimeError("no model weights in ./weights")

    def reset(self, briefing, seed, tool_specs) -> None: ...

    def act(self, observation): ...


def test_a_failing_constructor_is_one_line_unless_a_traceback_is_asked_for() -> None:
    from click.testing import CliRunner

    from srezero.cli import cli

    args = ["run", "--task", "inc-001", "--agent", f"{__name__}:Broken"]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 1 and "could not be created: RuntimeError: no model weights" in res.output
    assert "Traceback" not in res.output
    res = CliRunner().invoke(cli, [*args, "--traceback"])
    assert isinstance(res.exception, RuntimeError)
