"""``srezero run``: one agent, one task, one seed; the transcript and the result.

The record is the one ``srezero sweep`` writes for the same episode (the same label, ``schema``,
``agent_name`` and ``task_hash``; :func:`srezero.sweep.runner.episode_record` builds both), so a
directory of ``run --out`` files can be given to ``srezero report``. An episode that fails (an LLM
provider error, an agent or environment exception) is recorded with its status, written with
``--out``, reported in one line, and the command exits with status 1; ``--traceback`` lets the
exception propagate instead, for debugging an agent.
"""

from __future__ import annotations

import sys

import click
import orjson

from srezero.commands import SEED, check_episodes
from srezero.commands.llm_options import llm_options
from srezero.commands.tasks import TASKS_DIR
from srezero.errors import DeclarationError, message


@click.command("run")
@click.option("--task", "task_id", help="task id or path to a .toml file (required for the simulator)")
@click.option("--agent", default="random", show_default=True, help="agent name or package.module:Class")
@click.option("--agent-arg", "agent_args", multiple=True, metavar="KEY=VALUE",
              help="constructor argument for the agent, VALUE read as JSON if it parses, else a string (repeatable)")
@click.option("--seed", default=0, show_default=True, type=SEED)
@TASKS_DIR
@click.option("--json", "as_json", is_flag=True, help="print the whole record as JSON")
@click.option("--quiet", is_flag=True, help="print only the result line")
@click.option("--out", type=click.Path(dir_okay=False), help="also write the record to this file")
@llm_options
@click.option("--replay", "replay_path", type=click.Path(exists=True),
              help="for the replay agent: a record file, an action file or a run directory (or SREZERO_REPLAY); "
                   "--agent-arg agent=NAME picks one agent's records in a run directory of several")
@click.option("--traceback", "show_traceback", is_flag=True,
              help="let an agent's, a tool's or the environment's exception propagate with its traceback (nothing "
                   "is recorded then)")
@click.option("--backend", type=click.Choice(["sim", "k8s"]), default="sim", show_default=True,
              help="sim: the simulator; k8s: a live Kubernetes namespace (docs/kubernetes.md)")
@click.option("--namespace", help="k8s: the namespace to work in")
@click.option("--kubeconfig", type=click.Path(dir_okay=False),
              help="k8s: kubeconfig file [default: $KUBECONFIG or ~/.kube/config; in-cluster only when neither exists]")
@click.option("--context", "kube_context", help="k8s: kubeconfig context [default: its current-context, printed first]")
@click.option("--prometheus-url", help="k8s: Prometheus base URL for query_metrics, get_alerts and the SLO check")
@click.option("--promql", multiple=True, metavar="NAME=EXPR", help="k8s: add or override a metric's PromQL (repeatable)")
@click.option("--slo", "slos", multiple=True, metavar="NAME=EXPR<=LIMIT",
              help="k8s: replace the SLO checks (repeatable; {ns} and {window} are filled in); --slo none: no SLO check")
@click.option("--verify-s", type=click.FloatRange(min=0), default=120.0, show_default=True,
              help="k8s: seconds to wait after resolve() before verifying; must exceed the fix's rollout time plus "
                   "the SLO rate window (half of it, at least 60 s)")
@click.option("--dry-run", is_flag=True,
              help="k8s: send every write with server-side dryRun=All (validated, nothing changed)")
def run_cmd(task_id: str | None, agent: str, agent_args: tuple[str, ...], seed: int, dirs: tuple[str, ...],
            as_json: bool, quiet: bool,
            out: str | None, llm: dict, replay_path: str | None, show_traceback: bool, backend: str, namespace: str | None,
            kubeconfig: str | None, kube_context: str | None, prometheus_url: str | None, promql: tuple[str, ...],
            slos: tuple[str, ...], verify_s: float, dry_run: bool) -> None:
    """Run one episode and print what happened."""
    from srezero.agents.registry import parse_agent_args
    from srezero.commands.llm_options import preflight
    from srezero.sweep.records import writable_problem
    from srezero.sweep.runner import agent_spec

    if backend != "k8s" and task_id is None:
        raise click.UsageError("--task is required with the simulator backend")
    if out and (problem := writable_problem(out)):  # now, not after the episode
        raise click.BadParameter(f"cannot write the record to {out}: {problem}", param_hint="--out")
    try:  # the agent is checked before anything runs: unknown name, bad options, no API key
        spec_of_agent = agent_spec(agent, None, agent_args=parse_agent_args(agent_args), path=replay_path, **llm)
        bot = spec_of_agent.create()
    except (ValueError, TypeError) as exc:
        raise click.ClickException(str(exc)) from None
    except DeclarationError:  # a fault or tool declaration's mistake, not the agent's: srezero.cli says so
        raise
    except Exception as exc:  # the user's constructor failed: one line, or the traceback when asked
        if show_traceback:
            raise
        raise click.ClickException(f"agent {agent} could not be created: {type(exc).__name__}: {exc} "
                                   "(add --traceback to see where)") from None
    preflight([spec_of_agent])
    if backend == "k8s":
        if getattr(bot, "wants_ground_truth", False):
            raise click.ClickException(f"{agent} needs ground truth, which a live cluster does not have")
        env = _live_env(task_id, namespace, kubeconfig, prometheus_url, promql, context=kube_context, slos=slos,
                        verify_s=verify_s, dry_run=dry_run, dirs=tuple(dirs))
        record = _run_live(env, bot, seed, show_traceback)
        record["agent"] = agent
    else:
        record = _run_sim(task_id, tuple(dirs), seed, spec_of_agent, show_traceback)
    from srezero.sweep.records import dumps_episode, write_atomic

    record, data = dumps_episode(record)  # what --json prints is what --out writes, whatever the agent put in it
    if out:
        from pathlib import Path

        write_atomic(Path(out), data)  # atomic, canonical sorted-key bytes
    if as_json:
        sys.stdout.write(orjson.dumps(record, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2).decode() + "\n")
    elif backend == "k8s":
        _print_live(record, quiet)
    else:
        _print_sim(record, quiet)
        _note_forced_page(task_id, tuple(dirs), seed)
    if record.get("status", "ok") != "ok":
        error = " ".join(str(record.get("error") or "").split())
        where = f" (record written to {out})" if out else ""
        raise click.ClickException(f"{record['task_id']} seed={seed} agent={record['agent']}: "
                                   f"{record['status']}: {error[:500]}{where}")


def _run_sim(task_id: str, dirs: tuple[str, ...], seed: int, agent, show_traceback: bool) -> dict:
    """The sweep's record of this episode (failures become its status), or, with --traceback, run it
    with exceptions propagating."""
    from srezero.sweep import records as rec
    from srezero.sweep.runner import episode_record
    from srezero.task.loader import TaskFileError, get_task
    from srezero.task.validate import check_builds

    try:
        spec = get_task(task_id, dirs)
        check_builds(spec, task_id, seed)
    except (KeyError, ValueError, TaskFileError, OSError) as exc:
        raise click.ClickException(message(exc)) from None
    check_episodes([agent], [(spec.id, seed)])  # a replay source without this episode: a usage error, now
    if show_traceback:
        from srezero.agents.runner import run_episode
        from srezero.episode import Episode

        env = Episode(spec, seed, reward=rec.REWARD)  # as the sweep records it (runner.episode_record)
        env.raise_tool_errors = True  # a tool's bug too, with the traceback that shows where
        record = run_episode(env, agent.create(), seed)
        # the fields episode_record adds (it runs with failures caught, so it cannot be used here)
        record.update({"schema": rec.SCHEMA, "agent": agent.label, "agent_name": agent.name,
                       "task_hash": rec.task_hash(spec)})
        return record
    return episode_record(spec, rec.task_hash(spec), agent, seed, None)


def _run_live(env, bot, seed: int, show_traceback: bool) -> dict:
    from srezero.agents.runner import run_episode

    return run_episode(env, bot, seed, catch=not show_traceback)


def _print_sim(record: dict, quiet: bool) -> None:
    if not quiet:
        _print_steps(record)
    r = record["result"]
    if r is None:
        return
    click.secho(f"{record['task_id']} seed={record['seed']} agent={record['agent']}: marks {r['marks']:.1f}  "
                f"success={r['success']}  diagnosis={r['diagnosis']['score']:.2f}  mitigated={r['mitigated']}  "
                f"evidence={r['evidence_coverage']:.2f}  steps={r['steps']}  invalid={r['invalid_actions']}  "
                f"wrong_fixes={r['wrong_fixes']}", bold=True)
    for reason in r["mitigation"]["reasons"]:
        click.echo(f"  not mitigated: {reason}")
    bugs = r.get("internal_errors") or []
    if bugs:  # the agent saw only "internal error in <tool>"; whoever runs it needs the exception
        click.secho(f"warning: {len(bugs)} tool call(s) raised inside the tool (a bug in srezero or in an added "
                    f"tool, counted as the agent's invalid actions): {'; '.join(bugs[:3])}"
                    f"{' ...' if len(bugs) > 3 else ''}; rerun with --traceback to see where", fg="yellow", err=True)


def _note_forced_page(task_id: str, dirs: tuple[str, ...], seed: int) -> None:
    """Tell the human (never the agent) when the page was forced by the onset budget: the alert the
    transcript shows firing never fired on its own, which is a defect of the task."""
    from srezero.sim.world import World
    from srezero.task.loader import get_task

    spec = get_task(task_id, dirs)
    world = World.build(spec, seed)
    world.page()  # the episode's own paging, replayed: a couple of milliseconds
    if world.page_forced:
        click.secho(f"note: {spec.alert.name} never fired within {spec.budget.max_onset_s:.0f}s of the history's end "
                    "(budget.max_onset_s); the page "
                    "was forced by the onset budget, so the alert shown firing is not a real symptom "
                    "(`srezero task check` reports this as a task defect)", fg="yellow", err=True)


def _args(args: dict) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in (args or {}).items())


def _print_steps(record: dict) -> None:
    for t in record["trajectory"]:
        reply = ((t.get("model_reply") or {}).get("content") or "").strip()
        if reply:  # an LLM's words behind the action
            reply = reply if len(reply) < 600 else reply[:600] + " ..."
            click.secho("  model: " + reply.replace("\n", "\n         "), dim=True)
        call = f"{t['tool']}({_args(t['args'])})" if t["tool"] and t["ok"] else str(t["action"])[:200]
        click.secho(f"[{t['step']:>2} +{t['sim_time_s']:>6.0f}s] > {call}",
                    fg="cyan" if t["ok"] else "red")
        text = t["text"] if len(t["text"]) < 1500 else t["text"][:1500] + "\n  ..."
        click.echo("  " + text.replace("\n", "\n  "))


def _live_env(task_id: str | None, namespace: str | None, kubeconfig: str | None, prometheus_url: str | None,
              promql: tuple[str, ...], *, context: str | None = None, slos: tuple[str, ...] = (),
              verify_s: float = 120.0, dry_run: bool = False, dirs: tuple[str, ...] = ()):
    """A LiveEpisode on a KubernetesBackend; a task, when given, supplies the name and budgets. Which
    cluster, context and namespace it uses is printed to stderr before anything runs."""
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
    checks = _slos(slos)
    try:
        backend = KubernetesBackend(namespace, kubeconfig=kubeconfig, context=context, prometheus_url=prometheus_url,
                                    queries=queries, dry_run=dry_run)
    except (BackendUnavailable, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    click.secho(f"k8s: {backend.cluster.line(namespace)}"
                + ("; dry run: writes are validated by the API server, nothing is changed" if dry_run else ""),
                fg="yellow", err=True)
    kw = {"verify_s": verify_s, "slos": checks}
    if task_id is None:
        return LiveEpisode(backend, task_id=f"live-{namespace}", **kw)
    import srezero

    try:
        spec = srezero.get_task(task_id, dirs)
    except (KeyError, ValueError) as exc:
        raise click.ClickException(message(exc)) from None
    return LiveEpisode(backend, task_id=spec.id, steps=spec.budget.steps, time_s=spec.budget.time_s, **kw)


def _slos(items: tuple[str, ...]) -> dict[str, tuple[str, float]] | None:
    """``--slo NAME=EXPR<=LIMIT`` items (None: the defaults; ``--slo none``: no SLO check)."""
    if not items:
        return None
    if items == ("none",):
        return {}
    out = {}
    for item in items:
        name, eq, rest = item.partition("=")
        expr, le, limit = rest.rpartition("<=")
        try:
            value = float(limit) if le else None
        except ValueError:
            value = None
        if not eq or not name.strip() or not expr.strip() or value is None:
            raise click.BadParameter(f"expected NAME=EXPR<=LIMIT (or none), got {item!r}", param_hint="--slo")
        out[name.strip()] = (expr.strip(), value)
    return out


def _print_live(record: dict, quiet: bool) -> None:
    r = record["result"] or {}
    if not quiet:
        _print_steps(record)
    m = r.get("mitigation") or {}
    d = r.get("diagnosis") or {}
    click.secho(f"{r.get('namespace')} (live{', dry run' if r.get('dry_run') else ''}) agent={record['agent']}: "
                f"mitigated={r.get('mitigated')}  ready={m.get('ready')}  slo_ok={m.get('slo_ok')}  "
                f"diagnosis submitted={d.get('submitted')}  steps={r.get('steps')}  invalid={r.get('invalid_actions')}  "
                f"permission_denied={r.get('permission_denied', 0)}  seconds={r.get('sim_seconds')}", bold=True)
    for reason in m.get("reasons") or []:
        click.echo(f"  not mitigated: {reason}")
    if m.get("slo_note"):
        click.echo(f"  note: {m['slo_note']}")
