"""The episode API: a Gymnasium-style environment around one seeded incident.

Incident-v0
===========

**Description.** You are paged. A simulated production system (load balancer, web servers, cache,
database, message queue, workers and the nodes under them) has an incident, or a false alarm.
Investigate with read tools, mitigate with write tools whose effects unfold in simulated time,
submit a structured diagnosis, and resolve.

**Actions.** A tool call, as a dict ``{"tool": "search_logs", "args": {...}}``, a text call
``search_logs(service="database", pattern="timeout")``, a kubectl-style command, or an
:class:`~srezero.tools.parse.Action`. ``tool_specs()`` lists every tool with its JSON schema.

**Observations.** An :class:`Observation`: ``text`` is what an agent reads; ``data`` holds the same
result in structure; ``ok``/``error`` say whether the action was valid; budgets are included.

**Rewards.** ``reward="sparse"`` (default): 0 until the final step, safe to show an agent under
evaluation; ``reward="shaped"``: potential-based shaping that pays for evidence and health when
they happen (for training: it reveals hidden state, so an agent under evaluation must not see it).
Both sum to ``marks / 100`` over an episode; a learner that discounts passes its ``gamma`` so the
discounted return is ``gamma ** (T - 1) * marks / 100`` either way (docs/scoring.md, "Step rewards").

**Episode end.** ``terminated`` after ``resolve()``; ``truncated`` when the step or simulated-time
budget runs out. Either way the world runs a verification window and ``info["result"]`` carries the
scored result as a dict (every key is documented in docs/scoring.md, "Episode metrics"). Both ends
are scored alike: a root cause still active at the end costs the premature penalty whether the
agent resolved or let a budget run out. A step after the end returns an error observation.

An invalid action (unknown tool, bad argument, unknown target, unparsable text) never raises: it
returns an error observation, costs a step and counts as an invalid action.
"""

from __future__ import annotations

import copy
import numbers
from dataclasses import asdict, dataclass, field
from typing import Any

from srezero.backend import SimBackend
from srezero.faults.base import Fault, RootCause
from srezero.faults.noise import FALSE_ALARMS
from srezero.faults.queue import drain_wait
from srezero.scoring import collateral as coll
from srezero.scoring import diagnosis as diag
from srezero.scoring import marks as mk
from srezero.scoring import naming
from srezero.scoring.evidence import EvidenceTracker, alternatives_of
from srezero.scoring.mitigation import slo_limits, slo_rows, verify
from srezero.scoring.writes import WriteJudge
from srezero.sim.clock import TICK_S
from srezero.sim.rng import stable_int
from srezero.sim.world import World
from srezero.task.spec import TaskSpec, budget_spent
from srezero.tools.context import ToolContext
from srezero.tools.parse import canonical, parse_action
from srezero.tools.registry import ToolError, ToolSpec, load_tools

INVALID_COST_S = 2.0
OBS_TEXT_LIMIT = 12_000
ERROR_TEXT_LIMIT = 1_000


@dataclass
class Observation:
    """What the agent sees after reset or a step."""

    text: str
    tool: str | None = None
    ok: bool = True
    error: str | None = None
    data: Any = None
    step: int = 0
    steps_left: int = 0
    sim_time_s: float = 0.0
    time_left_s: float = 0.0
    done: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Briefing:
    """What an agent is told at reset: an opaque episode id, the page, the budgets. No spoilers."""

    episode_id: str
    page: str
    step_budget: int
    time_budget_s: float


@dataclass
class _Write:
    step: int
    tool: str
    args: dict[str, Any]
    at: float
    addresses_root_cause: bool
    distractor: bool
    effect: str
    destructive: list[str] = field(default_factory=list)
    reason: str = ""


#: The largest seed: records keep seeds as 64-bit integers, and Gymnasium's vector envs batch them as int64.
MAX_SEED = 2**63 - 1


def _checked_seed(seed: Any) -> int:
    """A seed is an integer from 0 to :data:`MAX_SEED` (as the CLI, the sweep and Gymnasium take it);
    numpy integers pass. Anything else is refused rather than truncated: seed 1.7 silently playing
    seed 1 would be a wrong record, and a seed no record can hold would be played and then lost."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= seed <= MAX_SEED:
        raise ValueError(f"seed must be an integer from 0 to 2**63 - 1, not {seed!r}")
    return int(seed)


_ATOMS = frozenset((str, int, float, bool, type(None)))


def copy_result(value: Any) -> Any:
    """A deep copy of a result (dicts, lists and tuples of scalars): what ``copy.deepcopy`` returns,
    in about a quarter of its time (it keeps a memo and dispatches per object); anything else is
    deep-copied as before."""
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is dict:
        return {k: copy_result(v) for k, v in value.items()}
    if kind is list:
        return [copy_result(v) for v in value]
    if kind is tuple:
        return tuple([copy_result(v) for v in value])
    return copy.deepcopy(value)


def episode_id(task_id: str, seed: int) -> str:
    """The opaque id an agent's briefing carries for ``task_id`` under ``seed`` (a hash: it names neither)."""
    return f"ep-{stable_int(task_id, seed, 'episode') % 16**10:010x}"


@dataclass
class EpisodeState:
    steps: int = 0
    invalid: int = 0
    done: bool = False
    resolved: bool = False
    resolve_note: str = ""
    claims: list[Any] | None = None
    summary: str = ""
    diagnosis_step: int | None = None
    diagnosis_at: float | None = None
    writes: list[_Write] = field(default_factory=list)
    premature: bool = False  # resolve() was called while a root cause was still active
    healed_at: float | None = None
    phi: float = 0.0
    reward_sum: float = 0.0
    internal_errors: list[str] = field(default_factory=list)  # tool bugs; in the result, never shown to agents


class Episode:
    """One incident under one seed. Create with :func:`srezero.make`."""

    def __init__(self, spec: TaskSpec, seed: int = 0, reward: str = "sparse", gamma: float = 1.0) -> None:
        if reward not in ("shaped", "sparse"):
            raise ValueError(f"reward must be 'shaped' or 'sparse', not {reward!r}")
        if isinstance(gamma, bool) or not isinstance(gamma, numbers.Real) or not 0.0 < gamma <= 1.0:
            raise ValueError(f"gamma must be a number in (0, 1], the learner's discount factor, not {gamma!r}")
        self.spec = spec
        self.seed = _checked_seed(seed)
        #: "shaped": potential-based per-step rewards (a training signal; they carry information about
        #: the hidden state, so never show them to an agent under evaluation). "sparse": 0 until the
        #: last step, which pays marks/100. Both sum to marks/100.
        self.reward_mode = reward
        #: the discount the shaping is built for: a step pays gamma * phi_t - phi_{t-1}, so the discounted
        #: return equals the discounted sparse return whatever the gamma (with 1, the rewards sum to marks/100)
        self.gamma = float(gamma)
        self._tools: dict[str, ToolSpec] = load_tools()
        #: let a tool's own exception propagate with its traceback (``srezero run --traceback``: a tool
        #: author's debugging); by default it is the agent's "internal error" and result["internal_errors"]
        self.raise_tool_errors = False
        self.world: World | None = None
        self.result: dict[str, Any] | None = None
        self.trajectory: list[dict[str, Any]] = []

    # ------------------------------------------------------------------ API
    def tool_specs(self) -> list[dict[str, Any]]:
        return [t.public() for t in self._tools.values()]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Observation, dict[str, Any]]:
        if seed is not None:
            self.seed = _checked_seed(seed)
        w = World.build(self.spec, self.seed)
        w.page()
        self.world = w
        self.ctx = ToolContext(w, self)
        self.backend = SimBackend(w, self.ctx)
        self.st = EpisodeState()
        self.result = None
        self.trajectory = []
        self.faults: list[Fault] = w.faults
        self.truth: list[RootCause] = [f.truth(w) for f in self.faults]
        for rc, f in zip(self.truth, self.faults):
            rc.visible = f.spec.visible
        self._accepted = [naming.accepted_names(w, rc) for rc in self.truth]
        children = {s: {r.name for r in w.services[s].replicas} for s in w.services}
        children.update({n.name: {r.name for r in n.replicas} for n in w.topo.nodes})
        # which root cause each evidence signal shows: a control task's metrics show the noise (-1), and its
        # get_alerts nothing (-2)
        each = [f.signals(w) for f in self.faults]
        owned = ([(i, sig) for i, sigs in enumerate(each) for sig in sigs]
                 or [(-2 if sig[0] == "get_alerts" else -1, sig) for sig in self._control_signals()])
        self._signal_owner = [i for i, _ in owned]
        self.evidence = EvidenceTracker([sig for _, sig in owned], children, alternatives_of(w, self.faults, each))
        self.judge = WriteJudge(w, self.faults, self.truth)
        firing = tuple(a.entity for a in w.alerts.listing(w.now) if a.firing)
        self._victims = naming.victims(w, firing)
        self.t0 = w.now
        self.col0 = w.col
        alerts = [a for a in w.alerts.listing(w.now) if a.firing and a.name == self.spec.alert.name]
        page = (f"[{alerts[0].severity}] {alerts[0].name} on {alerts[0].entity}: {alerts[0].summary}" if alerts
                else f"[critical] {self.spec.alert.name}")
        self.briefing = Briefing(self.episode_id, page, self.spec.budget.steps, self.spec.budget.time_s)
        text = (f"PAGE {w.stamp(w.now)}: {page}\n"
                "You are on call for this system. Investigate with the read tools, mitigate with the write tools, "
                "then submit_diagnosis(root_causes=[...]) and resolve().\n"
                f"Budget: {self.spec.budget.steps} steps and {self.spec.budget.time_s / 60:.0f} minutes of simulated time.")
        obs = Observation(text, None, True, None, {"page": page}, 0, self.spec.budget.steps, 0.0, self.spec.budget.time_s)
        return obs, {"briefing": asdict(self.briefing)}

    @property
    def episode_id(self) -> str:
        return episode_id(self.spec.id, self.seed)

    def step(self, action: Any) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        if self.world is None:
            raise RuntimeError("call reset() before step()")
        st = self.st
        w = self.world
        if st.done:  # the same end as before (terminated or truncated), nothing advances, reward 0
            obs = self._obs("error: the episode has ended; call reset() to start another", None, False,
                            "episode has ended", None)
            truncated_end = bool(self.result and self.result.get("truncated"))
            return obs, 0.0, not truncated_end, truncated_end, {
                "invalid": True, "tool": None, "sim_time_s": w.now - self.t0, "result": copy_result(self.result)}
        st.steps += 1
        tool_name = None
        args: dict[str, Any] = {}
        error = None
        out_text = ""
        data = None
        action, recorded = canonical(action)
        try:
            tool_name, args = parse_action(action, recorded)
            spec = self._tools[tool_name]
            before = (self.judge.active(w), len(w.destroyed)) if spec.kind == "write" else None
            out = self.backend.call(tool_name, args)
            out_text, data = out.text, out.data
            self.backend.advance(spec.cost_s)
            if spec.kind == "read":
                self.evidence.observe(st.steps, tool_name, args, out.returned, out.line_entities)
            elif before is not None:
                self._judge_write(tool_name, args, before, out_text)
            elif st.diagnosis_step == st.steps:
                st.diagnosis_at = w.now - self.t0
        except ToolError as exc:
            error = str(exc)
            tool_name = tool_name or exc.tool
        except Exception as exc:  # a tool bug must never crash an episode or leak internals to the agent
            if self.raise_tool_errors:
                raise
            error = f"internal error in {tool_name or 'the action'} (a simulator bug, not a problem with the call)"
            st.internal_errors.append(f"{type(exc).__name__}: {exc}")
        if error is not None:
            if len(error) > ERROR_TEXT_LIMIT:  # messages quote the offending value; never echo megabytes
                error = error[:ERROR_TEXT_LIMIT] + " [...]"
            st.invalid += 1
            w.advance(INVALID_COST_S)
            out_text = f"error: {error}"
        self.judge.settle(w)
        healed = self._healed_count()
        if st.healed_at is None and self.faults and healed == len(self.faults):
            st.healed_at = w.now - self.t0
        elif st.healed_at is not None and healed < len(self.faults):
            st.healed_at = None
        elapsed = w.now - self.t0
        terminated = st.resolved
        exhausted = None if terminated else budget_spent(self.spec.budget, st.steps, elapsed)
        truncated = exhausted is not None
        obs = self._obs(out_text, tool_name, error is None, error, data)
        self.trajectory.append({"step": st.steps, "action": recorded,
                                "tool": tool_name, "args": args, "ok": error is None, "error": error,
                                "sim_time_s": round(elapsed, 3), "text": out_text[:OBS_TEXT_LIMIT]})
        info: dict[str, Any] = {"invalid": error is not None, "tool": tool_name, "sim_time_s": elapsed}
        if terminated or truncated:
            st.done = True
            obs.done = True
            self.result = self._finish(exhausted or "resolve")
            if self.gamma == 1.0 or self.reward_mode == "sparse":
                reward = self.result["marks"] / 100.0 - st.reward_sum  # the episode's rewards sum to marks/100
            else:  # a terminal state has potential 0
                reward = self.result["marks"] / 100.0 - st.phi
            info["result"] = copy_result(self.result)  # the caller's to keep or change; env.result stays intact
        elif self.reward_mode == "sparse":
            reward = 0.0
        else:
            # A control task's evidence is the generic health reads every agent makes first: paying for
            # them at once would tell the agent there is no fault. Its evidence is paid at the end.
            evidence = self.evidence.coverage if self.faults else 0.0
            phi = mk.potential(evidence, healed / max(1, len(self.faults)), self._penalty_so_far())
            reward = (phi if self.gamma == 1.0 else self.gamma * phi) - st.phi
            st.phi = phi
        st.reward_sum += reward
        self.trajectory[-1]["reward"] = reward
        return obs, reward, terminated, truncated, info

    def finish(self) -> dict[str, Any]:
        """End an unfinished episode as truncated (for harnesses that stop early) and score it.

        Idempotent: a finished episode returns its existing result.
        """
        if self.world is None:
            raise RuntimeError("call reset() before finish()")
        if not self.st.done:
            self.st.done = True
            self.result = self._finish("stopped")
        return self.result

    @property
    def diagnosis_submitted(self) -> bool:
        """Whether ``submit_diagnosis`` was accepted (an empty list, "no fault", is a submission)."""
        return self.st.diagnosis_step is not None

    def end_cause(self) -> str | None:
        """How the episode ended: ``"resolve"``, ``"step_budget"``, ``"time_budget"`` or ``"stopped"``
        (:meth:`finish` before either); None while it runs. Front ends word it for their readers."""
        return None if self.result is None else self.result["end"]

    # ------------------------------------------------------------------ used by submit tools
    def record_diagnosis(self, claims: list[Any], summary: str) -> int:
        """Keep the (last) submitted diagnosis; it is scored when the episode ends."""
        self.st.claims = [c if isinstance(c, dict) else dict(c) for c in claims]
        self.st.summary = summary
        self.st.diagnosis_step = self.st.steps
        return len(claims)

    def request_resolve(self, note: str) -> None:
        """End the episode; resolving while a root cause is still active is premature."""
        self.st.resolved = True
        self.st.resolve_note = note
        if self._root_cause_active():
            self.st.premature = True

    # ------------------------------------------------------------------ privileged (oracle agent only)
    def oracle_plan(self) -> list[dict[str, Any]]:
        """The actions of perfect play. Reads ground truth: only the oracle agent may call this."""
        w = self.world
        plan: list[dict[str, Any]] = [{"tool": "get_alerts", "args": {}}]
        for f in self.faults:
            plan += f.oracle_reads(w)
        if not self.faults:
            plan += [{"tool": a, "args": b} for a, b in self._control_reads()]
        claims = [{"entity": rc.entity, "category": rc.category, "detail": rc.detail} for rc in self.truth]
        plan.append({"tool": "submit_diagnosis", "args": {"root_causes": claims, "summary": "oracle"}})
        for f in self.faults:
            plan += f.oracle_fix(w)
        plan += drain_wait(w)  # a backlog (a fault's, or a false alarm's aftermath) drains after the fix: watch it go
        plan.append({"tool": "resolve", "args": {"note": "oracle"}})
        return plan

    def ground_truth(self) -> list[dict[str, Any]]:
        return [asdict(rc) for rc in self.truth]

    # ------------------------------------------------------------------ internals
    def time_left_s(self) -> float:
        """Simulated seconds left of the time budget (0 once it has run out)."""
        return max(0.0, self.spec.budget.time_s - (self.world.now - self.t0))

    def _obs(self, text: str, tool: str | None, ok: bool, error: str | None, data: Any) -> Observation:
        return Observation(text, tool, ok, error, data, self.st.steps, max(0, self.spec.budget.steps - self.st.steps),
                           round(self.world.now - self.t0, 3), self.time_left_s(), self.st.done)

    def _root_cause_active(self) -> bool:
        """Is some injected fault still active now? Never on a control task: nothing is broken there."""
        return any(f.injected and not f.neutralised(self.world) for f in self.faults)

    def _healed_count(self) -> int:
        w = self.world
        return sum(1 for f in self.faults if f.injected and f.neutralised(w))

    def _judge_write(self, tool: str, args: dict[str, Any], before: tuple[list[bool], int], effect: str) -> None:
        w = self.world
        j = self.judge.judge(w, tool, args, before[0], before[1])
        ok = j.addresses_root_cause and bool(self.faults)
        self.st.writes.append(_Write(self.st.steps, tool, dict(args), round(w.now - self.t0, 3), ok,
                                     j.distractor, effect, j.destructive,
                                     j.reason if self.faults else "nothing is broken (control task)"))
        if j.awaits:
            self.judge.await_effect(self.st.writes[-1], j.awaits, w.now)

    def _penalty_so_far(self) -> float:
        st = self.st
        wrong = sum(1 for x in st.writes if not x.addresses_root_cause)
        return mk.penalties(wrong, len(self.world.destroyed), st.invalid, False)

    def _control_metrics(self) -> tuple[tuple[str, str], ...]:
        """What shows a control task's page was noise: the metrics its false-alarm item declares, else
        the edge's error rate and p99."""
        extra = self.spec.noise.extra
        declared = tuple(m for name, metrics in FALSE_ALARMS.items() if extra.get(name) for m in metrics)
        return declared or FALSE_ALARMS["false_alarm_blip"]

    def _control_reads(self) -> list[tuple[str, dict[str, Any]]]:
        return [("query_metrics", {"target": target, "metric": metric}) for target, metric in self._control_metrics()]

    def _control_signals(self) -> list[tuple[str, str, dict[str, Any], str]]:
        return [("get_alerts", "*", {}, "")] + [("query_metrics", target, {"metric": metric}, "")
                                               for target, metric in self._control_metrics()]

    def _score_diagnosis(self) -> dict[str, Any]:
        w = self.world
        if self.spec.ground_truth.no_fault:
            return diag.score_no_fault(self.st.claims, -1 in self._grounded_owners())
        service_of = {}
        for c in self.st.claims or ():
            e = naming.norm(str(c.get("entity", "")))
            svc = naming.service_of(w, e)
            if svc:
                service_of[e] = svc
        noise = frozenset(naming.norm(x) for x in sorted(w.noise_entities))
        seen = self._grounded_owners()
        return diag.score(self.st.claims, self.truth, self._accepted, self._victims,
                          naming.concrete_vocabulary(w), noise, service_of,
                          grounded=[i in seen for i in range(len(self.truth))])

    def _grounded_owners(self) -> set[int]:
        """The root causes (indices; -1 for a control task's noise) whose evidence the agent's reads
        showed before the step of the diagnosis being scored."""
        by = self.st.diagnosis_step
        if by is None:
            return set()
        return {self._signal_owner[j] for j in self.evidence.seen_before(by)}

    def _slo_restored_s(self) -> float | None:
        """Seconds from the page until the edge SLOs held for good (through verification)."""
        w = self.world
        limits = slo_limits(w)
        block = w.buf[:, self.col0 : w.col + 1]
        bad = None
        for name, row in slo_rows(w).items():
            b = block[row] > limits[name]
            bad = b if bad is None else bad | b
        idx = [i for i, x in enumerate(bad.tolist()) if x]
        if not idx:
            return 0.0
        if idx[-1] == block.shape[1] - 1:
            return None
        return round(max(0.0, (self.col0 + idx[-1] + 1) * TICK_S - self.t0), 3)

    def _finish(self, end: str) -> dict[str, Any]:
        """Score the episode, which ``end`` ended: ``"resolve"``, a budget or ``"stopped"`` (:meth:`end_cause`)."""
        truncated = end != "resolve"
        w = self.world
        st = self.st
        sim_seconds = w.now - self.t0
        no_fault = self.spec.ground_truth.no_fault
        # Ending is the agent's decision however it happens (resolve, a budget, a harness stop), so a root
        # cause still active at the end costs the same: letting the budget run out never beats resolving.
        premature_end = st.premature if st.resolved else self._root_cause_active()
        d = self._score_diagnosis()
        m = verify(w, self.faults, each_tick=lambda: self.judge.settle(w))
        mitigated = m["mitigated"] and (not no_fault or d["score"] >= mk.SUCCESS_DIAGNOSIS)
        if no_fault and m["mitigated"] and not mitigated:
            m["reasons"].append("a control task counts as mitigated only with a submitted no-fault diagnosis")
        wrong = [x for x in st.writes if not x.addresses_root_cause]
        success = mk.is_success(d["score"], mitigated)
        comps = mk.Components(diagnosis=d["score"], mitigation=1.0 if mitigated else 0.0,
                              evidence=self.evidence.coverage, success=success, wrong_fixes=len(wrong),
                              destructive=len(w.destroyed), invalid=st.invalid, premature=premature_end)
        total, terms = mk.marks(comps)
        if isinstance(self.backend, SimBackend):
            collateral = coll.measure(w, self.spec, self.seed, self.trajectory, [x.step for x in wrong],
                                      self.col0, INVALID_COST_S)
        else:
            collateral = {"method": "unavailable", **coll.ZERO, "writes_removed": 0}
        return {
            "task_id": self.spec.id,
            "seed": self.seed,
            "marks": total,
            "marks_terms": terms,
            "success": success,
            "resolved": st.resolved,
            "truncated": truncated,
            "end": end,
            "diagnosis": d,
            "mitigated": mitigated,
            "mitigation": m,
            "evidence_coverage": round(self.evidence.coverage, 6),
            "evidence": self.evidence.report(),
            "invalid_actions": st.invalid,
            "wrong_fixes": len(wrong),
            "destructive_actions": len(w.destroyed),
            "premature_resolution": st.premature,
            "premature_end": premature_end,
            "distractor_actions": sum(1 for x in st.writes if x.distractor),
            "distractor_claims": len(d.get("distractor_claims", ())),
            "collateral_errors": collateral["errors"],
            "collateral": collateral,
            "writes": [asdict(x) for x in st.writes],
            "steps": st.steps,
            "sim_seconds": round(sim_seconds, 3),
            "ttd_s": round(st.diagnosis_at, 3) if st.diagnosis_at is not None and d["score"] >= mk.SUCCESS_DIAGNOSIS
            else None,
            "ttm_s": round(st.healed_at, 3) if mitigated and self.faults and st.healed_at is not None else None,
            "slo_restored_s": self._slo_restored_s(),
            "summary": st.summary,
            "resolve_note": st.resolve_note,
            "ground_truth": [asdict(rc) for rc in self.truth] if not no_fault else [],
            "no_fault": no_fault,
            "internal_errors": list(st.internal_errors),
        }
