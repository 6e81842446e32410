"""Evidence credit for listings that mix entities: each line counts for its own entity, whatever
filter the call used."""

from __future__ import annotations

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
