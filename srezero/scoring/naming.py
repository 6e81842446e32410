"""Entity naming for diagnoses: canonical names, accepted coarser aliases, victims, concrete vocabulary.

An agent names a root cause's *entity* in one of five forms (docs/scoring.md, "Naming entities"):

==============  ==========================  ==============================================
kind            canonical form              also accepted
==============  ==========================  ==============================================
service         ``web_server``              (case and surrounding spaces are ignored)
replica         ``web-4dsdz``
node            ``node-l47l``
disk            ``node-l47l/nvme1n1``       ``node-l47l:nvme1n1``, ``node-l47l:/dev/nvme1n1``
config key      ``web_server.db_retries``   ``web_server:db_retries``, ``web_server/db_retries``
==============  ==========================  ==============================================

A root cause also accepts its *coarser* aliases: a replica's service, a disk's node, a config key's
service (plus whatever the primitive lists in ``RootCause.aliases``). Finer names are not accepted
(blaming one replica for a service-wide leak is not the same claim), so listing every replica of a
service never multiplies credit.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from srezero.faults.base import RootCause
    from srezero.sim.world import World

#: Characters that make a token *concrete* (a key, a device, a version, a host), not an English word.
_CONCRETE = re.compile(r"[_.\-0-9]")


def norm(name: str) -> str:
    """Canonical spelling of an entity name: lower case, no spaces, one separator style."""
    e = str(name).strip().lower().replace(" ", "")
    e = e.replace(":/dev/", "/").replace("/dev/", "")
    if e.startswith("node-") and ":" in e:  # node-l47l:nvme1n1
        e = e.replace(":", "/", 1)
    elif ":" in e or ("/" in e and not e.startswith("node-")):  # web_server:db_retries, web_server/db_retries
        e = re.sub(r"[:/]", ".", e, count=1)
    return e


def coarser(w: World | None, entity: str) -> tuple[str, ...]:
    """The standard coarser aliases of a canonical entity name (service of a replica, node of a disk...)."""
    e = norm(entity)
    out: list[str] = []
    if "/" in e and e.startswith("node-"):
        out.append(e.split("/", 1)[0])
    elif "." in e:
        out.append(e.split(".", 1)[0])
    elif w is not None:
        rep = w.topo.replicas.get(e)
        if rep is not None:
            out.append(rep.kind)
    return tuple(out)


def accepted_names(w: World | None, rc: RootCause) -> frozenset[str]:
    """Every normalised name that localises ``rc``: its entity, its declared and its standard aliases."""
    names = {norm(rc.entity), *(norm(a) for a in rc.aliases if a), *coarser(w, rc.entity)}
    names.discard("")
    return frozenset(names)


def service_of(w: World | None, entity: str) -> str | None:
    """The service an entity belongs to (for replicas and config keys), else None."""
    e = norm(entity)
    if w is None:
        return None
    if e in w.services:
        return e
    if "." in e and e.split(".", 1)[0] in w.services:
        return e.split(".", 1)[0]
    rep = w.topo.replicas.get(e)
    return rep.kind if rep is not None else None


def victims(w: World, alert_entities: tuple[str, ...] = ()) -> frozenset[str]:
    """Components visibly suffering at page time: error ratio > 1 %, p99 > 2x its healthy value, or an
    alert firing on them. Their replicas count too. Blaming one of these (when it is not a root cause)
    is blaming a downstream victim; blaming anything else that is not a root cause is blaming a
    healthy component."""
    out: set[str] = set()
    for kind, svc in w.services.items():
        err = w.vals[w.row_of[(kind, "error_rate")]]
        row = w.row_of[(kind, "latency_p99_ms")]
        p99, base = w.vals[row], w.buf[row, 0]
        if err > 0.01 or (base > 0 and p99 > 2 * base) or kind in alert_entities:
            out.add(kind)
            out |= {r.name.lower() for r in svc.replicas}
    return frozenset(out)


def concrete_vocabulary(w: World) -> dict[str, str]:
    """Surface form -> canonical item for everything concrete an agent could name in a detail:
    config keys (full and last part), devices, release versions, node and replica names.
    Plain-English keys (``workers``) are left out: naming them is not naming something concrete.

    A replica stands for the node it runs on: "db-2 on node-5" is one place, and a pod on the root
    cause's node is that cause's own (the primary on a failing disk), not a foreign item."""
    vocab: dict[str, str] = {}
    for svc in w.services.values():
        for key in svc.config:
            k = key.lower()
            if _CONCRETE.search(k):
                vocab.setdefault(k, k)
                last = k.rsplit(".", 1)[-1]
                if _CONCRETE.search(last):
                    vocab.setdefault(last, k)
        for d in svc.deploys:
            vocab.setdefault(d.version.lower(), d.version.lower())
    for node in w.topo.nodes:
        vocab.setdefault(node.name.lower(), node.name.lower())
        for disk in node.disks:
            vocab.setdefault(disk.device.lower(), disk.device.lower())
    for name, rep in w.topo.replicas.items():  # the bare name is the pod, not backend_weight.<pod>
        vocab[name.lower()] = rep.node.name.lower()
    return vocab


def is_concrete(token: str) -> bool:
    """A detail token is concrete if it looks like a key, device, version or host, not a word."""
    return bool(_CONCRETE.search(token))
