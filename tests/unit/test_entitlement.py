"""Rule 4 of ARCHITECTURE.md ("Entitlement"): one test per rule, and the ordering conflicts."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ecs_guardrail.core.entitlement import (
    RULES,
    Deployment,
    DeploymentEvent,
    DeploymentState,
    EntitlementFacts,
    EntitlementReason,
    ScalableTargetFacts,
    ServingSample,
    SuspendedState,
    deployment_event,
    deployment_status,
    entitlement,
    serving_evidence,
)
from ecs_guardrail.core.events import parse_event
from ecs_guardrail.core.structs import replace
from tests.conftest import load_event

T = datetime(2025, 8, 21, 9, 9, 30, tzinfo=UTC)
NEW = "ecs-svc/1111111111111111111"
OLD = "ecs-svc/2222222222222222222"
ROLLBACK_REASON = f"ECS deployment circuit breaker: rolling back to deploymentId {OLD}"

BASE = EntitlementFacts(cluster="staging", service="front")


def facts(**kw) -> EntitlementFacts:
    return replace(BASE, **kw)


def ev(minutes: float, name: str, dep: str | None = NEW, reason: str | None = None) -> DeploymentEvent:
    return DeploymentEvent(T + timedelta(minutes=minutes), f"SERVICE_DEPLOYMENT_{name}", dep, reason)


def sample(tg: str, minutes_ago: float, count: float | None) -> ServingSample:
    minute = (T - timedelta(minutes=minutes_ago)).replace(second=0, microsecond=0)
    return ServingSample(tg, minute, count)


def reason_of(f: EntitlementFacts, trigger: str = "crash_loop") -> EntitlementReason:
    return entitlement(trigger, f, T).reason


CB = {"circuit_breaker_enabled": True, "circuit_breaker_rollback": True}


# --- each rule on its own ------------------------------------------------------------------------------

def test_nothing_forbids_it_entitled_crash_loop() -> None:
    v = entitlement("crash_loop", BASE, T)
    assert v.entitled and v.reason == "crash_loop"
    assert "staging/front" in v.message
    json.dumps(v.evidence)


def test_impaired_trigger_is_entitled_like_a_crash_loop() -> None:
    assert entitlement("impaired", BASE, T).entitled


def test_health_check_kills() -> None:
    v = entitlement("health_check_kills", BASE, T)
    assert not v.entitled and v.reason == "health_check_kills"


def test_alert_only_cluster_by_setting() -> None:
    v = entitlement("crash_loop", facts(alert_only_cluster=True, alert_only_patterns=("prod*",)), T)
    assert v.reason == "alert_only_cluster" and "ALERT_ONLY_CLUSTERS (prod*)" in v.message


def test_alert_only_cluster_elsewhere_says_where() -> None:
    v = entitlement("crash_loop", facts(elsewhere="account 444455556666, region us-east-1"), T)
    assert v.reason == "alert_only_cluster"
    assert "444455556666" in v.message and v.evidence["elsewhere"].startswith("account")


def test_opted_out() -> None:
    assert reason_of(facts(opted_out=True)) == "opted_out"


def test_service_not_found() -> None:
    v = entitlement("crash_loop", facts(exists=False), T)
    assert v.reason == "service_not_found" and not v.entitled


def test_access_denied_is_not_reported_as_missing() -> None:
    v = entitlement("crash_loop", facts(access_denied=True), T)
    assert v.reason == "service_not_found"  # the fixed vocabulary; the words say what happened
    assert "AccessDenied" in v.message and "not an ACTIVE service" not in v.message
    assert v.evidence == {"ecs_error": "AccessDeniedException"}


def test_daemon_service() -> None:
    assert reason_of(facts(scheduling_strategy="DAEMON")) == "daemon_service"
    assert reason_of(facts(scheduling_strategy="REPLICA")) == "crash_loop"


def test_deployment_in_progress_from_event() -> None:
    v = entitlement("crash_loop", facts(**CB, deployment_events=(ev(-4, "IN_PROGRESS"),)), T)
    assert v.reason == "deployment_in_progress"
    assert v.evidence["deployment_id"] == NEW and v.evidence["event_name"] == "SERVICE_DEPLOYMENT_IN_PROGRESS"
    assert v.evidence["source"] == "event" and v.evidence["time"] == "2025-08-21T09:05:30Z"
    assert NEW in v.message
    json.dumps(v.evidence)


def test_deployment_without_circuit_breaker_is_not_protected() -> None:
    f = facts(deployment_events=(ev(-4, "IN_PROGRESS"),))
    assert reason_of(f) == "crash_loop"


def test_still_serving() -> None:
    v = entitlement("crash_loop", facts(serving=(sample("front-stg", 1, 1.0),)), T)
    assert v.reason == "still_serving"
    assert v.evidence["target_group"] == "front-stg" and v.evidence["healthy_host_count"] == 1.0
    assert v.evidence["minute"] == "2025-08-21T09:08:00Z"
    assert "front-stg" in v.message and "1 healthy host" in v.message
    json.dumps(v.evidence)


def test_dry_run() -> None:
    v = entitlement("crash_loop", facts(dry_run=True), T)
    assert v.reason == "dry_run" and not v.entitled


def test_entitled_verdict_names_the_scalable_target() -> None:
    st = ScalableTargetFacts("service/staging/front", 2, 6, SuspendedState())
    v = entitlement("crash_loop", facts(scalable_target=st), T)
    assert v.entitled and v.evidence["scalable_target"]["resource_id"] == "service/staging/front"
    assert v.evidence["scalable_target"]["suspended_state"] == {
        "DynamicScalingInSuspended": False, "DynamicScalingOutSuspended": False, "ScheduledScalingSuspended": False}


# --- ordering conflicts: the first rule wins ----------------------------------------------------------

def _everything() -> EntitlementFacts:
    return facts(alert_only_cluster=True, opted_out=True, exists=False, scheduling_strategy="DAEMON", **CB,
                 deployment_events=(ev(-1, "IN_PROGRESS"),), serving=(sample("tg", 0, 2),), dry_run=True)


@pytest.mark.parametrize(
    ("drop", "expected"),
    [
        ({}, "alert_only_cluster"),
        ({"alert_only_cluster": False}, "opted_out"),
        ({"alert_only_cluster": False, "opted_out": False}, "service_not_found"),
        ({"alert_only_cluster": False, "opted_out": False, "exists": True}, "daemon_service"),
        ({"alert_only_cluster": False, "opted_out": False, "exists": True, "scheduling_strategy": "REPLICA"},
         "deployment_in_progress"),
        ({"alert_only_cluster": False, "opted_out": False, "exists": True, "scheduling_strategy": "REPLICA",
          "deployment_events": ()}, "still_serving"),
        ({"alert_only_cluster": False, "opted_out": False, "exists": True, "scheduling_strategy": "REPLICA",
          "deployment_events": (), "serving": ()}, "dry_run"),
    ],
)
def test_order_is_rule_4s(drop: dict, expected: str) -> None:
    assert reason_of(replace(_everything(), **drop)) == expected


def test_health_check_kills_beats_everything() -> None:
    assert reason_of(_everything(), "health_check_kills") == "health_check_kills"


def test_daemon_in_alert_only_cluster_is_alert_only_cluster() -> None:
    assert reason_of(facts(alert_only_cluster=True, scheduling_strategy="DAEMON")) == "alert_only_cluster"


def test_opted_out_daemon_is_opted_out() -> None:
    assert reason_of(facts(opted_out=True, scheduling_strategy="DAEMON")) == "opted_out"


def test_elsewhere_beats_opted_out_and_missing() -> None:
    assert reason_of(facts(elsewhere="account 4, region r", opted_out=True, access_denied=True)) == \
        "alert_only_cluster"


def test_missing_service_beats_daemon() -> None:
    assert reason_of(facts(exists=False, scheduling_strategy="DAEMON")) == "service_not_found"


def test_deployment_beats_still_serving() -> None:
    f = facts(**CB, deployment_events=(ev(-1, "IN_PROGRESS"),), serving=(sample("tg", 0, 3),))
    assert reason_of(f) == "deployment_in_progress"


def test_still_serving_beats_dry_run() -> None:
    assert reason_of(facts(serving=(sample("tg", 0, 3),), dry_run=True)) == "still_serving"


def test_rules_are_listed_in_architecture_order() -> None:
    # restart_loop first: a restart-policy loop is always alert_only ("Restart-policy loops"), whatever else
    assert [r.__name__.removeprefix("rule_") for r in RULES] == [
        "restart_loop", "health_check_kills", "alert_only_cluster", "opted_out", "service_not_found", "daemon_service",
        "deployment_in_progress", "still_serving", "dry_run"]


# --- deployment semantics (circuit breaker) ------------------------------------------------------------

@pytest.mark.parametrize(
    ("events", "rollback", "state"),
    [
        ((ev(-5, "IN_PROGRESS"),), True, DeploymentState.IN_PROGRESS),
        ((ev(-5, "IN_PROGRESS"), ev(-1, "COMPLETED")), True, DeploymentState.COMPLETED),
        # FAILED without rollback: ECS stopped the deployment, nothing is in progress
        ((ev(-5, "IN_PROGRESS"), ev(-1, "FAILED")), False, DeploymentState.FAILED),
        # FAILED with rollback: in progress until the rollback completes or fails
        ((ev(-5, "IN_PROGRESS"), ev(-1, "FAILED")), True, DeploymentState.ROLLING_BACK),
        ((ev(-5, "IN_PROGRESS"), ev(-2, "FAILED"), ev(-1, "IN_PROGRESS", OLD, ROLLBACK_REASON)), True,
         DeploymentState.ROLLING_BACK),
        ((ev(-5, "IN_PROGRESS"), ev(-3, "FAILED"), ev(-2, "IN_PROGRESS", OLD, ROLLBACK_REASON),
          ev(-1, "COMPLETED", OLD)), True, DeploymentState.COMPLETED),
        # the rollback itself fails: it is over
        ((ev(-5, "IN_PROGRESS"), ev(-3, "FAILED"), ev(-2, "IN_PROGRESS", OLD, ROLLBACK_REASON),
          ev(-1, "FAILED", OLD)), True, DeploymentState.FAILED),
        # a rollback whose FAILED we never saw is still recognised by ECS's reason
        ((ev(-2, "IN_PROGRESS", OLD, ROLLBACK_REASON), ev(-1, "FAILED", OLD)), True, DeploymentState.FAILED),
        # a later deployment after a completed rollback
        ((ev(-5, "FAILED"), ev(-4, "IN_PROGRESS", OLD, ROLLBACK_REASON), ev(-3, "COMPLETED", OLD),
          ev(-1, "IN_PROGRESS", "ecs-svc/3")), True, DeploymentState.IN_PROGRESS),
    ],
)
def test_deployment_event_sequences(events: tuple, rollback: bool, state: DeploymentState) -> None:
    f = facts(circuit_breaker_enabled=True, circuit_breaker_rollback=rollback, deployment_events=events)
    assert deployment_status(f, T).state is state
    assert (reason_of(f) == "deployment_in_progress") is state.in_progress


def test_rollback_failed_then_in_progress_then_completed_over_time() -> None:
    """circuit-breaker-rollback: threshold at 09:09, FAILED + rollback at 09:11, COMPLETED at 09:20."""
    events = (ev(-8, "IN_PROGRESS"), ev(1.5, "FAILED"), ev(1.6, "IN_PROGRESS", OLD, ROLLBACK_REASON),
              ev(10, "COMPLETED", OLD))
    f = facts(**CB, deployment_events=events)
    assert reason_of(f) == "deployment_in_progress"  # 09:09: the new deployment is still in progress
    for minutes, expected in ((1.55, "deployment_in_progress"), (5, "deployment_in_progress"), (11, "crash_loop")):
        assert entitlement("crash_loop", f, T + timedelta(minutes=minutes)).reason == expected


def test_events_are_read_in_time_order_and_not_after_the_decision() -> None:
    # delivered out of order: COMPLETED first, IN_PROGRESS later in the tuple but earlier in time
    f = facts(**CB, deployment_events=(ev(-1, "COMPLETED"), ev(-5, "IN_PROGRESS")))
    assert reason_of(f) == "crash_loop"
    # an event after the decision's time is not known at that time
    f = facts(**CB, deployment_events=(ev(-5, "IN_PROGRESS"), ev(+1, "COMPLETED")))
    assert reason_of(f) == "deployment_in_progress"


def test_rollout_state_is_the_fallback_without_events() -> None:
    f = facts(**CB, deployments=(Deployment(NEW, "PRIMARY", "IN_PROGRESS", f"ECS deployment {NEW} in progress."),
                                 Deployment(OLD, "ACTIVE", "COMPLETED")))
    v = entitlement("crash_loop", f, T)
    assert v.reason == "deployment_in_progress"
    assert v.evidence["source"] == "rolloutState" and v.evidence["rollout_state"] == "IN_PROGRESS"
    assert v.evidence["deployment_id"] == NEW


def test_rollout_state_failed_with_rollback_is_in_progress() -> None:
    f = facts(**CB, deployments=(Deployment(NEW, "PRIMARY", "FAILED", "circuit breaker tripped"),))
    assert reason_of(f) == "deployment_in_progress"
    assert reason_of(replace(f, circuit_breaker_rollback=False)) == "crash_loop"


def test_rollout_state_completed_is_not_in_progress() -> None:
    f = facts(**CB, deployments=(Deployment(NEW, "PRIMARY", "COMPLETED"),))
    assert reason_of(f) == "crash_loop"


def test_events_win_over_rollout_state() -> None:
    f = facts(**CB, deployment_events=(ev(-5, "IN_PROGRESS"), ev(-1, "COMPLETED")),
              deployments=(Deployment(NEW, "PRIMARY", "IN_PROGRESS"),))
    assert reason_of(f) == "crash_loop"


# --- still serving: fresh, non-zero evidence only -----------------------------------------------------

def test_stale_sample_is_no_evidence() -> None:
    assert reason_of(facts(serving=(sample("tg", 4, 2),))) == "crash_loop"  # minute 09:05 at 09:09:30
    at = T.replace(second=0)  # 09:09:00: the 09:06 sample is exactly 3 minutes old and still counts
    f = facts(serving=(ServingSample("tg", at - timedelta(minutes=3), 2),))
    assert entitlement("crash_loop", f, at).reason == "still_serving"
    f = facts(serving=(ServingSample("tg", at - timedelta(minutes=3, seconds=1), 2),))
    assert entitlement("crash_loop", f, at).reason == "crash_loop"


def test_zero_healthy_is_not_serving() -> None:
    assert reason_of(facts(serving=(sample("tg", 0, 0.0),))) == "crash_loop"


def test_missing_datapoint_is_not_serving() -> None:
    assert reason_of(facts(serving=(sample("tg", 0, None),))) == "crash_loop"


def test_newest_sample_per_target_group_decides() -> None:
    # 2 healthy two minutes ago, 0 now: the newest says nobody is served
    assert reason_of(facts(serving=(sample("tg", 2, 2), sample("tg", 0, 0)))) == "crash_loop"


def test_any_target_group_serving_is_enough() -> None:
    v = entitlement("crash_loop", facts(serving=(sample("a", 0, 0), sample("b", 1, 1))), T)
    assert v.reason == "still_serving" and v.evidence["target_group"] == "b"


def test_sample_after_the_decision_is_ignored() -> None:
    future = ServingSample("tg", T + timedelta(minutes=1), 2)
    assert reason_of(facts(serving=(future,))) == "crash_loop"


def test_sample_max_age_is_a_parameter() -> None:
    f = facts(serving=(sample("tg", 4, 2),))
    assert entitlement("crash_loop", f, T, sample_max_age=timedelta(minutes=5)).reason == "still_serving"


def test_serving_evidence_sorted_and_filtered() -> None:
    out = serving_evidence((sample("b", 0, 1), sample("a", 1, 3), sample("c", 10, 5)), T)
    assert [s.target_group for s in out] == ["a", "b"]


def test_suspended_state_round_trip() -> None:
    s = SuspendedState(True, False, True)
    assert SuspendedState.from_api(s.to_api()) == s
    assert SuspendedState.from_api(None) == SuspendedState()
    assert SuspendedState(True, True, True).all_suspended and not s.all_suspended


def test_documented_deployment_events_of_a_rollback() -> None:
    """AWS's documentation examples, in the order a rollback produces them (times set along the way)."""
    def at(name: str, minute: int) -> DeploymentEvent:
        return replace(deployment_event(parse_event(load_event(name))), time=T + timedelta(minutes=minute))

    events = [at("deployment-in-progress.docs", -9), at("deployment-failed-circuit-breaker.docs", 2),
              at("deployment-in-progress-circuit-breaker-rollback.docs", 3), at("deployment-completed.docs", 6)]
    assert events[0] == DeploymentEvent(T - timedelta(minutes=9), "SERVICE_DEPLOYMENT_IN_PROGRESS", "ecs-svc/123",
                                        "ECS deployment deploymentId in progress.")
    f = facts(**CB, deployment_events=tuple(events))
    states = [deployment_status(f, T + timedelta(minutes=m)).state for m in (0, 2, 4, 6)]
    assert states == [DeploymentState.IN_PROGRESS, DeploymentState.ROLLING_BACK, DeploymentState.ROLLING_BACK,
                      DeploymentState.COMPLETED]
    v = entitlement("crash_loop", f, T + timedelta(minutes=2))
    assert v.reason == "deployment_in_progress" and v.evidence["event_name"] == "SERVICE_DEPLOYMENT_FAILED"
    assert "rolling back" in v.message and "circuit breaker: task failed to start" in v.message


@given(hck=st.booleans(), alert_only=st.booleans(), elsewhere=st.booleans(), opted_out=st.booleans(),
       missing=st.booleans(), denied=st.booleans(), daemon=st.booleans(), cb=st.booleans(), deploying=st.booleans(),
       serving=st.booleans(), dry_run=st.booleans())
def test_first_applicable_rule_decides(hck, alert_only, elsewhere, opted_out, missing, denied, daemon, cb, deploying,
                                       serving, dry_run) -> None:
    f = facts(alert_only_cluster=alert_only, elsewhere="account 4, region r" if elsewhere else None,
              opted_out=opted_out, exists=not missing, access_denied=denied,
              scheduling_strategy="DAEMON" if daemon else "REPLICA", circuit_breaker_enabled=cb,
              deployment_events=(ev(-1, "IN_PROGRESS"),) if deploying else (),
              serving=(sample("tg", 0, 1),) if serving else (), dry_run=dry_run)
    expected = next((reason for applies, reason in (
        (hck, "health_check_kills"), (alert_only or elsewhere, "alert_only_cluster"), (opted_out, "opted_out"),
        (missing or denied, "service_not_found"), (daemon, "daemon_service"),
        (cb and deploying, "deployment_in_progress"), (serving, "still_serving"), (dry_run, "dry_run"),
    ) if applies), "crash_loop")
    v = entitlement("health_check_kills" if hck else "crash_loop", f, T)
    assert v.reason == expected and v.entitled is (expected == "crash_loop")
    json.dumps(v.evidence)


def test_every_entitlement_reason_is_a_decision_reason() -> None:
    """The lead unifies the two enums; until then the public vocabulary must not drift."""
    from ecs_guardrail.core.records import Reason

    assert {r.value for r in EntitlementReason} <= {r.value for r in Reason}
