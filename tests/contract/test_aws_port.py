"""The AWS port's two implementations, side by side: moto and the fast engine's ``MemoryAws``.

The same fleet is built in both with :func:`ecs_guardrail.replay.fleet.build_fleet`, then every adapter a replay
runs (ECS facts, scale-down and restore, the fleet listing, target groups, CloudWatch minima, scalable
targets, task definitions, SNS) reads both; the answers must be equal once the IDs each AWS makes up
(target group and load balancer IDs, deployment IDs) are replaced by names.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import msgspec
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from ecs_guardrail.adapters.alerts import SnsTopic
from ecs_guardrail.adapters.autoscaling import ScalableTargets
from ecs_guardrail.adapters.cloudwatch import HealthyHostCount, Series
from ecs_guardrail.adapters.ecs import EcsFleet, EcsService, ServiceNotFoundError
from ecs_guardrail.adapters.elb import TargetGroups
from ecs_guardrail.adapters.taskdef import TaskDefinitions
from ecs_guardrail.core.alert import Alert
from ecs_guardrail.core.clusters import parse_alert_only_clusters
from ecs_guardrail.replay.fleet import build_fleet, check_fleet
from ecs_guardrail.replay.healthy_hosts import load_into_cloudwatch
from ecs_guardrail.replay.memory_aws import MemoryAws, UnsupportedOperationError

ACCOUNT, REGION = "123456789012", "eu-west-1"
T0 = datetime(2025, 10, 7, 9, 0, tzinfo=UTC)
FLEET: dict[str, Any] = {
    "account": ACCOUNT, "region": REGION,
    "clusters": [
        {"name": "production", "services": [
            {"name": "orders", "desiredCount": 2, "targetGroups": ["orders-prod", "orders-admin"],
             "tags": {"team": "shop", "ecs-guardrail:mode": "alert-only"},
             "healthCheck": {"path": "/health", "intervalSeconds": 10, "unhealthyThresholdCount": 2},
             "healthCheckGracePeriodSeconds": 60, "deploymentCircuitBreaker": {"enable": True, "rollback": True},
             "autoScaling": {"minCapacity": 2, "maxCapacity": 6},
             "containers": [{"name": "log-router", "essential": False}, {"name": "web", "essential": True}]},
            {"name": "agent", "schedulingStrategy": "DAEMON"},
            {"name": "ingest", "desiredCount": 1, "targetGroups": ["ingest-prod"], "loadBalancerType": "network"},
            {"name": "idle", "desiredCount": 0},
            {"name": "checkout", "desiredCount": 4, "taskDefinitionFamily": "checkout-api",
             "deploymentStrategy": {"strategy": "BLUE_GREEN", "bakeTimeInMinutes": 10},
             "deploymentCircuitBreaker": {"enable": True, "rollback": True, "resetOnHealthyTask": False,
                                          "thresholdConfiguration": {"type": "COUNT", "value": 4}},
             "containers": [{"name": "app", "essential": True,
                             "restartPolicy": {"enabled": True, "ignoredExitCodes": [0], "restartAttemptPeriod": 60}}]},
            {"name": "legacy", "desiredCount": 2, "deploymentController": "CODE_DEPLOY"},
        ]},
        {"name": "staging", "services": [{"name": "orders", "desiredCount": 1, "targetGroups": ["orders-stg"],
                                          "taskDefinitionFamily": "orders-staging"}]},
    ],
}
EVENT_TASK_DEFINITIONS = {f"arn:aws:ecs:{REGION}:{ACCOUNT}:task-definition/nightly-report:3": ("report",)}
_IDS = re.compile(r"(targetgroup|loadbalancer/app|app|net)/([^/]+)/[0-9a-f]+|ecs-svc/\d+")


def asdict(record: Any) -> Any:
    """The ports' records (msgspec Structs; dataclasses.asdict before) as plain dicts and lists, nested
    records too, datetimes kept."""
    return msgspec.to_builtins(record, builtin_types=(datetime,))


def _names(value: Any) -> Any:
    """``value`` with the made-up IDs cut: ``targetgroup/NAME/ID`` -> ``targetgroup/NAME``."""
    if isinstance(value, str):
        return _IDS.sub(lambda m: f"{m.group(1)}/{m.group(2)}" if m.group(1) else "ecs-svc/ID", value)
    if isinstance(value, dict):
        return {_names(k): _names(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        out = [_names(v) for v in value]
        return sorted(out, key=repr) if isinstance(value, set | frozenset) else out
    return value


class Side:
    """One AWS with the fleet built: ``client(service)`` and the :class:`~ecs_guardrail.replay.fleet.BuiltFleet`."""

    def __init__(self, kind: str, factory: Any) -> None:
        self.kind = kind
        self.client = factory
        check_fleet(FLEET)
        self.built = build_fleet(factory, FLEET, ACCOUNT, REGION, event_task_definitions=EVENT_TASK_DEFINITIONS,
                                 container_insights=("production",))
        sns = factory("sns")
        self.topic = sns.create_topic(Name="alerts")["TopicArn"]


def _aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_SESSION_TOKEN": "testing",
                 "AWS_DEFAULT_REGION": REGION, "MOTO_ACCOUNT_ID": ACCOUNT}.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    _aws_env(monkeypatch)


@pytest.fixture
def both(aws_env: None) -> Iterator[tuple[Side, Side]]:
    from ecs_guardrail.replay.embedded import moto_as_aws

    with mock_aws(), moto_as_aws():  # moto as the replay's moto engine runs it
        memory = MemoryAws(ACCOUNT, REGION)
        yield Side("memory", memory.client), Side("moto", lambda s: boto3.client(s, region_name=REGION))


def _each(both: tuple[Side, Side], read: Any) -> None:
    """``read(side)`` on both sides gives the same answer (IDs cut)."""
    memory, moto = (_names(read(side)) for side in both)
    assert memory == moto


def test_scale_to_zero_tags_and_restore_read_back_the_same(both: tuple[Side, Side]) -> None:
    def act(side: Side) -> list[Any]:
        ecs = EcsService(side.client("ecs"))
        facts = ecs.describe("production", "orders")
        seen = [ecs.scale_to_zero(facts, facts.desired_count)]
        zero = ecs.describe("production", "orders")
        seen.append(asdict(zero))
        seen.append(ecs.restore(zero, 2))
        seen.append(asdict(ecs.describe("production", "orders")))
        return seen

    _each(both, act)


def test_healthy_host_minima_and_newest_sample_are_the_same(both: tuple[Side, Side]) -> None:
    rows = [(T0 + timedelta(minutes=m, seconds=s), tg, float(v),
             {"request_count": 100.0, "target_2xx": 90.0 + m, "elb_5xx": float(m)} if s == 0 else {})
            for m in range(6) for s in (0, 30)
            for tg, v in (("orders-prod", m % 3 + (s > 0)), ("ingest-prod", 0 if m > 3 else 2))
            if not (tg == "orders-prod" and m == 4)]

    def read(side: Side) -> Any:
        tgs = side.built.target_groups
        assert load_into_cloudwatch(side.client("cloudwatch"), tgs, [*rows, (T0, "unknown-tg", 1.0, {})]) == \
            ["unknown-tg"]
        series = [Series(tgs[n]["dimension"], tgs[n]["lb_dimension"]) for n in ("orders-prod", "ingest-prod")]
        cw = HealthyHostCount(side.client("cloudwatch"))
        minima = cw.minima(series, T0, T0 + timedelta(minutes=6))
        newest = cw.newest_healthy(series, T0 + timedelta(minutes=4, seconds=20))
        both_views = cw.read(series, T0, T0 + timedelta(minutes=6))
        return {"minima": {repr(s): dict(sorted(v.items())) for s, v in sorted(minima.items(), key=repr)},
                "newest": [asdict(x) for x in newest],
                "read": {repr(s): {m: asdict(r) for m, r in sorted(v.items())}
                         for s, v in sorted(both_views.items(), key=repr)}}

    _each(both, read)


def test_scalable_targets_suspend_and_restore_the_same(both: tuple[Side, Side]) -> None:
    def cycle(side: Side) -> Any:
        aas = ScalableTargets(side.client("application-autoscaling"), alert_only=parse_alert_only_clusters("none"))
        before = aas.describe("production", "orders")
        assert before is not None
        previous = aas.suspend(before)
        during = aas.describe("production", "orders")
        restored = aas.restore_suspended("production", "orders", previous)
        return [asdict(before), asdict(during), restored, asdict(aas.describe("production", "orders")),
                aas.describe("production", "agent")]

    _each(both, cycle)


def test_sns_delivers_on_both(both: tuple[Side, Side]) -> None:
    for side in both:
        delivery = SnsTopic(side.client("sns"), side.topic).send(Alert(subject="s", text="t", data={"a": 1}))
        assert delivery.ok, delivery
        missing = SnsTopic(side.client("sns"), side.topic + "-gone").send(Alert(subject="s", text="t"))
        assert not missing.ok


def test_calls_are_counted_by_before_call_handlers(aws_env: None) -> None:
    from ecs_guardrail.replay.embedded import CallCounter

    memory = MemoryAws(ACCOUNT, REGION)
    counter = CallCounter()
    ecs = counter.attach(memory.client("ecs"))
    ecs.create_cluster(clusterName="c")
    list(ecs.get_paginator("list_services").paginate(cluster="c"))
    assert counter.calls == {("ecs", "CreateCluster"): 1, ("ecs", "ListServices"): 1}


def test_an_operation_outside_the_fast_engine_says_so() -> None:
    memory = MemoryAws(ACCOUNT, REGION)
    with pytest.raises(UnsupportedOperationError, match="--engine moto"):
        memory.client("ecs").delete_service(cluster="c", service="s")
    with pytest.raises(UnsupportedOperationError, match="dynamodb"):
        memory.client("dynamodb")


#: clusters whose names are substrings of each other's (moto's ListServices matched "prod:" inside "preprod:api")
NESTED_FLEET: dict[str, Any] = {
    "account": ACCOUNT, "region": REGION,
    "clusters": [
        {"name": "prod", "services": [{"name": "api", "desiredCount": 2, "targetGroups": ["api-prod"]}]},
        {"name": "preprod", "services": [{"name": "api", "desiredCount": 1, "targetGroups": ["api-preprod"]},
                                         {"name": "jobs", "desiredCount": 1, "targetGroups": ["jobs-preprod"]}]},
        {"name": "eu-prod", "services": [{"name": "web", "desiredCount": 1}]},
    ],
}


@pytest.fixture
def nested(aws_env: None) -> Iterator[tuple[Any, Any]]:
    from ecs_guardrail.replay.embedded import moto_as_aws

    with mock_aws(), moto_as_aws():
        memory = MemoryAws(ACCOUNT, REGION).client
        moto = lambda s: boto3.client(s, region_name=REGION)  # noqa: E731
        for factory in (memory, moto):
            build_fleet(factory, NESTED_FLEET, ACCOUNT, REGION)
        yield memory, moto


def test_a_cluster_lists_only_its_own_services_when_names_nest(nested: tuple[Any, Any]) -> None:
    for factory in nested:
        ecs, fleet = EcsService(factory("ecs")), EcsFleet(factory("ecs"))
        assert [ecs.count_services(c) for c in ("prod", "preprod", "eu-prod")] == [1, 2, 1]
        assert [(s.cluster, s.name) for s in fleet.load_balanced_services("prod")] == [("prod", "api")]


def test_deployment_ids_are_the_same_on_both(nested: tuple[Any, Any]) -> None:
    """Not only in shape: a decision's message names the deployment, so the IDs themselves agree (moto's
    are pinned at build time; it draws them at random)."""
    memory, moto = ([d.id for d in EcsService(f("ecs")).describe(c, "api").deployments]
                    for f in nested for c in ["preprod"])
    assert memory == moto and memory[0].startswith("ecs-svc/")


def test_container_restart_totals_and_observations_are_the_same(both: tuple[Side, Side]) -> None:
    """Container Insights' RestartCount as container_restarts.csv puts it in (PutMetricData) and the sampler's
    reader (GetMetricData, Maximum per minute) reads it back: the same on moto and the fast engine."""
    from ecs_guardrail.adapters.cloudwatch import ContainerRestarts
    from ecs_guardrail.handlers.availability import restart_observations
    from ecs_guardrail.replay.restarts import load_restarts_into_cloudwatch

    rows = [(T0 + timedelta(minutes=i), "production", "checkout", float(v)) for i, v in enumerate([0, 0, 2, 3, 1, 4])]
    rows.append((T0, "production", "ghost", 1.0))
    known = {("production", "checkout"), ("production", "orders")}

    def read(side: Side) -> Any:
        unknown = load_restarts_into_cloudwatch(side.client("cloudwatch"), rows, known)
        reader = ContainerRestarts(side.client("cloudwatch"))
        totals = reader.totals([("production", "checkout"), ("production", "orders")], T0,
                               T0 + timedelta(minutes=6))
        seen = [asdict(o) for i in range(1, 6) for o in restart_observations(
            T0 + timedelta(minutes=i + 1), fleet=EcsFleet(side.client("ecs")), restarts=reader, lookback_minutes=1)]
        # the sampler's cadence: minutes 1 to 5 in one read, the same observations
        spanned = [asdict(o) for o in restart_observations(
            T0 + timedelta(minutes=6), fleet=EcsFleet(side.client("ecs")), restarts=reader, lookback_minutes=1,
            minutes=5)]
        return unknown, {"/".join(k): v for k, v in totals.items()}, seen, spanned

    memory, moto = (read(side) for side in both)
    assert _names(memory) == _names(moto)
    unknown, totals, seen, spanned = memory
    assert unknown == ["production/ghost"] and list(totals) == ["production/checkout"]
    assert [(o["minute"], o["restarts"]) for o in seen] == [(T0 + timedelta(minutes=2), 2),
                                                          (T0 + timedelta(minutes=3), 1),
                                                          (T0 + timedelta(minutes=5), 3)]
    assert spanned == seen


def test_restart_counts_are_read_only_where_container_insights_can_publish_them(both: tuple[Side, Side]) -> None:
    """DescribeClusters' containerInsights setting and DescribeTaskDefinition's restartPolicy agree on both
    AWSs: of production (Container Insights) only checkout's task definition enables a restart policy, and
    staging has none (issue 33: every other read is billed for nothing)."""
    memory, moto = ((EcsFleet(side.client("ecs")).container_insights(),
                     EcsFleet(side.client("ecs")).restart_policy_services()) for side in both)
    assert memory == moto
    insights, wanted = memory
    assert sorted(insights.values()) == [False, True]
    assert {arn.rsplit("/", 1)[-1]: names for arn, names in wanted.items()} == {"production": ["checkout"]}


class TestReadOnly:
    """Reads that change nothing, over one build of the fleet on both sides for the whole class (issue 23:
    a build on moto costs about a second of CPU; these 15 tests built it 15 times). A test that writes
    belongs outside, with the function-scoped ``both``."""

    @pytest.fixture(scope="class")
    @classmethod
    def both(cls) -> Iterator[tuple[Side, Side]]:
        from ecs_guardrail.replay.embedded import moto_as_aws

        with pytest.MonkeyPatch.context() as mp:
            _aws_env(mp)
            with mock_aws(), moto_as_aws():
                memory = MemoryAws(ACCOUNT, REGION)
                yield Side("memory", memory.client), Side("moto", lambda s: boto3.client(s, region_name=REGION))

    def test_service_facts_are_the_same(self, both: tuple[Side, Side]) -> None:
        for cluster, service in [("production", "orders"), ("production", "agent"), ("production", "ingest"),
                                 ("production", "idle"), ("production", "checkout"), ("production", "legacy"),
                                 ("staging", "orders")]:
            _each(both, lambda side, c=cluster, s=service: asdict(EcsService(side.client("ecs")).describe(c, s)))
        _each(both, lambda side: EcsService(side.client("ecs")).count_services("production"))

    def test_deployment_configuration_is_read_the_same(self, both: tuple[Side, Side]) -> None:
        """What rule 4 reads beyond the circuit breaker's two booleans, built from fleet.json on both."""
        for side in both:
            ecs = EcsService(side.client("ecs"))
            checkout, legacy = ecs.describe("production", "checkout"), ecs.describe("production", "legacy")
            assert (checkout.deployment_strategy, checkout.bake_time_minutes, checkout.deployment_controller) == \
                ("BLUE_GREEN", 10, "ECS")
            assert checkout.circuit_breaker.threshold_type == "COUNT" and checkout.circuit_breaker.threshold_value == 4
            assert checkout.circuit_breaker.reset_on_healthy_task is False
            assert (legacy.deployment_controller, legacy.deployments) == ("CODE_DEPLOY", ())
            td = side.client("ecs").describe_task_definition(
                taskDefinition=checkout.task_definition_arn)["taskDefinition"]
            assert td["family"] == "checkout-api"
            assert td["containerDefinitions"][0]["restartPolicy"] == {"enabled": True, "ignoredExitCodes": [0],
                                                                      "restartAttemptPeriod": 60}

    def test_service_deployments_are_the_same_on_both(self, both: tuple[Side, Side]) -> None:
        """ListServiceDeployments and DescribeServiceDeployments (moto 5 has neither: the replay's patch answers
        them from the service's deployments, as the fast engine does): the fleet's deployments finished before
        any history, a createdAt filter after that lists none, a CODE_DEPLOY service has none."""
        def read(side: Side) -> Any:
            ecs = EcsService(side.client("ecs"))
            out = {s: [asdict(d) for d in ecs.service_deployments("production", s) or ()]
                   for s in ("orders", "checkout", "legacy", "idle")}
            out["after"] = ecs.service_deployments("production", "orders", since=T0)
            out["missing"] = ecs.service_deployments("production", "missing")
            return out

        _each(both, read)
        memory = read(both[0])
        assert [d["status"] for d in memory["orders"]] == ["SUCCESSFUL"] and memory["legacy"] == []
        assert memory["orders"][0]["arn"].endswith(":service-deployment/production/orders/"
                                                   + EcsService(both[0].client("ecs")).describe("production", "orders")
                                                   .deployments[0].id.split("/")[1])
        assert memory["after"] == () and memory["missing"] is None
        for side in both:
            arn = memory["orders"][0]["arn"]
            got = side.client("ecs").describe_service_deployments(serviceDeploymentArns=[arn, arn + "0"])
            assert [d["status"] for d in got["serviceDeployments"]] == ["SUCCESSFUL"]
            assert [f["reason"] for f in got["failures"]] == ["MISSING"]

    @pytest.mark.parametrize("cluster, service", [("production", "missing"), ("nowhere", "orders")])
    def test_a_missing_service_or_cluster_is_not_found_on_both(self, both: tuple[Side, Side], cluster: str,
                                                               service: str) -> None:
        for side in both:
            with pytest.raises(ServiceNotFoundError):
                EcsService(side.client("ecs")).describe(cluster, service)

    def test_fleet_listing_is_the_same(self, both: tuple[Side, Side]) -> None:
        def listing(side: Side) -> Any:
            fleet = EcsFleet(side.client("ecs"))
            return {c: [asdict(s) for s in fleet.load_balanced_services(c)] for c in fleet.clusters()}

        _each(both, listing)

    def test_target_groups_and_their_load_balancers_are_the_same(self, both: tuple[Side, Side]) -> None:
        def lbs(side: Side) -> Any:
            tgs = side.built.target_groups
            found = TargetGroups(side.client("elbv2")).load_balancers([tgs[n]["arn"] for n in sorted(tgs)])
            return {"built": {n: {k: v for k, v in tg.items() if k != "arn"} for n, tg in tgs.items()},
                    "load_balancers": {arn: list(v) for arn, v in found.items()}}

        _each(both, lbs)

    def test_task_definitions_the_same(self, both: tuple[Side, Side]) -> None:
        def essentials(side: Side) -> Any:
            td = TaskDefinitions(side.client("ecs"))
            arns = [*side.built.task_definitions.values(), *EVENT_TASK_DEFINITIONS,
                    f"arn:aws:ecs:{REGION}:{ACCOUNT}:task-definition/nightly-report:99"]
            return {arn: td.essential_containers(arn) for arn in arns}

        _each(both, essentials)

    @pytest.mark.parametrize("revision", ["0", "-1", "00", "1.0", "2abc", "1:2", "+1", ""])
    def test_a_revision_that_is_not_a_positive_integer_is_unknown_on_both(self, both: tuple[Side, Side],
                                                                          revision: str) -> None:
        """The fast engine indexed its list with ``revision - 1``: ``:0`` and ``:-1`` answered with the newest and
        an older revision; moto raised ValueError (a traceback) for ``1.0``. AWS: ClientException, so the job's
        essential containers are unknown on both."""
        arn = f"arn:aws:ecs:{REGION}:{ACCOUNT}:task-definition/nightly-report:{revision}"
        for side in both:
            with pytest.raises(ClientError) as info:
                side.client("ecs").describe_task_definition(taskDefinition=arn)
            assert info.value.response["Error"]["Code"] == "ClientException"
            assert TaskDefinitions(side.client("ecs")).essential_containers(arn) is None


def test_crashed_containers_last_lines_are_the_same(both: tuple[Side, Side], tmp_path: Any) -> None:
    """Issue 35: logs.jsonl put into each side's CloudWatch Logs (old events too: moto's PutLogEvents
    would drop them) and read back by the adapter with FilterLogEvents: the same lines, the same
    one-line answer for a stream that is not there."""
    import json as _json

    from ecs_guardrail.adapters.logs import CrashLogs, Wanted
    from ecs_guardrail.replay.logs_file import load_logs

    fleet = {"account": ACCOUNT, "region": REGION, "clusters": [{"name": "production", "services": [
        {"name": "orders", "logGroup": "/ecs/orders"}]}]}
    task = "0123456789abcdef0123456789abcdef"
    (tmp_path / "logs.jsonl").write_text("".join(_json.dumps(
        {"time": f"2025-10-07T09:0{n}:00Z", "logStream": f"ecs/app/{task}", "message": f"line {n} secret=x"}) + "\n"
        for n in range(3)))
    stopped = datetime(2025, 10, 7, 9, 3, tzinfo=UTC)

    def read(side: Side) -> Any:
        assert load_logs(side.client, fleet, ACCOUNT, REGION, tmp_path, tmp_path / "events.jsonl") == []
        logs = CrashLogs(side.client("logs"), (ACCOUNT, REGION))
        found = logs.last_words([Wanted("/ecs/orders", f"ecs/app/{task}", REGION, "app", task, stopped)], ACCOUNT)
        missing = logs.last_words([Wanted("/ecs/none", "ecs/app/x", REGION, "app", "x", stopped)], ACCOUNT)
        return found, missing

    answers = [_names(read(side)) for side in both]
    assert answers[0] == answers[1]
    found, missing = answers[0]
    assert found.lines == ("line 0 secret=****", "line 1 secret=****", "line 2 secret=****")
    assert missing.note == "log group /ecs/none or stream ecs/app/x not found"
