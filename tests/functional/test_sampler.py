"""The availability sampler on moto: blocks of minutes, both observers, idempotence, late datapoints,
no_data, counts when they change, "now" from the schedule."""

from __future__ import annotations

import contextlib
import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ecs_guardrail import iam
from ecs_guardrail.adapters.cloudwatch import NAMESPACE, Series
from ecs_guardrail.adapters.history import HistoryStore
from ecs_guardrail.core.availability import ClientsState, MinuteState
from ecs_guardrail.core.timeline import availability_from_items
from ecs_guardrail.handlers import availability, runtime
from ecs_guardrail.handlers.runtime import LambdaContextStub
from ecs_guardrail.replay.embedded import EmbeddedAws
from ecs_guardrail.replay.scenario import TABLE, load_scenario

T0 = datetime(2025, 8, 21, 15, 0, tzinfo=UTC)
N_SERVICES = 14  # two DescribeServices pages, one GetMetricData call


def _fleet(tmp_path: Path) -> Path:
    services = [{"name": f"svc{i:02d}", "desiredCount": 2, "targetGroups": [f"tg{i:02d}"]} for i in range(N_SERVICES)]
    services[0]["targetGroups"].append("tg00-admin")  # a service with two target groups
    services.append({"name": "worker", "desiredCount": 1})  # no target group: no figure, not sampled
    # the one service whose restart counts are read: a restart policy, in a cluster with Container Insights
    # (a cluster with rows in container_restarts.csv has it); dark/looper has the policy in a cluster without
    services[1]["containers"] = [{"name": "app", "essential": True, "restartPolicy": {"enabled": True}}]
    dark = [{"name": "looper", "desiredCount": 1, "containers": services[1]["containers"]}]
    (tmp_path / "fleet.json").write_text(json.dumps({
        "account": "111122223333", "region": "eu-west-1",
        "clusters": [{"name": "prod", "services": services}, {"name": "empty", "services": []},
                     {"name": "dark", "services": dark}]}))
    (tmp_path / "container_restarts.csv").write_text("time,cluster,service,restart_count\n"
                                                     "2025-08-21T14:00:00Z,prod,svc01,0\n")
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
    _put_many(aws, [(name, minute, value)])


def _put_many(aws: EmbeddedAws, points: list[tuple[str, datetime, float]]) -> None:
    """HealthyHostCount datapoints, 1000 a PutMetricData call."""
    data = [{"MetricName": "HealthyHostCount", "Timestamp": minute, "Value": value, "Unit": "Count",
             "Dimensions": Series(aws.target_groups[name]["dimension"],
                                  aws.target_groups[name]["lb_dimension"]).dimensions()}
            for name, minute, value in points]
    for i in range(0, len(data), 1000):
        aws.client("cloudwatch").put_metric_data(Namespace=NAMESPACE, MetricData=data[i:i + 1000])


def _run(minute: datetime) -> dict:
    """Invoke the handler as the schedule for ``minute`` would (it fires 5 minutes later)."""
    event = {"source": "aws.events", "detail-type": "Scheduled Event",
             "time": (minute + timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")}
    with contextlib.redirect_stdout(io.StringIO()):
        return availability.handler(event, LambdaContextStub())


def _items(aws: EmbeddedAws) -> list[dict]:
    store = HistoryStore(aws.client("dynamodb"), TABLE)
    return list(store.timeline_items("prod", T0 - timedelta(hours=1), T0 + timedelta(hours=2)))


BLOCK = timedelta(minutes=30)
LAST = T0 + BLOCK - timedelta(minutes=1)  # 15:29, the last minute of the block [15:00, 15:30)


def _minutes(start: datetime, n: int) -> list[datetime]:
    return [start + timedelta(minutes=i) for i in range(n)]


def _put_requests(aws: EmbeddedAws, name: str, minute: datetime, requests: float, ok: float, bad: float) -> None:
    tg = aws.target_groups[name]
    dims = Series(tg["dimension"], tg["lb_dimension"]).dimensions()
    aws.client("cloudwatch").put_metric_data(Namespace=NAMESPACE, MetricData=[
        {"MetricName": metric, "Timestamp": minute, "Value": value, "Unit": "Count", "Dimensions": dims}
        for metric, value in (("RequestCount", requests), ("HTTPCode_Target_2XX_Count", ok),
                              ("HTTPCode_Target_5XX_Count", bad)) if value])


def test_one_read_per_block_of_thirty_minutes_for_all_target_groups(aws: EmbeddedAws) -> None:
    _put_many(aws, [(name, m, 2) for m in _minutes(T0 - BLOCK, 60) for name in aws.target_groups])
    aws.counter.calls.clear()
    outs = [_run(m) for m in _minutes(T0, 30)]
    calls = aws.counter.calls
    assert [o["metrics_requested"] > 0 for o in outs] == [False] * 29 + [True]  # only the block's last minute
    assert outs[-1]["target_groups"] == N_SERVICES + 1 and outs[-1]["no_data"] == 0
    # per target group: HealthyHostCount, RequestCount, 2XX, 5XX, and its own ALB's HTTPCode_ELB_5XX_Count
    assert outs[-1]["metrics_requested"] == 5 * (N_SERVICES + 1)
    # one call for the block (75 queries x 60 minutes), and the restart reader's every 5 minutes (issue 33)
    assert calls[("cloudwatch", "GetMetricData")] == 1 + 30 // 5
    # ECS reads are free: every minute for the counts, and every 5 minutes for the restart reader
    # (prod's 15 services in 2 pages; dark has no Container Insights, so nothing of it is described for it)
    assert calls[("ecs", "DescribeServices")] == (2 + 1) * 30 + 2 * 30 // 5
    assert calls[("ecs", "DescribeClusters")] == 30 // 5
    # each of prod's 15 task definitions read once, and cached for the warm Lambda's life (immutable revisions)
    assert calls[("ecs", "DescribeTaskDefinition")] == 15
    # the counts of 14 services once at the start and once at the block's end; 2 blocks per target group
    assert calls[("dynamodb", "PutItem")] == 2 * N_SERVICES + 2 * (N_SERVICES + 1)
    blocks = [i for i in _items(aws) if i["type"] == "healthy_hosts"]
    assert {i["time"] for i in blocks} == {"2025-08-21T14:30:00Z", "2025-08-21T15:00:00Z"}
    assert all(i["per_minute"]["healthy_host_count"] == [2] * 30 for i in blocks)
    assert all(i["per_minute"]["request_count"] == [None] * 30 for i in blocks)  # ALB: none published = none
    assert "worker" not in {i["service"] for i in blocks}
    report = availability_from_items(_items(aws), T0, LAST)
    assert report.unavailable_service_minutes == 0
    assert report.idle_service_minutes == 30 * N_SERVICES and report.served_service_minutes == 0


def test_calls_stay_within_the_declared_iam_actions(aws: EmbeddedAws) -> None:
    aws.counter.calls.clear()
    _run(LAST)
    prefixes = {"cloudwatch": "cloudwatch", "elbv2": "elasticloadbalancing", "ecs": "ecs",
                "dynamodb": "dynamodb", "events": "events"}
    made = {f"{prefixes[svc]}:{op}" for svc, op in aws.counter.calls}
    declared = {a for actions in iam.handler_permissions("availability").values() for a in actions}
    assert made <= declared
    assert ("cloudwatch", "GetMetricData") in aws.counter.calls
    assert declared == {"dynamodb:PutItem", "ecs:DescribeServices", "ecs:ListClusters", "ecs:ListServices",
                        "ecs:DescribeClusters", "ecs:DescribeTaskDefinition",
                        "elasticloadbalancing:DescribeTargetGroups", "cloudwatch:GetMetricData", "events:PutEvents"}


def test_container_restarts_go_to_the_watchdog_through_the_bus(aws: EmbeddedAws) -> None:
    """A restart-policy loop emits no ECS event: every 5 minutes the sampler reads Container Insights'
    RestartCount for those minutes and the one before and puts one Container Restarts event per service and
    minute with restarts."""
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
    assert [_run(T0 + timedelta(minutes=n))["restart_observations"] for n in range(4)] == [0] * 4  # not its turn
    out = _run(T0 + timedelta(minutes=4))  # 15:04 ends the span 15:00-15:04, read with 14:59 before it
    assert out["restart_observations"] == 1 and len(sent) == 1
    entry = sent[0]
    raw = {"source": entry["Source"], "detail-type": entry["DetailType"], "detail": json.loads(entry["Detail"]),
           "resources": entry["Resources"]}
    obs = RestartObservation.from_event(raw)
    assert (obs.cluster, obs.service, obs.minute, obs.restarts, obs.total) == ("prod", service, T0, 2, 5.0)
    # the sweep function's lane (issue 32 item 3), never the watchdog's queue behind a storm's task events
    assert matches(PATTERNS["sweep"], raw) and not matches(PATTERNS["recorder"], raw)
    assert not matches(PATTERNS["watchdog"], raw)


def test_rerunning_a_minute_writes_nothing_new_and_a_late_datapoint_is_re_read(aws: EmbeddedAws) -> None:
    _put_many(aws, [(name, m, 1) for m in _minutes(T0, 30) for name in aws.target_groups])
    first = _run(LAST)
    before = _items(aws)
    again = _run(LAST)
    assert first["written"] == N_SERVICES + 2 * (N_SERVICES + 1)  # counts + both blocks
    assert again["written"] == N_SERVICES  # the block's counts again, never the same block twice
    assert [i for i in _items(aws) if i["type"] == "healthy_hosts"] == \
        [i for i in before if i["type"] == "healthy_hosts"]
    _put(aws, "tg01", T0 + timedelta(minutes=10), 0)  # published late: after the block was read
    later = _run(LAST + BLOCK)  # the next block's read re-reads this one
    assert later["written"] == N_SERVICES + (N_SERVICES + 1) + 1  # counts, the new blocks, the one changed
    items = _items(aws)  # one read of the table (moto's projection is the slow part of this test)
    block = next(i for i in items if i["type"] == "healthy_hosts" and i["target_group"] == "tg01"
                 and i["time"] == "2025-08-21T15:00:00Z")
    assert block["per_minute"]["healthy_host_count"][10] == 0
    report = availability_from_items(items, T0, LAST)
    assert report.by_cause["down"] == 1  # the late zero counts, in its own minute


def test_missing_datapoints_during_an_outage_are_no_data_and_unavailable(aws: EmbeddedAws) -> None:
    minutes = _minutes(T0, 30)
    # tg03 has no registered targets from 15:02 to 15:04: the ALB publishes nothing
    _put_many(aws, [(name, m, 2) for m in minutes for name in aws.target_groups
                    if not (name == "tg03" and m in minutes[2:5])])
    out = _run(LAST)
    assert out["no_data"] == 3
    items = _items(aws)
    block = next(i for i in items if i["type"] == "healthy_hosts" and i["target_group"] == "tg03"
                 and i["time"] == "2025-08-21T15:00:00Z")
    assert block["per_minute"]["healthy_host_count"][:6] == [2, 2, None, None, None, 2]
    report = availability_from_items(items, minutes[0], minutes[5])
    svc03 = next(s for s in report.services if s.service == "svc03")
    assert svc03.minutes[MinuteState.NO_DATA] == 3 and svc03.minutes[MinuteState.UP] == 3
    assert report.unavailable_service_minutes == 3
    assert report.by_cause["no_data"] == 3
    assert svc03.coverage_pct == 50.0


def test_a_target_group_with_one_zero_makes_its_service_down(aws: EmbeddedAws) -> None:
    _put(aws, "tg00", T0, 3)
    _put(aws, "tg00-admin", T0, 0)
    _run(LAST)
    report = availability_from_items(_items(aws), T0, T0)
    svc00 = next(s for s in report.services if s.service == "svc00")
    assert svc00.minutes[MinuteState.DOWN] == 1


def test_both_observers_and_their_disagreements_from_moto(aws: EmbeddedAws) -> None:
    for m in _minutes(T0, 30):
        _put(aws, "tg01", m, 0)  # the checker fails every target: the ALB fails open
        _put_requests(aws, "tg01", m, 600, 600, 0)
        _put(aws, "tg02", m, 2)  # healthy hosts while 30 % of requests fail: a gray failure
        _put_requests(aws, "tg02", m, 100, 70, 30)
    _run(LAST)
    report = availability_from_items(_items(aws), T0, LAST)
    per = {s.service: s for s in report.services}
    assert per["svc01"].to_dict()["checker_disagreement_minutes"]["checker_down_clients_served"] == 30
    assert per["svc02"].to_dict()["checker_disagreement_minutes"]["checker_up_clients_failing"] == 30
    assert report.checker_disagreement_minutes == {"checker_down_clients_served": 30,
                                                   "checker_up_clients_failing": 30}
    assert per["svc01"].clients[ClientsState.SERVED] == 30 and per["svc02"].clients[ClientsState.FAILING] == 30


def test_counts_are_written_when_they_change_and_once_a_block(aws: EmbeddedAws) -> None:
    for m in _minutes(T0, 3):
        _run(m)
    aws.client("ecs").update_service(cluster="prod", service="svc05", desiredCount=0)
    _run(T0 + timedelta(minutes=3))
    counts = [i for i in _items(aws) if i["type"] == "service_counts"]
    assert len([c for c in counts if c["service"] == "svc05"]) == 2
    assert len(counts) == N_SERVICES + 1  # nothing else changed
    assert counts[-1]["desired_count"] == 0 and counts[-1]["time"] == "2025-08-21T15:08:00Z"


def test_scheduled_time_sources() -> None:
    assert availability.scheduled_time({"time": "2025-08-21T15:05:00Z"}) == T0 + timedelta(minutes=5)
    assert availability.scheduled_time({"scheduled_time": "2025-08-21T15:05:00Z"}) == T0 + timedelta(minutes=5)
    fallback = datetime(2030, 1, 1, tzinfo=UTC)
    assert availability.scheduled_time({}, fallback) == fallback
