"""Amazon CloudWatch: ALB ``HealthyHostCount`` minima, many series per GetMetricData call.

API reference, GetMetricData: up to 500 ``MetricDataQueries`` per call and 100,800 datapoints per
answer, paginated by ``NextToken``. Namespace ``AWS/ApplicationELB``, dimensions ``TargetGroup`` +
``LoadBalancer``; statistic ``Minimum`` over 60 s, because an average hides a drop to 0.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar

__all__ = ["HealthyHostCount", "Series", "NAMESPACE", "METRIC"]

NAMESPACE = "AWS/ApplicationELB"
METRIC = "HealthyHostCount"


@dataclass(frozen=True, slots=True)
class Series:
    """One (target group, load balancer) series: dimension values, not ARNs."""

    target_group: str
    load_balancer: str

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

        ``start``/``end`` must be whole minutes. One GetMetricData call per 500 series (plus pages);
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
                    "Metric": {"Namespace": NAMESPACE, "MetricName": METRIC, "Dimensions": s.dimensions()},
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
