"""Availability sampler Lambda (scheduled every minute): ALB HealthyHostCount per target group per minute.

Recipe per invocation, "now" being the schedule's own ``time`` (so a retried or replayed schedule
samples exactly the minute it was meant to):

1. the settled minute is ``now - SAMPLE_LOOKBACK_MINUTES`` (CloudWatch publishes ALB metrics late);
2. find every ECS service with a target group (ListClusters, ListServices, DescribeServices), and
   each target group's load balancers (DescribeTargetGroups, 400 a page);
3. read every (target group, load balancer) series' Minimum for that minute in one GetMetricData call
   per 500 series;
4. write one sample per target group (conditional PutItem: a re-run writes nothing new). A target
   group without a datapoint gets a ``no_data`` sample, never an ``up`` one.

``replay_availability`` runs the same handler over a scenario's ``healthy_hosts.csv`` on the embedded
AWS and computes the availability report from what the handler wrote.
"""

from __future__ import annotations

import contextlib
import csv
import math
import os
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from ecs_guardrail.adapters.cloudwatch import METRIC, NAMESPACE, HealthyHostCount, Series
from ecs_guardrail.adapters.ecs import EcsFleet
from ecs_guardrail.adapters.elb import (
    TargetGroups,
    load_balancer_dimension,
    target_group_dimension,
    target_group_name,
)
from ecs_guardrail.adapters.history import HistoryStore, iso
from ecs_guardrail.core.availability import AvailabilityReport, Sample, minute_floor, minutes_between
from ecs_guardrail.core.errors import ScenarioError
from ecs_guardrail.core.timeline import availability_from_items
from ecs_guardrail.handlers.runtime import Runtime, lambda_runtime, logger, metrics

__all__ = ["handler", "sample_minute", "SampleOutcome", "replay_availability", "scheduled_time", "USES"]

#: adapters whose declared calls this function makes; walked by the IAM test
USES = {
    "history": HistoryStore.SAMPLER_ACTIONS,
    "ecs": EcsFleet.IAM_ACTIONS,
    "elb": TargetGroups.IAM_ACTIONS,
    "cloudwatch": HealthyHostCount.IAM_ACTIONS,
}


#: what the availability report reads of each timeline item
AVAILABILITY_FIELDS = ("type", "time", "cluster", "service", "task_arn", "last_status", "action", "target_group",
                       "healthy_host_count", "no_data", "desired_count", "running_count", "sampled_at")


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
    outcome = sample_minute(
        now,
        fleet=EcsFleet(rt.clients("ecs")),
        target_groups=TargetGroups(rt.clients("elbv2")),
        healthy=HealthyHostCount(rt.clients("cloudwatch")),
        store=rt.history,
        lookback_minutes=rt.settings.SAMPLE_LOOKBACK_MINUTES,
    )
    metrics.add_metric(name="SamplesWritten", unit="Count", value=outcome.written)
    metrics.add_metric(name="SamplesNoData", unit="Count", value=outcome.no_data)
    logger.info("sampled", extra=outcome.to_dict())
    return outcome.to_dict()


# ---------------------------------------------------------------------------- reading back, replay
def _parse(text: str) -> datetime:
    t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)  # SCENARIOS.md: times are UTC


#: the longest healthy_hosts.csv period a replay samples (one sampler run a minute): about a month
MAX_REPLAY_MINUTES = 35 * 24 * 60
_EARLIEST, _LATEST = datetime(2000, 1, 1, tzinfo=UTC), datetime(2200, 1, 1, tzinfo=UTC)


def _row(time_text: str, target_group: str, count_text: str) -> tuple[datetime, str, float]:
    t, value = _parse(time_text), float(count_text)
    if not _EARLIEST <= t < _LATEST:
        raise ValueError(f"time {time_text!r} is outside {_EARLIEST:%Y} to {_LATEST:%Y}")
    if not (math.isfinite(value) and 0 <= value <= 1_000_000):
        raise ValueError(f"healthy_host_count {count_text!r} is not a count")
    return t, target_group, value


def read_healthy_hosts_csv(path: Any) -> list[tuple[datetime, str, float]]:
    """``healthy_hosts.csv`` rows as ``(time, target group name, healthy_host_count)`` (SCENARIOS.md).

    Raises:
        ScenarioError: a wrong header or a row that does not parse (named by line).
    """
    rows: list[tuple[datetime, str, float]] = []
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            if not reader.fieldnames or {"time", "target_group", "healthy_host_count"} - set(reader.fieldnames):
                raise ScenarioError(f"{path}: header must be time,target_group,healthy_host_count")
            for n, row in enumerate(reader, 2):
                try:
                    rows.append(_row(row["time"].strip(), row["target_group"].strip(),
                                     row["healthy_host_count"].strip()))
                except (ValueError, AttributeError) as exc:
                    raise ScenarioError(f"{path}:{n}: {exc}") from None
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ScenarioError(f"{path}: cannot be read ({exc})") from None
    if rows:
        span = (max(r[0] for r in rows) - min(r[0] for r in rows)) // timedelta(minutes=1)
        if span > MAX_REPLAY_MINUTES:
            raise ScenarioError(f"{path}: rows span {span} minutes; a replay samples at most {MAX_REPLAY_MINUTES}")
    return rows


def load_healthy_hosts(cloudwatch: Any, target_groups: dict[str, dict[str, str]],
                       rows: list[tuple[datetime, str, float]]) -> list[str]:
    """PutMetricData the rows into (embedded) CloudWatch as ``AWS/ApplicationELB`` HealthyHostCount.

    ``target_groups``: name -> ``{"dimension", "lb_dimension"}``. Returns the unknown target group
    names (rows skipped).
    """
    unknown: set[str] = set()
    data = []
    for t, name, value in rows:
        tg = target_groups.get(name)
        if tg is None:
            unknown.add(name)
            continue
        data.append({"MetricName": METRIC, "Timestamp": t, "Value": value, "Unit": "Count",
                     "Dimensions": Series(tg["dimension"], tg["lb_dimension"]).dimensions()})
    for i in range(0, len(data), 1000):  # PutMetricData takes at most 1000 metrics a call
        cloudwatch.put_metric_data(Namespace=NAMESPACE, MetricData=data[i:i + 1000])
    return sorted(unknown)


def replay_availability(aws: Any, scenario: Any, result: Any, rt: Runtime) -> AvailabilityReport | None:
    """Load ``healthy_hosts.csv`` into the embedded CloudWatch, run the sampler once per minute of its
    period (the schedule for minute M fires at M + SAMPLE_LOOKBACK_MINUTES) and compute the report
    from the samples read back, the watchdog's decisions and the task events.

    Covers the minutes from the first to the last row for the services that have target groups.
    Returns ``None`` when the CSV has no rows.
    """
    rows = read_healthy_hosts_csv(scenario.healthy_hosts_path)
    if not rows:
        return None
    unknown = sorted({name for _, name, _ in rows} - set(aws.target_groups))
    for name in unknown:
        print(f"healthy_hosts.csv: target group {name!r} is not in fleet.json; rows ignored", file=sys.stderr)
    start, end = minute_floor(min(r[0] for r in rows)), minute_floor(max(r[0] for r in rows))
    lookback = timedelta(minutes=scenario.settings.SAMPLE_LOOKBACK_MINUTES)
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):  # EMF metrics go to stdout
        for m in minutes_between(start, end):
            sample({"source": "aws.events", "detail-type": "Scheduled Event", "time": iso(m + lookback),
                    "detail": {}}, rt)
    store = rt.history
    items: list[dict[str, Any]] = []
    for c in scenario.fleet["clusters"]:
        # task events from before the period tell which tasks were running at its start
        items.extend(store.timeline_brief(c["name"], start - timedelta(days=1), end + timedelta(seconds=59),
                                          fields=AVAILABILITY_FIELDS))
    return availability_from_items(items, start, end)
