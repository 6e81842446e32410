"""Twin worlds: two builds of the control task under one seed run identically, noise included, so one
intervention in one of them and a comparison with its untouched twin isolates what that intervention
causes. Shared by the twin tests of tests/sim (the model, nodes, write tools)."""

from __future__ import annotations

from typing import Any

import srezero
from srezero.sim.components import Node, Replica
from srezero.sim.world import World
from srezero.tools.context import ToolContext
from srezero.tools.registry import load_tools

CONTROL = "inc-011"  # a false alarm: nothing in it is broken
SEEDS = (0, 3)
#: the services every request goes through: a node that holds one of them is not a quiet node
SHARED = ("load_balancer", "cache", "database")


def at(w: World, entity: str, metric: str) -> float:
    """The true (noise-free) value of the last recorded tick."""
    return float(w.buf[w.row_of[(entity, metric)], w.col])


def twins(seed: int) -> tuple[World, World]:
    spec = srezero.get_task(CONTROL)
    plain, touched = World.build(spec, seed), World.build(spec, seed)
    for w in (plain, touched):
        w.advance(600.0)
    for _ in range(10):  # a pod live noise restarted is back before anything is compared
        if all(r.state == "Running" for r in plain.replica_list):
            break
        advance(30.0, plain, touched)
    assert at(plain, "load_balancer", "error_rate") == at(touched, "load_balancer", "error_rate")
    return plain, touched


def advance(seconds: float, *worlds: World) -> None:
    for w in worlds:
        w.advance(seconds)


def act(plain: World, touched: World, tool: str, **args: Any) -> str:
    """Run a tool on ``touched`` as an episode does (validated arguments, then the tool's simulated cost
    passes), and let the same time pass in ``plain``. Returns the tool's text."""
    spec = load_tools()[tool]
    text = spec.fn(ToolContext(touched), **spec.validate(args)).text
    advance(spec.cost_s, plain, touched)
    return text


def read(w: World, tool: str, **args: Any) -> str:
    """A read tool's text, without letting time pass (so twins stay aligned)."""
    spec = load_tools()[tool]
    return spec.fn(ToolContext(w), **spec.validate(args)).text


def quiet_web(w: World, link: bool = False) -> tuple[Replica, Replica]:
    """A web replica whose node runs no load balancer, cache or database, and a peer on another node.
    With ``link``, for a cause every replica on the node pays (a lossy NIC): a node whose replicas no
    request crosses, so no load balancer, cache, broker or database primary (a standby may be there)."""
    webs = w.services["web_server"].replicas
    primary = w.topo.db_primary()
    if link:
        def shared(o: Replica) -> bool:
            return o.kind in ("load_balancer", "cache", "message_queue") or o is primary
    else:
        def shared(o: Replica) -> bool:
            return o.kind in SHARED
    rep = next(r for r in webs if not any(shared(o) for o in r.node.replicas))
    peer = next(r for r in webs if r.node is not rep.node)
    return rep, peer


def node_of(w: World, name: str) -> Node:
    return w.topo.node_by_name[name]
