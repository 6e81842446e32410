"""Simulated time constants shared by the model, the tools and the oracles."""

TICK_S = 30.0  # one tick of the fluid model, and the resolution of every metric series
PER_TICK_H = TICK_S / 3600.0
