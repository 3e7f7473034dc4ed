"""Task definitions on moto: which containers are essential, cached per ARN, unknown when unreadable."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from ecs_guardrail.adapters.taskdef import TaskDefinitions
from ecs_guardrail.core.classify import job_failed


@pytest.fixture
def ecs() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("ecs", region_name="eu-west-1")


def _register(ecs: Any, containers: list[dict]) -> str:
    defs = [{"image": "busybox", "memory": 64, **c} for c in containers]
    return ecs.register_task_definition(family="nightly", containerDefinitions=defs)["taskDefinition"][
        "taskDefinitionArn"]


def _count_calls(client: Any) -> list[dict]:
    calls: list[dict] = []
    client.meta.events.register("before-parameter-build.ecs.DescribeTaskDefinition",
                                lambda params, **_: calls.append(dict(params)))
    return calls


def test_essential_and_sidecar(ecs: Any) -> None:
    arn = _register(ecs, [{"name": "app", "essential": True}, {"name": "log-router", "essential": False}])
    assert TaskDefinitions(ecs).essential_containers(arn) == frozenset({"app"})


def test_essential_defaults_to_true(ecs: Any) -> None:
    arn = _register(ecs, [{"name": "app"}, {"name": "log-router", "essential": False}])
    assert TaskDefinitions(ecs).essential_containers(arn) == frozenset({"app"})


def test_cached_per_arn_for_the_life_of_the_object(ecs: Any) -> None:
    arn = _register(ecs, [{"name": "app", "essential": True}])
    other = _register(ecs, [{"name": "worker", "essential": True}])
    calls = _count_calls(ecs)
    td = TaskDefinitions(ecs)
    for _ in range(3):
        assert td.essential_containers(arn) == frozenset({"app"})
    assert td.essential_containers(other) == frozenset({"worker"})
    assert len(calls) == 2
    assert len(TaskDefinitions(ecs).essential_containers(arn) or ()) == 1 and len(calls) == 3  # new object


def test_unknown_task_definition_is_none_and_cached(ecs: Any) -> None:
    arn = "arn:aws:ecs:eu-west-1:123456789012:task-definition/missing:7"
    calls = _count_calls(ecs)
    td = TaskDefinitions(ecs)
    assert td.essential_containers(arn) is None
    assert td.essential_containers(arn) is None
    assert len(calls) == 1
    assert "ClientException" in (td.why_unknown(arn) or "")


def test_access_denied_is_none(ecs: Any) -> None:
    td = TaskDefinitions(ecs)
    with Stubber(ecs) as stub:
        stub.add_client_error("describe_task_definition", "AccessDeniedException", "not authorized")
        assert td.essential_containers("nightly:1") is None
        assert td.essential_containers("nightly:1") is None  # cached: no second call queued
    assert "AccessDeniedException" in (td.why_unknown("nightly:1") or "")


def test_throttling_after_retries_is_none_and_asked_again(ecs: Any) -> None:
    arn = _register(ecs, [{"name": "app", "essential": True}])
    td = TaskDefinitions(ecs)
    with Stubber(ecs) as stub:
        stub.add_client_error("describe_task_definition", "ThrottlingException", "Rate exceeded", 400)
        assert td.essential_containers(arn) is None
    assert td.essential_containers(arn) == frozenset({"app"})  # not cached: the next one reads it
    assert td.why_unknown(arn) is None


def test_sidecar_killed_job_is_not_failed_end_to_end(ecs: Any) -> None:
    arn = _register(ecs, [{"name": "app", "essential": True}, {"name": "log-router", "essential": False}])
    essential = TaskDefinitions(ecs).essential_containers(arn)
    assert job_failed((("app", 0), ("log-router", 137)), essential) == (
        False, "finished: essential container app exited 0 (log-router=137 non-essential)")
    failed, text = job_failed((("app", 0), ("log-router", 137)), TaskDefinitions(ecs).essential_containers("x:1"))
    assert failed and "essential unknown" in text
