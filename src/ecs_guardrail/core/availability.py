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

**The clients' view beside it** (ARCHITECTURE.md, "Two observers, side by side"): where the samples
carry the target groups' request metrics (``RequestCount``, ``HTTPCode_Target_2XX_Count``,
``HTTPCode_Target_5XX_Count``, ``HTTPCode_ELB_5XX_Count``, Sum per minute), each service-minute also
gets a :class:`ClientsState`: ``served`` (requests answered, 5xx below ``client_error_ratio``),
``failing`` (5xx at or above it) or ``idle`` (no request). A minute where the two observers disagree
gets a :class:`Disagreement`: ``checker_down_clients_served`` (zero healthy hosts while requests
succeed: the load balancer failed open, the health check is what is broken) or
``checker_up_clients_failing`` (healthy hosts while clients get 5xx: a gray failure the check cannot
see). Neither view replaces the other: ``unavailable_service_minutes`` stays the checker's. Network Load
Balancer target groups have no request metrics: healthy hosts only.

Pure functions: samples, decisions and task states come in as arguments. Services without a target
group have no figure.
"""

from __future__ import annotations

import bisect
import itertools
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from msgspec import Struct, field

__all__ = [
    "MinuteState",
    "ClientsState",
    "Disagreement",
    "Sample",
    "ServiceCounts",
    "SampleBlock",
    "BLOCK_FIELDS",
    "BLOCK_MINUTES",
    "clients_state",
    "CLIENT_ERROR_RATIO",
    "ScaleDown",
    "ServiceMinute",
    "ServiceAvailability",
    "AvailabilityReport",
    "minute_floor",
    "minutes_between",
    "classify_service_minutes",
    "running_tasks_by_minute",
    "RunningTasks",
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


class ClientsState(StrEnum):
    """The clients' view of one service-minute, from the target groups' request metrics."""

    SERVED = "served"
    FAILING = "failing"
    IDLE = "idle"


class Disagreement(StrEnum):
    """The direction of a minute where the health checker and the clients disagree."""

    CHECKER_DOWN_CLIENTS_SERVED = "checker_down_clients_served"
    CHECKER_UP_CLIENTS_FAILING = "checker_up_clients_failing"


#: default share of 5xx (targets' plus the load balancer's) at or above which a minute's clients failed
CLIENT_ERROR_RATIO = 0.05

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


class Sample(Struct, frozen=True):
    """One target group's healthy hosts in one minute, as the sampler wrote it.

    ``healthy_host_count``: the minimum over the minute (``None``: no datapoint). ``desired_count`` and
    ``running_count`` are DescribeServices' task counts at ``sampled_at`` (the sampler reads a settled
    minute a few minutes later, so they describe the service slightly after ``minute``); samples read
    in blocks carry ``None`` there and the counts come as :class:`ServiceCounts`.

    The clients' view (Sum over the minute, ALB CloudWatch metrics): ``request_count``
    (``RequestCount``), ``target_2xx`` (``HTTPCode_Target_2XX_Count``), ``target_5xx``
    (``HTTPCode_Target_5XX_Count``), ``elb_5xx`` (``HTTPCode_ELB_5XX_Count``). ALB publishes these
    only when nonzero, so ``None`` is 0 when ``request_metrics`` is True; ``request_metrics`` False
    means the clients' view was not read (a Network Load Balancer, or a scenario without the columns).
    """

    cluster: str
    service: str
    target_group: str
    minute: datetime
    healthy_host_count: float | None
    desired_count: int | None = None
    running_count: int | None = None
    sampled_at: datetime | None = None
    request_count: float | None = None
    target_2xx: float | None = None
    target_5xx: float | None = None
    elb_5xx: float | None = None
    request_metrics: bool = False


class ServiceCounts(Struct, frozen=True):
    """DescribeServices' ``desiredCount`` and ``runningCount`` of a service as the sampler saw them at
    ``sampled_at``: written when they change, so they hold until the next one of the same service.
    (A msgspec struct: the sampler builds one per service every minute.)"""

    cluster: str
    service: str
    sampled_at: datetime
    desired_count: int | None
    running_count: int | None


#: minutes per block of samples (the sampler reads and writes a block at once; UTC-aligned)
BLOCK_MINUTES = 30

#: the per-minute series of a :class:`SampleBlock`, in the order of :class:`Sample`'s fields
BLOCK_FIELDS = ("healthy_host_count", "request_count", "target_2xx", "target_5xx", "elb_5xx")


class SampleBlock(Struct, frozen=True):
    """One target group's minutes ``[start, start + len(healthy_host_count))`` as the sampler writes them:
    one item for many minutes (the sampler's cost is per item and per metric read, not per datapoint),
    every minute still its own value.

    ``values``: :data:`BLOCK_FIELDS` name -> one value per minute (``None``: no datapoint); the request
    series are present only with ``request_metrics`` (an ALB target group whose clients' view was read).
    ``sampled_at``: when the sampler read them (a later read of the same block replaces it: late
    datapoints are re-read).
    """

    cluster: str
    service: str
    target_group: str
    start: datetime
    values: Mapping[str, tuple[float | None, ...]]
    request_metrics: bool = False
    sampled_at: datetime | None = None

    @property
    def minutes(self) -> int:
        return len(self.values.get("healthy_host_count", ()))

    def samples(self) -> list[Sample]:
        """The block as one :class:`Sample` per minute (counts come apart, as :class:`ServiceCounts`)."""
        n = self.minutes
        # each series as one value per minute (a shorter or absent series: None past its end)
        hosts, requests, t2xx, t5xx, e5xx = (
            (list(self.values[k][:n]) + [None] * (n - len(self.values[k]))) if k in self.values else [None] * n
            for k in BLOCK_FIELDS)
        cluster, service, tg, metrics = self.cluster, self.service, self.target_group, self.request_metrics
        start = self.start
        return [Sample(cluster, service, tg, start + i * MINUTE, hosts[i], None, None, None, requests[i], t2xx[i],
                       t5xx[i], e5xx[i], metrics) for i in range(n)]


def clients_state(samples: Iterable[Sample], client_error_ratio: float = CLIENT_ERROR_RATIO) -> ClientsState | None:
    """The clients' view of one service-minute from its target groups' samples of that minute.

    Requests are ``RequestCount`` plus ``HTTPCode_ELB_5XX_Count`` (a 5xx the load balancer returns
    before choosing a target, such as a 503 with no registered target, is not in ``RequestCount``:
    ALB CloudWatch metrics); errors are the targets' and the load balancer's 5xx. ``idle`` without a
    request, ``failing`` when errors / requests >= ``client_error_ratio``, else ``served``. ``None``
    when no sample carries request metrics (NLB, or not read).
    """
    mine = [s for s in samples if s.request_metrics]
    if not mine:
        return None
    requests = sum((s.request_count or 0.0) + (s.elb_5xx or 0.0) for s in mine)
    errors = sum((s.target_5xx or 0.0) + (s.elb_5xx or 0.0) for s in mine)
    if requests <= 0:
        return ClientsState.IDLE
    return ClientsState.FAILING if errors / requests >= client_error_ratio else ClientsState.SERVED


class ScaleDown(Struct, frozen=True):
    """The watchdog scaled ``cluster/service`` to 0 at ``time`` (a ``scale_to_zero`` decision).

    ``held``: the watchdog's own state says how long it held the service (``RECOVERY=probe``: a probe's
    desired count of 1 is not a restore, so the samples cannot tell); it held it until ``until`` (its
    probe restored it), or to the end when ``until`` is ``None``. ``acted_at``: when the scale-down was
    made (delivered and acted on; ``None``: at ``time``): a decision on a late-delivered event owns its
    minutes from ``time``, and no desired count observed before ``acted_at`` can show its 0 or end it.
    """

    cluster: str
    service: str
    time: datetime
    held: bool = False
    until: datetime | None = None
    acted_at: datetime | None = None


class ServiceMinute(Struct, frozen=True):
    """One service in one minute. ``healthy_host_count`` is the lowest over its target groups
    (``None`` when none reported); ``running_tasks`` is the best known count of RUNNING tasks.
    (A msgspec struct: a report builds one per service-minute, 288,000 for a day of 200 services.)"""

    cluster: str
    service: str
    minute: datetime
    state: MinuteState
    healthy_host_count: float | None
    running_tasks: int | None = None
    has_data: bool = True
    #: the clients' view (``None``: no request metrics for this service, e.g. behind an NLB)
    clients: ClientsState | None = None
    #: requests and 5xx of the minute over the target groups (``None`` without request metrics)
    request_count: float | None = None
    errors_5xx: float | None = None

    @property
    def disagreement(self) -> Disagreement | None:
        """Where the checker and the clients disagree: zero healthy hosts while requests succeed, or
        healthy hosts while clients get 5xx (``None`` when they agree, or either view is missing)."""
        if self.state is MinuteState.DOWN and self.clients is ClientsState.SERVED:
            return Disagreement.CHECKER_DOWN_CLIENTS_SERVED
        if self.state is MinuteState.UP and self.clients is ClientsState.FAILING:
            return Disagreement.CHECKER_UP_CLIENTS_FAILING
        return None

    @property
    def divergent(self) -> bool:
        """Tasks ran but no target was healthy (0 or no datapoint): running > 0 serving nobody."""
        return bool(self.running_tasks) and self.state in (MinuteState.DOWN, MinuteState.NO_DATA)


def _watchdog_periods(scale_downs: Iterable[ScaleDown],
                      desired: Iterable[tuple[str, str, datetime, int, datetime | None]]
                      ) -> dict[tuple[str, str], list[tuple[datetime, datetime | None]]]:
    """Per service, the minutes ``[from, until)`` it stayed at 0 by the watchdog's hand.

    ``desired``: ``(cluster, service, observed at, desired count, served minute)``, where ``served
    minute`` is the sample's own minute when that sample had healthy hosts (``None`` otherwise, and
    for a count read without a sample). A period starts at the decision's time ``T``, whichever
    event's delivery made the decision (a decision made on a late-delivered event owns its minutes from
    ``T``, though the counts observed before it acted still show the old desired count). It ends with
    the first observation of a desired count above 0 made after one showed the scale-down's 0
    (``restore`` or an operator put it back): at the sample's own minute when it had healthy hosts (it
    served then, so it was back), else at the minute it was observed. Where no observation after ``T``
    ever showed 0 (put back before the sampler saw it), the first one after ``T`` above 0 ends it. Or it
    ends where :attr:`ScaleDown.held` says (``RECOVERY=probe``: the watchdog's own state).
    """
    points: dict[tuple[str, str], list[tuple[datetime, int, datetime | None]]] = defaultdict(list)
    for cluster, service, at, count, served in desired:
        if count is not None:
            points[(cluster, service)].append((at, count, served))
    for p in points.values():
        p.sort(key=lambda x: (x[0], x[2] or x[0]))
    out: dict[tuple[str, str], list[tuple[datetime, datetime | None]]] = defaultdict(list)
    for d in scale_downs:
        key = (d.cluster, d.service)
        if d.held:
            out[key].append((minute_floor(d.time), minute_floor(d.until) if d.until else None))
            continue
        since = max(d.time, d.acted_at) if d.acted_at is not None else d.time
        later = [x for x in points.get(key, []) if x[0] > since]
        zero = next((i for i, x in enumerate(later) if x[1] == 0), None)
        back = next((x for x in later[(zero or 0):] if x[1] > 0), None)
        end = None
        if back is not None:
            end = minute_floor(back[2] if back[2] is not None and zero is not None else back[0])
        out[key].append((minute_floor(d.time), end))
    return out


def _desired_at(points: list[tuple[datetime, int]], t: datetime) -> int | None:
    """The desired count DescribeServices last reported before ``t`` (the first one reported when
    none was before: samples are taken a few minutes after the minute they describe)."""
    if not points:
        return None
    i = bisect.bisect_left(points, (t, -1))
    return points[i - 1][1] if i else points[0][1]


def classify_service_minutes(
    samples: Iterable[Sample | SampleBlock],
    start: datetime,
    end: datetime,
    *,
    scale_downs: Iterable[ScaleDown] = (),
    running_tasks: Mapping[tuple[str, str, datetime], int] | None = None,
    counts: Iterable[ServiceCounts] = (),
    client_error_ratio: float = CLIENT_ERROR_RATIO,
) -> list[ServiceMinute]:
    """Classify every minute from ``start`` to ``end`` (both included) of every service that has
    a sample in that span (a service is known by its samples: no target group, no figure).

    A target group missing from a minute is a missing datapoint (of two samples of the same target
    group and minute, the later one given counts). The desired count of a minute is the one
    DescribeServices reported last by that minute's end (samples carry it with their ``sampled_at``;
    block samples through ``counts``, written when the counts change), so the sampler's delay never
    makes the watchdog's zero look like an operator's. The clients' view of a minute is
    :func:`clients_state` of its samples (``client_error_ratio``: 0..1). Returns the minutes sorted by
    service, then time.

    ``samples``: :class:`Sample` s and whole :class:`SampleBlock` s (a block is its
    :meth:`SampleBlock.samples`, in their order), read once (a generator is fine). They are kept as
    columns: per target group of each service, one value per minute of each field the classification
    reads (``services x target groups x minutes`` values, never an object per sample or per
    service-minute; a block goes in as slices), and each service's columns are let go once its minutes
    are classified.
    """
    minutes = minutes_between(start, end)
    if not minutes:
        return []
    slots, observed = _slot_samples(samples, minutes)
    counts = [c for c in counts if c.sampled_at <= minutes[-1] + MINUTE]
    observed += [(c.cluster, c.service, c.sampled_at, c.desired_count, None) for c in counts
                 if c.desired_count is not None]
    scale_downs = list(scale_downs)
    periods = _watchdog_periods(scale_downs, observed)
    held_periods = _watchdog_periods([d for d in scale_downs if d.held], observed)
    desired_points = _points_by_service((cluster, service, at, count) for cluster, service, at, count, _ in observed)
    running_points = _points_by_service((c.cluster, c.service, c.sampled_at, c.running_count) for c in counts
                                        if c.running_count is not None)
    if running_tasks is None:  # not ``or {}``: a RunningTasks' truth would count all its minutes
        running_tasks = {}
    out: list[ServiceMinute] = []
    for key in sorted(slots):
        groups = slots.pop(key)  # this service's samples are not needed past its own minutes
        out += _service_minutes(key, [groups[tg] for tg in sorted(groups)], minutes, desired_points.get(key, []),
                                running_points.get(key, []), periods.get(key, []), held_periods.get(key, []),
                                running_tasks, client_error_ratio)
    return out


#: a desired count DescribeServices reported: (cluster, service, when, count, the minute it was seen
#: serving or None)
_Observed = tuple[str, str, datetime, int, datetime | None]


class _Column:
    """One target group's samples over the report's minutes (index ``i``: minute ``minutes[0] + i``), as
    the fields the classification reads of them: ``hosts`` (``healthy_host_count``; ``None``: no sample,
    or a sample without a datapoint), and only once a sample carries them, ``running`` (``running_count``)
    and the clients' view (``metrics``: the sample has ``request_metrics``; ``requests``, ``t5xx``,
    ``e5xx``: its ``request_count``, ``target_5xx``, ``elb_5xx``). ``None`` for a column not allocated
    is ``None`` (or False) in every minute. A later sample of a minute replaces every field of it."""

    __slots__ = ("n", "hosts", "running", "metrics", "requests", "t5xx", "e5xx")

    def __init__(self, n: int) -> None:
        self.n = n
        self.hosts: list[float | None] = [None] * n
        self.running: list[int | None] | None = None
        self.metrics: list[bool] | None = None
        self.requests: list[float | None] | None = None
        self.t5xx: list[float | None] | None = None
        self.e5xx: list[float | None] | None = None

    def clients(self) -> tuple[list[bool], list[float | None], list[float | None], list[float | None]]:
        """The clients' view columns ``(metrics, requests, t5xx, e5xx)``, allocated on first use."""
        if self.metrics is None:
            n = self.n
            self.metrics, self.requests, self.t5xx, self.e5xx = [False] * n, [None] * n, [None] * n, [None] * n
        return self.metrics, self.requests, self.t5xx, self.e5xx  # type: ignore[return-value]

    def put(self, i: int, s: Sample) -> None:
        """Minute ``i`` is ``s``."""
        self.hosts[i] = s.healthy_host_count
        if s.running_count is not None:
            if self.running is None:
                self.running = [None] * self.n
            self.running[i] = s.running_count
        elif self.running is not None:
            self.running[i] = None
        if s.request_metrics or self.metrics is not None:
            metrics, requests, t5xx, e5xx = self.clients()
            metrics[i], requests[i], t5xx[i], e5xx[i] = s.request_metrics, s.request_count, s.target_5xx, s.elb_5xx

    def put_block(self, i: int, block: SampleBlock, first: int, last: int) -> None:
        """Minutes ``i ...`` are the block's minutes ``first`` to ``last`` (excluded): as its
        :meth:`SampleBlock.samples` (a series shorter than ``healthy_host_count``: ``None`` past its end)."""
        k = last - first
        values = block.values

        def part(name: str) -> list[float | None]:
            got = list(values.get(name, ())[first:last])
            return got + [None] * (k - len(got)) if len(got) < k else got

        self.hosts[i:i + k] = part("healthy_host_count")
        if self.running is not None:
            self.running[i:i + k] = [None] * k
        if block.request_metrics or self.metrics is not None:
            metrics, requests, t5xx, e5xx = self.clients()
            metrics[i:i + k] = [block.request_metrics] * k
            requests[i:i + k] = part("request_count")
            t5xx[i:i + k] = part("target_5xx")
            e5xx[i:i + k] = part("elb_5xx")


def _slot_samples(samples: Iterable[Sample | SampleBlock], minutes: list[datetime]
                  ) -> tuple[dict[tuple[str, str], dict[str, _Column]], list[_Observed]]:
    """``samples`` (read once) as ``(cluster, service) -> target group -> its`` :class:`_Column` over
    ``minutes`` (of two samples of a minute, the later given), and the desired counts they carry
    (:data:`_Observed`, seen at ``sampled_at``). Samples outside the minutes are left out (a block:
    its minutes outside them)."""
    lo, hi = minutes[0], minutes[-1]
    n = len(minutes)
    slots: dict[tuple[str, str], dict[str, _Column]] = {}
    observed: list[_Observed] = []
    for s in samples:
        if isinstance(s, SampleBlock):
            count = s.minutes
            b = s.start
            if b.second or b.microsecond or b.tzinfo is not UTC:  # its minutes are b + i min, each floored
                b = minute_floor(b)
            first = max(0, -((b - lo) // MINUTE))  # the block's first minute at or after lo
            last = min(count, (hi - b) // MINUTE + 1)  # past its last minute at or before hi
            if first >= last:
                continue
            groups = slots.setdefault((s.cluster, s.service), {})
            column = groups.get(s.target_group)
            if column is None:
                column = groups[s.target_group] = _Column(n)
            column.put_block((b - lo) // MINUTE + first, s, first, last)
            continue
        m = s.minute
        if m.second or m.microsecond or m.tzinfo is not UTC:  # a block's minutes are whole UTC minutes already
            m = minute_floor(m)
        if not lo <= m <= hi:
            continue
        groups = slots.setdefault((s.cluster, s.service), {})
        column = groups.get(s.target_group)
        if column is None:
            column = groups[s.target_group] = _Column(n)
        column.put((m - lo) // MINUTE, s)
        if s.desired_count is not None:
            observed.append((s.cluster, s.service, s.sampled_at or s.minute, s.desired_count,
                             s.minute if s.healthy_host_count is not None and s.healthy_host_count >= 1 else None))
    return slots, observed


def _points_by_service(points: Iterable[tuple[str, str, datetime, int]]
                       ) -> dict[tuple[str, str], list[tuple[datetime, int]]]:
    """``(cluster, service, when, count)`` as ``(cluster, service) -> [(when, count)]``, time order."""
    out: dict[tuple[str, str], list[tuple[datetime, int]]] = defaultdict(list)
    for cluster, service, at, count in points:
        out[(cluster, service)].append((at, count))
    for listed in out.values():
        listed.sort()
    return out


def _reported_series(points: list[tuple[datetime, int]], minutes: list[datetime]) -> list[int | None]:
    """:func:`_desired_at` at the end of each of ``minutes`` (consecutive whole minutes, ascending): one
    forward pass over ``points``, comparing times (``(t, -1)`` is ``bisect_left``'s key: a point at the very
    time counts as before it only with a count below -1)."""
    if not points:
        return [None] * len(minutes)
    out: list[int | None] = []
    i, n, first = 0, len(points), points[0][1]
    times = [t for t, _ in points]
    ends = minutes[1:] + [minutes[-1] + MINUTE]  # each minute's end: the next minute
    for end in ends:
        while i < n and (times[i] < end or (times[i] == end and points[i][1] < -1)):
            i += 1
        out.append(points[i - 1][1] if i else first)
    return out


def _events_series(running_tasks: Mapping[tuple[str, str, datetime], int], key: tuple[str, str],
                   minutes: list[datetime]) -> list[int | None]:
    """``running_tasks.get((cluster, service, m))`` for each of ``minutes`` (a :class:`RunningTasks` over
    the same minutes: its series, read as it is)."""
    if isinstance(running_tasks, RunningTasks) and running_tasks.first == minutes[0] \
            and running_tasks.minutes == len(minutes):
        counts = running_tasks.series.get(key)
        return [n or None for n in counts] if counts is not None else [None] * len(minutes)
    cluster, service = key
    return [running_tasks.get((cluster, service, m)) for m in minutes]


def _service_minutes(key: tuple[str, str], columns: list[_Column], minutes: list[datetime],
                     desired_of: list[tuple[datetime, int]], running_of: list[tuple[datetime, int]],
                     own_periods: list[tuple[datetime, datetime | None]],
                     own_held: list[tuple[datetime, datetime | None]],
                     running_tasks: Mapping[tuple[str, str, datetime], int],
                     client_error_ratio: float) -> list[ServiceMinute]:
    """Every minute of one service (``key``): ``columns``, its target groups' samples per minute;
    ``desired_of`` / ``running_of``, its reported desired and running counts; ``own_periods`` /
    ``own_held``, the watchdog's zero periods (all, and a hold's) from :func:`_watchdog_periods`."""
    cluster, service = key
    out: list[ServiceMinute] = []
    desired_series = _reported_series(desired_of, minutes)
    from_counts_series = _reported_series(running_of, minutes)
    from_events_series = _events_series(running_tasks, key, minutes)
    hosts = [c.hosts for c in columns]
    one = hosts[0] if len(hosts) == 1 else None
    runs = [c.running for c in columns if c.running is not None]
    clients_of = [c.clients() for c in columns if c.metrics is not None]  # (metrics, requests, t5xx, e5xx)
    up = MinuteState.UP
    for i, m in enumerate(minutes):
        if one is not None:  # one target group (most services): no list per minute
            lowest = one[i]
            has_data = lowest is not None
        else:
            values = [h[i] for h in hosts]
            known = [v for v in values if v is not None]
            lowest = min(known) if known else None
            has_data = len(known) == len(values)
        desired = desired_series[i]
        from_counts, from_events = from_counts_series[i], from_events_series[i]
        candidates: list[int] = [x for r in runs if (x := r[i]) is not None] if runs else []
        if from_counts is not None:
            candidates.append(from_counts)
        if from_events is not None:
            candidates.append(from_events)
        run = max(candidates) if candidates else None
        by_watchdog = bool(own_periods) and any(a <= m and (b is None or m < b) for a, b in own_periods)
        if not by_watchdog and has_data and lowest >= 1:  # type: ignore[operator]  # has_data: not None
            state = up  # :func:`_minute_state`'s serving minute, outside the watchdog's zero
        else:
            probing = bool(own_held) and (desired or 0) > 0 and any(a <= m and (b is None or m < b)
                                                                     for a, b in own_held)
            state = _minute_state(by_watchdog, probing, has_data, lowest, desired)
        clients: ClientsState | None = None
        requests: float | None = None
        errors: float | None = None
        mine = [c for c in clients_of if c[0][i]] if clients_of else None
        if mine:
            # clients_state's sums, in the same order (the same float additions)
            requests = sum((c[1][i] or 0.0) + (c[3][i] or 0.0) for c in mine)
            errors = sum((c[2][i] or 0.0) + (c[3][i] or 0.0) for c in mine)
            clients = (ClientsState.IDLE if requests <= 0 else ClientsState.FAILING
                       if errors / requests >= client_error_ratio else ClientsState.SERVED)
        out.append(ServiceMinute(cluster, service, m, state, lowest, run, has_data, clients, requests, errors))
    return out


def _minute_state(by_watchdog: bool, probing: bool, has_data: bool, lowest: float | None,
                  desired: int | None) -> MinuteState:
    """A minute's state from the watchdog's zero period (``by_watchdog``; ``probing``: a probe it raised
    inside a hold), the samples (``has_data``: every target group has one; ``lowest`` healthy host
    count) and the desired count reported by the minute's end."""
    serving = has_data and lowest is not None and lowest >= 1
    if by_watchdog and not (probing and serving):
        # from the decision's T on, whatever the samples of a late-acted minute say; only a probe
        # the watchdog itself raised (RECOVERY=probe) may serve inside the hold
        return MinuteState.ZERO_BY_WATCHDOG
    if serving:
        return MinuteState.UP
    if desired == 0:
        return MinuteState.ZERO_BY_OPERATOR
    if lowest is not None and lowest < 1:
        return MinuteState.DOWN
    return MinuteState.NO_DATA


class RunningTasks(Mapping[tuple[str, str, datetime], int]):
    """Tasks RUNNING at the end of each minute, as :func:`running_tasks_by_minute` counts them.

    Read as the mapping ``{(cluster, service, minute): count}`` of the minutes with at least one task
    (a minute with none is not a key); held as one count per minute per service: ``series[(cluster,
    service)][i]`` is the count of minute ``first + i`` min, ``i`` in ``range(minutes)``, so a day of 200
    services is 200 lists of 1,440 small ints, not 288,000 dictionary entries.
    """

    __slots__ = ("first", "minutes", "series")

    def __init__(self, first: datetime, minutes: int, series: dict[tuple[str, str], list[int]]) -> None:
        self.first, self.minutes, self.series = first, minutes, series

    def get(self, key: tuple[str, str, datetime], default: Any = None) -> Any:  # the hot path: no exception
        cluster, service, minute = key
        counts = self.series.get((cluster, service))
        if counts is None:
            return default
        offset = minute - self.first
        i = offset // MINUTE
        if not 0 <= i < self.minutes or offset % MINUTE:
            return default
        return counts[i] or default

    def __getitem__(self, key: tuple[str, str, datetime]) -> int:
        count: int | None = self.get(key)
        if count is None:
            raise KeyError(key)
        return count

    def __iter__(self) -> Iterator[tuple[str, str, datetime]]:
        for (cluster, service), counts in self.series.items():
            for i, n in enumerate(counts):
                if n:
                    yield (cluster, service, self.first + i * MINUTE)

    def __len__(self) -> int:
        return sum(1 for counts in self.series.values() for n in counts if n)


def running_tasks_by_minute(
    task_states: Iterable[tuple[str, str, str, datetime, str]],
    start: datetime,
    end: datetime,
) -> RunningTasks:
    """Tasks RUNNING at the end of each minute, from recorded task events.

    ``task_states``: ``(cluster, service, task_arn, event time, lastStatus)``, in any order (read once);
    a task's state is its latest event up to that minute's end. Tasks that started before the first
    event given are not seen (an undercount, never an overcount). Returns :class:`RunningTasks`, read as
    ``{(cluster, service, minute): count}`` for the minutes with a running task.
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
            k = max(0, (t - first) // MINUTE)  # first is a whole minute: the same as flooring t first
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
    series = {key: list(itertools.accumulate(diff[:count])) for key, diff in steps.items()}
    return RunningTasks(first, count, series)


class ServiceAvailability(Struct):
    """One service's minutes by state over the report's period."""

    cluster: str
    service: str
    minutes: Counter[MinuteState] = field(default_factory=Counter)
    divergent_minutes: int = 0
    minutes_with_data: int = 0
    #: the clients' view by state (empty: no request metrics, e.g. an NLB target group)
    clients: Counter[ClientsState] = field(default_factory=Counter)
    disagreements: Counter[Disagreement] = field(default_factory=Counter)

    @property
    def clients_view(self) -> bool:
        """True when request metrics were read for this service (an ALB target group)."""
        return bool(self.clients)

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
            **({"served_service_minutes": self.clients[ClientsState.SERVED],
                "idle_service_minutes": self.clients[ClientsState.IDLE],
                "clients_failing_minutes": self.clients[ClientsState.FAILING],
                "checker_disagreement_minutes": {d.value: self.disagreements[d] for d in Disagreement}}
               if self.clients_view else {"clients_view": None}),
        }


class AvailabilityReport(Struct):
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

    @property
    def clients_view(self) -> bool:
        """True when some service has the clients' view (request metrics were read)."""
        return any(s.clients_view for s in self.services)

    @property
    def served_service_minutes(self) -> int | None:
        """Service-minutes whose clients were served (``None`` without any request metrics)."""
        return sum(s.clients[ClientsState.SERVED] for s in self.services) if self.clients_view else None

    @property
    def idle_service_minutes(self) -> int | None:
        """Service-minutes without a request (``None`` without any request metrics)."""
        return sum(s.clients[ClientsState.IDLE] for s in self.services) if self.clients_view else None

    @property
    def checker_disagreement_minutes(self) -> dict[str, int] | None:
        """Service-minutes where the observers disagree, by :class:`Disagreement` (``None`` without any
        request metrics)."""
        if not self.clients_view:
            return None
        return {d.value: sum(s.disagreements[d] for s in self.services) for d in Disagreement}

    @property
    def healthy_hosts_only(self) -> list[str]:
        """``cluster/service`` of the services without the clients' view (behind an NLB: no request
        metrics) when others have it; empty otherwise."""
        if not self.clients_view:
            return []
        return [f"{s.cluster}/{s.service}" for s in self.services if not s.clients_view]

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
            "served_service_minutes": self.served_service_minutes,
            "idle_service_minutes": self.idle_service_minutes,
            "checker_disagreement_minutes": self.checker_disagreement_minutes,
            "healthy_hosts_only": self.healthy_hosts_only,
            "services": [s.to_dict() for s in self.services],
        }


def availability_report(
    samples: Iterable[Sample | SampleBlock],
    start: datetime,
    end: datetime,
    *,
    scale_downs: Iterable[ScaleDown] = (),
    running_tasks: Mapping[tuple[str, str, datetime], int] | None = None,
    counts: Iterable[ServiceCounts] = (),
    client_error_ratio: float = CLIENT_ERROR_RATIO,
) -> AvailabilityReport:
    """Classify the minutes (:func:`classify_service_minutes`: ``samples`` are samples and whole blocks) and
    add them up per service."""
    minutes = classify_service_minutes(samples, start, end, scale_downs=scale_downs, running_tasks=running_tasks,
                                       counts=counts, client_error_ratio=client_error_ratio)
    per: dict[tuple[str, str], ServiceAvailability] = {}
    operator_zero, unserved = MinuteState.ZERO_BY_OPERATOR, (MinuteState.DOWN, MinuteState.NO_DATA)
    # the minutes come service by service: each service's run is tallied at once (Counter.update counts in C)
    for key, run in itertools.groupby(minutes, key=lambda sm: (sm.cluster, sm.service)):
        sa = per.get(key)
        if sa is None:
            sa = per[key] = ServiceAvailability(*key)
        mine = list(run)
        sa.minutes.update([sm.state for sm in mine])
        sa.divergent_minutes += sum(1 for sm in mine if sm.running_tasks and sm.state in unserved)  # .divergent
        sa.minutes_with_data += sum(1 for sm in mine if sm.has_data and sm.state is not operator_zero)
        views = [c for sm in mine if (c := sm.clients) is not None]
        if views:
            sa.clients.update(views)
            sa.disagreements.update([d for sm in mine if sm.clients is not None and (d := sm.disagreement) is not None])
    return AvailabilityReport(minute_floor(start), minute_floor(end), list(per.values()), minutes)
