"""How a change reads in the history: the same for every author, a fault's or anyone else's.

An engineer diffing "what changed?" must find the cause by what a change did and when, never by its
wording. So everything a change shows besides its content is drawn here, from one pool and one
random stream, whoever makes it (fault, ambient noise, distractor):

* the reason in parentheses after a config or sysctl edit (:func:`reason`);
* the release note of a deploy (:func:`release_note`) and its version number (:func:`next_version`);
* the ``ConfigChanged`` event of a config edit and the rollout events of a release
  (:func:`record` and :func:`roll_out`).

The pools are generic on purpose: a reason that fitted the edit ("reduce memory per pod" on a memory
limit) would read as a story only faults tell. tests/faults/test_change_surface.py checks that no
phrase, version step or event separates a fault's changes from harmless ones.

A live rolling update (:func:`roll`) is here too, as every author's rollout runs the same way: a
release, a rollback, a restart of a service, a change to an ``env.*`` key.
"""

from __future__ import annotations

import re
from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING, Any

from srezero.sim.clock import TICK_S
from srezero.sim.components import Change, Event
from srezero.sim.lifecycle import startup_failure
from srezero.sim.rng import Stream, stable_int, stream

if TYPE_CHECKING:
    from srezero.sim.components import Replica, Service
    from srezero.sim.world import World

REASONS = (
    "tuning", "per incident review", "capacity plan", "align with staging", "cost review",
    "follow-up from the last game day", "as discussed in standup", "ticket OPS-{n}", "ticket PLAT-{n}",
    "load test results", "right-sizing", "requested by the payments team", "cleanup", "quarterly review",
    "match the runbook", "after the vendor call", "performance work", "reduce pager noise",
)
RELEASE_NOTES = (
    "bump dependencies", "add request-id to access log", "tune JSON encoder", "fix typo in error page",
    "orders: paginate history endpoint", "checkout: cache tax tables", "search: debounce suggestions",
    "invoices: stream PDF rendering", "cart: lazy-load recommendations", "auth: shorter session cookie names",
    "retry payment capture inline", "checkout: new currency rounding", "switch session store to in-process LRU",
    "show the promo banner on every page", "payments: idempotency keys on refunds", "catalog: batch price lookups",
    "emails: move templates to the CDN", "reports: nightly export in CSV", "upgrade HTTP client",
    "orders: async confirmation emails",
)


def _rng(w: World) -> Stream:
    """The world's change-surface stream (made on first use): draws here never shift a fault's or
    noise's own draws."""
    if w.rng_changes is None:
        w.rng_changes = stream(w.spec.id, w.seed, "changes")
    return w.rng_changes


def reason(w: World) -> str:
    """Why someone made an edit, as the change history shows it."""
    rng = _rng(w)
    return REASONS[int(rng.integers(0, len(REASONS)))].format(n=int(rng.integers(1000, 9999)))


def release_note(w: World) -> str:
    return RELEASE_NOTES[int(_rng(w).integers(0, len(RELEASE_NOTES)))]


def next_version(w: World, service: str, version: str) -> str:
    """The version after ``version``: a patch release that skips a build now and then (CI rebuilds).
    A function of the release it follows, not a draw: how much noise came first never renames it."""
    major, minor, patch = (int(x) for x in version.lstrip("v").split("."))
    return f"v{major}.{minor}.{patch + 1 + stable_int(w.spec.id, w.seed, service, version) % 3 // 2}"


def next_secret(version: str) -> str:
    """The secret version after ``version`` (``v7`` -> ``v8``, ``cache-auth-v2`` -> ``cache-auth-v3``)."""
    head, _, number = version.rpartition("v")
    return f"{head}v{int(number) + 1}"


def migration_id(w: World) -> str:
    """The next schema migration's number (``041``): one sequence for everyone who migrates."""
    if w.migration_seq == 0:
        w.migration_seq = 40 + stable_int(w.spec.id, w.seed, "migrations") % 50
    w.migration_seq += 1
    return f"{w.migration_seq:03d}"


#: How the history writes an empty value, as the config tools show it, so an emptied setting is visible.
EMPTY = "''"


def edit(key: str, old: object, new: object) -> str:
    """How a config edit reads in the history, for faults and noise alike: ``key: old -> new`` (an empty
    value as :data:`EMPTY`)."""
    return f"{key}: {old if old != '' else EMPTY} -> {new if new != '' else EMPTY}"


#: An edit as :func:`edit` and :func:`edit_line` write it, with the reason optional. A key is anything up to
#: the first colon and space (``backend_weight.web-xtmpq``, ``env.FEATURE_X``); the history's values never
#: hold `` -> `` or parentheses, so the lazy ``new`` stops at the reason.
_EDIT = re.compile(r"^(?P<key>[^\s:]+): (?P<old>.*?) -> (?P<new>.*?)(?: \([^()]*\))?$")


def parse_edit(detail: str) -> tuple[str, str, str] | None:
    """``(key, old, new)`` of an edit line as the history prints it, values as text (``''`` when
    emptied); ``None`` for anything else (a deploy, a secret rotation). A sysctl entry's detail starts
    with its node's name: strip ``node: `` first."""
    match = _EDIT.match(detail)
    return (match["key"], match["old"], match["new"]) if match else None


def rotation(secret: str, old: str, new: str) -> str:
    """How a credential rotation reads in the database's history, whoever rotates it."""
    return f"rotated password for role app (secret {secret} {old} -> {new})"


def secret_sync(key: str, old: str, new: str) -> str:
    """How the deploy bot's edit of a client's secret reads after a rotation (an edit with a fixed reason)."""
    return f"{edit(key, old, new)} (secret sync)"


_ROTATION = re.compile(r"^rotated password for role \S+ \(secret \S+ (?P<old>\S+) -> (?P<new>\S+)\)$")


def parse_rotation(detail: str) -> tuple[str, str] | None:
    """``(old, new)`` secret versions of a rotation line (:func:`rotation`), else ``None``."""
    match = _ROTATION.match(detail)
    return (match["old"], match["new"]) if match else None


def edit_line(w: World, key: str, old: object, new: object) -> str:
    """A config or sysctl edit as the history shows it, whoever makes it: ``key: old -> new (reason)``."""
    return f"{edit(key, old, new)} ({reason(w)})"


def entries(w: World, service: str, kind: str, prefix: str = "") -> Iterator[Change]:
    """The history's entries for one service and kind whose detail starts with ``prefix`` (a key)."""
    return (c for c in w.changes if c.service == service and c.kind == kind and c.detail.startswith(prefix))


#: The author of the agent's own changes: they are stamped when the agent made them, with no lead.
AGENT_AUTHOR = "you (on-call)"


def lead(w: World, service: str, detail: str, at: float) -> float:
    """How long before it takes effect (at ``at``) a change is recorded: 1-29 s, deterministic. People do
    not act on the tick, so a change's seconds never tell a fault's from anyone else's, and a release's
    rollout starts this long after its entry, whether it shipped live or days ago. Drawn from the change
    itself, not from how many came before it: the agent's own changes must not move the stamps of others."""
    return 1.0 + stable_int(w.seed, service, detail, f"{at:.3f}", "change") % 2800 / 100.0


def record(w: World, at: float, service: str, kind: str, detail: str, author: str, noise: bool = False) -> None:
    """Add a change to the history at ``at``, with the event a config edit leaves in the cluster."""
    w.changes.append(Change(at, service, kind, detail, author, noise))
    key, sep, _ = detail.partition(": ")
    if kind == "config" and sep and " " not in key:  # a key edit (a rotation's secret has no configmap)
        w.events.append(Event(at, "Normal", "ConfigChanged", service, f"configmap {service}-config updated ({key})"))


ROLLOUT_GAP_S = 5.0  # a rolling update restarts the next pod this long after the previous one is up
PROGRESS_DEADLINE_S = 600.0  # a Deployment's progressDeadlineSeconds: a pod not up by then stalls the rollout


def roll_out(w: World, svc: Service, version: str, at: float) -> None:
    """The events and pod ages of a rolling update that finished in the past. Pods restart one at a
    time, each once the previous is up again: the spacing of a live rollout (:func:`roll`),
    so a past release's pod ages never tell it apart from one shipped live."""
    w.events.append(Event(at, "Normal", "ScalingReplicaSet", svc.kind, f"Rolled out {svc.kind} {version}"))
    pods = [rep for rep in svc.replicas if rep.state != "Terminated"]
    for i, rep in enumerate(pods):
        killed = at + i * (svc.startup_s + ROLLOUT_GAP_S)
        rep.version = version
        rep.created_at = killed  # a rolling update replaces the pod: its AGE starts again, as a live one's does
        rep.ready_at = killed + svc.startup_s
        w.events.append(Event(killed, "Normal", "Killing", rep.name, f"Stopping container {rep.kind}"))


def up(w: World, rep: Replica) -> bool:
    """Whether a pod a rollout restarted is up again (Ready): Running, or through its start-up with
    nothing to stop it starting, which the model's next tick records as Running (states advance only
    in the tick; a healthy pod's process is up at its ``ready_at``). A pod crash-looping, Pending or
    still starting is not up."""
    if rep.state == "Running":
        return True
    return rep.state == "Starting" and w.now >= rep.ready_at and not startup_failure(w, rep)


def roll(w: World, svc: Service, version: str | None = None) -> None:
    """A live rolling update of ``svc``, gated on readiness as a Deployment's is: onto ``version`` for a
    release or a rollback, onto the release it runs (None) for a restart or a change to an ``env.*``
    key. Every rolling update goes through here (the crash_loop fault's config push restarts every pod
    at once, on purpose).

    Pods restart in place, one at a time: the next :data:`ROLLOUT_GAP_S` after the previous is up again
    (:func:`up`), so the service keeps serving throughout (a healthy release must never dent an SLO by
    its rollout alone) and a healthy rollout keeps the pace of a past one (:func:`roll_out`). A pod
    that does not come up (it crash-loops on a bad environment variable, a stale credential, a
    crash-on-start release, a memory limit below its working set; its node is not ready) holds the
    rollout there: the pods not yet reached keep running what they ran, and
    :data:`PROGRESS_DEADLINE_S` after that pod's restart the Deployment reports
    ``ProgressDeadlineExceeded``. Should the pod come up later, the rollout goes on, as a Deployment's
    does. A newer rollout of the service (a release, rollback, restart or env change) supersedes it:
    like a Deployment's newer revision, it rolls every pod onto its own template."""
    pods = [r for r in svc.replicas if r.state != "Terminated"]
    target = version if version is not None else svc.deploy.version
    svc.rollout += 1
    mine = svc.rollout

    def gen() -> Generator[Any, Any, None]:
        prev: Replica | None = None
        since = 0.0  # when ``prev`` was restarted
        for rep in pods:
            if rep.state == "Terminated":  # scaled away: nothing to roll
                continue
            if version is not None and rep.version == target and rep.state == "Running":
                continue  # it runs that release already (a rollback's untouched pods): left alone
            if prev is not None:
                yield w.env.timeout(svc.startup_s + ROLLOUT_GAP_S)  # a healthy pod is up by then
                deadline = since + PROGRESS_DEADLINE_S
                warned = False
                while svc.rollout == mine and prev.state != "Terminated" and not up(w, prev):
                    # states advance only in the model's tick: look again just after the next one (a
                    # tick due now runs first), and at the deadline
                    wait = max(0.0, (w.col + 1) * TICK_S - w.now)
                    if w.now < deadline:
                        yield w.env.timeout(min(wait, deadline - w.now))
                        continue
                    if not warned:
                        w.emit("Warning", "ProgressDeadlineExceeded", svc.kind,
                               f'deployment "{svc.kind}" exceeded its progress deadline')
                        warned = True
                    yield w.env.timeout(wait)  # stalled: it goes on only if the pod comes up
                if svc.rollout != mine:
                    return
                if rep.state == "Terminated":
                    continue
            rep.version = target
            w.restart_replica(rep, reason="Rollout", by_agent=True)
            prev, since = rep, w.now

    w.env.process(gen())
