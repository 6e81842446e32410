"""kubectl-style commands are the declared tools in another spelling: same call, same result, same cost."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import srezero
from srezero.tools.kubectl import supported_text, translate
from srezero.tools.registry import ToolError, load_tools

TASK, SEED = "inc-001", 0


def _names() -> dict[str, str]:
    env = srezero.make(TASK, SEED)
    env.reset(seed=SEED)
    w = env.world
    return {"pod": w.services["worker"].replicas[0].name, "web_pod": w.services["web_server"].replicas[1].name,
            "node": w.topo.nodes[1].name}


NAMES = _names()

# (kubectl command, expected tool, expected args); {pod}/{web_pod}/{node} are this seed's names
CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("kubectl get pods", "get_status", {}),
    ("kubectl get pods -n default", "get_status", {}),
    ("kubectl -n prod get po -l app=worker", "get_status", {"service": "worker"}),
    ("k get pods --selector=app=web", "get_status", {"service": "web_server"}),
    ("kubectl get pod {pod}", "get_status", {"service": "worker"}),
    ("kubectl get deploy db", "get_status", {"service": "database"}),
    ("kubectl get events", "get_events", {}),
    ("kubectl get events --field-selector involvedObject.name={pod}", "get_events", {"entity": "{pod}"}),
    ("kubectl events --for deploy/mq", "get_events", {"entity": "message_queue"}),
    ("kubectl get nodes", "get_topology", {}),
    ("kubectl get cm worker-config", "get_config", {"service": "worker"}),
    ("kubectl describe pod {pod}", "get_events", {"entity": "{pod}"}),
    ("kubectl describe node {node}", "get_events", {"entity": "{node}"}),
    ("kubectl describe deploy/web-server", "get_events", {"entity": "web_server"}),
    ("kubectl logs {pod}", "search_logs", {"service": "{pod}"}),
    ("kubectl logs worker --tail 5", "search_logs", {"service": "worker", "limit": 5}),
    ("kubectl logs deploy/worker --previous", "search_logs", {"service": "worker", "window_s": 3600}),
    ("kubectl logs {pod} -p --tail=-1", "search_logs", {"service": "{pod}", "limit": 200, "window_s": 3600}),
    ("kubectl logs -l app=worker --since 10m", "search_logs", {"service": "worker", "window_s": 600}),
    ("kubectl top pod {pod}", "query_metrics", {"target": "{pod}", "metric": "cpu_cores"}),
    ("kubectl top pods {web_pod} --sort-by=memory", "query_metrics", {"target": "{web_pod}", "metric": "memory_mb"}),
    ("kubectl top node {node}", "node_diagnostics", {"node": "{node}", "check": "top"}),
    ("kubectl rollout status deploy/worker", "get_status", {"service": "worker"}),
    ("kubectl rollout history deployment/worker", "get_changes", {"service": "worker"}),
    ("kubectl rollout restart deploy/web", "restart", {"target": "web_server"}),
    ("kubectl rollout undo deploy/worker", "rollback", {"service": "worker"}),
    ("kubectl scale deploy/web --replicas 5", "scale", {"service": "web_server", "replicas": 5}),
    ("kubectl scale deployment worker --replicas=4", "scale", {"service": "worker", "replicas": 4}),
    ("kubectl set env deploy/worker DATABASE_URL=postgres://app@database:5432/app", "set_config",
     {"service": "worker", "key": "env.DATABASE_URL", "value": "postgres://app@database:5432/app"}),
    ("kubectl set env deploy/worker CREDENTIALS_VERSION-", "set_config",
     {"service": "worker", "key": "env.CREDENTIALS_VERSION", "value": ""}),
    ("kubectl delete pod {web_pod}", "restart", {"target": "{web_pod}"}),
    ("kubectl cordon {node}", "cordon_node", {"node": "{node}"}),
    ("kubectl uncordon node/{node}", "cordon_node", {"node": "{node}", "uncordon": True}),
    ("kubectl drain {node} --ignore-daemonsets --delete-emptydir-data", "drain_node", {"node": "{node}"}),
]


def _fill(value: Any) -> Any:
    return value.format(**NAMES) if isinstance(value, str) else value


@pytest.mark.parametrize(("command", "tool", "args"), CASES, ids=[c[0] for c in CASES])
def test_command_is_the_tool_call(command: str, tool: str, args: dict[str, Any]) -> None:
    expected = {k: _fill(v) for k, v in args.items()}
    assert translate(_fill(command)) == (tool, expected)
    # through the episode: the same observation, cost and reward as the direct call
    a, b = srezero.make(TASK, SEED), srezero.make(TASK, SEED)
    a.reset(seed=SEED)
    b.reset(seed=SEED)
    obs_k, rew_k, *_ = a.step(_fill(command))
    obs_d, rew_d, *_ = b.step({"tool": tool, "args": expected})
    assert obs_k.ok, obs_k.error
    assert (obs_k.tool, obs_k.text, obs_k.data) == (obs_d.tool, obs_d.text, obs_d.data)
    assert obs_k.sim_time_s == obs_d.sim_time_s and rew_k == rew_d
    assert a.trajectory[-1]["args"] == b.trajectory[-1]["args"]


def test_every_command_the_issue_names_is_in_the_table() -> None:
    commands = [c[0] for c in CASES]
    for needed in ("kubectl get pods", "kubectl describe pod", "kubectl logs", "kubectl get events", "kubectl top pod",
                   "kubectl top node", "kubectl rollout restart", "kubectl rollout undo", "kubectl scale",
                   "kubectl set env", "kubectl cordon", "kubectl drain"):
        assert any(c.startswith(needed) for c in commands), needed
    assert any("--previous" in c for c in commands) and any("--tail" in c for c in commands)


def test_same_scoring_as_direct_calls() -> None:
    """A whole episode typed in kubectl scores exactly like the same episode as tool calls."""
    probe = srezero.make(TASK, SEED)
    probe.reset(seed=SEED)
    url = probe.world.services["web_server"].config["env.DATABASE_URL"]  # the sibling service's copy
    fix = f"kubectl set env deploy/worker DATABASE_URL={url}"
    claim = {"tool": "submit_diagnosis", "args": {"root_causes": [
        {"entity": "worker.env.DATABASE_URL", "category": "misconfiguration", "detail": "DATABASE_URL empty"}]}}
    kube = ["kubectl get pods -l app=worker", "kubectl logs worker --tail 50", "kubectl get cm worker-config", claim,
            fix, "resolve()"]
    direct = [{"tool": "get_status", "args": {"service": "worker"}},
              {"tool": "search_logs", "args": {"service": "worker", "limit": 50}},
              {"tool": "get_config", "args": {"service": "worker"}}, claim,
              {"tool": "set_config", "args": {"service": "worker", "key": "env.DATABASE_URL",
                                              "value": url}},
              {"tool": "resolve", "args": {}}]
    results = []
    for actions in (kube, direct):
        env = srezero.make(TASK, SEED)
        env.reset(seed=SEED)
        for act in actions:
            *_, info = env.step(act)
        results.append(info["result"])
    assert results[0] == results[1]
    assert results[0]["marks"] > 90


# (command, a phrase the error must contain)
BAD: list[tuple[str, str]] = [
    ("kubectl", "supported kubectl commands"),
    ("kubectl exec -it web-1 -- sh", "unsupported kubectl command 'exec'"),
    ("kubectl apply -f x.yaml", "unsupported kubectl command 'apply'"),
    ("kubectl get secrets", "unsupported resource type 'secrets'"),
    ("kubectl get", "needs a resource type"),
    ("kubectl get pods -w", "watch"),
    ("kubectl get pods -l tier=backend", "only the selector -l app=DEPLOY"),
    ("kubectl get pod mystery", "cannot tell which deployment"),
    ("kubectl get nodes node-1", "takes no name"),
    ("kubectl logs", "needs exactly one pod"),
    ("kubectl logs worker -f", "streaming"),
    ("kubectl logs worker --tail abc", "--tail takes a number"),
    ("kubectl logs worker --tail 0", "--tail must be between 1 and 200"),
    ("kubectl logs worker --since 3d", "--since takes a duration"),
    ("kubectl logs worker --since 5h", "between 1m and 2h"),
    ("kubectl logs worker --bogus", "unsupported flag '--bogus'"),
    ("kubectl get pods -A", "accepts --field-selector, --namespace, --output, --selector, -l, -n, -o\0"),  # not -w
    ("kubectl logs svc/worker", "works on pods and deployments"),
    ("kubectl top pods", "needs one pod name"),
    ("kubectl top nodes", "needs one node name"),
    ("kubectl top pod x --sort-by=disk", "--sort-by takes cpu or memory"),
    ("kubectl top svc x", "works on pods and nodes"),
    ("kubectl rollout pause deploy/web", "unsupported kubectl rollout 'pause'"),
    ("kubectl rollout restart", "needs a deploy/NAME"),
    ("kubectl rollout restart pod/web-1", "works on deploy resources"),
    ("kubectl rollout undo deploy/web --to-revision=3", "--to-revision is not supported"),
    ("kubectl scale deploy/web", "needs --replicas"),
    ("kubectl scale deploy/web --replicas many", "--replicas takes a whole number"),
    ("kubectl set image deploy/web web=nginx", "only kubectl set env"),
    ("kubectl set env deploy/worker A=1 B=2", "one variable per action"),
    ("kubectl set env deploy/worker", "one variable per action"),
    ("kubectl set env deploy/worker 9BAD=1", "not a valid variable name"),
    ("kubectl delete deploy/web", "works on pod resources"),
    ("kubectl cordon", "needs exactly one node name"),
    ("kubectl drain a b", "needs exactly one node name"),
    ("kubectl logs 'unclosed", "could not parse"),
    ("kubectl -n", "needs a command"),
    ("kubectl --context x get pods", "put flags after the command"),
]


@pytest.mark.parametrize(("command", "phrase"), BAD, ids=[b[0] for b in BAD])
def test_unsupported_or_malformed_commands(command: str, phrase: str) -> None:
    with pytest.raises(ToolError) as err:
        translate(command)
    assert phrase in str(err.value) + "\0", str(err.value)  # \0 in a phrase: the message ends there


def test_unsupported_command_lists_what_is_supported() -> None:
    with pytest.raises(ToolError) as err:
        translate("kubectl port-forward svc/web 8080:80")
    for family in ("get pods", "describe", "logs", "top", "rollout", "scale", "set env", "cordon|uncordon|drain"):
        assert family in str(err.value)
    assert supported_text() in str(err.value)


def test_errors_through_the_episode_are_invalid_actions_not_crashes() -> None:
    env = srezero.make(TASK, SEED)
    env.reset(seed=SEED)
    for i, (command, phrase) in enumerate(BAD[:8], start=1):
        obs, *_ = env.step(command)
        assert not obs.ok and phrase in obs.error
        assert obs.step == i
    # a well-formed command aimed at something that does not exist gets the tool's own error
    obs, *_ = env.step("kubectl scale deploy/nonexistent --replicas 2")
    assert not obs.ok and "unknown service 'nonexistent'" in obs.error
    obs, *_ = env.step("kubectl scale deploy/db --replicas 2")
    assert not obs.ok and "cannot be scaled" in obs.error


def test_live_cluster_names_are_never_rewritten() -> None:
    assert translate("kubectl scale deploy/web --replicas 2", sim_names=False) == (
        "scale", {"service": "web", "replicas": 2})
    assert translate("kubectl get pod checkout-7d9f8b-x2k4q", sim_names=False) == (
        "get_status", {"service": "checkout"})
    assert translate("kubectl logs -l app=db", sim_names=False) == ("search_logs", {"service": "db"})
    # and the simulator's spelling is back outside that call
    assert translate("kubectl logs -l app=db") == ("search_logs", {"service": "database"})


def test_live_names_reach_commands_the_text_parser_unwraps() -> None:
    """A live episode parses fenced or backticked commands through parse_action: inside live_names()
    they keep the cluster's names; outside it, and after an error inside it, the simulator's are back."""
    from srezero.tools.kubectl import live_names
    from srezero.tools.parse import parse_action

    fenced = "```bash\nkubectl rollout restart deploy/db\n```"
    with live_names():
        assert parse_action(fenced) == ("restart", {"target": "db"})
        assert parse_action("`kubectl logs web`")[1]["service"] == "web"
        assert translate("kubectl logs db", sim_names=True) == ("search_logs", {"service": "database"})  # explicit wins
    assert parse_action(fenced) == ("restart", {"target": "database"})
    with pytest.raises(ToolError), live_names():
        parse_action("`kubectl frobnicate db`")
    assert translate("kubectl logs db") == ("search_logs", {"service": "database"})


WORDS = ["get", "pods", "pod", "po", "events", "nodes", "deploy", "cm", "describe", "logs", "top", "rollout", "restart",
         "undo", "status", "history", "scale", "set", "env", "delete", "cordon", "uncordon", "drain", "events",
         "deploy/web", "deployment/db", "pod/x", "node/n", "web", "worker", "-l", "app=web", "-n", "ns", "--tail",
         "-1", "0", "5", "--since", "10m", "-p", "--replicas", "--replicas=x", "A=1", "B-", "-e", "--for",
         "--field-selector", "involvedObject.name=x", "--sort-by=memory", "--to-revision", "=", "-", "'", '"', "\\"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(WORDS) | st.text(max_size=8), max_size=7))
def test_any_command_gives_a_call_or_a_tool_error(words: list[str]) -> None:
    for sim_names in (True, False):
        try:
            tool, args = translate(" ".join(["kubectl", *words]), sim_names=sim_names)
        except ToolError as exc:
            assert str(exc)
        else:
            assert tool in load_tools() and isinstance(args, dict)
