"""``audit --health-json FILE``: a saved response of a service's health endpoint, read for the parts
that can turn the load balancer's check DOWN (issue 35 item 5; the outage: an aggregate
``/actuator/health`` answered DOWN on every task at once because one shared dependency, Elasticsearch,
was down while the database was UP).

Three formats, told apart by their keys (nothing is fetched: the caller reads a file):

- **Spring Boot Actuator** ``/actuator/health`` (Spring Boot reference, "Actuator > Endpoints > Health"):
  ``{"status": "UP"|"DOWN"|"OUT_OF_SERVICE"|"UNKNOWN", "components": {NAME: {"status", "details",
  "components"}}, "groups": ["liveness", "readiness"]}``; Boot 2.0/2.1 wrote ``"details"`` where later
  versions write ``"components"``. DOWN and OUT_OF_SERVICE answer HTTP 503 by default, and the root's
  status is the worst of its components' (``SimpleStatusAggregator``).
- **MicroProfile Health** ``/health`` (MicroProfile Health 3.x, "Protocol and wire format"):
  ``{"status": "UP"|"DOWN", "checks": [{"name", "status", "data"}]}``; any DOWN check answers 503.
- **ASP.NET Core** health report JSON (``HealthReport`` written by a ``ResponseWriter``: the
  documentation's ``WriteResponse`` sample writes ``"results"``, AspNetCore.Diagnostics.HealthChecks'
  ``UIResponseWriter`` writes ``"entries"``): ``{"status": "Healthy"|"Degraded"|"Unhealthy", "results"|
  "entries": {NAME: {"status", "description", "data", "tags"}}}``; Unhealthy answers 503
  (``HealthCheckOptions.ResultStatusCodes``), Degraded 200.

Every component of an aggregate response can turn the check DOWN. The ones named like a shared
dependency (search, cache, message broker, database, another service) fail every task at once;
the local ones (disk space, ping, the liveness and readiness state) fail one task at a time.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ecs_guardrail.core.audit import Severity
from ecs_guardrail.core.errors import HealthJsonError

__all__ = ["HealthJsonError", "Component", "HealthFinding", "HealthReport", "read_health_json", "analyse",
           "MAX_BYTES", "MAX_DEPTH", "CHECKS"]

#: the largest file read (a health response is kilobytes; a log or a dump is not one)
MAX_BYTES = 10 * 1024 * 1024
#: the deepest component nesting read (Spring's composites nest two or three levels)
MAX_DEPTH = 32

#: check ID -> severity (the JSON lines' contract, as :data:`ecs_guardrail.core.audit.CHECKS`)
CHECKS: dict[str, Severity] = {
    "health_shared_dependency": Severity.HIGH,
    "health_unknown_component": Severity.MEDIUM,
    "health_local_component": Severity.LOW,
}

#: a task's own parts, by their whole (lowercase) name: they fail one task at a time
_LOCAL = frozenset({"diskspace", "ping", "livenessstate", "readinessstate", "liveness", "readiness", "startup",
                    "memory", "heap", "heapmemory", "deadlock", "threads", "self", "process", "gc", "alive",
                    "uptime", "allocatedmemory", "workingset", "privatememory"})
#: kind -> name fragments (lowercase): one of 4 letters or fewer matches a whole word of the name
#: (``db`` in ``db`` or ``ordersDb``, never in ``feedback``), a longer one any part of it
_KINDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("search", ("elasticsearch", "opensearch", "elastic", "solr", "search")),
    ("cache", ("redis", "memcache", "hazelcast", "couchbase", "ehcache", "valkey", "cache")),
    ("message broker", ("rabbit", "kafka", "jms", "activemq", "artemis", "pulsar", "nats", "sqs", "sns",
                        "servicebus", "eventhub", "kinesis", "binders", "broker", "amqp", "mq")),
    ("database", ("db", "datasource", "jdbc", "mongo", "cassandra", "neo4j", "r2dbc", "sql", "mssql", "postgres",
                  "npgsql", "mysql", "mariadb", "oracle", "dynamo", "influx", "couchdb", "database", "sqlserver")),
    ("other service", ("discovery", "eureka", "consul", "configserver", "config", "http", "url", "uri", "api",
                       "service", "feign", "grpc", "ldap", "vault", "keycloak", "auth", "mail", "smtp", "s3",
                       "upstream", "downstream", "remote", "client")),
)

#: per format: its name, the statuses that answer 503, the liveness and readiness endpoints it offers
_FORMATS: dict[str, dict[str, Any]] = {
    "spring": {"name": "Spring Boot Actuator", "down": {"DOWN", "OUT_OF_SERVICE"},
               "endpoints": ("/actuator/health/liveness", "/actuator/health/readiness"),
               "how": "management.endpoint.health.probes.enabled=true (on by default on Kubernetes); keep shared "
                      "dependencies out of the readiness group (management.endpoint.health.group.readiness.include)"},
    "microprofile": {"name": "MicroProfile Health", "down": {"DOWN"},
                     "endpoints": ("/health/live", "/health/ready"),
                     "how": "@Liveness checks answer /health/live, @Readiness checks /health/ready; put no shared "
                            "dependency in a @Liveness check"},
    "aspnetcore": {"name": "ASP.NET Core", "down": {"UNHEALTHY"},
                   "endpoints": ("/healthz/live", "/healthz/ready"),
                   "how": "MapHealthChecks(\"/healthz/live\", new HealthCheckOptions { Predicate = _ => false }) "
                          "runs no check (the process answers); MapHealthChecks(\"/healthz/ready\", ...) with "
                          "Predicate = c => c.Tags.Contains(\"ready\") runs only the tagged ones"},
}


@dataclass(frozen=True, slots=True)
class Component:
    """One leaf of the response: ``path`` (``db/primary`` inside a composite), its ``status`` as written,
    ``kind`` (:data:`_KINDS`, or ``unknown``), and whether it can answer 503 now (``down``)."""

    path: str
    status: str
    kind: str
    down: bool

    @property
    def shared(self) -> bool | None:
        """True for a shared dependency, False for a task's own part, None when the kind is unknown."""
        return None if self.kind == "unknown" else self.kind != "local"


@dataclass(frozen=True, slots=True)
class HealthFinding:
    """One finding about one component; :meth:`to_dict` is its JSON line."""

    check: str
    component: str
    message: str
    evidence: dict[str, Any]

    @property
    def severity(self) -> Severity:
        return CHECKS[self.check]

    def to_dict(self) -> dict[str, Any]:
        return {"type": "finding", "check": self.check, "severity": self.severity.value,
                "component": self.component, "message": self.message, "evidence": self.evidence}


@dataclass
class HealthReport:
    """What one health response says: its ``format`` (``spring``, ``microprofile``, ``aspnetcore``), the
    overall ``status``, every component, the findings, and the endpoints the framework offers instead."""

    format: str
    status: str
    components: list[Component]
    findings: list[HealthFinding] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)

    @property
    def format_name(self) -> str:
        return str(_FORMATS[self.format]["name"])

    @property
    def endpoints(self) -> tuple[str, str]:
        """``(liveness, readiness)`` paths the framework offers."""
        live, ready = _FORMATS[self.format]["endpoints"]
        return str(live), str(ready)

    @property
    def how(self) -> str:
        return str(_FORMATS[self.format]["how"])

    def exit_status(self, fail_on: str) -> int:
        """1 when a finding at or above ``fail_on`` exists, 0 otherwise (``never``: always 0), as ``audit``."""
        if fail_on == "never":
            return 0
        floor = Severity(fail_on).rank
        return 1 if any(f.severity.rank >= floor for f in self.findings) else 0

    def summary(self, fail_on: str) -> dict[str, Any]:
        """The closing JSON line."""
        by_severity = {s.value: sum(1 for f in self.findings if f.severity is s) for s in Severity}
        live, ready = self.endpoints
        return {"type": "summary", "format": self.format, "status": self.status, "findings": len(self.findings),
                "by_severity": by_severity,
                "components": [{"component": c.path, "status": c.status, "kind": c.kind, "shared": c.shared,
                                "down": c.down} for c in self.components],
                "liveness_endpoint": live, "readiness_endpoint": ready, "groups": self.groups,
                "fail_on": fail_on, "exit_status": self.exit_status(fail_on)}


def read_health_json(data: bytes) -> Any:
    """``data`` (a file's bytes) decoded as JSON.

    Raises:
        HealthJsonError: larger than :data:`MAX_BYTES`, not UTF-8, not JSON, a lone surrogate escaped in
            it, or nested too deeply for the decoder (a line each).
    """
    if len(data) > MAX_BYTES:
        raise HealthJsonError(f"{len(data)} bytes: a health response is kilobytes (at most {MAX_BYTES} read)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise HealthJsonError(f"not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})") from None
    try:
        doc = json.loads(text)
        # a \ud800 escape decodes to a lone surrogate, which no report can print: refused here, in one line
        json.dumps(doc, ensure_ascii=False).encode("utf-8")
    except RecursionError:
        raise HealthJsonError("not a health response: JSON nested too deeply to decode") from None
    except UnicodeEncodeError:
        raise HealthJsonError("text that is not valid Unicode (a \\ud800-style escape of a lone surrogate)") from None
    except ValueError as exc:
        raise HealthJsonError(f"not JSON ({str(exc)[:120]})") from None
    return doc


def _kind(path: str) -> str:
    """The kind of the component at ``path``: its last name first (``db/primary``: ``primary`` is of
    no kind, so the path's ``db`` decides)."""
    import re

    for name in (path.rsplit("/", 1)[-1], path):
        joined = re.sub(r"[^a-z0-9]", "", name.lower())
        if name == path.rsplit("/", 1)[-1] and joined in _LOCAL:
            return "local"
        words = {w.lower() for w in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+", name)}
        for kind, fragments in _KINDS:
            if any((f in words) if len(f) <= 4 else (f in joined) for f in fragments):
                return kind
    return "unknown"


def _spring_children(node: dict[str, Any]) -> dict[str, Any] | None:
    """A Spring node's children: ``components`` (Boot 2.2+), else ``details`` when every value is a
    node with a ``status`` (Boot 2.0/2.1), else None (a leaf)."""
    comps = node.get("components")
    if isinstance(comps, dict) and comps:
        return comps
    details = node.get("details")
    if (isinstance(details, dict) and details
            and all(isinstance(v, dict) and isinstance(v.get("status"), str) for v in details.values())):
        return details
    return None


def _spring_leaves(children: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """``(path, status)`` of every leaf under ``children``, depth first, iteratively (no recursion).

    Raises:
        HealthJsonError: nesting deeper than :data:`MAX_DEPTH`, or a component without a status.
    """
    stack: list[tuple[str, dict[str, Any], int]] = [("", children, 1)]
    while stack:
        prefix, nodes, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise HealthJsonError(f"components nested more than {MAX_DEPTH} deep (at {prefix[:80]}): not a health "
                                  "response")
        for name in nodes:
            node, path = nodes[name], f"{prefix}/{name}" if prefix else str(name)
            if not isinstance(node, dict) or not isinstance(node.get("status"), str):
                raise HealthJsonError(f"component {path[:80]!r} has no status")
            sub = _spring_children(node)
            if sub is None:
                yield path, node["status"]
            else:
                stack.append((path, sub, depth + 1))  # its leaves follow (the caller sorts by path)


def _detect(doc: Any) -> tuple[str, list[tuple[str, str]]]:
    """The format and ``(component path, status)`` pairs of ``doc``.

    Raises:
        HealthJsonError: none of the three formats.
    """
    if not isinstance(doc, dict) or not isinstance(doc.get("status"), str):
        raise HealthJsonError("none of the formats read: Spring Boot Actuator ({\"status\", \"components\"}), "
                              "MicroProfile Health ({\"status\", \"checks\": [...]}), ASP.NET Core "
                              "({\"status\", \"entries\"|\"results\"}); save the endpoint's JSON response")
    if isinstance(doc.get("checks"), list):
        out = []
        for i, check in enumerate(doc["checks"]):
            if not isinstance(check, dict) or not isinstance(check.get("status"), str):
                raise HealthJsonError(f"checks[{i}] has no status")
            out.append((str(check.get("name") or check.get("id") or f"checks[{i}]"), check["status"]))
        return "microprofile", out
    for key in ("entries", "results"):
        entries = doc.get(key)
        if isinstance(entries, dict) and doc["status"].lower() in ("healthy", "degraded", "unhealthy"):
            pairs = []
            for name, entry in entries.items():
                if not isinstance(entry, dict) or not isinstance(entry.get("status"), str):
                    raise HealthJsonError(f"{key}.{str(name)[:80]} has no status")
                pairs.append((str(name), entry["status"]))
            return "aspnetcore", pairs
    children = _spring_children(doc)
    if children is not None or "components" in doc or "groups" in doc or doc["status"].upper() in (
            "UP", "DOWN", "OUT_OF_SERVICE", "UNKNOWN"):
        return "spring", list(_spring_leaves(children)) if children else []
    raise HealthJsonError(f"none of the formats read (status {doc['status'][:40]!r} with neither components, "
                          "checks, entries nor results)")


def analyse(doc: Any) -> HealthReport:
    """The components of a decoded health response and the findings about them.

    Returns a :class:`HealthReport`: one ``health_shared_dependency`` (high) per component named like
    a shared dependency, one ``health_unknown_component`` (medium) per component of no known kind, one
    ``health_local_component`` (low) per local one; a component that answers 503 now says so.

    Raises:
        HealthJsonError: none of the formats, a component without a status, nesting past :data:`MAX_DEPTH`.
    """
    fmt, pairs = _detect(doc)
    down_words = _FORMATS[fmt]["down"]
    components = sorted((Component(path, status, _kind(path), status.upper() in down_words)
                         for path, status in pairs), key=lambda c: c.path.lower())
    groups = [str(g) for g in doc.get("groups", []) if isinstance(g, str)] if fmt == "spring" else []
    report = HealthReport(fmt, str(doc["status"]), components, groups=groups)
    live, ready = report.endpoints
    for c in components:
        evidence = {"status": c.status, "kind": c.kind, "down": c.down}
        if c.shared:
            now = f"; it is {c.status} in this response: every task answers 503 now" if c.down else ""
            report.findings.append(HealthFinding(
                "health_shared_dependency", c.path,
                f"{c.path} ({c.kind}) is shared by every task: when it fails, every task's check answers DOWN at "
                f"once and the load balancer ejects them all{now}; let the load balancer check {live}", evidence))
        elif c.shared is None:
            now = f", {c.status} now" if c.down else ""
            report.findings.append(HealthFinding(
                "health_unknown_component", c.path,
                f"{c.path} (kind unknown{now}) can turn every task's check DOWN; if it is shared (another service, "
                f"a store), keep it out of the check the load balancer calls ({live})", evidence))
        else:
            report.findings.append(HealthFinding(
                "health_local_component", c.path,
                f"{c.path} is local to each task ({c.status}): it fails one task at a time, as the load balancer "
                f"should see it; {ready} may keep it", evidence))
    report.findings.sort(key=lambda f: -f.severity.rank)  # stable: by component within a severity
    return report
