"""Every row of ARCHITECTURE.md's stop-classification table."""

from __future__ import annotations

import copy

import pytest

from ecs_guardrail.core.classify import StopKind, classify_stop, container_cause
from ecs_guardrail.core.events import TaskDetail, parse_event
from tests.conftest import load_event

BASE = {
    "clusterArn": "arn:aws:ecs:eu-west-1:111122223333:cluster/dev",
    "taskArn": "arn:aws:ecs:eu-west-1:111122223333:task/dev/0123456789abcdef0123456789abcdef",
    "lastStatus": "STOPPED",
    "desiredStatus": "STOPPED",
    "group": "service:api",
    "version": 5,
}


def detail(**kw) -> TaskDetail:
    return TaskDetail.model_validate({**BASE, **kw})


@pytest.mark.parametrize(
    ("fields", "kind"),
    [
        ({"stopCode": "EssentialContainerExited", "containers": [{"name": "app", "exitCode": 1}]}, StopKind.CRASH),
        # exit code 0 still counts: a service can loop with exit code 0
        ({"stopCode": "EssentialContainerExited", "containers": [{"name": "app", "exitCode": 0}]}, StopKind.CRASH),
        ({"stopCode": "TaskFailedToStart", "stoppedReason": "CannotPullContainerError: pull image"}, StopKind.CRASH),
        ({"stopCode": "TaskFailedToStart", "stoppedReason": "ResourceInitializationError: unable to pull secrets"},
         StopKind.CRASH),
        ({"stopCode": "ServiceSchedulerInitiated",
          "stoppedReason": "Task failed ELB health checks in (target-group arn:aws:elasticloadbalancing:...)"},
         StopKind.HEALTH_CHECK_KILL),
        ({"stopCode": "ServiceSchedulerInitiated", "stoppedReason": "TASK FAILED CONTAINER HEALTH CHECKS"},
         StopKind.HEALTH_CHECK_KILL),
        ({"stopCode": "SpotInterruption", "stoppedReason": "Your Spot Task was interrupted."}, StopKind.SPOT),
        ({"stopCode": "TerminationNotice", "stoppedReason": "Your Spot Task was interrupted."}, StopKind.SPOT),
        ({"stoppedReason": "your spot task was interrupted."}, StopKind.SPOT),
        ({"stopCode": "ServiceSchedulerInitiated",
          "stoppedReason": "Scaling activity initiated by (deployment ecs-svc/123)"}, StopKind.SCHEDULER),
        ({"stopCode": "UserInitiated", "stoppedReason": "Task stopped by user"}, StopKind.USER),
        ({"stopCode": "TerminationNotice", "stoppedReason": "Host is being retired"}, StopKind.INFRASTRUCTURE),
        ({"stopCode": "InfrastructureHealth"}, StopKind.INFRASTRUCTURE),
        ({"stopCode": "ServiceSchedulerInitiated",
          "stoppedReason": "ECS is performing maintenance on the underlying infrastructure hosting the task"},
         StopKind.INFRASTRUCTURE),
        ({}, StopKind.UNKNOWN),
        ({"stopCode": "SomethingNewFromAWS"}, StopKind.UNKNOWN),
    ],
)
def test_classification_table(fields, kind):
    assert classify_stop(detail(**fields)).kind is kind


def test_only_crashes_count():
    assert classify_stop(detail(stopCode="EssentialContainerExited")).counts_as_crash
    for code in ("SpotInterruption", "UserInitiated", "ServiceSchedulerInitiated", "InfrastructureHealth"):
        assert not classify_stop(detail(stopCode=code)).counts_as_crash


def test_missing_exit_code_is_unknown_not_zero():
    v = classify_stop(detail(stopCode="TaskFailedToStart", containers=[{"name": "app"}]))
    assert v.exit_codes == (("app", None),)


def test_container_reason_is_consulted_case_insensitively():
    d = detail(stopCode="EssentialContainerExited", stoppedReason="Essential container in task exited",
               containers=[{"name": "app", "exitCode": 137, "reason": "outofmemoryerror: Container killed"}])
    assert container_cause(d) == "OutOfMemoryError"
    assert classify_stop(d).cause == "OutOfMemoryError"


def test_notice_without_stop_code_waits_for_the_stopped_event():
    v = classify_stop(detail(lastStatus="RUNNING", desiredStatus="STOPPED"))
    assert v.kind is StopKind.UNKNOWN and not v.final


@pytest.mark.parametrize(
    ("sample", "kind"),
    [
        ("task-fargate-stopped-essential-oom-exit137.derived", StopKind.CRASH),
        ("task-fargate-stopped-taskfailedtostart-cannotpullcontainer.derived", StopKind.CRASH),
        ("task-fargate-stopped-taskfailedtostart-resourceinitialization.derived", StopKind.CRASH),
        ("task-fargate-stopped-elb-healthcheck-servicescheduler-exit143", StopKind.HEALTH_CHECK_KILL),
        ("task-fargate-stopped-deployment-scalein-servicescheduler-exit137", StopKind.SCHEDULER),
        ("task-fargate-spot-stopped-spotinterruption.derived", StopKind.SPOT),
    ],
)
def test_real_samples(sample, kind):
    assert classify_stop(parse_event(load_event(sample)).detail).kind is kind


def test_classification_does_not_mutate_input():
    raw = load_event("task-fargate-stopped-essential-oom-exit137.derived")
    before = copy.deepcopy(raw)
    classify_stop(parse_event(raw).detail)
    assert raw == before
