"""Validate task files: the schema (via the loader), then a smoke build of the world.

The schema catches most mistakes with the file, field and problem named. Some problems only show
when a world is built (a ``bad_config`` key the target service does not have); the smoke build
finds them and attributes them to the fault that raised them, so every message still names a field.
:func:`viable` goes further and plays the task: the page must fire on its own (symptoms emerge from
the fault) and the oracle must solve it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from srezero.faults.base import ParamError
from srezero.task.loader import TaskFileError, load_file
from srezero.task.spec import TaskSpec


@dataclass(frozen=True)
class Problem:
    path: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.field}: {self.message}"


def smoke(spec: TaskSpec, path: str, seeds: tuple[int, ...] = (0, 1)) -> list[Problem]:
    """Build the world for a few seeds; report build failures against the fault that caused them."""
    from srezero.sim.world import World

    for seed in seeds:
        try:
            World.build(spec, seed)
        except (ValueError, KeyError, LookupError, TypeError) as exc:
            field = _culprit(spec, seed)
            if isinstance(exc, ParamError) and field.startswith("faults["):
                field += f".params.{exc.param}"
            return [Problem(path, field, f"the world cannot be built (seed {seed}): {exc}")]
    return []


def _culprit(spec: TaskSpec, seed: int) -> str:
    from srezero.sim.world import World

    for i, fault in enumerate(spec.faults):
        try:
            World.build(spec.model_copy(update={"faults": (fault,)}), seed)
        except (ValueError, KeyError, LookupError, TypeError):
            return f"faults[{i}]"
    return "(file)"


def validate_file(path: str | Path) -> tuple[TaskSpec | None, list[Problem]]:
    try:
        spec = load_file(path)
    except TaskFileError as exc:
        return None, [Problem(exc.path, f, m) for f, m in exc.problems]
    return spec, smoke(spec, str(path))


def task_files(paths: list[str | Path]) -> list[Path]:
    """Expand directories to their ``*.toml`` files (drafts named ``_*.toml`` included: they are checked)."""
    files: list[Path] = []
    for p in map(Path, paths):
        files += sorted(p.glob("*.toml")) if p.is_dir() else [p]
    return files


def validate_paths(paths: list[str | Path]) -> tuple[list[tuple[Path, TaskSpec | None, list[Problem]]], list[Problem]]:
    """Validate files and directories. Returns per-file results and cross-file problems (duplicate ids)."""
    results = []
    seen: dict[str, Path] = {}
    cross: list[Problem] = []
    for f in task_files(paths):
        spec, problems = validate_file(f)
        results.append((f, spec, problems))
        if spec is not None and not f.stem.startswith("_"):
            if spec.id in seen:
                cross.append(Problem(str(f), "id", f"duplicate task id {spec.id!r}, also in {seen[spec.id]}"))
            seen.setdefault(spec.id, f)
    return results, cross


def viable(spec: TaskSpec, seed: int) -> tuple[bool, str]:
    """Does the paging alert fire on its own, and does the oracle solve it with >= 95 marks?"""
    import srezero
    from srezero.agents import registry
    from srezero.agents.runner import run_episode
    from srezero.sim.clock import TICK_S
    from srezero.sim.world import World

    w = World.build(spec, seed)
    limit = w.env.now + spec.budget.max_onset_s
    while w.env.now < limit and not w.alerts.is_firing(spec.alert.name):
        w.advance(TICK_S)
    if not w.alerts.is_firing(spec.alert.name):
        return False, f"{spec.alert.name} never fired within {spec.budget.max_onset_s:.0f}s (no symptoms)"
    r = run_episode(srezero.make(spec, seed), registry.create("oracle"), seed)["result"]
    if r["marks"] < 95:
        return False, f"oracle scored {r['marks']}: {'; '.join(r['mitigation']['reasons'][:2])}"
    return True, "ok"
