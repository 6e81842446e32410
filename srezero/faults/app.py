"""Application-layer primitives: bad config values, crash loops, leaks and retry storms."""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from srezero.errors import did_you_mean, toml_literal
from srezero.faults.base import (
    TYPE_WORDS,
    Fault,
    FaultMeta,
    Param,
    ParamError,
    Remedy,
    RootCause,
    Signal,
    direction_tokens,
    has_type,
    register,
    value_tokens,
)
from srezero.faults.envelopes import healthy
from srezero.sim import changes
from srezero.sim import config as cfg
from srezero.sim.components import Deploy

if TYPE_CHECKING:
    from srezero.sim.world import World


def backoff(quoting: str = "") -> Signal:
    """A ``Signal.alt`` for a crash loop: Kubernetes' BackOff event for the service's pods
    (``srezero.sim.lifecycle``), quoting the start-up error when ``quoting`` (a pattern) is given."""
    return Signal("get_events", "service",
                  pattern="Back-off restarting failed container" + (f": .*{quoting}" if quoting else ""))


def ship(w: World, svc_name: str, defect: str, rate: float, author: str | None = None, noise: bool = False) -> Deploy:
    """Roll out a new version of ``svc_name`` carrying ``defect`` (a cause, not a symptom; "" for a
    healthy release, which noise ships the same way). Its version step and release note are drawn as
    every release's are (srezero.sim.changes)."""
    svc = w.services[svc_name]
    message = changes.release_note(w)
    new = Deploy(changes.next_version(w, svc_name, svc.deploy.version), w.now, author or w.author(), message,
                 defect=defect, defect_rate=rate)
    svc.deploys.append(new)
    w.change(svc_name, "deploy", f"deployed {new.version}: {message}", new.author, noise=noise)
    w.emit("Normal", "ScalingReplicaSet", svc_name, f"Rolled out {svc_name} {new.version}")
    changes.roll(w, svc, new.version)
    return new


class ConfigFault(Fault):
    """Shared behaviour for faults that are one bad configuration value."""

    key: str = ""

    def prepare(self, w: World) -> None:
        svc = self.target.obj if self.target.kind == "service" else self.target.obj.service
        self.service = svc.kind
        self.key = self.params.get("key") or self.key
        if cfg.key_type(self.service, self.key) is None:
            keys = ", ".join(sorted(cfg.BY_SERVICE.get(self.service, {})))
            hint = did_you_mean(self.key, cfg.BY_SERVICE.get(self.service, {}))
            raise ParamError("key", f"{self.meta.name}: {self.service} has no config key {self.key!r}{hint} (its keys: "
                                    f"{keys})")
        self.original = svc.config.get(self.key)
        if "value" in self.params:  # the service would refuse it from anyone: a fault cannot set what set_config cannot
            want = cfg.key_type(self.service, self.key)
            if not has_type(self.params["value"], want):  # "40" for a number shows quoted in get_config, a giveaway
                raise ParamError("value", f"{self.meta.name}: {self.service}.{self.key} takes {TYPE_WORDS[want]}; "
                                          f"got {toml_literal(self.params['value'])}")
            try:
                cfg.check_range(self.service, self.key, self.params["value"])
            except ValueError as exc:
                raise ParamError("value", f"{self.meta.name}: {exc}") from None

    def bad_value(self, w: World) -> Any:
        return self.params["value"]

    def inject(self, w: World) -> None:
        value = self.bad_value(w)
        svc = w.services[self.service]
        old = svc.config.get(self.key)
        svc.config[self.key] = value
        w.change(self.service, "config", changes.edit_line(w, self.key, old, value), w.author())

    def neutralised(self, w: World) -> bool:
        return healthy(w, self.service, self.key, self.original)

    def why_active(self, w: World) -> str:
        value = w.services[self.service].config.get(self.key)
        return f"{self.service} {self.key} is {value!r}, outside its safe range (it was {self.original!r} before the incident)"

    def root_cause(self, w: World) -> RootCause:
        return RootCause(entity=f"{self.service}.{self.key}", category=self.meta.category,
                         detail=f"{self.key} set to {self.bad_value(w)!r}",
                         detail_tokens=(self.key, *value_tokens(self.bad_value(w)),
                                        *direction_tokens(self.original, self.bad_value(w))),
                         aliases=(self.service,), fault=self.meta.name, layer=self.meta.layer)

    def oracle_reads(self, w: World) -> list[dict[str, Any]]:
        return [{"tool": "get_config", "args": {"service": self.service}},
                {"tool": "get_changes", "args": {"service": self.service}}]

    def oracle_fix(self, w: World) -> list[dict[str, Any]]:
        return [{"tool": "set_config", "args": {"service": self.service, "key": self.key, "value": self.original}}]

    def signals(self, w: World) -> list[tuple[str, str, dict[str, Any], str]]:
        key = self.key.replace(".", r"\.")
        return [("get_config", self.service, {}, key), ("get_changes", "*", {}, key)]


@register
class BadConfig(ConfigFault):
    meta = FaultMeta(
        name="bad_config",
        layer="application",
        category="misconfiguration",
        targets=("service",),
        description="a configuration value pushed outside its safe range",
        params=(Param("key", str, "db_timeout_ms", description="config key to break"),
                Param("value", object, 40, description="the bad value")),
        signals=(Signal("get_config", "service", pattern="<key>", description="the bad value in the live config"),
                 Signal("get_changes", "any", pattern="<key>", description="the change that set it")),
        remedies=(Remedy("set_config", "restore a value inside the key's safe envelope (docs/faults.md)"),),
        wrong_fix_effects="restarts reload the same bad value; rolling back code does not touch config",
        example="web_server", example_params=(("key", "rate_limit_rps"), ("value", 20)),
    )


@register
class CrashLoop(ConfigFault):
    """A required environment variable is removed; every replica that restarts crash-loops."""

    meta = FaultMeta(
        name="crash_loop",
        layer="application",
        category="misconfiguration",
        targets=("service:web_server", "service:worker"),
        description="a required environment variable was removed, so the process exits at start-up",
        params=(Param("key", str, "env.DATABASE_URL", choices=("env.DATABASE_URL",)),),
        signals=(Signal("get_status", "service", pattern="CrashLoopBackOff", description="replicas crash-looping",
                        alt=(backoff(),)),
                 Signal("search_logs", "service", pattern="DATABASE_URL", description="the start-up error",
                        alt=(backoff("DATABASE_URL"),)),
                 Signal("get_config", "service", pattern="env\\.DATABASE_URL", description="the empty variable",
                        alt=(Signal("get_changes", "any", pattern=r"env\.DATABASE_URL: \S+ -> ''"),))),
        remedies=(Remedy("set_config", "set env.DATABASE_URL back to the database URL"),),
        wrong_fix_effects="restarts crash again at once; scaling adds more crashing replicas",
        example="web_server",
    )

    def bad_value(self, w: World) -> Any:
        return ""

    def inject(self, w: World) -> None:
        super().inject(w)
        # the variable is read at start-up, and the change restarts every replica at once (a config push,
        # not a readiness-gated rollout), so the whole service crash-loops: that is this fault's outage
        for rep in w.services[self.service].replicas:
            w.restart_replica(rep, reason="Rollout", by_agent=True)

    def root_cause(self, w: World) -> RootCause:
        rc = super().root_cause(w)
        rc.detail = f"{self.key} is empty, so {self.service} exits at start-up"
        rc.detail_tokens = ("DATABASE_URL", *value_tokens(""))
        return rc

    def oracle_reads(self, w: World) -> list[dict[str, Any]]:
        return [{"tool": "get_status", "args": {"service": self.service}},
                {"tool": "search_logs", "args": {"service": self.service, "pattern": "DATABASE_URL"}},
                {"tool": "get_config", "args": {"service": self.service}}]

    def signals(self, w: World) -> list[tuple[str, str, dict[str, Any], str]]:
        return [("get_status", self.service, {}, "CrashLoopBackOff"),
                ("search_logs", self.service, {}, "DATABASE_URL"),
                ("get_config", self.service, {}, r"env\.DATABASE_URL")]


@register
class MemoryLeak(Fault):
    """A new release leaks memory; replicas grow until the cgroup OOM-kills them, again and again."""

    meta = FaultMeta(
        name="memory_leak",
        layer="application",
        category="code_defect",
        targets=("service:web_server", "service:worker"),
        description="a release that leaks memory until replicas are OOM-killed",
        params=(Param("minutes_to_oom", float, 9.0, lo=3.0, hi=60.0, description="time from start to OOM kill"),),
        signals=(Signal("search_logs", "service", pattern="GC overhead", description="GC thrashing near the limit"),
                 Signal("query_metrics", "service", args=(("metric", "memory_mb"),), description="memory climbing"),
                 Signal("get_changes", "any", pattern="<version>", description="the release that started it")),
        remedies=(Remedy("rollback", "roll the service back to the previous release"),),
        wrong_fix_effects="restarts buy minutes before the next OOM kill; raising the memory limit only delays it",
        example="web_server", example_params=(("minutes_to_oom", 6.0),), alert="HighErrorRate",
    )

    def prepare(self, w: World) -> None:
        self.service = self.target.obj.kind if self.target.kind == "service" else self.target.obj.service.kind
        self.version = ""

    def inject(self, w: World) -> None:
        svc = w.services[self.service]
        limit = svc.config["memory_limit_mb"]
        base = svc.replicas[0].base_mem_mb
        rate = (limit - base) / (self.params["minutes_to_oom"] / 60.0)
        self.version = ship(w, self.service, "memory_leak", rate).version

    def neutralised(self, w: World) -> bool:
        return w.services[self.service].deploy.defect != "memory_leak"

    def why_active(self, w: World) -> str:
        return f"{self.service} still runs {w.services[self.service].deploy.version}, which leaks memory until OOM kills"

    def root_cause(self, w: World) -> RootCause:
        return RootCause(entity=self.service, category="code_defect", also=("resource_exhaustion",),
                         detail=f"release {self.version} leaks memory",
                         detail_tokens=("leak", self.version, "memory"), fault=self.meta.name, layer=self.meta.layer)

    def oracle_reads(self, w: World) -> list[dict[str, Any]]:
        rep = w.services[self.service].replicas[0].name  # memory is a per-replica metric
        return [{"tool": "search_logs", "args": {"service": self.service, "pattern": "GC overhead"}},
                {"tool": "query_metrics", "args": {"target": rep, "metric": "memory_mb"}},
                {"tool": "get_changes", "args": {"service": self.service}}]

    def oracle_fix(self, w: World) -> list[dict[str, Any]]:
        return [{"tool": "rollback", "args": {"service": self.service}}]

    def signals(self, w: World) -> list[tuple[str, str, dict[str, Any], str]]:
        return [("search_logs", self.service, {}, "GC overhead"),
                ("query_metrics", self.service, {"metric": "memory_mb"}, ""),
                ("get_changes", "*", {}, self.version.replace(".", r"\."))]


@register
class RetryStorm(Fault):
    """Metastable: an aggressive client timeout plus retries, pushed over the edge by a brief surge.

    The timeout and retries are a latent misconfiguration set days before. A transient traffic surge
    raises database latency past the client timeout; retries amplify the load, which keeps latency
    above the timeout after the surge ends. Only a sane retry policy (and time to drain) restores it.
    """

    meta = FaultMeta(
        name="retry_storm",
        layer="failure_mode",
        category="misconfiguration",
        targets=("service:web_server",),
        description="aggressive client timeouts and retries that latch the database into overload after a surge",
        params=(Param("timeout_factor", float, 1.3, lo=1.05, hi=5.0,
                      description="the aggressive client timeout, as a multiple of the healthy database latency"),
                Param("retries", int, 4, lo=2, hi=8),
                Param("surge", float, 1.9, lo=1.2, hi=4.0, description="traffic multiplier of the trigger"),
                Param("surge_s", float, 120.0, lo=30.0, hi=900.0)),
        signals=(Signal("get_config", "service", pattern="db_retries", description="the retry policy",
                        alt=(Signal("get_changes", "any", pattern=r"db_retries: \S+ -> [1-9]"),)),
                 Signal("query_metrics", "database", args=(("metric", "request_rate"),), description="amplified query load"),
                 Signal("search_logs", "service", pattern="timeout", description="client timeouts and retries")),
        remedies=(Remedy("set_config", "db_retries <= 1 and db_timeout_ms well above the database's healthy p99"),),
        wrong_fix_effects="scaling the web tier adds more retrying clients; restarting alone re-latches at the next surge",
        example="web_server", example_params=(("timeout_factor", 1.3), ("retries", 4), ("surge", 1.7), ("surge_s", 120.0)),
    )

    def prepare(self, w: World) -> None:
        web = w.services["web_server"]
        self.original = {"db_timeout_ms": web.config["db_timeout_ms"], "db_retries": web.config["db_retries"]}
        self.timeout_ms = max(3, round(self.params["timeout_factor"] * w.state.db_lat_ms))
        web.config["db_timeout_ms"] = self.timeout_ms
        web.config["db_retries"] = int(self.params["retries"])
        when = -float(w.rng_world.uniform(1.5, 3.5)) * 86400
        author = w.author()  # one edit of two keys: two entries, as every config change is one key
        for i, (key, value) in enumerate((("db_timeout_ms", self.timeout_ms), ("db_retries", self.params["retries"]))):
            changes.record(w, when + 2.0 * i, "web_server", "config",
                           changes.edit_line(w, key, self.original[key], value), author)

    def inject(self, w: World) -> None:
        w.state.surge *= self.params["surge"]

    def evolve(self, w: World) -> Generator[Any, Any, None]:
        yield w.env.timeout(self.params["surge_s"])
        w.state.surge /= self.params["surge"]

    def relapse_probe(self, w: World, delay: float) -> Generator[Any, Any, None]:
        """Replay the trigger during verification: a latent policy must not re-latch."""
        yield w.env.timeout(delay)
        w.state.surge *= self.params["surge"]
        yield w.env.timeout(self.params["surge_s"])
        w.state.surge /= self.params["surge"]

    def neutralised(self, w: World) -> bool:
        c = w.services["web_server"].config
        return int(c["db_retries"]) <= 1 and healthy(w, "web_server", "db_timeout_ms", self.original["db_timeout_ms"]) \
            and w.state.db_timeout_frac < 0.05

    def why_active(self, w: World) -> str:
        """Name what still holds the storm, matching :meth:`neutralised` clause by clause."""
        c = w.services["web_server"].config
        why = []
        if int(c["db_retries"]) > 1:
            why.append(f"web_server retries {c['db_retries']} times, multiplying the database's load")
        if not healthy(w, "web_server", "db_timeout_ms", self.original["db_timeout_ms"]):
            why.append(f"web_server's db_timeout_ms is {c['db_timeout_ms']} (it was {self.original['db_timeout_ms']} "
                       "before the incident), so database calls time out")
        if not why:
            why.append(f"{w.state.db_timeout_frac:.0%} of database calls still time out")
        return "; ".join(why)

    def root_cause(self, w: World) -> RootCause:
        return RootCause(entity="web_server.db_retries", category="misconfiguration",
                         detail=f"db_timeout_ms={self.timeout_ms} with db_retries={self.params['retries']} "
                                "amplifies load into a retry storm",
                         detail_tokens=("db_retries", "db_timeout_ms", "retry", "retries",
                                        *value_tokens(self.timeout_ms), *value_tokens(self.params["retries"])),
                         aliases=("web_server", "web_server.db_timeout_ms"), fault=self.meta.name, layer=self.meta.layer)

    def oracle_reads(self, w: World) -> list[dict[str, Any]]:
        return [{"tool": "query_metrics", "args": {"target": "database", "metric": "request_rate"}},
                {"tool": "search_logs", "args": {"service": "web_server", "pattern": "timeout"}},
                {"tool": "get_config", "args": {"service": "web_server"}}]

    def oracle_fix(self, w: World) -> list[dict[str, Any]]:
        return [{"tool": "set_config", "args": {"service": "web_server", "key": "db_retries", "value": 0}},
                {"tool": "set_config", "args": {"service": "web_server", "key": "db_timeout_ms",
                                                "value": self.original["db_timeout_ms"]}}]

    def signals(self, w: World) -> list[tuple[str, str, dict[str, Any], str]]:
        return [("get_config", "web_server", {}, "db_retries"),
                ("query_metrics", "database", {"metric": "request_rate"}, ""),
                ("search_logs", "web_server", {}, "timeout")]

