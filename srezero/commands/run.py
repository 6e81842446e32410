"""``srezero run``: one agent, one task, one seed; the transcript and the result."""

from __future__ import annotations

import sys

import click
import orjson


@click.command("run")
@click.option("--task", "task_id", help="task id or path to a .toml file (required for the simulator)")
@click.option("--agent", default="random", show_default=True, help="agent name or package.module:Class")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--json", "as_json", is_flag=True, help="print the whole record as JSON")
@click.option("--quiet", is_flag=True, help="print only the result line")
@click.option("--out", type=click.Path(dir_okay=False), help="also write the record to this file")
@click.option("--model", help="model name, for LLM agents")
@click.option("--base-url", help="OpenAI-compatible endpoint, for LLM agents")
@click.option("--replay", "replay_path", type=click.Path(exists=True),
              help="for the replay agent: a record file, an action file or a run directory (or SREZERO_REPLAY)")
@click.option("--backend", type=click.Choice(["sim", "k8s"]), default="sim", show_default=True,
              help="sim: the simulator; k8s: a live Kubernetes namespace (docs/kubernetes.md)")
@click.option("--namespace", help="k8s: the namespace to work in")
@click.option("--kubeconfig", type=click.Path(dir_okay=False), help="k8s: kubeconfig file [default: in-cluster or ~/.kube/config]")
@click.option("--prometheus-url", help="k8s: Prometheus base URL for query_metrics, get_alerts and the SLO check")
@click.option("--promql", multiple=True, metavar="NAME=EXPR", help="k8s: add or override a metric's PromQL (repeatable)")
def run_cmd(task_id: str | None, agent: str, seed: int, as_json: bool, quiet: bool, out: str | None, model: str | None,
            base_url: str | None, replay_path: str | None, backend: str, namespace: str | None, kubeconfig: str | None,
            prometheus_url: str | None, promql: tuple[str, ...]) -> None:
    """Run one episode and print what happened."""
    import srezero
    from srezero.agents import registry
    from srezero.agents.runner import run_episode

    if backend == "k8s":
        env = _live_env(task_id, namespace, kubeconfig, prometheus_url, promql)
    elif task_id is None:
        raise click.UsageError("--task is required with the simulator backend")
    else:
        try:
            env = srezero.make(task_id, seed)
        except (KeyError, ValueError) as exc:
            raise click.ClickException(str(exc).strip("'\"")) from None
    kwargs = {k: v for k, v in (("model", model), ("base_url", base_url), ("path", replay_path)) if v}
    try:
        bot = registry.create(agent, **kwargs)
    except (ValueError, TypeError) as exc:
        raise click.ClickException(str(exc)) from None
    if backend == "k8s" and getattr(bot, "wants_ground_truth", False):
        raise click.ClickException(f"{agent} needs ground truth, which a live cluster does not have")
    record = run_episode(env, bot, seed)
    record["agent"] = agent
    data = orjson.dumps(record, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2)
    if out:
        from pathlib import Path

        from srezero.sweep.records import dumps, write_atomic

        write_atomic(Path(out), dumps(record))  # atomic, canonical sorted-key bytes
    if as_json:
        sys.stdout.write(data.decode() + "\n")
        return
    r = record["result"]
    if backend == "k8s":
        _print_live(record, quiet)
        return
    if not quiet:
        _print_steps(record)
    click.secho(f"{task_id} seed={seed} agent={agent}: marks {r['marks']:.1f}  success={r['success']}  "
                f"diagnosis={r['diagnosis']['score']:.2f}  mitigated={r['mitigated']}  "
                f"evidence={r['evidence_coverage']:.2f}  steps={r['steps']}  invalid={r['invalid_actions']}  "
                f"wrong_fixes={r['wrong_fixes']}", bold=True)
    for reason in r["mitigation"]["reasons"]:
        click.echo(f"  not mitigated: {reason}")


def _args(args: dict) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in (args or {}).items())


def _print_steps(record: dict) -> None:
    for t in record["trajectory"]:
        call = f"{t['tool']}({_args(t['args'])})" if t["tool"] and t["ok"] else str(t["action"])[:200]
        click.secho(f"[{t['step']:>2} +{t['sim_time_s']:>6.0f}s] > {call}",
                    fg="cyan" if t["ok"] else "red")
        text = t["text"] if len(t["text"]) < 1500 else t["text"][:1500] + "\n  ..."
        click.echo("  " + text.replace("\n", "\n  "))


def _live_env(task_id: str | None, namespace: str | None, kubeconfig: str | None, prometheus_url: str | None,
              promql: tuple[str, ...]):
    """A LiveEpisode on a KubernetesBackend; a task, when given, supplies the name and budgets."""
    from srezero.backends.k8s import BackendUnavailable, KubernetesBackend
    from srezero.backends.live_episode import LiveEpisode

    if not namespace:
        raise click.UsageError("--backend k8s needs --namespace")
    queries = {}
    for item in promql:
        name, eq, expr = item.partition("=")
        if not eq or not name or not expr:
            raise click.BadParameter(f"expected NAME=EXPR, got {item!r}", param_hint="--promql")
        queries[name.strip()] = expr
    try:
        backend = KubernetesBackend(namespace, kubeconfig=kubeconfig, prometheus_url=prometheus_url, queries=queries)
    except (BackendUnavailable, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    if task_id is None:
        return LiveEpisode(backend, task_id=f"live-{namespace}")
    import srezero

    try:
        spec = srezero.get_task(task_id)
    except (KeyError, ValueError) as exc:
        raise click.ClickException(str(exc).strip("'\"")) from None
    return LiveEpisode(backend, task_id=spec.id, steps=spec.budget.steps, time_s=spec.budget.time_s)


def _print_live(record: dict, quiet: bool) -> None:
    r = record["result"] or {}
    if not quiet:
        _print_steps(record)
    m = r.get("mitigation") or {}
    d = r.get("diagnosis") or {}
    click.secho(f"{r.get('namespace')} (live) agent={record['agent']}: mitigated={r.get('mitigated')}  "
                f"ready={m.get('ready')}  slo_ok={m.get('slo_ok')}  diagnosis submitted={d.get('submitted')}  "
                f"steps={r.get('steps')}  invalid={r.get('invalid_actions')}  seconds={r.get('sim_seconds')}", bold=True)
    for reason in m.get("reasons") or []:
        click.echo(f"  not mitigated: {reason}")
    if m.get("slo_note"):
        click.echo(f"  note: {m['slo_note']}")
