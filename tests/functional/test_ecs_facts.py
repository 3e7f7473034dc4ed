"""ServiceFacts from DescribeServices: what rule 4 needs, in the one call the watchdog already makes."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from ecs_guardrail.adapters.ecs import EcsService
from ecs_guardrail.core.entitlement import Deployment, EntitlementFacts, entitlement
from ecs_guardrail.core.errors import ServiceAccessDeniedError, ServiceNotFoundError

ACCOUNT = "123456789012"


@pytest.fixture
def ecs() -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("ecs", region_name="eu-west-1")
        client.create_cluster(clusterName="prod")
        client.register_task_definition(family="api", containerDefinitions=[
            {"name": "app", "image": "nginx", "memory": 128}])
        yield client


def test_replica_service_on_moto(ecs: Any) -> None:
    ecs.create_service(cluster="prod", serviceName="api", taskDefinition="api", desiredCount=2)
    facts = EcsService(ecs).describe("prod", "api")
    assert facts.scheduling_strategy == "REPLICA"
    assert facts.desired_count == 2 and facts.task_definition_arn and facts.task_definition_arn.endswith("api:1")
    assert not facts.circuit_breaker_enabled and not facts.circuit_breaker_rollback
    [dep] = facts.deployments  # moto: one PRIMARY deployment with a rolloutState
    assert dep.status == "PRIMARY" and dep.id.startswith("ecs-svc/") and dep.rollout_state in ("IN_PROGRESS",
                                                                                                "COMPLETED")


def test_daemon_service_on_moto(ecs: Any) -> None:
    ecs.create_service(cluster="prod", serviceName="agent", taskDefinition="api", schedulingStrategy="DAEMON")
    assert EcsService(ecs).describe("prod", "agent").scheduling_strategy == "DAEMON"


def _service(**extra: Any) -> dict:
    return {
        "serviceArn": f"arn:aws:ecs:eu-west-1:{ACCOUNT}:service/prod/front",
        "clusterArn": f"arn:aws:ecs:eu-west-1:{ACCOUNT}:cluster/prod",
        "serviceName": "front", "status": "ACTIVE", "desiredCount": 2, "runningCount": 1,
        "taskDefinition": f"arn:aws:ecs:eu-west-1:{ACCOUNT}:task-definition/front:8",
        "schedulingStrategy": "REPLICA", **extra,
    }


def test_circuit_breaker_and_rollout_state_from_a_recorded_answer(ecs: Any) -> None:
    """moto does not keep deploymentConfiguration: a hand-written answer in the documented shape."""
    tg = f"arn:aws:elasticloadbalancing:eu-west-1:{ACCOUNT}:targetgroup/front/0123456789abcdef"
    svc = _service(
        deploymentConfiguration={"deploymentCircuitBreaker": {"enable": True, "rollback": True},
                                 "maximumPercent": 200, "minimumHealthyPercent": 100},
        deployments=[
            {"id": "ecs-svc/1111", "status": "PRIMARY", "rolloutState": "FAILED",
             "rolloutStateReason": "ECS deployment circuit breaker: tasks failed to start."},
            {"id": "ecs-svc/2222", "status": "ACTIVE", "rolloutState": "IN_PROGRESS",
             "rolloutStateReason": "ECS deployment circuit breaker: rolling back to deploymentId ecs-svc/2222."},
        ],
        loadBalancers=[{"targetGroupArn": tg, "containerName": "app", "containerPort": 80},
                       {"targetGroupArn": tg, "containerName": "app", "containerPort": 8080}],
        deploymentController={"type": "ECS"},
    )
    with Stubber(ecs) as stub:
        stub.add_response("describe_services", {"services": [svc], "failures": []})
        facts = EcsService(ecs).describe("prod", "front")
    assert facts.circuit_breaker_enabled and facts.circuit_breaker_rollback
    assert facts.deployments == (
        Deployment("ecs-svc/1111", "PRIMARY", "FAILED", "ECS deployment circuit breaker: tasks failed to start."),
        Deployment("ecs-svc/2222", "ACTIVE", "IN_PROGRESS",
                   "ECS deployment circuit breaker: rolling back to deploymentId ecs-svc/2222."))
    assert facts.target_group_arns == (tg,)
    assert facts.deployment_controller == "ECS"


def test_access_denied_is_its_own_error(ecs: Any) -> None:
    with Stubber(ecs) as stub:
        stub.add_client_error("describe_services", "AccessDeniedException", "User is not authorized")
        with pytest.raises(ServiceAccessDeniedError) as info:
            EcsService(ecs).describe("prod", "front")
    assert not isinstance(info.value, ServiceNotFoundError)
    assert "AccessDeniedException" in str(info.value)


def test_missing_service_is_not_found(ecs: Any) -> None:
    with pytest.raises(ServiceNotFoundError):
        EcsService(ecs).describe("prod", "nope")


def test_entitlement_fields_feed_entitlement_facts(ecs: Any) -> None:
    ecs.create_service(cluster="prod", serviceName="agent", taskDefinition="api", schedulingStrategy="DAEMON",
                       tags=[{"key": "ecs-guardrail:mode", "value": "alert-only"}])
    facts = EcsService(ecs).describe("prod", "agent")
    ef = EntitlementFacts("prod", "agent", **facts.entitlement_fields())
    assert ef.scheduling_strategy == "DAEMON" and ef.opted_out and ef.exists
    assert entitlement("crash_loop", ef, datetime(2025, 1, 1, tzinfo=UTC)).reason == "opted_out"
