"""``healthy_hosts.csv`` (SCENARIOS.md, "Folder") and the two metrics sources a replay samples from.

The sampler (:func:`ecs_guardrail.handlers.availability.sample_minute`) reads HealthyHostCount through
a *metrics source*: any object with ``minima(series, start, end)`` as
:class:`ecs_guardrail.adapters.cloudwatch.HealthyHostCount` has it. A replay gives it one of:

- :class:`MemoryHealthyHostCount` (``--engine fast``): the CSV rows in a dict, answered in microseconds;
- the real adapter over moto CloudWatch, after :func:`load_into_cloudwatch` (``--engine moto``).

Both answer for Application and Network Load Balancer target groups alike: a series is named by its
dimension values (``targetgroup/NAME/ID`` and ``app/NAME/ID`` or ``net/NAME/ID``).
"""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar

from ecs_guardrail.adapters.cloudwatch import METRIC, Series
from ecs_guardrail.core.errors import ScenarioError

__all__ = ["read_healthy_hosts_csv", "MemoryHealthyHostCount", "load_into_cloudwatch", "namespace_of",
           "MAX_REPLAY_MINUTES", "HEADER"]

HEADER = ("time", "target_group", "healthy_host_count")
#: the longest healthy_hosts.csv period a replay samples (one sampler run a minute): about a month
MAX_REPLAY_MINUTES = 35 * 24 * 60
_EARLIEST, _LATEST = datetime(2000, 1, 1, tzinfo=UTC), datetime(2200, 1, 1, tzinfo=UTC)

Row = tuple[datetime, str, float]


def namespace_of(load_balancer_dimension: str) -> str:
    """``net/NAME/ID`` -> ``AWS/NetworkELB``; anything else (``app/NAME/ID``) -> ``AWS/ApplicationELB``."""
    return "AWS/NetworkELB" if load_balancer_dimension.startswith("net/") else "AWS/ApplicationELB"


def _time(text: str) -> datetime:
    t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    t = t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)  # SCENARIOS.md: times are UTC
    if not _EARLIEST <= t < _LATEST:
        raise ValueError
    return t


def _row(where: str, row: dict[str, Any]) -> Row:
    """One CSV row, or a ScenarioError naming the row, the column and what it expects."""
    if None in row:  # more fields than the header has
        raise ScenarioError(f"{where}: {len(HEADER) + len(row[None])} fields, expected 3 ({','.join(HEADER)})")
    text = {k: (row.get(k) or "").strip() for k in HEADER}
    try:
        t = _time(text["time"])
    except ValueError:
        raise ScenarioError(f"{where}: column time: {text['time'][:40]!r} is not an ISO 8601 UTC time "
                            f"between {_EARLIEST:%Y} and {_LATEST:%Y} (expected e.g. 2025-08-21T12:25:00Z)") from None
    if not text["target_group"]:
        raise ScenarioError(f"{where}: column target_group: empty (expected a target group name of fleet.json)")
    try:
        value = float(text["healthy_host_count"])
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 <= value <= 1_000_000):
        raise ScenarioError(f"{where}: column healthy_host_count: {text['healthy_host_count'][:40]!r} is not a "
                            "count (expected a number from 0 to 1000000)")
    return t, text["target_group"], value


def read_healthy_hosts_csv(path: Path | str) -> list[Row]:
    """``healthy_hosts.csv`` rows as ``(time, target group name, healthy_host_count)``.

    Raises:
        ScenarioError: a wrong header (the header found is named), a row that does not parse (its line,
        its column and what the column expects), rows spanning more than :data:`MAX_REPLAY_MINUTES`.
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
            reader.fieldnames = found
            for row in reader:
                rows.append(_row(f"{name}:{reader.line_num}", row))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ScenarioError(f"{name}: cannot be read ({exc})") from None
    if rows:
        span = (max(r[0] for r in rows) - min(r[0] for r in rows)) // timedelta(minutes=1)
        if span > MAX_REPLAY_MINUTES:
            raise ScenarioError(f"{name}: rows span {span} minutes; a replay samples at most {MAX_REPLAY_MINUTES}")
    return rows


def _resolve(target_groups: dict[str, dict[str, str]], rows: Iterable[Row]
             ) -> tuple[list[tuple[datetime, Series, float]], list[str]]:
    unknown: set[str] = set()
    out = []
    for t, name, value in rows:
        tg = target_groups.get(name)
        if tg is None:
            unknown.add(name)
            continue
        out.append((t, Series(tg["dimension"], tg["lb_dimension"]), value))
    return out, sorted(unknown)


class MemoryHealthyHostCount:
    """The fast engine's metrics source: ``healthy_hosts.csv`` rows in memory, read like CloudWatch.

    Same method as :class:`~ecs_guardrail.adapters.cloudwatch.HealthyHostCount` (``minima``), same
    answer: the Minimum of each series per whole minute, a minute without a row absent.
    """

    IAM_ACTIONS: ClassVar[dict[str, frozenset[str]]] = {}

    def __init__(self) -> None:
        self._data: dict[tuple[str, str], dict[datetime, float]] = defaultdict(dict)
        self.calls = 0

    @classmethod
    def from_rows(cls, target_groups: dict[str, dict[str, str]], rows: Iterable[Row]
                  ) -> tuple[MemoryHealthyHostCount, list[str]]:
        """A source fed with ``rows``; ``target_groups``: name -> ``{"dimension", "lb_dimension"}``
        (:attr:`EmbeddedAws.target_groups`). Returns it and the unknown target group names (rows skipped)."""
        src = cls()
        resolved, unknown = _resolve(target_groups, rows)
        for t, s, value in resolved:
            src.put(s, t, value)
        return src, unknown

    def put(self, series: Series, t: datetime, value: float) -> None:
        minute = t.astimezone(UTC).replace(second=0, microsecond=0)
        inner = self._data[(series.target_group, series.load_balancer)]
        inner[minute] = min(value, inner.get(minute, value))

    def minima(self, series: list[Series], start: datetime, end: datetime) -> dict[Series, dict[datetime, float]]:
        """``{series: {minute: minimum}}`` for minutes in ``[start, end)``; series without data absent."""
        self.calls += 1
        out: dict[Series, dict[datetime, float]] = {}
        for s in dict.fromkeys(series):
            inner = self._data.get((s.target_group, s.load_balancer))
            if not inner:
                continue
            if end - start <= timedelta(minutes=1):
                found = {start: inner[start]} if start in inner else {}
            else:
                found = {m: v for m, v in inner.items() if start <= m < end}
            if found:
                out[s] = found
        return out


def load_into_cloudwatch(cloudwatch: Any, target_groups: dict[str, dict[str, str]], rows: Iterable[Row]) -> list[str]:
    """PutMetricData the rows into (embedded) CloudWatch as HealthyHostCount, ``AWS/ApplicationELB`` or
    ``AWS/NetworkELB`` by the load balancer's type (``--engine moto``).

    Returns the unknown target group names (rows skipped).
    """
    resolved, unknown = _resolve(target_groups, rows)
    by_namespace: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for t, s, value in resolved:
        by_namespace[namespace_of(s.load_balancer)].append(
            {"MetricName": METRIC, "Timestamp": t, "Value": value, "Unit": "Count", "Dimensions": s.dimensions()})
    for namespace, data in by_namespace.items():
        for i in range(0, len(data), 1000):  # PutMetricData takes at most 1000 metrics a call
            cloudwatch.put_metric_data(Namespace=namespace, MetricData=data[i:i + 1000])
    return unknown
