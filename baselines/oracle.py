"""The oracle agent: reads the ground truth and plays it perfectly.

It is an upper bound that proves each task is solvable, not a baseline: it declares
``wants_ground_truth`` and the runner hands it the episode's privileged plan (the evidence reads,
the true diagnosis, the minimal fix). Reports show it apart from the baselines.
"""

from __future__ import annotations

from typing import Any

from srezero.episode import Briefing, Observation


class OracleAgent:
    wants_ground_truth = True

    def settings(self) -> dict[str, Any]:
        return {"upper_bound": True}

    def reset(self, task_info: Briefing, seed: int, tool_specs: list[dict[str, Any]]) -> None:
        self.plan: list[dict[str, Any]] = []

    def bind_oracle(self, plan: list[dict[str, Any]]) -> None:
        self.plan = list(plan)

    def act(self, observation: Observation) -> dict[str, Any]:
        if not self.plan:
            return {"tool": "resolve", "args": {}}
        return self.plan.pop(0)
