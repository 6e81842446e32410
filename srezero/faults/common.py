"""Shared machinery for service-layer primitives: declared signals -> resolved signals and reads,
and the config-value fault whose bad value and envelope probes are derived from the world.

A primitive declares its evidence once, in ``FaultMeta.signals``, with ``<placeholders>`` in the
patterns (``<key>``, ``<version>``, ``<flag>``...). :class:`Declared` resolves them for one world,
so the evidence tracker, the oracle's reads and the docs all come from the same declaration.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from srezero.faults.app import ConfigFault
from srezero.faults.base import Fault, Signal, read_action
from srezero.sim import metrics as M
from srezero.sim.clock import PER_TICK_H
from srezero.sim.readings import backdate_ramp

if TYPE_CHECKING:
    from srezero.sim.components import Disk
    from srezero.sim.world import World

Resolved = tuple[str, str, dict[str, Any], str]

#: The two signals every config-value fault leaves: the value in the live config, and its change.
CFG = Signal("get_config", "service", pattern=r"<key> = <value>(?![\w.])", description="the bad value in the live config")
CHANGE = Signal("get_changes", "any", pattern="<key>", description="the change that set it")


def traced(error: str) -> Signal:
    """A ``Signal.alt`` for a log line a failed request also ends with in a trace: ``get_traces`` (any
    filter) showing ``error``, in the words the trace gives the cause (``srezero.telemetry.traces``)."""
    return Signal("get_traces", "any", pattern=error)


class Declared(Fault):
    """Signals and oracle reads resolved from ``meta.signals``; subclasses fill :meth:`subs`."""

    def signals(self, w: World) -> list[Resolved]:
        # explicit, like oracle_reads: it wins over a second base's (ConfigFault's) in subclasses like TunedConfig
        return Fault.signals(self, w)

    def oracle_reads(self, w: World) -> list[dict[str, Any]]:
        # explicit, so that it wins over a second base's (ConfigFault's) in subclasses like TunedConfig
        return [read_action(*sig) for sig in self.signals(w)]


def esc(text: str) -> str:
    return re.escape(str(text))


class TunedConfig(Declared, ConfigFault):
    """One configuration value pushed outside its safe envelope, with a world-relative bad value.

    Subclasses set ``key`` and implement :meth:`compute_bad` (the value the incident sets) and
    :meth:`probes` (values just outside the envelope on each side: too small still fails, too large
    causes a new problem; ``None`` when a side has no meaning).
    """

    def compute_bad(self, w: World) -> Any:
        return self.params["value"]

    def probes(self, w: World) -> tuple[Any, Any]:
        return None, None

    def bad_value(self, w: World) -> Any:
        if not hasattr(self, "_bad"):
            self._bad = self.compute_bad(w)
        return self._bad

    def subs(self, w: World) -> dict[str, str]:
        return {"key": esc(self.key), "service": self.service, "value": esc(self.bad_value(w))}

    def envelope_violations(self, w: World) -> list[list[dict[str, Any]]]:
        return [[{"tool": "set_config", "args": {"service": self.service, "key": self.key, "value": v}}]
                for v in self.probes(w) if v is not None]


def live(w: World, service: str) -> list:
    """Replicas of ``service`` that exist (running, starting or crash-looping)."""
    return [r for r in w.services[service].replicas if r.state != "Terminated"]


def baseline(w: World, entity: str, metric: str) -> float:
    """A metric's settled healthy value (the last history column: the settled tick itself, recorded
    before faults and noise; earlier columns follow the day's traffic back in time).

    Bad values derive from it rather than from the live reading, so the ground truth of a seed is
    the same under every noise profile.
    """
    return float(w.buf[w.row_of[(entity, metric)], w.history_cols - 1])


def healthy_db_lat(w: World) -> float:
    """The database's settled mean query latency (ms)."""
    return baseline(w, "database", "latency_p50_ms") / 0.8


def backdate_fill(w: World, disk: Disk, gb: float, gb_per_h: float) -> None:
    """``gb`` put on ``disk`` at the onset had been written at ``gb_per_h`` before it: its usage series
    climbs to it instead of jumping (:func:`srezero.sim.readings.backdate_ramp`)."""
    row = disk.node.row + (M.N_ROOT if disk is disk.node.disks[0] else M.N_DATA)
    to_pct = 100.0 / disk.capacity_gb
    backdate_ramp(w, row, gb * to_pct, gb_per_h * PER_TICK_H * to_pct, cap=100.0)
