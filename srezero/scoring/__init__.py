"""Deterministic oracles: diagnosis checklist, mitigation from world state, evidence coverage, marks."""
