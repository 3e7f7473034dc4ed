"""Availability arithmetic (ARCHITECTURE.md, "Availability"): service-minutes from ALB healthy hosts.

A service-minute is ``zero_by_watchdog`` from the minute of the watchdog's scale-down decision (its
``T``, whichever event's delivery made it) until the service is restored: unavailable, attributed to
the automation (its cost is part of availability), even where a decision taken on a late-delivered
event acted after minutes whose samples still showed healthy hosts. Otherwise it is ``up`` when every
target group of the service reported ``HealthyHostCount`` (Minimum, 60 s, the TargetGroup +
LoadBalancer series) of at least 1, else, in this order:

1. ``zero_by_operator``: the desired count is 0 and the watchdog did not do it (out of the denominator);
2. ``down``: a target group reported a minimum of 0 healthy hosts;
3. ``no_data``: a target group has no datapoint (no registered targets, or the sampler missed the
   minute). Unavailable, reported apart, never read as up (ECS-EVENTS.md, "ALB HealthyHostCount").

Pure functions: samples, decisions and task states come in as arguments. Services without a target
group have no figure.
"""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

__all__ = [
    "MinuteState",
    "Sample",
    "ScaleDown",
    "ServiceMinute",
    "ServiceAvailability",
    "AvailabilityReport",
    "minute_floor",
    "minutes_between",
    "classify_service_minutes",
    "running_tasks_by_minute",
    "availability_report",
    "UNAVAILABLE_STATES",
]

MINUTE = timedelta(minutes=1)


class MinuteState(StrEnum):
    UP = "up"
    DOWN = "down"
    NO_DATA = "no_data"
    ZERO_BY_WATCHDOG = "zero_by_watchdog"
    ZERO_BY_OPERATOR = "zero_by_operator"


#: states counted as unavailable (the operator's zero is out of the denominator, not in here)
UNAVAILABLE_STATES = frozenset({MinuteState.DOWN, MinuteState.NO_DATA, MinuteState.ZERO_BY_WATCHDOG})


def minute_floor(t: datetime) -> datetime:
    """``t`` in UTC, cut to the whole minute."""
    return t.astimezone(UTC).replace(second=0, microsecond=0)


def minutes_between(start: datetime, end: datetime) -> list[datetime]:
    """Every whole minute from ``start`` to ``end``, both included (minute-aligned, UTC)."""
    m, last = minute_floor(start), minute_floor(end)
    out = []
    while m <= last:
        out.append(m)
        m += MINUTE
    return out


@dataclass(frozen=True, slots=True)
class Sample:
    """One target group's healthy hosts in one minute, as the sampler wrote it.

    ``healthy_host_count``: the minimum over the minute (``None``: no datapoint). ``desired_count`` and
    ``running_count`` are DescribeServices' task counts at ``sampled_at`` (the sampler reads a settled
    minute a few minutes later, so they describe the service slightly after ``minute``).
    """

    cluster: str
    service: str
    target_group: str
    minute: datetime
    healthy_host_count: float | None
    desired_count: int | None = None
    running_count: int | None = None
    sampled_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class ScaleDown:
    """The watchdog scaled ``cluster/service`` to 0 at ``time`` (a ``scale_to_zero`` decision)."""

    cluster: str
    service: str
    time: datetime


@dataclass(frozen=True, slots=True)
class ServiceMinute:
    """One service in one minute. ``healthy_host_count`` is the lowest over its target groups
    (``None`` when none reported); ``running_tasks`` is the best known count of RUNNING tasks."""

    cluster: str
    service: str
    minute: datetime
    state: MinuteState
    healthy_host_count: float | None
    running_tasks: int | None = None
    has_data: bool = True

    @property
    def divergent(self) -> bool:
        """Tasks ran but no target was healthy (0 or no datapoint): running > 0 serving nobody."""
        return bool(self.running_tasks) and self.state in (MinuteState.DOWN, MinuteState.NO_DATA)


def _watchdog_periods(scale_downs: Iterable[ScaleDown], samples: list[Sample]
                      ) -> dict[tuple[str, str], list[tuple[datetime, datetime | None]]]:
    """Per service, the minutes ``[from, until)`` it stayed at 0 by the watchdog's hand.

    A period starts at the decision's time ``T``, whichever event's delivery made the decision (a
    decision made on a late-delivered event owns its minutes from ``T``, though the samples taken
    before it acted still show the old desired count). It ends with the first sample showing a desired
    count above 0 taken after a sample showed the scale-down's 0 (``restore`` or an operator put it
    back): at that sample's own minute when it had healthy hosts (it served then, so it was back),
    else at the minute it was taken. Where no sample after ``T`` ever showed 0 (put back before the
    sampler saw it), the first sample after ``T`` showing a count above 0 ends it.
    """
    points: dict[tuple[str, str], list[Sample]] = defaultdict(list)
    for s in samples:
        if s.desired_count is not None:
            points[(s.cluster, s.service)].append(s)
    for p in points.values():
        p.sort(key=lambda x: (x.sampled_at or x.minute, x.minute))
    out: dict[tuple[str, str], list[tuple[datetime, datetime | None]]] = defaultdict(list)
    for d in scale_downs:
        later = [x for x in points.get((d.cluster, d.service), []) if (x.sampled_at or x.minute) > d.time]
        zero = next((i for i, x in enumerate(later) if x.desired_count == 0), None)
        back = next((x for x in later[(zero or 0):] if (x.desired_count or 0) > 0), None)
        end = None
        if back is not None:
            served = back.healthy_host_count is not None and back.healthy_host_count >= 1 and zero is not None
            end = minute_floor(back.minute if served else (back.sampled_at or back.minute))
        out[(d.cluster, d.service)].append((minute_floor(d.time), end))
    return out


def _desired_at(points: list[tuple[datetime, int]], t: datetime) -> int | None:
    """The desired count DescribeServices last reported before ``t`` (the first one reported when
    none was before: samples are taken a few minutes after the minute they describe)."""
    if not points:
        return None
    i = bisect.bisect_left(points, (t, -1))
    return points[i - 1][1] if i else points[0][1]


def classify_service_minutes(
    samples: Iterable[Sample],
    start: datetime,
    end: datetime,
    *,
    scale_downs: Iterable[ScaleDown] = (),
    running_tasks: Mapping[tuple[str, str, datetime], int] | None = None,
) -> list[ServiceMinute]:
    """Classify every minute from ``start`` to ``end`` (both included) of every service that has
    a sample in that span (a service is known by its samples: no target group, no figure).

    A target group missing from a minute is a missing datapoint. The desired count of a minute is
    the one DescribeServices reported last by that minute's end (samples carry it with their
    ``sampled_at``), so the sampler's delay never makes the watchdog's zero look like an operator's.
    Returns the minutes sorted by service, then time.
    """
    minutes = minutes_between(start, end)
    if not minutes:
        return []
    lo, hi = minutes[0], minutes[-1]
    samples = [s for s in samples if lo <= minute_floor(s.minute) <= hi]
    groups: dict[tuple[str, str], set[str]] = defaultdict(set)
    by_minute: dict[tuple[str, str, datetime], dict[str, Sample]] = defaultdict(dict)
    for s in samples:
        groups[(s.cluster, s.service)].add(s.target_group)
        by_minute[(s.cluster, s.service, minute_floor(s.minute))][s.target_group] = s
    periods = _watchdog_periods(scale_downs, samples)
    desired_points: dict[tuple[str, str], list[tuple[datetime, int]]] = defaultdict(list)
    for s in samples:
        if s.desired_count is not None:
            desired_points[(s.cluster, s.service)].append((s.sampled_at or s.minute, s.desired_count))
    for points in desired_points.values():
        points.sort()
    running_tasks = running_tasks or {}
    out: list[ServiceMinute] = []
    for (cluster, service), tgs in sorted(groups.items()):
        for m in minutes:
            seen = by_minute.get((cluster, service, m), {})
            values = [seen[tg].healthy_host_count if tg in seen else None for tg in sorted(tgs)]
            known = [v for v in values if v is not None]
            desired = _desired_at(desired_points.get((cluster, service), []), m + MINUTE)
            running = [s.running_count for s in seen.values() if s.running_count is not None]
            from_events = running_tasks.get((cluster, service, m))
            candidates = running + ([from_events] if from_events is not None else [])
            run = max(candidates) if candidates else None
            lowest = min(known) if known else None
            has_data = len(known) == len(values)
            by_watchdog = any(a <= m and (b is None or m < b) for a, b in periods.get((cluster, service), []))
            if by_watchdog:  # from the decision's T on, whatever the samples of a late-acted minute say
                state = MinuteState.ZERO_BY_WATCHDOG
            elif has_data and lowest is not None and lowest >= 1:
                state = MinuteState.UP
            elif desired == 0:
                state = MinuteState.ZERO_BY_OPERATOR
            elif lowest is not None and lowest < 1:
                state = MinuteState.DOWN
            else:
                state = MinuteState.NO_DATA
            out.append(ServiceMinute(cluster, service, m, state, lowest, run, has_data))
    return out


def running_tasks_by_minute(
    task_states: Iterable[tuple[str, str, str, datetime, str]],
    start: datetime,
    end: datetime,
) -> dict[tuple[str, str, datetime], int]:
    """Tasks RUNNING at the end of each minute, from recorded task events.

    ``task_states``: ``(cluster, service, task_arn, event time, lastStatus)``; a task's state is its
    latest event up to that minute's end. Tasks that started before the first event given are not
    seen (an undercount, never an overcount). Returns ``{(cluster, service, minute): count}``.
    """
    first = minute_floor(start)
    count = len(minutes_between(start, end))
    per_task: dict[tuple[str, str, str], list[tuple[datetime, str]]] = defaultdict(list)
    for cluster, service, arn, t, status in task_states:
        per_task[(cluster, service, arn)].append((t, status))
    # One sweep per task: the state an event sets holds from the minute it falls in (the latest event of
    # a minute wins) until the minute of the next event; RUNNING spans go into a difference array per
    # service. O(events + services x minutes), never tasks x minutes.
    steps: dict[tuple[str, str], list[int]] = {}
    for (cluster, service, _arn), states in per_task.items():
        states.sort()
        spans: list[tuple[int, str]] = []  # (minute index from which the state holds, state)
        for t, status in states:
            k = max(0, (minute_floor(t) - first) // MINUTE)
            if k >= count:
                break
            if spans and spans[-1][0] == k:
                spans[-1] = (k, status)
            else:
                spans.append((k, status))
        for j, (k, status) in enumerate(spans):
            if status != "RUNNING":
                continue
            stop = spans[j + 1][0] if j + 1 < len(spans) else count
            diff = steps.setdefault((cluster, service), [0] * (count + 1))
            diff[k] += 1
            diff[stop] -= 1
    out: dict[tuple[str, str, datetime], int] = {}
    for (cluster, service), diff in steps.items():
        running = 0
        for i in range(count):
            running += diff[i]
            if running:
                out[(cluster, service, first + i * MINUTE)] = running
    return out


@dataclass(slots=True)
class ServiceAvailability:
    """One service's minutes by state over the report's period."""

    cluster: str
    service: str
    minutes: Counter[MinuteState] = field(default_factory=Counter)
    divergent_minutes: int = 0
    minutes_with_data: int = 0

    @property
    def denominator(self) -> int:
        """Service-minutes that count (all but the operator's zero)."""
        return sum(self.minutes.values()) - self.minutes[MinuteState.ZERO_BY_OPERATOR]

    @property
    def unavailable(self) -> int:
        return sum(self.minutes[s] for s in UNAVAILABLE_STATES)

    @property
    def availability_pct(self) -> float | None:
        d = self.denominator
        return round(100.0 * (d - self.unavailable) / d, 3) if d else None

    @property
    def coverage_pct(self) -> float | None:
        """Share of counted minutes where every target group reported a datapoint."""
        d = self.denominator
        return round(100.0 * self.minutes_with_data / d, 3) if d else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "service": self.service,
            **{s.value: self.minutes[s] for s in MinuteState},
            "unavailable_service_minutes": self.unavailable,
            "availability_pct": self.availability_pct,
            "coverage_pct": self.coverage_pct,
            "divergent_minutes": self.divergent_minutes,
        }


@dataclass(slots=True)
class AvailabilityReport:
    """Availability of every service with a target group from ``start`` to ``end`` (minutes, inclusive)."""

    start: datetime
    end: datetime
    services: list[ServiceAvailability]
    minutes: list[ServiceMinute] = field(default_factory=list)

    def _sum(self, state: MinuteState) -> int:
        return sum(s.minutes[state] for s in self.services)

    @property
    def unavailable_service_minutes(self) -> int:
        """Down + no data + zeroed by the watchdog, over all services (the replay summary's figure)."""
        return sum(s.unavailable for s in self.services)

    @property
    def by_cause(self) -> dict[str, int]:
        return {s.value: self._sum(s) for s in (MinuteState.DOWN, MinuteState.NO_DATA, MinuteState.ZERO_BY_WATCHDOG)}

    @property
    def denominator(self) -> int:
        return sum(s.denominator for s in self.services)

    @property
    def availability_pct(self) -> float | None:
        d = self.denominator
        return round(100.0 * (d - self.unavailable_service_minutes) / d, 3) if d else None

    @property
    def coverage_pct(self) -> float | None:
        d = self.denominator
        return round(100.0 * sum(s.minutes_with_data for s in self.services) / d, 3) if d else None

    @property
    def divergent_service_minutes(self) -> int:
        return sum(s.divergent_minutes for s in self.services)

    def to_dict(self) -> dict[str, Any]:
        from_ = self.start.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        to = self.end.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return {
            "start": from_,
            "end": to,
            "unavailable_service_minutes": self.unavailable_service_minutes,
            "by_cause": self.by_cause,
            "zero_by_operator": self._sum(MinuteState.ZERO_BY_OPERATOR),
            "service_minutes_counted": self.denominator,
            "availability_pct": self.availability_pct,
            "coverage_pct": self.coverage_pct,
            "divergent_service_minutes": self.divergent_service_minutes,
            "services": [s.to_dict() for s in self.services],
        }


def availability_report(
    samples: Iterable[Sample],
    start: datetime,
    end: datetime,
    *,
    scale_downs: Iterable[ScaleDown] = (),
    running_tasks: Mapping[tuple[str, str, datetime], int] | None = None,
) -> AvailabilityReport:
    """Classify the minutes (:func:`classify_service_minutes`) and add them up per service."""
    minutes = classify_service_minutes(samples, start, end, scale_downs=scale_downs, running_tasks=running_tasks)
    per: dict[tuple[str, str], ServiceAvailability] = {}
    for sm in minutes:
        sa = per.setdefault((sm.cluster, sm.service), ServiceAvailability(sm.cluster, sm.service))
        sa.minutes[sm.state] += 1
        if sm.divergent:
            sa.divergent_minutes += 1
        if sm.has_data and sm.state is not MinuteState.ZERO_BY_OPERATOR:
            sa.minutes_with_data += 1
    return AvailabilityReport(minute_floor(start), minute_floor(end), list(per.values()), minutes)
