"""Rule 4's ``deployment_in_progress`` for the ECS of 2026 (issue 19; ARCHITECTURE.md "Entitlement"):
BLUE_GREEN / LINEAR / CANARY strategies, CODE_DEPLOY and EXTERNAL controllers, the service deployments of
ListServiceDeployments, "in progress at T or when the watchdog acts", and the configurable circuit breaker."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ecs_guardrail.core.entitlement import (
    CircuitBreaker,
    Deployment,
    DeploymentEvent,
    EntitlementFacts,
    EntitlementReason,
    ServiceDeployment,
    TaskSet,
    breaker_threshold,
    deployment_protection,
    entitlement,
)
from ecs_guardrail.core.structs import replace

T = datetime(2026, 3, 4, 10, 30, tzinfo=UTC)
GREEN = "ecs-svc/3333333333333333333"
SD = "arn:aws:ecs:eu-west-1:111122223333:service-deployment/production/checkout/Ab12Cd34"
BASE = EntitlementFacts(cluster="production", service="checkout", desired_count=4)


def facts(**kw) -> EntitlementFacts:
    return replace(BASE, **kw)


def ev(minutes: float, name: str, dep: str | None = GREEN, reason: str | None = None) -> DeploymentEvent:
    return DeploymentEvent(T + timedelta(minutes=minutes), f"SERVICE_DEPLOYMENT_{name}", dep, reason)


def sd(status: str, began: float, finished: float | None = None, **kw) -> ServiceDeployment:
    return ServiceDeployment(SD, status, created_at=T + timedelta(minutes=began),
                             started_at=T + timedelta(minutes=began),
                             finished_at=None if finished is None else T + timedelta(minutes=finished), **kw)


def verdict(f: EntitlementFacts):
    return entitlement("crash_loop", f, T)


@pytest.mark.parametrize("strategy", ["BLUE_GREEN", "LINEAR", "CANARY"])
def test_a_native_strategy_deploying_is_protected_without_a_circuit_breaker(strategy: str) -> None:
    """A crash-looping green revision during a bake: a scale to 0 would kill the blue tasks the rollback
    needs, whatever the breaker says."""
    v = verdict(facts(deployment_strategy=strategy, bake_time_minutes=10, deployment_events=(ev(-12, "IN_PROGRESS"),)))
    assert v.reason is EntitlementReason.DEPLOYMENT_IN_PROGRESS
    assert v.evidence["deployment_strategy"] == strategy and v.evidence["deployment_id"] == GREEN
    assert v.evidence["source"] == "event" and v.evidence["when"] == "at T"
    assert f"strategy {strategy}" in v.message and "bake time 10 min" in v.message
    assert "rolls back" in v.message


def test_rolling_without_a_breaker_is_still_the_watchdogs() -> None:
    v = verdict(facts(deployment_events=(ev(-12, "IN_PROGRESS"),)))
    assert v.entitled


@pytest.mark.parametrize("controller, says", [("CODE_DEPLOY", "CodeDeploy"), ("EXTERNAL", "external")])
def test_code_deploy_and_external_with_no_readable_task_set_are_protected(controller: str, says: str) -> None:
    v = verdict(facts(deployment_controller=controller))
    assert v.reason is EntitlementReason.DEPLOYMENT_IN_PROGRESS
    assert v.evidence["source"] == "taskSets" and says in v.message


def test_code_deploy_with_one_steady_task_set_is_not_deploying() -> None:
    steady = (TaskSet("ecs-svc/1", "PRIMARY", "STEADY_STATE"),)
    assert verdict(facts(deployment_controller="CODE_DEPLOY", task_sets=steady)).entitled
    two = steady + (TaskSet("ecs-svc/2", "ACTIVE", "STABILIZING"),)
    v = verdict(facts(deployment_controller="CODE_DEPLOY", task_sets=two))
    assert v.reason is EntitlementReason.DEPLOYMENT_IN_PROGRESS and v.evidence["deployment_id"] == "ecs-svc/2"


@pytest.mark.parametrize("status", ["PENDING", "IN_PROGRESS", "ROLLBACK_REQUESTED", "ROLLBACK_IN_PROGRESS"])
def test_the_service_deployment_status_says_in_progress_where_no_event_was_seen(status: str) -> None:
    v = verdict(facts(deployment_strategy="BLUE_GREEN", service_deployments=(sd(status, -5),)))
    assert v.reason is EntitlementReason.DEPLOYMENT_IN_PROGRESS
    assert v.evidence["source"] == "ListServiceDeployments" and v.evidence["rollout_state"] == status
    assert ("rolling back" in v.message) == status.startswith("ROLLBACK")


def test_a_lost_completed_event_is_bounded_by_the_api() -> None:
    """Events say IN_PROGRESS since 08:00 and nothing since (the COMPLETED was lost); ListServiceDeployments
    says that deployment succeeded at 08:12: at T (10:30) nothing is in progress, and nothing is now."""
    f = facts(deployment_strategy="BLUE_GREEN", deployment_events=(ev(-150, "IN_PROGRESS"),),
              service_deployments=(sd("SUCCESSFUL", -150, -138),))
    assert verdict(f).entitled
    # without the API it stays protected (fail safe): the watchdog cannot tell
    assert verdict(replace(f, service_deployments=None)).reason is EntitlementReason.DEPLOYMENT_IN_PROGRESS


def test_describe_services_rollout_state_bounds_a_lost_completed_too() -> None:
    done = Deployment(GREEN, "PRIMARY", "COMPLETED", "done", updated_at=T - timedelta(minutes=140))
    f = facts(circuit_breaker=CircuitBreaker(True, True), deployment_events=(ev(-150, "IN_PROGRESS"),),
              deployments=(done,), service_deployments=())
    assert verdict(f).entitled


def test_protected_when_in_progress_at_t_even_if_finished_when_acting() -> None:
    """In progress at T (the event says so and the API's deployment covers T), finished by the time the
    watchdog acts: still protected (fail safe both ways)."""
    f = facts(deployment_strategy="CANARY", service_deployments=(sd("ROLLBACK_SUCCESSFUL", -20, +3),))
    v = verdict(f)
    assert v.reason is EntitlementReason.DEPLOYMENT_IN_PROGRESS and v.evidence["when"] == "at T"


def test_protected_when_a_deployment_started_after_t_is_in_progress_when_acting() -> None:
    f = facts(deployment_strategy="LINEAR", deployment_events=(ev(-60, "IN_PROGRESS", "ecs-svc/1"),
                                                               ev(-50, "COMPLETED", "ecs-svc/1"),
                                                               ev(+2, "IN_PROGRESS")))
    v = verdict(f)
    assert v.reason is EntitlementReason.DEPLOYMENT_IN_PROGRESS and v.evidence["when"] == "when acting"
    api = facts(deployment_strategy="LINEAR", service_deployments=(sd("PENDING", +2),))
    assert verdict(api).evidence["when"] == "when acting"


def test_bake_time_left_from_the_lifecycle_stage() -> None:
    stage = sd("IN_PROGRESS", -20, lifecycle_stage="BAKE_TIME", stage_since=T - timedelta(minutes=4))
    v = verdict(facts(deployment_strategy="BLUE_GREEN", bake_time_minutes=10, service_deployments=(stage,)))
    assert "bake time 10 min, 6 min left" in v.message


@pytest.mark.parametrize("breaker, desired, expected", [
    (CircuitBreaker(True), 4, 3),                                   # default: half of 4 is 2, at least 3
    (CircuitBreaker(True), 13, 7),                                  # ceil(6.5)
    (CircuitBreaker(True), 1000, 200),                              # at most 200
    (CircuitBreaker(True, threshold_type="COUNT", threshold_value=4), 100, 4),
    (CircuitBreaker(True, threshold_type="UNBOUNDED_PERCENT", threshold_value=10), 4, 1),
    (CircuitBreaker(True, threshold_type="UNBOUNDED_PERCENT", threshold_value=50), 1000, 500),
    (CircuitBreaker(True, threshold_type="BOUNDED_PERCENT", threshold_value=25), 40, 10),
])
def test_breaker_threshold(breaker: CircuitBreaker, desired: int, expected: int) -> None:
    assert breaker_threshold(breaker, desired) == expected


def test_the_alert_says_when_ecs_trips_its_breaker() -> None:
    cb = CircuitBreaker(True, True, "COUNT", 4, False)
    v = verdict(facts(circuit_breaker=cb, deployment_events=(ev(-3, "IN_PROGRESS"),)))
    assert "ECS trips its circuit breaker after 4 failed tasks (COUNT 4; the count does not reset" in v.message
    assert v.evidence["circuit_breaker"]["threshold"] == 4
    idle = verdict(facts(circuit_breaker=cb))
    assert idle.entitled and "after 4 failed tasks" in idle.message


def test_no_hand_off_is_no_protection() -> None:
    assert deployment_protection(facts(service_deployments=(sd("IN_PROGRESS", -5),)), T) is None
