"""``srezero faults``: the fault-primitive catalogue from its declarative metadata.

``--markdown`` renders the reference page docs/faults.md (taxonomy, every primitive, the noise
primitives and profiles) from the registry alone, so the page cannot drift from the code; a test
compares the committed page with a fresh rendering.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
from typing import TYPE_CHECKING, Any

import click
import orjson

if TYPE_CHECKING:
    from srezero.faults.base import Fault

REGENERATE = "srezero faults --markdown > docs/faults.md"


@click.command("faults")
@click.option("--layer", help="only this layer")
@click.option("--json", "as_json", is_flag=True, help="machine-readable metadata")
@click.option("--markdown", "as_markdown", is_flag=True, help="the reference page (docs/faults.md)")
def faults_cmd(layer: str | None, as_json: bool, as_markdown: bool) -> None:
    """List fault primitives."""
    from srezero.faults.base import LAYERS, info, load_all

    if layer and layer not in LAYERS:
        raise click.BadParameter(f"unknown layer {layer!r}; layers: {', '.join(LAYERS)}", param_hint="--layer")
    classes = [cls for _, cls in sorted(load_all().items()) if not layer or cls.meta.layer == layer]
    if as_markdown:
        sys.stdout.write(render_markdown(classes))
        return
    rows = [info(cls) for cls in classes]
    if as_json:
        sys.stdout.write(orjson.dumps([dataclasses.asdict(r) for r in rows], option=orjson.OPT_INDENT_2,
                                      default=str).decode() + "\n")
        return
    click.echo(f"{'PRIMITIVE':28} {'LAYER':14} {'CATEGORY':20} TARGETS")
    for r in rows:
        click.echo(f"{r.name:28} {r.layer:14} {r.category:20} {', '.join(r.targets)}")
    click.echo(f"{len(rows)} primitive(s)")


def _cell(text: Any) -> str:
    """Markdown table cell: no pipes or newlines."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _code(text: Any) -> str:
    return f"`{text}`" if str(text) else ""


def _range(p: Any) -> str:
    if p.choices:
        per_world = "; unset, each world picks one" if p.per_world else ""
        return ", ".join(_code(c) for c in p.choices) + per_world
    if p.lo is not None or p.hi is not None:
        lo = "" if p.lo is None else f"{p.lo:g}"
        hi = "" if p.hi is None else f"{p.hi:g}"
        spread = f"; each world moves it by up to ±{p.spread:.0%}" if p.spread else ""
        return f"{lo} .. {hi}{spread}"
    return ""


def _doc(cls: type) -> str:
    """The class docstring's body (what the primitive models), if it has its own."""
    doc = cls.__dict__.get("__doc__") or ""
    return inspect.cleandoc(doc) if doc else ""


def _primitive(cls: type[Fault]) -> list[str]:
    m = cls.meta
    out = [f"### `{m.name}`", "", f"*{m.description}*", ""]
    doc = _doc(cls)
    if doc:
        out += [doc, ""]
    facts = [f"layer **{m.layer}**", f"category **{m.category}**", "targets " + ", ".join(_code(t) for t in m.targets)]
    if m.silent:
        facts.append("**silent** (a signal but no SLO breach of its own)")
    out += ["- " + "; ".join(facts)]
    if m.example:
        params = ", ".join(f"{k}={v!r}" for k, v in m.example_params)
        out.append(f"- example: target {_code(m.example)}" + (f", params {_code(params)}" if params else "")
                   + f", pages with {_code(m.alert)}")
    out.append(f"- a restart of the affected process {'cures it' if m.restart_heals else 'does not cure it'}")
    out.append("")
    if m.params:
        out += ["| parameter | type | default | range | meaning |", "|---|---|---|---|---|"]
        out += [f"| `{p.name}` | {p.type.__name__} | {_code(repr(p.default))} | {_cell(_range(p))} | "
                f"{_cell(p.description)} |" for p in m.params]
        out.append("")
    if m.signals:
        out += ["Evidence (what a read surfaces):", "", "| tool | on | arguments | pattern | shows |",
                "|---|---|---|---|---|"]
        for s in m.signals:
            args = ", ".join(f"{k}={v}" for k, v in s.args)
            out.append(f"| `{s.tool}` | {s.on} | {_cell(args)} | {_code(_cell(s.pattern))} | {_cell(s.description)} |")
        out.append("")
    if m.remedies:
        out += ["Cures (and their safe envelopes):", ""]
        out += [f"- `{r.tool}`: {_cell(r.description)}" for r in m.remedies]
        out.append("")
    if m.wrong_fix_effects:
        out += [f"Wrong fixes: {_cell(m.wrong_fix_effects)}", ""]
    return out


def _noise() -> list[str]:
    from srezero.faults.noise import NOISE, PROFILES

    names = sorted(NOISE)
    out = ["## Noise", "",
           "Noise is scheduled by the framework (a task picks a profile and may add items or distractors); it "
           "never breaches an SLO on its own and never changes the ground truth.", "",
           "| noise | what it does |", "|---|---|"]
    for name in names:
        doc = inspect.getdoc(NOISE[name]) or ""
        out.append(f"| `{name}` | {_cell(doc.split(chr(10) + chr(10))[0])} |")
    out += ["", "Profiles (items per episode):", "", "| noise | " + " | ".join(PROFILES) + " |",
            "|---|" + "---|" * len(PROFILES)]
    for name in names:
        out.append(f"| `{name}` | " + " | ".join(str(p.get(name, 0)) for p in PROFILES.values()) + " |")
    out.append("")
    return out


def render_markdown(classes: list[type[Fault]]) -> str:
    """The reference page for ``classes`` (every registered primitive for docs/faults.md)."""
    from srezero.faults.base import CATEGORIES, LAYERS

    out = ["# Fault primitives", "",
           f"<!-- generated by `{REGENERATE}`; do not edit by hand -->", "",
           "Each primitive is a *cause*: it changes the model (a config value, a kernel table, a disk, a host "
           "process) and the symptoms emerge from the simulation. A task names primitives with a target selector "
           "and parameters (docs/writing-tasks.md); `srezero faults [--layer L] [--json]` lists the same "
           "metadata. To add a primitive, see [Adding a primitive](#adding-a-primitive).", "",
           f"{len(classes)} primitives.", "", "## Taxonomy", "", "| category | meaning |", "|---|---|"]
    out += [f"| `{k}` | {_cell(v)} |" for k, v in CATEGORIES.items()]
    out += ["", "## Index", "", "| primitive | layer | category | targets | silent |", "|---|---|---|---|---|"]
    order = sorted(classes, key=lambda c: (LAYERS.index(c.meta.layer) if c.meta.layer in LAYERS else 99, c.meta.name))
    out += [f"| [`{c.meta.name}`](#{c.meta.name}) | {c.meta.layer} | {c.meta.category} | "
            f"{', '.join(c.meta.targets)} | {'yes' if c.meta.silent else ''} |" for c in order]
    out.append("")
    layer = None
    for cls in order:
        if cls.meta.layer != layer:
            layer = cls.meta.layer
            out += [f"## Layer: {layer}", ""]
        out += _primitive(cls)
    out += _noise()
    out += ["## Adding a primitive", "",
            "How to write one (templates, the model surface a fault may touch, the return formats of "
            "`oracle_reads` and `oracle_fix`, how signals and `detail_tokens` are matched, the checklist) is in "
            "[extending.md](extending.md#add-a-fault-primitive). This page is generated from the metadata; after "
            "adding or changing a primitive, regenerate it:", "",
            f"    {REGENERATE}", ""]
    return "\n".join(out)
