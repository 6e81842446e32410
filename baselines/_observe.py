"""Parsing what the read tools show, for the scripted baselines (runbook, greedy).

Everything here works on :class:`~srezero.episode.Observation` objects only: the text and the
structured ``data`` an agent is shown. Nothing reads the world, the task or the ground truth.
"""

from __future__ import annotations

import re
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

from srezero.episode import Briefing, Observation
from srezero.sim.changes import parse_edit

#: A scripted agent is a generator: it yields an action and is sent the observation it produced.
Script = Generator[dict[str, Any], Observation, Any]

SERVICES = ("load_balancer", "web_server", "cache", "database", "message_queue", "worker")
_LOG_LINE = re.compile(r"^\S+Z (DEBUG|INFO |WARN |ERROR) (\S+) (.*)$")


def call(tool: str, **args: Any) -> dict[str, Any]:
    return {"tool": tool, "args": args}


@dataclass
class Change:
    at: str
    service: str
    kind: str
    detail: str
    edits: dict[str, tuple[str, str]] = field(default_factory=dict)  # key -> (old, new), config changes only


@dataclass
class View:
    """What a scripted agent has learnt so far, filled in as observations arrive."""

    alerts: list[dict[str, Any]] = field(default_factory=list)
    replicas: dict[str, list[str]] = field(default_factory=dict)  # service -> replica names
    nodes: dict[str, list[str]] = field(default_factory=dict)  # node -> disk devices
    pods: list[dict[str, Any]] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)  # oldest first
    configs: dict[str, dict[str, Any]] = field(default_factory=dict)

    def read_alerts(self, obs: Observation) -> None:
        self.alerts = [a for a in (obs.data or []) if isinstance(a, dict) and a.get("firing")]

    def read_topology(self, obs: Observation) -> None:
        data = obs.data if isinstance(obs.data, dict) else {}
        self.replicas = {k: list(v) for k, v in (data.get("services") or {}).items()}
        self.nodes = {k: list(v.get("disks") or []) for k, v in (data.get("nodes") or {}).items()}

    def read_status(self, obs: Observation) -> None:
        self.pods = [p for p in (obs.data or []) if isinstance(p, dict)]

    def read_changes(self, obs: Observation) -> None:
        self.changes = []
        for c in obs.data or []:
            edits = {}
            if c.get("kind") == "config" and (parsed := parse_edit(c.get("detail", ""))):
                edits = {parsed[0]: parsed[1:]}
            self.changes.append(Change(c.get("at", ""), c.get("service", ""), c.get("kind", ""), c.get("detail", ""),
                                       edits))

    def read_config(self, service: str, obs: Observation) -> None:
        if obs.ok and isinstance(obs.data, dict):
            self.configs[service] = dict(obs.data)

    # ------------------------------------------------------------------ derived
    def service_of(self, name: str) -> str | None:
        if name in self.replicas:
            return name
        for svc, reps in self.replicas.items():
            if name in reps:
                return svc
        pod = next((p for p in self.pods if p.get("name") == name), None)
        return pod.get("service") if pod else None

    def node_of(self, replica: str) -> str | None:
        pod = next((p for p in self.pods if p.get("name") == replica), None)
        return pod.get("node") if pod else None

    def db_primary(self) -> dict[str, Any] | None:
        return next((p for p in self.pods if p.get("service") == "database" and p.get("role") == "primary"), None)

    def previous_value(self, service: str, key: str) -> str | None:
        """The value ``key`` had before its most recent change, if the history shows one."""
        for c in reversed(self.changes):
            if c.service == service and key in c.edits:
                return c.edits[key][0]
        return None

    def last_deploy(self, service: str) -> Change | None:
        return next((c for c in reversed(self.changes) if c.service == service and c.kind == "deploy"), None)


def log_lines(obs: Observation) -> list[tuple[str, str]]:
    """(replica, message) for each log line of a search_logs observation."""
    out = []
    for line in obs.data if isinstance(obs.data, list) else []:
        m = _LOG_LINE.match(str(line))
        if m:
            out.append((m.group(2), m.group(3)))
    return out


def series(obs: Observation) -> list[float]:
    data = obs.data if isinstance(obs.data, dict) else {}
    return [float(v) for v in data.get("values") or []]


def anomaly(values: list[float]) -> float:
    """How far the latest values sit above the window's early baseline (0 when flat or improving)."""
    if len(values) < 4:
        return 0.0
    head = sorted(values[: len(values) // 2])
    base = head[len(head) // 2]
    recent = sum(values[-3:]) / 3
    return max(0.0, recent - base) / (abs(base) + 0.01)


class ScriptedAgent:
    """Drives a :data:`Script` generator (``run``): each act sends the observation in, gets an action out.

    When the script ends the agent resolves. Subclasses set up their state in ``start``.
    """

    name = "scripted"

    def reset(self, task_info: Briefing, seed: int, tool_specs: list[dict[str, Any]]) -> None:
        self.tools = [t["name"] for t in tool_specs]
        self.view = View()
        self._script: Script | None = None
        self._done = False
        self.start(task_info)

    def start(self, task_info: Briefing) -> None:
        """Per-episode set-up from the briefing (the page, the budgets)."""

    def run(self) -> Script:
        raise NotImplementedError

    def act(self, observation: Observation) -> dict[str, Any]:
        if not self._done:
            try:
                if self._script is None:
                    self._script = self.run()
                    return next(self._script)
                return self._script.send(observation)
            except StopIteration:
                self._done = True
        return call("resolve", note=f"{self.name} finished")
