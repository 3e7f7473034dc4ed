"""Round 10's recorder speed-ups keep what they replaced (issue 33 item 2): the task event keys made in one
call are the keys the general functions spell, a check the event models skip for a value it accepted still
rejects any other value, and the stop classification reads the same reasons and codes as before."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from ecs_guardrail.adapters.store import keys
from ecs_guardrail.adapters.store.event_log import EventLog
from ecs_guardrail.adapters.store.memory import MemoryTable
from ecs_guardrail.core.classify import StopKind, classify_stop, container_cause
from ecs_guardrail.core.errors import EventRejectedError
from ecs_guardrail.core.events import Container, TaskDetail, parse_event
from ecs_guardrail.core.links import resource_name
from ecs_guardrail.core.records import iso
from ecs_guardrail.validation.fields import Model, remembering

ARN = "arn:aws:ecs:eu-west-1:111122223333:task/prod/0123456789abcdef0123456789abcdef"
OLD_ARN = "arn:aws:ecs:eu-west-1:111122223333:task/0123456789abcdef0123456789abcdef"


@pytest.mark.parametrize("version", [None, 0, 6, 63, 64, 9_999_999_999])
@pytest.mark.parametrize("arn", [ARN, OLD_ARN])
@pytest.mark.parametrize("t", [datetime(2025, 8, 21, 12, 0, tzinfo=UTC), datetime(2025, 8, 21, 23, 59, 59, 5000,
                                                                                     tzinfo=UTC)])
def test_task_event_keys_are_the_general_functions_keys(version, arn, t):
    pk, sk = keys.task_event(arn, version, "e-1")
    sort = keys.timeline_sort(t, "task", resource_name(arn), sk)
    assert keys.task_event_keys(arn, version, "e-1", "prod", iso(t)) == (
        pk, sk, keys.timeline_partition("prod", t, sort), sort)
    log = EventLog(MemoryTable("h", "eu-west-1"))
    assert log.task_keys(arn, version, "e-1", "prod", t)[:4] == (pk, sk, keys.timeline_partition("prod", t, sort),
                                                                  sort)


def test_a_remembered_check_is_skipped_only_for_the_values_it_accepted():
    seen: set[str] = set()
    calls: list[str] = []

    def check(value: str) -> str:
        calls.append(value)
        if value.startswith("bad"):
            raise ValueError(f"{value} is bad")
        seen.add(value)
        return value

    class Thing(Model, kw_only=True):
        CHECKS = {"name": remembering(check, seen)}  # noqa: RUF012 - a Model's class table
        name: str

    assert Thing.validate({"name": "good"}).name == "good" and calls == ["good"]
    assert Thing.validate({"name": "good"}).name == "good" and calls == ["good"]  # accepted before: no call
    for _ in range(2):
        with pytest.raises(ValueError, match="bad-1 is bad"):
            Thing.validate({"name": "bad-1"})  # never accepted: checked, rejected every time
    assert calls.count("good") == 1 and calls.count("bad-1") >= 2 and "bad-1" not in seen


def test_a_cluster_or_group_seen_before_does_not_let_a_bad_one_through():
    event = {"version": "0", "id": "e-1", "detail-type": "ECS Task State Change", "source": "aws.ecs",
             "account": "111122223333", "time": "2025-08-21T12:00:00Z", "region": "eu-west-1", "resources": [],
             "detail": {"clusterArn": "arn:aws:ecs:eu-west-1:111122223333:cluster/prod", "taskArn": ARN,
                        "lastStatus": "RUNNING", "group": "service:api"}}
    assert parse_event(event).detail.service == "api"  # type: ignore[union-attr]
    bad_group = {**event, "detail": {**event["detail"], "group": "service:api/../x"}}
    with pytest.raises(EventRejectedError, match="is not an ECS name"):
        parse_event(bad_group)
    bad_cluster = {**event, "detail": {**event["detail"], "clusterArn": "arn:aws:ecs:eu-west-1:1:cluster/prod"}}
    with pytest.raises(EventRejectedError, match="not an ECS cluster ARN"):
        parse_event(bad_cluster)


def _detail(code: str | None, reason: str | None, *, capacity: str | None = None,
            container_reason: str | None = None) -> TaskDetail:
    return TaskDetail(cluster_arn="arn:aws:ecs:eu-west-1:111122223333:cluster/prod", task_arn=ARN,
                      last_status="STOPPED", stop_code=code, stopped_reason=reason, capacity_provider_name=capacity,
                      containers=[Container(name="app", exit_code=137, reason=container_reason)])


@pytest.mark.parametrize(("code", "reason", "capacity", "kind"), [
    ("SpotInterruption", None, None, StopKind.SPOT),
    (" SpotInterruption ", None, None, StopKind.SPOT),  # ASCII padding trimmed, as _classify trims the code (hostile10)
    ("TerminationNotice", None, "FARGATE_SPOT", StopKind.SPOT),
    ("TerminationNotice", None, "FARGATE", StopKind.INFRASTRUCTURE),
    ("UserInitiated", "  Your Spot Task was interrupted.", None, StopKind.SPOT),
    ("ServiceSchedulerInitiated", "Task failed ELB health checks in (target-group x)", None,
     StopKind.HEALTH_CHECK_KILL),
    ("ServiceSchedulerInitiated", "Host EC2 (instance i-1) is being retired", None, StopKind.INFRASTRUCTURE),
    ("ServiceSchedulerInitiated", "Scaling activity initiated by (deployment ecs-svc/1)", None, StopKind.SCHEDULER),
    ("EssentialContainerExited", "ECS is performing maintenance", None, StopKind.INFRASTRUCTURE),
    (None, "Essential container in task exited", None, StopKind.CRASH),
    (None, "Tas\u212a failed to start", None, StopKind.UNKNOWN),  # a Kelvin sign is no ASCII k
])
def test_stop_classification_reads_reasons_and_codes_as_before(code, reason, capacity, kind):
    assert classify_stop(_detail(code, reason, capacity=capacity)).kind is kind


@pytest.mark.parametrize(("container_reason", "reason", "cause"), [
    ("OutOfMemoryError: Container killed", None, "OutOfMemoryError"),
    ("pull failed: CannotPullContainerError x", None, "CannotPullContainerError"),
    ("nothing here", "  resourceinitializationerror: secrets", "ResourceInitializationError"),
    ("an error of no known kind", "an exception of none", None),
    (None, "x" * 200 + " InternalError", None),  # past the first 200 characters
    (None, None, None),
])
def test_container_cause_is_the_first_named_error(container_reason, reason, cause):
    assert container_cause(_detail("EssentialContainerExited", reason, container_reason=container_reason)) == cause
