"""``healthy_hosts.csv`` (SCENARIOS.md, "Folder") and how a replay serves it to the sampler.

The CSV goes into the embedded CloudWatch (memory on ``--engine fast``, moto on ``--engine moto``) as
the load balancers publish it, and the real adapter
(:class:`ecs_guardrail.adapters.cloudwatch.HealthyHostCount`) reads it back with GetMetricData on
both engines: ``HealthyHostCount`` per (target group, load balancer) series, ``AWS/ApplicationELB`` or
``AWS/NetworkELB``; where the CSV has the optional request columns, ``RequestCount``,
``HTTPCode_Target_2XX_Count`` and ``HTTPCode_Target_5XX_Count`` per ALB series and ``HTTPCode_ELB_5XX_Count``
per ALB (the replay gives each ALB target group its own load balancer, so a row's ``elb_5xx`` is its load
balancer's). An empty request cell is a missing datapoint, which ALB would not publish either (it publishes
request metrics only when nonzero: Elastic Load Balancing guide, "CloudWatch metrics for your Application Load
Balancer"): 0 requests, so a minute without any reads as idle. A cell that is not a number is an error naming
its line and column, never idle. NLB target groups have no request metrics: their request cells are ignored.
"""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ecs_guardrail.adapters.cloudwatch import ELB_5XX, METRIC, REQUEST_METRICS, Series
from ecs_guardrail.core.errors import ScenarioError

__all__ = ["read_healthy_hosts_csv", "load_into_cloudwatch", "namespace_of", "has_request_columns",
           "MAX_REPLAY_MINUTES", "HEADER", "REQUEST_COLUMNS", "duplicate_minutes_warning", "shifted_samples_warning",
           "FAR_APART"]

HEADER = ("time", "target_group", "healthy_host_count")
#: the optional columns of the clients' view (Sum over the minute), in the header's order
REQUEST_COLUMNS = ("request_count", "target_2xx", "target_5xx", "elb_5xx")
#: the longest healthy_hosts.csv period a replay samples (one sampler run a minute): about a month
MAX_REPLAY_MINUTES = 35 * 24 * 60
_EARLIEST, _LATEST = datetime(2000, 1, 1, tzinfo=UTC), datetime(2200, 1, 1, tzinfo=UTC)
#: how far a service's first zero of healthy hosts may lie from its nearest failure before the samples
#: look shifted (a wrong UTC offset moves them by whole hours; a brownout's first zero follows its first
#: failures by minutes)
FAR_APART = timedelta(minutes=60)

#: ``(time, target group name, healthy_host_count, {request column: value})``; a column absent from
#: the dict (an empty cell, or no such column) is a missing datapoint
Row = tuple[datetime, str, float, dict[str, float]]


def namespace_of(load_balancer_dimension: str) -> str:
    """``net/NAME/ID`` -> ``AWS/NetworkELB``; anything else (``app/NAME/ID``) -> ``AWS/ApplicationELB``."""
    return "AWS/NetworkELB" if load_balancer_dimension.startswith("net/") else "AWS/ApplicationELB"


def _time(text: str) -> datetime:
    t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    t = t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)  # SCENARIOS.md: times are UTC
    if not _EARLIEST <= t < _LATEST:
        raise ValueError
    return t


def _count(where: str, column: str, text: str) -> float:
    try:  # a number as CloudWatch and capture write it: float() also takes 1_000 and non-ASCII digits
        value = float(text) if text.isascii() and "_" not in text else math.nan
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 <= value <= 1_000_000_000):
        raise ScenarioError(f"{where}: column {column}: {text[:40]!r} is not a count (expected a number from 0 "
                            f"to {1_000_000 if column == 'healthy_host_count' else 1_000_000_000}"
                            f"{', or empty for no datapoint' if column != 'healthy_host_count' else ''})")
    if column == "healthy_host_count" and value > 1_000_000:
        raise ScenarioError(f"{where}: column healthy_host_count: {text[:40]!r} is not a count (expected a "
                            "number from 0 to 1000000)")
    return value


def _row(where: str, row: dict[str | None, Any], columns: tuple[str, ...]) -> Row:
    """One CSV row, or a ScenarioError naming the row, the column and what it expects."""
    if None in row:  # more fields than the header has
        raise ScenarioError(f"{where}: {len(columns) + len(row[None])} fields, expected {len(columns)} "
                            f"({','.join(columns)})")
    text = {k: (row.get(k) or "").strip() for k in columns}
    try:
        t = _time(text["time"])
    except ValueError:
        raise ScenarioError(f"{where}: column time: {text['time'][:40]!r} is not an ISO 8601 UTC time "
                            f"between {_EARLIEST:%Y} and {_LATEST:%Y} (expected e.g. 2025-08-21T12:25:00Z)") from None
    if not text["target_group"]:
        raise ScenarioError(f"{where}: column target_group: empty (expected a target group name of fleet.json)")
    value = _count(where, "healthy_host_count", text["healthy_host_count"])
    requests = {k: _count(where, k, text[k]) for k in REQUEST_COLUMNS if k in text and text[k]}
    if requests.get("target_2xx", 0) + requests.get("target_5xx", 0) > requests.get("request_count", math.inf):
        raise ScenarioError(f"{where}: target_2xx + target_5xx ({requests.get('target_2xx', 0):g} + "
                            f"{requests.get('target_5xx', 0):g}) exceed request_count ({requests['request_count']:g})")
    return t, text["target_group"], value, requests


def _plain_rows(name: str, reader: Any) -> list[Row]:
    """The rows of a file whose header is exactly :data:`HEADER` (``reader``: the csv reader past it), as
    :func:`_row` reads them (a row of the wrong width, or any cell it would refuse, goes to :func:`_row`
    for its error), each distinct time and count text parsed once: a fleet's file repeats every minute's
    time once per target group, and a few counts throughout."""
    rows: list[Row] = []
    times: dict[str, datetime] = {}
    counts: dict[str, float] = {}
    width = len(HEADER)
    for row in reader:
        if not row:  # csv.DictReader skips blank lines
            continue
        if len(row) == width:
            t = times.get(row[0])
            value = counts.get(row[2])
            group = row[1].strip()
            if t is not None and value is not None and group:
                rows.append((t, group, value, {}))
                continue
        where = f"{name}:{reader.line_num}"
        cells: dict[str | None, Any] = dict(zip(HEADER, row, strict=False))  # as csv.DictReader gives them
        if len(row) > width:
            cells[None] = row[width:]
        got = _row(where, cells, HEADER)
        rows.append(got)
        if len(row) == width:  # parsed and accepted: the same texts read the same again
            times.setdefault(row[0], got[0])
            counts.setdefault(row[2], got[2])
    return rows


def read_healthy_hosts_csv(path: Path | str) -> list[Row]:
    """``healthy_hosts.csv`` rows as :data:`Row` (the request columns are optional, any subset).

    Raises:
        ScenarioError: a wrong header (the header found is named, and an unknown column), a row that does
        not parse (its line, its column and what the column expects), rows spanning more than
        :data:`MAX_REPLAY_MINUTES`.
    """
    name = Path(path).name
    rows: list[Row] = []
    try:
        # utf-8-sig: Excel's "CSV UTF-8" starts the file with a byte order mark, which is no error
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.DictReader(fh)
            found = [f.strip() for f in (reader.fieldnames or [])]
            if set(HEADER) - set(found):
                missing = ", ".join(k for k in HEADER if k not in found)
                raise ScenarioError(f"{name}: header is {','.join(found)[:120] or '(empty)'!r}; expected "
                                    f"{','.join(HEADER)!r} (missing: {missing})")
            unknown = [f for f in found if f not in HEADER + REQUEST_COLUMNS]
            if unknown:
                raise ScenarioError(f"{name}: unknown column {unknown[0][:40]!r}; the columns are "
                                    f"{','.join(HEADER)} and optionally {','.join(REQUEST_COLUMNS)}")
            reader.fieldnames = found
            columns = tuple(found)
            if columns == HEADER:  # the usual file: rows read as lists, each distinct text parsed once
                rows = _plain_rows(name, reader.reader)
            else:
                for row in reader:
                    rows.append(_row(f"{name}:{reader.line_num}", row, columns))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ScenarioError(f"{name}: cannot be read ({exc})") from None
    if rows:
        span = (max(r[0] for r in rows) - min(r[0] for r in rows)) // timedelta(minutes=1)
        if span > MAX_REPLAY_MINUTES:
            raise ScenarioError(f"{name}: rows span {span} minutes; a replay samples at most {MAX_REPLAY_MINUTES}")
    return rows


def has_request_columns(path: Path | str) -> bool:
    """True when ``healthy_hosts.csv``'s header has any of :data:`REQUEST_COLUMNS` (the replay then reads
    the clients' view; without them it reads healthy hosts only, as before)."""
    with open(path, newline="", encoding="utf-8") as fh:
        header = next(csv.reader(fh), [])
    return any(h.strip() in REQUEST_COLUMNS for h in header)


def load_into_cloudwatch(cloudwatch: Any, target_groups: dict[str, dict[str, str]], rows: Iterable[Row]) -> list[str]:
    """PutMetricData the rows into (embedded) CloudWatch as the load balancers publish them:
    ``HealthyHostCount`` per series (``AWS/ApplicationELB`` or ``AWS/NetworkELB`` by the load balancer's
    type) and, for ALB target groups, the request columns (:data:`REQUEST_METRICS` per series,
    ``HTTPCode_ELB_5XX_Count`` per load balancer, summed over its target groups' rows).
    ``target_groups``: name -> ``{"dimension", "lb_dimension"}`` (:attr:`EmbeddedAws.target_groups`).

    Returns the unknown target group names (rows skipped).
    """
    unknown: set[str] = set()
    by_namespace: dict[str, list[dict[str, Any]]] = defaultdict(list)
    elb: dict[tuple[str, datetime], float] = defaultdict(float)
    # target group name -> its series, its namespace's data and its dimensions (one list, read by every datapoint)
    known: dict[str, tuple[Series, list[dict[str, Any]], list[dict[str, str]]]] = {}
    for t, name, value, requests in rows:
        got = known.get(name)
        if got is None:
            tg = target_groups.get(name)
            if tg is None:
                unknown.add(name)
                continue
            series = Series(tg["dimension"], tg["lb_dimension"])
            got = known[name] = (series, by_namespace[namespace_of(series.load_balancer)], series.dimensions())
        s, data, dimensions = got
        data.append({"MetricName": METRIC, "Timestamp": t, "Value": value, "Unit": "Count",
                     "Dimensions": dimensions})
        if not requests or not s.has_request_metrics:
            continue
        for column, metric in REQUEST_METRICS.items():
            if column in requests:
                data.append({"MetricName": metric, "Timestamp": t, "Value": requests[column], "Unit": "Count",
                             "Dimensions": dimensions})
        if "elb_5xx" in requests:
            elb[(s.load_balancer, t)] += requests["elb_5xx"]
    for (lb, t), value in elb.items():
        by_namespace["AWS/ApplicationELB"].append({"MetricName": ELB_5XX, "Timestamp": t, "Value": value,
                                                   "Unit": "Count",
                                                   "Dimensions": [{"Name": "LoadBalancer", "Value": lb}]})
    for namespace, data in by_namespace.items():
        for i in range(0, len(data), 1000):  # PutMetricData takes at most 1000 metrics a call
            cloudwatch.put_metric_data(Namespace=namespace, MetricData=data[i:i + 1000])
    return sorted(unknown)


def _minute(t: datetime) -> datetime:
    return t.replace(second=0, microsecond=0)


def duplicate_minutes_warning(rows: list[Row]) -> str | None:
    """One line when two rows or more give the same target group and minute (a hand-written or merged
    CSV), else None. Both go into CloudWatch, and the sampler reads the minute's Maximum of
    ``HealthyHostCount`` (:class:`ecs_guardrail.adapters.cloudwatch.HealthyHostCount`): a 2 hides a 0."""
    minutes: dict[datetime, datetime] = {}  # the rows' times are few (one per minute): each floored once
    for t, _name, _value, _ in rows:
        if t not in minutes:
            minutes[t] = _minute(t)
    if len({(name, minutes[t]) for t, name, _value, _ in rows}) == len(rows):
        return None  # no target group minute twice (a generated or captured CSV): nothing to list
    values: dict[tuple[str, datetime], list[float]] = defaultdict(list)
    for t, name, value, _ in rows:
        values[(name, _minute(t))].append(value)
    twice = sorted((k, v) for k, v in values.items() if len(v) > 1)
    if not twice:
        return None
    (name, minute), first = twice[0]
    return (f"healthy_hosts.csv: {len(twice)} target group minute(s) have more than one row (first: {name} at "
            f"{minute:%Y-%m-%dT%H:%MZ}: {', '.join(f'{v:g}' for v in first)}); the sampler reads each minute's "
            "maximum, as CloudWatch's Maximum of HealthyHostCount: give one row per target group and minute")


def shifted_samples_warning(rows: list[Row], fleet: dict[str, Any],
                            failures: dict[tuple[str, str], list[datetime]]) -> str | None:
    """One line when ``healthy_hosts.csv`` looks shifted from the events inside their span, else None.

    ``failures``: per (cluster, service), the times (UTC) of its genuine failures in the events (crashes
    and health-check kills). For each service with target groups in ``fleet.json`` and failures, the
    first minute one of its target groups reports 0 healthy hosts is compared with its failures: when
    every failure is more than :data:`FAR_APART` away (a CSV written in local time, ``+02:00`` where
    ``Z`` was meant), the availability report measures other minutes than the ones the events
    describe. The service farthest off is named, with the gap in hours.
    """
    first_zero: dict[str, datetime] = {}
    for t, name, value, _ in rows:
        if value == 0 and (name not in first_zero or t < first_zero[name]):
            first_zero[name] = t
    worst: tuple[timedelta, str, datetime, datetime] | None = None
    for c in fleet.get("clusters", []):
        for svc in c.get("services", []):
            times = failures.get((str(c["name"]), str(svc["name"])))
            zeros = [first_zero[tg] for tg in svc.get("targetGroups") or [] if tg in first_zero]
            if not times or not zeros:
                continue
            zero = min(zeros)
            nearest = min(times, key=lambda f: abs(f - zero))
            gap = abs(nearest - zero)
            if gap > FAR_APART and (worst is None or gap > worst[0]):
                worst = (gap, f"{c['name']}/{svc['name']}", zero, nearest)
    if worst is None:
        return None
    gap, name, zero, nearest = worst
    return (f"healthy_hosts.csv: {name}'s healthy hosts first reach 0 at {zero:%Y-%m-%dT%H:%MZ}, "
            f"{gap / timedelta(hours=1):.1f} h from its nearest failure in the events ({nearest:%Y-%m-%dT%H:%M:%SZ}): "
            "are the samples shifted? times are UTC: write them with Z, or with their offset such as +02:00")
