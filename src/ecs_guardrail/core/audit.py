"""``ecs-guardrail audit``: pure rules over typed facts (what can stop each service's tasks, and how fast).

The outage this project was built after: every service's load-balancer health check was the
aggregate Spring Boot ``/actuator/health``, so one shared dependency failing made the load balancer
eject every service at once. These rules say so before the incident. The facts are gathered by
:mod:`ecs_guardrail.adapters.audit_facts`; nothing here talks to AWS.

Check IDs, severities and the finding fields are a public contract (README, "Audit"):

========================================  ========  ==================================================
check                                     severity  when
========================================  ========  ==================================================
``aggregate_health_path``                 medium    a target group checks an aggregate path
``shared_fate``                           high      more services with one than the watchdog's bound
``fast_ejection``                         medium    UnhealthyThresholdCount x interval < 30 s
``no_grace_period``                       medium    behind a load balancer, grace period 0 or unset
``container_check_duplicates_lb``         low       the essential container curls the same aggregate path
``no_circuit_breaker``                    low       deployment circuit breaker off
``single_task``                           low       desired count 1 behind a load balancer
``production_not_alert_only``             high      a production-named cluster not in ALERT_ONLY_CLUSTERS
``autoscaling_min_above_zero``            low       a scalable target would undo a scale to 0
``alert_only_entry_unmatched``            medium    an ALERT_ONLY_CLUSTERS entry matches no audited cluster
``no_unhealthy_routing_floor``            medium    a replicated service's target group fails open only
                                                    when every target is out (no routing floor)
``opt_out_tag_mistyped``                  medium    an ``ecs-guardrail:`` tag that is not exactly
                                                    ``ecs-guardrail:mode=alert-only`` (read as opted out)
========================================  ========  ==================================================
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from ecs_guardrail.core.enum_text import ascii_upper
from ecs_guardrail.core.policy import (
    OPT_OUT_TAG,
    PolicyConfig,
    blast_radius_bound,
    is_alert_only_cluster,
    read_opt_out,
)

__all__ = [
    "CHECKS",
    "AuditConfig",
    "ClusterAuditFacts",
    "ContainerHealthCheck",
    "Finding",
    "Severity",
    "ServiceAuditFacts",
    "StopperRow",
    "TargetGroupHealthCheck",
    "audit_cluster",
    "audit_fleet",
    "exit_status",
    "stoppers",
    "summary",
]


class Severity(StrEnum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"

    @property
    def rank(self) -> int:
        return {"high": 3, "medium": 2, "low": 1}[self.value]


#: check ID -> severity (the public contract; never rename)
CHECKS: dict[str, Severity] = {
    "aggregate_health_path": Severity.MEDIUM,
    "shared_fate": Severity.HIGH,
    "fast_ejection": Severity.MEDIUM,
    "no_grace_period": Severity.MEDIUM,
    "container_check_duplicates_lb": Severity.LOW,
    "no_circuit_breaker": Severity.LOW,
    "single_task": Severity.LOW,
    "production_not_alert_only": Severity.HIGH,
    "autoscaling_min_above_zero": Severity.LOW,
    "alert_only_entry_unmatched": Severity.MEDIUM,
    "no_automatic_rollback": Severity.MEDIUM,
    "restart_policy_unwatched": Severity.MEDIUM,
    "no_unhealthy_routing_floor": Severity.MEDIUM,
    "opt_out_tag_mistyped": Severity.MEDIUM,
}

#: the seed's advice: never let the load balancer remove more than half of a service's targets
ROUTING_FLOOR_PERCENTAGE = 50


@dataclass(frozen=True, slots=True)
class AuditConfig:
    """The audit's judgements (settings ``AUDIT_*``) and the watchdog's policy (its bound, its scope)."""

    policy: PolicyConfig = field(default_factory=PolicyConfig)
    min_ejection_seconds: int = 30
    aggregate_paths: tuple[str, ...] = ("/actuator/health", "/health", "/status", "/")
    production_patterns: tuple[str, ...] = ("prod", "live")


@dataclass(frozen=True, slots=True)
class TargetGroupHealthCheck:
    """One target group's health check (ELBv2 DescribeTargetGroups; DescribeTargetGroupAttributes).

    ``protocol``: ``HealthCheckProtocol`` (HTTP, HTTPS, TCP, ...); ``path``: ``HealthCheckPath`` (None
    for TCP checks); ``interval_seconds``: ``HealthCheckIntervalSeconds``; ``unhealthy_threshold_count``:
    ``UnhealthyThresholdCount``; ``timeout_seconds``: ``HealthCheckTimeoutSeconds``;
    ``healthy_threshold_count``: ``HealthyThresholdCount``; ``matcher``: ``Matcher.HttpCode``;
    ``enabled``: ``HealthCheckEnabled``; ``load_balancer_type``: ``application`` for an HTTP/HTTPS
    target group ``Protocol``, ``network`` for TCP/TLS/UDP/TCP_UDP, ``gateway`` for GENEVE;
    ``deregistration_delay_seconds``:
    attribute ``deregistration_delay.timeout_seconds``; ``routing_floor_percentage`` and
    ``routing_floor_count``: attributes
    ``target_group_health.unhealthy_state_routing.minimum_healthy_targets.percentage`` (``off``, the
    default, is ``None``) and ``...minimum_healthy_targets.count`` (default 1): below either, the load
    balancer sends traffic to all targets, healthy or not (ELB "Target group health").
    """

    name: str
    arn: str
    protocol: str | None
    path: str | None
    interval_seconds: int
    unhealthy_threshold_count: int
    timeout_seconds: int | None = None
    healthy_threshold_count: int | None = None
    matcher: str | None = None
    enabled: bool = True
    load_balancer_type: str = "application"
    deregistration_delay_seconds: int | None = None
    routing_floor_percentage: int | None = None
    routing_floor_count: int = 1

    @property
    def ejection_seconds(self) -> int:
        """Seconds from a target's first failed check to its ejection: threshold x interval."""
        return self.unhealthy_threshold_count * self.interval_seconds

    @property
    def http(self) -> bool:
        return ascii_upper(self.protocol or "") in ("HTTP", "HTTPS")


@dataclass(frozen=True, slots=True)
class ContainerHealthCheck:
    """The essential container's ``healthCheck`` (ECS DescribeTaskDefinition
    ``containerDefinitions[].healthCheck``; ECS defaults where a field is absent: interval 30 s,
    timeout 5 s, retries 3, start period 0 s)."""

    container: str
    command: tuple[str, ...]
    interval_seconds: int = 30
    timeout_seconds: int = 5
    retries: int = 3
    start_period_seconds: int = 0

    @property
    def kill_seconds(self) -> int:
        """Seconds of failing checks before ECS marks the container UNHEALTHY: retries x interval."""
        return self.retries * self.interval_seconds


@dataclass(frozen=True, slots=True)
class ServiceAuditFacts:
    """What the audit reads of one service.

    From ECS DescribeServices (``include=["TAGS"]``): ``name`` (``serviceName``), ``arn``,
    ``desired_count`` (``desiredCount``), ``scheduling_strategy`` (``schedulingStrategy``),
    ``health_check_grace_period_seconds`` (``healthCheckGracePeriodSeconds``; None when absent),
    ``circuit_breaker`` (``deploymentConfiguration.deploymentCircuitBreaker.enable``; None when
    absent), ``circuit_breaker_rollback``, ``deployment_controller`` (``deploymentController.type``),
    ``task_definition_arn`` (``taskDefinition``), ``tags``; ``target_groups`` from ELBv2 for each
    ``loadBalancers[].targetGroupArn``; ``container_health_check`` and ``essential_containers`` from
    DescribeTaskDefinition; ``scalable_min_capacity``/``scalable_max_capacity`` from Application
    Auto Scaling DescribeScalableTargets (``ecs:service:DesiredCount``; None without a target).
    ``alarm_rollback``: ``deploymentConfiguration.alarms`` has ``enable`` and ``rollback`` true;
    ``restart_policy_containers``: containers whose ``restartPolicy.enabled`` is true (DescribeTaskDefinition).
    """

    cluster: str
    name: str
    arn: str = ""
    desired_count: int = 1
    scheduling_strategy: str = "REPLICA"
    health_check_grace_period_seconds: int | None = None
    circuit_breaker: bool | None = None
    circuit_breaker_rollback: bool | None = None
    deployment_controller: str = "ECS"
    task_definition_arn: str = ""
    target_groups: tuple[TargetGroupHealthCheck, ...] = ()
    container_health_check: ContainerHealthCheck | None = None
    essential_containers: tuple[str, ...] = ()
    scalable_min_capacity: int | None = None
    scalable_max_capacity: int | None = None
    tags: dict[str, str] = field(default_factory=dict)
    alarm_rollback: bool = False
    restart_policy_containers: tuple[str, ...] = ()

    @property
    def load_balanced(self) -> bool:
        return bool(self.target_groups)

    @property
    def opted_out(self) -> bool:
        """Rule 4's ``opted_out`` (:func:`ecs_guardrail.core.policy.read_opt_out`, mistyped tags included)."""
        return read_opt_out(self.tags).opted_out

    @property
    def opt_out_mistyped(self) -> tuple[str, ...]:
        """The ``ecs-guardrail:`` tags read as an opt-out without being ``ecs-guardrail:mode=alert-only``."""
        return read_opt_out(self.tags).mistyped

    @property
    def daemon(self) -> bool:
        return self.scheduling_strategy == "DAEMON"


@dataclass(frozen=True, slots=True)
class ClusterAuditFacts:
    """One cluster: its name, ARN (``clusterArn``), every ACTIVE service (ECS ListServices) and whether it
    has Container Insights (DescribeClusters ``settings`` ``containerInsights`` ``enabled`` or ``enhanced``;
    ``None`` when not readable)."""

    name: str
    arn: str = ""
    services: tuple[ServiceAuditFacts, ...] = ()
    container_insights: bool | None = None


@dataclass(frozen=True, slots=True)
class Finding:
    """One finding; :meth:`to_dict` is the JSON line (a public contract)."""

    check: str
    cluster: str
    service: str | None
    message: str
    evidence: dict[str, Any]

    @property
    def severity(self) -> Severity:
        return CHECKS[self.check]

    def to_dict(self) -> dict[str, Any]:
        return {"type": "finding", "check": self.check, "severity": self.severity.value, "cluster": self.cluster,
                "service": self.service, "message": self.message, "evidence": self.evidence}


def _normal_path(path: str) -> str:
    path = path.split("?", 1)[0].split("#", 1)[0].strip()
    return (path.rstrip("/") or "/") if path else "/"


def aggregate_path(check: TargetGroupHealthCheck, config: AuditConfig) -> str | None:
    """The target group's path when it is one of ``config.aggregate_paths`` (HTTP checks only)."""
    if not check.enabled or not check.http or check.path is None:
        return None
    path = _normal_path(check.path)
    return path if path in {_normal_path(p) for p in config.aggregate_paths} else None


# a URL in a shell command: scheme and host optional, a host:port or a loopback name, then the path
_URL = re.compile(r"(?:https?://)?(?:localhost|127\.0\.0\.1|0\.0\.0\.0|\[::1\]|[A-Za-z0-9.-]+:\d+)(?::\d+)?"
                  r"(/[^\s'\"|;&)<>]*)?")


def command_paths(command: Sequence[str]) -> set[str]:
    """Normalised URL paths a health-check command requests (``curl -f localhost:8080/health`` ->
    ``{"/health"}``; a URL without a path is ``/``)."""
    text = " ".join(command[1:] if command and command[0] in ("CMD", "CMD-SHELL") else command)
    return {_normal_path(m.group(1) or "/") for m in _URL.finditer(text)}


def is_production_name(cluster: str, config: AuditConfig) -> bool:
    """True when the cluster's name contains one of ``config.production_patterns`` (case-insensitive)."""
    name = cluster.lower()
    return any(p.lower() in name for p in config.production_patterns if p)


def _service_findings(s: ServiceAuditFacts, config: AuditConfig) -> list[Finding]:
    """Every finding of one service, in a fixed order: its health checks' (what can eject or replace its
    tasks), then its deployments' and capacity's."""
    where = f"{s.cluster}/{s.name}"
    return _health_check_findings(s, config, where) + _deployment_findings(s, where)


def _health_check_findings(s: ServiceAuditFacts, config: AuditConfig, where: str) -> list[Finding]:
    """An aggregating health path, a fast ejection, no grace period, a container check on the load
    balancer's path (``where``: ``cluster/service``, the text's subject)."""
    out: list[Finding] = []
    aggregate = {tg.name: p for tg in s.target_groups if (p := aggregate_path(tg, config)) is not None}
    if aggregate:
        paths = sorted(set(aggregate.values()))
        out.append(Finding(
            "aggregate_health_path", s.cluster, s.name,
            f"{where}: the load balancer checks {', '.join(paths)}, which aggregates dependencies: one failing "
            "dependency makes it eject every task; let it check a path without shared dependencies "
            "(e.g. /actuator/health/liveness, as `audit --health-json` advises)",
            {"target_groups": [{"target_group": n, "path": p} for n, p in sorted(aggregate.items())]}))
    fast = [tg for tg in s.target_groups if tg.enabled and tg.ejection_seconds < config.min_ejection_seconds]
    if fast:
        out.append(Finding(
            "fast_ejection", s.cluster, s.name,
            f"{where}: a target is ejected after "
            + ", ".join(f"{tg.unhealthy_threshold_count} x {tg.interval_seconds} s = {tg.ejection_seconds} s"
                        for tg in fast)
            + f" of failed checks (under {config.min_ejection_seconds} s): a brief dependency blip ejects it",
            {"min_ejection_seconds": config.min_ejection_seconds,
             "target_groups": [{"target_group": tg.name, "unhealthy_threshold_count": tg.unhealthy_threshold_count,
                                "interval_seconds": tg.interval_seconds, "ejection_seconds": tg.ejection_seconds}
                               for tg in fast]}))
    if s.load_balanced and not s.health_check_grace_period_seconds:
        out.append(Finding(
            "no_grace_period", s.cluster, s.name,
            f"{where}: healthCheckGracePeriodSeconds is {s.health_check_grace_period_seconds or 0}: a task that "
            "starts slowly fails load-balancer checks and is replaced before it is ready",
            {"health_check_grace_period_seconds": s.health_check_grace_period_seconds}))
    if s.container_health_check is not None and aggregate:
        called = command_paths(s.container_health_check.command) & set(aggregate.values())
        if called:
            out.append(Finding(
                "container_check_duplicates_lb", s.cluster, s.name,
                f"{where}: container {s.container_health_check.container}'s health check calls "
                f"{', '.join(sorted(called))} too: two killers (ECS and the load balancer) on one dependency",
                {"container": s.container_health_check.container,
                 "command": list(s.container_health_check.command), "paths": sorted(called),
                 "retries": s.container_health_check.retries,
                 "interval_seconds": s.container_health_check.interval_seconds}))
    return out


def _deployment_findings(s: ServiceAuditFacts, where: str) -> list[Finding]:
    """No circuit breaker, no automatic rollback, a single task, no unhealthy-state routing floor, a
    mistyped opt-out tag, an Application Auto Scaling minimum above 0."""
    out: list[Finding] = []
    if s.deployment_controller == "ECS" and not s.circuit_breaker:
        out.append(Finding(
            "no_circuit_breaker", s.cluster, s.name,
            f"{where}: the deployment circuit breaker is off: a failing deployment retries until someone stops it",
            {"deployment_circuit_breaker": s.circuit_breaker, "rollback": s.circuit_breaker_rollback}))
    if not s.daemon and s.deployment_controller == "ECS" and not s.circuit_breaker and not s.alarm_rollback:
        out.append(Finding(
            "no_automatic_rollback", s.cluster, s.name,
            f"{where}: neither the deployment circuit breaker nor a CloudWatch alarm rolls back a failing "
            "deployment: nothing but an operator (or the watchdog's scale to 0) stops a bad revision",
            {"deployment_circuit_breaker": s.circuit_breaker, "alarm_rollback": s.alarm_rollback}))
    if s.load_balanced and not s.daemon and s.desired_count == 1:
        out.append(Finding(
            "single_task", s.cluster, s.name,
            f"{where}: one task behind the load balancer: any stop, deployment or ejection is an outage",
            {"desired_count": s.desired_count}))
    floorless = [tg for tg in s.target_groups if tg.enabled and tg.routing_floor_percentage is None
                 and tg.routing_floor_count <= 1]
    if s.load_balanced and not s.daemon and s.desired_count >= 2 and floorless:
        out.append(Finding(
            "no_unhealthy_routing_floor", s.cluster, s.name,
            f"{where}: the load balancer removes every unhealthy target and fails open only when none is left "
            f"(no unhealthy-state routing floor): a failing shared check takes all {s.desired_count} tasks out "
            "at once; set target_group_health.unhealthy_state_routing.minimum_healthy_targets.percentage="
            f"{ROUTING_FLOOR_PERCENTAGE} (never remove more than half)",
            {"desired_count": s.desired_count, "recommended_percentage": ROUTING_FLOOR_PERCENTAGE,
             "target_groups": [{"target_group": tg.name, "minimum_healthy_targets_percentage": "off",
                                "minimum_healthy_targets_count": tg.routing_floor_count} for tg in floorless]}))
    if s.opt_out_mistyped:
        out.append(Finding(
            "opt_out_tag_mistyped", s.cluster, s.name,
            f"{where}: tagged {', '.join(s.opt_out_mistyped)}, which is not {OPT_OUT_TAG}=alert-only: the "
            "watchdog reads it as opted out (alert only, fail safe); fix the tag (alert-only) or remove it",
            {"tags": list(s.opt_out_mistyped), "expected": f"{OPT_OUT_TAG}=alert-only"}))
    if s.scalable_min_capacity is not None and s.scalable_min_capacity > 0:
        out.append(Finding(
            "autoscaling_min_above_zero", s.cluster, s.name,
            f"{where}: Application Auto Scaling keeps at least {s.scalable_min_capacity} tasks and would undo a "
            "scale to 0 (the watchdog suspends the scalable target while it holds the service)",
            {"min_capacity": s.scalable_min_capacity, "max_capacity": s.scalable_max_capacity,
             "resource_id": f"service/{s.cluster}/{s.name}"}))
    return out


def audit_cluster(cluster: ClusterAuditFacts, config: AuditConfig) -> list[Finding]:
    """Every finding of one cluster: cluster-wide ones first, then per service in the facts' order."""
    out: list[Finding] = []
    alert_only = is_alert_only_cluster(config.policy, cluster.name, cluster.arn)
    if is_production_name(cluster.name, config) and not alert_only:
        out.append(Finding(
            "production_not_alert_only", cluster.name, None,
            f"{cluster.name}: looks like production but does not match ALERT_ONLY_CLUSTERS "
            f"({','.join(config.policy.alert_only_clusters)}): the watchdog may scale its services to 0",
            {"alert_only_clusters": list(config.policy.alert_only_clusters),
             "production_patterns": list(config.production_patterns)}))
    n = len(cluster.services)
    bound = blast_radius_bound(config.policy, n)
    shared = sorted(s.name for s in cluster.services
                    if any(aggregate_path(tg, config) is not None for tg in s.target_groups))
    if len(shared) > bound:
        out.append(Finding(
            "shared_fate", cluster.name, None,
            f"{cluster.name}: {len(shared)} of {n} services check an aggregate health path: one dependency can "
            f"fail all of them at once, more than the {bound} the watchdog may ever act on",
            {"services": shared, "count": len(shared), "services_in_cluster": n, "bound": bound,
             "max_action_fraction": config.policy.max_action_fraction,
             "min_actions_allowed": config.policy.min_actions_allowed}))
    for s in cluster.services:
        out.extend(_service_findings(s, config))
        if s.restart_policy_containers and cluster.container_insights is False:
            out.append(Finding(
                "restart_policy_unwatched", cluster.name, s.name,
                f"{cluster.name}/{s.name}: container(s) {', '.join(s.restart_policy_containers)} restart in "
                "place (restart policy), which no event reports, and the cluster has no Container Insights: a "
                "restart loop is invisible to the watchdog; turn Container Insights on for the cluster",
                {"containers": list(s.restart_policy_containers), "container_insights": False}))
    return out


def audit_fleet(clusters: Iterable[ClusterAuditFacts], config: AuditConfig) -> list[Finding]:
    """:func:`audit_cluster` over every cluster, in order, then one ``alert_only_entry_unmatched`` per
    ``ALERT_ONLY_CLUSTERS`` entry that matches none of the audited clusters (its ``cluster`` field is
    the entry; ARCHITECTURE.md, "Deployment")."""
    audited = list(clusters)
    out = [f for c in audited for f in audit_cluster(c, config)]
    names = [c.name for c in audited]
    for entry in config.policy.alert_only.unmatched((c.name, c.arn) for c in audited):
        out.append(Finding(
            "alert_only_entry_unmatched", entry.text, None,
            f"{entry.text}: ALERT_ONLY_CLUSTERS entry {entry.text!r} matches none of the {len(names)} audited "
            f"cluster{'' if len(names) == 1 else 's'} ({', '.join(names) or 'none'}): it makes nothing alert-only "
            f"here (a typo?)",
            {"entry": entry.text, "kind": entry.kind.value, "clusters_audited": names}))
    return out


def exit_status(findings: Iterable[Finding], fail_on: str) -> int:
    """1 when a finding at or above ``fail_on`` (``high``, ``medium``, ``low``) exists, else 0;
    ``never`` is always 0.

    Raises:
        ValueError: an unknown ``fail_on``.
    """
    if fail_on == "never":
        return 0
    floor = Severity(fail_on).rank
    return 1 if any(f.severity.rank >= floor for f in findings) else 0


def summary(findings: Sequence[Finding], clusters: Sequence[ClusterAuditFacts], fail_on: str) -> dict[str, Any]:
    """The closing JSON line: counts by severity and by check, clusters, services audited, the exit."""
    by_severity = {s.value: sum(1 for f in findings if f.severity is s) for s in Severity}
    by_check = {c: n for c in CHECKS if (n := sum(1 for f in findings if f.check == c))}
    return {"type": "summary", "findings": len(findings), "by_severity": by_severity, "by_check": by_check,
            "clusters": [c.name for c in clusters], "services": sum(len(c.services) for c in clusters),
            "fail_on": fail_on, "exit_status": exit_status(findings, fail_on)}


@dataclass(frozen=True, slots=True)
class StopperRow:
    """Who can stop one service's tasks and how fast (the audit table's row; texts, units in them)."""

    service: str
    tasks: str
    load_balancer: str
    container: str
    grace: str
    watchdog: str
    autoscaling: str


def _watchdog(s: ServiceAuditFacts, cluster: ClusterAuditFacts, config: AuditConfig) -> str:
    p = config.policy
    if is_alert_only_cluster(p, cluster.name, cluster.arn):
        return "alert only (ALERT_ONLY_CLUSTERS)" if p.alert_only_clusters else "alert only (ALERT_ONLY_CLUSTERS unset)"
    if s.opt_out_mistyped:
        return f"alert only (mistyped tag {s.opt_out_mistyped[0]}, read as opted out)"
    if s.opted_out:
        return f"alert only (tag {OPT_OUT_TAG})"
    if s.daemon:
        return "alert only (DAEMON)"
    bound = blast_radius_bound(p, len(cluster.services))
    how = "dry run: alerts" if p.dry_run else "scale to 0"
    return f"{how}, {bound} of {len(cluster.services)} at once"


def stoppers(cluster: ClusterAuditFacts, config: AuditConfig) -> list[StopperRow]:
    """One row per service: the load balancer's check (threshold x interval; the target group is named
    when there are several), the essential container's check (retries x interval), the grace period,
    what the watchdog may do, what autoscaling would do."""
    rows = []
    for s in cluster.services:
        named = len(s.target_groups) > 1
        lb = "; ".join(
            (f"{tg.name}: " if named else "") + f"{tg.path or tg.protocol or '?'} {tg.unhealthy_threshold_count} x "
            f"{tg.interval_seconds} s = {tg.ejection_seconds} s" + ("" if tg.enabled else " (disabled)")
            for tg in s.target_groups) or "-"
        ch = s.container_health_check
        container = "-" if ch is None else (
            (f"{ch.container}: " if len(s.essential_containers) > 1 else "")
            + f"{ch.retries} x {ch.interval_seconds} s = {ch.kill_seconds} s"
            + (f" after {ch.start_period_seconds} s" if ch.start_period_seconds else ""))
        grace = "-" if not s.load_balanced else f"{s.health_check_grace_period_seconds or 0} s"
        scaling = "-" if s.scalable_min_capacity is None else \
            f"min {s.scalable_min_capacity}, max {s.scalable_max_capacity}"
        tasks = "DAEMON" if s.daemon else str(s.desired_count)
        rows.append(StopperRow(s.name, tasks, lb, container, grace, _watchdog(s, cluster, config), scaling))
    return rows
