"""Every row of ARCHITECTURE.md's stop-classification table."""

from __future__ import annotations

import copy

import pytest

from ecs_guardrail.core.classify import (
    COUNTS_AS_FAILURE,
    StopKind,
    classify_stop,
    container_cause,
    job_failed,
    settle,
)
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
    return TaskDetail.validate({**BASE, **kw})


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


# --- TerminationNotice is never a crash; the first final verdict stands --------------------------------

@pytest.mark.parametrize("provider", [None, "FARGATE", "my-ec2-provider", "FARGATE_SPOT"])
def test_termination_notice_is_never_a_crash(provider):
    fields = {"stopCode": "TerminationNotice", "lastStatus": "RUNNING"}
    if provider:
        fields["capacityProviderName"] = provider
    v = classify_stop(detail(**fields))
    assert v.final and not v.counts_as_crash and not v.kind.counts_as_failure


def test_termination_notice_then_sigterm_exit_stays_a_notice():
    """The notice (no Spot provider), then STOPPED with EssentialContainerExited and exit 143: not a crash."""
    notice = classify_stop(detail(stopCode="TerminationNotice", lastStatus="RUNNING", capacityProviderName="FARGATE",
                                  containers=[{"name": "app"}]))
    stopped = classify_stop(detail(stopCode="EssentialContainerExited", capacityProviderName="FARGATE",
                                   containers=[{"name": "app", "exitCode": 143}]))
    assert stopped.kind is StopKind.CRASH  # on its own the STOPPED event reads as a crash...
    v = settle(notice, stopped)
    assert v.kind is StopKind.INFRASTRUCTURE and not v.counts_as_crash  # ...the notice's verdict stands
    assert v.exit_codes == (("app", 143),)  # with the exit codes only the STOPPED event knows


def test_settle_first_final_verdict_stands_and_non_final_is_replaced():
    crash = classify_stop(detail(stopCode="EssentialContainerExited", containers=[{"name": "app", "exitCode": 1}]))
    spot = classify_stop(detail(stopCode="SpotInterruption", lastStatus="RUNNING"))
    pending = classify_stop(detail(lastStatus="RUNNING", desiredStatus="STOPPED"))
    assert settle(None, crash) is crash
    assert settle(pending, crash) is crash
    assert settle(crash, spot).kind is StopKind.CRASH
    assert settle(spot, crash).kind is StopKind.SPOT


def test_counts_as_failure_property_and_alias():
    assert {k for k in StopKind if k.counts_as_failure} == {StopKind.CRASH, StopKind.HEALTH_CHECK_KILL}
    assert frozenset({StopKind.CRASH, StopKind.HEALTH_CHECK_KILL}) == COUNTS_AS_FAILURE


# --- standalone jobs: essential containers decide ------------------------------------------------------

def test_job_sidecar_killed_while_essential_exits_zero_is_not_a_failure():
    failed, text = job_failed((("app", 0), ("log-router", 137)), frozenset({"app"}))
    assert not failed
    assert "app exited 0" in text and "log-router=137" in text


def test_job_essential_non_zero_fails():
    failed, text = job_failed({"app": 1, "log-router": 137}, frozenset({"app"}))
    assert failed and "app exited 1" in text


def test_job_essential_exit_unknown_fails():
    failed, text = job_failed((("app", None),), frozenset({"app"}))
    assert failed and "unknown" in text


def test_job_essential_missing_from_event_fails():
    failed, text = job_failed((("log-router", 0),), frozenset({"app"}))
    assert failed and "app missing" in text


def test_job_essential_unknown_any_non_zero_fails_and_says_so():
    failed, text = job_failed((("app", 0), ("log-router", 137)), None)
    assert failed
    assert "essential unknown" in text and "app=0" in text and "log-router=137" in text


def test_job_essential_unknown_all_zero_finished():
    failed, text = job_failed((("app", 0), ("log-router", 0)), None)
    assert not failed and "essential unknown" in text


def test_job_essential_unknown_unknown_exit_fails():
    failed, text = job_failed((("app", None),), None)
    assert failed and "app=unknown" in text


def test_job_empty_essential_set_is_unknown():
    assert job_failed((("app", 0), ("side", 2)), frozenset())[0]


def test_the_same_detail_classified_twice_is_classified_once_and_another_anew():
    """The recorder and (in a replay) the watchdog ask about the same parsed detail: one verdict, shared;
    a different detail (even an equal one) is classified on its own."""
    first = detail(stopCode="EssentialContainerExited", containers=[{"name": "app", "exitCode": 1}])
    v = classify_stop(first)
    assert classify_stop(first) is v
    other = detail(stopCode="SpotInterruption", lastStatus="RUNNING")
    assert classify_stop(other).kind is StopKind.SPOT
    assert classify_stop(first) == v and classify_stop(first).kind is StopKind.CRASH


def test_a_detail_changed_after_its_classification_is_classified_anew():
    """The last verdict was kept by the detail's identity; the event models are mutable Structs, so a caller
    that changed the detail (its stop code, its reason, a container's exit code or reason, a container
    added) got the verdict of what it was. The cache is keyed by the values the verdict reads."""
    d = detail(stopCode="EssentialContainerExited", containers=[{"name": "app", "exitCode": 1}])
    assert classify_stop(d).kind is StopKind.CRASH
    d.stop_code = "SpotInterruption"
    assert classify_stop(d).kind is StopKind.SPOT
    d.stop_code = "EssentialContainerExited"
    assert classify_stop(d).exit_codes == (("app", 1),)
    d.containers[0].exit_code = 137
    assert classify_stop(d).exit_codes == (("app", 137),)
    d.containers[0].reason = "OutOfMemoryError: Container killed due to memory usage"
    assert classify_stop(d).cause == "OutOfMemoryError"
    d.containers.append(d.containers[0].__copy__())
    assert len(classify_stop(d).exit_codes) == 2
    d.stopped_reason = "Task failed ELB health checks in (target-group arn:aws:elasticloadbalancing:...)"
    d.stop_code = "ServiceSchedulerInitiated"
    assert classify_stop(d).kind is StopKind.HEALTH_CHECK_KILL
    d.stop_code, d.stopped_reason, d.last_status = None, "Essential container in task exited", "STOPPED"
    assert classify_stop(d).kind is StopKind.CRASH
    d.last_status = "DEPROVISIONING"
    assert classify_stop(d).kind is StopKind.UNKNOWN and not classify_stop(d).final
    d.stop_code, d.capacity_provider_name = "TerminationNotice", "FARGATE_SPOT"
    assert classify_stop(d).kind is StopKind.SPOT
    d.capacity_provider_name = "FARGATE"
    assert classify_stop(d).kind is StopKind.INFRASTRUCTURE


def test_a_new_detail_equal_to_the_last_gets_its_verdict_and_a_different_one_its_own():
    first = detail(stopCode="EssentialContainerExited", containers=[{"name": "app", "exitCode": 1}])
    v = classify_stop(first)
    assert classify_stop(copy.deepcopy(first)) == v
    assert classify_stop(detail(stopCode="UserInitiated", containers=[{"name": "app", "exitCode": 1}])).kind \
        is StopKind.USER
