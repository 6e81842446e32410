"""The play session's logic, free of any terminal: actions, help, hints and the saved record.

A :class:`PlaySession` wraps one :class:`~srezero.episode.Episode`. Every line a person types is
either a shell command (``help``, ``hint``, ``page``, ``quit``; these cost nothing and are not
actions) or an action handed to ``env.step`` unchanged, so a person is scored exactly like an agent:
the same parser (text calls and kubectl-style commands), the same costs, the same oracles.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from srezero.tools.registry import ToolSpec, load_tools

if TYPE_CHECKING:
    from srezero.episode import Episode, Observation

SHELL_COMMANDS = ("help", "hint", "page", "quit", "exit")
KIND_ORDER = ("read", "write", "submit")
KIND_TITLES = {"read": "Read tools (look around; cost a few simulated seconds)",
               "write": "Write tools (change the system; effects take simulated time)",
               "submit": "Submit tools (diagnose, then resolve to end the incident)"}


@dataclass
class Reply:
    """What the shell should print for one line, and how."""

    text: str
    kind: str = "info"  # info | ok | error | hint | help
    header: str = ""
    done: bool = False


@dataclass
class PlaySession:
    """One person's episode: the environment, the hints they took, and the record at the end."""

    env: Episode
    seed: int
    hints_enabled: bool = False
    player: str = ""
    hints_used: list[dict[str, Any]] = field(default_factory=list)
    obs: Observation | None = None
    info: dict[str, Any] = field(default_factory=dict)
    quit_requested: bool = False

    def start(self) -> str:
        """Reset the episode and return the page text."""
        self.obs, _ = self.env.reset(seed=self.seed)
        return self.obs.text

    # ------------------------------------------------------------------ state for the prompt
    @property
    def done(self) -> bool:
        return bool(self.obs is not None and self.obs.done)

    @property
    def steps_left(self) -> int:
        return self.obs.steps_left if self.obs is not None else 0

    @property
    def time_left_s(self) -> float:
        return self.obs.time_left_s if self.obs is not None else 0.0

    @property
    def step_budget(self) -> int:
        return self.env.spec.budget.steps

    @property
    def time_budget_s(self) -> float:
        return float(self.env.spec.budget.time_s)

    # ------------------------------------------------------------------ one line
    def handle(self, line: str) -> Reply:
        """Interpret one typed line. Never raises for bad input: errors come back as replies."""
        line = line.strip()
        if not line:
            return Reply("")
        word, _, rest = line.partition(" ")
        if word in ("quit", "exit") and not rest:
            return self._quit()
        self.quit_requested = False
        if word == "help" or line == "?":
            return Reply(self.help(rest.strip()), "help")
        if word == "hint" and not rest:
            return self.hint()
        if word == "page" and not rest:
            return Reply(f"PAGE: {self.env.briefing.page}", "info")
        return self.act(line)

    def act(self, action: str) -> Reply:
        if self.done:
            return Reply("the episode has ended", "error", done=True)
        self.obs, _reward, terminated, truncated, self.info = self.env.step(action)
        step = self.env.trajectory[-1]
        header = f"step {step['step']} · {_clock(step['sim_time_s'])} since the page"
        if step["tool"] and step["ok"]:  # an invalid call's args were not kept: the error says what was wrong
            header += f" · {_call(step['tool'], step['args'])}"
        ended = terminated or truncated
        if ended and truncated and not terminated:
            header += " · budget exhausted"
        return Reply(self.obs.text, "ok" if self.obs.ok else "error", header, ended)

    def _quit(self) -> Reply:
        if self.done:
            return Reply("bye", done=True)
        if self.quit_requested:
            return Reply("leaving without a debrief; nothing was saved", "error", done=True)
        self.quit_requested = True
        return Reply("the incident is still open. To finish, submit_diagnosis(...) then resolve(); "
                     "type quit again to leave without a debrief", "error")

    # ------------------------------------------------------------------ hints
    def hint(self) -> Reply:
        if not self.hints_enabled:
            return Reply("hints are off; start the session with --hints to use them", "error")
        hints = self.env.spec.hints
        n = len(self.hints_used)
        if not hints:
            return Reply("this task has no hints", "hint")
        if n >= len(hints):
            return Reply(f"no more hints (all {len(hints)} used)", "hint")
        sim = self.env.trajectory[-1]["sim_time_s"] if self.env.trajectory else 0.0
        self.hints_used.append({"hint": n + 1, "step": len(self.env.trajectory), "sim_time_s": sim, "text": hints[n]})
        return Reply(f"hint {n + 1}/{len(hints)}: {hints[n]}", "hint")

    # ------------------------------------------------------------------ help
    def help(self, topic: str = "") -> str:
        tools = load_tools()
        if not topic:
            return general_help(tools, self.hints_enabled)
        if topic == "kubectl":
            from srezero.tools.kubectl import SUPPORTED

            return ("kubectl-style commands map onto the same tools (same cost, same scoring):\n  kubectl "
                    + "\n  kubectl ".join(SUPPORTED)
                    + "\nDeployments: service names or lb, web, cache, db, mq, worker. See docs/play.md.")
        spec = tools.get(topic.removesuffix("()"))
        if spec is None:
            return f"no help for {topic!r}; type help for the list of tools"
        return tool_help(spec)

    # ------------------------------------------------------------------ the end
    def record(self) -> dict[str, Any]:
        """The episode record in the sweep/runner shape (docs/records.md), agent "human"."""
        result = self.info.get("result") or self.env.result
        agent = f"human:{self.player}" if self.player else "human"
        rec: dict[str, Any] = {"schema": 1, "agent": agent, "agent_name": "human", "task_id": self.env.spec.id,
                               "seed": self.seed, "episode_id": self.env.episode_id, "status": "ok" if result else "agent_error",
                               "error": None if result else "the session ended before the episode did",
                               "result": result, "trajectory": self.env.trajectory, "hints": self.hints_used}
        try:
            from srezero.sweep.records import task_hash

            rec["task_hash"] = task_hash(self.env.spec)
        except ImportError:  # pragma: no cover - records module ships with srezero
            pass
        return rec

    def save(self, path: str | Path) -> Path:
        from srezero.sweep.records import dumps, write_atomic

        p = Path(path)
        write_atomic(p, dumps(self.record()))
        return p


def general_help(tools: dict[str, ToolSpec], hints: bool) -> str:
    lines = ["Type a tool call such as get_status(service=\"worker\"), or a kubectl-style command such as",
             "kubectl logs worker --tail 20 (help kubectl lists them). Tab completes names; arrows recall history.", ""]
    for kind in KIND_ORDER:
        lines.append(KIND_TITLES[kind] + ":")
        for spec in tools.values():
            if spec.kind == kind:
                lines.append(f"  {spec.signature():48} {spec.cost_s:>3.0f}s  {spec.description}")
        lines.append("")
    lines.append("Shell commands (free, not actions): help [TOOL|kubectl], page (show the page again), "
                 + ("hint (the next hint, mildest first; recorded), " if hints else "")
                 + "quit.")
    return "\n".join(lines)


def tool_help(spec: ToolSpec) -> str:
    props = spec.schema.get("properties", {})
    required = set(spec.schema.get("required", []))
    lines = [spec.signature(), f"  {spec.description}", f"  kind: {spec.kind}, costs {spec.cost_s:g} simulated seconds"]
    if spec.params:
        lines.append("  arguments:")
    for p in spec.params:
        prop = props.get(p.name, {})
        typ = _type_of(prop)
        default = "" if p.name in required or p.default is inspect.Parameter.empty else f" (default {p.default!r})"
        lines.append(f"    {p.name}: {typ}{default}  {prop.get('description', '')}".rstrip())
    lines.append(f"  example: {example_call(spec)}")
    return "\n".join(lines)


def _type_of(prop: dict[str, Any]) -> str:
    if "enum" in prop:
        return " | ".join(repr(v) for v in prop["enum"])
    if "anyOf" in prop:
        return " | ".join(_type_of(p) for p in prop["anyOf"])
    typ = prop.get("type", "any")
    bounds = [f"{k.replace('imum', '')} {prop[k]}" for k in ("minimum", "maximum") if k in prop]
    if typ == "array":
        return "list"
    return typ + (f" ({', '.join(bounds)})" if bounds else "")


EXAMPLE_VALUES = {"service": "worker", "target": "web_server", "entity": "database", "node": "<node>",
                  "metric": "error_rate", "pattern": "timeout", "key": "<key>", "value": "<value>",
                  "check": "dmesg", "replicas": 4, "note": "mitigated", "summary": "..."}


def example_call(spec: ToolSpec) -> str:
    if spec.name == "submit_diagnosis":
        return ('submit_diagnosis(root_causes=[{"entity": "worker", "category": "misconfiguration", '
                '"detail": "key=value"}])')
    required = set(spec.schema.get("required", []))
    parts = [f"{p.name}={EXAMPLE_VALUES.get(p.name, '...')!r}" for p in spec.params if p.name in required]
    return f"{spec.name}({', '.join(parts)})"


def _call(tool: str, args: dict[str, Any]) -> str:
    text = ", ".join(f"{k}={v!r}" for k, v in args.items())
    return f"{tool}({text[:120]}{'...' if len(text) > 120 else ''})"


def _clock(seconds: float) -> str:
    s = round(seconds)
    return f"{s // 60}m{s % 60:02d}s"
