"""An episode against a live system (the Kubernetes backend): same parser, tools and budgets.

There is no ground truth on a live cluster, so nothing is scored against one: the diagnosis is
recorded as submitted, and mitigation is judged by the system itself after a verification wait:
every Deployment, StatefulSet and DaemonSet in the namespace rolled out and available (there must
be at least one), and, when Prometheus is configured, each SLO query at or under its threshold over
a rate window inside the wait (a query with no data is unknown, not a pass). Time is real: the budget
counts seconds on the backend's clock and tool costs are not added on top.

It has the attributes :func:`srezero.agents.runner.run_episode` uses (``reset``, ``step``,
``briefing``, ``tool_specs``, ``spec.id``, ``spec.budget.steps``, ``trajectory``, ``result``,
``episode_id``), so ``srezero run --backend k8s`` drives any agent through it unchanged.
"""

from __future__ import annotations

import copy
import shlex
from dataclasses import dataclass, field
from typing import Any

from srezero.backends._k8s_workloads import available, desired, list_workloads, problems
from srezero.backends.prometheus import PIPELINE_ALERTS, BackendError, PermissionDenied, alert_line, cap
from srezero.episode import Briefing, Observation
from srezero.task.spec import budget_spent
from srezero.tools.context import ToolContext
from srezero.tools.kubectl import live_names
from srezero.tools.parse import UnknownTool, canonical, parse_action, unwrap_markdown
from srezero.tools.registry import ToolError, load_tools

OBS_TEXT_LIMIT = 12_000

#: PromQL checked during verification; ``{ns}`` is the namespace, ``{window}`` the rate window (see
#: :meth:`LiveEpisode.slo_window_s`). The value must be <= the threshold.
DEFAULT_SLOS: dict[str, tuple[str, float]] = {
    "error_rate": ('sum(rate(http_requests_total{{namespace="{ns}",code=~"5.."}}[{window}])) / '
                   'sum(rate(http_requests_total{{namespace="{ns}"}}[{window}]))', 0.02),
    "latency_p99_ms": ('1000 * histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket'
                       '{{namespace="{ns}"}}[{window}])))', 800.0),
}
#: the shortest SLO rate window: Prometheus needs two samples in it (30 s is a common scrape interval)
MIN_SLO_WINDOW_S = 60
#: page candidates, most severe first; severities "none" and "info" never page
_SEVERITY = {"critical": 0, "page": 0, "high": 1, "error": 1, "warning": 2, "warn": 2}


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
        """The tools this backend serves (plus the submit tools), in the backend's own words: an agent
        offered a tool the backend refuses would spend steps and invalid actions on it."""
        served = set(getattr(self.backend, "TOOLS", self._tools))
        describe = getattr(self.backend, "describe", None)
        return [describe(t.public()) if callable(describe) and t.kind != "submit" else t.public()
                for name, t in self._tools.items() if t.kind == "submit" or name in served]

    @property
    def slo_window_s(self) -> int:
        """The SLO queries' rate window: the second half of the verification wait, so only samples taken
        after resolve() count, provided the fix has rolled out within the first half (verify_s must
        exceed the rollout time plus this window)."""
        return max(MIN_SLO_WINDOW_S, int(self.verify_s // 2))

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Observation, dict]:
        self.seed = int(seed or 0)
        self.trajectory, self.result = [], None
        self.steps = self.invalid = self.backend_errors = self.permission_denied = 0
        self.done = self.resolved = False
        self.claims: list[dict[str, Any]] | None = None
        self.summary = self.note = ""
        self.diagnosis_at: float | None = None
        self.writes: list[dict[str, Any]] = []
        self.t0 = self.backend.now()
        self._baseline = self._snapshot()
        page = self.page_text or self._page()
        self.briefing = Briefing(self.episode_id, page, self.spec.budget.steps, self.spec.budget.time_s)
        text = (f"PAGE: {page}\nYou are on call for namespace {getattr(self.backend, 'namespace', '?')} on a live "
                "cluster. Investigate with the read tools, mitigate with the write tools, then "
                "submit_diagnosis(root_causes=[...]) and resolve().\n"
                f"Budget: {self.spec.budget.steps} steps and {self.spec.budget.time_s / 60:.0f} minutes (real time).")
        return Observation(text, None, True, None, {"page": page}, 0, self.spec.budget.steps, 0.0,
                           self.spec.budget.time_s), {"briefing": self.briefing.__dict__}

    def _page(self) -> str:
        """The most severe firing alert (pending ones are not pages), this namespace's labelled alerts
        first; the alerting pipeline's own (Watchdog, InfoInhibitor) and severities none/info never page."""
        fallback = "[critical] incident reported by a user"
        try:
            out = self.backend.call("get_alerts", {})
        except Exception:  # no Prometheus, or a flaky one: the page is still the user's report
            return fallback
        ns = getattr(self.backend, "namespace", None)
        cands = [a for a in (out.data if isinstance(out.data, list) else []) if isinstance(a, dict)
                 and str(a.get("state", "")).lower() == "firing"
                 and (a.get("labels") or {}).get("alertname") not in PIPELINE_ALERTS
                 and str((a.get("labels") or {}).get("severity", "")).lower() not in ("none", "info")]
        cands.sort(key=lambda a: ((a.get("labels") or {}).get("namespace") != ns,
                                  _SEVERITY.get(str((a.get("labels") or {}).get("severity", "")).lower(), 3)))
        return alert_line(cands[0]) if cands else fallback

    def _snapshot(self) -> dict[str, int] | None:
        """Each workload's desired replicas at the start (None if unknown): one already at zero then may
        stay there; one the episode took to zero is down."""
        apps = getattr(self.backend, "apps", None)
        if apps is None:
            return None
        try:
            return {f"{k}/{o.metadata.name}": desired(k, o) for k, o in list_workloads(apps, self.backend.namespace)}
        except Exception:  # verification will say what cannot be read; zero replicas then count as down
            return None

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
        partial: str | None = None  # what a failed write had already changed
        action, recorded = canonical(action)
        try:
            tool, args = self._parse(action, recorded)
            spec = self._tools[tool]
            out = spec.fn(self.ctx, **args) if spec.kind == "submit" else self.backend.call(tool, args)
            text, data = out.text, out.data
            if spec.kind == "write":
                self.writes.append({"step": self.steps, "tool": tool, "args": dict(args),
                                    "at": round(self.elapsed(), 3), "effect": text})
        except BackendError as exc:  # the backend failed (5xx, 401, timeout...), not the agent's input
            error = f"backend error: {exc}"
            tool = tool or exc.tool
            partial = exc.partial
            self.backend_errors += 1
        except PermissionDenied as exc:  # the operator's RBAC, not the agent's input
            error = (f"permission denied by the cluster's RBAC (the backend's credentials lack this permission; "
                     f"not counted as an invalid action): {exc}")
            tool = tool or exc.tool
            partial = exc.partial
            self.permission_denied += 1
        except ToolError as exc:
            error = str(exc)
            tool = tool or exc.tool
            partial = getattr(exc, "partial", None)
            self.invalid += 1
        except Exception as exc:  # a flaky cluster must not end the run: the agent sees the failure
            error = f"backend error: {type(exc).__name__}: {str(exc)[:500]}"
            self.backend_errors += 1
        if error is not None:
            text = f"error: {error}"
            if partial and tool in self._tools and self._tools[tool].kind == "write":
                self.writes.append({"step": self.steps, "tool": tool, "args": dict(args),
                                    "at": round(self.elapsed(), 3), "effect": partial, "error": error,
                                    "partial": True})
        elapsed = self.elapsed()
        terminated = self.resolved
        exhausted = None if terminated else budget_spent(self.spec.budget, self.steps, elapsed)
        truncated = exhausted is not None
        self.trajectory.append({"step": self.steps, "action": recorded,
                                "tool": tool, "args": args, "ok": error is None, "error": error,
                                "sim_time_s": round(elapsed, 3), "text": text[:OBS_TEXT_LIMIT], "reward": 0.0})
        info: dict[str, Any] = {"invalid": error is not None, "tool": tool, "sim_time_s": elapsed}
        if terminated or truncated:
            self.done = True
            self.result = self._finish(exhausted or "resolve")
            info["result"] = copy.deepcopy(self.result)
        obs = Observation(text, tool, error is None, error, data, self.steps,
                          max(0, self.spec.budget.steps - self.steps), round(elapsed, 3),
                          max(0.0, self.spec.budget.time_s - elapsed), self.done)
        return obs, 0.0, terminated, truncated, info

    def _parse(self, action: Any, recorded: Any) -> tuple[str, dict[str, Any]]:
        """Like the simulator's parser (markdown fences and backticks too), except kubectl names are the
        cluster's own (no short forms: ``db`` is deployment db, not the simulator's database)."""
        with live_names():
            try:
                tool, args = parse_action(action, recorded)
            except UnknownTool as exc:  # name, suggest and list only the tools this backend serves
                raise UnknownTool(exc.name, tuple(t["name"] for t in self.tool_specs())) from None
        if tool == "search_logs" and isinstance(action, str) and _wants_previous(unwrap_markdown(action.strip())):
            args["previous"] = True  # the backend reads the last terminated container's log
        return tool, args

    # ------------------------------------------------------------------ ending early
    def finish(self) -> dict[str, Any]:
        """End an unfinished episode as truncated (for harnesses that stop early) and verify it.

        Idempotent: a finished episode returns its existing result.
        """
        if not hasattr(self, "done"):
            raise RuntimeError("call reset() before finish()")
        if not self.done:
            self.done = True
            self.result = self._finish("stopped")
        return self.result  # type: ignore[return-value]

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
        """Readiness of every workload and each SLO query, after the verification wait.

        Never raises for a backend failure: a check that cannot be made is a reason the episode is
        not mitigated (``ready``/``slo_ok`` False); so are an empty namespace and an SLO with no data.
        """
        self.backend.advance(self.verify_s)
        reasons: list[str] = []
        counts: dict[str, dict[str, str]] = {"deployments": {}, "statefulsets": {}, "daemonsets": {}}
        ready_ok = True
        apps = getattr(self.backend, "apps", None)
        ns = getattr(self.backend, "namespace", "")
        if apps is not None:
            try:
                items = list_workloads(apps, ns)
            except Exception as exc:  # any failure means readiness is unknown, not proven
                items, ready_ok = [], False
                reasons.append(f"readiness could not be checked: {_describe(exc, self.backend)}")
            else:
                if not items:
                    ready_ok = False
                    reasons.append(f"no deployments, statefulsets or daemonsets in namespace {ns}: nothing to verify")
            base = self._baseline
            for kind, obj in items:
                counts[f"{kind}s"][obj.metadata.name] = f"{available(kind, obj)}/{desired(kind, obj)}"
                found = problems(kind, obj, None if base is None else base.get(f"{kind}/{obj.metadata.name}", 0))
                reasons += found
                ready_ok = ready_ok and not found
        slo_ok: bool | None = None
        worst: dict[str, float | None] = {}
        prom = getattr(self.backend, "prometheus", None)
        window = self.slo_window_s
        note = None if prom is not None else "no Prometheus configured: SLOs not checked"
        if prom is not None and self.slos:
            slo_ok = True
            if window > self.verify_s:
                note = (f"the SLO rate window ({window} s) is longer than the verification wait ({self.verify_s:g} s): "
                        "samples from before resolve() count too")
            for name, (query, limit) in self.slos.items():
                text = query.format(ns=ns, window=f"{window}s")
                try:
                    rows = prom.query(text)
                    value = max((float(v) for _, v in rows if v == v), default=None)  # v == v drops NaN
                except Exception as exc:  # a malformed answer is as unchecked as an outage
                    reasons.append(f"SLO {name} could not be checked: {_describe(exc, self.backend)}")
                    slo_ok = False
                    continue
                worst[name] = value
                if value is None:  # no series (metric not exported, or 0/0 when nothing is served): unknown
                    slo_ok = False
                    reasons.append(f"SLO {name} is unknown: the query returned no data ({cap(text, 200)})")
                elif value > limit:
                    slo_ok = False
                    reasons.append(f"SLO {name} is {value:.4g}, above {limit:g}")
        return {"ready": ready_ok, **counts, "slo_ok": slo_ok, "slo_worst": worst, "slo_note": note,
                "slo_window_s": window if prom is not None and self.slos else None,
                "reasons": reasons, "verify_window_s": self.verify_s}

    def _finish(self, end: str) -> dict[str, Any]:
        truncated = end != "resolve"
        try:
            m = self.verify()
        except Exception as exc:  # e.g. the wait itself failed: not verified, so not mitigated
            m = {"ready": False, "deployments": {}, "statefulsets": {}, "daemonsets": {}, "slo_ok": None,
                 "slo_worst": {}, "slo_note": None, "slo_window_s": None,
                 "reasons": [f"verification failed: {_describe(exc)}"], "verify_window_s": self.verify_s}
        mitigated = bool(m["ready"] and m["slo_ok"] is not False)
        m["mitigated"] = mitigated
        return {"task_id": self.spec.id, "seed": self.seed, "backend": getattr(self.backend, "name", "?"),
                "namespace": getattr(self.backend, "namespace", None), "marks": None, "success": None,
                "resolved": self.resolved, "truncated": truncated, "end": end,
                "diagnosis": {"score": None, "claims": self.claims or [], "summary": self.summary,
                              "submitted": self.claims is not None},
                "mitigated": mitigated, "mitigation": m, "invalid_actions": self.invalid,
                "backend_errors": self.backend_errors, "permission_denied": self.permission_denied,
                "dry_run": bool(getattr(self.backend, "dry_run", False)), "writes": self.writes,
                "steps": self.steps, "sim_seconds": round(self.elapsed(), 3), "ttd_s": self.diagnosis_at,
                "note": self.note, "ground_truth": None}


def _describe(exc: BaseException, backend: Any = None, where: str = "verification") -> str:
    """A one-line account of a failure, classified by the backend when it can (Kubernetes API errors)."""
    classify = getattr(backend, "classify", None)
    if not isinstance(exc, ToolError) and callable(classify) and isinstance(exc, Exception):
        exc = classify(exc, where)
    return str(exc) if isinstance(exc, ToolError) else f"{type(exc).__name__}: {cap(str(exc), 300)}"


def _wants_previous(command: str) -> bool:
    """``kubectl logs ... -p|--previous`` (the translator accepts the flag; the backend honours it)."""
    try:
        tokens = shlex.split(command)
    except ValueError:
        return False
    return any(t in ("-p", "--previous") or t.lower() in ("--previous=true", "-p=true") for t in tokens[2:])
