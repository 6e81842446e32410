"""``srezero generate``: enumerate generated task variants (fault x target x level x noise x distractors x size)."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import click
import orjson


@click.command("generate")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), help="write each variant as a task file here")
@click.option("--count", "n", type=click.IntRange(min=1), help="only N variants, evenly spread over the enumeration")
@click.option("--sample", "sample_seed", type=click.IntRange(min=0),
              help="with --count: a random sample drawn with this seed (0 or more) instead of a spread")
@click.option("--primitive", "primitives", multiple=True, help="only variants of this fault primitive (repeatable)")
@click.option("--json", "as_json", is_flag=True, help="one JSON object per variant (spoilers: names the fault)")
@click.option("--check", "check_seeds", type=click.IntRange(min=0), default=0, show_default=True,
              help="check every chosen variant on seeds 0..N-1: the page fires on its own and the oracle scores "
                   ">= 95 with no invalid action and every evidence signal surfaced")
def generate_cmd(out_dir: str | None, n: int | None, sample_seed: int | None, primitives: tuple[str, ...],
                 as_json: bool, check_seeds: int) -> None:
    """Enumerate generated variants; ids start with gen: and work wherever a task id does.

    Without options, print how many variants each primitive contributes. Files written with --out
    get the id gen-<hash> (a colon is not portable in file names) and keep split = "generated";
    they are independent copies: the id seeds the world, so a copy's surface differs from its
    gen: original. Point SREZERO_TASKS_PATH or --tasks-dir at the directory to run them.
    """
    from srezero.faults.base import REGISTRY, load_all
    from srezero.task import generate as gen
    from srezero.task.validate import viable

    if sample_seed is not None and n is None:
        raise click.UsageError("--sample draws a random sample of --count variants: give --count N too")
    if out_dir:
        from srezero.sweep.records import writable_problem

        if problem := writable_problem(out_dir, directory=True):
            raise click.BadParameter(f"cannot write task files to {out_dir}: {problem}", param_hint="--out")
    load_all()
    unknown = [p for p in primitives if p not in REGISTRY]
    if unknown:
        from srezero.errors import did_you_mean

        lines = [f"unknown fault primitive {p!r}{did_you_mean(p, REGISTRY)}" for p in unknown]
        raise click.ClickException("\n".join(lines) + " (`srezero faults` lists them)")
    chosen = list(gen.variants(tuple(primitives) if primitives else None))
    if n is not None and n < len(chosen):
        if sample_seed is not None:
            import numpy as np

            idx = np.sort(np.random.default_rng(sample_seed).choice(len(chosen), size=n, replace=False))
            chosen = [chosen[int(i)] for i in idx]
        else:
            chosen = [chosen[i * len(chosen) // n] for i in range(n)]
    bad = 0
    rows = []
    for v in chosen:
        row = v.fields()
        if check_seeds:
            spec = v.spec()
            verdicts = [viable(spec, s) for s in range(check_seeds)]
            row["viable"] = all(ok for ok, _ in verdicts)
            row["problems"] = [f"seed {s}: {why}" for s, (ok, why) in enumerate(verdicts) if not ok]
            bad += not row["viable"]
        rows.append(row)
    if out_dir:
        _write(Path(out_dir), chosen)
    if as_json:
        for row in rows:
            sys.stdout.write(orjson.dumps(row).decode() + "\n")
    elif not out_dir or check_seeds:
        per = Counter(v.primitive for v in chosen)
        click.echo(f"{'PRIMITIVE':28} VARIANTS")
        for name in sorted(per):
            click.echo(f"{name:28} {per[name]}")
        click.echo(f"{len(chosen)} variant(s)")
        for row in rows:
            for problem in row.get("problems", []):
                click.echo(f"not viable: {row['id']} ({row['primitive']} on {row['target']}) {problem}", err=True)
    if out_dir:
        click.echo(f"wrote {len(chosen)} task file(s) to {out_dir}", err=as_json)
    if check_seeds:
        seeds = "seed 0" if check_seeds == 1 else f"seeds 0-{check_seeds - 1}"
        click.echo(f"{len(rows) - bad}/{len(rows)} viable on {seeds}", err=as_json)
    if bad:
        click.echo(f"{bad} of {len(rows)} variant(s) not viable", err=True)
        sys.exit(1)


def _write(out: Path, chosen: list) -> None:
    """Write variants as ordinary task files (id gen-<code>), atomically per file."""
    import hashlib
    import os

    from srezero.task.export import to_toml
    from srezero.task.loader import parse_text

    out.mkdir(parents=True, exist_ok=True)
    for v in chosen:
        spec = v.spec()
        file_id = "gen-" + hashlib.blake2b(spec.id.encode(), digest_size=6).hexdigest()
        text = to_toml(spec.model_copy(update={"id": file_id}), header=f"copy of the generated variant {spec.id}")
        parse_text(text, file_id)  # never write a file the loader would reject
        path = out / f"{file_id}.toml"
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
