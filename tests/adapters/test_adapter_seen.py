"""Reading values off observations for the discrete env: what each listing binds, and what it clears."""

from __future__ import annotations

import pytest

from srezero.adapters._seen import Memory, Seen, literal


@pytest.mark.parametrize(("text", "value"), [("22", 22), ("2.0", 2.0), ("True", True), ("False", False),
                                             ("''", ""), ("32768 60999", "32768 60999"), ("/livez", "/livez"),
                                             ("postgres://app@db:5432/app", "postgres://app@db:5432/app")])
def test_a_printed_value_reads_back_as_typed(text: str, value: object) -> None:
    assert literal(text) == value and type(literal(text)) is type(value)


def _change(service: str, detail: str, kind: str = "config") -> dict[str, str]:
    return {"at": "2026-03-09T10:00:00Z", "service": service, "kind": kind, "detail": detail, "author": "dana"}


HISTORY = [
    _change("web_server", "max_open_files: 5635 -> 7168 (right-sizing)"),
    _change("database", "rotated password for role app (secret app-db-credentials v7 -> v8)"),
    _change("node", "node-a1: net.netfilter.nf_conntrack_max: 131072 -> 4096 (load test results)", "sysctl"),
    _change("web_server", "v2.5.0 -> v2.6.1", "deploy"),
    _change("web_server", "workers: 22 -> 1 (per incident review)"),
    _change("web_server", "env.DATABASE_URL: postgres://app@db:5432/app -> ''"),  # the agent's own: no reason
]


def test_the_full_history_binds_edits_newest_first_and_skips_what_is_not_an_edit() -> None:
    memory = Memory()
    assert memory.observe("get_changes", {}, "", HISTORY)
    assert memory.value(Seen("edit", 0, "key", "web_server"), "web_server") == "env.DATABASE_URL"
    assert memory.value(Seen("edit", 0, "old", "web_server"), "web_server") == "postgres://app@db:5432/app"
    assert memory.value(Seen("edit", 1, "old", "web_server"), "web_server") == 22
    assert memory.value(Seen("edit", 2, "key", "web_server"), "web_server") == "max_open_files"
    assert memory.value(Seen("edit", 3, "key", "web_server"), "web_server") is None  # the deploy is no edit
    assert memory.value(Seen("edit", 0, "key", "database"), "database") is None  # nor is a secret rotation
    assert memory.value(Seen("sysctl", 0, "old", None), "node-a1") == 131072
    assert not memory.observe("get_changes", {}, "", HISTORY), "the same listing changes nothing"


def test_a_service_history_replaces_only_that_service_and_a_full_one_clears_old_nodes() -> None:
    memory = Memory()
    memory.observe("get_changes", {}, "", HISTORY)
    memory.observe("get_changes", {"service": "web_server"}, "", HISTORY[:1])
    assert memory.value(Seen("edit", 0, "key", "web_server"), "web_server") == "max_open_files"
    assert memory.value(Seen("sysctl", 0, "key", None), "node-a1") == "net.netfilter.nf_conntrack_max"
    memory.observe("get_changes", {"window_h": 1.0}, "", HISTORY[4:])
    assert memory.value(Seen("sysctl", 0, "key", None), "node-a1") is None
    assert memory.value(Seen("edit", 0, "key", "web_server"), "web_server") == "env.DATABASE_URL"


TOP = """top on node-a1:
node-a1: 16 cores, load average 2.00, 6.2/32 GiB memory used
PROCESS                               CPU%   MEM MB  STATE
web_server (web-7b4wh)               115.9      469  Running
backup-compress (cron)                90.0     1400  Running
worker (worker-8c9kr)                 59.0      349  Running
fluent-bit (systemd)                   3.0      346  Running"""


def test_top_binds_host_processes_in_order_and_never_a_pod() -> None:
    memory = Memory()
    memory.observe("node_diagnostics", {"node": "node-a1", "check": "top"}, TOP, None)
    names = [memory.value(Seen("process", r, "name"), "node-a1") for r in range(3)]
    assert names == ["backup-compress", "fluent-bit", None]
    memory.observe("node_diagnostics", {"node": "node-a1", "check": "dmesg"}, TOP, None)  # not a top: ignored
    assert memory.value(Seen("process", 0, "name"), "node-a1") == "backup-compress"
    memory.observe("node_diagnostics", {"node": "node-a1", "check": "top"}, "ssh: No route to host", None)
    assert memory.value(Seen("process", 0, "name"), "node-a1") is None


def test_console_views_bind_their_rows() -> None:
    memory = Memory()
    memory.observe("inspect_database", {"view": "locks"},
                   "database locks:\nblocking pid 22711 holds RowExclusiveLock on relation orders; 2 backend(s) "
                   "waiting:\n  pid 33845 (web-qsmcz) waiting Lock: transactionid", None)
    memory.observe("inspect_database", {"view": "replication"},
                   "database replication:\nstandby db-1: state streaming, replay lag 0 s\n"
                   "SLOT                         TYPE      ACTIVE RETAINED WAL\n"
                   "standby_db_1                 physical  true   0.1 GB\n"
                   "pgbackrest_811               physical  false  530.2 GB", None)
    memory.observe("inspect_queue", {"view": "messages"},
                   "message_queue messages:\nMESSAGE  DELIVERIES       AGE TYPE\n"
                   "3e950a          945  01:37:00 invoice.render\n483959            1  00:00:00 email.send", None)
    assert memory.value(Seen("blocker", 0, "pid"), None) == 22711
    assert memory.value(Seen("blocker", 1, "pid"), None) is None  # a waiter is not a blocker
    assert [memory.value(Seen("slot", r, "name"), None) for r in range(2)] == ["standby_db_1", "pgbackrest_811"]
    assert [memory.value(Seen("message", r, "id"), None) for r in range(3)] == ["3e950a", "483959", None]
    memory.observe("inspect_database", {"view": "locks"}, "database locks:\nno backends waiting on locks", None)
    assert memory.value(Seen("blocker", 0, "pid"), None) is None
    memory.clear()
    assert memory.value(Seen("slot", 0, "name"), None) is None


def test_slow_query_lines_bind_their_lookups_most_frequent_first() -> None:
    lines = ["17 line(s) from database",
             "2026-07-25T10:43:20Z WARN  db-1 LOG:  duration: 900.1 ms  statement: SELECT * FROM invoices "
             "WHERE order_id = $1 LIMIT 5",
             *["2026-07-25T10:43:26Z WARN  db-1 LOG:  duration: 3102.8 ms  statement: SELECT * FROM orders "
               "WHERE customer_id = $1 ORDER BY created_at DESC LIMIT 50"] * 2,
             "2026-07-25T10:43:27Z WARN  db-1 LOG:  duration: 2000.0 ms  statement: SELECT count(*) FROM events "
             "WHERE created_at > now() - interval '1 day'",  # a range scan names no column to index
             "2026-07-25T10:43:30Z ERROR db-1 ERROR:  canceling statement due to statement timeout"]
    memory = Memory()
    memory.observe("search_logs", {"service": "database", "level": "warn"}, "\n".join(lines), None)
    lookups = [(memory.value(Seen("slow_query", r, "table"), None), memory.value(Seen("slow_query", r, "column"), None))
               for r in range(3)]
    assert lookups == [("orders", "customer_id"), ("invoices", "order_id"), (None, None)]
    memory.observe("search_logs", {"service": "web_server"}, "\n".join(lines), None)  # not the database's logs
    assert memory.value(Seen("slow_query", 0, "table"), None) == "orders"
    memory.observe("search_logs", {"service": "database", "pattern": "x"}, "no log lines matching 'x'", None)
    assert memory.value(Seen("slow_query", 0, "table"), None) is None


def test_a_key_still_holding_a_replaced_value_binds_the_newest_replacement() -> None:
    """A rotated secret followed along later rotations; numbers and a value changed back never count."""
    history = [
        _change("database", "rotated password for role app (secret app-db-credentials v7 -> v8)"),
        _change("web_server", "env.CREDENTIALS_VERSION: v7 -> v8 (secret sync)"),
        _change("database", "rotated password for role app (secret app-db-credentials v8 -> v9)"),
        _change("cache", "auth_secret: cache-auth-v2 -> cache-auth-v3 (cleanup)"),
        _change("cache", "log_level: info -> debug (tuning)"),
        _change("cache", "log_level: debug -> info (tuning)"),
        _change("web_server", "workers: 22 -> 16 (right-sizing)"),
    ]
    config = {"concurrency": 22, "env.CREDENTIALS_VERSION": "v7", "log_level": "info", "cache_secret": "cache-auth-v2"}
    memory = Memory()
    assert not memory.observe("get_config", {"service": "worker"}, "", config), "no history read yet"
    assert memory.observe("get_changes", {}, "", history) >= {"stale"}
    rows = [(memory.value(Seen("stale", r, "key"), "worker"), memory.value(Seen("stale", r, "value"), "worker"))
            for r in range(3)]
    assert rows == [("cache_secret", "cache-auth-v3"), ("env.CREDENTIALS_VERSION", "v9"), (None, None)]
    memory.observe("get_config", {"service": "worker"}, "", {**config, "env.CREDENTIALS_VERSION": "v9",
                                                             "cache_secret": "cache-auth-v3"})
    assert memory.value(Seen("stale", 0, "key"), "worker") is None, "the latest config holds nothing stale"


def test_the_last_accepted_submission_binds_its_claims() -> None:
    memory = Memory()
    claim = {"entity": "worker", "category": "code_defect", "detail": ""}
    assert memory.observe("submit_diagnosis", {"root_causes": [claim]}, "diagnosis recorded", None) == {"claim"}
    bound = memory.value(Seen("claim", 0, "claim"), None)
    assert bound == claim and bound is not claim, "a copy: the agent's later edits to its own dict change nothing"
    memory.observe("submit_diagnosis", {"root_causes": []}, "diagnosis recorded", None)
    assert memory.value(Seen("claim", 0, "claim"), None) is None, "no fault: nothing to add to"
