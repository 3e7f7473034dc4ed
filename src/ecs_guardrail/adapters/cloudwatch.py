"""Amazon CloudWatch: the load balancers' two observers of a target group, many series per GetMetricData call.

API reference, GetMetricData: up to 500 ``MetricDataQueries`` per call and 100,800 datapoints per
answer, paginated by ``NextToken``; priced per metric requested, whatever the number of datapoints
(CloudWatch pricing), so reading many minutes of a series in one query costs what one minute costs.

- the health checker's view: ``HealthyHostCount``, namespace ``AWS/ApplicationELB`` (load balancer
  dimension ``app/NAME/ID``) or ``AWS/NetworkELB`` (``net/NAME/ID``), dimensions ``TargetGroup`` +
  ``LoadBalancer``, statistic ``Minimum`` over 60 s, because an average hides a drop to 0;
- the clients' view (Application Load Balancers only; an NLB has no request metrics):
  ``RequestCount``, ``HTTPCode_Target_2XX_Count``, ``HTTPCode_Target_5XX_Count`` (dimensions
  ``TargetGroup`` + ``LoadBalancer``) and ``HTTPCode_ELB_5XX_Count`` (dimension ``LoadBalancer`` only:
  the load balancer's own 5xx are not published per target group), statistic ``Sum`` over 60 s.
  ALB publishes them only when the value is nonzero ("Reporting criteria: there is a nonzero
  value", ALB CloudWatch metrics), so a minute without a datapoint is 0 requests, never missing data.
"""

from __future__ import annotations

import operator
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from itertools import repeat
from typing import Any

from msgspec import Struct
from msgspec.structs import replace

from ecs_guardrail.core.entitlement import ServingSample
from ecs_guardrail.core.permissions import permissions

__all__ = ["HealthyHostCount", "Series", "Reading", "NAMESPACE", "NLB_NAMESPACE", "METRIC", "REQUEST_METRICS",
           "ELB_5XX", "namespace_for", "queries_for", "ContainerRestarts", "RESTART_NAMESPACE", "RESTART_METRIC"]

NAMESPACE = "AWS/ApplicationELB"
NLB_NAMESPACE = "AWS/NetworkELB"
METRIC = "HealthyHostCount"
#: the clients' view per (target group, load balancer) series: field of :class:`Reading` -> metric name
REQUEST_METRICS = {"request_count": "RequestCount", "target_2xx": "HTTPCode_Target_2XX_Count",
                   "target_5xx": "HTTPCode_Target_5XX_Count"}
#: the load balancer's own 5xx, per load balancer (its only dimension with a target group's traffic)
ELB_5XX = "HTTPCode_ELB_5XX_Count"


def namespace_for(load_balancer: str) -> str:
    """``AWS/NetworkELB`` for a Network Load Balancer dimension (``net/NAME/ID``), else ``AWS/ApplicationELB``."""
    return NLB_NAMESPACE if load_balancer.startswith("net/") else NAMESPACE


#: what :meth:`HealthyHostCount._run` reads of a datapoint's stamp: at a whole minute, in UTC (``UTC`` itself)
_ZONE = operator.attrgetter("tzinfo")
_SECOND_MICRO = operator.attrgetter("second", "microsecond")
_WHOLE_MINUTE = frozenset(((0, 0),))


def _minute(t: datetime) -> datetime:
    return t.astimezone(UTC).replace(second=0, microsecond=0)


class Series(Struct, frozen=True):
    """One (target group, load balancer) series: dimension values, not ARNs."""

    target_group: str
    load_balancer: str

    @property
    def namespace(self) -> str:
        """The metric's namespace, from the load balancer dimension (see :func:`namespace_for`)."""
        return namespace_for(self.load_balancer)

    @property
    def has_request_metrics(self) -> bool:
        """True behind an Application Load Balancer (an NLB publishes no request metrics)."""
        return self.namespace == NAMESPACE

    def dimensions(self) -> list[dict[str, str]]:
        # always this order: moto compares dimension lists in the order given (its sort key is broken)
        return [{"Name": "TargetGroup", "Value": self.target_group},
                {"Name": "LoadBalancer", "Value": self.load_balancer}]


class Reading(Struct, frozen=True):
    """One series in one minute: ``healthy_host_count`` (Minimum; ``None``: no datapoint) and, where
    read, the clients' view (Sum; ``None`` with ``request_metrics`` True is 0: ALB publishes only nonzero
    values). ``elb_5xx`` is the series' load balancer's own 5xx of that minute."""

    healthy_host_count: float | None = None
    request_count: float | None = None
    target_2xx: float | None = None
    target_5xx: float | None = None
    elb_5xx: float | None = None
    request_metrics: bool = False


def queries_for(series: Iterable[Series], requests: bool) -> list[tuple[Any, str, str, list[dict[str, str]], str]]:
    """The metrics one read asks for: ``(key, namespace, metric, dimensions, statistic)``.

    Per series ``HealthyHostCount`` Minimum; with ``requests``, per ALB series the three
    :data:`REQUEST_METRICS` (Sum) and per distinct ALB load balancer ``HTTPCode_ELB_5XX_Count`` (Sum).
    ``key``: ``(series, field)`` or ``(load balancer dimension, "elb_5xx")``. The length is the metrics
    requested, what GetMetricData charges for.
    """
    out: list[tuple[Any, str, str, list[dict[str, str]], str]] = []
    lbs: dict[str, None] = {}
    for s in dict.fromkeys(series):
        out.append(((s, "healthy_host_count"), s.namespace, METRIC, s.dimensions(), "Minimum"))
        if requests and s.has_request_metrics:
            out += [((s, name), s.namespace, metric, s.dimensions(), "Sum") for name, metric in REQUEST_METRICS.items()]
            lbs[s.load_balancer] = None
    out += [((lb, "elb_5xx"), NAMESPACE, ELB_5XX, [{"Name": "LoadBalancer", "Value": lb}], "Sum") for lb in lbs]
    return out


class HealthyHostCount:
    """Reads both observers of target groups through a CloudWatch client passed in (the class keeps its
    historical name: the health checker's view came first)."""

    MAX_QUERIES = 500
    PERIOD_S = 60

    def __init__(self, client: Any) -> None:
        self._cw = client
        #: metrics requested and calls made so far (the cost model of ``make bench`` reads them)
        self.metrics_requested = 0
        self.calls = 0

    @permissions(any=["cloudwatch:GetMetricData"])
    def _run(self, queries: list[tuple[Any, str, str, list[dict[str, str]], str]], start: datetime,
             end: datetime) -> dict[Any, dict[datetime, float]]:
        """``{key: {minute: value}}`` for minutes in ``[start, end)``, 500 queries a call, plus pages."""
        out: dict[Any, dict[datetime, float]] = defaultdict(dict)
        for i in range(0, len(queries), self.MAX_QUERIES):
            chunk = queries[i:i + self.MAX_QUERIES]
            ids = {f"q{n}": q for n, q in enumerate(chunk)}
            kwargs: dict[str, Any] = {"MetricDataQueries": [{
                "Id": qid,
                "MetricStat": {"Metric": {"Namespace": ns, "MetricName": metric, "Dimensions": dims},
                               "Period": self.PERIOD_S, "Stat": stat},
                "ReturnData": True,
            } for qid, (_key, ns, metric, dims, stat) in ids.items()], "StartTime": start, "EndTime": end,
                "ScanBy": "TimestampAscending"}
            self.metrics_requested += len(chunk)
            while True:
                self.calls += 1
                resp = self._cw.get_metric_data(**kwargs)
                for r in resp.get("MetricDataResults", []):
                    q = ids.get(r["Id"])
                    if q is None:
                        continue
                    key, stat = q[0], q[4]
                    points = out[key]
                    stamps, values = r.get("Timestamps", []), r.get("Values", [])
                    if not points and all(map(operator.is_, map(_ZONE, stamps), repeat(UTC))) \
                            and set(map(_SECOND_MICRO, stamps)) <= _WHOLE_MINUTE:
                        # the usual answer: a series' first page, each datapoint at its whole UTC minute
                        # (a 60 s period's stamp), no two at one: taken as it is, in C
                        points.update(zip(stamps, values, strict=False))
                        if len(points) == min(len(stamps), len(values)):
                            continue
                        points.clear()  # two datapoints at one minute: combined below
                    for ts, v in zip(stamps, values, strict=False):
                        # a datapoint of a 60 s period is stamped at its whole UTC minute already
                        minute = ts if ts.tzinfo is UTC and not ts.second and not ts.microsecond else _minute(ts)
                        cur = points.get(minute)
                        points[minute] = v if cur is None else (min(v, cur) if stat == "Minimum" else cur + v)
                token = resp.get("NextToken")
                if not token:
                    break
                kwargs["NextToken"] = token
        return dict(out)

    def minima(self, series: list[Series], start: datetime, end: datetime) -> dict[Series, dict[datetime, float]]:
        """``{series: {minute start (UTC): minimum healthy hosts}}`` for minutes in ``[start, end)``.

        ``start``/``end`` must be whole minutes. Each series is read in its own namespace (ALB or NLB).
        One GetMetricData call per 500 series (plus pages);
        a minute without a datapoint is absent from the inner dict. Raises botocore errors as they come
        (throttling is retried by the client's adaptive mode).
        """
        got = self._run(queries_for(series, requests=False), start, end)
        return {key[0]: points for key, points in got.items() if points}

    def read(self, series: list[Series], start: datetime, end: datetime, *, requests: bool = True
             ) -> dict[Series, dict[datetime, Reading]]:
        """Both observers of every series for the whole minutes in ``[start, end)``, in as few calls as
        the 500-query limit allows (:func:`queries_for`: 1 metric per NLB series, 4 per ALB series plus
        1 per ALB load balancer with ``requests``).

        Returns ``{series: {minute: Reading}}``; a minute is present when any of its metrics has a
        datapoint (or, for an ALB series read with ``requests``, always: no request datapoint is 0
        requests). Raises botocore errors as :meth:`minima`.
        """
        got = self._run(queries_for(series, requests), start, end)
        out: dict[Series, dict[datetime, Reading]] = {}
        minutes = []
        m = _minute(start)
        while m < end:
            minutes.append(m)
            m += timedelta(seconds=self.PERIOD_S)
        for s in dict.fromkeys(series):
            clients = requests and s.has_request_metrics
            hh = got.get((s, "healthy_host_count"), {})
            if not clients:  # healthy hosts only: the minutes with a datapoint
                inner_hh = {minute: Reading(hh[minute]) for minute in minutes if minute in hh}
                if inner_hh:
                    out[s] = inner_hh
                continue
            fields = {name: got.get((s, name), {}) for name in REQUEST_METRICS} if clients else {}
            elb = got.get((s.load_balancer, "elb_5xx"), {}) if clients else {}
            inner: dict[datetime, Reading] = {}
            for minute in minutes:
                if not clients and minute not in hh:
                    continue
                sums = {n: fields[n].get(minute) for n in REQUEST_METRICS} if clients else {}
                inner[minute] = Reading(hh.get(minute), sums.get("request_count"), sums.get("target_2xx"),
                                        sums.get("target_5xx"), elb.get(minute) if clients else None, clients)
            if inner:
                out[s] = inner
        return out

    def newest_healthy(self, series: list[Series], at: datetime, max_age_minutes: int = 3,
                       *, requests: bool = True) -> list[ServingSample]:
        """Decision-time serving evidence: the newest minute per target group, both observers.

        Reads GetMetricData (one call per 500 queries, :meth:`read`) for the minutes ``M`` with
        ``at - max_age_minutes <= M <= at`` (``M`` = start of the minute, UTC). Returns one
        :class:`ServingSample` per target group that has a datapoint there (its newest minute with a
        ``HealthyHostCount`` datapoint or a request; a target group behind several load balancers takes
        the highest of their minima and the sum of their requests at that minute, since any of them
        serving means clients are served), sorted by target group; a target group without any datapoint
        is absent (no datapoint is no evidence, never "up"). ``target_group`` is the dimension value
        (``targetgroup/NAME/ID``).

        Raises:
            botocore.exceptions.ClientError: as :meth:`minima`.
        """
        floor_at = _minute(at)
        start = _minute(at - timedelta(minutes=max_age_minutes))
        if start < at - timedelta(minutes=max_age_minutes):
            start += timedelta(minutes=1)  # the oldest minute must not be older than max_age
        end = floor_at + timedelta(seconds=self.PERIOD_S)
        per_tg: dict[str, dict[datetime, list[Reading]]] = defaultdict(lambda: defaultdict(list))
        for s, points in self.read(series, start, end, requests=requests).items():
            for minute, r in points.items():
                if start <= minute <= floor_at and (r.healthy_host_count is not None or r.request_count
                                                    or r.elb_5xx):
                    per_tg[s.target_group][minute].append(r)
        out = []
        for tg, minutes in sorted(per_tg.items()):
            minute = max(minutes)
            rs = minutes[minute]
            hosts = [r.healthy_host_count for r in rs if r.healthy_host_count is not None]
            sample = ServingSample(tg, minute, max(hosts) if hosts else None)
            if any(r.request_metrics for r in rs):
                def total(name: str, rs: list[Reading] = rs) -> float:
                    return float(sum(getattr(r, name) or 0.0 for r in rs))
                sample = replace(sample, request_count=total("request_count"), target_2xx=total("target_2xx"),
                                 target_5xx=total("target_5xx"), elb_5xx=total("elb_5xx"))
            out.append(sample)
        return out


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

    MAX_QUERIES = 500
    PERIOD_S = 60

    def __init__(self, client: Any) -> None:
        self._cw = client

    @staticmethod
    def dimensions(cluster: str, service: str) -> list[dict[str, str]]:
        """The series' dimensions, in this order (moto compares dimension lists in the order given)."""
        return [{"Name": "ClusterName", "Value": cluster}, {"Name": "ServiceName", "Value": service}]

    @permissions(any=["cloudwatch:GetMetricData"])
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
                        # a datapoint of a 60 s period is stamped at its whole UTC minute already
                        minute = ts if ts.tzinfo is UTC and not ts.second and not ts.microsecond else _minute(ts)
                        out[s][minute] = max(v, out[s].get(minute, v))
                token = resp.get("NextToken")
                if not token:
                    break
                kwargs["NextToken"] = token
        return dict(out)
