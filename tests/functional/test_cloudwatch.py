"""HealthyHostCount on moto: ALB and NLB namespaces, and the decision-time newest sample per target group."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from ecs_guardrail.adapters.cloudwatch import NAMESPACE, NLB_NAMESPACE, HealthyHostCount, Series, namespace_for
from ecs_guardrail.core.entitlement import EntitlementFacts, ServingSample, entitlement

AT = datetime(2025, 8, 21, 9, 9, 30, tzinfo=UTC)
M = AT.replace(second=0)  # 09:09
ALB = Series("targetgroup/front/0123456789abcdef", "app/web/1111111111111111")
NLB = Series("targetgroup/tcp/fedcba9876543210", "net/edge/2222222222222222")
QUIET = Series("targetgroup/quiet/aaaaaaaaaaaaaaaa", "app/web/1111111111111111")


@pytest.fixture
def cw() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("cloudwatch", region_name="eu-west-1")


def _put(cw: Any, s: Series, minute: datetime, value: float) -> None:
    cw.put_metric_data(Namespace=s.namespace, MetricData=[{
        "MetricName": "HealthyHostCount", "Timestamp": minute, "Value": value, "Unit": "Count",
        "Dimensions": s.dimensions()}])


def test_namespace_follows_the_load_balancer_dimension() -> None:
    assert namespace_for("net/edge/2222") == NLB_NAMESPACE == NLB.namespace
    assert namespace_for("app/web/1111") == NAMESPACE == ALB.namespace


def test_minima_reads_nlb_series_in_their_namespace(cw: Any) -> None:
    calls: list[dict] = []
    cw.meta.events.register("before-parameter-build.cloudwatch.GetMetricData",
                            lambda params, **_: calls.append(dict(params)))
    _put(cw, NLB, M - timedelta(minutes=2), 3)
    _put(cw, ALB, M - timedelta(minutes=2), 1)
    out = HealthyHostCount(cw).minima([ALB, NLB], M - timedelta(minutes=5), M)
    assert out[NLB] == {M - timedelta(minutes=2): 3.0}
    assert out[ALB] == {M - timedelta(minutes=2): 1.0}
    # one call; each query in its own namespace (moto ignores the namespace once dimensions are given,
    # so the request is what proves it)
    [call] = calls
    assert [q["MetricStat"]["Metric"]["Namespace"] for q in call["MetricDataQueries"]] == [NAMESPACE, NLB_NAMESPACE]
    assert {q["MetricStat"]["Stat"] for q in call["MetricDataQueries"]} == {"Minimum"}


def test_newest_healthy_newest_datapoint_per_target_group(cw: Any) -> None:
    _put(cw, ALB, M - timedelta(minutes=2), 2)
    _put(cw, ALB, M - timedelta(minutes=1), 0)  # newest says nobody is served
    _put(cw, NLB, M - timedelta(minutes=3), 4)  # 09:06 at 09:09:30: older than 3 minutes
    _put(cw, NLB, M - timedelta(minutes=2), 1)
    _put(cw, QUIET, M - timedelta(minutes=10), 5)  # far too old: absent
    samples = HealthyHostCount(cw).newest_healthy([ALB, NLB, QUIET], AT)
    assert samples == [
        # an ALB also carries the clients' view: no request published that minute is 0 requests
        ServingSample(ALB.target_group, M - timedelta(minutes=1), 0.0, 0.0, 0.0, 0.0, 0.0),
        ServingSample(NLB.target_group, M - timedelta(minutes=2), 1.0),  # an NLB: healthy hosts only
    ]


def test_newest_healthy_minimum_of_the_minute(cw: Any) -> None:
    for v in (3, 1, 2):
        _put(cw, ALB, M - timedelta(minutes=1, seconds=-10 * v), v)
    [s] = HealthyHostCount(cw).newest_healthy([ALB], AT)
    assert s.healthy_host_count == 1.0 and s.minute == M - timedelta(minutes=1)


def test_newest_healthy_asks_for_the_max_age_window(cw: Any) -> None:
    calls: list[dict] = []
    cw.meta.events.register("before-parameter-build.cloudwatch.GetMetricData",
                            lambda params, **_: calls.append(dict(params)))
    HealthyHostCount(cw).newest_healthy([ALB], AT)
    [call] = calls
    # minutes 09:07, 09:08, 09:09: none older than 3 minutes at 09:09:30
    assert call["StartTime"] == datetime(2025, 8, 21, 9, 7, tzinfo=UTC)
    assert call["EndTime"] == datetime(2025, 8, 21, 9, 10, tzinfo=UTC)
    assert call["MetricDataQueries"][0]["MetricStat"]["Period"] == 60


def test_newest_healthy_no_datapoint_no_sample(cw: Any) -> None:
    assert HealthyHostCount(cw).newest_healthy([ALB, NLB], AT) == []


def test_newest_healthy_feeds_still_serving(cw: Any) -> None:
    _put(cw, NLB, M - timedelta(minutes=1), 1)
    samples = HealthyHostCount(cw).newest_healthy([NLB], AT)
    v = entitlement("crash_loop", EntitlementFacts("prod", "tcp", serving=tuple(samples)), AT)
    assert v.reason == "still_serving" and v.evidence["target_group"] == NLB.target_group
    assert v.evidence["minute"] == "2025-08-21T09:08:00Z"


def test_newest_healthy_reads_the_clients_view_of_an_alb_in_the_same_call(cw: Any) -> None:
    dims = ALB.dimensions()
    cw.put_metric_data(Namespace=NAMESPACE, MetricData=[
        {"MetricName": "HealthyHostCount", "Timestamp": M - timedelta(minutes=1), "Value": 0, "Dimensions": dims},
        {"MetricName": "RequestCount", "Timestamp": M - timedelta(minutes=1), "Value": 300, "Dimensions": dims},
        {"MetricName": "HTTPCode_Target_2XX_Count", "Timestamp": M - timedelta(minutes=1), "Value": 299,
         "Dimensions": dims},
        {"MetricName": "HTTPCode_ELB_5XX_Count", "Timestamp": M - timedelta(minutes=1), "Value": 1,
         "Dimensions": [{"Name": "LoadBalancer", "Value": ALB.load_balancer}]}])
    source = HealthyHostCount(cw)
    [s] = source.newest_healthy([ALB], AT)
    assert (s.healthy_host_count, s.request_count, s.target_2xx, s.target_5xx, s.elb_5xx) == (0.0, 300, 299, 0, 1)
    assert s.answering(0.05)  # the checker says 0, the clients say served: still_serving's evidence
    assert source.calls == 1 and source.metrics_requested == 5
