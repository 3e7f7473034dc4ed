"""Event types of the ECS of 2026 (issue 19; ECS-EVENTS.md): a detail-type this tool does not read, a
daemon's deployment and the MANAGED_INSTANCES launch type are recorded and kept, never rejected."""

from __future__ import annotations

import copy

import pytest

from ecs_guardrail.adapters.history import HistoryStore
from ecs_guardrail.adapters.store.memory import MemoryTable
from ecs_guardrail.core.events import OtherEcsEvent, TaskStateChange, parse_event
from ecs_guardrail.handlers.record import record_event
from ecs_guardrail.routing import PATTERNS, matches
from tests.conftest import load_event

ARN = "arn:aws:ecs:eu-west-1:111122223333"


def _envelope(detail_type: str, resources: list[str], detail: dict) -> dict:
    return {"version": "0", "id": "0e0e0000-0000-4000-8000-000000000019", "detail-type": detail_type,
            "source": "aws.ecs", "account": "111122223333", "time": "2026-03-04T10:00:00Z",
            "region": "eu-west-1", "resources": resources, "detail": detail}


HOOK = _envelope("ECS Service Deployment Lifecycle Hook State Change", [f"{ARN}:service/production/checkout"],
                 {"clusterArn": f"{ARN}:cluster/production", "lifecycleStage": "POST_TEST_TRAFFIC_SHIFT",
                  "status": "IN_PROGRESS"})
DAEMON = _envelope("ECS Deployment State Change", [f"{ARN}:daemon/production/log-agent"],
                   {"eventType": "INFO", "eventName": "SERVICE_DEPLOYMENT_IN_PROGRESS", "deploymentId": "d-1"})


@pytest.mark.parametrize("raw, cluster, subject, says", [
    (HOOK, "production", "checkout", "is new to this tool"),
    (DAEMON, "production", "log-agent", "of a daemon, not a service"),
])
def test_an_event_this_tool_does_not_read_is_kept_with_a_note(raw: dict, cluster: str, subject: str,
                                                              says: str) -> None:
    event = parse_event(copy.deepcopy(raw))
    assert isinstance(event, OtherEcsEvent)
    assert (event.cluster, event.subject) == (cluster, subject) and says in event.note
    table = MemoryTable("t", "eu-west-1")
    store = HistoryStore.on(table)
    assert record_event(copy.deepcopy(raw), store)["status"] == "recorded"
    assert record_event(copy.deepcopy(raw), store)["status"] == "duplicate"
    kept = [i for i in table.scan() if i.get("type") == "other"]
    assert [(i["cluster"], i["subject"], i["note"]) for i in kept] == [(cluster, subject, event.note)]


def test_the_recorder_rule_takes_every_ecs_detail_type() -> None:
    assert matches(PATTERNS["recorder"], HOOK) and matches(PATTERNS["recorder"], DAEMON)
    assert not matches(PATTERNS["recorder"], {**HOOK, "source": "aws.ec2"})


def test_managed_instances_launch_type_is_read() -> None:
    raw = load_event("task-fargate-stopped-essential-oom-exit137.derived")
    raw["detail"]["launchType"] = "MANAGED_INSTANCES"
    raw["detail"]["capacityProviderName"] = "managed-instances-cp"
    event = parse_event(raw)
    assert isinstance(event, TaskStateChange) and event.detail.launch_type == "MANAGED_INSTANCES"
