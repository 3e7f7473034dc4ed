"""Availability sampler Lambda (scheduled every minute): ALB HealthyHostCount per target group per minute.

Recipe per invocation, "now" being the schedule's own ``time`` (so a retried or replayed schedule
samples exactly the minute it was meant to):

1. the settled minute is ``now - SAMPLE_LOOKBACK_MINUTES`` (CloudWatch publishes ALB metrics late);
2. find every ECS service with a target group (ListClusters, ListServices, DescribeServices), and
   each target group's load balancers (DescribeTargetGroups, 400 a page);
3. read every (target group, load balancer) series' Minimum for that minute in one GetMetricData call
   per 500 series;
4. write one sample per target group (conditional PutItem: a re-run writes nothing new). A target
   group without a datapoint gets a ``no_data`` sample, never an ``up`` one;
5. read every service's Container Insights restart total for the same minute and the one before
   (:func:`restart_observations`, its own GetMetricData call per 500 services) and put one
   ``Container Restarts`` event per service that restarted on the default bus for the watchdog
   (restart-policy loops emit no ECS event).

A replay runs :func:`sample_minute` on its own clock, interleaved with the events
(:mod:`ecs_guardrail.replay.sampling`); nothing replay-only lives here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from ecs_guardrail.adapters.bus import ObservationBus
from ecs_guardrail.adapters.cloudwatch import ContainerRestarts, HealthyHostCount, Series
from ecs_guardrail.adapters.ecs import EcsFleet
from ecs_guardrail.adapters.elb import (
    TargetGroups,
    load_balancer_dimension,
    target_group_dimension,
    target_group_name,
)
from ecs_guardrail.adapters.history import HistoryStore, iso
from ecs_guardrail.core.availability import Sample, minute_floor
from ecs_guardrail.core.restarts import RestartObservation, restart_increments
from ecs_guardrail.handlers.runtime import Runtime, lambda_runtime, logger, metrics

__all__ = ["handler", "sample_minute", "SampleOutcome", "scheduled_time", "USES", "restart_observations"]

#: adapters whose declared calls this function makes; walked by the IAM test
USES = {
    "history": HistoryStore.SAMPLER_ACTIONS,
    "ecs": EcsFleet.IAM_ACTIONS,
    "elb": TargetGroups.IAM_ACTIONS,
    "cloudwatch": HealthyHostCount.IAM_ACTIONS,
    "restarts": ContainerRestarts.IAM_ACTIONS,
    "bus": ObservationBus.IAM_ACTIONS,
}


def scheduled_time(event: Any, fallback: datetime | None = None) -> datetime:
    """The schedule's own time: ``time`` of an EventBridge scheduled event (``"2025-08-21T15:05:00Z"``),
    or ``scheduled_time`` for an EventBridge Scheduler target whose input carries
    ``<aws.scheduler.scheduled-time>``. Falls back to ``fallback`` (default: the clock).

    Raises:
        ValueError: a time that is not ISO 8601.
    """
    text = None
    if isinstance(event, dict):
        text = event.get("time") or event.get("scheduled_time")
    if not text:
        return fallback or datetime.now(UTC)
    t = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    return t if t.tzinfo else t.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class SampleOutcome:
    """What one invocation did: the minute sampled, target groups seen, samples written (new),
    of which ``no_data``, and the series read."""

    minute: datetime
    target_groups: int
    written: int
    no_data: int
    series: int

    def to_dict(self) -> dict[str, Any]:
        return {"minute": iso(self.minute), "target_groups": self.target_groups, "written": self.written,
                "no_data": self.no_data, "series": self.series}


def sample_minute(now: datetime, *, fleet: EcsFleet, target_groups: TargetGroups, healthy: HealthyHostCount,
                  store: HistoryStore, lookback_minutes: int) -> SampleOutcome:
    """Sample the settled minute ``floor(now) - lookback_minutes`` for every load-balanced service.

    A target group behind several load balancers gets the lowest of their minima (a client through
    any of them must find a healthy target); one with no load balancer, or no datapoint, is ``no_data``.
    """
    minute = minute_floor(now) - timedelta(minutes=lookback_minutes)
    services = [s for c in fleet.clusters() for s in fleet.load_balanced_services(c)]
    tg_arns = {arn for s in services for arn in s.target_group_arns}
    lbs = target_groups.load_balancers(tg_arns)
    series_of = {arn: [Series(target_group_dimension(arn), load_balancer_dimension(lb)) for lb in lbs.get(arn, ())]
                 for arn in tg_arns}
    all_series = [x for xs in series_of.values() for x in xs]
    minima = healthy.minima(all_series, minute, minute + timedelta(minutes=1)) if all_series else {}
    written = no_data = 0
    for svc in services:
        for arn in svc.target_group_arns:
            values = [minima[s][minute] for s in series_of[arn] if minute in minima.get(s, {})]
            value = min(values) if values else None
            sample = Sample(cluster=svc.cluster, service=svc.name, target_group=target_group_name(arn),
                            minute=minute, healthy_host_count=value, desired_count=svc.desired_count,
                            running_count=svc.running_count, sampled_at=now)
            if store.record_sample(sample, target_group_dimension=target_group_dimension(arn),
                                   load_balancers=len(series_of[arn])):
                written += 1
                no_data += value is None
    return SampleOutcome(minute, len(tg_arns), written, no_data, len(all_series))


def restart_observations(now: datetime, *, fleet: EcsFleet, restarts: ContainerRestarts,
                         lookback_minutes: int) -> list[RestartObservation]:
    """Container restarts of every service in the settled minute ``M = floor(now) - lookback_minutes``
    (ARCHITECTURE.md, "Restart-policy loops"): the ``RestartCount`` totals of ``M - 1`` and ``M``
    (ListClusters, ListServices, one GetMetricData per 500 services), a rise being that many restarts
    (:func:`~ecs_guardrail.core.restarts.restart_increments`). Returns one observation per service that
    restarted in ``M``, for the watchdog; a service without Container Insights has no datapoint and none.
    """
    minute = minute_floor(now) - timedelta(minutes=lookback_minutes)
    names = {(arn.rsplit("/", 1)[-1], svc): arn for arn, svcs in fleet.cluster_services().items() for svc in svcs}
    if not names:
        return []
    totals = restarts.totals(sorted(names), minute - timedelta(minutes=1), minute + timedelta(minutes=1))
    out = []
    for (cluster, service), points in sorted(totals.items()):
        for m, n in restart_increments(points.items()):
            if m == minute and n > 0:
                out.append(RestartObservation(names[(cluster, service)], service, m, n, points[m]))
    return out


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Lambda entry point (EventBridge Scheduler or a rate(1 minute) rule).

    Raises:
        SettingsError: an invalid setting (nothing is sampled; the schedule's retry and DLQ keep it).
    """
    metrics.add_metric(name="SamplerRuns", unit="Count", value=1)
    return sample(event, lambda_runtime("availability"))


def sample(event: dict[str, Any], rt: Runtime) -> dict[str, Any]:
    """One scheduled run over ``rt`` (shared by Lambda and ``replay``): :func:`sample_minute` and its metrics."""
    now = scheduled_time(event)
    fleet = EcsFleet(rt.clients("ecs"))
    outcome = sample_minute(
        now,
        fleet=fleet,
        target_groups=TargetGroups(rt.clients("elbv2")),
        healthy=HealthyHostCount(rt.clients("cloudwatch")),
        store=rt.history,
        lookback_minutes=rt.settings.SAMPLE_LOOKBACK_MINUTES,
    )
    metrics.add_metric(name="SamplesWritten", unit="Count", value=outcome.written)
    metrics.add_metric(name="SamplesNoData", unit="Count", value=outcome.no_data)
    # restart-policy loops: the minute's container restarts, handed to the watchdog through the bus
    observed = restart_observations(now, fleet=fleet, restarts=ContainerRestarts(rt.clients("cloudwatch")),
                                    lookback_minutes=rt.settings.SAMPLE_LOOKBACK_MINUTES)
    account, region = rt.home or ("", rt.history.region)
    sent = ObservationBus(rt.clients("events")).put([o.to_event(account, region) for o in observed]) \
        if observed else 0
    metrics.add_metric(name="RestartObservationsSent", unit="Count", value=sent)
    logger.info("sampled", extra={**outcome.to_dict(), "restart_observations": sent})
    return {**outcome.to_dict(), "restart_observations": sent}
