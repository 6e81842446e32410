"""Imports every primitive module so that ``@register`` fills the registry. Add new modules here."""

from srezero.faults import app, database, disk  # noqa: F401
