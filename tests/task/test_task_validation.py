"""Broken task files produce the promised errors: file, field and problem, one line each."""

from __future__ import annotations

from pathlib import Path

import pytest

from srezero.task.validate import Problem, validate_paths

ROOT = Path(__file__).resolve().parents[2]

GOOD = """
id = "{id}"
title = "A broken task"
description = "Used by the validation tests."
difficulty = "easy"
{top}
[[faults]]
primitive = "bad_config"
target = "load_balancer"
params = {{ key = "health_check_path", value = "/status" }}
{fault}
{rest}
"""

# (case id, top-level lines, extra [[faults]] lines, trailing tables, expected field, expected problem text)
CASES = [
    ("syntax", "title = ", "", "", "(syntax)", "not valid TOML"),
    ("unknown-field", "colour = 'red'", "", "", "colour", "unknown field"),
    ("missing-field", "", "", "", "difficulty", "required field is missing"),
    ("bad-difficulty", "", "", "", "difficulty", "Input should be 'easy', 'medium' or 'hard'"),
    ("unknown-primitive", "", "", "[[faults]]\nprimitive = 'disk_on_fire'\ntarget = 'web_server'",
     "faults[1].primitive", "unknown fault primitive 'disk_on_fire'"),
    ("incompatible-target", "", "", "[[faults]]\nprimitive = 'latent_sector_errors'\ntarget = 'web_server'",
     "faults[1].target", "is not compatible with latent_sector_errors; it accepts disk"),
    ("bad-selector", "", "", "[[faults]]\nprimitive = 'crash_loop'\ntarget = 'web_server(1)'",
     "faults[1].target", "bad target selector"),
    ("unknown-service", "", "", "[[faults]]\nprimitive = 'crash_loop'\ntarget = 'web_servr'",
     "faults[1].target", "unknown service 'web_servr' in target 'web_servr'; did you mean web_server?"),
    ("primitive-typo", "", "", "[[faults]]\nprimitive = 'disk_ful'\ntarget = 'disk(database.primary)'",
     "faults[1].primitive", "unknown fault primitive 'disk_ful'; did you mean disk_full or db_disk_full? (`srezero faults` lists all"),
    ("replica-beyond-any-topology", "", "", "[[faults]]\nprimitive = 'bad_backend_weight'\ntarget = 'web_server[8]'",
     "faults[1].target", "index 8 is out of range: web_server has at most 8 replicas (indices 0-7) in any topology"),
    ("replica-not-on-every-seed", "", "", "[[faults]]\nprimitive = 'bad_backend_weight'\ntarget = 'web_server[3]'",
     "faults[1].target", "index 3 does not exist on every seed: the seed may give web_server as few as 3 replicas "
     "(indices 0-2); use [*] for a seed-chosen one, or fix the size with [topology] web_replicas"),
    ("replica-fixed-service", "", "", "[[faults]]\nprimitive = 'crash_loop'\ntarget = 'node(database[2])'",
     "faults[1].target", "database always has 2 replica(s) (indices 0-1); use database.primary or database.replica"),
    ("replica-out-of-range", "[topology]\nweb_replicas = 3", "", "[[faults]]\nprimitive = 'latent_sector_errors'\n"
     "target = 'disk(web_server[3])'", "faults[1].target",
     "index 3 is out of range: [topology] web_replicas = 3 gives web_server 3 replicas (indices 0-2)"),
    ("node-of-service", "", "", "[[faults]]\nprimitive = 'latent_sector_errors'\ntarget = 'disk(web_server)'",
     "faults[1].target", "needs a replica"),
    ("param-range", "", "", "[[faults]]\nprimitive = 'latent_sector_errors'\ntarget = 'disk(database.primary)'\n"
     "params = { read_error_rate = 0.9 }", "faults[1].params.read_error_rate", "0.9 is outside its range [0.005, 0.5]"),
    ("param-nan", "", "", "[[faults]]\nprimitive = 'latent_sector_errors'\ntarget = 'disk(database.primary)'\n"
     "params = { read_error_rate = nan }", "faults[1].params.read_error_rate", "must be a finite number, not nan"),
    ("param-inf", "", "", "[[faults]]\nprimitive = 'nic_packet_loss'\ntarget = 'node(database.primary)'\n"
     "params = { loss = -inf }", "faults[1].params.loss", "must be a finite number, not -inf"),
    ("param-unknown", "", "", "[[faults]]\nprimitive = 'latent_sector_errors'\ntarget = 'disk(database.primary)'\n"
     "params = { rate = 0.1 }", "faults[1].params.rate", "has no parameter 'rate'"),
    ("param-typo", "", "", "[[faults]]\nprimitive = 'latent_sector_errors'\ntarget = 'disk(database.primary)'\n"
     "params = { read_eror_rate = 0.1 }", "faults[1].params.read_eror_rate",
     "latent_sector_errors has no parameter 'read_eror_rate'; did you mean read_error_rate? "
     "(parameters: read_error_rate, growth)"),
    ("param-type", "", "", "[[faults]]\nprimitive = 'latent_sector_errors'\ntarget = 'disk(database.primary)'\n"
     "params = { read_error_rate = 'high' }", "faults[1].params.read_error_rate", 'must be a number (write a number, without quotes); got "high"'),
    ("param-text", "", "", "[[faults]]\nprimitive = 'bad_config'\ntarget = 'web_server'\n"
     "params = { key = 5, value = 1 }", "faults[1].params.key", "must be text (a quoted string); got 5"),
    ("param-bool", "", "", "[[faults]]\nprimitive = 'latent_sector_errors'\ntarget = 'disk(database.primary)'\n"
     "params = { read_error_rate = true }", "faults[1].params.read_error_rate", "must be a number (write a number, without quotes); got true"),
    ("at-negative", "", "at = -5", "", "faults[0].at", "greater than or equal to 0"),
    ("faults-as-table", "", "", "", "faults", "array of tables"),
    ("unknown-noise", "", "", "[noise]\nextra = { gremlins = 1 }", "noise.extra.gremlins",
     "unknown noise primitive 'gremlins' (known: "),
    ("unknown-distractor", "", "", "[distractors]\nbenign_deploys = 1", "distractors.benign_deploys",
     "unknown distractor 'benign_deploys'; did you mean benign_deploy or"),
    ("distractor-count", "", "", "[distractors]\nbenign_deploy = 11", "distractors.benign_deploy",
     "count for 'benign_deploy' must be 0-10, got 11"),
    ("bad-profile", "", "", "[noise]\nprofile = 'loud'", "noise.profile", "'quiet', 'default' or 'noisy'"),
    ("unknown-alert", "", "", "[alert]\nname = 'EverythingIsOnFire'", "alert.name", "unknown alert 'EverythingIsOnFire'"),
    ("alert-typo", "", "", "[alert]\nname = 'HighErorRate'", "alert.name",
     "unknown alert 'HighErorRate'; did you mean HighErrorRate?"),
    ("alert-metric", "", "", "[alert]\nname = 'Custom'\nentity = 'cache'\nmetric = 'queue_depth'", "alert.metric",
     "cache has no metric 'queue_depth'"),
    ("budget-range", "", "", "[budget]\nsteps = 2", "budget.steps", "greater than or equal to 5"),
    ("slo-range", "", "", "[slo]\nerror_rate = 0", "slo.error_rate", "greater than 0"),
    ("tag-case", "tags = ['Database']", "", "", "tags", "must be lowercase"),
    ("split", "split = 'secret'", "", "", "split", "'dev', 'test', 'private' or 'generated'"),
    ("no-fault-with-faults", "", "", "[ground_truth]\nno_fault = true", "ground_truth.no_fault",
     "no_fault = true but the task injects faults"),
    ("all-silent", "", "visible = false", "", "faults", "every fault has visible = false"),
    ("quoted-bool", "", "visible = 'yes'", "", "faults[0].visible", "write true or false, without quotes"),
    ("int-as-bool", "", "visible = 0", "", "faults[0].visible", "valid boolean"),
    ("quoted-number", "", "at = '60'", "", "faults[0].at", 'write a number, without quotes; got "60"'),
    ("float-steps", "", "", "[budget]\nsteps = 40.5", "budget.steps", "write a whole number"),
    # counts keep their TOML types, as every other number does (a review found "1" and true accepted)
    ("distractor-quoted-count", "", "", "[distractors]\nbenign_deploy = '1'", "distractors.benign_deploy",
     'write a whole number, without quotes; got "1"'),
    ("noise-bool-count", "", "", "[noise]\nextra = { latency_blip = true }", "noise.extra.latency_blip",
     "write a whole number, without quotes; got true"),
    ("at-nan", "", "at = nan", "", "faults[0].at", "must be a finite number, not nan"),
    # every float of the format refuses nan and inf, not only those with a range (these passed)
    ("alert-threshold-nan", "", "", "[alert]\nname = 'Edge'\nmetric = 'error_rate'\nthreshold = nan",
     "alert.threshold", "must be a finite number, not nan"),
    ("slo-inf", "", "", "[slo]\nlatency_p99_ms = inf", "slo.latency_p99_ms", "must be a finite number, not inf"),
    ("nested-too-deep", "", "", "[ground_truth]\nnotes = " + "[" * 3000 + "]" * 3000, "(syntax)",
     "nested too deeply"),
    ("alert-not-table", "alert = 'HighErrorRate'", "", "", "alert",
     'must be a table: write it under its own [alert] header, with one field per line (got "HighErrorRate")'),
    ("tags-not-list", "tags = 'kernel'", "", "", "tags", 'must be a list, e.g. ["kernel"]'),
    ("typo-hint", "dificulty = 'easy'", "", "", "dificulty", "did you mean difficulty?"),
    ("alias-hint", "", "onset = 60", "", "faults[0].onset", "did you mean at?"),
    ("config-key", "", "", "[[faults]]\nprimitive = 'bad_config'\ntarget = 'cache'\n"
     "params = { key = 'no_such_key', value = 1 }", "faults[1].params.key", "has no config key 'no_such_key' (its keys: "),
    ("config-key-typo", "", "", "[[faults]]\nprimitive = 'bad_config'\ntarget = 'cache'\n"
     "params = { key = 'ttl', value = 60 }", "faults[1].params.key", "has no config key 'ttl'; did you mean ttl_s?"),
    ("config-value-refused", "", "", "[[faults]]\nprimitive = 'bad_config'\ntarget = 'cache'\n"
     "params = { key = 'ttl_s', value = -5 }", "faults[1].params.value", "cache accepts ttl_s from 1 to 31536000, not -5"),
    # a value the key's type does not take: "40" would show quoted in get_config, and "8" broke the queue model
    ("config-value-text", "", "", "[[faults]]\nprimitive = 'bad_config'\ntarget = 'web_server'\n"
     "params = { key = 'db_timeout_ms', value = '40' }", "faults[1].params.value",
     'web_server.db_timeout_ms takes an integer (a whole number, without quotes); got "40"'),
    ("config-value-fraction", "", "", "[[faults]]\nprimitive = 'bad_config'\ntarget = 'worker'\n"
     "params = { key = 'concurrency', value = 8.5 }", "faults[1].params.value",
     "worker.concurrency takes an integer (a whole number, without quotes); got 8.5"),
    ("alternatives-of-two-kinds", "", "", "[[faults]]\nprimitive = 'thermal_throttling'\n"
     "target = 'node(database.primary) | disk(cache[0])'", "faults[1].target",
     "alternatives must name one kind of entity (all nodes, all disks, all replicas or all services), not disk, node"),
    ("alternative-out-of-range", "", "", "[[faults]]\nprimitive = 'thermal_throttling'\n"
     "target = 'node(database.primary) | node(cache[3])'", "faults[1].target", "index 3 is out of range"),
    ("params-scalar", "", "", "[[faults]]\nprimitive = 'nic_packet_loss'\ntarget = 'node(web_server[*])'\nparams = 0.2",
     "faults[1].params", "write an inline table, e.g. params = { loss = 0.15 } (got 0.2)"),
    ("tags-all-reported", "tags = ['Kernel', 'web server', 'ok']", "", "", "tags",
     "tags 'Kernel', 'web server' must be lowercase letters, digits, '-' or '_' (e.g. 'kernel', 'web-server')"),
    ("builtin-alert-threshold", "", "", "[alert]\nname = 'HighErrorRate'\nthreshold = 0.1", "alert.threshold",
     "only a custom rule (one with metric) uses threshold"),
    ("builtin-alert-entity", "", "", "[alert]\nname = 'DatabaseLatencyHigh'\nentity = 'cache'", "alert.entity",
     "only a custom rule (one with metric) uses entity"),
    ("custom-alert-no-threshold", "", "", "[alert]\nname = 'Checkout'\nmetric = 'error_rate'", "alert.threshold",
     "a custom rule needs a threshold"),
    ("fault-after-forced-page", "", "at = 400", "[budget]\nmax_onset_s = 300", "faults[0].at",
     "but the page is forced 300s after it (budget.max_onset_s), before the fault exists"),
    # a summary is formatted when the alert fires: a bad one crashed the episode at the page
    ("alert-summary-placeholder", "", "", "[alert]\nname = 'Edge'\nmetric = 'error_rate'\nthreshold = 0.05\n"
     "summary = 'errors {valu:.1%}'", "alert.summary", "unknown placeholder {valu}: only {value} is filled in"),
    ("alert-summary-format", "", "", "[alert]\nname = 'Edge'\nmetric = 'error_rate'\nthreshold = 0.05\n"
     "summary = 'errors {value:d}'", "alert.summary", "Unknown format code 'd'"),
    ("misleading-no-herring", "tags = ['misleading']", "", "[noise]\nextra = { benign_deploy = 1 }", "tags",
     "a task tagged misleading needs a red herring in [distractors]"),
    ("difficulty-range", "", "", "[noise]\nprofile = 'noisy'\n[distractors]\nbenign_deploy = 2", "difficulty",
     "easy: 4 complexity point(s) (noise noisy +2, distractors +2); easy allows 0-2; it fits medium or hard"),
]


def _write(tmp: Path, case: str, top: str, fault: str, rest: str) -> Path:
    text = GOOD.format(id=case, top=top, fault=fault, rest=rest)
    if case == "missing-field":
        text = text.replace('difficulty = "easy"\n', "")
    elif case == "bad-difficulty":
        text = text.replace('difficulty = "easy"', 'difficulty = "trivial"')
    elif case == "faults-as-table":
        text = text.replace("[[faults]]", "[faults]")
    path = tmp / f"{case}.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(("case", "top", "fault", "rest", "field", "problem"), CASES, ids=[c[0] for c in CASES])
def test_broken_file_names_file_field_and_problem(tmp_path: Path, case: str, top: str, fault: str, rest: str,
                                                  field: str, problem: str) -> None:
    path = _write(tmp_path, case, top, fault, rest)
    (result,), _cross = validate_paths([path])
    _, spec, problems = result
    assert spec is None or case in ("config-key", "config-key-typo", "config-value-refused", "config-value-text",
                                    "config-value-fraction", "difficulty-range")  # only a built world tells
    lines = [str(p) for p in problems]
    assert any(line.startswith(f"{path}: {field}: ") and problem in line for line in lines), lines


def test_good_template_is_valid(tmp_path: Path) -> None:
    path = _write(tmp_path, "fine", "", "", "")
    (result,), cross = validate_paths([path])
    assert result[2] == [] and cross == []


def test_id_must_match_file_name_and_be_unique(tmp_path: Path) -> None:
    a = tmp_path / "a"
    b = tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "dup-1.toml").write_text(GOOD.format(id="dup-1", top="", fault="", rest=""))
    (b / "dup-1.toml").write_text(GOOD.format(id="dup-1", top="", fault="", rest=""))
    (b / "other.toml").write_text(GOOD.format(id="not-other", top="", fault="", rest=""))
    results, cross = validate_paths([a, b])
    assert cross == []
    problems = {r[0]: [str(p) for p in r[2]] for r in results}
    assert problems[a / "dup-1.toml"] == []
    assert problems[b / "dup-1.toml"] == [
        f"{b / 'dup-1.toml'}: id: duplicate task id 'dup-1', also in {a / 'dup-1.toml'}"]
    assert problems[b / "other.toml"] == [f"{b / 'other.toml'}: id: id 'not-other' must match the file name 'other'"]


def test_a_misnamed_file_is_reported_with_the_other_problems(tmp_path: Path) -> None:
    path = _write(tmp_path, "inc-901", "", "", "")
    path.write_text(path.read_text().replace('id = "inc-901"', 'id = "bad-7"').replace('"easy"', '"trivial"'))
    (result,), _ = validate_paths([path])
    assert [p.field for p in result[2]] == ["difficulty", "id"]
    assert "id 'bad-7' must match the file name 'inc-901'" in str(result[2][1])


def test_every_problem_is_reported_not_just_the_first(tmp_path: Path) -> None:
    rest = ("[[faults]]\nprimitive = 'latent_sector_errors'\ntarget = 'disk(database.primary)'\n"
            "params = { read_error_rate = 0.9, growth = 7 }\n[budget]\nsteps = 1")
    path = _write(tmp_path, "many", "colour = 1", "", rest)
    (result,), _ = validate_paths([path])
    fields = {p.field for p in result[2]}
    assert {"colour", "faults[1].params.read_error_rate", "faults[1].params.growth", "budget.steps"} <= fields


def test_an_unknown_primitive_is_not_answered_with_the_whole_catalogue(tmp_path: Path) -> None:
    """It used to list all 50-odd primitives; a suggestion and `srezero faults` are enough."""
    path = _write(tmp_path, "typo", "", "", "[[faults]]\nprimitive = 'disk_on_fire'\ntarget = 'web_server'")
    (result,), _ = validate_paths([path])
    (problem,) = result[2]
    assert problem.field == "faults[1].primitive" and "did you mean" not in problem.message
    assert "(`srezero faults` lists all" in problem.message and "wrong_health_check_path" not in problem.message


def _problems(path: Path, extra: tuple[str, ...] = ()) -> list[Problem]:
    (result,), cross = validate_paths([path], extra)
    assert cross == []
    return result[2]


def test_an_id_taken_by_a_bundled_task_is_reported(tmp_path: Path) -> None:
    """A private inc-001 validated on its own used to pass; on the task path it broke every lookup."""
    path = tmp_path / "inc-001.toml"
    path.write_text(GOOD.format(id="inc-001", top="", fault="", rest=""))
    assert [(p.field, p.message.split(";")[0]) for p in _problems(path)] == [
        ("id", f"task id 'inc-001' is already taken by {ROOT / 'tasks' / 'inc-001.toml'}")]
    # the bundled directory itself, and a file validated through its own --tasks-dir, are no clash
    assert _problems(ROOT / "tasks" / "inc-001.toml") == []
    other = tmp_path / "mine.toml"
    other.write_text(GOOD.format(id="mine", top="", fault="", rest=""))
    assert _problems(other, (str(tmp_path),)) == []


def test_a_bundled_task_must_keep_the_curated_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The schema leaves rationale and hints optional; a file in the bundled tasks/ needs them, and
    `srezero task validate` says so (a reviewer's new task without either passed validation)."""
    path = _write(tmp_path, "inc-999", "", "", "")
    (result,), _ = validate_paths([path])
    assert result[2] == []  # elsewhere (a classroom's own directory) they stay optional
    monkeypatch.setattr("srezero.task.validate.bundled_dir", lambda: tmp_path)
    (result,), _ = validate_paths([path])
    assert [(p.field, p.message) for p in result[2]] == [
        ("rationale", "a curated task explains its difficulty in at least 40 characters (has 0)"),
        ("hints", "a curated task has at least 2 graded hints, mildest first (has 0)")]


def test_an_id_taken_in_a_tasks_dir_is_reported(tmp_path: Path) -> None:
    theirs, mine = tmp_path / "theirs", tmp_path / "mine"
    theirs.mkdir()
    mine.mkdir()
    for d in (theirs, mine):
        (d / "class-1.toml").write_text(GOOD.format(id="class-1", top="", fault="", rest=""))
    assert _problems(mine / "class-1.toml") == []
    (problem,) = _problems(mine / "class-1.toml", (str(theirs),))
    assert problem.field == "id" and str(theirs / "class-1.toml") in problem.message


def test_validate_counts_a_taken_id_as_invalid(tmp_path: Path) -> None:
    """A copy of a bundled task used to print "ok", count "1 valid", then an error and exit 1."""
    from click.testing import CliRunner

    from srezero.cli import cli

    copy = tmp_path / "inc-001.toml"
    copy.write_text((ROOT / "tasks" / "inc-001.toml").read_text())
    res = CliRunner().invoke(cli, ["task", "validate", str(copy)])
    assert res.exit_code == 1 and "ok " not in res.output
    assert f"{copy}: id: task id 'inc-001' is already taken" in res.output
    assert res.output.rstrip().endswith("0 valid, 1 invalid")


def test_the_page_entity_decides_whether_a_task_is_misleading() -> None:
    """The rule's entity, not the custom-rule default (load_balancer): a database fault paged by
    DatabaseLatencyHigh points straight at its cause."""
    from srezero.task.loader import parse_text
    from srezero.task.suite import is_misleading

    def spec(alert: str, primitive: str = "lock_contention", target: str = "database") -> bool:
        text = GOOD.format(id="mm", top="tags = ['misleading']", fault="", rest=f"[distractors]\nbenign_deploy = 1\n"
                           f"[alert]\nname = '{alert}'").replace('"bad_config"', f'"{primitive}"')
        text = text.replace('target = "load_balancer"', f'target = "{target}"').replace(
            'params = { key = "health_check_path", value = "/status" }', "")
        return is_misleading(parse_text(text))

    assert not spec("DatabaseLatencyHigh")
    assert spec("HighErrorRate")
    assert not spec("NodeCPUHigh", "thermal_throttling", "node(web_server[*])")
    assert spec("HighErrorRate", "thermal_throttling", "node(web_server[*])")


def test_validate_and_show_print_the_difficulty_points(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from srezero.cli import cli

    res = CliRunner().invoke(cli, ["task", "validate", str(ROOT / "tasks" / "inc-013.toml")])
    assert res.exit_code == 0 and "medium: 4 complexity point(s) (noise default +1, distractors +1, misleading +1, " \
        "node-level root (kernel) +1); medium allows 1-5" in res.output
    res = CliRunner().invoke(cli, ["task", "show", "inc-013", "--spoilers"])
    assert "difficulty medium: 4 complexity point(s)" in res.output
    assert "complexity" not in CliRunner().invoke(cli, ["task", "show", "inc-013"]).output


@pytest.mark.parametrize(("data", "problem"), [
    ('id = "enc"\ntitle = "caf\xe9"\n'.encode("latin-1"), "not UTF-8 (byte 0xe9 on line 2); save it as UTF-8"),
    (b"\xef\xbb\xbf" + GOOD.format(id="enc", top="", fault="", rest="").encode(), "starts with a UTF-8 byte-order mark"),
])
def test_a_file_that_is_not_plain_utf8_is_named_not_a_traceback(tmp_path: Path, data: bytes, problem: str) -> None:
    path = tmp_path / "enc.toml"
    path.write_bytes(data)
    (result,), _ = validate_paths([path])
    assert [(p.field, problem in p.message) for p in result[2]] == [("(file)", True)], result[2]


def test_faults_written_as_a_list_of_names_say_how_to_write_a_fault(tmp_path: Path) -> None:
    path = tmp_path / "flat.toml"
    text = GOOD.format(id="flat", top='faults = ["bad_config"]', fault="", rest="")
    path.write_text(text[: text.index("[[faults]]")])
    (result,), _ = validate_paths([path])
    assert any(p.field == "faults[0]" and "under its own [[faults]] header" in p.message for p in result[2]), result[2]


def test_a_directory_named_like_a_task_file_is_called_a_directory(tmp_path: Path) -> None:
    import srezero

    (tmp_path / "d.toml").mkdir()
    with pytest.raises(ValueError, match="a directory, not a task file"):
        srezero.get_task(str(tmp_path / "d.toml"))


def test_a_misspelt_parameter_in_a_params_dict_gets_a_hint() -> None:
    """Built from Python rather than TOML, a FaultSpec's params dict gets the same did-you-mean."""
    from pydantic import ValidationError

    from srezero.task.spec import FaultSpec

    with pytest.raises(ValidationError, match=r"@params\.overcomit: conntrack_full has no parameter 'overcomit'; "
                                              r"did you mean overcommit\? \(parameters: overcommit\)"):
        FaultSpec(primitive="conntrack_full", target="node(web_server[*])", params={"overcomit": 4.0})


def test_alternative_targets_are_chosen_by_the_seed() -> None:
    """inc-023's throttled node is the database primary's on some seeds and the broker's on others, the
    same on every run of one seed."""
    import srezero

    def hosts(seed: int) -> frozenset[str]:
        env = srezero.make("inc-023", seed)
        env.reset()
        return frozenset(r.kind for r in env.faults[0].target.obj.replicas)

    chosen = [hosts(seed) for seed in range(8)]
    assert {"database" in h for h in chosen} == {True, False}
    assert {"message_queue" in h for h in chosen} == {True, False}
    assert chosen == [hosts(seed) for seed in range(8)]


def test_a_cause_the_seed_places_in_one_of_two_services_lives_in_both() -> None:
    """An application fault on ``web_server | worker`` may be in either, so the task's roots (what
    ``srezero tasks --root`` and the suite's per-service counts read) name both, not the first."""
    from srezero.task.spec import FaultSpec

    assert FaultSpec(primitive="crash_loop", target="web_server | worker").roots == ("web_server", "worker")
    assert FaultSpec(primitive="crash_loop", target="worker").roots == ("worker",)
    # a node-level primitive lives in its layer wherever the seed puts it
    assert FaultSpec(primitive="thermal_throttling", target="node(database.primary) | node(cache[0])").roots == (
        "hardware",)
