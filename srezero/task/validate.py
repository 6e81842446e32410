"""Validate task files: the schema (via the loader), then a smoke build of the world.

The schema catches most mistakes with the file, field and problem named. Some problems only show
when a world is built (a ``bad_config`` key the target service does not have); the smoke build
finds them and attributes them to the fault that raised them, so every message still names a field.
:func:`check_seed` and :func:`viable` go further and play the task: the page must fire on its own
(symptoms emerge from the fault) and the oracle must solve it without an invalid action, surfacing
every evidence signal, with at least :data:`MIN_MARKS` (:data:`MIN_MARKS_GENERATED` for generated
variants).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from srezero.faults.base import ParamError
from srezero.task.loader import TaskFileError, bundled_dir, load_file
from srezero.task.spec import NoiseSpec, TaskSpec


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


def check_builds(spec: TaskSpec, where: str, seed: int) -> None:
    """Raise ValueError naming the field and the problem when ``spec``'s world cannot be built under
    ``seed`` (what only a built world can check, such as a config key its service does not have)."""
    problems = smoke(spec, where, (seed,))
    if problems:
        raise ValueError(str(problems[0]))


def _culprit(spec: TaskSpec, seed: int) -> str:
    from srezero.sim.world import World

    for i, fault in enumerate(spec.faults):
        try:
            World.build(spec.model_copy(update={"faults": (fault,)}), seed)
        except (ValueError, KeyError, LookupError, TypeError):
            return f"faults[{i}]"
    return "(file)"


def validate_file(path: str | Path) -> tuple[TaskSpec | None, list[Problem]]:
    """Schema, difficulty and a smoke build; a file in the bundled tasks/ directory must also keep the
    curated rules (:func:`srezero.task.suite.curated_problems`)."""
    from srezero.task.suite import curated_problems, difficulty_problem

    try:
        spec = load_file(path)
    except TaskFileError as exc:
        return None, [Problem(exc.path, f, m) for f, m in exc.problems]
    problems = []
    why = difficulty_problem(spec) if spec.split != "generated" else None  # variants derive theirs otherwise
    if why:
        problems.append(Problem(str(path), "difficulty", why))
    if Path(path).resolve().parent == bundled_dir().resolve():
        problems += [Problem(str(path), f, m) for f, m in curated_problems(spec)]
    return spec, problems + smoke(spec, str(path))


def task_files(paths: list[str | Path]) -> list[Path]:
    """Expand directories to their ``*.toml`` files (drafts named ``_*.toml`` included: they are checked)."""
    files: list[Path] = []
    for p in map(Path, paths):
        files += sorted(p.glob("*.toml")) if p.is_dir() else [p]
    return files


def lookup_ids(extra: tuple[str, ...] = ()) -> tuple[dict[str, list[Path]], list[Problem]]:
    """Every task id the lookup sees (bundled, ``SREZERO_TASKS_PATH``, ``extra``) with its files, and the
    problems finding them (a missing directory or package)."""
    from srezero.task.loader import task_dirs

    try:
        dirs = task_dirs(extra)
    except TaskFileError as exc:
        return {}, [Problem(exc.path, f, m) for f, m in exc.problems]
    ids: dict[str, list[Path]] = {}
    for d in dict.fromkeys(d.resolve() for d in dirs if d.is_dir()):
        for p in sorted(d.glob("*.toml")):
            if not p.stem.startswith("_"):
                ids.setdefault(p.stem, []).append(p.resolve())
    return ids, []


def validate_paths(paths: list[str | Path], extra: tuple[str, ...] = ()
                   ) -> tuple[list[tuple[Path, TaskSpec | None, list[Problem]]], list[Problem]]:
    """Validate files and directories. Returns per-file results and the problems of no one file.

    A file's problems include the ones that need the other files: a duplicate id among the files, and
    an id already taken in the task lookup (bundled tasks, ``SREZERO_TASKS_PATH`` and the ``extra``
    directories), which would make every lookup fail once both are on the path. So a file is valid
    exactly when its problem list is empty. The second list holds what concerns no single file (a
    directory on the lookup that does not exist)."""
    results = []
    seen: dict[str, Path] = {}
    taken, cross = lookup_ids(extra)
    for f in task_files(paths):
        spec, problems = validate_file(f)
        results.append((f, spec, problems))
        if spec is None:
            continue
        if not f.stem.startswith("_"):
            if spec.id in seen:
                problems.append(Problem(str(f), "id", f"duplicate task id {spec.id!r}, also in {seen[spec.id]}"))
            seen.setdefault(spec.id, f)
        other = [p for p in taken.get(spec.id, []) if p != f.resolve()]
        if other:
            problems.append(Problem(str(f), "id", f"task id {spec.id!r} is already taken by {other[0]}; the "
                                    "bundled tasks, SREZERO_TASKS_PATH and --tasks-dir share one lookup, where a "
                                    "duplicate id makes every lookup fail: choose another id"))
    return results, cross


#: The oracle's bar. Curated tasks: docs/writing-tasks.md ("Before you commit"); every bundled task
#: scores 100 on seeds 0-4. Generated variants are not hand-tuned: "viable" asks for 95.
MIN_MARKS = 98.0
MIN_MARKS_GENERATED = 95.0


def min_marks_for(spec: TaskSpec) -> float:
    return MIN_MARKS_GENERATED if spec.split == "generated" else MIN_MARKS


@dataclass
class SeedCheck:
    """One seed of :func:`check_seed`: when the page fired, how the oracle (and the random agent) did."""

    seed: int
    page_s: float | None  # seconds from the first fault's onset (a control task: the end of history) to the
    #                       page firing on its own; None when it never did within budget.max_onset_s
    max_onset_s: float
    alert: str
    min_marks: float
    oracle_marks: float
    evidence: float
    invalid: int
    missed: list[str] = field(default_factory=list)  # evidence signals the oracle did not surface
    reasons: list[str] = field(default_factory=list)  # why the oracle's mitigation failed, if it did
    random_marks: float | None = None
    random_success: bool = False
    #: Seconds to the page with ambient noise "quiet" and no distractors; None when it then never fires.
    #: Not checked for a control task (``no_fault``), whose page is noise by design.
    quiet_page_s: float | None = None
    no_fault: bool = False
    #: Faults that had not begun when the page fired ("faults[1] (memory_leak)"): the ground truth,
    #: evidence and fix are taken at the page, so theirs would describe a fault that does not exist yet.
    late: list[str] = field(default_factory=list)
    #: The first fault's ``at``: seconds from the end of the healthy history, as ``max_onset_s`` counts.
    onset_s: float = 0.0

    @property
    def problems(self) -> list[str]:
        out = []
        if self.page_s is None:
            began = f", the first fault {self.onset_s:g}s after it" if self.onset_s else ""
            out.append(f"{self.alert} never fired within {self.max_onset_s:.0f}s of the history's end "
                       f"(budget.max_onset_s{began}): no symptoms in time")
        elif self.quiet_page_s is None and not self.no_fault:
            out.append(f"{self.alert} fires only with noise or distractors on: with noise 'quiet' and no "
                       f"distractors it never fired within {self.max_onset_s:.0f}s (the fault must page by itself)")
        if self.late:
            when = "" if self.page_s is None else f" ({self.page_s:.0f}s after the first onset)"
            out.append(f"{', '.join(self.late)} had not begun when the page fired{when}: the ground truth is "
                       "taken at the page, before such a fault exists; give it an earlier at (docs/extending.md, "
                       "\"When the ground truth is taken\")")
        if self.oracle_marks < self.min_marks:
            why = "; ".join(self.reasons[:2])
            out.append(f"oracle scored {self.oracle_marks} (needs {self.min_marks:g})" + (f": {why}" if why else ""))
        if self.invalid:
            out.append(f"the oracle made {self.invalid} invalid action(s) (a signal's tool or arguments are wrong)")
        if self.evidence < 1.0:
            out.append(f"the oracle's reads surfaced evidence {self.evidence:.2f} < 1.0; missed "
                       + ", ".join(self.missed[:3]))
        if self.random_success:
            out.append(f"the random agent solved it (marks {self.random_marks})")
        return out


def check_seed(spec: TaskSpec, seed: int, min_marks: float | None = None, random_agent: bool = False) -> SeedCheck:
    """Play one seed: does the page fire on its own (also with ambient noise "quiet" and no
    distractors, so that noise alone never makes a task look viable), and does the oracle solve the task cleanly (marks
    at least ``min_marks``, default :func:`min_marks_for`; no invalid action; every evidence signal
    surfaced)? With ``random_agent``, also play the random agent (it must not succeed)."""
    import srezero
    from srezero.agents import registry
    from srezero.agents.runner import run_episode
    from srezero.sim.world import World

    onset = min((f.at for f in spec.faults), default=0.0)  # the quiet copy below keeps the faults

    def seconds_to_page(s: TaskSpec) -> tuple[float | None, list[str]]:
        """The episode's own paging (World.page): the seconds to the page, None when the onset budget had
        to force it, and the faults that had not begun by then."""
        w = World.build(s, seed)
        start = w.env.now
        w.page()
        late = [f"faults[{i}] ({f.meta.name})" for i, f in enumerate(w.faults) if f.injected_at is None]
        return (None if w.page_forced else w.t_page - start - onset), late

    page_s, late = seconds_to_page(spec)
    quiet = spec.model_copy(update={"noise": NoiseSpec(profile="quiet"), "distractors": {}})
    quiet_page_s = None if spec.ground_truth.no_fault or page_s is None else seconds_to_page(quiet)[0]
    r = run_episode(srezero.make(spec, seed), registry.create("oracle"), seed)["result"]
    out = SeedCheck(seed, page_s, spec.budget.max_onset_s, spec.alert.name,
                    min_marks_for(spec) if min_marks is None else min_marks, r["marks"], r["evidence"]["coverage"],
                    r["invalid_actions"], list(r["evidence"]["missed"]), list(r["mitigation"]["reasons"]),
                    quiet_page_s=quiet_page_s, no_fault=spec.ground_truth.no_fault, late=late, onset_s=onset)
    if random_agent:
        rr = run_episode(srezero.make(spec, seed), registry.create("random"), seed)["result"]
        out.random_marks, out.random_success = rr["marks"], bool(rr["success"])
    return out


def viable(spec: TaskSpec, seed: int, min_marks: float | None = None) -> tuple[bool, str]:
    """Does the paging alert fire on its own, and does the oracle solve it cleanly (see :func:`check_seed`)?"""
    problems = check_seed(spec, seed, min_marks).problems
    return not problems, "; ".join(problems) or "ok"
