"""The greedy agent: acts on the first anomaly it sees.

Live benchmarks report this as the typical failure of frontier agents: seize the first suspicious
thing, "fix" it, declare victory. Greedy reads three things in a fixed order and stops at the first
anomaly: a firing alert on a specific node or replica (not the page), a pod that is not running or
has restarted, then the most recent change. It blames that entity and applies the reflex fix for
it (drain the node, restart the pod or its crash-looping service's last change, revert the config
edit, roll back the deploy), submits, and resolves.

When the incident's cause is the first anomaly (a bad config push minutes before the page), that
works. Distractors (a pod that restarted on its own, an unrelated alert, a harmless deploy) and
misleading tasks put a red herring first, and greedy pays for the wrong fix. Observation-only.
"""

from __future__ import annotations

from typing import Any

from baselines._observe import SERVICES, Change, Script, ScriptedAgent, call
from srezero.episode import Briefing


class GreedyAgent(ScriptedAgent):
    name = "greedy"

    def settings(self) -> dict[str, Any]:
        return {"order": ["alerts", "pods", "changes"]}

    def start(self, task_info: Briefing) -> None:
        self.page = task_info.page

    def run(self) -> Script:
        v = self.view
        v.read_alerts((yield call("get_alerts")))
        v.read_status((yield call("get_status")))
        v.read_changes((yield call("get_changes", window_h=6.0)))
        entity, category, detail, fix = self.first_anomaly()
        yield call("submit_diagnosis", root_causes=[{"entity": entity, "category": category, "detail": detail}],
                   summary=f"greedy: {detail}")
        if fix is not None:
            yield fix
        yield call("resolve", note="greedy: fixed the first anomaly")

    def first_anomaly(self) -> tuple[str, str, str, dict[str, Any] | None]:
        v = self.view
        for a in v.alerts:
            entity = a.get("entity", "")
            if a.get("name", "") in self.page or entity in SERVICES:
                continue  # the page itself, or a whole service: not specific enough to act on
            if entity.startswith("node-"):
                return entity, "hardware", f"{a.get('name')} on {entity}", call("drain_node", node=entity)
            return entity, "code_defect", f"{a.get('name')} on {entity}", call("restart", target=entity)
        for p in v.pods:
            if p.get("state") != "Running" or int(p.get("restarts") or 0) > 0:
                svc = p.get("service", "")
                change = self.latest(svc) if p.get("state") == "CrashLoopBackOff" else None
                if change is not None:
                    return self.undo(change)
                return svc, "code_defect", f"{p.get('name')} is {p.get('state')} with restarts", \
                    call("restart", target=p.get("name", svc))
        change = self.latest(None)
        if change is not None:
            return self.undo(change)
        svc = next((v.service_of(a.get("entity", "")) for a in v.alerts), None) or "web_server"
        return svc, "code_defect", f"{svc} is alerting", call("restart", target=svc)

    def latest(self, service: str | None) -> Change | None:
        return next((c for c in reversed(self.view.changes)
                     if c.kind in ("config", "deploy") and (service is None or c.service == service)), None)

    @staticmethod
    def undo(c: Change) -> tuple[str, str, str, dict[str, Any]]:
        if c.kind == "config" and c.edits:
            key, (old, _new) = next(iter(c.edits.items()))
            return f"{c.service}.{key}", "misconfiguration", f"recent change {c.detail}", \
                call("set_config", service=c.service, key=key, value=old)
        return c.service, "code_defect", f"recent {c.detail}", call("rollback", service=c.service)
