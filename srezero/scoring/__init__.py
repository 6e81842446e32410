"""Deterministic oracles: diagnosis checklist, mitigation from world state, evidence, collateral, marks.

``diagnosis`` (checklist, P/R/F1), ``detail`` (concrete detail, anti-stuffing), ``naming`` (entity
names and aliases), ``mitigation`` (verification window), ``writes`` (judging each write),
``evidence`` (signals surfaced), ``collateral`` (counterfactual impact of wrong writes), ``marks``
(the formula; its docstring is the spec). docs/scoring.md explains them for users.
"""
