"""Application primitives that ride on a change of code or secrets: a bad release, a stale rotated
credential, a feature flag that exercises a latent bug."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from srezero.faults.app import backoff, ship
from srezero.faults.base import FaultMeta, Param, Remedy, RootCause, Signal, register, value_tokens
from srezero.faults.common import Declared, esc, traced
from srezero.sim import changes
from srezero.sim import config as cfg

if TYPE_CHECKING:
    from srezero.sim.world import World


@register
class BadDeploy(Declared):
    """A release raises unhandled exceptions on some endpoints. Rolling back is the cure; a restart
    brings the same code back."""

    meta = FaultMeta(
        name="bad_deploy", layer="application", category="code_defect", targets=("service:web_server",),
        description="a release that raises unhandled exceptions on some endpoints",
        params=(Param("error_rate", float, 0.12, lo=0.03, hi=0.9, spread=0.3,
                      description="share of requests that hit the bug"),),
        signals=(Signal("search_logs", "service", pattern="Unhandled exception", description="the exceptions"),
                 Signal("get_changes", "any", pattern="<version>", description="the release that started it"),
                 Signal("get_traces", "service", args=(("errors_only", True),), pattern="unhandled exception",
                        description="failed requests ending in the web tier")),
        remedies=(Remedy("rollback", "roll web_server back once, to the previous release"),),
        wrong_fix_effects="restarts and scaling run the same code; a second rollback returns to the bad release",
        example="web_server", example_params=(("error_rate", 0.12),),
    )

    def prepare(self, w: World) -> None:
        self.service = "web_server"
        self.version = ""

    def inject(self, w: World) -> None:
        self.version = ship(w, self.service, "endpoint_errors", self.params["error_rate"]).version

    def subs(self, w: World) -> dict[str, str]:
        return {"version": esc(self.version)}

    def neutralised(self, w: World) -> bool:
        return w.services[self.service].deploy.defect != "endpoint_errors"

    def why_active(self, w: World) -> str:
        return f"web_server still runs {w.services['web_server'].deploy.version}, which raises on some endpoints"

    def root_cause(self, w: World) -> RootCause:
        return RootCause(entity=self.service, category="code_defect",
                         detail=f"release {self.version} raises unhandled exceptions on some endpoints",
                         detail_tokens=(self.version, "release", "deploy", "exception", "bug"),
                         fault=self.meta.name, layer=self.meta.layer)

    def oracle_fix(self, w: World) -> list[dict[str, Any]]:
        return [{"tool": "rollback", "args": {"service": self.service}}]

    def envelope_violations(self, w: World) -> list[list[dict[str, Any]]]:
        return [[{"tool": "rollback", "args": {"service": self.service}}] * 2]


@register
class StaleCredential(Declared):
    """The database password was rotated and the secret sync updated every client but one: that
    service keeps presenting the old credential and crash-loops on reconnect."""

    meta = FaultMeta(
        name="stale_credential", layer="application", category="authentication",
        targets=("service:web_server", "service:worker"),
        description="a database password rotation that one service never picked up",
        signals=(Signal("get_status", "service", pattern="CrashLoopBackOff", description="replicas crash-looping",
                        alt=(backoff(),)),
                 Signal("search_logs", "service", pattern="password authentication failed",
                        description="the database rejecting the old password",
                        alt=(backoff("password authentication failed"),)),
                 Signal("get_changes", "any", pattern="rotated", description="the rotation"),
                 Signal("get_config", "service", pattern=r"env\.CREDENTIALS_VERSION = '<old>'",
                        description="the stale secret version")),
        remedies=(Remedy("set_config", "env.CREDENTIALS_VERSION of the stale service = the rotated version"),),
        wrong_fix_effects="restarts reconnect with the same old password; rolling back code does not touch "
                          "secrets; reverting the rotation on one side breaks the services that moved on",
        example="web_server", alert="HighErrorRate",
    )

    def prepare(self, w: World) -> None:
        self.service = self.target.name
        self.old = str(w.services[self.service].config["env.CREDENTIALS_VERSION"])
        self.new = changes.next_secret(self.old)

    def inject(self, w: World) -> None:
        w.state.db_credential = self.new
        w.change("database", "config", changes.rotation("app-db-credentials", self.old, self.new), w.author())
        rotated = w.changes[-1].at
        for i, name in enumerate(("web_server", "worker")):  # the bot syncs after the rotation, as it always does
            if name == self.service:
                continue
            w.services[name].config["env.CREDENTIALS_VERSION"] = self.new
            for rep in w.services[name].replicas:  # the synced secret is reloaded by the running pods
                rep.cred = self.new
            changes.record(w, rotated + 40.0 + 20.0 * i, name, "config",
                           changes.secret_sync("env.CREDENTIALS_VERSION", self.old, self.new), "deploy-bot")

    def subs(self, w: World) -> dict[str, str]:
        return {"old": esc(self.old)}

    def neutralised(self, w: World) -> bool:
        return w.services[self.service].config.get("env.CREDENTIALS_VERSION") == w.state.db_credential

    def why_active(self, w: World) -> str:
        return (f"{self.service} presents database credentials "
                f"{w.services[self.service].config.get('env.CREDENTIALS_VERSION')}, not the rotated {self.new}")

    def root_cause(self, w: World) -> RootCause:
        return RootCause(entity=f"{self.service}.env.CREDENTIALS_VERSION", category="authentication",
                         detail=f"{self.service} still uses credential {self.old} after the rotation to {self.new}",
                         detail_tokens=("CREDENTIALS_VERSION", "credential", "password", "rotat", self.new),
                         aliases=(self.service,), fault=self.meta.name, layer=self.meta.layer)

    def oracle_fix(self, w: World) -> list[dict[str, Any]]:
        return [{"tool": "set_config", "args": {"service": self.service, "key": "env.CREDENTIALS_VERSION",
                                                "value": self.new}}]

    def envelope_violations(self, w: World) -> list[list[dict[str, Any]]]:
        wrong = changes.next_secret(self.new)
        return [[{"tool": "set_config", "args": {"service": self.service, "key": "env.CREDENTIALS_VERSION",
                                                 "value": v}}] for v in (self.old, wrong)]


@register
class FeatureFlagBug(Declared):
    """A feature flag is switched on and exercises a code path with a latent bug (shipped days ago,
    dark until now). Turning the flag off is the cure; rolling back would revert a release the schema
    needs, and a restart keeps the flag."""

    meta = FaultMeta(
        name="feature_flag_bug", layer="application", category="code_defect", targets=("service:web_server",),
        description="a feature flag switched on that exercises a latent bug in the running release",
        params=(Param("error_rate", float, 0.15, lo=0.03, hi=0.9, spread=0.3,
                      description="share of requests on the flagged path"),),
        signals=(Signal("get_changes", "any", pattern=r"feature_flag\.<flag>: (False|false) -> (True|true)",
                        description="the flag flip"),
                 Signal("get_config", "service", pattern=r"feature_flag\.<flag> = true", description="the flag is on"),
                 Signal("search_logs", "service", pattern="Unhandled exception", description="the exceptions",
                        alt=(traced("unhandled exception"),))),
        remedies=(Remedy("set_config", "turn the flag back off"),),
        wrong_fix_effects="rolling back reverts a release the schema needs and keeps the flag; restarts keep "
                          "the flag; turning off a different flag does nothing",
        example="web_server", example_params=(("error_rate", 0.15),),
    )

    def prepare(self, w: World) -> None:
        self.service = "web_server"
        c = w.services[self.service].config
        off = [f for f in cfg.FEATURE_FLAGS if not c.get(f"feature_flag.{f}")] or list(cfg.FEATURE_FLAGS)
        self.flag = off[int(w.rng_world.integers(0, len(off)))]
        self.key = f"feature_flag.{self.flag}"
        c[self.key] = False  # every flag on already (rare): this one was off until the incident

    def inject(self, w: World) -> None:
        c = w.services[self.service].config
        old = c.get(self.key)
        c[self.key] = True
        w.state.flag_bug_key, w.state.flag_bug_rate = self.key, self.params["error_rate"]
        w.change(self.service, "config", changes.edit_line(w, self.key, old, True), w.author())

    def subs(self, w: World) -> dict[str, str]:
        return {"flag": self.flag}

    def neutralised(self, w: World) -> bool:
        return not w.services[self.service].config.get(self.key)

    def why_active(self, w: World) -> str:
        return f"{self.key} is still on and its code path raises"

    def root_cause(self, w: World) -> RootCause:
        return RootCause(entity=f"{self.service}.{self.key}", category="code_defect",
                         detail=f"turning on {self.key} exercises a latent bug",
                         detail_tokens=(self.flag, "flag", *value_tokens(True)), aliases=(self.service,), fault=self.meta.name,
                         layer=self.meta.layer)

    def oracle_fix(self, w: World) -> list[dict[str, Any]]:
        return [{"tool": "set_config", "args": {"service": self.service, "key": self.key, "value": False}}]

    def envelope_violations(self, w: World) -> list[list[dict[str, Any]]]:
        other = next(f for f in cfg.FEATURE_FLAGS if f != self.flag)
        return [[{"tool": "set_config", "args": {"service": self.service, "key": f"feature_flag.{other}",
                                                 "value": False}}]]
