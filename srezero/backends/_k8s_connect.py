"""Building the Kubernetes client for :class:`~srezero.backends.k8s.KubernetesBackend`: which
configuration (kubeconfig before in-cluster, as kubectl), which cluster it names, no retries.

Kept apart from :mod:`k8s` to keep that module short; the ``kubernetes`` client is imported here only
when a backend is built.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from srezero.backends.prometheus import cap


class BackendUnavailable(RuntimeError):
    """The backend cannot start (client library missing, no kubeconfig, no such namespace...)."""


@dataclass(frozen=True)
class ClusterInfo:
    """Which cluster the backend talks to: printed before an episode so a wrong context is seen."""

    host: str
    context: str
    source: str  # the kubeconfig file(s), "in-cluster service account", or "injected client"

    def line(self, namespace: str) -> str:
        return f"API server {self.host}, context {self.context}, namespace {namespace} (from {self.source})"


def kubeconfig_files(explicit: str | None) -> list[str]:
    """The kubeconfig files kubectl would read: ``explicit``, else ``$KUBECONFIG``, else ``~/.kube/config``."""
    raw = explicit or os.environ.get("KUBECONFIG") or os.path.join("~", ".kube", "config")
    return [os.path.expanduser(p) for p in raw.split(os.pathsep) if p]


def connect(kubeconfig: str | None, context: str | None) -> tuple[Any, Any, ClusterInfo]:
    """CoreV1Api and AppsV1Api on a private ``Configuration``, and the cluster they name.

    As kubectl: an explicit ``kubeconfig``/``context``, else ``$KUBECONFIG`` or ``~/.kube/config``; the
    in-cluster service account only when no kubeconfig file exists and none was asked for (a CI pod
    with ``KUBECONFIG`` set must not silently use its own service account).
    """
    try:
        import yaml
        from kubernetes import client, config
        from urllib3.util.retry import Retry
    except ImportError:
        raise BackendUnavailable('the Kubernetes backend needs the client: pip install "srezero[k8s]"') from None
    cfg = client.Configuration()  # our own: loading does not change the process-wide default
    files = kubeconfig_files(kubeconfig)
    try:
        if kubeconfig or context or any(os.path.isfile(f) for f in files):
            path = os.pathsep.join(files)
            config.load_kube_config(config_file=path, context=context, client_configuration=cfg)
            _, active = config.list_kube_config_contexts(config_file=path)
            name = context or (active or {}).get("name", "?")
            info = ClusterInfo(cfg.host, name, ", ".join(files))
        else:
            config.load_incluster_config(client_configuration=cfg)
            info = ClusterInfo(cfg.host, "(in-cluster)", "in-cluster service account")
    except (config.ConfigException, OSError, TypeError, ValueError, KeyError, AttributeError,
            yaml.YAMLError) as exc:
        where = ", ".join(files) if kubeconfig or context or any(os.path.isfile(f) for f in files) else \
            f"no kubeconfig ({', '.join(files)}) and not in a cluster"
        raise BackendUnavailable(f"cannot load a Kubernetes configuration ({where}): {cap(str(exc))}") from None
    # no retries at all: urllib3 gives each retry a fresh timeout, so a silent API server would cost
    # (1 + retries) x the request timeout per call; one attempt keeps a call within about the timeout
    cfg.retries = Retry(total=None, connect=0, read=0, redirect=3, status=0, other=0)
    api = client.ApiClient(cfg)
    return client.CoreV1Api(api), client.AppsV1Api(api), info


def injected_info(core: Any) -> ClusterInfo:
    """What can be said of an injected client's cluster (its configured host, when it has one)."""
    host = getattr(getattr(getattr(core, "api_client", None), "configuration", None), "host", None)
    return ClusterInfo(str(host or "?"), "(injected client)", "injected client")
