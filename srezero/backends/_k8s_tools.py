"""What the Kubernetes backend's tools do, in the words an agent needs on a live cluster.

The declarations (:mod:`srezero.tools`) describe the simulator: "web_server or worker", "reloaded
within seconds", "the edge". A live episode offers only the tools the backend serves, with these
descriptions (the tool's, and its arguments' where the simulator's wording is wrong); the argument
schemas and validation are the declarations' own.
"""

from __future__ import annotations

from typing import Any

DEPLOY = "deployment name (its pods carry the label app=NAME)"

#: tool -> (description, {argument: description}); a tool or argument not listed keeps the declaration's
LIVE: dict[str, tuple[str, dict[str, str]]] = {
    "get_status": ("List the namespace's pods (or one deployment's) with readiness, status, restarts, age, node "
                   "and image.", {"service": DEPLOY + "; empty for every pod"}),
    "get_events": ("Kubernetes events of the namespace's workloads and nodes (restarts, OOM kills, probe failures, "
                   "scheduling, rollouts), newest last.", {"entity": "deployment, pod or node; empty for all"}),
    "search_logs": ("Search the recent log lines of a deployment's pods (or one pod), newest last. For the log of "
                    "a crashed container's previous run write kubectl logs POD -p.",
                    {"service": "deployment or pod whose logs to search"}),
    "get_config": ("Show a deployment's image, replicas, limits and first container's environment (env.KEY), and "
                   "the keys of ConfigMap <name>-config if it exists.", {"service": DEPLOY}),
    "get_topology": ("Show the namespace's deployments (ready/desired, image), the nodes (when the credentials may "
                     "list them) and the metric names query_metrics knows.", {}),
    "get_changes": ("Rollouts: ReplicaSet revisions created in the window, newest last (a rollback, a ConfigMap "
                    "edit or scaling is not shown).", {"service": DEPLOY + "; empty for all"}),
    "set_config": ("Change one setting. env.KEY patches the deployment's environment variable (its pods roll to "
                   "pick it up); any other key patches ConfigMap <service>-config, which the app must reload "
                   "itself (restart it if it does not).",
                   {"service": DEPLOY, "key": "env.NAME, or a key of ConfigMap <service>-config"}),
    "restart": ("Rolling restart of a deployment (as kubectl rollout restart), or delete one pod so that its "
                "controller replaces it.", {"target": "a deployment, or one pod"}),
    "rollback": ("Roll a deployment back to its previous revision (as kubectl rollout undo).",
                 {"service": DEPLOY}),
    "scale": ("Scale a deployment to a replica count (a HorizontalPodAutoscaler may change it back).",
              {"service": DEPLOY}),
    "cordon_node": ("Mark a node that runs this namespace's pods unschedulable (or schedulable again); running "
                    "pods stay. Refused for the last schedulable node.", {"node": "node name"}),
    "drain_node": ("Cordon a node and evict this namespace's pods from it (kubectl drain's safeguards: DaemonSet, "
                   "static, controller-less and emptyDir pods stay). Refused for the last schedulable node; it "
                   "does not wait for the evicted pods to be replaced.", {"node": "node name"}),
    "query_metrics": ("Query one metric from Prometheus for a deployment, pod or node over a recent window.",
                      {"target": "deployment, pod or node name",
                       "metric": "metric name, e.g. error_rate, latency_p99_ms (get_topology lists them)"}),
    "get_alerts": ("Prometheus alerts of this namespace (and those without a namespace), pending and firing.", {}),
    "wait": ("Wait in real time without acting, e.g. while a rollout finishes; then show every workload's "
             "rollout state (and the firing alerts when Prometheus is configured). Given a target's metric and a "
             "bound (below or above), the wait ends at the first 30 s Prometheus sample past the bound (at once if "
             "the current one is; every series of the target must be past it).",
             {"seconds": "how long to wait, 10-600 seconds of real time",
              "target": "with metric and below or above: a deployment, pod or node to watch (needs Prometheus)",
              "metric": "with target: the metric whose sample ends the wait early (get_topology lists them)"}),
}


def live_spec(public: dict[str, Any]) -> dict[str, Any]:
    """A declaration's ``public()`` dict with the live wording (``public`` is a fresh copy: edited in place)."""
    text, args = LIVE.get(public["name"], (None, {}))
    if text:
        public["description"] = text
    props = public.get("parameters", {}).get("properties", {})
    for name, desc in args.items():
        if name in props:
            props[name]["description"] = desc
    return public
