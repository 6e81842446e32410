"""The task table of docs/tasks.md, rendered from the task files (``srezero tasks --markdown``).

The page is generated, never edited by hand; a test checks that the committed page is current.
"""

from __future__ import annotations

from collections import Counter

from srezero.task.spec import TaskSpec

HEADER = """# Tasks

The curated incidents bundled with srezero. This page is generated from the task files with
`srezero tasks --markdown > docs/tasks.md`; do not edit it by hand (a test checks that it is current).
It contains spoilers: the layer, services and failure mode of every task. Agents never see it.

Columns: **layer** is the fault primitive's layer. **root** is where the cause lives, derived from
that layer first: `database`, `cache`, `message_queue` or `load_balancer` for a primitive of the
database, cache, queue or load_balancer layer, and `kernel`, `disk` or `hardware` for those layers,
whatever the target (so `cpu_throttling` on web_server shows `kernel`, and `db_pool_exhaustion` on
web_server shows `database`); for the application and failure_mode layers it is the service the
target names. **services** are the services the faults target. **failure mode** is the primitive
and its category (a `silent` fault breaches no SLO on its own).
See [writing-tasks.md](writing-tasks.md) for the file format and the difficulty rules, and
`srezero generate` for the generated variants.
"""


def failure_mode(spec: TaskSpec) -> str:
    if spec.ground_truth.no_fault:
        return "none: false alarm (control)"
    parts = [f"{f.primitive} ({f.meta.category}{', silent' if not f.visible else ''})" for f in spec.faults]
    return " + ".join(parts)


def markdown(specs: list[TaskSpec]) -> str:
    """The whole docs/tasks.md page for ``specs`` (curated tasks, in id order)."""
    specs = sorted(specs, key=lambda s: s.id)
    lines = [HEADER, "| id | split | difficulty | layer | root | services | failure mode | tags |",
             "|---|---|---|---|---|---|---|---|"]
    for s in specs:
        lines.append(f"| {s.id} | {s.split} | {s.difficulty} | {', '.join(s.layers)} | {', '.join(s.roots)} | "
                     f"{', '.join(s.services)} | {failure_mode(s)} | {', '.join(s.tags)} |")
    diff = Counter(s.difficulty for s in specs)
    split = Counter(s.split for s in specs)
    lines += ["", f"{len(specs)} tasks: " + ", ".join(f"{diff[d]} {d}" for d in ("easy", "medium", "hard"))
              + "; " + ", ".join(f"{split[k]} {k}" for k in sorted(split)) + ".", "",
              "## Why each task has its difficulty", ""]
    for s in specs:
        lines.append(f"- **{s.id}** ({s.difficulty}): {s.rationale or 'no rationale given'}")
    return "\n".join(lines) + "\n"
