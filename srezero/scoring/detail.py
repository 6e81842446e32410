"""Is a claim's concrete detail right? A deterministic test that keyword stuffing cannot pass.

A detail is *right* for a root cause when all of these hold:

1. **It says what is wrong, not only where.** The detail text contains one of the root cause's
   detail tokens (the mechanism words the primitive declares, the release, a config key's bad value)
   that is not already part of the root cause's entity or of the claim's entity. Repeating the
   entity ("web_server.db_timeout_ms", "node-3/nvme1n1") passes for no root cause: a misconfigured
   key's detail gives its value or which way it is wrong ("too low"), a disk's detail the kind of
   failure. A number counts as a whole (40 is not 4000), and not at all in a detail that lists more
   than ``MAX_NUMBERS`` numbers; "too low" and "too high" in one detail count for neither.
2. **It is concrete.** If the root cause has concrete tokens (anything that looks like a config key,
   a device, a version or a host: it contains ``_ . -`` or a digit), one of them appears in the
   detail or in the claim's entity. "a memory leak" is not the concrete detail of a leak shipped in
   release v1.25.2; "v1.25.2 leaks memory" is.
3. **It is not stuffed.** It names at most ``MAX_FOREIGN_CONCRETE`` (one) concrete thing that does not
   belong to this root cause (another key, device, version, node or replica: room for the one victim
   or neighbour an honest explanation mentions; a replica counts as the node it runs on, so a pod and
   its node are one item, and the pods on the cause's own node are the cause's), and uses mechanism words from at most
   ``MAX_FOREIGN_FAMILIES`` families that this fault's own description does not use, of which at most
   ``MAX_FOREIGN_ALTERNATIVES`` (one) may be another way the same kind of thing fails
   (:data:`ALTERNATIVES`: sector errors, a full disk, a fail-slow disk, ECC, heat and power are six
   ways hardware fails; a certificate, a clock and a credential three ways authentication does;
   connections, memory and disk space three things that run out). One
   string listing every key, every device and every mechanism fails this for every root cause, and so does
   a service-level claim whose detail hedges across three keys ("one of max_connections,
   idle_timeout_s, health_check_path is wrong").

The mechanism families below are a fixed lexicon (not learned, not task-specific). A family counts
as the fault's *own* when any of its words appears in the root cause (entity, aliases, detail,
tokens) or in the primitive's published metadata (description, signal and remedy descriptions).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

from srezero.faults.detail_words import HIGHER_WORDS, LOWER_WORDS
from srezero.scoring.naming import is_concrete

if TYPE_CHECKING:
    from srezero.faults.base import RootCause

MAX_FOREIGN_CONCRETE = 1
MAX_FOREIGN_FAMILIES = 2
MAX_FOREIGN_ALTERNATIVES = 1
MAX_NUMBERS = 5

#: Mechanism families: words an explanation of one kind of fault uses. Matched case-insensitively
#: at the start of a word, so "leak" also matches "leaks" and "leaking".
FAMILIES: dict[str, tuple[str, ...]] = {
    "memory": ("memory", "oom", "out of memory", "heap", "rss", "leak"),
    "crash": ("crash", "exit", "panic", "segfault", "backoff"),
    # storage and hardware are split by mechanism: each family is one way a disk or a machine fails
    "disk_media": ("sector", "i/o error", "io error", "eio", "smart", "bad block", "medium error", "fsync",
                   "read error"),
    "disk_space": ("disk full", "no space", "space left", "inode", "filesystem full", "out of space"),
    "fail_slow": ("fail-slow", "slow disk", "disk latency", "i/o latency", "io latency"),
    "ecc": ("ecc", "dimm", "memory module", "uncorrectable", "edac", "sigbus"),
    "thermal": ("thermal", "overheat", "temperature", "fan"),
    "power": ("power supply", "psu", "power loss", "lost power", "loses power", "dead node", "notready",
              "node down", "node is down"),
    "network": ("packet", "loss", "flap", "conntrack", "dns", "mtu", "retransmi", "partition", "nic", "link"),
    "kernel": ("sysctl", "file-max", "nf_conntrack", "ip_local_port_range", "tcp_tw_reuse", "cgroup", "quota",
               "enfile", "emfile"),
    "balancer": ("sticky", "backend weight", "weight", "health check", "health-check", "idle timeout"),
    # authentication is split the same way: a certificate, a clock, a credential
    "certificate": ("certificat", "tls", "ssl", "expired", "expiry"),
    "clock": ("clock", "skew", "ntp", "time sync", "chrony"),
    "credential": ("credential", "password", "secret", "wrongpass", "rotat"),
    "connections": ("pool", "connection", "file descriptor", "ulimit", "ephemeral port", "socket"),
    "retry": ("retry", "retries", "timeout", "timed out", "amplif", "thundering herd", "metastable"),
    "capacity": ("capacity", "under-provision", "underprovision", "saturat", "throughput", "scale up",
                 "rate limit", "throttl", "cpu"),
    "queue": ("queue", "backlog", "consumer", "poison", "visibility", "dead letter", "dlq", "redeliver"),
    "cache": ("cache", "evict", "stampede", "hit ratio", "hit rate", "hot key", "ttl"),
    "database": ("index", "slow quer", "deadlock", "lock wait", "vacuum", "bloat", "replication lag",
                 "dead tuple", "split brain", "long transaction", "replication slot", "wal", "standby"),
    "code": ("release", "deploy", "regression", "bug", "exception", "rollout", "version", "feature flag", "flag"),
}

#: Families that are alternatives to one another: one machine or disk failing in one way. A detail may
#: name at most ``MAX_FOREIGN_ALTERNATIVES`` of them that the fault does not use (room for "not the
#: disk's sectors, its latency"), so a string listing every way hardware fails passes for none.
ALTERNATIVES: dict[str, frozenset[str]] = {
    "hardware": frozenset({"disk_media", "disk_space", "fail_slow", "ecc", "thermal", "power"}),
    "authentication": frozenset({"certificate", "clock", "credential"}),
    "exhaustion": frozenset({"connections", "memory", "disk_space"}),
}

_WORD_CHARS = "a-z0-9_"
_DIRECTION_WORDS = frozenset(LOWER_WORDS + HIGHER_WORDS)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_NUMBER_IN_TEXT = re.compile(r"(?<![\w.:/-])-?\d+(?:\.\d+)?")


@lru_cache(maxsize=512)
def _term_rx(term: str) -> re.Pattern[str]:
    if _NUMBER.fullmatch(term):  # a value matches as a whole number: 40 is not 4000 or 40.5
        return re.compile(rf"(?<![{_WORD_CHARS}.:/-]){re.escape(term)}(?![0-9]|\.[0-9])")
    return re.compile(rf"(?<![{_WORD_CHARS}]){re.escape(term)}")


@lru_cache(maxsize=4096)
def _item_rx(item: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![{_WORD_CHARS}]){re.escape(item)}(?![{_WORD_CHARS}])")


def _says_both_directions(text: str) -> bool:
    return any(_term_rx(x).search(text) for x in LOWER_WORDS) and any(_term_rx(x).search(text) for x in HIGHER_WORDS)


def families_in(text: str) -> frozenset[str]:
    """The mechanism families whose words appear in ``text``."""
    t = text.lower()
    return frozenset(f for f, terms in FAMILIES.items() if any(_term_rx(x).search(t) for x in terms))


def concrete_in(text: str, vocabulary: dict[str, str]) -> frozenset[str]:
    """The canonical concrete items (keys, devices, versions, names) that ``text`` names."""
    t = text.lower()
    return frozenset(canon for surface, canon in vocabulary.items() if surface in t and _item_rx(surface).search(t))


def own_text(rc: RootCause) -> str:
    """Everything that describes this root cause: its fields plus its primitive's published metadata."""
    from srezero.faults.base import REGISTRY

    parts = [rc.entity, rc.detail, *rc.aliases, *rc.detail_tokens]
    cls = REGISTRY.get(rc.fault)
    if cls is not None:
        m = cls.meta
        parts += [m.description, *(s.description for s in m.signals), *(s.pattern for s in m.signals),
                  *(r.description for r in m.remedies)]
    return " ".join(p for p in parts if p).lower()


def check(detail: str, entity: str, rc: RootCause, vocabulary: dict[str, str]) -> tuple[bool, str]:
    """Is ``detail`` (with the claim's ``entity``) the right concrete detail of ``rc``? Returns the
    answer and, when it is no, the reason in words."""
    text = detail.strip().lower()
    if not text:
        return False, "no detail given"
    tokens = [t.lower() for t in rc.detail_tokens if t]
    ent = entity.lower()
    where = rc.entity.lower()
    listed = len(set(_NUMBER_IN_TEXT.findall(text))) > MAX_NUMBERS
    hedged = _says_both_directions(text)
    # tokens match at the start of a word: "lock" is not in "clock", "port" is not in "report"
    said = [t for t in tokens if _term_rx(t).search(text) and not _term_rx(t).search(where)
            and not _term_rx(t).search(ent) and not (listed and _NUMBER.fullmatch(t))
            and not (hedged and t in _DIRECTION_WORDS)]
    if not said:
        if any(_term_rx(t).search(text) for t in tokens):
            return False, "the detail only repeats where the cause is; say what is wrong (the value, the mechanism)"
        return False, "the detail does not name the cause"
    concrete = [t for t in tokens if is_concrete(t)]
    if concrete and not any(_term_rx(t).search(text) or _term_rx(t).search(ent) for t in concrete):
        return False, "the detail is not concrete (no key, device, release or value of this cause)"
    own = own_text(rc)
    own_items = concrete_in(own, vocabulary)
    foreign_items = concrete_in(text, vocabulary) - own_items
    if len(foreign_items) > MAX_FOREIGN_CONCRETE:
        return False, f"the detail names {len(foreign_items)} unrelated keys/devices/versions (stuffing)"
    foreign_fams = families_in(text) - families_in(own)
    if len(foreign_fams) > MAX_FOREIGN_FAMILIES:
        return False, f"the detail mixes {len(foreign_fams)} unrelated fault mechanisms (stuffing)"
    for kind, alternatives in ALTERNATIVES.items():
        if len(foreign_fams & alternatives) > MAX_FOREIGN_ALTERNATIVES:
            return False, (f"the detail names {len(foreign_fams & alternatives)} other ways {kind} fails "
                           "besides this one (stuffing)")
    return True, ""
