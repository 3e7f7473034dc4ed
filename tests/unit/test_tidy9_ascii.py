"""ECS enum values compared ASCII-only (core.enum_text), and a corrupt ``seq`` of the sweep's index (round 9,
tidy2 lane). Each test failed before its fix."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest

from ecs_guardrail.core.classify import StopKind, classify_stop
from ecs_guardrail.core.deployment_protection import DeploymentState, deployment_status
from ecs_guardrail.core.entitlement import Deployment, DeploymentEvent, EntitlementFacts, ServiceDeployment
from ecs_guardrail.core.enum_text import ascii_lower, ascii_upper
from ecs_guardrail.core.events import TaskDetail
from ecs_guardrail.core.structs import replace

T = datetime(2026, 3, 4, 10, 30, tzinfo=UTC)
GREEN = "ecs-svc/3333333333333333333"
BASE = EntitlementFacts(cluster="production", service="checkout", desired_count=4)
_TASK = {
    "clusterArn": "arn:aws:ecs:eu-west-1:111122223333:cluster/dev",
    "taskArn": "arn:aws:ecs:eu-west-1:111122223333:task/dev/0123456789abcdef0123456789abcdef",
    "group": "service:api", "version": 5, "lastStatus": "STOPPED", "desiredStatus": "STOPPED",
    "containers": [{"name": "app", "exitCode": 1}],
}

# str.upper() maps each to an ECS enum value: dotless i (U+0131), long s (U+017F), the "st" ligature (U+FB06)
_UPPER_LOOKALIKES = [("pr\u0131mary", "PRIMARY"), ("\u017ftopped", "STOPPED"), ("\ufb06opped", "STOPPED"),
                     ("l\u0131near", "LINEAR"), ("\u0131n_progress", "IN_PROGRESS")]


@pytest.mark.parametrize(("text", "enum"), _UPPER_LOOKALIKES)
def test_ascii_upper_maps_no_non_ascii_letter_onto_an_enum_value(text: str, enum: str) -> None:
    assert text.upper() == enum  # the hole: Python's full Unicode case mapping
    assert ascii_upper(text) != enum and len(ascii_upper(text)) == len(text)
    assert ascii_upper(enum.lower()) == enum and ascii_upper("Primary") == "PRIMARY"


def test_ascii_lower_keeps_the_kelvin_sign() -> None:
    text = "Tas\u212aFailedToStart"
    assert text.lower() == "taskfailedtostart"
    assert ascii_lower(text) == "tas\u212afailedtostart" and ascii_lower("TaskFailedToStart") == "taskfailedtostart"


def test_a_look_alike_rollout_state_or_deployment_status_is_unknown() -> None:
    """DescribeServices ``deployments[]``: ``ın_progress`` read as IN_PROGRESS, ``prımary`` as PRIMARY."""
    at = T
    look = replace(BASE, deployments=(Deployment(GREEN, "PRIMARY", "\u0131n_progress"),))
    assert deployment_status(look, at).state is DeploymentState.NONE
    real = replace(BASE, deployments=(Deployment(GREEN, "PRIMARY", "in_progress"),))
    assert deployment_status(real, at).state is DeploymentState.IN_PROGRESS
    failed = replace(BASE, circuit_breaker_rollback=True, deployments=(Deployment(GREEN, "pr\u0131mary", "FAILED"),))
    assert deployment_status(failed, at).state is DeploymentState.NONE
    failed = replace(failed, deployments=(Deployment(GREEN, "primary", "FAILED"),))
    assert deployment_status(failed, at).state is DeploymentState.ROLLING_BACK


def test_a_look_alike_deployment_event_name_changes_nothing() -> None:
    """An unknown ``eventName`` changes nothing (deployment_protection._from_events): so does a look-alike."""
    name = "\u017fERVICE_DEPLOYMENT_IN_PROGRESS"
    facts = replace(BASE, deployment_events=(DeploymentEvent(T - timedelta(minutes=5), name, GREEN),))
    assert deployment_status(facts, T).state is DeploymentState.NONE
    facts = replace(BASE, deployment_events=(DeploymentEvent(T - timedelta(minutes=5), "service_deployment_in_progress",
                                                                  GREEN),))
    assert deployment_status(facts, T).state is DeploymentState.IN_PROGRESS


def test_a_look_alike_strategy_or_service_deployment_status_is_unknown() -> None:
    assert replace(BASE, deployment_strategy="l\u0131near").handed_off is None
    assert replace(BASE, deployment_strategy="linear").handed_off == "strategy LINEAR"
    assert not ServiceDeployment("arn", "ROLLBACK_\u0131N_PROGRESS").in_progress
    assert ServiceDeployment("arn", "rollback_in_progress").in_progress


def test_a_look_alike_stop_code_is_an_unknown_code_never_a_crash() -> None:
    """``TasKFailedToStart`` with the Kelvin sign lower-cased to ``taskfailedtostart``: a crash."""
    d = TaskDetail.validate({**_TASK, "stopCode": "Tas\u212aFailedToStart", "stoppedReason": "Task failed to start"})
    assert classify_stop(d).kind is StopKind.UNKNOWN
    d = TaskDetail.validate({**_TASK, "stopCode": "TASKFAILEDTOSTART"})
    assert classify_stop(d).kind is StopKind.CRASH


def test_a_look_alike_crash_reason_without_a_stop_code_is_no_crash() -> None:
    """A STOPPED event without ``stopCode`` is a crash by its ``stoppedReason`` (2018 events); a reason that
    only Unicode lower-casing makes "task failed to start" (Kelvin sign) is not ECS's text: unknown."""
    d = TaskDetail.validate({**_TASK, "stoppedReason": "Tas\u212a failed to start"})
    assert classify_stop(d).kind is StopKind.UNKNOWN
    d = TaskDetail.validate({**_TASK, "stoppedReason": "TASK failed to start: \u2018image\u2019 not found"})
    assert classify_stop(d).kind is StopKind.CRASH


@pytest.mark.parametrize("corrupt", ["abc", "7", 2.5, True, None, {"n": 1}, ["x"]])
def test_an_index_item_whose_seq_is_not_an_integer_never_fails_the_write(corrupt: object, caplog) -> None:
    """``_index_change`` read ``int(item["seq"])``: ``"abc"``, a map raised (the event that held a
    service at zero failed, then the dead-letter queue); ``2.5`` and ``True`` were read as 2 and 1, so the
    conditional write never matched the stored value (StateConflictError after every retry), as for an absent
    seq (``None`` is not stored: ``clean``). Now the corrupt value is logged, the write is conditional on the
    values read (a concurrent change is never lost) and the count starts again at 1; the entries are kept."""
    from ecs_guardrail.adapters.store import keys
    from ecs_guardrail.adapters.store.memory import MemoryTable
    from ecs_guardrail.adapters.store.watchdog_state import WatchdogState

    table = MemoryTable()
    pk, sk = keys.open_work("a")
    jobs = {"nightly": ["a", "2025-08-21T10:00:00Z"]}
    table.put({"pk": pk, "sk": sk, "services": {"web": "a"}, "jobs": jobs, "seq": corrupt})
    state = WatchdogState(table)
    with caplog.at_level(logging.ERROR):
        state.open_work("a", "a", "api")
    item = table.get(pk, sk)
    assert item["services"] == {"web": "a", "api": "a"} and item["jobs"] == jobs and item["seq"] == 1
    assert any("seq" in r.getMessage() and "not an integer" in r.getMessage() for r in caplog.records), caplog.text
    state.close_work("a", "web")
    assert table.get(pk, sk)["seq"] == 2 and sorted(s for _, _, s in state.open_work_items()) == ["api"]
