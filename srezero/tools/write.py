"""Write tools: they change the world, their effects take simulated time, and every one has a cost.

Restarts drop in-flight work and cold-start caches; scaling takes start-up time and can exhaust a
node's memory or the database's connections; rolling back a healthy release reverts a change the
schema needs; a failover with replication lag loses writes; draining a node evicts everything on
it, and stateful replicas cannot follow.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from srezero.sim import changes
from srezero.sim import config as cfg
from srezero.sim.components import Deploy
from srezero.tools.read import _node, _service, unknown_service
from srezero.tools.registry import ToolError, ToolOutput, tool

if TYPE_CHECKING:
    from srezero.sim.components import Replica, Service
    from srezero.sim.world import World
    from srezero.tools.context import ToolContext

AGENT = changes.AGENT_AUTHOR  # the agent's changes are stamped when it made them
SCALABLE = ("web_server", "worker")
MAX_REPLICAS = 12


@tool("write", 20, target_arg="target")
def restart(ctx: ToolContext,
            target: Annotated[str, "a service (rolling restart of every replica) or one replica"]) -> ToolOutput:
    """Restart a service (rolling, one replica at a time; a replica that does not come up halts the rollout)
    or a single replica. In-flight work is dropped."""
    w = ctx.world
    if target in w.services:
        reps = [r for r in w.services[target].replicas if r.state != "Terminated"]
        changes.roll(w, w.services[target])
        w.change(target, "restart", f"rolling restart of {len(reps)} replica(s)", AGENT)
        return ToolOutput(f"rolling restart of {target} started ({len(reps)} replica(s), "
                          f"~{w.services[target].startup_s:.0f}s start-up each)")
    rep = w.topo.replicas.get(target)
    if rep is None or rep.state == "Terminated":
        raise unknown_service(w, target, "service or replica")
    w.restart_replica(rep, reason="Restart", by_agent=True)
    w.change(rep.kind, "restart", f"restarted {rep.name}", AGENT)
    return ToolOutput(f"restarting {rep.name} (start-up takes ~{rep.service.startup_s:.0f}s)")


@tool("write", 30, target_arg="service")
def rollback(ctx: ToolContext, service: Annotated[str, "service to roll back to its previous release"]) -> ToolOutput:
    """Roll a service back to its previous release (a rolling restart onto the older version)."""
    w = ctx.world
    svc = w.services[_service(ctx, service)]
    if len(svc.deploys) < 2:
        raise ToolError(f"{service} has no previous release to roll back to")
    current, previous = svc.deploys[-1], svc.deploys[-2]
    target = Deploy(previous.version, previous.at, previous.author, previous.message, previous.defect,
                    previous.defect_rate, previous.needed_by_schema)
    if current.needed_by_schema and not current.defect:
        # the older code predates a schema migration the current release shipped with
        target.defect = "endpoint_errors"
        target.defect_rate = 0.08
        w.destroyed.append(f"rolled back a healthy release of {service} ({current.version}) that the schema needs")
    w.deploy(svc, target, "rollback", AGENT)
    # like `kubectl rollout undo`, a second rollback returns to the release just undone
    w.change(service, "rollback", f"rolled back {current.version} -> {previous.version}", AGENT)
    return ToolOutput(f"rolling back {service} from {current.version} to {previous.version}, one replica at a time "
                      f"(~{svc.startup_s:.0f}s start-up each)")


@tool("write", 20, target_arg="service")
def scale(ctx: ToolContext,
          service: Annotated[str, "web_server or worker"],
          replicas: Annotated[int, Field(ge=0, le=MAX_REPLICAS), "desired replica count"]) -> ToolOutput:
    """Scale a stateless service to a replica count. New replicas need start-up time and resources."""
    w = ctx.world
    svc: Service = w.services[_service(ctx, service)]
    if service not in SCALABLE:
        raise ToolError(f"{service} cannot be scaled; scalable services: {', '.join(SCALABLE)}")
    live = [r for r in svc.replicas if r.state != "Terminated"]
    before = len(live)
    if replicas > before:
        for _ in range(replicas - before):
            w.add_replica(svc)
    elif replicas < before:
        for rep in sorted(live, key=lambda r: (r.state == "Running", -r.index))[: before - replicas]:
            w.remove_replica(rep)
    if replicas == 0:
        w.destroyed.append(f"scaled {service} to zero replicas")
    w.change(service, "scale", f"replicas {before} -> {replicas}", AGENT)
    return ToolOutput(f"scaling {service} from {before} to {replicas} replica(s)")


@tool("write", 15, target_arg="service")
def set_config(ctx: ToolContext,
               service: Annotated[str, "service whose configuration to change"],
               key: Annotated[str, "config key as shown by get_config"],
               value: Annotated[str | int | float | bool, "new value"]) -> ToolOutput:
    """Change one configuration value. It is reloaded within seconds; env.* keys roll the replicas one at a
    time, and a replica that does not come up halts the rollout. A value the service's own config
    validation refuses (a negative TTL, a pool of zero connections) changes nothing."""
    w = ctx.world
    svc = w.services[_service(ctx, service)]
    typ = cfg.key_type(service, key)
    if typ is None or (key not in svc.config and not key.startswith(("feature_flag.", "env."))):
        raise ToolError(f"{service} has no config key {key!r}; get_config({service!r}) lists them")
    if key.startswith("backend_weight.") and key not in svc.config:
        raise ToolError(f"{service} has no config key {key!r}; get_config({service!r}) lists them")
    if (service, key) in cfg.READ_ONLY:
        raise ToolError(f"{service}.{key} is read-only: it reports live state and cannot be set")
    try:
        new = cfg.coerce(value, typ)
    except ValueError as exc:
        raise ToolError(f"bad value for {service}.{key}: {exc}") from None
    try:
        cfg.check_range(service, key, new)
    except ValueError as exc:
        raise ToolError(f"{exc}: its config validation refuses the reload, so nothing was changed") from None
    old = svc.config.get(key)
    svc.config[key] = new
    w.change(service, "config", changes.edit(key, old, new), AGENT)
    w.emit("Normal", "ConfigChanged", service, f"configmap {service}-config updated ({key})")
    if key.startswith("env."):
        changes.roll(w, svc)
        return ToolOutput(f"{service}.{key} = {new!r}; replicas are restarting to pick it up")
    return ToolOutput(f"{service}.{key} changed from {old!r} to {new!r}")


def _promote(w: World, new_primary: Replica) -> Generator[Any, Any, None]:
    yield w.env.timeout(20.0)
    if new_primary.state == "Starting":
        new_primary.state = "Running"
    w.emit("Normal", "Promoted", new_primary.name, f"{new_primary.name} promoted to primary")


@tool("write", 30, target_arg="service")
def failover(ctx: ToolContext,
             service: Annotated[str, "the database"] = "database") -> ToolOutput:
    """Promote the database replica to primary (writes pause ~20s; replication lag is lost)."""
    w = ctx.world
    if _service(ctx, service) != "database":
        raise ToolError("only the database supports failover")
    old, new = w.topo.db_primary(), w.topo.db_standby()
    if new.state != "Running":
        raise ToolError(f"cannot fail over: replica {new.name} is {new.state}")
    lag = w.state.replication_lag_s
    if lag > 5.0:
        w.destroyed.append(f"failed over with {lag:.0f}s of replication lag; those writes were lost")
        w.state.data_lost = True
    old.role, new.role = "replica", "primary"
    new.state = "Starting"
    new.ready_at = w.now + 20.0
    w.collateral_errors += w.services["database"].rps * 20.0 * 0.1
    w.env.process(_promote(w, new))
    w.state.replication_lag_s = 0.0
    w.change("database", "failover", f"promoted {new.name}; {old.name} is now a replica", AGENT)
    w.emit("Normal", "Failover", "database", f"failover started: {old.name} -> {new.name}")
    return ToolOutput(f"failing over database: promoting {new.name}; {old.name} becomes a replica "
                      f"(replication lag at failover: {lag:.1f}s)")


@tool("write", 30, target_arg="node")
def drain_node(ctx: ToolContext, node: Annotated[str, "node to cordon and drain"]) -> ToolOutput:
    """Cordon a node and evict its replicas; stateless ones reschedule elsewhere, stateful ones cannot."""
    w = ctx.world
    n = _node(ctx, node)
    others = [x for x in w.topo.nodes if x is not n and x.up and not x.cordoned]
    if not others:
        raise ToolError("no other schedulable node to move replicas to")
    n.cordoned = True
    moved, stuck = [], []
    for rep in list(n.replicas):
        if rep.state == "Terminated":
            continue
        if rep.kind == "database":
            rep.state = "Pending"
            stuck.append(rep.name)
            w.emit("Warning", "FailedScheduling", rep.name,
                   f"0/{len(w.topo.nodes)} nodes are available: volume node affinity conflict")
            if rep.role == "primary":
                w.destroyed.append(f"drained {node} and took the database primary {rep.name} offline")
            continue
        dest = min(others, key=lambda x: (len(x.replicas), x.index))
        w.restart_replica(rep, reason="Evicted", by_agent=True)
        w.move_replica(rep, dest)
        moved.append(f"{rep.name}->{dest.name}")
    w.change("node", "drain", f"cordoned and drained {node}", AGENT)
    w.emit("Normal", "NodeNotSchedulable", node, f"Node {node} status is now: NodeNotSchedulable")
    text = f"cordoned {node}; evicted {len(moved)} replica(s)" + (f": {', '.join(moved)}" if moved else "")
    if stuck:
        text += f"; {', '.join(stuck)} cannot move (local volume) and is Pending"
    return ToolOutput(text)
