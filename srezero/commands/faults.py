"""``srezero faults``: the fault-primitive catalogue from its declarative metadata."""

from __future__ import annotations

import dataclasses
import sys

import click
import orjson


@click.command("faults")
@click.option("--layer", help="only this layer")
@click.option("--json", "as_json", is_flag=True)
def faults_cmd(layer: str | None, as_json: bool) -> None:
    """List fault primitives."""
    from srezero.faults.base import info, load_all

    rows = [info(cls) for name, cls in sorted(load_all().items()) if not layer or cls.meta.layer == layer]
    if as_json:
        sys.stdout.write(orjson.dumps([dataclasses.asdict(r) for r in rows], option=orjson.OPT_INDENT_2,
                                      default=str).decode() + "\n")
        return
    click.echo(f"{'PRIMITIVE':28} {'LAYER':14} {'CATEGORY':20} TARGETS")
    for r in rows:
        click.echo(f"{r.name:28} {r.layer:14} {r.category:20} {', '.join(r.targets)}")
    click.echo(f"{len(rows)} primitive(s)")
