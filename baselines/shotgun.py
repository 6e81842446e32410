"""The shotgun agent: the adversary the marks must defeat.

It looks only at what any agent sees: it discovers targets with ``get_topology`` and
``get_config``, then fires every write tool at every target it found (round-robin over the tools,
so every tool gets used within the step budget), then submits a diagnosis blaming as many entities
under as many categories as the tool allows, with a detail stuffed with every key, device and
mechanism word, and resolves. If fixing by accident or diagnosing by listing everything paid, this
agent would score well; it must average at most 10 marks (tests/scoring/test_adversaries.py).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from srezero.episode import Briefing, Observation

TARGET_PARAMS = ("target", "service", "node", "entity", "replica", "disk")
RESERVED_STEPS = 2  # submit_diagnosis + resolve
MAX_CALLS_PER_TARGET = 60
RESERVED_TIME_S = 60.0
MECHANISMS = ("memory leak OOM, sector I/O error SMART pending, certificate expired clock skew, packet loss "
              "conntrack, connection pool exhausted file descriptors, retry storm timeout, crash loop, capacity "
              "saturated, queue backlog poison message, cache eviction stampede, slow query missing index lock, "
              "bad release regression")


class ShotgunAgent:
    """Every write on every target, then blame everything, then resolve. Deterministic."""

    def settings(self) -> dict[str, Any]:
        return {"adversary": True}

    def reset(self, task_info: Briefing, seed: int, tool_specs: list[dict[str, Any]]) -> None:
        self.specs = {t["name"]: t for t in tool_specs}
        self.writes = [t for t in tool_specs if t["kind"] == "write"]
        sub = self.specs.get("submit_diagnosis", {}).get("parameters", {})
        claim = sub.get("$defs", {}).get("Claim", {}).get("properties", {})
        self.max_claims = int(sub.get("properties", {}).get("root_causes", {}).get("maxItems", 20))
        self.max_detail = int(claim.get("detail", {}).get("maxLength", 500))
        self.categories = [c for c in claim.get("category", {}).get("enum", []) if c != "none"]
        self.services: list[str] = []
        self.replicas: dict[str, list[str]] = {}
        self.nodes: dict[str, list[str]] = {}
        self.configs: dict[str, dict[str, Any]] = {}
        self._plan = self._script()
        self._last: Observation | None = None

    # ------------------------------------------------------------------ protocol
    def act(self, observation: Observation) -> dict[str, Any]:
        self._last = observation
        try:
            return next(self._plan)
        except StopIteration:
            return {"tool": "resolve", "args": {}}

    # ------------------------------------------------------------------ the script
    def _script(self) -> Iterator[dict[str, Any]]:
        yield {"tool": "get_topology", "args": {}}
        data = self._last.data if self._last is not None and isinstance(self._last.data, dict) else {}
        self.replicas = {k: list(v) for k, v in (data.get("services") or {}).items()}
        self.services = list(self.replicas)
        self.nodes = {k: list((v or {}).get("disks") or []) for k, v in (data.get("nodes") or {}).items()}
        for svc in self.services:
            yield {"tool": "get_config", "args": {"service": svc}}
            if self._last is not None and self._last.ok and isinstance(self._last.data, dict):
                self.configs[svc] = dict(self._last.data)
        for action in self._round_robin():
            obs = self._last
            if obs is not None and (obs.steps_left <= RESERVED_STEPS or obs.time_left_s <= RESERVED_TIME_S):
                break
            yield action
        yield {"tool": "submit_diagnosis", "args": {"root_causes": self._blame_everything(),
                                                     "summary": "everything is broken"}}
        yield {"tool": "resolve", "args": {"note": "fixed everything"}}

    def _round_robin(self) -> Iterator[dict[str, Any]]:
        queues = [list(self._calls(t)) for t in self.writes]
        i = 0
        while any(i < len(q) for q in queues):
            for q in queues:
                if i < len(q):
                    yield q[i]
            i += 1

    def _targets(self, param: str) -> list[str]:
        replicas = [r for reps in self.replicas.values() for r in reps]
        if param == "node":
            return list(self.nodes)
        if param == "disk":
            return [f"{n}/{d}" for n, ds in self.nodes.items() for d in ds]
        if param == "service":
            return list(self.services)
        return list(self.services) + replicas + (list(self.nodes) if param == "entity" else [])

    def _calls(self, spec: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """Every combination of targets and enumerable arguments the agent can name, per tool."""
        props: dict[str, Any] = spec["parameters"].get("properties", {})
        required = set(spec["parameters"].get("required", []))
        target = next((p for p in TARGET_PARAMS if p in props), None)
        for name in self._targets(target) if target else [""]:
            options: list[list[tuple[str, Any]]] = []
            for p, schema in props.items():
                if p == target or p == "value" or (p not in required and "default" in schema and "enum" not in schema):
                    continue
                options.append([(p, v) for v in self._options(p, schema, name)])
            for combo in itertools.islice(itertools.product(*options), MAX_CALLS_PER_TARGET):
                args = {target: name} if target else {}
                args.update(combo)
                if "value" in props:
                    args["value"] = self.configs.get(name, {}).get(args.get("key"), 1)
                yield {"tool": spec["name"], "args": args}

    def _options(self, name: str, schema: dict[str, Any], target: str) -> list[Any]:
        if "enum" in schema:
            return list(schema["enum"])
        if name == "key":
            return list(self.configs.get(target, {})) or [""]
        if name == "device":
            return list(self.nodes.get(target, [])) or [""]
        typ = schema.get("type")
        if name == "replicas":
            return [min(int(schema.get("maximum", 12)), len(self.replicas.get(target, [])) + 2)]
        if typ == "integer":
            return [int(schema.get("minimum", 1))]
        if typ == "number":
            return [float(schema.get("minimum", 1.0))]
        if typ == "boolean":
            return [True]
        return [""]

    def _blame_everything(self) -> list[dict[str, str]]:
        entities = list(self.services) + [r for reps in self.replicas.values() for r in reps] + list(self.nodes)
        entities += [f"{n}/{d}" for n, ds in self.nodes.items() for d in ds]
        entities += [f"{s}.{k}" for s, cfg in self.configs.items() for k in cfg]
        keys = " ".join(f"{s}.{k}" for s, cfg in self.configs.items() for k in cfg)
        devices = " ".join(sorted({d for ds in self.nodes.values() for d in ds}))
        detail = f"{MECHANISMS} {devices} {keys}"[: self.max_detail]
        cats = self.categories or ["misconfiguration"]
        pairs = [(e, cats[(i + r) % len(cats)]) for r in range(len(cats)) for i, e in enumerate(entities)]
        return [{"entity": e, "category": c, "detail": detail} for e, c in pairs[: self.max_claims]]
