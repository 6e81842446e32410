"""The simulated production system: topology, components, traffic and the tick model.

``World`` (in :mod:`srezero.sim.world`) owns a SimPy environment; everything else in this package is
plain data plus the fluid model that turns capacity and load into telemetry each tick.
"""
