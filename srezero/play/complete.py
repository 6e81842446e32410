"""Tab completion for the play shell: tool names, argument names and values, kubectl words.

Pure functions of the line typed so far, so they are testable without a terminal. Names come from
what a person could learn for a few simulated seconds anyway (services, replicas, nodes from the
topology) and from static catalogues (metric names, the declared config keys and prefixes such as
``env.``, never live values); nothing from the fault plane.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from srezero.play.session import SHELL_COMMANDS
from srezero.tools.registry import load_tools

if TYPE_CHECKING:
    from srezero.sim.world import World

#: Characters that end a word for readline; everything else (``/``, ``-``, ``.``) stays in a word.
DELIMS = " \t\n()=,'\"[]{}"
KUBECTL_VERBS = ("get", "describe", "logs", "top", "rollout", "scale", "set", "delete", "cordon", "uncordon",
                 "drain", "events")
KUBECTL_FLAGS = {"get": ("-l", "--field-selector"), "logs": ("--previous", "--tail", "--since", "-l"),
                 "top": ("--sort-by=cpu", "--sort-by=memory"), "scale": ("--replicas",),
                 "drain": ("--ignore-daemonsets", "--delete-emptydir-data", "--force")}
_CALL = re.compile(r"^\s*([A-Za-z_]\w*)\((.*)$", re.S)
_POSITIONAL = re.compile(r"""\s*(['"])([\w.-]*)\1\s*,""")  # a quoted positional argument and its comma


@dataclass
class Names:
    """The names completion offers, read from the world once per prompt."""

    services: list[str] = field(default_factory=list)
    replicas: list[str] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, world: World | None) -> Names:
        if world is None:
            return cls()
        reps = [r.name for svc in world.services.values() for r in svc.replicas if r.state != "Terminated"]
        return cls(list(world.services), reps, [n.name for n in world.topo.nodes])


def _metric_names(target: str | None = None, names: Names | None = None) -> list[str]:
    """The metrics ``target`` has (a service's own, a replica's or a node's), or every metric name."""
    from srezero.sim import metrics as M

    if target and names is not None:
        if target in names.services:
            return list(M.metric_names(target))
        if target in names.replicas:
            return list(M.metric_names("replica"))
        if target in names.nodes:
            return list(M.metric_names("node"))
    every = list(M.SERVICE_BASE) + [m for extra in M.SERVICE_EXTRA.values() for m in extra]
    every += list(M.REPLICA_METRICS) + list(M.NODE_METRICS)
    return list(dict.fromkeys(every))


def _config_keys(service: str | None) -> list[str]:
    from srezero.sim import config as cfg

    if service and service in cfg.BY_SERVICE:
        return list(cfg.BY_SERVICE[service]) + list(cfg.DYNAMIC_PREFIXES.get(service, {}))
    prefixes = [p for d in cfg.DYNAMIC_PREFIXES.values() for p in d]
    return list(dict.fromkeys([k.key for k in cfg.KEYS] + prefixes))


def _values(tool: str, arg: str, prop: dict[str, Any], names: Names, args_so_far: str) -> list[str]:
    if "enum" in prop:
        return [str(v) for v in prop["enum"] if v != ""]
    if prop.get("type") == "boolean":
        return ["True", "False"]
    if arg == "service":
        return names.services + (names.replicas if tool in ("search_logs", "get_traces") else [])
    if arg == "target":
        return names.services + names.replicas + (names.nodes if tool == "query_metrics" else [])
    if arg == "entity":
        return names.services + names.replicas + names.nodes
    if arg == "node":
        return names.nodes
    if arg == "metric":
        return _metric_names(_given(tool, "target", args_so_far), names)
    if arg == "key":
        return _config_keys(_given(tool, "service", args_so_far))
    return []


def _given(tool: str, arg: str, args_so_far: str) -> str | None:
    """The quoted value already typed for ``arg``, by name (``service="worker"``) or in its place among
    the leading positional arguments (``set_config("worker", key=``)."""
    m = re.search(rf"(?<!\w){arg}\s*=\s*['\"]([\w.-]+)['\"]", args_so_far)
    if m:
        return m.group(1)
    positional, at = [], 0
    while (p := _POSITIONAL.match(args_so_far, at)) is not None:
        positional.append(p.group(2))
        at = p.end()
    order = load_tools()[tool].arg_names
    pos = order.index(arg) if arg in order else len(positional)
    return positional[pos] or None if pos < len(positional) else None


def _takes_text(prop: dict[str, Any]) -> bool:
    """Whether an argument's values are strings (so they need quotes in a call)."""
    if "anyOf" in prop:
        return any(_takes_text(p) for p in prop["anyOf"])
    if "enum" in prop:
        return all(isinstance(v, str) for v in prop["enum"])
    return prop.get("type", "string") == "string"


def candidates(before: str, text: str, names: Names) -> list[str]:
    """Completions of ``text``, the word being typed, given everything typed ``before`` it."""
    tools = load_tools()
    stripped = before.strip()
    if not stripped:
        words = [f"{t}(" for t in tools] + list(SHELL_COMMANDS) + ["kubectl "]
        return sorted(w for w in words if w.startswith(text))
    if stripped == "help":  # everything help has a page for: tools, kubectl and the shell commands
        return sorted(w for w in [*tools, "kubectl", "hint", "page", "quit"] if w.startswith(text))
    first = stripped.split()[0]
    if first in ("kubectl", "k"):
        return [w for w in kubectl_candidates(stripped.split()[1:], text, names) if w.startswith(text)]
    m = _CALL.match(before)
    if not m or m.group(1) not in tools:
        return []
    spec = tools[m.group(1)]
    inside = m.group(2)
    arg = re.search(r"(\w+)\s*=\s*(['\"]?)$", inside)
    props = spec.schema.get("properties", {})
    if arg and arg.group(1) in props:
        prop = props[arg.group(1)]
        vals = [v for v in _values(spec.name, arg.group(1), prop, names, inside) if v.startswith(text)]
        if arg.group(2) or not _takes_text(prop):
            return vals  # an open quote (readline closes it itself), or a value that takes no quotes
        return [f'"{v}"' for v in vals]  # no quote typed yet: a bare name would be an invalid action
    open_quote = re.fullmatch(r"""((?:\s*(['"])[\w.-]*\2\s*,)*)\s*['"]""", inside)
    if open_quote:  # a positional value begun with a quote: the argument in that place
        n = len(list(_POSITIONAL.finditer(open_quote.group(1))))
        if n < len(spec.arg_names) and spec.arg_names[n] in props:
            name = spec.arg_names[n]
            return [v for v in _values(spec.name, name, props[name], names, inside) if v.startswith(text)]
        return []
    if re.search(r"(^|,)\s*$", inside):  # start of an argument: offer the names not given yet
        given = set(re.findall(r"(\w+)\s*=", inside))
        return [f"{p}=" for p in spec.arg_names if p not in given and p.startswith(text)]
    return []


def kubectl_candidates(words: list[str], text: str, names: Names) -> list[str]:
    deploys = [f"deploy/{s}" for s in names.services]
    pods = names.replicas
    if not words:
        return list(KUBECTL_VERBS)
    verb, rest = words[0], words[1:]
    if text.startswith("-"):
        return list(KUBECTL_FLAGS.get(verb, ()))
    if verb == "get":
        return ["pods", "events", "nodes", "deploy"] if not rest else (pods if rest[0] in ("pod", "pods") else [])
    if verb in ("describe", "top"):
        if not rest:
            return ["pod", "node"] + (["deploy"] if verb == "describe" else [])
        return pods if rest[0] in ("pod", "pods", "po") else names.nodes if rest[0] in ("node", "nodes") else \
            names.services
    if verb == "logs":
        return pods + names.services + deploys
    if verb == "delete":
        return ["pod"] if not rest else pods
    if verb == "rollout":
        return ["restart", "undo", "status", "history"] if not rest else deploys
    if verb == "scale":
        return deploys if not rest else ["--replicas"]
    if verb == "set":
        return ["env"] if not rest else deploys if len(rest) == 1 else []
    if verb in ("cordon", "uncordon", "drain"):
        return names.nodes
    return []
