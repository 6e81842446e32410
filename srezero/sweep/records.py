"""The run directory: record paths, atomic byte-reproducible writes, the manifest, flat rows and CSV.

Why so strict: a record must be the same bytes wherever and however it was produced (sorted keys,
no wall clock, no host data), a killed sweep must never leave a half-written record (temp file +
``os.replace``), and reading a run back must not depend on directory listing order. The layout is
specified in docs/records.md; keep the two in step.
"""

from __future__ import annotations

import csv
import hashlib
import math
import os
import platform
import re
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from srezero.scoring.marks import SUCCESS_DIAGNOSIS

SCHEMA = 1
#: The reward mode episodes are recorded with: each step keeps its shaped reward for analysis (the agent
#: loop never shows rewards to the agent). A rerun or a replay uses it too, to give the same record.
REWARD = "shaped"
EPISODES = "episodes"
MANIFEST = "manifest.json"
SUMMARY_JSON = "summary.json"
SUMMARY_CSV = "summary.csv"
EPISODES_CSV = "episodes.csv"
#: Record statuses. Only ``ok`` records carry a result and enter the statistics.
STATUSES = ("ok", "provider_error", "agent_error", "env_error")

#: Per-episode metrics, in column order (docs/records.md, "Summary").
METRICS = ("marks", "success", "diagnosis", "diagnosis_score", "mitigation", "evidence", "invalid_rate",
           "wrong_fix_rate", "ttd_s", "ttm_s", "steps", "tokens", "cost_usd")

_DUMP = orjson.OPT_SORT_KEYS | orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS | orjson.OPT_APPEND_NEWLINE
_UNSAFE = re.compile(r"[^A-Za-z0-9._@-]")


def safe(name: str) -> str:
    """A file-system-safe form of an agent label or task id (the same on every platform)."""
    return _UNSAFE.sub("_", name) or "_"


def record_dir(out: str | Path, label: str, task_id: str) -> str:
    """The directory of one agent x task (a string: path objects cost more than the write at 10k files)."""
    return os.path.join(out, EPISODES, safe(label), safe(task_id))


def record_name(seed: int) -> str:
    return f"seed-{seed:04d}.json"


def record_path(out: str | Path, label: str, task_id: str, seed: int) -> Path:
    return Path(record_dir(out, label, task_id), record_name(seed))


def dumps(obj: Any) -> bytes:
    """Canonical bytes of a record: orjson, keys sorted at every level, one trailing newline."""
    return orjson.dumps(obj, option=_DUMP)


def dumps_episode(record: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    """``(record, bytes)`` for an episode record. A record holding something JSON cannot (an object an
    agent put in its usage or step info) becomes that agent's failure, ``agent_error``, with the
    offending values named by type: one bad agent never stops a sweep or loses another's records."""
    try:
        return record, dumps(record)
    except TypeError as exc:
        from srezero.tools.parse import json_safe

        try:  # text JSON cannot encode (a lone surrogate an agent sent) is escaped: the episode stands
            escaped = _escaped(record)
            return escaped, dumps(escaped)
        except TypeError:
            pass
        record = {**json_safe(record), "status": "agent_error", "result": None,
                  "error": f"the episode record could not be written ({exc}); the values JSON cannot hold are "
                           "recorded by their type name"}
        return record, dumps(record)


def _escaped(value: Any) -> Any:
    """``value`` with every string JSON cannot encode (lone surrogates) backslash-escaped, keys too;
    anything else as it is (unlike ``json_safe``, which would name an object an agent left by its type)."""
    from srezero.tools.parse import escaped_text

    if isinstance(value, str):
        return escaped_text(value)
    if isinstance(value, dict):
        return {_escaped(k): _escaped(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_escaped(v) for v in value]
    return value


def writable_problem(path: str | Path, directory: bool = False) -> str:
    """Why a file (or with ``directory``, a directory to write into) could not be made at ``path``: an
    empty string when it can. Commands ask before any work, so a bad path costs nothing. It makes the
    directory and writes a probe file there, since permission bits say nothing to root (``/proc``)."""
    p = Path(os.path.abspath(path))
    if p.is_dir() and not directory:
        return f"{p} is a directory"
    if p.exists() and not p.is_dir() and directory:
        return f"{p} is a file, not a directory"
    folder = p if directory else p.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".srezero-probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        blocker = next((a for a in (folder, *folder.parents) if a.exists()), folder)
        if not blocker.is_dir():
            return f"{blocker} is a file, not a directory"
        return f"cannot write in {folder}: {(exc.strerror or str(exc)).lower()}"
    return ""


def write_atomic(path: str | Path, data: bytes) -> None:
    """Write to a temp file in the same directory, then rename: the file exists whole or not at all."""
    path = os.fspath(path)
    tmp = f"{path}.{os.getpid()}.tmp"
    parent = os.path.dirname(path)
    if parent and not os.path.isdir(parent):  # "" is the current directory
        os.makedirs(parent, exist_ok=True)
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


def clean_tmp(out: str | Path) -> int:
    """Remove temp files a killed writer left behind; returns how many."""
    root = Path(out) / EPISODES
    n = 0
    if root.is_dir():
        for p in root.rglob("*.tmp"):
            if p.is_file():  # a directory of that name is not a writer's leftover: leave it
                p.unlink(missing_ok=True)
                n += 1
    return n


def task_hash(spec: Any) -> str:
    """Hash of the task's canonical content: changes with the task, not with its file's formatting."""
    blob = orjson.dumps(spec.model_dump(mode="json"), option=orjson.OPT_SORT_KEYS)
    return "sha256:" + hashlib.sha256(blob).hexdigest()[:16]


def record_paths(run_dir: str | Path) -> list[Path]:
    """The path of every episode record of a run, sorted (agent, task, seed)."""
    root = Path(run_dir) / EPISODES
    return sorted(root.glob("*/*/seed-*.json")) if root.is_dir() else []


#: What the summary reads from an ``ok`` record's result (``row_of``).
RESULT_KEYS = ("marks", "success", "diagnosis", "mitigated", "evidence_coverage", "invalid_actions", "wrong_fixes",
               "steps")


def record_problem(data: Any) -> str | None:
    """Why ``data`` is not an episode record this srezero can count, or None. A record missing what the
    summary reads must be refused, not counted with made-up zeros (or crash with a KeyError)."""
    if not isinstance(data, dict):
        return "not a JSON object"
    missing = [k for k in ("agent", "task_id", "seed", "status") if k not in data]
    if missing:
        return f"no {', '.join(missing)}"
    if data.get("schema", SCHEMA) != SCHEMA:
        return f"record schema {data['schema']!r}, written by another srezero version; this one reads schema {SCHEMA}"
    if not isinstance(data["seed"], int) or isinstance(data["seed"], bool):
        return f"seed {data['seed']!r} is not an integer"
    if data["status"] not in STATUSES:
        return f"status {data['status']!r} is none of {', '.join(STATUSES)}"
    result = data.get("result")
    if data["status"] == "ok":
        if not isinstance(result, dict):
            return "status ok but no result"
        missing = [k for k in RESULT_KEYS if k not in result]
        if missing or not isinstance(result["diagnosis"], dict) or "score" not in result["diagnosis"]:
            return f"its result lacks {', '.join(missing) or 'diagnosis.score'}"
    from srezero.sweep.record_shape import shape_problem

    return shape_problem(data)


def _misplaced(path: Path, data: dict[str, Any]) -> str | None:
    """Where a record found under ``episodes/`` belongs, when that is not where it is. A sweep finds records
    by path (resume skips it) but counts them by content: a record moved or copied to another agent's folder
    would be counted twice under its own agent, silently."""
    if path.parent.parent.parent.name != EPISODES:
        return None
    want = (safe(str(data["agent"])), safe(str(data["task_id"])), record_name(data["seed"]))
    if (path.parent.parent.name, path.parent.name, path.name) == want:
        return None
    return "/".join((EPISODES, *want))


def read_record(path: str | Path) -> dict[str, Any]:
    """One record; a file that is not one (records are written atomically, so only something outside
    srezero makes one), or one in another episode's place, is a ValueError naming it and the way out."""
    try:
        data = orjson.loads(Path(path).read_bytes())
    except (orjson.JSONDecodeError, OSError) as exc:
        raise ValueError(f"{path}: not a readable episode record ({exc}); delete it and rerun the same command "
                         "to run that episode again") from None
    problem = record_problem(data)
    if problem:
        raise ValueError(f"{path}: not an episode record ({problem}); delete it and rerun the same command to run "
                         "that episode again")
    home = _misplaced(Path(path), data)
    if home:
        raise ValueError(f"{path}: holds the record of agent {data['agent']!r}, task {data['task_id']!r}, seed "
                         f"{data['seed']}, which belongs at {home}; a run counts records by their content, so it "
                         "would be counted under that episode (twice, if that one exists too). Move it back (to run "
                         "an agent under another name, sweep with --label), or delete it and rerun the sweep")
    return data


def iter_records(run_dir: str | Path) -> Iterator[dict[str, Any]]:
    """Every episode record of a run, in sorted path order (agent, task, seed)."""
    for p in record_paths(run_dir):
        yield read_record(p)


# ---------------------------------------------------------------------------- flat rows
#: Outcome metrics an unfinished (non-ok) episode counts as zero; the others stay undefined.
FAILED_AS_ZERO = ("marks", "success", "diagnosis", "diagnosis_score", "mitigation", "evidence")

def row_of(record: dict[str, Any]) -> dict[str, Any]:
    """The compact per-episode row the summary is computed from (metrics are None when undefined)."""
    row: dict[str, Any] = {"agent": record["agent"], "task": record["task_id"], "seed": record["seed"],
                           "status": record["status"], "privileged": bool(record.get("privileged"))}
    r = record.get("result")
    usage = record.get("usage") or {}
    if record["status"] != "ok" or not r:
        # an episode that did not finish scored nothing: counting it as a zero (not leaving it out)
        # means an agent cannot raise an exception to drop the episodes it would fail. Genuine outages
        # are re-run with --retry-errors; the error counts stay visible in the summary.
        row.update(dict.fromkeys(METRICS))
        row.update(dict.fromkeys(FAILED_AS_ZERO, 0.0))
        row.update(_spend(usage))  # what a failed episode cost was still paid
        return row
    steps = max(1, int(r["steps"]))
    writes = len(r.get("writes") or ())
    row.update({
        "marks": float(r["marks"]),
        "success": 1.0 if r["success"] else 0.0,
        "diagnosis": 1.0 if r["diagnosis"]["score"] >= SUCCESS_DIAGNOSIS else 0.0,
        "diagnosis_score": float(r["diagnosis"]["score"]),
        "mitigation": 1.0 if r["mitigated"] else 0.0,
        "evidence": float(r["evidence_coverage"]),
        "invalid_rate": r["invalid_actions"] / steps,
        "wrong_fix_rate": r["wrong_fixes"] / writes if writes else 0.0,
        "ttd_s": None if r.get("ttd_s") is None else float(r["ttd_s"]),
        "ttm_s": None if r.get("ttm_s") is None else float(r["ttm_s"]),
        "steps": float(r["steps"]),
        **_spend(usage),
    })
    return row


def _spend(usage: dict[str, Any]) -> dict[str, float]:
    return {"tokens": float(usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)),
            "cost_usd": float(usage.get("cost_usd", 0.0))}


def write_csv(path: Path, header: list[str], rows: Iterable[list[Any]]) -> None:
    """CSV with ``\\n`` line ends and fixed float formatting, so the bytes are reproducible."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(header)
        for row in rows:
            w.writerow(["" if v is None else (_num(v) if isinstance(v, float) else v) for v in row])
    os.replace(tmp, path)


def _num(v: float) -> str:
    """``%.6g``, except that a value of a million or more keeps its integer digits: an LLM episode's token
    count (1,501,234) must not become 1.50123e+06, which no longer matches its record."""
    if abs(v) < 999_999.5 or not math.isfinite(v):  # below that, %.6g keeps every integer digit
        return f"{v:.6g}"
    return str(int(v)) if v.is_integer() else f"{v:.6f}".rstrip("0")


def write_episodes_csv(out: Path, rows: list[dict[str, Any]], tasks: dict[str, Any] | None = None) -> None:
    """One row per episode; ``tasks`` (the manifest's) supplies each task's difficulty and split, so a
    breakdown needs no join (empty for a task the manifest does not describe)."""
    tasks = tasks or {}
    header = ["agent", "task", "difficulty", "split", "seed", "status", *METRICS]

    def line(r: dict[str, Any]) -> list[Any]:
        meta = tasks.get(r["task"])
        meta = meta if isinstance(meta, dict) else {}
        return [r["agent"], r["task"], meta.get("difficulty"), meta.get("split"), *(r[k] for k in header[4:])]

    write_csv(out / EPISODES_CSV, header, map(line, rows))


# ---------------------------------------------------------------------------- manifest
def git_revision() -> str | None:
    """The checkout's commit (``+dirty`` with uncommitted changes), or None outside git."""
    here = Path(__file__).resolve().parent
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=10)
        if rev.returncode != 0:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return rev.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


#: The code an episode's outcome depends on (the simulator, faults, telemetry, tools, tasks, scoring and
#: agents), relative to the package root; the CLI, report, play and adapters are left out so that a
#: change there does not block resuming a run.
ENGINE = ("sim", "faults", "telemetry", "tools", "task", "scoring", "agents", "episode.py", "backend.py")


def engine_hash() -> str:
    """Hash of the source of everything that decides an episode (``ENGINE``, and the baselines):
    a run must not mix records made by two versions of the simulator or the scorer."""
    root = Path(__file__).resolve().parents[1]
    files = [p for name in ENGINE for p in ((root / name).rglob("*.py") if (root / name).is_dir() else [root / name])]
    baselines = root.parent / "baselines"
    files += list(baselines.glob("*.py")) if baselines.is_dir() else []
    h = hashlib.sha256()
    for p in sorted(files, key=lambda p: p.relative_to(root.parent).as_posix()):
        h.update(p.relative_to(root.parent).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return "sha256:" + h.hexdigest()[:16]


def tools_hash() -> str:
    """Hash of the tool declarations (names, schemas, kinds, costs): agents choose from them, so a
    changed tool set changes episodes even when no task did."""
    from srezero.tools.registry import tool_specs

    blob = orjson.dumps(tool_specs(), option=orjson.OPT_SORT_KEYS)
    return "sha256:" + hashlib.sha256(blob).hexdigest()[:16]


#: Libraries whose versions can change a run's bytes: episodes (simpy), the summary's bootstrap and
#: percentiles (numpy), validation (pydantic), serialisation (orjson), plots (matplotlib).
PACKAGES = ("simpy", "numpy", "pydantic", "orjson", "matplotlib")


def package_versions() -> dict[str, str | None]:
    """The installed version of each of :data:`PACKAGES` (None when one is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def new_manifest(tasks: dict[str, dict[str, Any]], agents: dict[str, dict[str, Any]], seeds: list[int],
                 max_steps: int | None = None) -> dict[str, Any]:
    from srezero._version import __version__

    return {"schema": SCHEMA, "srezero_version": __version__, "git_revision": git_revision(),
            "python": platform.python_version(), "platform": f"{sys.platform}-{platform.machine()}",
            "packages": package_versions(), "tasks": tasks, "agents": agents, "seeds": sorted(set(seeds)),
            "tools": tools_hash(), "engine": engine_hash(), "max_steps": max_steps}


def load_manifest(out: str | Path) -> dict[str, Any] | None:
    """The run's manifest, None if it has none; one that is not a JSON object is a ValueError naming it."""
    p = Path(out) / MANIFEST
    if not p.is_file():
        return None
    try:
        data = orjson.loads(p.read_bytes())
    except (orjson.JSONDecodeError, OSError) as exc:
        data, problem = None, str(exc)
    else:
        from srezero.sweep.record_shape import manifest_problem

        problem = manifest_problem(data) if isinstance(data, dict) else "not a JSON object"
    if problem:
        raise ValueError(f"{p}: not a readable run manifest ({problem}); restore it, or delete it and rerun (a new "
                         "one is written, but the records can then no longer be checked against the tasks, agents "
                         "and build they were made with)")
    return data


#: Agent options and settings that say how to reach a model, not what it does: a run resumes with other
#: values (``localhost`` for ``127.0.0.1``, another timeout, the same prices from another file).
TRANSPORT = frozenset({"base_url", "timeout_s", "max_retries", "api_key_env", "price_table"})


def agent_differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """``section.key: old -> new`` for every option or setting that changes what an agent does."""
    out = []
    for section in sorted(set(old) | set(new)):
        if (section == "code" and section not in old) or section == "transports":  # code: recorded before
            continue  # srezero hashed agents' code; transports: how the run reached the model, not what it does
        a, b = old.get(section), new.get(section)
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(set(a) | set(b)):
                if key not in TRANSPORT and a.get(key) != b.get(key):
                    out.append(f"{section}.{key}: {a.get(key)!r} -> {b.get(key)!r}")
        elif a != b:
            out.append(f"{section}: {a!r} -> {b!r}")
    return out


def _transport(meta: dict[str, Any]) -> dict[str, Any]:
    """How an agent reached its model: the TRANSPORT options and settings, ``section.key -> value``."""
    return {f"{section}.{key}": value for section in ("options", "settings")
            for key, value in sorted((meta.get(section) or {}).items()) if key in TRANSPORT}


def _with_transports(prev: dict[str, Any] | None, info: dict[str, Any]) -> dict[str, Any]:
    """A resumed agent's manifest entry: its new settings, and under ``transports`` every way it reached
    its model in this run when that changed (another --base-url), so older records stay attributable."""
    if prev is None:
        return info
    seen = prev.get("transports") or [_transport(prev)]
    now = _transport(info)
    if seen == [now]:  # never changed
        return info
    return {**info, "transports": seen + ([now] if now not in seen else [])}


def _build(m: dict[str, Any]) -> dict[str, Any]:
    return {k: m.get(k) for k in ("srezero_version", "git_revision", "engine")}


def merge_manifest(old: dict[str, Any] | None, new: dict[str, Any], allow_mixed: bool = False) -> dict[str, Any]:
    """Extend a run's manifest; raise ValueError when a task or agent changed under the same name, or
    when the code that decides episodes changed (unless ``allow_mixed``; ``builds`` keeps every one)."""
    if old is None:
        return {**new, "builds": [_build(new)]}
    problems = []
    builds = old.get("builds") or [_build(old)]
    if old.get("engine") != new["engine"] and not allow_mixed:
        problems.append(f"the simulator, scoring or agent code changed since the run was recorded (srezero "
                        f"{old.get('srezero_version')} at {old.get('git_revision') or 'no git revision'}, engine "
                        f"{old.get('engine') or 'unrecorded'}; now {new['srezero_version']} at "
                        f"{new['git_revision'] or 'no git revision'}, engine {new['engine']}), so new records would "
                        "not be comparable with the old ones")
    for tid, info in new["tasks"].items():
        prev = old.get("tasks", {}).get(tid)
        if prev is not None and prev["hash"] != info["hash"]:
            problems.append(f"task {tid} changed since it was recorded ({prev['hash']} -> {info['hash']})")
    for label, info in new["agents"].items():
        prev = old.get("agents", {}).get(label)
        changed = agent_differences(prev, info) if prev is not None else []
        if changed:
            what = "code or settings" if any(c.startswith("code:") for c in changed) else "settings"
            problems.append(f"agent {label} has different {what} from the recorded run ({'; '.join(changed)})")
    if "tools" in old and old["tools"] != new["tools"]:
        problems.append(f"the tool set changed since the run was recorded ({old['tools']} -> {new['tools']})")
    if "max_steps" in old and old["max_steps"] != new["max_steps"]:
        def cap(v: Any) -> str:
            return "no --max-steps (each task's own step budget)" if v is None else f"--max-steps {v}"

        problems.append(f"this sweep has {cap(new['max_steps'])}, the recorded run {cap(old['max_steps'])}")
    if problems:
        mixed_only = len(problems) == 1 and old.get("engine") != new["engine"] and not allow_mixed
        advice = ("; pass --allow-mixed to extend it anyway (the manifest lists every build under 'builds'), or "
                  "use a fresh --out directory") if mixed_only else "; use a fresh --out directory"
        raise ValueError("; ".join(problems) + advice)
    merged = dict(new)
    merged["builds"] = builds + ([_build(new)] if _build(new) not in builds else [])
    merged["tasks"] = {**old.get("tasks", {}), **new["tasks"]}
    merged["agents"] = {**old.get("agents", {}),
                        **{label: _with_transports(old.get("agents", {}).get(label), info)
                           for label, info in new["agents"].items()}}
    merged["seeds"] = sorted(set(old.get("seeds", [])) | set(new["seeds"]))
    return merged


def write_json(path: Path, obj: Any) -> None:
    write_atomic(path, orjson.dumps(obj, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE))
