"""The replay routes events exactly as the EventBridge rules would (events/patterns.json)."""

from __future__ import annotations

import json

from ecs_guardrail.routing import PATTERNS, matches, targets
from tests.conftest import EVENTS, load_event


def test_patterns_file_is_the_routing_table():
    assert json.loads((EVENTS / "patterns.json").read_text()) == PATTERNS


def test_stopped_tasks_spot_notices_and_impaired_reach_the_watchdog():
    assert targets(load_event("task-fargate-stopped-essential-oom-exit137.derived")) == {"recorder", "watchdog"}
    assert targets(load_event("service-action-task-start-impaired")) == {"recorder", "watchdog"}
    assert targets(load_event("task-fargate-running-standalone-family-group.docs")) == {"recorder"}
    assert targets(load_event("deployment-completed.docs")) == {"recorder", "watchdog"}  # every deployment event
    assert targets(load_event("service-action-task-placement-failure-ec2-resource-cpu.docs")) == {"recorder"}
    assert targets(load_event("service-action-steady-state.docs")) == {"recorder", "watchdog"}  # closes episodes
    notice = load_event("task-fargate-spot-notice-running-spotinterruption.docs-current")
    assert targets(notice) == {"recorder", "watchdog"}
    notice["detail"].pop("stopCode")
    assert targets(notice) == {"recorder", "watchdog"}  # by the reason's prefix
    deprovisioning = load_event("task-fargate-stopped-essential-oom-exit137.derived")
    deprovisioning["detail"]["lastStatus"] = "DEPROVISIONING"
    assert targets(deprovisioning) == {"recorder"}  # the STOPPED event of the same task follows


def test_non_ecs_events_reach_nobody():
    assert targets({"source": "aws.ec2", "detail-type": "ECS Task State Change"}) == set()
    assert not matches(PATTERNS["watchdog"], "not an event")
