"""Prior-exploiting adversaries: policies that never reason from a symptom, scored on the curated tasks.

    python benchmarks/bench_priors.py [--seeds 5-14] [--policies page,page_reads,evacuate] [--workers 2]

A benchmark whose pages predict their fixes can be won by a lookup on the page. These policies measure
how much of the score such priors buy (docs/scoring.md, "Open weaknesses"); each must stay below the
shotgun adversary's bound of 10 marks. Seeds default to 5-14, outside the reference run's 0-4.

* ``evacuate``: read the replica list, fail the database over, drain the old primary's node, blame its
  hardware with a detail naming every way hardware fails.
* ``page``: one write chosen from the page alone: scale the workers on a queue backlog, roll the web
  tier back on a latency page, renew the certificate on a total outage, call "no fault" on a database
  latency page, else fail over and drain the primary's node; then blame what that write fixes.
* ``page_reads``: ``page`` after a fixed broad set of reads (warnings of every service, every database
  and queue view, dmesg on every node) whose results it ignores: grounding asks whether the evidence
  was read, not whether it was used, so this is the policy grounding cannot stop.

Prints each policy's mean marks and the tasks where a prior pays (mean 50 marks or more).
"""

from __future__ import annotations

import argparse
import re
import statistics
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import srezero
from srezero.agents.runner import run_episode
from srezero.episode import Briefing

Action = dict[str, Any]
HARDWARE = "sector errors / ecc / thermal / power / NotReady / fail-slow slow disk latency"
SERVICES = ("load_balancer", "web_server", "cache", "database", "message_queue", "worker")
BOUND = 10.0  # the shotgun adversary's bound (tests/scoring/test_scoring_suite.py)


def call(tool: str, **args: Any) -> Action:
    return {"tool": tool, "args": args}


class Scripted:
    """An agent whose plan is a generator that sees the last observation in ``self.last``."""

    def reset(self, briefing: Briefing, seed: int, tool_specs: Any) -> None:
        self.page = briefing.page
        self.last: Any = None
        self.plan = self.script()

    def act(self, obs: Any) -> Action:
        self.last = obs
        return next(self.plan, call("resolve"))

    def script(self) -> Iterator[Action]:
        raise NotImplementedError

    def _primary_node(self) -> Iterator[Action]:
        yield call("get_status")
        self.primary = next((r["node"] for r in self.last.data if r.get("role") == "primary"), "")
        self.nodes = sorted({r["node"] for r in self.last.data if r.get("node")})

    def _evacuate(self) -> Iterator[Action]:
        yield call("failover", service="database")
        if self.primary:
            yield call("drain_node", node=self.primary)

    def _finish(self, claims: list[dict[str, str]]) -> Iterator[Action]:
        yield call("wait", seconds=300)
        yield call("submit_diagnosis", root_causes=claims, summary="")


class Evacuate(Scripted):
    def script(self) -> Iterator[Action]:
        yield from self._primary_node()
        yield from self._evacuate()
        yield from self._finish([{"entity": self.primary, "category": "hardware", "detail": HARDWARE}])


class Page(Scripted):
    reads = False

    def script(self) -> Iterator[Action]:
        yield from self._primary_node()
        if self.reads:
            yield from self._broad_reads()
        page = self.page
        edge = re.search(r"is (\d+(?:\.\d+)?)%", page)
        if "QueueBacklogGrowing" in page:
            yield call("scale", service="worker", replicas=6)
            claims = [{"entity": "worker", "category": "capacity", "detail": "too few consumers for the backlog"}]
        elif "HighLatencyP99" in page:
            yield call("rollback", service="web_server")
            claims = [{"entity": "web_server", "category": "code_defect", "detail": "the latest release regressed"}]
        elif edge and float(edge.group(1)) >= 99.0:
            yield call("renew_certificate", service="load_balancer")
            claims = [{"entity": "load_balancer", "category": "authentication", "detail": "the TLS certificate expired"}]
        elif "DatabaseLatencyHigh" in page:
            claims = []
        else:
            yield from self._evacuate()
            claims = [{"entity": self.primary, "category": "hardware", "detail": HARDWARE}]
        yield from self._finish(claims)

    def _broad_reads(self) -> Iterator[Action]:
        for service in SERVICES:
            yield call("search_logs", service=service, level="warn")
        for view in ("activity", "locks", "replication", "tables", "indexes"):
            yield call("inspect_database", view=view)
        for view in ("queues", "messages", "consumers"):
            yield call("inspect_queue", view=view)
        for node in self.nodes:
            yield call("node_diagnostics", node=node, check="dmesg")


class PageReads(Page):
    reads = True


POLICIES: dict[str, type[Scripted]] = {"page": Page, "page_reads": PageReads, "evacuate": Evacuate}


def _episodes(job: tuple[str, str, list[int]]) -> list[tuple[str, str, int, float]]:
    policy, task, seeds = job
    return [(policy, task, seed, run_episode(srezero.make(task, seed=seed), POLICIES[policy](), seed)["result"]["marks"])
            for seed in seeds]


def seed_range(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="5-14", help="a seed or an inclusive range, e.g. 5-14")
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    seeds, policies = seed_range(args.seeds), args.policies.split(",")
    tasks = [t.id for t in srezero.list_tasks()]
    jobs = [(p, t, seeds) for p in policies for t in tasks]
    with ProcessPoolExecutor(args.workers) as pool:
        rows = [row for rows in pool.map(_episodes, jobs) for row in rows]
    print(f"{len(tasks)} tasks x seeds {args.seeds}; bound {BOUND:g}")
    for policy in policies:
        mine = [r for r in rows if r[0] == policy]
        mean = statistics.fmean(r[3] for r in mine)
        paying = []
        for task in tasks:
            task_mean = statistics.fmean(r[3] for r in mine if r[1] == task)
            if task_mean >= 50.0:
                paying.append(f"{task} {task_mean:.0f}")
        print(f"{policy:<11} {mean:5.1f} {'over the bound' if mean > BOUND else ''}")
        print(f"            pays on: {', '.join(paying) or 'no task'}")


if __name__ == "__main__":
    main()
