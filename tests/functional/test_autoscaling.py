"""Application Auto Scaling on moto: suspend before the scale to 0, put the previous state back on restore."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber
from moto import mock_aws

from ecs_guardrail.adapters.autoscaling import SCALABLE_DIMENSION, ScalableTargets, resource_id
from ecs_guardrail.adapters.ecs import EcsService
from ecs_guardrail.adapters.history import HistoryStore
from ecs_guardrail.adapters.store.memory import MemoryTable
from ecs_guardrail.app.restore import restore
from ecs_guardrail.core.clusters import parse_alert_only_clusters
from ecs_guardrail.core.entitlement import ScalableTargetFacts, SuspendedState
from ecs_guardrail.core.errors import AlertOnlyClusterError, RestoreError, ScalingSuspendError
from ecs_guardrail.core.records import Action, Reason
from ecs_guardrail.core.structs import replace
from ecs_guardrail.core.summary import ActionStatus, AlertStatus, Episode

REGION = "eu-west-1"
RID = "service/prod/api"
PARTIAL = {"DynamicScalingInSuspended": True, "DynamicScalingOutSuspended": False, "ScheduledScalingSuspended": False}

ACTS_EVERYWHERE = parse_alert_only_clusters("none")


@dataclass
class Aws:
    ecs: Any
    aas: Any


@pytest.fixture
def aws() -> Iterator[Aws]:
    with mock_aws():
        ecs = boto3.client("ecs", region_name=REGION)
        aas = boto3.client("application-autoscaling", region_name=REGION)
        ecs.create_cluster(clusterName="prod")
        ecs.register_task_definition(family="api", containerDefinitions=[
            {"name": "app", "image": "nginx", "memory": 128, "essential": True}])
        for name in ("api", "plain"):
            ecs.create_service(cluster="prod", serviceName=name, taskDefinition="api", desiredCount=2)
        aas.register_scalable_target(ServiceNamespace="ecs", ResourceId=RID, ScalableDimension=SCALABLE_DIMENSION,
                                     MinCapacity=2, MaxCapacity=6, SuspendedState=PARTIAL)
        yield Aws(ecs, aas)


def _state(aas: Any, rid: str = RID) -> dict:
    [target] = aas.describe_scalable_targets(ServiceNamespace="ecs", ResourceIds=[rid])["ScalableTargets"]
    return target["SuspendedState"]


def test_describe_reads_capacity_and_suspended_state(aws: Aws) -> None:
    facts = ScalableTargets(aws.aas, alert_only=ACTS_EVERYWHERE).describe("prod", "api")
    assert facts == ScalableTargetFacts(RID, 2, 6, SuspendedState(True, False, False))


def test_describe_accepts_a_cluster_arn(aws: Aws) -> None:
    arn = aws.ecs.describe_clusters(clusters=["prod"])["clusters"][0]["clusterArn"]
    assert resource_id(arn, "api") == RID
    assert ScalableTargets(aws.aas, alert_only=ACTS_EVERYWHERE).describe(arn, "api") is not None


def test_service_without_scalable_target_is_none(aws: Aws) -> None:
    assert ScalableTargets(aws.aas, alert_only=ACTS_EVERYWHERE).describe("prod", "plain") is None


def test_suspend_then_restore_on_moto(aws: Aws) -> None:
    targets = ScalableTargets(aws.aas, alert_only=ACTS_EVERYWHERE)
    facts = targets.describe("prod", "api")
    assert facts is not None
    registers = _count_registers(aws.aas)
    previous = targets.suspend(facts)
    assert previous == SuspendedState(True, False, False)
    assert len(registers) == 1 and set(registers[0]) == {
        "ServiceNamespace", "ResourceId", "ScalableDimension", "SuspendedState"}
    assert _state(aws.aas) == {"DynamicScalingInSuspended": True, "DynamicScalingOutSuspended": True,
                               "ScheduledScalingSuspended": True}
    # capacities are untouched: only SuspendedState was sent
    [target] = aws.aas.describe_scalable_targets(ServiceNamespace="ecs", ResourceIds=[RID])["ScalableTargets"]
    assert (target["MinCapacity"], target["MaxCapacity"]) == (2, 6)
    assert targets.restore_suspended("prod", "api", previous) is True
    assert _state(aws.aas) == PARTIAL
    assert len(registers) == 2
    # restore again: already there, no RegisterScalableTarget call
    assert targets.restore_suspended("prod", "api", previous.to_api()) is False
    assert len(registers) == 2


def _count_registers(aas: Any) -> list[dict]:
    calls: list[dict] = []
    aas.meta.events.register("before-parameter-build.application-auto-scaling.RegisterScalableTarget",
                             lambda params, **_: calls.append(dict(params)))
    return calls


def test_suspend_is_idempotent_when_already_suspended(aws: Aws) -> None:
    facts = ScalableTargetFacts(RID, 2, 6, SuspendedState(True, True, True))
    with Stubber(aws.aas) as stub:  # no response queued: any call would fail
        assert ScalableTargets(aws.aas, alert_only=ACTS_EVERYWHERE).suspend(facts) == SuspendedState(True, True, True)
        stub.assert_no_pending_responses()


def test_failed_suspension_raises_with_the_reason(aws: Aws) -> None:
    facts = ScalableTargets(aws.aas, alert_only=ACTS_EVERYWHERE).describe("prod", "api")
    assert facts is not None
    with Stubber(aws.aas) as stub:
        stub.add_client_error("register_scalable_target", "AccessDeniedException",
                              "not authorized to perform: application-autoscaling:RegisterScalableTarget")
        with pytest.raises(ScalingSuspendError) as info:
            ScalableTargets(aws.aas, alert_only=ACTS_EVERYWHERE).suspend(facts)
    assert "AccessDeniedException" in info.value.reason and RID in info.value.reason
    assert _state(aws.aas) == PARTIAL


def test_failed_suspension_leaves_desired_count_untouched(aws: Aws) -> None:
    """The caller's order (rule 6): suspend, and only if it worked, scale to 0."""
    ecs = EcsService(aws.ecs)
    targets = ScalableTargets(aws.aas, alert_only=ACTS_EVERYWHERE)
    facts = ecs.describe("prod", "api")
    target = targets.describe("prod", "api")
    assert target is not None
    with Stubber(aws.aas) as stub:
        stub.add_client_error("register_scalable_target", "ThrottlingException", "Rate exceeded", 400)
        try:
            targets.suspend(target)
        except ScalingSuspendError:
            pass
        else:
            ecs.scale_to_zero(facts, facts.desired_count)
    assert ecs.describe("prod", "api").desired_count == 2


def test_describe_access_denied_is_a_suspend_error(aws: Aws) -> None:
    with Stubber(aws.aas) as stub:
        stub.add_client_error("describe_scalable_targets", "AccessDeniedException", "no")
        with pytest.raises(ScalingSuspendError):
            ScalableTargets(aws.aas, alert_only=ACTS_EVERYWHERE).describe("prod", "api")


def test_describe_other_errors_propagate(aws: Aws) -> None:
    with Stubber(aws.aas) as stub:
        stub.add_client_error("describe_scalable_targets", "InternalServiceException", "boom", 500)
        with pytest.raises(ClientError):
            ScalableTargets(aws.aas, alert_only=ACTS_EVERYWHERE).describe("prod", "api")


def test_restore_when_target_was_deregistered_changes_nothing(aws: Aws) -> None:
    aws.aas.deregister_scalable_target(ServiceNamespace="ecs", ResourceId=RID, ScalableDimension=SCALABLE_DIMENSION)
    targets = ScalableTargets(aws.aas, alert_only=ACTS_EVERYWHERE)
    assert targets.restore_suspended("prod", "api", SuspendedState()) is False


# --- restore: the count, then the scalable target ---------------------------------------------------------

def _History() -> HistoryStore:  # noqa: N802 - reads like the stand-in it replaced
    """A history store (in memory) whose prod/api episode scaled the service from 2 to 0."""
    store = HistoryStore.on(MemoryTable())
    t = datetime(2025, 8, 21, 10, 0, tzinfo=UTC)
    ep = Episode(decision_time=t, last_failure=t, action=Action.SCALE_TO_ZERO, reason=Reason.CRASH_LOOP,
                 trigger="crash_loop", action_status=ActionStatus.DONE, alert_status=AlertStatus.SENT,
                 previous_desired_count=2)
    current = store.state.load("prod", "api")
    store.state.save("prod", current, replace(current, episode=ep))
    return store


def test_restore_puts_back_count_and_suspended_state(aws: Aws) -> None:
    ecs, targets = EcsService(aws.ecs), ScalableTargets(aws.aas, alert_only=ACTS_EVERYWHERE)
    target = targets.describe("prod", "api")
    assert target is not None
    previous = targets.suspend(target)
    ecs.scale_to_zero(ecs.describe("prod", "api"), 2)
    assert ecs.describe("prod", "api").desired_count == 0

    out = restore(_History(), ecs, "prod", "api", scaling=targets, previous_suspended=previous.to_api())
    assert out.changed and out.scaling_restored and out.desired_count == 2
    assert "suspended state put back" in out.message
    assert ecs.describe("prod", "api").desired_count == 2
    assert _state(aws.aas) == PARTIAL
    again = restore(_History(), ecs, "prod", "api", scaling=targets, previous_suspended=previous.to_api())
    assert not again.changed and not again.scaling_restored


def test_restore_without_recorded_state_leaves_the_target_alone(aws: Aws) -> None:
    ecs, targets = EcsService(aws.ecs), ScalableTargets(aws.aas, alert_only=ACTS_EVERYWHERE)
    target = targets.describe("prod", "api")
    assert target is not None
    targets.suspend(target)
    ecs.scale_to_zero(ecs.describe("prod", "api"), 2)
    out = restore(_History(), ecs, "prod", "api", scaling=targets)
    assert out.changed and not out.scaling_restored
    assert _state(aws.aas)["ScheduledScalingSuspended"] is True


def test_restore_reports_a_failed_resume(aws: Aws) -> None:
    ecs, targets = EcsService(aws.ecs), ScalableTargets(aws.aas, alert_only=ACTS_EVERYWHERE)
    ecs.scale_to_zero(ecs.describe("prod", "api"), 2)
    with Stubber(aws.aas) as stub:
        stub.add_client_error("describe_scalable_targets", "ThrottlingException", "slow down", 400)
        with pytest.raises(RestoreError, match="could not be resumed"):
            restore(_History(), ecs, "prod", "api", scaling=targets, previous_suspended=PARTIAL)
    assert ecs.describe("prod", "api").desired_count == 2  # the count came back first


# --- alert-only clusters: refused in the code, before the call (IAM cannot name the target) -------------


@pytest.mark.parametrize("alert_only", ["prod", "PROD", "pr?d", "p*", f"arn:aws:ecs:{REGION}:123456789012:cluster/prod",
                                        ""])
def test_no_scalable_target_write_for_an_alert_only_cluster(aws: Aws, alert_only: str) -> None:
    """Item 7: RegisterScalableTarget can set MaxCapacity to 0 on any target of the account. For an
    alert-only cluster the adapter refuses before calling: the Stubber has no response queued, so any
    call would fail the test with UnStubbedResponseError instead of AlertOnlyClusterError."""
    scope = parse_alert_only_clusters(alert_only)
    targets = ScalableTargets(aws.aas, alert_only=scope)
    target = targets.describe("prod", "api")
    assert target is not None
    with Stubber(aws.aas) as stub:
        with pytest.raises(AlertOnlyClusterError, match="service/prod/api: cluster prod is alert-only"):
            targets.suspend(target)
        stub.assert_no_pending_responses()
    assert issubclass(AlertOnlyClusterError, ScalingSuspendError)  # the watchdog alerts, never scales
    with Stubber(aws.aas) as stub:  # restore_suspended reads first, then is refused before writing
        stub.add_response("describe_scalable_targets", {"ScalableTargets": [{
            "ServiceNamespace": "ecs", "ResourceId": RID, "ScalableDimension": SCALABLE_DIMENSION,
            "MinCapacity": 2, "MaxCapacity": 6, "RoleARN": "arn:aws:iam::123456789012:role/x",
            "CreationTime": datetime(2025, 1, 1, tzinfo=UTC), "SuspendedState": PARTIAL}]})
        with pytest.raises(AlertOnlyClusterError):
            targets.restore_suspended("prod", "api", SuspendedState(True, True, True))
    assert _state(aws.aas) == PARTIAL


def test_other_clusters_are_still_suspended(aws: Aws) -> None:
    targets = ScalableTargets(aws.aas, alert_only=parse_alert_only_clusters("production,prod-*"))
    target = targets.describe("prod", "api")
    assert target is not None
    assert targets.suspend(target) == SuspendedState.from_api(PARTIAL)
    assert _state(aws.aas) == {k: True for k in PARTIAL}


def test_restore_refuses_to_resume_an_alert_only_clusters_target(aws: Aws) -> None:
    """restore puts the count back, but does not touch the scalable target of a cluster that is now
    alert-only: it says so and exits non-zero (RestoreError) instead of calling."""
    ecs = EcsService(aws.ecs)
    ecs.scale_to_zero(ecs.describe("prod", "api"), 2)
    targets = ScalableTargets(aws.aas, alert_only=parse_alert_only_clusters("prod"))
    with pytest.raises(RestoreError, match="cluster prod is alert-only"):
        restore(_History(), ecs, "prod", "api", scaling=targets, previous_suspended={k: False for k in PARTIAL})
    assert _state(aws.aas) == PARTIAL


# --- restore when the table lost the episode: the tag is bounded (item 8) --------------------------------


def _forged(aws: Aws, service: str, value: str) -> EcsService:
    """The service at 0 with a previous-desired-count tag of ``value``; the table knows nothing."""
    ecs = EcsService(aws.ecs)
    facts = ecs.describe("prod", service)
    aws.ecs.update_service(cluster="prod", service=service, desiredCount=0)
    aws.ecs.tag_resource(resourceArn=facts.arn,
                         tags=[{"key": "ecs-guardrail:previous-desired-count", "value": value}])
    return ecs


def test_a_forged_tag_above_max_capacity_is_not_trusted(aws: Aws) -> None:
    ecs = _forged(aws, "api", "5000")
    targets = ScalableTargets(aws.aas, alert_only=ACTS_EVERYWHERE)
    with pytest.raises(RestoreError, match="says 5000, above the scalable target's MaxCapacity 6"):
        restore(HistoryStore.on(MemoryTable()), ecs, "prod", "api", scaling=targets)
    assert ecs.describe("prod", "api").desired_count == 0
    out = restore(HistoryStore.on(MemoryTable()), ecs, "prod", "api", scaling=targets, count=4)
    assert out.desired_count == 4 and "--count (the operator's word; tag '5000')" in out.message


def test_a_tag_within_max_capacity_is_restored_and_the_message_says_why(aws: Aws) -> None:
    ecs = _forged(aws, "api", "5")
    out = restore(HistoryStore.on(MemoryTable()), ecs, "prod", "api",
                  scaling=ScalableTargets(aws.aas, alert_only=ACTS_EVERYWHERE))
    assert out.changed and ecs.describe("prod", "api").desired_count == 5
    assert "trusted within the scalable target's MaxCapacity 6" in out.message


def test_without_a_scalable_target_the_tag_is_bounded_by_the_recorded_history(aws: Aws) -> None:
    ecs = _forged(aws, "plain", "5000")
    history = HistoryStore.on(MemoryTable())
    targets = ScalableTargets(aws.aas, alert_only=ACTS_EVERYWHERE)
    with pytest.raises(RestoreError, match="recorded no desired count for it"):
        restore(history, ecs, "prod", "plain", scaling=targets)
    # an earlier decision of the service recorded a previous count of 3: still below 5000
    t = datetime(2025, 8, 20, 9, 0, tzinfo=UTC)
    history.port.put({"pk": "SVC#prod#plain", "sk": "DEC#2025-08-20T09:00:00Z",
                      "decision": json.dumps({"time": t.isoformat(), "previous_desired_count": 3})})
    with pytest.raises(RestoreError, match="highest desired count recorded for it is 3"):
        restore(history, ecs, "prod", "plain", scaling=targets)
    assert ecs.describe("prod", "plain").desired_count == 0
    assert restore(history, ecs, "prod", "plain", scaling=targets, count=2).desired_count == 2


@pytest.mark.parametrize("value", ["0", "1", "5"])
def test_a_tag_never_moves_a_running_service_the_watchdog_did_not_scale_down(aws: Aws, value: str) -> None:
    """break-it: a stale or forged tag on a service at 2 that the table knows nothing about set its count
    (tag 0 scaled a running service to 0); restore undoes scale-downs, so it changes nothing here."""
    from ecs_guardrail.core.errors import NothingToRestoreError

    ecs = EcsService(aws.ecs)
    facts = ecs.describe("prod", "api")
    running = facts.desired_count
    assert running > 0
    aws.ecs.tag_resource(resourceArn=facts.arn,
                         tags=[{"key": "ecs-guardrail:previous-desired-count", "value": value}])
    with pytest.raises(NothingToRestoreError, match="runs with desired count") as exc:
        restore(HistoryStore.on(MemoryTable()), ecs, "prod", "api",
                scaling=ScalableTargets(aws.aas, alert_only=ACTS_EVERYWHERE))
    assert exc.value.desired_count == running
    assert ecs.describe("prod", "api").desired_count == running
    # the operator's --count is still their word
    out = restore(HistoryStore.on(MemoryTable()), ecs, "prod", "api",
                  scaling=ScalableTargets(aws.aas, alert_only=ACTS_EVERYWHERE), count=4)
    assert out.desired_count == 4
