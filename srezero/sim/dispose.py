"""Breaking a finished world's reference cycles, so it is freed at once rather than by the cyclic
garbage collector.

A world's parts point at each other (replicas at their service and node and back, the alert book and
every SimPy process at the world), so a dropped world is freed only when a garbage collection finds
it, which costs time in whatever episode runs then. :func:`dispose` cuts those links. Only for a world
nobody can read any more: the collateral replay's counterfactual once compared, a sweep episode once
its record is made. A disposed world is unusable (its attributes are gone), never half-usable.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from srezero.sim.world import World


def dispose(w: World) -> None:
    """Cut the reference cycles of a world nobody reads any more; the world is unusable afterwards."""
    env = w.env
    # A pending event holds the processes waiting on it (its callbacks), each of which holds the event
    # and a suspended generator that holds the world: dropping the callbacks closes the generators
    # while the world is still whole, as the garbage collector would.
    for *_, event in env._queue:
        event.callbacks = None
    env.__dict__.clear()  # the queue, and SimPy's methods bound to the environment itself
    # services and nodes list their replicas and disks, which point back; the lists are left whole
    for rep in w.topo.replicas.values():
        rep.service = rep.node = None  # type: ignore[assignment]
    for disk in w.topo.disks.values():
        disk.node = None  # type: ignore[assignment]
    w.__dict__.clear()
