"""Evidence credit for listings that mix entities: each line counts for its own entity, whatever
filter the call used."""

from __future__ import annotations

import pytest

import srezero
from srezero.scoring.evidence import EvidenceTracker

SIGNAL = ("get_events", "node-a", {}, "terminated")
CHILDREN = {"node-a": {"db-1", "web-1"}, "node-b": {"web-2"}, "database": {"db-1"}}


def test_a_line_about_the_signal_entity_counts_through_any_filter() -> None:
    ev = EvidenceTracker([SIGNAL], CHILDREN)
    text = "t1 Normal Error web-2: Container web terminated: Error\nt2 Normal Error db-1: Container database terminated"
    assert ev.observe(1, "get_events", {"entity": ""}, text, ("web-2", "db-1")) == [0]
    ev = EvidenceTracker([SIGNAL], CHILDREN)
    assert ev.observe(1, "get_events", {"entity": "database"}, text.split("\n")[1], ("db-1",)) == [0]


def test_a_matching_line_about_another_entity_does_not_count() -> None:
    ev = EvidenceTracker([SIGNAL], CHILDREN)
    text = "t1 Normal Error web-2: Container web terminated: Error\nt2 Normal Started db-1: Container database started"
    assert ev.observe(1, "get_events", {"entity": ""}, text, ("web-2", "db-1")) == []
    assert ev.glimpsed_at_step == {0: 1}  # the pattern was on screen, only not about the node
    # without per-line entities (any other tool) an unaimed read never counts
    assert ev.observe(2, "get_events", {"entity": "node-b"}, text) == []


def test_pod_events_read_through_their_service_surface_the_node_signal() -> None:
    # inc-021 seed 1: ECC errors on the database's node; its pod's termination is in the service's events
    env = srezero.make("inc-021", seed=1)
    env.reset()
    node = next(s[1] for s in env.evidence.signals if s[0] == "get_events")
    pods = {r.name for r in env.world.topo.node_by_name[node].replicas}
    obs, *_ = env.step("get_events(entity='database')")
    shown = [line for line in obs.text.splitlines() if "terminated" in line and any(p in line for p in pods)]
    assert shown, "the scenario must show the node's pod terminating through its service"
    assert env.evidence.found[[s[0] for s in env.evidence.signals].index("get_events")]


def test_another_read_of_the_same_fact_surfaces_a_signal_once() -> None:
    alt = ("inspect_queue", "*", {"view": "queues"}, "")
    ev = EvidenceTracker([("query_metrics", "message_queue", {"metric": "consume_rate"}, "")], {}, {0: [alt]})
    assert ev.observe(1, "inspect_queue", {"view": "consumers"}, "CONSUMER ...") == []
    assert ev.observe(2, "inspect_queue", {"view": "queues"}, "QUEUE READY ...") == [0]
    assert ev.observe(3, "query_metrics", {"target": "message_queue", "metric": "consume_rate"}, "...") == []
    assert ev.coverage == 1.0 and ev.report()["found"] == ["query_metrics(message_queue, metric='consume_rate')"]


def test_the_broker_s_view_of_its_rates_counts_for_the_rate_metrics() -> None:
    # dogfooding, inc-040 seed 13: the consume rate read through inspect_queue earned nothing
    env = srezero.make("inc-040", seed=13)
    env.reset()
    env.step("inspect_queue(view='queues')")
    found = env.evidence.report()["found"]
    assert {"query_metrics(message_queue, metric='consume_rate')",
            "query_metrics(message_queue, metric='publish_rate')"} <= set(found)


def _node_of(env, tool: str, check: str) -> str:
    """The node a task's node_diagnostics signal reads (the fault's node)."""
    return next(s[1] for s in env.evidence.signals if s[0] == tool and s[2].get("check") == check)


def _pod_node(service: str):
    return lambda env: env.world.services[service].replicas[0].node.name


#: (task, seed, a read of the fact through another tool, the signal it stands for, a read that does not show it).
#: Each row is one kind of alternative (Signal.alt); a read is a string, or a function of the episode for a node.
ALTERNATIVES = [
    # a log line a failed request also ends with in a trace
    ("inc-048", 1, "get_traces(errors_only=True)", "search_logs(web_server) showing /too many clients/",
     "get_status(service='web_server')"),
    # a config value a console shows: the broker's policy line, the standby's settings
    ("inc-045", 1, "inspect_queue(view='queues')", "get_config(message_queue) showing /visibility_timeout_s = ",
     "inspect_queue(view='consumers')"),
    ("inc-047", 1, "inspect_database(view='replication')", "get_config(database) showing /max_standby_streaming_delay_s",
     "inspect_database(view='activity')"),
    # a metric's anomalous value in a console: lock waiters, the age of the queue's head, a low hit ratio, dead tuples
    ("inc-024", 1, "inspect_database(view='locks')", "query_metrics(database, metric='lock_waits')",
     "inspect_database(view='tables')"),
    ("inc-037", 1, "inspect_queue(view='messages')", "query_metrics(message_queue, metric='queue_age_s')",
     "inspect_queue(view='consumers')"),
    ("inc-035", 1, "inspect_cache(section='info')", "query_metrics(cache, metric='hit_ratio')",
     "inspect_cache(section='hotkeys')"),
    ("inc-026", 1, "inspect_database(view='tables')", "query_metrics(database, metric='dead_tuple_pct')",
     "inspect_database(view='indexes')"),
    # the cache's own count of rejected AUTH for its WRONGPASS lines
    ("inc-034", 1, "inspect_cache(section='info')", "search_logs(cache) showing /WRONGPASS/",
     "inspect_cache(section='hotkeys')"),
    # Kubernetes' BackOff events: the crash loop and the start-up error it quotes
    ("inc-001", 1, "get_events(entity='worker')", "get_status(worker) showing /CrashLoopBackOff/",
     "get_changes(service='worker')"),
    ("inc-001", 1, "get_events(entity='worker')", "search_logs(worker) showing /DATABASE_URL/",
     "get_status(service='worker')"),
    # the change that set a value, where the primitive declares only the live config
    ("inc-001", 1, "get_changes()", "get_config(worker) showing /env\\.DATABASE_URL/", "get_events(entity='worker')"),
    # the disk's SMART error count and the node's error counter for the kernel's I/O errors
    ("inc-002", 1, lambda env: f"node_diagnostics(node='{_node_of(env, 'node_diagnostics', 'dmesg')}', check='disk')",
     "check='dmesg') showing /I/O error/", lambda env: f"node_diagnostics(node='{_node_of(env, 'node_diagnostics', 'dmesg')}', check='top')"),
    ("inc-002", 1, lambda env: f"query_metrics(target='{_node_of(env, 'node_diagnostics', 'dmesg')}', metric='disk_io_errors')",
     "check='dmesg') showing /I/O error/",
     lambda env: f"query_metrics(target='{_node_of(env, 'node_diagnostics', 'dmesg')}', metric='disk_latency_ms')"),
    # a full data volume in the node's usage metric
    ("inc-032", 1, lambda env: f"query_metrics(target='{_node_of(env, 'node_diagnostics', 'disk')}', metric='data_disk_used_pct')",
     "check='disk') showing /used", lambda env: f"query_metrics(target='{_node_of(env, 'node_diagnostics', 'disk')}', "
                                             "metric='root_disk_used_pct')"),
    # a pod's cgroup in the node's limits: the cache's memory limit, the web tier's CPU quota
    ("inc-049", 1, lambda env: f"node_diagnostics(node='{_pod_node('cache')(env)}', check='limits')",
     "get_config(cache) showing /memory_limit_mb", lambda env: f"node_diagnostics(node='{_pod_node('cache')(env)}', check='disk')"),
    ("inc-046", 1, lambda env: f"node_diagnostics(node='{_pod_node('web_server')(env)}', check='limits')",
     "get_config(web_server) showing /cpu_limit/", "get_status(service='web_server')"),
    # the kernel's cgroup OOM kill of the cache for its OOMKilled event
    ("inc-049", 1, lambda env: f"node_diagnostics(node='{_pod_node('cache')(env)}', check='dmesg')",
     "get_events(cache) showing /OOMKilled/", lambda env: f"node_diagnostics(node='{_pod_node('cache')(env)}', check='top')"),
    # a primitive that resolves its own signals (a disk's victim service): the trace counts for its log signal
    ("inc-019", 1, "get_traces(errors_only=True)", "search_logs(database) showing /No space left on device/",
     "get_status(service='database')"),
]


@pytest.mark.parametrize(("task", "seed", "read", "signal", "unrelated"), ALTERNATIVES,
                         ids=[f"{r[0]}-{r[3].split('(')[0]}-{i}" for i, r in enumerate(ALTERNATIVES)])
def test_another_tool_s_read_of_the_fact_surfaces_the_signal(task, seed, read, signal, unrelated) -> None:
    env = srezero.make(task, seed=seed)
    env.reset()

    def covered() -> list[str]:
        return [d for d in env.evidence.report()["found"] if signal in d]

    unrelated = unrelated(env) if callable(unrelated) else unrelated
    read = read(env) if callable(read) else read
    obs, *_ = env.step(unrelated)  # it may surface the task's other signals, never this one
    assert not obs.text.startswith("error"), obs.text
    assert not covered(), f"{unrelated} must not surface {signal}"
    before = env.evidence.coverage
    obs, *_ = env.step(read)
    assert covered(), f"{read} shows the fact of {signal} but was not credited:\n{obs.text[:600]}"
    assert env.evidence.coverage > before
