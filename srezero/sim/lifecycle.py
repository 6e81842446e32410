"""Replica lifecycle: start-up, crash loops with back-off, leaks and OOM kills, eviction.

Runs at the start of every tick, before load is distributed, so a replica that finished starting
takes traffic in the same tick and one that crashed does not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from srezero.sim.clock import PER_TICK_H as _PER_TICK_H
from srezero.sim.queue import release_held

if TYPE_CHECKING:
    from srezero.sim.components import Replica
    from srezero.sim.world import World

EVICT_AFTER_S = 300.0  # pods on a NotReady node are rescheduled after this (Kubernetes tolerationSeconds)
LISTEN_PORT = {"load_balancer": 443, "web_server": 8080, "cache": 6379, "database": 5432, "message_queue": 5672}


def database_url_problem(url: Any, endpoint: str) -> str:
    """Why a process cannot connect with this DATABASE_URL ("" if it can), in libpq's words.

    The database listens at ``endpoint`` (the world's address for it, host:port) with user and
    database ``app``; a missing user or database name takes libpq's default, which is the same here,
    and a missing port means 5432.
    """
    want_host, _, want_port = endpoint.rpartition(":")
    if not url:
        return "KeyError: 'DATABASE_URL' (required environment variable not set)"
    text = str(url)
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return f"psycopg.OperationalError: invalid connection string {text[:60]!r}"
    if parts.scheme not in ("postgres", "postgresql") or not parts.netloc:
        return f"psycopg.OperationalError: invalid connection string {text[:60]!r}"
    host = parts.hostname or ""
    if host != want_host:
        return f'psycopg.OperationalError: could not translate host name "{host[:40]}" to address'
    if (port or 5432) != int(want_port):
        return (f'psycopg.OperationalError: connection to server at "{host}" port {port or 5432} failed: '
                "Connection refused")
    if parts.username not in (None, "app"):
        return f'FATAL: password authentication failed for user "{parts.username[:40]}"'
    if parts.path.strip("/") not in ("", "app"):
        return f'FATAL: database "{parts.path.strip("/")[:40]}" does not exist'
    return ""


def startup_failure(w: World, rep: Replica) -> str:
    """Why a replica cannot start right now ("" if it can). Causes persist until fixed."""
    svc = rep.service
    if not rep.node.up:
        return "node not ready"
    if rep.node.port_lo <= LISTEN_PORT.get(svc.kind, 0):  # an outbound socket took the listen port
        return f"listen tcp :{LISTEN_PORT[svc.kind]}: bind: address already in use"
    cfg = svc.config
    if svc.kind in ("web_server", "worker"):
        problem = database_url_problem(cfg.get("env.DATABASE_URL"), w.state.db_addr)
        if problem:
            return problem
        creds = w.state.db_credential
        if creds and cfg.get("env.CREDENTIALS_VERSION") != creds:
            return "FATAL: password authentication failed for user \"app\""
    release = svc.release_of(rep)
    if release.defect == "crash_on_start":
        return release.message or "panic: runtime error: invalid memory address or nil pointer dereference"
    limit = cfg.get("memory_limit_mb")
    if limit is not None and rep.base_mem_mb > limit:
        return "OOMKilled during startup (memory limit below working set)"
    return ""


def lifecycle(w: World, t: float) -> None:
    """Advance replica states: starts complete, crash loops back off, memory grows, OOM kills."""
    creds = w.state.db_credential
    for rep in w.replica_list:
        state = rep.state
        deploy = rep.service.deploys[-1]
        if deploy.version != rep.version:  # a pod the latest rollout has not reached runs its own release
            deploy = rep.service.release_of(rep)
        if state == "Running" and rep.node.up and not creds and rep.leak_mb_per_h == 0.0 \
                and deploy.defect != "memory_leak" and not rep.over_limit:
            continue  # the common case: nothing to advance
        if state == "Terminated":
            continue
        if state == "Pending":
            _pending(w, rep, t)
            continue
        if not rep.node.up:
            release_held(w, rep)
            rep.state = "Pending"
            rep.ready_at = t + EVICT_AFTER_S
            w.emit("Warning", "NodeNotReady", rep.name, f"node {rep.node.name} is not ready; pod evicted")
            continue
        if state == "Starting" or state == "CrashLoopBackOff":
            if t >= rep.ready_at:
                reason = startup_failure(w, rep)
                if reason:
                    rep.restarts += 1
                    rep.crash_reason = reason
                    backoff = min(300.0, 10.0 * 2 ** min(rep.restarts, 5))
                    rep.ready_at = t + backoff
                    if state != "CrashLoopBackOff" or rep.restarts % 3 == 0:
                        w.emit("Warning", "BackOff", rep.name, f"Back-off restarting failed container: {reason}")
                    rep.state = "CrashLoopBackOff"
                else:
                    rep.state = "Running"
                    rep.crash_reason = ""
                    rep.cred = rep.service.config.get("env.CREDENTIALS_VERSION", "")
                    rep.mem_mb = rep.base_mem_mb
                    if rep.kind == "cache":
                        w.state.cache_ready_since = t
            continue
        # Running: memory only moves when something leaks, so only then is the limit checked
        leaking = deploy.defect == "memory_leak"
        if not leaking and rep.leak_mb_per_h == 0.0 and not rep.over_limit:
            if creds and _rejected(rep, creds):
                w.restart_replica(rep, reason="Error", by_agent=False)
            continue
        rep.mem_mb += (rep.leak_mb_per_h + (deploy.defect_rate if leaking else 0.0)) * _PER_TICK_H
        limit = rep.service.config.get("memory_limit_mb")
        if limit is not None and rep.mem_mb > limit:
            w.emit("Warning", "OOMKilled", rep.name, f"Container exceeded memory limit ({limit}Mi) and was OOMKilled")
            w.dmesg(rep.node, f"Memory cgroup out of memory: Killed process {1000 + rep.index * 37} "
                    f"({rep.kind}) total-vm:{int(rep.mem_mb * 1100)}kB, anon-rss:{int(rep.mem_mb * 1000)}kB")
            w.restart_replica(rep, reason="OOMKilled", by_agent=False)
        elif creds and _rejected(rep, creds):
            w.restart_replica(rep, reason="Error", by_agent=False)


def _rejected(rep: Replica, creds: str) -> bool:
    """Whether the database now refuses the credential a running client started with. A rotation bites on
    the next reconnect (modelled as the next tick); every start-up check (the DATABASE_URL, the credential
    in the config, a memory limit, the release) was passed when the process started and only bites when
    it restarts, so a wrong value pushed with a rollout breaks the pods the rollout reaches, not the ones
    still running."""
    return rep.kind in ("web_server", "worker") and rep.cred != creds


def _pending(w: World, rep: Replica, t: float) -> None:
    """A Pending replica starts when its node is schedulable again; a stateless one is rescheduled
    to another node once the eviction timeout has passed. The database waits for its local volume."""
    node = rep.node
    if node.up and not node.cordoned:
        dest = node
    elif rep.kind == "database" or t < rep.ready_at:
        return
    else:
        free = [n for n in w.topo.nodes if n.up and not n.cordoned]
        if not free:
            return
        dest = min(free, key=lambda n: (len(n.replicas), n.index))
        w.move_replica(rep, dest)
    rep.state = "Starting"
    rep.ready_at = t + rep.service.startup_s
    w.emit("Normal", "Scheduled", rep.name, f"Successfully assigned {rep.name} to {dest.name}")
