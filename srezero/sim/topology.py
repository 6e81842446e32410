"""Seeded construction of the system: nodes, services, replicas, placement and healthy config.

    clients -> load_balancer -> web_server (N replicas) -> cache
                                                       -> database (primary + replica)
                                                       -> message_queue -> worker

Names, placement, sizes and healthy values all vary with the seed; the shape does not.
"""

from __future__ import annotations

from dataclasses import dataclass

from srezero.sim import config
from srezero.sim.components import HOST_DAEMONS, Daemon, Deploy, Disk, Node, Replica, Service
from srezero.sim.rng import Stream, stable_int, suffix

SHORT_NAMES = {
    "load_balancer": "lb",
    "web_server": "web",
    "cache": "cache",
    "database": "db",
    "message_queue": "mq",
    "worker": "worker",
}
STARTUP_S = {"load_balancer": 10.0, "web_server": 25.0, "cache": 10.0, "database": 60.0,
             "message_queue": 20.0, "worker": 15.0}
BASE_MEM_MB = {"load_balancer": 180.0, "web_server": 420.0, "cache": 900.0, "database": 2600.0,
               "message_queue": 600.0, "worker": 320.0}
AUTHORS = ("alice", "bob", "chen", "dana", "emeka", "farah", "goran", "hana", "deploy-bot", "renovate")
DISK_MODELS = ("SAMSUNG MZQL2960HCJR", "Micron 7450 MTFDKCC960TFR", "INTEL SSDPF2KX960HZ", "KIOXIA KCD81RUG960G")


@dataclass(frozen=True)
class TopologySize:
    """How big the system is. ``None`` lets the seed choose within the usual range."""

    nodes: int | None = None
    web_replicas: int | None = None
    worker_replicas: int | None = None


class Topology:
    """The built system. ``services`` is keyed by kind; ``entities`` indexes every named thing."""

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        self.services: dict[str, Service] = {}
        self.replicas: dict[str, Replica] = {}
        self.node_by_name: dict[str, Node] = {}
        self.disks: dict[str, Disk] = {}
        self.conventions: config.Conventions

    def replica_list(self) -> list[Replica]:
        return [r for s in self.services.values() for r in s.replicas]

    def db_primary(self) -> Replica:
        for r in self.services["database"].replicas:
            if r.role == "primary":
                return r
        raise LookupError("no database primary")

    def db_standby(self) -> Replica:
        for r in self.services["database"].replicas:
            if r.role == "replica":
                return r
        raise LookupError("no database replica")


def _version(rng: Stream) -> tuple[int, int, int]:
    return (int(rng.integers(1, 4)), int(rng.integers(0, 30)), int(rng.integers(0, 12)))


def build(size: TopologySize, rng: Stream, conventions_rng: Stream) -> Topology:
    topo = Topology()
    topo.conventions = conv = config.conventions(conventions_rng)
    n_nodes = size.nodes or int(rng.integers(4, 6))
    zones = ("a", "b", "c")
    for i in range(n_nodes):
        node = Node(f"node-{suffix(rng, 4)}", i, f"zone-{zones[i % 3]}", cores=(8, 16)[int(rng.integers(0, 2))],
                    mem_total_mb=(32768.0, 65536.0)[int(rng.integers(0, 2))])
        root = Disk(node, "nvme0n1", 100.0, float(rng.uniform(25, 45)), float(rng.uniform(0.15, 0.3)),
                    DISK_MODELS[int(rng.integers(0, len(DISK_MODELS)))], f"S{suffix(rng, 10).upper()}")
        data = Disk(node, "nvme1n1", 960.0, float(rng.uniform(280, 520)), float(rng.uniform(0.2, 0.4)),
                    DISK_MODELS[int(rng.integers(0, len(DISK_MODELS)))], f"S{suffix(rng, 10).upper()}")
        root.growth_gb_per_h = float(rng.uniform(0.05, 0.2))
        data.growth_gb_per_h = float(rng.uniform(0.2, 0.8))
        node.disks = [root, data]
        root.reclaim["/var/log/journal"] = 1.2 + 0.3 * i  # what cleanup_disk finds on a healthy node
        # each node's daemons hold their own amount of memory: no figure is the same on every healthy node
        node.daemons = [Daemon(name, kind, cpu, round(mb * (0.6 + stable_int(node.name, name) % 90 / 100.0), 1), fds)
                        for name, kind, cpu, mb, fds in HOST_DAEMONS]
        node.fd_max, node.conntrack_max, node.port_lo, port_hi = conv.kernel
        node.ephemeral_ports = port_hi - node.port_lo + 1
        node.retotal()
        topo.nodes.append(node)
        topo.node_by_name[node.name] = node
        for d in node.disks:
            topo.disks[d.name] = d

    counts = {
        "load_balancer": 1,
        "web_server": size.web_replicas or int(rng.integers(3, 5)),
        "cache": 1,
        "database": 2,
        "message_queue": 1,
        "worker": size.worker_replicas or int(rng.integers(2, 4)),
    }
    order = rng.permutation(n_nodes)
    cursor = 0

    def next_node(avoid: set[int] = frozenset()) -> Node:  # type: ignore[assignment]
        nonlocal cursor
        for _ in range(n_nodes):
            node = topo.nodes[int(order[cursor % n_nodes])]
            cursor += 1
            if node.index not in avoid:
                return node
        return topo.nodes[int(order[0])]

    for kind, count in counts.items():
        service = Service(kind=kind, startup_s=STARTUP_S[kind])
        service.config = config.defaults(kind, rng)
        major, minor, patch = _version(rng)
        prev = f"v{major}.{minor}.{patch}"
        cur = f"v{major}.{minor + 1}.{int(rng.integers(0, 4))}"
        service.deploys = [
            Deploy(prev, at=-float(rng.uniform(5, 12)) * 86400, author=AUTHORS[int(rng.integers(0, len(AUTHORS)))], message="release"),
            Deploy(cur, at=-float(rng.uniform(1, 4)) * 86400, author=AUTHORS[int(rng.integers(0, len(AUTHORS)))], message="release",
                   needed_by_schema=bool(kind in ("web_server", "worker"))),
        ]
        used: set[int] = set()
        for i in range(count):
            node = next_node(used if kind == "database" else frozenset())
            used.add(node.index)
            name = f"{SHORT_NAMES[kind]}-{suffix(rng, 5)}"
            role = ("primary" if i == 0 else "replica") if kind == "database" else ""
            rep = Replica(name, service, node, i, role)
            rep.base_mem_mb = BASE_MEM_MB[kind] * float(rng.uniform(0.9, 1.15))
            rep.mem_mb = rep.base_mem_mb
            rep.version = cur
            service.replicas.append(rep)
            node.replicas.append(rep)
            topo.replicas[name] = rep
        topo.services[kind] = service

    lb = topo.services["load_balancer"]
    for rep in topo.services["web_server"].replicas:
        lb.config[f"backend_weight.{rep.name}"] = conv.weight_scale
    for (svc, key), value in (*conv.overrides.items(), *conv.quirks.items()):
        topo.services[svc].config[key] = value
    web = topo.services["web_server"]
    for flag in config.FEATURE_FLAGS:
        web.config[f"feature_flag.{flag}"] = bool(rng.random() < 0.3)
    credentials = f"v{int(rng.integers(3, 9))}"  # one secret, so one version for every consumer
    rng.integers(3, 9)  # a second draw, as when each consumer drew its own: the seeded worlds stay as they were
    for svc in ("web_server", "worker"):
        topo.services[svc].config["env.DATABASE_URL"] = conv.database_url()
        topo.services[svc].config["env.CREDENTIALS_VERSION"] = credentials
    return topo
