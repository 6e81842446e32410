"""Load-balancer primitives: the edge refuses, misroutes or cuts requests before the web tier sees them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from srezero.faults.base import FaultMeta, Param, Remedy, RootCause, Signal, register, value_tokens
from srezero.faults.common import CFG, CHANGE, Declared, TunedConfig, baseline, esc, live, traced
from srezero.sim import changes

if TYPE_CHECKING:
    from srezero.sim.world import World

LB = "load_balancer"


def _set(key: str, value: Any) -> list[dict[str, Any]]:
    return [{"tool": "set_config", "args": {"service": LB, "key": key, "value": value}}]


@register
class BadBackendWeight(Declared):
    """One backend's weight raised far above the others (a canary warm-up never reverted): that
    replica takes most of the traffic and sheds it, while the others idle."""

    meta = FaultMeta(
        name="bad_backend_weight", layer="load_balancer", category="misconfiguration",
        targets=("replica:web_server",),
        description="one backend weighted far above the rest, so one replica gets most of the traffic",
        params=(Param("weight", int, 50, lo=5, hi=1000,
                      description="the runaway weight, in units of the others' weight (all equal when healthy)"),),
        signals=(Signal("get_config", "load_balancer", pattern=r"backend_weight\.<rep> = <weight>\b",
                        alt=(Signal("get_changes", "any", pattern=r"backend_weight\.<rep>: \S+ -> <weight>\b"),),
                        description="the runaway weight"),
                 Signal("query_metrics", "target", args=(("metric", "request_rate"),),
                        description="one replica taking most requests"),
                 Signal("search_logs", "target", pattern="worker pool saturated", description="it sheds load")),
        remedies=(Remedy("set_config", "the replica's backend_weight back in line with the others (within 2x)"),),
        wrong_fix_effects="restarting the hot replica shifts its load for a moment; scaling adds idle replicas "
                          "while the weighted one stays overloaded",
        example="web_server[*]", example_params=(("weight", 50),),
    )

    def prepare(self, w: World) -> None:
        self.rep = self.target.name
        self.key = f"backend_weight.{self.rep}"

    def _weight(self, w: World) -> int:
        return int(self.params["weight"]) * w.topo.conventions.weight_scale

    def inject(self, w: World) -> None:
        c = w.services[LB].config
        old = c.get(self.key)
        c[self.key] = self._weight(w)
        w.change(LB, "config", changes.edit_line(w, self.key, old, self._weight(w)), w.author())

    def subs(self, w: World) -> dict[str, str]:
        return {"rep": esc(self.rep), "weight": str(self._weight(w))}

    def neutralised(self, w: World) -> bool:
        c = w.services[LB].config
        ws = [float(c.get(f"backend_weight.{r.name}", 1)) for r in live(w, "web_server")]
        if not ws:  # no backends left (scaled to zero): nothing is balanced, and that is not a cure
            return False
        return min(ws) > 0 and max(ws) <= 2 * min(ws)

    def why_active(self, w: World) -> str:
        return f"{self.key} is {w.services[LB].config.get(self.key)}, out of line with the other backends"

    def root_cause(self, w: World) -> RootCause:
        return RootCause(entity=f"load_balancer.{self.key}", category="misconfiguration",
                         detail=f"{self.key} = {self._weight(w)} sends most traffic to {self.rep}",
                         detail_tokens=("backend_weight", str(self._weight(w))), aliases=(LB,), fault=self.meta.name,
                         layer=self.meta.layer)

    def oracle_fix(self, w: World) -> list[dict[str, Any]]:
        return _set(self.key, w.topo.conventions.weight_scale)

    def envelope_violations(self, w: World) -> list[list[dict[str, Any]]]:
        return [_set(self.key, 0), _set(self.key, 4 * w.topo.conventions.weight_scale)]


@register
class WrongHealthCheckPath(TunedConfig):
    """The health-check path points at a URL the app does not serve: every backend fails its probe
    and the load balancer has nowhere to send requests."""

    meta = FaultMeta(
        name="wrong_health_check_path", layer="load_balancer", category="misconfiguration",
        targets=("service:load_balancer",),
        description="a health-check path that returns 404, so every backend is marked down",
        params=(Param("value", str, "/status", choices=("/status", "/healthcheck", "/api/health"),
                      description="the wrong path"),),
        signals=(CFG, CHANGE, Signal("search_logs", "load_balancer", pattern="health check GET",
                                    description="probes failing"),
                 Signal("query_metrics", "load_balancer", args=(("metric", "healthy_backends"),),
                        description="no healthy backends")),
        remedies=(Remedy("set_config", "health_check_path = the path the web tier serves (the value before the "
                         "change; the web servers' own logs show their probes)"),),
        wrong_fix_effects="restarting or scaling the web tier adds backends that fail the same probe",
        example="load_balancer", example_params=(("value", "/status"),),
    )
    key = "health_check_path"
    reason = "standardise probes"

    def subs(self, w: World) -> dict[str, str]:
        return {**super().subs(w), "value": esc(repr(self.bad_value(w)))}

    def compute_bad(self, w: World) -> Any:
        # the path some other app serves (another world's healthy value), never this app's own
        wanted = self.params["value"]
        if wanted != w.state.health_path:
            return wanted
        return next(p for p in self.meta.params[0].choices if p != wanted)

    def probes(self, w: World) -> tuple[Any, Any]:
        return "/ready", None


@register
class TlsCertExpired(Declared):
    """The serving certificate expired: automatic renewal has been failing for days. Every TLS
    handshake at the edge fails until a new certificate is issued and loaded."""

    meta = FaultMeta(
        name="tls_cert_expired", layer="load_balancer", category="authentication", targets=("service:load_balancer",),
        description="an expired TLS certificate at the edge after renewal kept failing",
        signals=(Signal("search_logs", "load_balancer", pattern="certificate has expired",
                        description="handshakes failing"),
                 Signal("get_config", "load_balancer", pattern=r"tls_cert_days_left = 0\b", description="days left"),
                 Signal("get_events", "load_balancer", pattern="CertificateRenewalFailed",
                        description="the renewal failures")),
        remedies=(Remedy("renew_certificate", "issue and load a new certificate (about 15 s)"),),
        wrong_fix_effects="restarts reload the same expired certificate; the days-left value is read-only",
        example="load_balancer",
    )

    def prepare(self, w: World) -> None:
        self.domain = "shop.example.com"

    def inject(self, w: World) -> None:
        w.services[LB].config["tls_cert_days_left"] = 0
        w.emit("Warning", "CertificateRenewalFailed", LB, f"cert-manager: failed to renew certificate for "
               f"{self.domain}: ACME order failed: DNS-01 challenge: record not found (attempt 9)")

    def neutralised(self, w: World) -> bool:
        return w.services[LB].config["tls_cert_days_left"] > 7

    def why_active(self, w: World) -> str:
        return "the load balancer still serves an expired certificate"

    def root_cause(self, w: World) -> RootCause:
        return RootCause(entity=LB, category="authentication", detail=f"the TLS certificate for {self.domain} expired",
                         detail_tokens=("certificate", "cert", "tls", "expired", "ssl"), fault=self.meta.name,
                         layer=self.meta.layer)

    def oracle_fix(self, w: World) -> list[dict[str, Any]]:
        return [{"tool": "renew_certificate", "args": {}}]

    def envelope_violations(self, w: World) -> list[list[dict[str, Any]]]:
        return [_set("tls_cert_days_left", 90)]


@register
class LbConnLimitLow(TunedConfig):
    """The edge's connection limit cut below the concurrent connections it carries: the excess is
    refused before it reaches the web tier."""

    meta = FaultMeta(
        name="lb_conn_limit_low", layer="load_balancer", category="misconfiguration",
        targets=("service:load_balancer",),
        description="a load-balancer connection limit below the concurrent connections at the edge",
        params=(Param("ratio", float, 0.5, lo=0.1, hi=0.9, description="the limit as a share of the connections"),),
        signals=(CFG, CHANGE, Signal("search_logs", "load_balancer", pattern="worker_connections are not enough",
                                    description="connections refused")),
        remedies=(Remedy("set_config", "max_connections at least 3x the request rate and at most 100000"),),
        wrong_fix_effects="scaling the web tier changes nothing: the edge refuses before routing; restarts "
                          "reload the same limit",
        example="load_balancer", example_params=(("ratio", 0.5),),
    )
    key = "max_connections"
    reason = "cap memory per worker"

    def compute_bad(self, w: World) -> Any:
        return max(1, int(baseline(w, LB, "active_connections") * self.params["ratio"]))

    def probes(self, w: World) -> tuple[Any, Any]:
        return int(baseline(w, LB, "active_connections") * 1.3), 1_000_000


@register
class LbIdleTimeoutLow(TunedConfig):
    """The upstream idle timeout cut to a second or two: slow requests (exports, reports) are cut
    off with 504s before they finish."""

    meta = FaultMeta(
        name="lb_idle_timeout_low", layer="load_balancer", category="misconfiguration",
        targets=("service:load_balancer",),
        description="an upstream idle timeout shorter than the slow requests it must carry",
        params=(Param("value", int, 1, lo=1, hi=5, description="the timeout in seconds"),),
        signals=(CFG, CHANGE, Signal("search_logs", "load_balancer", pattern="upstream timed out",
                                    description="requests cut at the edge", alt=(traced("upstream idle timeout"),))),
        remedies=(Remedy("set_config", "idle_timeout_s between 30 and 3600"),),
        wrong_fix_effects="scaling or restarting the web tier does not make exports faster than a second",
        example="load_balancer", example_params=(("value", 1),),
    )
    key = "idle_timeout_s"
    reason = "drop idle clients sooner"

    def probes(self, w: World) -> tuple[Any, Any]:
        return 10, 100_000


@register
class StickySessionHotspot(Declared):
    """Sticky sessions turned on while one large customer sits behind a single NAT address and runs
    a bulk import: all of its traffic pins to one backend, which saturates while the rest idle."""

    meta = FaultMeta(
        name="sticky_session_hotspot", layer="load_balancer", category="misconfiguration",
        targets=("service:load_balancer",),
        description="sticky sessions pin a large customer's traffic to one backend",
        params=(Param("skew", float, 0.85, lo=0.5, hi=0.98, description="share of traffic from the pinned client"),
                Param("client_load", float, 1.3, lo=1.0, hi=3.0,
                      description="the pinned client's bulk import raises total traffic by this factor")),
        signals=(Signal("get_config", "load_balancer", pattern="sticky_sessions = true", description="stickiness on"),
                 Signal("get_changes", "any", pattern="sticky_sessions", description="the change"),
                 Signal("search_logs", "web_server", pattern="worker pool saturated", description="one replica shedding")),
        remedies=(Remedy("set_config", "sticky_sessions = false (sessions live in the cache already)"),),
        wrong_fix_effects="scaling adds replicas the pinned client never reaches; restarting the hot replica "
                          "moves the pin to another one",
        example="load_balancer", example_params=(("skew", 0.85), ("client_load", 1.3)),
    )

    def inject(self, w: World) -> None:
        w.services[LB].config["sticky_sessions"] = True
        w.state.sticky_skew = self.params["skew"]
        w.state.surge *= self.params["client_load"]
        w.change(LB, "config", changes.edit_line(w, "sticky_sessions", False, True), w.author())

    def neutralised(self, w: World) -> bool:
        return not w.services[LB].config["sticky_sessions"]

    def why_active(self, w: World) -> str:
        return "sticky sessions still pin the largest client to one backend"

    def root_cause(self, w: World) -> RootCause:
        return RootCause(entity="load_balancer.sticky_sessions", category="misconfiguration",
                         detail="sticky sessions pin one large client's traffic to a single backend",
                         detail_tokens=("sticky", "session", "affinity", *value_tokens(True)), aliases=(LB,), fault=self.meta.name,
                         layer=self.meta.layer)

    def oracle_fix(self, w: World) -> list[dict[str, Any]]:
        return _set("sticky_sessions", False)

    def envelope_violations(self, w: World) -> list[list[dict[str, Any]]]:
        return [[{"tool": "scale", "args": {"service": "web_server", "replicas": len(live(w, "web_server")) + 2}}]]
