"""``container_restarts.csv`` (SCENARIOS.md, "Folder"): Container Insights restart counts in a replay.

Header ``time,cluster,service,restart_count``: the service's container restart count per minute as
Container Insights reports it (``ECS/ContainerInsights`` ``RestartCount``, a running total; a drop is a
task replaced). A cluster with rows here has Container Insights. The rows are put into the engine's
CloudWatch (moto's or the fast engine's in-memory one, with PutMetricData, as Container Insights would
publish them), and the production reader (:func:`ecs_guardrail.handlers.availability.restart_observations`
over :class:`~ecs_guardrail.adapters.cloudwatch.ContainerRestarts`) reads them back each minute on the
replay's clock, every 5 minutes as the sampler does, so both engines answer through the same code.
"""

from __future__ import annotations

import csv
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ecs_guardrail.adapters.cloudwatch import RESTART_METRIC, RESTART_NAMESPACE, ContainerRestarts
from ecs_guardrail.core.errors import ScenarioError

__all__ = ["HEADER", "read_container_restarts_csv", "load_restarts_into_cloudwatch", "RestartRow", "ReplayRestarts"]

HEADER = ("time", "cluster", "service", "restart_count")
_EARLIEST, _LATEST = datetime(2000, 1, 1, tzinfo=UTC), datetime(2200, 1, 1, tzinfo=UTC)
#: rows a replay takes (one a service a minute: a month of 100 services is about 4.3 million)
MAX_ROWS = 5_000_000

RestartRow = tuple[datetime, str, str, float]


def _row(where: str, row: dict[str | None, Any]) -> RestartRow:
    if None in row:
        raise ScenarioError(f"{where}: {len(HEADER) + len(row[None])} fields, expected 4 ({','.join(HEADER)})")
    text = {k: (row.get(k) or "").strip() for k in HEADER}
    try:
        t = datetime.fromisoformat(text["time"].replace("Z", "+00:00"))
        t = t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)
        if not _EARLIEST <= t < _LATEST:
            raise ValueError
    except ValueError:
        raise ScenarioError(f"{where}: column time: {text['time'][:40]!r} is not an ISO 8601 UTC time (expected "
                            "e.g. 2026-03-04T10:05:00Z)") from None
    for col in ("cluster", "service"):
        if not text[col]:
            raise ScenarioError(f"{where}: column {col}: empty (expected a {col} name of fleet.json)")
    try:
        value = float(text["restart_count"])
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 <= value <= 1e9):
        raise ScenarioError(f"{where}: column restart_count: {text['restart_count'][:40]!r} is not a count "
                            "(expected a running total >= 0)")
    return t, text["cluster"], text["service"], value


def read_container_restarts_csv(path: Path | str) -> list[RestartRow]:
    """``container_restarts.csv`` rows as ``(time, cluster, service, restart_count)``, in file order.

    Raises:
        ScenarioError: unreadable, a wrong header (the header found is named), a row that does not parse
            (its line, its column and what the column expects), more than :data:`MAX_ROWS` rows, rows
            spanning more than ``MAX_REPLAY_MINUTES`` (a row stamped 2199 made the replay tick every
            minute up to it: it never finished).
    """
    name = Path(path).name
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.DictReader(fh)
            header = tuple((h or "").strip() for h in (reader.fieldnames or ()))
            if header != HEADER:
                raise ScenarioError(f"{name}: header {','.join(header) or '(none)'!r}, expected {','.join(HEADER)}")
            rows = []
            for row in reader:
                rows.append(_row(f"{name}:{reader.line_num}", row))
                if len(rows) > MAX_ROWS:
                    raise ScenarioError(f"{name}: more than {MAX_ROWS} rows")
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ScenarioError(f"{name}: cannot be read ({exc})") from None
    if rows:  # the replay ticks every minute from the first row to the last: bounded as healthy_hosts.csv
        from datetime import timedelta

        from ecs_guardrail.replay.healthy_hosts import MAX_REPLAY_MINUTES

        span = (max(r[0] for r in rows) - min(r[0] for r in rows)) // timedelta(minutes=1)
        if span > MAX_REPLAY_MINUTES:
            raise ScenarioError(f"{name}: rows span {span} minutes; a replay samples at most {MAX_REPLAY_MINUTES}")
    return rows


def load_restarts_into_cloudwatch(cloudwatch: Any, rows: list[RestartRow], known: set[tuple[str, str]]) -> list[str]:
    """PutMetricData every row of a (cluster, service) in ``known`` (20 a call); returns the names of the
    others ("cluster/service"), which the replay reports and leaves out."""
    unknown = sorted({f"{c}/{s}" for _, c, s, _ in rows if (c, s) not in known})
    data = [{"MetricName": RESTART_METRIC, "Dimensions": ContainerRestarts.dimensions(c, s), "Timestamp": t,
             "Value": v, "Unit": "Count"} for t, c, s, v in rows if (c, s) in known]
    for i in range(0, len(data), 20):
        cloudwatch.put_metric_data(Namespace=RESTART_NAMESPACE, MetricData=data[i:i + 20])
    return unknown


class ReplayRestarts:
    """The restart-count reader on the replay's clock: ``tick(minute)`` returns the observations of that
    minute as the events the watchdog takes (``RestartObservation.to_event``). No CSV: no minutes.

    Raises:
        ScenarioError: a ``container_restarts.csv`` that cannot be read.
    """

    def __init__(self, scenario: Any, aws: Any) -> None:
        from ecs_guardrail.adapters.ecs import EcsFleet

        self.scenario = scenario
        self.first: datetime | None = None
        self.last: datetime | None = None
        self.unknown: list[str] = []
        path = Path(scenario.folder) / "container_restarts.csv"
        rows = read_container_restarts_csv(path) if path.is_file() else []
        if not rows:
            return
        known = {(c["name"], s["name"]) for c in scenario.fleet["clusters"] for s in c.get("services", [])}
        self.unknown = load_restarts_into_cloudwatch(aws.client("cloudwatch"), rows, known)
        minutes = [t.replace(second=0, microsecond=0) for t, c, s, _ in rows if (c, s) in known]
        if minutes:
            self.first, self.last = min(minutes), max(minutes)
        self._fleet = EcsFleet(aws.counter.attach(aws.client("ecs")))
        self._restarts = ContainerRestarts(aws.counter.attach(aws.client("cloudwatch")))

    def tick(self, minute: datetime) -> list[dict[str, Any]]:
        """The observations the sampler hands the watchdog after ``minute`` settled (read at minute + 1 min,
        as the sampler with no lookback): as in production, only every
        :data:`~ecs_guardrail.handlers.availability.RESTART_READ_MINUTES`, for the minutes of that span; the
        CSV's last minute reads the span it ends, so no row is left unread."""
        from datetime import timedelta

        from ecs_guardrail.handlers.availability import (
            RESTART_READ_MINUTES,
            block_start,
            restart_observations,
            restarts_due,
        )

        if restarts_due(minute):
            span = RESTART_READ_MINUTES
        elif self.last is not None and minute >= self.last:
            span = (minute - block_start(minute, RESTART_READ_MINUTES)) // timedelta(minutes=1) + 1
        else:
            return []
        obs = restart_observations(minute + timedelta(minutes=1), fleet=self._fleet, restarts=self._restarts,
                                   lookback_minutes=1, minutes=span)
        return [o.to_event(self.scenario.account, self.scenario.region) for o in obs]
