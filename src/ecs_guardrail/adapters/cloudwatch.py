"""Amazon CloudWatch: ALB and NLB ``HealthyHostCount`` minima, many series per GetMetricData call.

API reference, GetMetricData: up to 500 ``MetricDataQueries`` per call and 100,800 datapoints per
answer, paginated by ``NextToken``. Namespace ``AWS/ApplicationELB`` (load balancer dimension
``app/NAME/ID``) or ``AWS/NetworkELB`` (``net/NAME/ID``), dimensions ``TargetGroup`` + ``LoadBalancer``;
statistic ``Minimum`` over 60 s, because an average hides a drop to 0.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

from ecs_guardrail.core.entitlement import ServingSample

__all__ = ["HealthyHostCount", "Series", "NAMESPACE", "NLB_NAMESPACE", "METRIC", "namespace_for", "ContainerRestarts",
           "RESTART_NAMESPACE", "RESTART_METRIC"]

NAMESPACE = "AWS/ApplicationELB"
NLB_NAMESPACE = "AWS/NetworkELB"
METRIC = "HealthyHostCount"


def namespace_for(load_balancer: str) -> str:
    """``AWS/NetworkELB`` for a Network Load Balancer dimension (``net/NAME/ID``), else ``AWS/ApplicationELB``."""
    return NLB_NAMESPACE if load_balancer.startswith("net/") else NAMESPACE


def _minute(t: datetime) -> datetime:
    return t.astimezone(UTC).replace(second=0, microsecond=0)


@dataclass(frozen=True, slots=True)
class Series:
    """One (target group, load balancer) series: dimension values, not ARNs."""

    target_group: str
    load_balancer: str

    @property
    def namespace(self) -> str:
        """The metric's namespace, from the load balancer dimension (see :func:`namespace_for`)."""
        return namespace_for(self.load_balancer)

    def dimensions(self) -> list[dict[str, str]]:
        # always this order: moto compares dimension lists in the order given (its sort key is broken)
        return [{"Name": "TargetGroup", "Value": self.target_group},
                {"Name": "LoadBalancer", "Value": self.load_balancer}]


class HealthyHostCount:
    """Reads HealthyHostCount minima through a CloudWatch client passed in."""

    IAM_ACTIONS: ClassVar[dict[str, frozenset[str]]] = {"any": frozenset({"cloudwatch:GetMetricData"})}
    MAX_QUERIES = 500
    PERIOD_S = 60

    def __init__(self, client: Any) -> None:
        self._cw = client

    def minima(self, series: list[Series], start: datetime, end: datetime) -> dict[Series, dict[datetime, float]]:
        """``{series: {minute start (UTC): minimum healthy hosts}}`` for minutes in ``[start, end)``.

        ``start``/``end`` must be whole minutes. Each series is read in its own namespace (ALB or NLB).
        One GetMetricData call per 500 series (plus pages);
        a minute without a datapoint is absent from the inner dict. Raises botocore errors as they come
        (throttling is retried by the client's adaptive mode).
        """
        out: dict[Series, dict[datetime, float]] = defaultdict(dict)
        unique = list(dict.fromkeys(series))
        for i in range(0, len(unique), self.MAX_QUERIES):
            chunk = unique[i:i + self.MAX_QUERIES]
            ids = {f"s{n}": s for n, s in enumerate(chunk)}
            queries = [{
                "Id": qid,
                "MetricStat": {
                    "Metric": {"Namespace": s.namespace, "MetricName": METRIC, "Dimensions": s.dimensions()},
                    "Period": self.PERIOD_S,
                    "Stat": "Minimum",
                },
                "ReturnData": True,
            } for qid, s in ids.items()]
            kwargs: dict[str, Any] = {"MetricDataQueries": queries, "StartTime": start, "EndTime": end,
                                      "ScanBy": "TimestampAscending"}
            while True:
                resp = self._cw.get_metric_data(**kwargs)
                for r in resp.get("MetricDataResults", []):
                    s = ids.get(r["Id"])
                    if s is None:
                        continue
                    for ts, v in zip(r.get("Timestamps", []), r.get("Values", []), strict=False):
                        minute = ts.astimezone(UTC).replace(second=0, microsecond=0)
                        out[s][minute] = min(v, out[s].get(minute, v))
                token = resp.get("NextToken")
                if not token:
                    break
                kwargs["NextToken"] = token
        return dict(out)

    def newest_healthy(self, series: list[Series], at: datetime, max_age_minutes: int = 3) -> list[ServingSample]:
        """Decision-time serving evidence: the newest ``HealthyHostCount`` minimum per target group.

        Reads GetMetricData (Minimum, period 60 s) for the minutes ``M`` with
        ``at - max_age_minutes <= M <= at`` (``M`` = start of the minute, UTC), one call per 500 series.
        Returns one :class:`ServingSample` per target group that has a datapoint there (its newest minute;
        a target group behind several load balancers takes the highest of their minima at that minute,
        since any of them serving means clients are served), sorted by target group; a target group
        without a datapoint is absent (no datapoint is no evidence, never "up"). ``target_group`` is the
        dimension value (``targetgroup/NAME/ID``).

        Raises:
            botocore.exceptions.ClientError: as :meth:`minima`.
        """
        floor_at = _minute(at)
        start = _minute(at - timedelta(minutes=max_age_minutes))
        if start < at - timedelta(minutes=max_age_minutes):
            start += timedelta(minutes=1)  # the oldest minute must not be older than max_age
        end = floor_at + timedelta(seconds=self.PERIOD_S)
        newest: dict[str, tuple[datetime, float]] = {}
        for s, points in self.minima(series, start, end).items():
            for minute, value in points.items():
                if not (start <= minute <= floor_at):
                    continue
                cur = newest.get(s.target_group)
                if cur is None or minute > cur[0] or (minute == cur[0] and value > cur[1]):
                    newest[s.target_group] = (minute, value)
        return [ServingSample(tg, minute, value) for tg, (minute, value) in sorted(newest.items())]


#: Container Insights (ECS) publishes each service's container restart count here (CloudWatch User Guide,
#: "Amazon ECS Container Insights metrics": ``RestartCount``, dimensions ``ClusterName`` + ``ServiceName``;
#: a running total over the service's tasks, only where a restart policy is enabled)
RESTART_NAMESPACE = "ECS/ContainerInsights"
RESTART_METRIC = "RestartCount"


class ContainerRestarts:
    """Reads the services' container restart totals (``ECS/ContainerInsights`` ``RestartCount``, Maximum
    per minute) through a CloudWatch client passed in: the restart-policy loop's only signal
    (ARCHITECTURE.md, "Restart-policy loops"). Kept apart from :class:`HealthyHostCount` so the two
    readers change independently; both are GetMetricData, the one IAM action."""

    IAM_ACTIONS: ClassVar[dict[str, frozenset[str]]] = {"any": frozenset({"cloudwatch:GetMetricData"})}
    MAX_QUERIES = 500
    PERIOD_S = 60

    def __init__(self, client: Any) -> None:
        self._cw = client

    @staticmethod
    def dimensions(cluster: str, service: str) -> list[dict[str, str]]:
        """The series' dimensions, in this order (moto compares dimension lists in the order given)."""
        return [{"Name": "ClusterName", "Value": cluster}, {"Name": "ServiceName", "Value": service}]

    def totals(self, services: list[tuple[str, str]], start: datetime,
               end: datetime) -> dict[tuple[str, str], dict[datetime, float]]:
        """``{(cluster, service): {minute start (UTC): restart total}}`` for minutes in ``[start, end)``
        (whole minutes), one GetMetricData call per 500 services (plus pages). A service without a
        datapoint (no Container Insights, no restart policy, or nothing published yet) is absent.

        Raises:
            botocore.exceptions.ClientError: as CloudWatch answers (throttling is retried by the client).
        """
        out: dict[tuple[str, str], dict[datetime, float]] = defaultdict(dict)
        unique = list(dict.fromkeys(services))
        for i in range(0, len(unique), self.MAX_QUERIES):
            ids = {f"r{n}": s for n, s in enumerate(unique[i:i + self.MAX_QUERIES])}
            queries = [{"Id": qid, "ReturnData": True, "MetricStat": {
                "Metric": {"Namespace": RESTART_NAMESPACE, "MetricName": RESTART_METRIC,
                           "Dimensions": self.dimensions(*s)},
                "Period": self.PERIOD_S, "Stat": "Maximum"}} for qid, s in ids.items()]
            kwargs: dict[str, Any] = {"MetricDataQueries": queries, "StartTime": start, "EndTime": end,
                                      "ScanBy": "TimestampAscending"}
            while True:
                resp = self._cw.get_metric_data(**kwargs)
                for r in resp.get("MetricDataResults", []):
                    s = ids.get(r["Id"])
                    if s is None:
                        continue
                    for ts, v in zip(r.get("Timestamps", []), r.get("Values", []), strict=False):
                        minute = _minute(ts)
                        out[s][minute] = max(v, out[s].get(minute, v))
                token = resp.get("NextToken")
                if not token:
                    break
                kwargs["NextToken"] = token
        return dict(out)
