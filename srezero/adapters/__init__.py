"""Front ends for other harnesses: Gymnasium, MCP, inspect_ai (and openbench through inspect).

Each adapter lives in its own module and imports its framework (an optional extra) at module
import, so ``import srezero`` and ``import srezero.adapters`` never pull in a framework. Every
adapter derives its tools from the one declaration in :mod:`srezero.tools.registry` and drives the
same :class:`~srezero.episode.Episode`, so scoring and determinism are those of the core API.
See docs/integrations.md.
"""
