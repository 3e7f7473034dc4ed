"""What one decision reads, once: the service (DescribeServices, ListServices), its scalable target
(DescribeScalableTargets), its deployments (ListServiceDeployments, when rule 4 needs them) and the
cluster's fleet minutes (rule 3). Errors arrive translated by the adapters that make the calls
(:class:`~ecs_guardrail.core.errors.ServiceAccessDeniedError` by its type, never its text).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from msgspec import Struct

from ecs_guardrail.adapters.autoscaling import ScalableTargets
from ecs_guardrail.adapters.ecs import EcsService, ServiceFacts
from ecs_guardrail.adapters.store.watchdog_state import WatchdogState
from ecs_guardrail.core.clusters import AlertOnlyClusters
from ecs_guardrail.core.deployment_protection import deployments_worth_reading
from ecs_guardrail.core.entitlement import ScalableTargetFacts
from ecs_guardrail.core.errors import (
    ClusterNotFoundError,
    ScalingSuspendError,
    ServiceAccessDeniedError,
    ServiceNotFoundError,
)
from ecs_guardrail.core.policy import FleetView, PolicyConfig, fleet_view_of
from ecs_guardrail.core.summary import failures_between

__all__ = ["ServiceRead", "read_service", "read_scalable", "read_service_deployments", "read_fleet"]


class ServiceRead(Struct, frozen=True):
    """DescribeServices and ListServices for one decision: ``facts`` (``None``: not readable, ``why``
    says why; ``denied``: ECS refused with AccessDeniedException) and ``count``, the services in the
    cluster (0: unreadable, or the cluster is in another account)."""

    facts: ServiceFacts | None
    why: str | None
    denied: bool
    count: int


def read_service(ecs: EcsService | None, cluster: str, service: str, foreign: str | None) -> ServiceRead:
    """DescribeServices and ListServices, once per decision; neither is asked for a cluster of another
    account or region (``foreign``: "account A, region R"), whose facts this account cannot read."""
    if foreign is not None:
        return ServiceRead(None, f"in {foreign}", False, 0)
    assert ecs is not None
    facts, why, denied = None, None, False
    try:
        facts = ecs.describe(cluster, service)
    except (ServiceNotFoundError, ServiceAccessDeniedError) as exc:
        why, denied = str(exc), isinstance(exc, ServiceAccessDeniedError)
    try:
        count = ecs.count_services(cluster)
    except (ClusterNotFoundError, ServiceAccessDeniedError):
        count = 0
    return ServiceRead(facts, why, denied, count)


def read_scalable(clients: Callable[[str], Any], alert_only: AlertOnlyClusters | None, cluster: str,
                  service: str) -> tuple[ScalableTargetFacts | None, ScalingSuspendError | None]:
    """The service's scalable target (DescribeScalableTargets; ``None``: it has none) and, when it could
    not be read, the translated error (then the service must not be scaled: it may have one)."""
    try:
        return ScalableTargets(clients("application-autoscaling"), alert_only=alert_only).describe(
            cluster, service), None
    except ScalingSuspendError as exc:
        return None, exc


def read_service_deployments(ecs: EcsService | None, cluster: str, service: str, facts: ServiceFacts | None) -> Any:
    """ListServiceDeployments (one page; DescribeServiceDeployments for the unfinished) for a service
    whose deployments something else finishes (core's :func:`deployments_worth_reading`); ``None`` when
    not read (core decides then from the events and ``rolloutState``)."""
    if facts is None or ecs is None or not deployments_worth_reading(
            facts.circuit_breaker, facts.deployment_controller, facts.deployment_strategy):
        return None
    return ecs.service_deployments(cluster, service)


def read_fleet(state: WatchdogState, config: PolicyConfig, ck: str, service: str, at: datetime,
               count: int) -> FleetView:
    """Rule 3 at event time ``at`` from the cluster's fleet minutes (core/fleet_minutes.py): a bounded
    read whatever the cluster's size. A service whose overflowed minute the window cuts is decided from
    its own summary's per-minute counts (their edge offsets are exact there). ``count``: ListServices'
    answer; 0 (unreadable, another account) counts the services the watchdog keeps a summary of, this
    one included."""
    need, start = config.fleet_signal_min_failures, at - config.window
    signals = state.fleet(ck, start, at, need)
    failing = set(signals.failing)
    for other in sorted(signals.uncertain - {service}):
        if failures_between(state.load(ck, other, fresh=True).minutes, start, at, need) >= need:
            failing.add(other)
    if not count:
        count = len(state.service_names(ck) | {service})
    return fleet_view_of(config, service, failing, signals.scaled_down, count)
