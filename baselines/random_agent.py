"""The random agent: the floor. Seeded, it picks tools and plausible arguments uniformly."""

from __future__ import annotations

from typing import Any

import numpy as np

from srezero.episode import Briefing, Observation
from srezero.sim.rng import stable_int

SERVICES = ("load_balancer", "web_server", "cache", "database", "message_queue", "worker")
METRICS = ("error_rate", "latency_p99_ms", "request_rate", "cpu_cores", "memory_mb", "queue_depth")
CATEGORIES = ("misconfiguration", "resource_exhaustion", "code_defect", "dependency_failure", "hardware",
              "network", "authentication", "capacity")


class RandomAgent:
    """Uniform over tools; arguments drawn from names it has seen. Resolves with probability 1/30."""

    def __init__(self, resolve_p: float = 1 / 30) -> None:
        self.resolve_p = resolve_p

    def settings(self) -> dict[str, Any]:
        return {"resolve_p": self.resolve_p}

    def reset(self, task_info: Briefing, seed: int, tool_specs: list[dict[str, Any]]) -> None:
        # the episode id too: one seed would otherwise play the same moves on every task
        self.rng = np.random.default_rng([seed, stable_int(task_info.episode_id)])
        self.tools = [t["name"] for t in tool_specs]
        self.names: list[str] = list(SERVICES)

    def _pick(self, seq: Any) -> Any:
        return seq[int(self.rng.integers(0, len(seq)))]

    def act(self, observation: Observation) -> dict[str, Any]:
        data = observation.data
        if isinstance(data, dict) and "services" in data and "nodes" in data:
            self.names = list(SERVICES) + [r for reps in data["services"].values() for r in reps] + list(data["nodes"])
        if self.rng.random() < self.resolve_p:
            return {"tool": "resolve", "args": {}}
        tool = self._pick(self.tools)
        svc = self._pick(SERVICES)
        name = self._pick(self.names)
        args = {
            "get_alerts": {}, "get_topology": {}, "get_status": {"service": svc},
            "query_metrics": {"target": svc, "metric": self._pick(METRICS)},
            "search_logs": {"service": svc, "pattern": self._pick(("error", "timeout", "", "fail"))},
            "get_traces": {"errors_only": bool(self.rng.random() < 0.5)},
            "get_events": {"entity": svc}, "get_config": {"service": svc}, "get_changes": {},
            "node_diagnostics": {"node": name, "check": self._pick(("dmesg", "disk", "top", "limits"))},
            "restart": {"target": name}, "rollback": {"service": svc},
            "scale": {"service": self._pick(("web_server", "worker")), "replicas": int(self.rng.integers(0, 6))},
            "set_config": {"service": svc, "key": "db_timeout_ms", "value": int(self.rng.integers(10, 5000))},
            "failover": {"service": "database"}, "drain_node": {"node": name},
            "submit_diagnosis": {"root_causes": [{"entity": name, "category": self._pick(CATEGORIES), "detail": "unknown"}]},
            "resolve": {},
        }.get(tool, {})
        return {"tool": tool, "args": args}
