"""openbench registration: ``bench eval srezero`` runs the inspect task :func:`incident`.

openbench reads the ``openbench.benchmarks`` entry point and calls this function, which must
return ``openbench.utils.BenchmarkMetadata`` objects; the benchmark itself is the inspect task in
:mod:`srezero.adapters.inspect_task`, so scoring is the same as ``inspect eval srezero/incident``.
"""

from __future__ import annotations

from typing import Any

BENCHMARK = {
    "name": "srezero incidents",
    "description": "Deterministic simulated production incidents: investigate with read tools, mitigate with "
                   "write tools, submit a structured diagnosis; scored by state-based oracles (marks 0-100).",
    "category": "community",
    "tags": ["agents", "tool-use", "sre", "incident-response", "simulation"],
    "module_path": "srezero.adapters.inspect_task",
    "function_name": "incident",
    "is_alpha": False,
}


def benchmarks() -> dict[str, Any]:
    """``{"srezero": BenchmarkMetadata(...)}`` for openbench's registry (imported only by openbench)."""
    from openbench.utils import BenchmarkMetadata

    return {"srezero": BenchmarkMetadata(**BENCHMARK)}
