"""Sweeps: tasks x agents x seeds, run in parallel and resumably into a run directory.

``records`` (layout, atomic writes, manifest, CSV), ``stats`` (bootstrap summary), ``runner``
(planning, executors, progress). The layout is documented in docs/records.md.
"""
