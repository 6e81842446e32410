"""Write tools specific to node-level faults (kernel settings, clocks, disks...).

Declared with ``@tool`` like every other tool; :data:`srezero.tools.registry.TOOL_MODULES` loads this
module. Keep each tool's consequences real: see the module docstring of :mod:`srezero.tools.write`.
"""

from __future__ import annotations
