"""Baseline agents for srezero. Each implements the protocol in :mod:`srezero.agents.protocol`."""
