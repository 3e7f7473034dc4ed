"""The availability sampler on moto: batching, idempotence, no_data, "now" from the schedule."""

from __future__ import annotations

import contextlib
import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ecs_guardrail.adapters.cloudwatch import NAMESPACE, Series
from ecs_guardrail.adapters.history import HistoryStore
from ecs_guardrail.core.availability import MinuteState
from ecs_guardrail.core.timeline import availability_from_items
from ecs_guardrail.handlers import availability, runtime
from ecs_guardrail.handlers.runtime import LambdaContextStub
from ecs_guardrail.local import TABLE, EmbeddedAws, load_scenario

T0 = datetime(2025, 8, 21, 15, 0, tzinfo=UTC)
N_SERVICES = 14  # two DescribeServices pages, one GetMetricData call


def _fleet(tmp_path: Path) -> Path:
    services = [{"name": f"svc{i:02d}", "desiredCount": 2, "targetGroups": [f"tg{i:02d}"]} for i in range(N_SERVICES)]
    services[0]["targetGroups"].append("tg00-admin")  # a service with two target groups
    services.append({"name": "worker", "desiredCount": 1})  # no target group: no figure, not sampled
    (tmp_path / "fleet.json").write_text(json.dumps({
        "account": "111122223333", "region": "eu-west-1",
        "clusters": [{"name": "prod", "services": services}, {"name": "empty", "services": []}]}))
    (tmp_path / "events.jsonl").write_text("")
    return tmp_path


@pytest.fixture
def aws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    scenario = load_scenario(_fleet(tmp_path))
    monkeypatch.setenv("HISTORY_TABLE", TABLE)
    monkeypatch.setenv("SAMPLE_LOOKBACK_MINUTES", "5")
    with EmbeddedAws(scenario) as embedded:
        # the Lambda path's clients: this embedded AWS's, with every call counted
        runtime.set_client_factory(lambda service: embedded.counter.attach(embedded.client(service)))
        try:
            yield embedded
        finally:
            runtime.set_client_factory(None)


def _put(aws: EmbeddedAws, name: str, minute: datetime, value: float) -> None:
    tg = aws.target_groups[name]
    aws.client("cloudwatch").put_metric_data(Namespace=NAMESPACE, MetricData=[{
        "MetricName": "HealthyHostCount", "Timestamp": minute, "Value": value, "Unit": "Count",
        "Dimensions": Series(tg["dimension"], tg["lb_dimension"]).dimensions()}])


def _run(minute: datetime) -> dict:
    """Invoke the handler as the schedule for ``minute`` would (it fires 5 minutes later)."""
    event = {"source": "aws.events", "detail-type": "Scheduled Event",
             "time": (minute + timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")}
    with contextlib.redirect_stdout(io.StringIO()):
        return availability.handler(event, LambdaContextStub())


def _items(aws: EmbeddedAws) -> list[dict]:
    store = HistoryStore(aws.client("dynamodb"), TABLE)
    return list(store.timeline_items("prod", T0 - timedelta(hours=1), T0 + timedelta(hours=1)))


def test_one_get_metric_data_call_for_all_target_groups(aws: EmbeddedAws) -> None:
    for name in aws.target_groups:
        _put(aws, name, T0, 2)
    aws.counter.calls.clear()
    out = _run(T0)
    calls = aws.counter.calls
    assert out["target_groups"] == N_SERVICES + 1 and out["written"] == N_SERVICES + 1 and out["no_data"] == 0
    # one for every target group's healthy hosts, one for every service's container restarts (issue 19:
    # its own reader, to be folded into the first call once issue 20's request metrics land there)
    assert calls[("cloudwatch", "GetMetricData")] == 2
    assert calls[("elbv2", "DescribeTargetGroups")] == 1
    assert calls[("ecs", "ListClusters")] == 1  # listed once, shared by both readers
    assert calls[("ecs", "ListServices")] == 2  # one per cluster
    assert ("events", "PutEvents") not in calls  # no restart, nothing sent
    assert calls[("ecs", "DescribeServices")] == 2  # 15 services, 10 a call
    assert calls[("dynamodb", "PutItem")] == N_SERVICES + 1  # one sample per target group
    samples = [i for i in _items(aws) if i["type"] == "healthy_hosts"]
    assert {i["time"] for i in samples} == {"2025-08-21T15:00:00Z"}  # "now" came from the schedule
    assert all(i["healthy_host_count"] == 2 and not i["no_data"] for i in samples)
    assert "worker" not in {i["service"] for i in samples}


def test_calls_stay_within_the_declared_iam_actions(aws: EmbeddedAws) -> None:
    aws.counter.calls.clear()
    _run(T0)
    prefixes = {"cloudwatch": "cloudwatch", "elbv2": "elasticloadbalancing", "ecs": "ecs",
                "dynamodb": "dynamodb", "events": "events"}
    made = {f"{prefixes[svc]}:{op}" for svc, op in aws.counter.calls}
    declared = {a for kinds in availability.USES.values() for actions in kinds.values() for a in actions}
    assert made <= declared
    assert declared == {"dynamodb:PutItem", "ecs:DescribeServices", "ecs:ListClusters", "ecs:ListServices",
                        "elasticloadbalancing:DescribeTargetGroups", "cloudwatch:GetMetricData", "events:PutEvents"}


def test_container_restarts_go_to_the_watchdog_through_the_bus(aws: EmbeddedAws) -> None:
    """A restart-policy loop emits no ECS event: the sampler reads Container Insights' RestartCount for the
    minute and the one before and puts one Container Restarts event per service that restarted."""
    from ecs_guardrail.adapters.cloudwatch import RESTART_NAMESPACE, ContainerRestarts
    from ecs_guardrail.core.restarts import RestartObservation
    from ecs_guardrail.routing import PATTERNS, matches

    service = "svc01"
    for minute, total in ((T0 - timedelta(minutes=1), 3), (T0, 5)):
        aws.client("cloudwatch").put_metric_data(Namespace=RESTART_NAMESPACE, MetricData=[{
            "MetricName": "RestartCount", "Timestamp": minute, "Value": total, "Unit": "Count",
            "Dimensions": ContainerRestarts.dimensions("prod", service)}])
    sent: list[dict] = []
    events = aws.client("events")
    events.meta.events.register("provide-client-params.*.PutEvents",
                                lambda params, **_: sent.extend(params["Entries"]))
    runtime.set_client_factory(lambda name: events if name == "events" else aws.counter.attach(aws.client(name)))
    out = _run(T0)
    assert out["restart_observations"] == 1 and len(sent) == 1
    entry = sent[0]
    raw = {"source": entry["Source"], "detail-type": entry["DetailType"], "detail": json.loads(entry["Detail"]),
           "resources": entry["Resources"]}
    obs = RestartObservation.from_event(raw)
    assert (obs.cluster, obs.service, obs.minute, obs.restarts, obs.total) == ("prod", service, T0, 2, 5.0)
    assert matches(PATTERNS["watchdog"], raw) and not matches(PATTERNS["recorder"], raw)


def test_rerunning_a_minute_writes_nothing_new(aws: EmbeddedAws) -> None:
    for name in aws.target_groups:
        _put(aws, name, T0, 1)
    first = _run(T0)
    before = _items(aws)
    _put(aws, "tg01", T0, 0)  # even if CloudWatch changed its mind, the minute stays as first written
    again = _run(T0)
    assert first["written"] == N_SERVICES + 1
    assert again["written"] == 0
    assert _items(aws) == before


def test_missing_datapoints_during_an_outage_are_no_data_and_unavailable(aws: EmbeddedAws) -> None:
    minutes = [T0 + timedelta(minutes=i) for i in range(6)]
    for m in minutes:
        for name in aws.target_groups:
            if name == "tg03" and m in minutes[2:5]:
                continue  # no registered targets: the ALB publishes nothing
            _put(aws, name, m, 2)
    for m in minutes:
        _run(m)
    items = _items(aws)
    gaps = [i for i in items if i["type"] == "healthy_hosts" and i["target_group"] == "tg03" and i["no_data"]]
    assert [i["time"] for i in gaps] == ["2025-08-21T15:02:00Z", "2025-08-21T15:03:00Z", "2025-08-21T15:04:00Z"]
    report = availability_from_items(items, minutes[0], minutes[-1])
    svc03 = next(s for s in report.services if s.service == "svc03")
    assert svc03.minutes[MinuteState.NO_DATA] == 3 and svc03.minutes[MinuteState.UP] == 3
    assert report.unavailable_service_minutes == 3
    assert report.by_cause["no_data"] == 3
    assert svc03.coverage_pct == 50.0


def test_a_target_group_with_one_zero_makes_its_service_down(aws: EmbeddedAws) -> None:
    _put(aws, "tg00", T0, 3)
    _put(aws, "tg00-admin", T0, 0)
    _run(T0)
    report = availability_from_items(_items(aws), T0, T0)
    svc00 = next(s for s in report.services if s.service == "svc00")
    assert svc00.minutes[MinuteState.DOWN] == 1


def test_scheduled_time_sources() -> None:
    assert availability.scheduled_time({"time": "2025-08-21T15:05:00Z"}) == T0 + timedelta(minutes=5)
    assert availability.scheduled_time({"scheduled_time": "2025-08-21T15:05:00Z"}) == T0 + timedelta(minutes=5)
    fallback = datetime(2030, 1, 1, tzinfo=UTC)
    assert availability.scheduled_time({}, fallback) == fallback
