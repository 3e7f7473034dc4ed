"""Read-only facts for ``ecs-guardrail audit``: every service of a cluster with its health checks.

API reference: ECS ListServices, DescribeServices (``include=["TAGS"]``, 10 services a call),
DescribeTaskDefinition (once per task definition ARN); ELBv2 DescribeTargetGroups (20 ARNs a call),
DescribeTargetGroupAttributes (once per target group); Application Auto Scaling
DescribeScalableTargets (``ServiceNamespace="ecs"``, 50 resource IDs a call). Nothing is written.
This is an operator command, not a Lambda: the permissions are the operator's (README, "Audit").
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from ecs_guardrail.adapters.ecs import describe_services, target_group_arns
from ecs_guardrail.core.audit import (
    ClusterAuditFacts,
    ContainerHealthCheck,
    ServiceAuditFacts,
    TargetGroupHealthCheck,
)
from ecs_guardrail.core.errors import ClusterNotFoundError
from ecs_guardrail.core.links import resource_name
from ecs_guardrail.core.permissions import permissions

__all__ = ["AuditFacts"]

_NETWORK_PROTOCOLS = {"TCP", "TLS", "UDP", "TCP_UDP"}
_SCALABLE_DIMENSION = "ecs:service:DesiredCount"


class AuditFacts:
    """Gathers :class:`~ecs_guardrail.core.audit.ClusterAuditFacts` through clients passed in."""

    def __init__(self, ecs: Any, elbv2: Any, autoscaling: Any) -> None:
        self._ecs = ecs
        self._elb = elbv2
        self._aas = autoscaling
        self._task_definitions: dict[str, dict[str, Any]] = {}

    @permissions(any=["ecs:ListServices"])  # DescribeServices: describe_services
    def cluster(self, cluster: str) -> ClusterAuditFacts:
        """Every ACTIVE service of ``cluster`` (a name or ARN) with its target groups' health checks,
        its essential container's health check and its scalable target.

        Raises:
            ClusterNotFoundError: ECS answered ``ClusterNotFoundException``.
            botocore.exceptions.ClientError: any other refusal (access denied, throttling after retries).
        """
        try:
            paginator = self._ecs.get_paginator("list_services")
            arns = [a for page in paginator.paginate(cluster=cluster) for a in page.get("serviceArns", [])]
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ClusterNotFoundException":
                raise ClusterNotFoundError(f"cluster {cluster!r} not found in this account and region") from exc
            raise
        raw = [s for s in describe_services(self._ecs, cluster, arns, tags=True) if s.get("status") == "ACTIVE"]
        name = resource_name(cluster)
        cluster_arn = next((s.get("clusterArn", "") for s in raw), cluster if cluster.startswith("arn:") else "")
        tg_arns = sorted({a for s in raw for a in target_group_arns(s)})
        groups = self.target_groups(tg_arns)
        scaling = self.scalable_targets([f"service/{name}/{s['serviceName']}" for s in raw])
        services = []
        for s in sorted(raw, key=lambda s: s["serviceName"]):
            td = self.task_definition(s.get("taskDefinition", ""))
            essential = [c for c in td.get("containerDefinitions") or [] if c.get("essential", True)]
            check = next((c for c in essential if c.get("healthCheck")), None)
            cb = (s.get("deploymentConfiguration") or {}).get("deploymentCircuitBreaker")
            alarms = (s.get("deploymentConfiguration") or {}).get("alarms") or {}
            target = scaling.get(f"service/{name}/{s['serviceName']}")
            services.append(ServiceAuditFacts(
                cluster=name,
                name=s["serviceName"],
                arn=s.get("serviceArn", ""),
                desired_count=int(s.get("desiredCount", 0)),
                scheduling_strategy=s.get("schedulingStrategy") or "REPLICA",
                health_check_grace_period_seconds=s.get("healthCheckGracePeriodSeconds"),
                circuit_breaker=cb.get("enable") if cb else None,
                circuit_breaker_rollback=cb.get("rollback") if cb else None,
                deployment_controller=(s.get("deploymentController") or {}).get("type") or "ECS",
                task_definition_arn=s.get("taskDefinition", ""),
                target_groups=tuple(groups[a] for a in target_group_arns(s) if a in groups),
                container_health_check=_container_check(check) if check else None,
                essential_containers=tuple(c["name"] for c in essential),
                scalable_min_capacity=target.get("MinCapacity") if target else None,
                scalable_max_capacity=target.get("MaxCapacity") if target else None,
                tags={t["key"]: t.get("value", "") for t in s.get("tags") or []},
                alarm_rollback=bool(alarms.get("enable") and alarms.get("rollback")),
                restart_policy_containers=tuple(c["name"] for c in td.get("containerDefinitions") or []
                                                if (c.get("restartPolicy") or {}).get("enabled")),
            ))
        return ClusterAuditFacts(name=name, arn=cluster_arn, services=tuple(services),
                                 container_insights=self.container_insights(cluster))

    @permissions(any=["ecs:DescribeClusters"])
    def container_insights(self, cluster: str) -> bool | None:
        """Does the cluster have Container Insights (DescribeClusters ``include=["SETTINGS"]``,
        ``containerInsights`` ``enabled`` or ``enhanced``)? ``None`` when ECS would not say (access denied,
        no answer)."""
        try:
            found = self._ecs.describe_clusters(clusters=[cluster], include=["SETTINGS"]).get("clusters") or []
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("AccessDeniedException", "AccessDenied"):
                return None
            raise
        if not found:
            return None
        value = next((x.get("value") for x in found[0].get("settings") or [] if x.get("name") == "containerInsights"),
                     "disabled")
        return str(value).lower() in ("enabled", "enhanced")

    @permissions(any=["ecs:DescribeTaskDefinition"])
    def task_definition(self, arn: str) -> dict[str, Any]:
        """DescribeTaskDefinition's ``taskDefinition`` (cached per ARN); ``{}`` when there is none or ECS
        answers ``ClientException`` (a deregistered and deleted revision)."""
        if not arn:
            return {}
        if arn not in self._task_definitions:
            try:
                self._task_definitions[arn] = self._ecs.describe_task_definition(taskDefinition=arn)["taskDefinition"]
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") != "ClientException":
                    raise
                self._task_definitions[arn] = {}
        return self._task_definitions[arn]

    @permissions(any=["elasticloadbalancing:DescribeTargetGroups",
                      "elasticloadbalancing:DescribeTargetGroupAttributes"])
    def target_groups(self, arns: list[str]) -> dict[str, TargetGroupHealthCheck]:
        """``{target group ARN: health check}`` (DescribeTargetGroups 20 a call, then the attributes)."""
        out: dict[str, TargetGroupHealthCheck] = {}
        for i in range(0, len(arns), 20):
            try:
                groups = self._elb.describe_target_groups(TargetGroupArns=arns[i:i + 20])["TargetGroups"]
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") != "TargetGroupNotFound":
                    raise
                groups = []
                for arn in arns[i:i + 20]:  # one deleted target group must not hide the others
                    try:
                        groups += self._elb.describe_target_groups(TargetGroupArns=[arn])["TargetGroups"]
                    except ClientError as one:
                        if one.response.get("Error", {}).get("Code") != "TargetGroupNotFound":
                            raise
            for tg in groups:
                attrs = {a["Key"]: a.get("Value") for a in self._elb.describe_target_group_attributes(
                    TargetGroupArn=tg["TargetGroupArn"]).get("Attributes", [])}
                delay = attrs.get("deregistration_delay.timeout_seconds")
                floor = "target_group_health.unhealthy_state_routing.minimum_healthy_targets."
                pct, count = attrs.get(floor + "percentage"), attrs.get(floor + "count")
                out[tg["TargetGroupArn"]] = TargetGroupHealthCheck(
                    name=tg["TargetGroupName"],
                    arn=tg["TargetGroupArn"],
                    protocol=tg.get("HealthCheckProtocol"),
                    path=tg.get("HealthCheckPath"),
                    interval_seconds=int(tg.get("HealthCheckIntervalSeconds", 30)),
                    unhealthy_threshold_count=int(tg.get("UnhealthyThresholdCount", 2)),
                    timeout_seconds=tg.get("HealthCheckTimeoutSeconds"),
                    healthy_threshold_count=tg.get("HealthyThresholdCount"),
                    matcher=(tg.get("Matcher") or {}).get("HttpCode"),
                    enabled=bool(tg.get("HealthCheckEnabled", True)),
                    load_balancer_type=_load_balancer_type(tg.get("Protocol")),
                    deregistration_delay_seconds=int(delay) if delay and delay.isdigit() else None,
                    routing_floor_percentage=int(pct) if pct and pct.isdigit() else None,  # "off" is None
                    routing_floor_count=int(count) if count and count.isdigit() else 1,
                )
        return out

    @permissions(any=["application-autoscaling:DescribeScalableTargets"])
    def scalable_targets(self, resource_ids: list[str]) -> dict[str, dict[str, Any]]:
        """``{ResourceId: ScalableTarget}`` for the ``ecs:service:DesiredCount`` targets that exist."""
        out: dict[str, dict[str, Any]] = {}
        paginator = self._aas.get_paginator("describe_scalable_targets")
        for i in range(0, len(resource_ids), 50):
            for page in paginator.paginate(ServiceNamespace="ecs", ResourceIds=resource_ids[i:i + 50],
                                           ScalableDimension=_SCALABLE_DIMENSION):
                for t in page.get("ScalableTargets", []):
                    out[t["ResourceId"]] = t
        return out


def _load_balancer_type(protocol: str | None) -> str:
    """The kind of load balancer a target group ``Protocol`` belongs to (HTTP/HTTPS: application;
    TCP/TLS/UDP/TCP_UDP: network; GENEVE: gateway)."""
    if protocol in _NETWORK_PROTOCOLS:
        return "network"
    return "gateway" if protocol == "GENEVE" else "application"


def _container_check(container: dict[str, Any]) -> ContainerHealthCheck:
    hc = container["healthCheck"]
    return ContainerHealthCheck(
        container=container["name"],
        command=tuple(hc.get("command") or ()),
        interval_seconds=int(hc.get("interval") or 30),
        timeout_seconds=int(hc.get("timeout") or 5),
        retries=int(hc.get("retries") or 3),
        start_period_seconds=int(hc.get("startPeriod") or 0),
    )
