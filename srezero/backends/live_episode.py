"""An episode against a live system (the Kubernetes backend): same parser, tools and budgets.

There is no ground truth on a live cluster, so nothing is scored against one: the diagnosis is
recorded as submitted, and mitigation is judged by the system itself after a verification wait:
every deployment in the namespace ready (available replicas = desired), and, when Prometheus is
configured, each SLO query at or under its threshold. Time is real: the budget counts seconds on
the backend's clock and tool costs are not added on top.

It has the attributes :func:`srezero.agents.runner.run_episode` uses (``reset``, ``step``,
``briefing``, ``tool_specs``, ``spec.id``, ``spec.budget.steps``, ``trajectory``, ``result``,
``episode_id``), so ``srezero run --backend k8s`` drives any agent through it unchanged.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from srezero.episode import Briefing, Observation
from srezero.tools.context import ToolContext
from srezero.tools.parse import parse_action
from srezero.tools.registry import ToolError, load_tools

OBS_TEXT_LIMIT = 12_000

#: PromQL checked during verification; ``{ns}`` is the namespace. Value must be <= the threshold.
DEFAULT_SLOS: dict[str, tuple[str, float]] = {
    "error_rate": ('sum(rate(http_requests_total{{namespace="{ns}",code=~"5.."}}[5m])) / '
                   'sum(rate(http_requests_total{{namespace="{ns}"}}[5m]))', 0.02),
    "latency_p99_ms": ('1000 * histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket'
                       '{{namespace="{ns}"}}[5m])))', 800.0),
}


@dataclass
class LiveBudget:
    steps: int = 30
    time_s: float = 1800.0


@dataclass
class LiveSpec:
    """The little of a task a live episode needs: a name and budgets."""

    id: str
    budget: LiveBudget = field(default_factory=LiveBudget)
    hints: tuple[str, ...] = ()


class LiveEpisode:
    """Runs actions against a backend; records the diagnosis; verifies readiness and SLOs at the end."""

    def __init__(self, backend: Any, *, task_id: str = "live", page: str = "", steps: int = 30,
                 time_s: float = 1800.0, verify_s: float = 120.0,
                 slos: dict[str, tuple[str, float]] | None = None) -> None:
        self.backend = backend
        self.spec = LiveSpec(task_id, LiveBudget(steps, time_s))
        self.page_text = page
        self.verify_s = verify_s
        self.slos = DEFAULT_SLOS if slos is None else slos
        self.seed = 0
        self._tools = load_tools()
        self.trajectory: list[dict[str, Any]] = []
        self.result: dict[str, Any] | None = None
        self.ctx = ToolContext(None, self)  # type: ignore[arg-type]  # submit tools only need the episode

    @property
    def episode_id(self) -> str:
        from srezero.sim.rng import stable_int

        return f"live-{stable_int(self.spec.id, 'live') % 16**10:010x}"  # opaque: ids can name the incident

    def tool_specs(self) -> list[dict[str, Any]]:
        return [t.public() for t in self._tools.values()]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Observation, dict]:
        self.seed = int(seed or 0)
        self.trajectory, self.result = [], None
        self.steps = self.invalid = self.backend_errors = 0
        self.done = self.resolved = False
        self.claims: list[dict[str, Any]] | None = None
        self.summary = self.note = ""
        self.diagnosis_at: float | None = None
        self.writes: list[dict[str, Any]] = []
        self.t0 = self.backend.now()
        page = self.page_text or self._page()
        self.briefing = Briefing(self.episode_id, page, self.spec.budget.steps, self.spec.budget.time_s)
        text = (f"PAGE: {page}\nYou are on call for namespace {getattr(self.backend, 'namespace', '?')} on a live "
                "cluster. Investigate with the read tools, mitigate with the write tools, then "
                "submit_diagnosis(root_causes=[...]) and resolve().\n"
                f"Budget: {self.spec.budget.steps} steps and {self.spec.budget.time_s / 60:.0f} minutes (real time).")
        return Observation(text, None, True, None, {"page": page}, 0, self.spec.budget.steps, 0.0,
                           self.spec.budget.time_s), {"briefing": self.briefing.__dict__}

    def _page(self) -> str:
        try:
            out = self.backend.call("get_alerts", {})
        except ToolError:
            return "[critical] incident reported by a user"
        first = out.text.splitlines()[0] if out.text else ""
        return first if first and first != "no alerts firing" else "[critical] incident reported by a user"

    # ------------------------------------------------------------------ step
    def elapsed(self) -> float:
        return self.backend.now() - self.t0

    def step(self, action: Any) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        if self.done:
            obs = Observation("error: the episode has ended", None, False, "episode has ended", None, self.steps, 0,
                              round(self.elapsed(), 3), 0.0, True)
            truncated_end = bool(self.result and self.result.get("truncated"))
            return obs, 0.0, not truncated_end, truncated_end, {
                "invalid": True, "tool": None, "sim_time_s": self.elapsed(), "result": copy.deepcopy(self.result)}
        self.steps += 1
        tool, args, error, text, data = None, {}, None, "", None
        try:
            tool, args = self._parse(action)
            spec = self._tools[tool]
            out = spec.fn(self.ctx, **args) if spec.kind == "submit" else self.backend.call(tool, args)
            text, data = out.text, out.data
            if spec.kind == "write":
                self.writes.append({"step": self.steps, "tool": tool, "args": dict(args),
                                    "at": round(self.elapsed(), 3), "effect": text})
        except ToolError as exc:
            error = str(exc)
            tool = tool or exc.tool
            self.invalid += 1
        except Exception as exc:  # a flaky cluster must not end the run: the agent sees the failure
            error = f"backend error: {type(exc).__name__}: {str(exc)[:500]}"
            self.backend_errors += 1
        if error is not None:
            text = f"error: {error}"
        elapsed = self.elapsed()
        terminated = self.resolved
        truncated = not terminated and (self.steps >= self.spec.budget.steps or elapsed >= self.spec.budget.time_s)
        self.trajectory.append({"step": self.steps, "action": action if isinstance(action, str | dict) else repr(action),
                                "tool": tool, "args": args, "ok": error is None, "error": error,
                                "sim_time_s": round(elapsed, 3), "text": text[:OBS_TEXT_LIMIT], "reward": 0.0})
        info: dict[str, Any] = {"invalid": error is not None, "tool": tool, "sim_time_s": elapsed}
        if terminated or truncated:
            self.done = True
            self.result = self._finish(truncated)
            info["result"] = copy.deepcopy(self.result)
        obs = Observation(text, tool, error is None, error, data, self.steps,
                          max(0, self.spec.budget.steps - self.steps), round(elapsed, 3),
                          max(0.0, self.spec.budget.time_s - elapsed), self.done)
        return obs, 0.0, terminated, truncated, info

    def _parse(self, action: Any) -> tuple[str, dict[str, Any]]:
        """Like the simulator's parser, except kubectl names are the cluster's own (no short forms)."""
        if isinstance(action, str) and action.strip().startswith(("kubectl ", "k ")):
            from srezero.tools.kubectl import translate

            tool, args = translate(action.strip(), sim_names=False)
            return tool, self._tools[tool].validate(args)
        return parse_action(action)

    # ------------------------------------------------------------------ used by submit tools
    def record_diagnosis(self, claims: list[Any], summary: str) -> int:
        self.claims = [c if isinstance(c, dict) else dict(c) for c in claims]
        self.summary = summary
        self.diagnosis_at = round(self.elapsed(), 3)
        return len(claims)

    def request_resolve(self, note: str) -> None:
        self.resolved = True
        self.note = note

    def oracle_plan(self) -> list[dict[str, Any]]:
        raise RuntimeError("a live episode has no ground truth, so there is no oracle plan")

    # ------------------------------------------------------------------ verification
    def verify(self) -> dict[str, Any]:
        """Readiness of every deployment and each SLO query, after the verification wait."""
        self.backend.advance(self.verify_s)
        reasons: list[str] = []
        ready: dict[str, str] = {}
        apps = getattr(self.backend, "apps", None)
        ns = getattr(self.backend, "namespace", "")
        if apps is not None:
            for d in apps.list_namespaced_deployment(namespace=ns).items or []:
                want = d.spec.replicas or 0
                have = (d.status.available_replicas if d.status else 0) or 0
                ready[d.metadata.name] = f"{have}/{want}"
                if want == 0:
                    reasons.append(f"deployment {d.metadata.name} is scaled to zero")
                elif have < want:
                    reasons.append(f"deployment {d.metadata.name} has {have}/{want} replicas available")
        slo_ok: bool | None = None
        worst: dict[str, float | None] = {}
        prom = getattr(self.backend, "prometheus", None)
        if prom is not None and self.slos:
            slo_ok = True
            for name, (query, limit) in self.slos.items():
                try:
                    rows = prom.query(query.format(ns=ns))
                except ToolError as exc:
                    reasons.append(f"SLO {name} could not be checked: {exc}")
                    slo_ok = False
                    continue
                value = max((v for _, v in rows if v == v), default=None)  # v == v drops NaN
                worst[name] = value
                if value is not None and value > limit:
                    slo_ok = False
                    reasons.append(f"SLO {name} is {value:.4g}, above {limit:g}")
        return {"ready": not any(r.startswith("deployment ") for r in reasons), "deployments": ready, "slo_ok": slo_ok, "slo_worst": worst,
                "slo_note": None if prom is not None else "no Prometheus configured: SLOs not checked",
                "reasons": reasons, "verify_window_s": self.verify_s}

    def _finish(self, truncated: bool) -> dict[str, Any]:
        m = self.verify()
        mitigated = bool(m["ready"] and m["slo_ok"] is not False)
        m["mitigated"] = mitigated
        return {"task_id": self.spec.id, "seed": self.seed, "backend": getattr(self.backend, "name", "?"),
                "namespace": getattr(self.backend, "namespace", None), "marks": None, "success": None,
                "resolved": self.resolved, "truncated": truncated,
                "diagnosis": {"score": None, "claims": self.claims or [], "summary": self.summary,
                              "submitted": self.claims is not None},
                "mitigated": mitigated, "mitigation": m, "invalid_actions": self.invalid,
                "backend_errors": self.backend_errors, "writes": self.writes,
                "steps": self.steps, "sim_seconds": round(self.elapsed(), 3), "ttd_s": self.diagnosis_at,
                "note": self.note, "ground_truth": None}
