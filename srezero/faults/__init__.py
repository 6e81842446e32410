"""Fault primitives (causes with dynamics) and noise primitives (the ambient events of a normal day)."""
