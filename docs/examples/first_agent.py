"""A first srezero agent: small, complete and runnable (the guide is docs/extending.md#add-an-agent).

Run it from this directory (srezero also finds it through PYTHONPATH)::

    srezero run --task inc-001 --agent first_agent:TriageAgent --seed 3
    srezero run --task inc-001 --agent first_agent:TriageAgent --agent-arg max_log_reads=1 --traceback
    srezero sweep --agents first_agent:TriageAgent,runbook --seeds 3 --out runs/mine

What it does, the way a newcomer on call might: read the alerts, the pods and the recent changes;
read the error logs of the alerting services; if one of them had a config change, revert it, wait
and blame that key; otherwise blame the first alerting service. Then submit and resolve. It uses
each action form an agent may return: a text call, a dict and an ``Action``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from srezero import Action, Briefing, Observation

#: one edit in a config change's detail: ``key: old -> new`` (get_changes shows several comma-separated)
CONFIG_EDIT = re.compile(r"([\w.]+): (.*?) -> ")


class TriageAgent:
    def __init__(self, max_log_reads: int = 2, wait_s: int = 120) -> None:
        # constructor arguments come from --agent-arg KEY=VALUE (read as JSON: max_log_reads=1 is an int)
        self.max_log_reads = max_log_reads
        self.wait_s = wait_s

    def settings(self) -> dict[str, Any]:
        """Stored in a sweep's manifest next to the agent's options."""
        return {"max_log_reads": self.max_log_reads, "wait_s": self.wait_s}

    def reset(self, briefing: Briefing, seed: int, tool_specs: list[dict[str, Any]]) -> None:
        """Once per episode, before the first act: forget the last episode."""
        self.page = briefing.page  # also briefing.episode_id, step_budget, time_budget_s
        self.tools = {t["name"] for t in tool_specs}
        self.services: list[str] = []  # from get_status
        self.alerting: list[str] = []  # entities of firing alerts, from get_alerts
        self.changes: list[dict[str, Any]] = []  # from get_changes, oldest first
        self.planned = False
        self.why = ""
        # the three action forms, all equivalent
        self.queue: list[tuple[Any, str]] = [
            ("get_alerts()", "what is firing"),
            ({"tool": "get_status", "args": {}}, "which pods are unhealthy"),
            (Action("get_changes", {}), "what changed recently"),
        ]

    def act(self, observation: Observation) -> Any:
        self._learn(observation)
        if not self.planned and (not self.queue or observation.steps_left <= 2):
            self.planned = True
            self.queue = self._plan()
        if observation.steps_left <= 2:
            self.queue = self.queue[-2:]  # nearly out of steps: the diagnosis and resolve, now
        action, self.why = self.queue.pop(0) if self.queue else ("resolve()", "nothing left to do")
        return action

    def step_info(self) -> dict[str, Any]:
        """Added to the trajectory entry of the action just taken (records and transcripts show it)."""
        return {"why": self.why}

    # ------------------------------------------------------------------ helpers
    def _learn(self, obs: Observation) -> None:
        """``obs.data`` is the tool's structured result; ``obs.text`` is what a human would read."""
        if not obs.ok:  # an invalid action costs a step and some time; obs.error says why
            return
        if obs.tool == "get_alerts":
            self.alerting = [a["entity"] for a in obs.data if a.get("firing")]
        elif obs.tool == "get_status":
            self.services = sorted({p["service"] for p in obs.data})
        elif obs.tool == "get_changes":
            self.changes = list(obs.data)

    def _plan(self) -> list[tuple[Any, str]]:
        suspects = [e for e in self.alerting if e in self.services] or self.services[:1]
        plan: list[tuple[Any, str]] = [(f'search_logs(service="{svc}", level="error")', f"errors of {svc}")
                                       for svc in suspects[: self.max_log_reads]]
        edit = self._latest_config_edit(suspects)
        if edit is not None:
            svc, key, old = edit
            claim = {"entity": f"{svc}.{key}", "category": "misconfiguration", "detail": f"{key} was {old}"}
            plan += [(Action("set_config", {"service": svc, "key": key, "value": _value(old)}), f"revert {key}"),
                     (f"wait(seconds={self.wait_s})", "let the revert take effect")]
        else:
            svc = suspects[0] if suspects else "web_server"
            claim = {"entity": svc, "category": "code_defect", "detail": "errors in its logs"}
        plan += [({"tool": "submit_diagnosis", "args": {"root_causes": [claim], "summary": self.page}},
                  "the diagnosis (the last submission counts)"),
                 ("resolve()", "end the episode; the system is then verified")]
        return plan

    def _latest_config_edit(self, services: list[str]) -> tuple[str, str, str] | None:
        for change in reversed(self.changes):
            if change.get("kind") == "config" and change.get("service") in services:
                m = CONFIG_EDIT.match(change.get("detail", ""))
                if m:
                    return change["service"], m.group(1), m.group(2)
        return None


def _value(text: str) -> Any:
    """A config value as get_changes shows it (``10000``, ``true``, ``postgres://...``), typed."""
    try:
        return json.loads(text)
    except ValueError:
        return text
