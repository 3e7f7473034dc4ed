"""fleet.json's optional service keys, built in moto and read back through the ordinary read API."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from moto import mock_aws

from ecs_guardrail.core.errors import ScenarioError
from ecs_guardrail.replay.fleet import BuiltFleet, build_fleet, check_fleet, fleet_warnings, task_definitions_in_events

ACCOUNT, REGION = "123456789012", "eu-west-1"
CHECK = {"path": "/actuator/health", "intervalSeconds": 10, "unhealthyThresholdCount": 2, "timeoutSeconds": 5,
         "healthyThresholdCount": 3, "matcher": "200"}
CONTAINER_CHECK = {"command": ["CMD-SHELL", "curl -f localhost:8080/actuator/health"], "interval": 30,
                   "retries": 3, "startPeriod": 0}
FLEET: dict[str, Any] = {
    "account": ACCOUNT, "region": REGION,
    "clusters": [
        {"name": "production", "services": [
            {"name": "orders", "desiredCount": 2, "targetGroups": ["orders-prod", "orders-admin"],
             "tags": {"team": "shop"}, "healthCheck": CHECK, "healthCheckGracePeriodSeconds": 60,
             "deploymentCircuitBreaker": {"enable": True, "rollback": True},
             "autoScaling": {"minCapacity": 2, "maxCapacity": 6},
             "containerHealthCheck": CONTAINER_CHECK,
             "containers": [{"name": "log-router", "essential": False}, {"name": "web", "essential": True}]},
            {"name": "agent", "schedulingStrategy": "DAEMON"},
            {"name": "ingest", "desiredCount": 1, "targetGroups": ["ingest-prod"], "loadBalancerType": "network",
             "healthCheck": {"path": "/ping", "intervalSeconds": 30, "unhealthyThresholdCount": 3}},
            {"name": "plain", "desiredCount": 1, "targetGroups": ["plain-prod"]},
        ]},
        {"name": "staging", "services": [{"name": "orders", "desiredCount": 1, "taskDefinitionFamily": "orders-stg"},
                                         {"name": "plain", "desiredCount": 1}]},
    ],
}


def _factory(service: str) -> Any:
    return boto3.client(service, region_name=REGION)


@pytest.fixture(scope="class")
def built():
    """One fleet for the read-only tests of :class:`TestBuiltFleet` (a build costs a second or more)."""
    check_fleet(FLEET)
    with mock_aws():
        yield build_fleet(_factory, FLEET, ACCOUNT, REGION)


def _service(cluster: str, name: str) -> dict[str, Any]:
    return _factory("ecs").describe_services(cluster=cluster, services=[name], include=["TAGS"])["services"][0]


def _target_group(built: BuiltFleet, name: str) -> dict[str, Any]:
    return _factory("elbv2").describe_target_groups(TargetGroupArns=[built.target_groups[name]["arn"]])[
        "TargetGroups"][0]


class TestBuiltFleet:
    """Each optional key, read back through the API an operator (or the watchdog) reads it with."""

    def test_health_check_on_every_target_group_of_the_service(self, built):
        for name in ("orders-prod", "orders-admin"):
            tg = _target_group(built, name)
            assert (tg["HealthCheckPath"], tg["HealthCheckIntervalSeconds"], tg["UnhealthyThresholdCount"],
                    tg["HealthCheckTimeoutSeconds"], tg["HealthyThresholdCount"], tg["Matcher"]["HttpCode"]) == (
                "/actuator/health", 10, 2, 5, 3, "200")
            assert tg["Protocol"] == "HTTP"
            assert built.target_groups[name]["lb_type"] == "application"


    def test_network_load_balancer_target_group(self, built):
        tg = _target_group(built, "ingest-prod")
        assert tg["Protocol"] == "TCP" and tg["HealthCheckProtocol"] == "HTTP" and tg["HealthCheckPath"] == "/ping"
        assert tg["HealthCheckIntervalSeconds"] == 30 and tg["UnhealthyThresholdCount"] == 3
        lb = _factory("elbv2").describe_load_balancers(LoadBalancerArns=tg["LoadBalancerArns"])["LoadBalancers"][0]
        assert lb["Type"] == "network"
        assert built.target_groups["ingest-prod"]["lb_type"] == "network"
        assert _factory("elbv2").describe_target_group_attributes(TargetGroupArn=tg["TargetGroupArn"])["Attributes"]


    def test_target_group_entries_keep_their_shape(self, built):
        for entry in built.target_groups.values():
            assert set(entry) == {"arn", "lb_arn", "dimension", "lb_dimension", "lb_type"}
            assert entry["dimension"].startswith("targetgroup/") and entry["lb_dimension"].count("/") == 2


    def test_grace_period_circuit_breaker_and_tags(self, built):
        s = _service("production", "orders")
        assert s["healthCheckGracePeriodSeconds"] == 60
        assert s["deploymentConfiguration"]["deploymentCircuitBreaker"] == {"enable": True, "rollback": True}
        assert {t["key"]: t["value"] for t in s["tags"]} == {"team": "shop"}
        assert s["desiredCount"] == 2 and s["schedulingStrategy"] == "REPLICA"
        plain = _service("production", "plain")
        assert not plain.get("healthCheckGracePeriodSeconds")
        assert "deploymentCircuitBreaker" not in (plain.get("deploymentConfiguration") or {})


    def test_daemon_service(self, built):
        assert _service("production", "agent")["schedulingStrategy"] == "DAEMON"


    def test_scalable_target(self, built):
        targets = _factory("application-autoscaling").describe_scalable_targets(
            ServiceNamespace="ecs", ResourceIds=["service/production/orders"])["ScalableTargets"]
        assert [(t["ScalableDimension"], t["MinCapacity"], t["MaxCapacity"]) for t in targets] == [
            ("ecs:service:DesiredCount", 2, 6)]
        assert built.scalable_targets == {("production", "orders"): "service/production/orders"}


    def test_task_definition_containers_and_container_health_check(self, built):
        s = _service("production", "orders")
        td = _factory("ecs").describe_task_definition(taskDefinition=s["taskDefinition"])["taskDefinition"]
        assert td["family"] == "orders"
        containers = {c["name"]: c for c in td["containerDefinitions"]}
        assert {n: c["essential"] for n, c in containers.items()} == {"log-router": False, "web": True}
        assert containers["web"]["healthCheck"]["command"] == CONTAINER_CHECK["command"]
        assert containers["web"]["healthCheck"]["retries"] == 3
        assert "healthCheck" not in containers["log-router"]
        assert s["loadBalancers"][0]["containerName"] == "web"


    def test_default_container_is_one_essential_app(self, built):
        td = _factory("ecs").describe_task_definition(
            taskDefinition=built.task_definitions[("production", "plain")])["taskDefinition"]
        assert [(c["name"], c["essential"]) for c in td["containerDefinitions"]] == [("app", True)]
        assert "healthCheck" not in td["containerDefinitions"][0]


    def test_a_family_is_registered_once_and_a_service_runs_its_own_family(self, built):
        """SCENARIOS.md: task definitions are registered per family (``taskDefinitionFamily``, default the
        service name): two services of one family run its one revision; another family is its own."""
        prod, staging = built.task_definitions[("production", "orders")], built.task_definitions[("staging", "orders")]
        assert prod.endswith("task-definition/orders:1") and staging.endswith("task-definition/orders-stg:1")
        assert _service("staging", "orders")["taskDefinition"] == staging
        assert built.task_definitions[("production", "plain")] == built.task_definitions[("staging", "plain")]


def test_task_definitions_the_events_carry_resolve(tmp_path):
    arn = f"arn:aws:ecs:{REGION}:{ACCOUNT}:task-definition"
    events = [
        {"detail": {"taskDefinitionArn": f"{arn}/plain:12", "containers": [{"name": "app"}]}},
        {"detail": {"taskDefinitionArn": f"{arn}/plain:40", "containers": [{"name": "app"}]}},
        {"detail": {"taskDefinitionArn": f"{arn}/nightly-export:3", "containers": [{"name": "job"}]}},
        {"detail": {"taskDefinitionArn": f"arn:aws:ecs:us-east-1:{ACCOUNT}:task-definition/other:1"}},
    ]
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events) + "not json\n")
    found = task_definitions_in_events(path, ACCOUNT, REGION)
    assert found == {f"{arn}/plain:12": ("app",), f"{arn}/plain:40": ("app",), f"{arn}/nightly-export:3": ("job",)}
    with mock_aws():
        built = build_fleet(_factory, FLEET, ACCOUNT, REGION, event_task_definitions=found)
        ecs = _factory("ecs")
        assert built.task_definitions[("production", "plain")] == f"{arn}/plain:40"
        for a in (f"{arn}/plain:12", f"{arn}/plain:40"):
            assert ecs.describe_task_definition(taskDefinition=a)["taskDefinition"]["family"] == "plain"
        job = ecs.describe_task_definition(taskDefinition=f"{arn}/nightly-export:3")["taskDefinition"]
        assert [(c["name"], c["essential"]) for c in job["containerDefinitions"]] == [("job", True)]


def _per_line(path, account, region, families):
    """task_definitions_in_events as it read the file before the blocks: every line, one at a time."""
    from ecs_guardrail.replay import fleet

    out: dict[str, set[str]] = {}
    for line in path.read_bytes().splitlines(keepends=True):
        for m in fleet._TD_ARN.finditer(line):
            if m.group(2).decode() != region or m.group(3).decode() != account:
                continue
            names = out.setdefault(m.group(1).decode(), set())
            if m.group(4).decode() in families or fleet._nothing_new(line, names):
                continue
            try:
                detail = json.loads(line.decode("utf-8", "replace")).get("detail") or {}
                names.update(c["name"] for c in detail.get("containers") or [] if isinstance(c, dict)
                             and isinstance(c.get("name"), str) and fleet._NAME.fullmatch(c["name"]))
            except (ValueError, TypeError, AttributeError):
                pass
    return {arn: tuple(sorted(names)) for arn, names in out.items()}


@pytest.mark.parametrize(("block", "piece"), [(16, 1 << 14), (200, 1 << 14), (1000, 1 << 14), (1 << 20, 1 << 14),
                                             (1 << 20, 100), (1 << 20, 700), (1000, 300)])
def test_task_definitions_read_in_blocks_as_line_by_line(tmp_path, monkeypatch, block, piece):
    """Blocks passed over whole (every ARN met, every name known), and within a block that adds something its
    pieces that add nothing, find what reading each line finds: a new container name late, another home, a
    name escaped, a key split over two lines, a line cut short."""
    from ecs_guardrail.replay import fleet

    arn = f"arn:aws:ecs:{REGION}:{ACCOUNT}:task-definition"
    plain = {"detail": {"taskDefinitionArn": f"{arn}/plain:1", "containers": [{"name": "app"}]}}
    lines = [json.dumps(plain)] * 30 + [
        json.dumps({"detail": {"taskDefinitionArn": f"{arn}/plain:1", "containers": [{"name": "sidecar"}]}}),
        json.dumps({"detail": {"taskDefinitionArn": f"{arn}/job:2", "containers": [{"name": "j"}]}}),
        *[json.dumps(plain)] * 20,
        f'{{"detail": {{"taskDefinitionArn": "{arn}/plain:1", "containers": [{{"name": "\\u0065sc"}}]}}}}',
        json.dumps({"detail": {"taskDefinitionArn": f"arn:aws:ecs:us-east-1:{ACCOUNT}:task-definition/x:1"}}),
        '{"detail": {"taskDefinitionArn":', f' "{arn}/split:1", "containers": [{{"name": "s"}}]}}}}',
        *[json.dumps(plain)] * 20,
        json.dumps({"detail": {"taskDefinitionArn": f"{arn}/plain:1", "containers": [{"name": "late"}]}}),
        json.dumps(plain)[:40],
    ]
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(fleet, "_BLOCK", block)
    monkeypatch.setattr(fleet, "_PIECE", piece)
    for families in ((), {"plain"}):
        got = task_definitions_in_events(path, ACCOUNT, REGION, families)
        assert list(got.items()) == list(_per_line(path, ACCOUNT, REGION, families).items())
    assert got[f"{arn}/plain:1"] == () and "late" in task_definitions_in_events(path, ACCOUNT, REGION)[f"{arn}/plain:1"]


def test_words_looked_for_while_reading_task_definitions(tmp_path):
    """``look_for``: found where the file writes the word, or has a backslash anywhere (an escape may spell it)."""
    path = tmp_path / "events.jsonl"
    word = b"SERVICE_DEPLOYMENT_IN_PROGRESS"
    for text, expected in (('{"detail": {"eventName": "SERVICE_DEPLOYMENT_COMPLETED"}}\n', set()),
                           ('{"detail": {"eventName": "SERVICE_DEPLOYMENT_IN_PROGRESS"}}\n', {word}),
                           ('{"detail": {"eventName": "SERVICE_DEPLOYMENT\\u005fIN_PROGRESS"}}\n', {word})):
        path.write_text(text)
        found: set[bytes] = set()
        task_definitions_in_events(path, ACCOUNT, REGION, look_for=(word,), found=found)
        assert found == expected, text
    found = set()
    task_definitions_in_events(tmp_path / "missing.jsonl", ACCOUNT, REGION, look_for=(word,), found=found)
    assert found == {word}  # unreadable: assumed there


def test_every_optional_key_is_known():
    assert fleet_warnings(FLEET) == []
    assert fleet_warnings({"clusters": [{"name": "c", "services": [{"name": "s", "healtCheck": {}}]}]})
    agent = {"name": "s", "schedulingStrategy": "DAEMON", "desiredCount": 2}
    daemon = {"clusters": [{"name": "c", "services": [agent]}]}
    check_fleet(daemon)
    assert [w for w in fleet_warnings(daemon) if "desiredCount ignored" in w]


@pytest.mark.parametrize("key", ["autoScaling", "deploymentCircuitBreaker", "healthCheckGracePeriodSeconds",
                                 "healthCheck", "containerHealthCheck", "containers"])
def test_an_optional_key_given_as_null_is_omitted(key):
    """``"autoScaling": null`` passed check_fleet and then crashed build_fleet with a TypeError."""
    fleet = {"account": ACCOUNT, "region": REGION,
             "clusters": [{"name": "dev", "services": [{"name": "api", "desiredCount": 1, key: None}]}]}
    check_fleet(fleet)
    with mock_aws():
        built = build_fleet(_factory, fleet, ACCOUNT, REGION)
        assert built.scalable_targets == {}
        assert _service("dev", "api")["desiredCount"] == 1


@pytest.mark.parametrize("key", ["schedulingStrategy", "loadBalancerType"])
@pytest.mark.parametrize("value", [["DAEMON"], {"a": 1}, 3])
def test_a_choice_of_the_wrong_type_is_a_scenario_error(key, value):
    """``"schedulingStrategy": ["DAEMON"]`` raised TypeError (unhashable) instead of a one-line error."""
    from ecs_guardrail.core.errors import ScenarioError

    fleet = {"clusters": [{"name": "dev", "services": [{"name": "api", "targetGroups": ["api-dev"], key: value}]}]}
    with pytest.raises(ScenarioError, match=key):
        check_fleet(fleet)


@pytest.mark.parametrize("lb_type, check", [
    ("application", {"timeoutSeconds": 120}),  # default interval 30
    ("application", {"intervalSeconds": 5}),  # default timeout 5
    ("network", {"intervalSeconds": 7}),  # default TCP timeout 10
])
def test_health_check_timeout_against_the_default_interval_is_checked(lb_type, check):
    """Only one of timeoutSeconds/intervalSeconds given: CreateTargetGroup refused it after check_fleet
    passed it (exit 1, 'AWS refused') instead of a one-line fleet.json error (exit 2)."""
    from ecs_guardrail.core.errors import ScenarioError

    fleet = {"clusters": [{"name": "dev", "services": [
        {"name": "api", "targetGroups": ["api-dev"], "loadBalancerType": lb_type, "healthCheck": check}]}]}
    with pytest.raises(ScenarioError, match="timeoutSeconds"):
        check_fleet(fleet)


@pytest.mark.parametrize("key, value, says", [
    ("deploymentStrategy", {"strategy": "RED_BLACK"}, "deploymentStrategy is"),
    ("deploymentStrategy", {"strategy": "BLUE_GREEN", "bakeTimeInMinutes": 2000}, "deploymentStrategy is"),
    ("deploymentStrategy", {"strategy": "ROLLING", "bakeTimeInMinutes": 5}, "bakeTimeInMinutes is for"),
    ("deploymentController", "CODEDEPLOY", "deploymentController must be one of"),
    ("taskDefinitionFamily", "bad family", "taskDefinitionFamily"),
    ("deploymentCircuitBreaker", {"enable": True, "rollback": True, "thresholdConfiguration": {"type": "COUNT",
                                                                                              "value": 0}},
     "deploymentCircuitBreaker is"),
    ("containers", [{"name": "app", "restartPolicy": {"enabled": True, "restartAttemptPeriod": 30}}],
     "restartPolicy is"),
    ("containers", [{"name": "app", "restartPolicy": {"enabled": True, "ignoredExitCodes": list(range(51))}}],
     "restartPolicy is"),
])
def test_the_2026_keys_are_checked(key, value, says):
    fleet = {"clusters": [{"name": "c", "services": [{"name": "s", key: value}]}]}
    with pytest.raises(ScenarioError, match=says):
        check_fleet(fleet)


def test_a_strategy_belongs_to_the_ecs_controller():
    fleet = {"clusters": [{"name": "c", "services": [{"name": "s", "deploymentController": "EXTERNAL",
                                                      "deploymentStrategy": {"strategy": "CANARY"}}]}]}
    with pytest.raises(ScenarioError, match="for the ECS deployment controller"):
        check_fleet(fleet)


def test_two_services_of_one_family_with_different_containers_are_named_both():
    fleet = {"clusters": [
        {"name": "a", "services": [{"name": "web", "taskDefinitionFamily": "shop"}]},
        {"name": "b", "services": [{"name": "api", "taskDefinitionFamily": "shop",
                                    "containers": [{"name": "app"}, {"name": "sidecar", "essential": False}]}]}]}
    with pytest.raises(ScenarioError, match=r"b/api and a/web run task definition family 'shop'"):
        check_fleet(fleet)
    fleet["clusters"][1]["services"][0].pop("containers")
    check_fleet(fleet)  # the same containers: one family, fine
