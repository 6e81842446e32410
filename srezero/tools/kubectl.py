"""kubectl-style commands, translated onto the declared tools (same cost, same scoring).

People and agents trained on Kubernetes type what they know; each command becomes exactly one
call of a declared tool, so ``kubectl logs worker`` and ``search_logs(service="worker")`` are the
same action with the same cost, observation and evidence credit. Nothing here touches the world:
:func:`translate` only rewrites text, and the tool validates the arguments as usual.

==================================================  ============================================
command                                             tool call
==================================================  ============================================
``get pods [-l app=D]``                             ``get_status()`` / ``get_status(service=D)``
``get pod POD``                                     ``get_status(service=<POD's deployment>)``
``get deploy [D]`` / ``rollout status deploy/D``     ``get_status([service=D])``
``get events [--field-selector involvedObject.name=X]``  ``get_events([entity=X])``
``get nodes``                                       ``get_topology()``
``get cm D-config``                                 ``get_config(service=D)``
``describe pod|node|deploy X``                      ``get_events(entity=X)``
``logs X [-p] [--tail N] [--since 10m]``             ``search_logs(service=X[, limit=N][, window_s=S])``
``top pod POD [--sort-by=cpu|memory]``               ``query_metrics(target=POD, metric=cpu_cores|memory_mb)``
``top node NODE``                                   ``node_diagnostics(node=NODE, check="top")``
``rollout restart deploy/D``                        ``restart(target=D)``
``rollout undo deploy/D``                           ``rollback(service=D)``
``rollout history deploy/D``                        ``get_changes(service=D)``
``scale deploy/D --replicas N``                     ``scale(service=D, replicas=N)``
``set env deploy/D KEY=VALUE`` (``KEY-`` empties)   ``set_config(service=D, key="env.KEY", value=VALUE)``
``delete pod POD``                                  ``restart(target=POD)``
``cordon NODE`` / ``uncordon NODE``                 ``cordon_node(node=NODE[, uncordon=True])``
``drain NODE [--ignore-daemonsets ...]``            ``drain_node(node=NODE)``
==================================================  ============================================

Deployment names are the service names (``web_server``, ``worker``...), their Kubernetes spelling
(``web-server``) or the short forms (``lb``, ``web``, ``cache``, ``db``, ``mq``, ``worker``); any
other name passes through unchanged. Against a live cluster (``translate(text, sim_names=False)``,
or anything parsed inside ``with live_names():``) names are never rewritten. ``-n NS`` is accepted
and ignored: an episode runs in one namespace. ``logs --previous`` widens the look-back to an hour
(the previous container's lines are older); ``--tail -1`` means the most lines a search returns.
"""

from __future__ import annotations

import contextlib
import re
import shlex
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from srezero.tools.registry import ToolError, load_tools

SHORT = {"lb": "load_balancer", "web": "web_server", "cache": "cache", "db": "database",
         "mq": "message_queue", "worker": "worker"}
SERVICES = tuple(SHORT.values())
SUPPORTED = ("get pods [-l app=DEPLOY] | get pod POD | get deploy [DEPLOY] | get events | get nodes | get cm DEPLOY-config",
             "describe pod|node|deploy NAME",
             "logs POD|DEPLOY [--previous] [--tail N] [--since 10m]",
             "top pod POD [--sort-by=cpu|memory] | top node NODE",
             "rollout restart|undo|status|history deploy/DEPLOY",
             "scale deploy/DEPLOY --replicas N",
             "set env deploy/DEPLOY KEY=VALUE",
             "delete pod POD",
             "cordon|uncordon|drain NODE")
RESOURCES = {"pods": "pod", "pod": "pod", "po": "pod", "deployments": "deploy", "deployment": "deploy",
             "deploy": "deploy", "deployment.apps": "deploy", "deployments.apps": "deploy", "events": "event",
             "event": "event", "ev": "event", "nodes": "node", "node": "node", "no": "node",
             "configmaps": "cm", "configmap": "cm", "cm": "cm"}
MAX_TAIL = 200
#: False on a live cluster (srezero.backends.live_episode): names are the cluster's own, no short forms.
_SIM_NAMES: ContextVar[bool] = ContextVar("sim_names", default=True)
_DURATION = re.compile(r"^(\d+)(s|m|h)$")


def supported_text() -> str:
    return "supported kubectl commands: " + "; ".join(SUPPORTED)


def _fail(message: str) -> ToolError:
    return ToolError(f"{message}; {supported_text()}")


def deployment(name: str) -> str:
    """A deployment name as the tools know it: service name, short form or Kubernetes spelling."""
    if not _SIM_NAMES.get():
        return name
    if name in SHORT:
        return SHORT[name]
    dashed = name.replace("-", "_")
    return dashed if dashed in SERVICES else name


def pod_deployment(pod: str) -> str | None:
    """The deployment a pod name belongs to (``web-x7k2p`` -> web_server), if its prefix is known.

    On a live cluster a Deployment's pods are ``<deployment>-<replicaset hash>-<suffix>``.
    """
    parts = pod.split("-")
    if not _SIM_NAMES.get():
        return "-".join(parts[:-2]) if len(parts) >= 3 else None
    for cut in (1, 2):
        if len(parts) > cut:
            prefix = "-".join(parts[:-cut])
            svc = deployment(prefix)
            if svc in SERVICES:
                return svc
    return None


def _split(cmd: str, tokens: list[str], valued: dict[str, str], flags: dict[str, str]) -> tuple[list[str], dict[str, Any]]:
    """Separate positionals from flags. ``valued``/``flags`` map every spelling to a canonical name."""
    pos: list[str] = []
    got: dict[str, Any] = {}
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        i += 1
        if not tok.startswith("-") or tok == "-" or tok == "-1":
            pos.append(tok)
            continue
        name, eq, value = tok.partition("=")
        if name in valued:
            if not eq:
                if i >= len(tokens):
                    raise ToolError(f"kubectl {cmd}: flag {name} needs a value")
                value = tokens[i]
                i += 1
            got[valued[name]] = value
        elif name in flags and not eq:
            got[flags[name]] = True
        else:
            # -w is parsed only to be refused with its own reason: it is not offered here
            known = sorted(set(valued) | {f for f, opt in flags.items() if opt != "watch"})
            raise ToolError(f"kubectl {cmd}: unsupported flag {name!r}"
                            + (f"; this command accepts {', '.join(known)}" if known else "; it takes no flags"))
    return pos, got


_NS = {"-n": "namespace", "--namespace": "namespace"}


def _one(cmd: str, pos: list[str], what: str) -> str:
    if len(pos) != 1:
        raise ToolError(f"kubectl {cmd} needs exactly one {what}, got {len(pos)}" + (f": {' '.join(pos)}" if pos else ""))
    return pos[0]


def _resource_name(cmd: str, pos: list[str], kinds: tuple[str, ...]) -> tuple[str, str]:
    """``deploy/X``, ``deploy X`` or ``pod X`` -> (kind, name), checking the kind is one of ``kinds``."""
    if len(pos) == 1 and "/" in pos[0]:
        res, _, name = pos[0].partition("/")
    elif len(pos) == 2:
        res, name = pos
    else:
        raise ToolError(f"kubectl {cmd} needs a {'|'.join(kinds)}/NAME argument, e.g. kubectl {cmd} {kinds[0]}/worker")
    kind = RESOURCES.get(res)
    if kind not in kinds or not name:
        raise ToolError(f"kubectl {cmd} works on {'|'.join(kinds)} resources, not {res!r}")
    return kind, name


def _selector(cmd: str, sel: str) -> str:
    key, eq, value = sel.partition("=")
    if not eq or key not in ("app", "app.kubernetes.io/name") or not value or "," in value:
        raise ToolError(f"kubectl {cmd}: only the selector -l app=DEPLOY is supported, not {sel!r}")
    return deployment(value)


def _duration(flag: str, text: str) -> int:
    m = _DURATION.match(text)
    if not m:
        raise ToolError(f"{flag} takes a duration like 90s, 10m or 1h, not {text!r}")
    seconds = int(m.group(1)) * {"s": 1, "m": 60, "h": 3600}[m.group(2)]
    if not 60 <= seconds <= 7200:
        raise ToolError(f"{flag} must be between 1m and 2h (the log search window), not {text}")
    return seconds


def _get(pos: list[str], opts: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    if not pos:
        raise _fail("kubectl get needs a resource type")
    kind = RESOURCES.get(pos[0])
    rest = pos[1:]
    if kind == "pod":
        if "selector" in opts:
            if rest:
                raise ToolError("kubectl get pods: give either a pod name or -l app=DEPLOY, not both")
            return "get_status", {"service": _selector("get pods", opts["selector"])}
        if not rest:
            return "get_status", {}
        pod = _one("get pod", rest, "pod name")
        svc = pod_deployment(pod)
        if svc is None:
            raise ToolError(f"kubectl get pod: cannot tell which deployment {pod!r} belongs to; "
                            "use kubectl get pods -l app=DEPLOY or kubectl describe pod NAME")
        return "get_status", {"service": svc}
    if "selector" in opts:
        raise ToolError(f"kubectl get {pos[0]}: -l is only supported for pods")
    if kind == "deploy":
        if not rest:
            return "get_status", {}
        return "get_status", {"service": deployment(_one("get deploy", rest, "deployment name"))}
    if kind == "event":
        if rest:
            raise ToolError("kubectl get events takes no name; filter with --field-selector involvedObject.name=NAME")
        field = opts.get("field_selector")
        if field is None:
            return "get_events", {}
        key, eq, value = field.partition("=")
        if key != "involvedObject.name" or not eq or not value:
            raise ToolError(f"kubectl get events: only --field-selector involvedObject.name=NAME is supported, not {field!r}")
        return "get_events", {"entity": deployment(value)}
    if kind == "node":
        if rest:
            raise ToolError("kubectl get nodes takes no name; use kubectl describe node NAME or kubectl top node NAME")
        return "get_topology", {}
    if kind == "cm":
        name = _one("get cm", rest, "configmap name")
        return "get_config", {"service": deployment(name.removesuffix("-config"))}
    raise _fail(f"kubectl get: unsupported resource type {pos[0]!r}")


def _logs(pos: list[str], opts: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    if opts.get("follow"):
        raise ToolError("kubectl logs -f (streaming) is not supported; each action returns the recent lines")
    if "selector" in opts:
        if pos:
            raise ToolError("kubectl logs: give either a name or -l app=DEPLOY, not both")
        target = _selector("logs", opts["selector"])
    else:
        name = _one("logs", pos, "pod or deploy/NAME")
        res, slash, rest = name.partition("/")
        if slash:
            kind = RESOURCES.get(res)
            if kind not in ("pod", "deploy") or not rest:
                raise ToolError(f"kubectl logs works on pods and deployments, not {res!r}")
            target = deployment(rest) if kind == "deploy" else rest
        else:
            target = deployment(name)
    args: dict[str, Any] = {"service": target}
    if "tail" in opts:
        try:
            tail = int(opts["tail"])
        except ValueError:
            raise ToolError(f"--tail takes a number of lines, not {opts['tail']!r}") from None
        if tail == -1:
            tail = MAX_TAIL
        if not 1 <= tail <= MAX_TAIL:
            raise ToolError(f"--tail must be between 1 and {MAX_TAIL} (or -1 for the most lines), not {tail}")
        args["limit"] = tail
    if "since" in opts:
        args["window_s"] = _duration("--since", opts["since"])
    elif opts.get("previous"):
        args["window_s"] = 3600
    return "search_logs", args


def _top(pos: list[str], opts: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    if not pos:
        raise _fail("kubectl top needs pod or node")
    kind = RESOURCES.get(pos[0])
    if kind not in ("pod", "node"):
        raise ToolError(f"kubectl top works on pods and nodes, not {pos[0]!r}")
    if "selector" in opts:
        raise ToolError("kubectl top: metrics are per pod here; name one: kubectl top pod POD (get pods lists them)")
    if kind == "node":
        if "sort_by" in opts:
            raise ToolError("kubectl top node: --sort-by is only supported for pods")
        if len(pos) != 2:
            raise ToolError("kubectl top node needs one node name: kubectl top node NODE (get nodes lists them)")
        return "node_diagnostics", {"node": pos[1], "check": "top"}
    if len(pos) != 2:
        raise ToolError("kubectl top pod needs one pod name: kubectl top pod POD [--sort-by=cpu|memory] "
                        "(get pods lists them)")
    sort = opts.get("sort_by", "cpu")
    metric = {"cpu": "cpu_cores", "memory": "memory_mb"}.get(sort)
    if metric is None:
        raise ToolError(f"kubectl top pod: --sort-by takes cpu or memory, not {sort!r}")
    return "query_metrics", {"target": pos[1], "metric": metric}


def _rollout(pos: list[str], opts: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    if not pos:
        raise _fail("kubectl rollout needs restart, undo, status or history")
    sub, rest = pos[0], pos[1:]
    tool = {"restart": ("restart", "target"), "undo": ("rollback", "service"), "status": ("get_status", "service"),
            "history": ("get_changes", "service")}.get(sub)
    if tool is None:
        raise _fail(f"unsupported kubectl rollout {sub!r}")
    if "to_revision" in opts and sub != "undo":
        raise ToolError("--to-revision only applies to kubectl rollout undo")
    if opts.get("to_revision") not in (None, "0"):
        raise ToolError("kubectl rollout undo --to-revision is not supported; undo returns to the previous release")
    _, name = _resource_name(f"rollout {sub}", rest, ("deploy",))
    return tool[0], {tool[1]: deployment(name)}


def _scale(pos: list[str], opts: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    _, name = _resource_name("scale", pos, ("deploy",))
    if "replicas" not in opts:
        raise ToolError("kubectl scale needs --replicas N")
    try:
        n = int(opts["replicas"])
    except ValueError:
        raise ToolError(f"--replicas takes a whole number, not {opts['replicas']!r}") from None
    return "scale", {"service": deployment(name), "replicas": n}


def _set(pos: list[str], opts: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    if not pos or pos[0] != "env":
        raise _fail("only kubectl set env is supported")
    rest = pos[1:]
    pairs = [p for p in rest if "=" in p or (p.endswith("-") and "/" not in p and len(p) > 1)]
    res = [p for p in rest if p not in pairs]
    pairs += opts.get("env", [])
    _, name = _resource_name("set env", res, ("deploy",))
    if len(pairs) != 1:
        raise ToolError(f"kubectl set env changes one variable per action (KEY=VALUE or KEY-), got {len(pairs)}")
    pair = pairs[0]
    if "=" in pair:
        key, _, value = pair.partition("=")
    else:
        key, value = pair[:-1], ""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", key):
        raise ToolError(f"kubectl set env: {key!r} is not a valid variable name")
    return "set_config", {"service": deployment(name), "key": f"env.{key}", "value": value}


def _node_cmd(cmd: str, pos: list[str]) -> tuple[str, dict[str, Any]]:
    node = _one(cmd, pos, "node name")
    if node.startswith(("node/", "nodes/")):
        node = node.partition("/")[2]
    if cmd == "drain":
        return "drain_node", {"node": node}
    if "cordon_node" not in load_tools():
        raise ToolError(f"kubectl {cmd} is not available here; kubectl drain NODE cordons and evicts")
    return "cordon_node", {"node": node, **({"uncordon": True} if cmd == "uncordon" else {})}


# flag spellings per verb: (valued flags, boolean flags), each spelling -> canonical name
_FLAGS: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    "get": ({"-l": "selector", "--selector": "selector", "-o": "output", "--output": "output",
             "--field-selector": "field_selector"}, {"-w": "watch", "--watch": "watch"}),
    "describe": ({}, {}),
    "logs": ({"--tail": "tail", "--since": "since", "-c": "container", "--container": "container",
              "-l": "selector", "--selector": "selector"},
             {"-p": "previous", "--previous": "previous", "-f": "follow", "--follow": "follow",
              "--timestamps": "timestamps"}),
    "top": ({"-l": "selector", "--selector": "selector", "--sort-by": "sort_by"}, {}),
    "rollout": ({"--to-revision": "to_revision"}, {}),
    "scale": ({"--replicas": "replicas"}, {}),
    "set": ({"-e": "env", "--env": "env", "-c": "container", "--containers": "container"}, {}),
    "delete": ({}, {}),
    "cordon": ({}, {}),
    "uncordon": ({}, {}),
    "drain": ({"--grace-period": "grace", "--timeout": "timeout"},
              {"--ignore-daemonsets": "ds", "--delete-emptydir-data": "emptydir", "--force": "force"}),
}


@contextlib.contextmanager
def live_names() -> Iterator[None]:
    """Within this block, :func:`translate` (also when reached through the text parser, after it unwraps
    a markdown fence) keeps names as typed: a live cluster's ``db`` is not the simulator's database."""
    token = _SIM_NAMES.set(False)
    try:
        yield
    finally:
        _SIM_NAMES.reset(token)


def translate(text: str, *, sim_names: bool | None = None) -> tuple[str, dict[str, Any]]:
    """Translate one kubectl-style command into ``(tool name, args)``. Raises ToolError when unsupported.

    ``sim_names=False`` keeps deployment names as typed (a live cluster's names are its own); None
    (the default) uses the simulator's names unless called inside :func:`live_names`.
    """
    token = _SIM_NAMES.set(_SIM_NAMES.get() if sim_names is None else sim_names)
    try:
        return _translate(text)
    finally:
        _SIM_NAMES.reset(token)


def _translate(text: str) -> tuple[str, dict[str, Any]]:
    try:
        tokens = shlex.split(text)
    except ValueError as exc:
        raise ToolError(f"could not parse the kubectl command: {exc}") from None
    if not tokens or tokens[0] not in ("kubectl", "k"):
        raise _fail("a kubectl-style command starts with kubectl")
    tokens = tokens[1:]
    while tokens and (tokens[0] in _NS or tokens[0].startswith("--namespace=")):  # global -n before the verb
        tokens = tokens[1 if "=" in tokens[0] else 2:]
    if not tokens:
        raise _fail("kubectl needs a command")
    verb, rest = tokens[0], tokens[1:]
    if verb.startswith("-"):
        raise _fail(f"put flags after the command, not {verb!r}")
    if verb == "events":  # newer kubectl: `kubectl events [--for pod/X]`
        pos, opts = _split("events", rest, {"--for": "for", **_NS}, {})
        if pos:
            raise ToolError("kubectl events takes no name; use --for KIND/NAME")
        if "for" in opts:
            _, _, name = opts["for"].rpartition("/")
            return "get_events", {"entity": deployment(name)}
        return "get_events", {}
    if verb not in _FLAGS:
        raise _fail(f"unsupported kubectl command {verb!r}")
    valued, flags = _FLAGS[verb]
    if verb == "set":  # -e may repeat
        pos, opts = _split_repeat_env(rest, valued)
    else:
        pos, opts = _split(verb, rest, {**valued, **_NS}, flags)
    if opts.get("watch"):
        raise ToolError("kubectl get -w (watch) is not supported; each action returns the current state")
    if verb == "get":
        return _get(pos, opts)
    if verb == "describe":
        kind, name = _resource_name("describe", pos, ("pod", "node", "deploy"))
        return "get_events", {"entity": deployment(name) if kind == "deploy" else name}
    if verb == "logs":
        return _logs(pos, opts)
    if verb == "top":
        return _top(pos, opts)
    if verb == "rollout":
        return _rollout(pos, opts)
    if verb == "scale":
        return _scale(pos, opts)
    if verb == "set":
        return _set(pos, opts)
    if verb == "delete":
        kind, name = _resource_name("delete", pos, ("pod",))
        return "restart", {"target": name}
    return _node_cmd(verb, pos)


def _split_repeat_env(tokens: list[str], valued: dict[str, str]) -> tuple[list[str], dict[str, Any]]:
    envs: list[str] = []
    keep: list[str] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        name, eq, value = tok.partition("=")
        if name in ("-e", "--env"):
            if not eq:
                if i + 1 >= len(tokens):
                    raise ToolError(f"kubectl set env: flag {name} needs a value")
                value = tokens[i + 1]
                i += 1
            envs.append(value)
        else:
            keep.append(tok)
        i += 1
    pos, opts = _split("set env", keep, {**valued, **_NS}, {})
    opts["env"] = envs
    return pos, opts
