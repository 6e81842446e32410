"""Imports every primitive module so that ``@register`` fills the registry. Add new modules here."""

from srezero.faults import app, database, disk  # noqa: F401, I001  (one line per helper)
from srezero.faults import app_config, app_release, cache, database_storage, lb, queue  # noqa: F401  (helper A1)
from srezero.faults import hardware, kernel, metastable  # noqa: F401  (helper A2: node-level primitives)
