"""Read a run directory into flat episode rows. The only module that knows the record layout.

The layout is the one ``srezero sweep`` writes (docs/records.md, read through
:mod:`srezero.sweep.records`): ``manifest.json`` plus one JSON record per episode under
``episodes/<agent>/<task_id>/seed-NNNN.json``. A record carries ``agent``, ``task_id``,
``seed``, ``status`` (``ok``, ``provider_error``, ``agent_error``, ``env_error``),
``result`` (null unless ok), ``trajectory`` and, for LLM agents, ``usage``. A directory of bare
:func:`srezero.agents.runner.run_episode` records (no ``status``; ``agent`` added by the caller)
is read too, so ``srezero run --out`` files can be reported on. If the layout changes, this module
is the one place to change.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

#: Agents reported as upper bounds (drawn apart, never ranked against baselines).
UPPER_BOUND_NAMES = ("oracle",)
#: Statuses of a record that failed before it could be scored.
PROVIDER_ERROR = "provider_error"
AGENT_ERROR = "agent_error"
ENV_ERROR = "env_error"


class RunDirError(ValueError):
    """The run directory cannot be reported on; the message says why and what was expected."""


@dataclass(frozen=True)
class Ep:
    """One episode, flattened for tables and plots. ``record`` keeps the raw dict for replay pages."""

    agent: str
    task_id: str
    seed: int
    status: str
    ok: bool
    marks: float
    success: bool
    diagnosis: float
    mitigated: bool
    evidence: float
    terms: dict[str, float]
    invalid: int
    wrong_fixes: int
    destructive: int
    distractor: int
    premature: bool
    truncated: bool
    resolved: bool
    steps: int
    ttd_s: float | None
    ttm_s: float | None
    cost_usd: float | None
    tokens: int
    provider_errors: int
    difficulty: str
    layers: tuple[str, ...]
    upper_bound: bool
    split: str
    record: dict[str, Any] = field(repr=False, compare=False, hash=False)

    @property
    def key(self) -> str:
        """A file-name-safe id of the episode, unique in a run."""
        return f"{safe_name(self.agent)}--{safe_name(self.task_id)}--s{self.seed:04d}"

    @property
    def end(self) -> str | None:
        """How the episode ended (the result's ``end``: resolve, step_budget, time_budget, stopped); None
        for a record that failed, or one written before results named it, unless it was resolved."""
        result = self.record.get("result") or {}
        return result.get("end") or ("resolve" if self.resolved else None)

    @property
    def is_llm(self) -> bool:
        return "usage" in self.record

    @property
    def hints(self) -> int | None:
        """Hints a player took (``srezero play --hints``); None for records that cannot take hints."""
        return len(self.record["hints"]) if isinstance(self.record.get("hints"), list) else None


@dataclass
class Run:
    """A loaded run: its directory, its manifest (``{}`` if none) and its episodes in a fixed order."""

    path: Path
    manifest: dict[str, Any]
    episodes: list[Ep]

    @property
    def agents(self) -> list[str]:
        return sorted({e.agent for e in self.episodes})

    @property
    def tasks(self) -> list[str]:
        return sorted({e.task_id for e in self.episodes})


def safe_name(text: str) -> str:
    """The file-name form of a task id or agent label: the one the sweep uses for its record paths."""
    from srezero.sweep.records import safe

    return safe(text)


def _read_json(path: Path) -> Any:
    try:
        return orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise RunDirError(f"{path}: not a readable JSON file: {exc}") from None


def _try_json(path: Path) -> Any:
    """A JSON file's content, or None: for files that only might be records."""
    try:
        return orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None


def _is_record(data: Any) -> bool:
    return isinstance(data, dict) and "task_id" in data and "seed" in data and ("result" in data or "status" in data)


def _is_live(rec: dict[str, Any]) -> bool:
    """A live-cluster episode's record (``srezero run --backend k8s``): no ground truth, no marks to report."""
    result = rec.get("result")
    return (isinstance(result, dict) and result.get("backend") not in (None, "sim")) or \
        str(rec.get("episode_id") or "").startswith("live-")


def _check_shape(path: Path, data: dict[str, Any]) -> None:
    """A loose record file is read as a sweep's records are: a field of the wrong type is named here, not
    a traceback in whichever reader meets it first."""
    from srezero.sweep.record_shape import shape_problem

    problem = shape_problem(data, loose=True)
    if problem:
        raise RunDirError(f"{path}: not an episode record this srezero can read ({problem})")


_LIVE = "live-cluster record(s) (srezero run --backend k8s), which have no ground truth or marks to report"


def read_records(run_dir: str | Path) -> tuple[dict[str, Any], list[tuple[Path, dict[str, Any]]]]:
    """The manifest and the raw record dicts of a run directory (or of one record file), each with the
    file it was read from."""
    from srezero.sweep import records as layout

    path = Path(run_dir)
    if path.is_file():
        data = _read_json(path)
        if not _is_record(data):
            raise RunDirError(f"{path}: not an episode record (needs task_id, seed and result)")
        if _is_live(data):
            raise RunDirError(f"{path}: a live-cluster record (srezero run --backend k8s) has no ground truth or "
                              "marks to report")
        _check_shape(path, data)
        return {}, [(path, data)]
    if not path.is_dir():
        raise RunDirError(f"{path}: no such run directory")
    try:
        manifest = layout.load_manifest(path) or {}
    except ValueError as exc:  # names the manifest and the field
        raise RunDirError(str(exc)) from None
    swept = (path / layout.EPISODES).is_dir()
    if swept:  # a sweep's run directory
        try:
            records = [(p, layout.read_record(p)) for p in layout.record_paths(path)]
        except ValueError as exc:  # names the unreadable record
            raise RunDirError(str(exc)) from None
        # a `srezero run --out` file dropped next to episodes/ is not read: say so rather than leave it out silently
        loose = [p.name for p in sorted(path.glob("*.json"))
                 if p.name not in (layout.MANIFEST, layout.SUMMARY_JSON) and _is_record(_try_json(p))]
        if loose:
            print(f"note: ignored {len(loose)} record file(s) outside {layout.EPISODES}/ ({', '.join(loose[:3])}"
                  f"{', ...' if len(loose) > 3 else ''}): a run directory is read from {layout.EPISODES}/<agent>/"
                  "<task>/seed-NNNN.json; report on a loose file or folder of them separately", file=sys.stderr)
    else:  # a loose directory of runner records (e.g. `srezero run --out x.json` files)
        files = sorted(p for p in path.rglob("*.json") if p.name not in (layout.MANIFEST, layout.SUMMARY_JSON))
        records = [(p, d) for p, d in ((p, _read_json(p)) for p in files) if _is_record(d)]
    live = sum(1 for _, d in records if _is_live(d))
    if live:
        records = [(p, d) for p, d in records if not _is_live(d)]
        if not records:
            raise RunDirError(f"{path}: only {live} {_LIVE}")
        print(f"note: skipped {live} {_LIVE}", file=sys.stderr)
    if not swept:  # read_record has checked a sweep's records, strictly
        for p, d in records:
            _check_shape(p, d)
    if not records:
        raise RunDirError(f"{path}: no episode records found (expected {layout.EPISODES}/<agent>/<task>/"
                          "seed-NNNN.json, as written by `srezero sweep --out DIR`)")
    return manifest, records


def engines(manifest: dict[str, Any]) -> set[str]:
    """The simulator/scoring builds (``engine`` hashes) that wrote a run: several after ``sweep --allow-mixed``."""
    builds = manifest.get("builds") or [manifest]
    return {str(b["engine"]) for b in builds if isinstance(b, dict) and b.get("engine")}


def _task_meta(task_ids: list[str], manifest: dict[str, Any]) -> dict[str, tuple[str, tuple[str, ...], str]]:
    """Difficulty, fault layers and split per task: the task files first, the manifest as a fallback."""
    out: dict[str, tuple[str, tuple[str, ...], str]] = {}
    try:
        from srezero.task.loader import list_tasks

        infos = {t.id: t for t in list_tasks()}
    except (ValueError, OSError):  # a broken extra task dir must not stop a report
        infos = {}
    tasks = manifest.get("tasks") or {}
    for tid in task_ids:
        info = infos.get(tid)
        meta = tasks.get(tid) or {}
        if info is not None:
            out[tid] = (info.difficulty, tuple(info.layers), info.split)
        else:
            out[tid] = (str(meta.get("difficulty") or "unknown"), (), str(meta.get("split") or "unknown"))
    return out


def _upper_bound(agent: str, record: dict[str, Any], manifest: dict[str, Any]) -> bool:
    info = (manifest.get("agents") or {}).get(agent) or {}
    if (info.get("settings") or {}).get("upper_bound"):
        return True
    return bool(record.get("privileged")) or (record.get("agent_name") or agent) in UPPER_BOUND_NAMES


def to_ep(rec: dict[str, Any], manifest: dict[str, Any], meta: tuple[str, tuple[str, ...], str]) -> Ep:
    """Flatten one record. A record that failed (provider or agent error) has ``ok=False`` and zeros."""
    result = rec.get("result") or {}
    status = str(rec.get("status") or ("ok" if result else AGENT_ERROR))
    usage = rec.get("usage") or {}
    agent = str(rec.get("agent") or rec.get("agent_name") or "agent")
    difficulty, layers, split = meta
    if not layers:
        truth = result.get("ground_truth") or []
        layers = tuple(dict.fromkeys(str(g.get("layer", "unknown")) for g in truth)) or \
            (("none",) if result.get("no_fault") else ("unknown",))
    diag = result.get("diagnosis") or {}
    return Ep(
        agent=agent, task_id=str(rec["task_id"]), seed=int(rec["seed"]), status=status,
        ok=status == "ok" and bool(result),
        marks=float(result.get("marks", 0.0)), success=bool(result.get("success", False)),
        diagnosis=float(diag.get("score", 0.0)), mitigated=bool(result.get("mitigated", False)),
        evidence=float(result.get("evidence_coverage", 0.0)),
        terms={k: float(v) for k, v in (result.get("marks_terms") or {}).items()},
        invalid=int(result.get("invalid_actions", 0)), wrong_fixes=int(result.get("wrong_fixes", 0)),
        destructive=int(result.get("destructive_actions", 0)), distractor=int(result.get("distractor_actions", 0)),
        premature=bool(result.get("premature_resolution", False)), truncated=bool(result.get("truncated", False)),
        resolved=bool(result.get("resolved", False)), steps=int(result.get("steps", len(rec.get("trajectory") or []))),
        ttd_s=result.get("ttd_s"), ttm_s=result.get("ttm_s"),
        cost_usd=float(usage["cost_usd"]) if "cost_usd" in usage else None,
        tokens=int(usage.get("prompt_tokens", 0)) + int(usage.get("completion_tokens", 0)),
        # usage counts every failed request, the last one of a failed episode included; a record without
        # usage (a provider failure outside an LLM agent's own accounting) counts that one failure
        provider_errors=int(usage["provider_errors"]) if "provider_errors" in usage
        else (1 if status == PROVIDER_ERROR else 0),
        difficulty=difficulty, layers=layers, upper_bound=_upper_bound(agent, rec, manifest), split=split, record=rec,
    )


def load_run(run_dir: str | Path) -> Run:
    """Load a run directory. Episodes are sorted by (agent, task, seed); a duplicate is an error."""
    manifest, records = read_records(run_dir)
    meta = _task_meta(sorted({str(r["task_id"]) for _, r in records}), manifest)
    eps = sorted(((to_ep(r, manifest, meta[str(r["task_id"])]), p) for p, r in records),
                 key=lambda ep_path: (ep_path[0].agent, ep_path[0].task_id, ep_path[0].seed, str(ep_path[1])))
    for (a, a_path), (b, b_path) in itertools.pairwise(eps):
        if (a.agent, a.task_id, a.seed) == (b.agent, b.task_id, b.seed):
            root = Path(run_dir)
            names = [str(q.relative_to(root)) if q.is_relative_to(root) else str(q) for q in (a_path, b_path)]
            raise RunDirError(f"{run_dir}: two records for agent {a.agent!r}, task {a.task_id!r}, seed {a.seed}: "
                              f"{names[0]} and {names[1]}; move one out, or record one under another label")
    return Run(Path(run_dir), manifest, [e for e, _ in eps])


def select(run: Run, agents: Sequence[str] = (), tasks: Sequence[str] = (), split: str | None = None,
           common: bool = False) -> Run:
    """The episodes of the given agents, tasks and split; with ``common``, only the (task, seed) cells that
    every agent that is not an upper bound has, so agents are ranked on the same episodes."""
    eps = [e for e in run.episodes if (not agents or e.agent in agents) and (not tasks or e.task_id in tasks)
           and (split is None or e.split == split)]
    if common:
        cells = [{(e.task_id, e.seed) for e in eps if e.agent == a}
                 for a in sorted({e.agent for e in eps if not e.upper_bound})]
        shared = set.intersection(*cells) if cells else set()
        eps = [e for e in eps if (e.task_id, e.seed) in shared]
    for name, asked, have in (("agent", agents, {e.agent for e in run.episodes}),
                              ("task", tasks, {e.task_id for e in run.episodes})):
        missing = sorted(set(asked) - have)
        if missing:
            raise RunDirError(f"{run.path}: no records for {name}(s) {', '.join(missing)}")
    if not eps:
        raise RunDirError(f"{run.path}: no episodes left after the selection")
    return Run(run.path, run.manifest, eps)
