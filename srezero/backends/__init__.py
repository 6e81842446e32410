"""Backends other than the simulator. :mod:`.k8s` maps the tools onto a live Kubernetes namespace
(extra ``k8s``; the client is imported only when a backend is built), :mod:`.prometheus` reads
metrics over Prometheus's HTTP API, and :mod:`.live_episode` runs an agent against them."""
