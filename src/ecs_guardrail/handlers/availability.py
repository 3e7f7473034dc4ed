"""Availability sampler Lambda (scheduled every minute): both observers of every ALB/NLB target group.

Recipe per invocation, "now" being the schedule's own ``time`` (so a retried or replayed schedule
samples exactly the minute it was meant to):

1. the settled minute is ``M = now - SAMPLE_LOOKBACK_MINUTES`` (CloudWatch publishes ALB metrics late);
2. find every ECS service with a target group (ListClusters, ListServices, DescribeServices), and
   write its desired and running counts when they changed, and once per block (so every minute is
   judged with the counts *of that minute*, without an item per minute, and a reader of any window
   finds the counts in force at its start within one block before it);
3. when ``M`` ends a block of :data:`BLOCK_MINUTES` (UTC-aligned), read the block and the one before
   it in one GetMetricData call per 500 queries (:meth:`HealthyHostCount.read`): ``HealthyHostCount``
   Minimum, and for ALB target groups ``RequestCount``, ``HTTPCode_Target_2XX_Count``,
   ``HTTPCode_Target_5XX_Count`` and the load balancer's ``HTTPCode_ELB_5XX_Count`` (Sum). GetMetricData
   charges per metric requested, not per datapoint, so a block of 30 minutes costs what one minute did;
4. write one item per target group per block, every minute its own value; the block before is
   re-read and rewritten only when a late datapoint changed it. A minute without a
   ``HealthyHostCount`` datapoint stays ``None`` (``no_data``), never ``up``.

5. when ``M`` ends a UTC-aligned span of :data:`RESTART_READ_MINUTES`, read the Container Insights
   restart totals of that span (and the minute before it) for the services whose task definition
   enables a restart policy, in clusters with Container Insights (:func:`restart_observations`: DescribeClusters,
   DescribeTaskDefinition cached per ARN, one GetMetricData call per 500 services) and put one
   ``Container Restarts`` event per service and minute with restarts on the default bus for the
   watchdog (restart-policy loops emit no ECS event).

The decision-time read of ``still_serving`` does not wait for blocks: the watchdog reads the newest
minutes itself when it decides (:meth:`HealthyHostCount.newest_healthy`).

A replay runs :func:`sample_minute` on its own clock, interleaved with the events
(:mod:`ecs_guardrail.replay.sampling`), and flushes the last partial block at its end.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from msgspec import Struct

from ecs_guardrail.adapters.bus import ObservationBus
from ecs_guardrail.adapters.cloudwatch import ContainerRestarts, HealthyHostCount, Reading, Series
from ecs_guardrail.adapters.ecs import EcsFleet, describe_services, restart_policy_enabled
from ecs_guardrail.adapters.elb import (
    TargetGroups,
    load_balancer_dimension,
    target_group_dimension,
    target_group_name,
)
from ecs_guardrail.adapters.history import HistoryStore, iso
from ecs_guardrail.adapters.store.samples import Samples
from ecs_guardrail.core.availability import BLOCK_FIELDS, BLOCK_MINUTES, SampleBlock, ServiceCounts, minute_floor
from ecs_guardrail.core.links import resource_name
from ecs_guardrail.core.restarts import MAX_RESTARTS_PER_MINUTE, RestartObservation, restart_increments
from ecs_guardrail.handlers.runtime import Runtime, lambda_runtime, logger, metrics

__all__ = ["handler", "sample_minute", "SampleOutcome", "scheduled_time", "USES", "BLOCK_MINUTES", "block_start",
           "restart_observations", "restarts_due", "RESTART_READ_MINUTES"]

MINUTE = timedelta(minutes=1)


def block_start(minute: datetime, block_minutes: int = BLOCK_MINUTES) -> datetime:
    """The start of the UTC-aligned block of ``block_minutes`` that holds ``minute``."""
    m = minute_floor(minute)
    since_epoch = int(m.timestamp()) // 60
    return m - timedelta(minutes=since_epoch % block_minutes)

#: the units (adapter classes: every declared method) whose AWS calls this function makes;
#: ecs_guardrail.iam.handler_permissions unions their @permissions (tests/infra/test_iam_calls.py)
USES = {
    "history": Samples,
    "ecs": EcsFleet,
    "describe_services": describe_services,
    "restart_policy_enabled": restart_policy_enabled,
    "elb": TargetGroups,
    "cloudwatch": HealthyHostCount,
    "restarts": ContainerRestarts,
    "bus": ObservationBus,
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


class SampleOutcome(Struct, frozen=True):
    """What one invocation did: the settled minute, target groups seen, items written (blocks and
    changed counts), target-group minutes without a ``HealthyHostCount`` datapoint in the block just
    read (the re-read block before it is not counted again), the series read, and the metrics
    requested from GetMetricData (0 when no block was due)."""

    minute: datetime
    target_groups: int
    written: int
    no_data: int
    series: int
    metrics_requested: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"minute": iso(self.minute), "target_groups": self.target_groups, "written": self.written,
                "no_data": self.no_data, "series": self.series, "metrics_requested": self.metrics_requested}


def sample_minute(now: datetime, *, fleet: EcsFleet, target_groups: TargetGroups, healthy: HealthyHostCount,
                  store: HistoryStore, lookback_minutes: int, block_minutes: int = BLOCK_MINUTES,
                  requests: bool = True, flush: bool = False, not_before: datetime | None = None) -> SampleOutcome:
    """Sample the settled minute ``floor(now) - lookback_minutes`` for every load-balanced service.

    Writes the services' counts when they changed; when that minute ends a block (or ``flush``: a
    replay's last minute), reads the block so far and the whole block before it, and writes both (the
    one before only where a late datapoint changed it). ``requests``: read the clients' view of ALB
    target groups too. ``not_before``: no minute before it is written (a replay's first minute).

    A target group behind several load balancers gets the lowest of their minima (a client through
    any of them must find a healthy target) and the sum of their requests; one with no load balancer,
    or no datapoint, is ``no_data``.
    """
    minute = minute_floor(now) - timedelta(minutes=lookback_minutes)
    services = [s for c in fleet.clusters() for s in fleet.load_balanced_services(c)]
    due = flush or block_start(minute + MINUTE, block_minutes) == minute + MINUTE
    written = 0
    for svc in services:
        # changed counts, and all of them once a block: a reader of any window finds the counts in force
        written += store.record_counts(ServiceCounts(svc.cluster, svc.name, now, svc.desired_count,
                                                     svc.running_count), force=due)
    tg_arns = {arn for s in services for arn in s.target_group_arns}
    if not due:
        return SampleOutcome(minute, len(tg_arns), written, 0, 0)
    current = block_start(minute, block_minutes)
    starts = [current - timedelta(minutes=block_minutes), current]
    lo = starts[0] if not_before is None else max(starts[0], minute_floor(not_before))
    if lo > minute:
        return SampleOutcome(minute, len(tg_arns), written, 0, 0)
    lbs = target_groups.load_balancers(tg_arns)
    series_of = {arn: [Series(target_group_dimension(arn), load_balancer_dimension(lb)) for lb in lbs.get(arn, ())]
                 for arn in tg_arns}
    all_series = [x for xs in series_of.values() for x in xs]
    before = healthy.metrics_requested
    readings = healthy.read(all_series, lo, minute + MINUTE, requests=requests) if all_series else {}
    asked = healthy.metrics_requested - before
    # the blocks' minutes, listed once for every target group: (0 the block before, 1 the current one)
    spans: list[tuple[int, datetime, list[datetime]]] = []
    for n, b in enumerate(starts):
        first = max(b, lo)
        last = min(b + timedelta(minutes=block_minutes), minute + MINUTE)
        listed = []
        m = first
        while m < last:
            listed.append(m)
            m += MINUTE
        if listed:
            spans.append((n, first, listed))
    no_data = 0
    for svc in services:
        for arn in svc.target_group_arns:
            mine = series_of[arn]
            clients = requests and any(x.has_request_metrics for x in mine)
            # each series' minutes, looked up once per target group, not once per minute (the hot loop)
            points = [p for p in (readings.get(x) for x in mine) if p]
            for n, first, listed in spans:
                values = _block_values(points, listed, clients)
                if n == 1:  # the block just read: its minutes without a HealthyHostCount datapoint
                    no_data += values["healthy_host_count"].count(None)
                block = SampleBlock(svc.cluster, svc.name, target_group_name(arn), first, values, clients, now)
                written += store.record_block(block, target_group_dimension=target_group_dimension(arn),
                                              load_balancers=len(mine))
    return SampleOutcome(minute, len(tg_arns), written, no_data, len(all_series), asked)


def _block_values(points: list[dict[datetime, Reading]], minutes: list[datetime], clients: bool
                  ) -> dict[str, tuple[float | None, ...]]:
    """A target group's block of ``minutes`` from its series' readings (``points``: one dict per series with
    any datapoint): per :data:`BLOCK_FIELDS` name (the request series only with ``clients``), each minute's
    lowest ``healthy_host_count`` and summed request counts over the series (``None``: no series has one).
    A target group behind one load balancer (the usual case) is its one series' values, read straight."""
    if len(points) == 1:
        p = points[0]
        got = [p.get(m) for m in minutes]
        values = {"healthy_host_count": tuple(None if r is None else r.healthy_host_count for r in got)}
        if clients:
            for k in BLOCK_FIELDS[1:]:
                # one series' sum is ``float(sum([v]))``: ``float(0 + v)``
                column = [None if r is None else getattr(r, k) for r in got]
                values[k] = tuple(None if v is None else float(0 + v) for v in column)
        return values
    lists: dict[str, list[float | None]] = {k: [] for k in BLOCK_FIELDS if clients or k == "healthy_host_count"}
    host_values = lists["healthy_host_count"]
    sums = [(lists[k], k) for k in BLOCK_FIELDS[1:] if k in lists]
    for m in minutes:
        rs = [p[m] for p in points if m in p]
        hosts = [r.healthy_host_count for r in rs if r.healthy_host_count is not None]
        host_values.append(min(hosts) if hosts else None)
        for column, k in sums:
            got_k = [getattr(r, k) for r in rs if getattr(r, k) is not None]
            column.append(float(sum(got_k)) if got_k else None)
    return {k: tuple(v) for k, v in lists.items()}


#: minutes of container restarts one read covers (UTC-aligned): the restart-count reader runs every
#: 5th minute for the 5 minutes just settled, each read billed once per service however many minutes it
#: spans (GetMetricData charges per metric requested). A restart loop needs ``CRASH_THRESHOLD`` restarts
#: and ECS restarts a container at most once per ``restartAttemptPeriod`` (60 s at least), so the loop
#: takes 5 minutes to build at the least; the read adds at most 4 minutes to its alert (always alert-only)
RESTART_READ_MINUTES = 5


def restarts_due(minute: datetime, read_minutes: int = RESTART_READ_MINUTES) -> bool:
    """Does the settled ``minute`` end a UTC-aligned span of ``read_minutes`` (the restart reader's turn)?"""
    return block_start(minute + MINUTE, read_minutes) == minute + MINUTE


def restart_observations(now: datetime, *, fleet: EcsFleet, restarts: ContainerRestarts,
                         lookback_minutes: int, minutes: int = 1) -> list[RestartObservation]:
    """Container restarts in the ``minutes`` settled minutes ending with ``M = floor(now) - lookback_minutes``
    (ARCHITECTURE.md, "Restart-policy loops"): the ``RestartCount`` totals of ``M - minutes`` to ``M``
    (one GetMetricData per 500 services, each service one metric whatever the span), a rise being that many
    restarts (:func:`~ecs_guardrail.core.restarts.restart_increments`).

    Only the services worth reading are asked about (:meth:`EcsFleet.restart_policy_services`: a restart
    policy enabled, in a cluster with Container Insights); no such service, no call. Returns one
    observation per service and minute with restarts, oldest minute first, for the watchdog.
    """
    minute = minute_floor(now) - timedelta(minutes=lookback_minutes)
    first = minute - timedelta(minutes=minutes - 1)
    names = {(resource_name(arn), svc): arn for arn, svcs in fleet.restart_policy_services().items()
             for svc in svcs}
    if not names:
        return []
    totals = restarts.totals(sorted(names), first - timedelta(minutes=1), minute + timedelta(minutes=1))
    out = []
    for (cluster, service), points in sorted(totals.items()):
        for m, n in restart_increments(points.items()):
            if first <= m <= minute and n > 0:
                # a rise past what ECS can restart in a minute (a counter reset read as a rise, a gap) is
                # the bound: the watchdog would reject the observation and lose the loop
                out.append(RestartObservation(names[(cluster, service)], service, m,
                                              min(n, MAX_RESTARTS_PER_MINUTE), points[m]))
    out.sort(key=lambda o: o.minute)  # stable: services in name order within a minute
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
    fleet = EcsFleet(rt.clients("ecs"), rt.cache.setdefault("restart_policies", {}))
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
    metrics.add_metric(name="MetricsRequested", unit="Count", value=outcome.metrics_requested)
    # restart-policy loops: every RESTART_READ_MINUTES, the container restarts of the minutes just
    # settled, handed to the watchdog through the bus
    observed = restart_observations(now, fleet=fleet, restarts=ContainerRestarts(rt.clients("cloudwatch")),
                                    lookback_minutes=rt.settings.SAMPLE_LOOKBACK_MINUTES,
                                    minutes=RESTART_READ_MINUTES) if restarts_due(outcome.minute) else []
    account, region = rt.home or ("", rt.history.region)
    sent = ObservationBus(rt.clients("events")).put([o.to_event(account, region) for o in observed]) \
        if observed else 0
    metrics.add_metric(name="RestartObservationsSent", unit="Count", value=sent)
    logger.info("sampled", extra={**outcome.to_dict(), "restart_observations": sent})
    return {**outcome.to_dict(), "restart_observations": sent}
