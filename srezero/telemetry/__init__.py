"""Telemetry an on-call engineer reads: metrics, logs, traces, events, alerts, kernel messages.

All of it is generated from the world's state. Stored state is compact (a metric buffer, per-tick
error causes, discrete events); text such as log lines is rendered lazily, only for the window an
agent asks about, with deterministic per-(entity, tick) randomness so a line never changes between
two queries.
"""
