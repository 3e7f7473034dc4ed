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


def _variants():
    """Every event file, and each with the fields the patterns read set to near-miss values."""
    import copy

    odd = ["STOPPED", "stopped", "", None, 1, True, 1.0, ["STOPPED"], ["RUNNING", "STOPPED"], [], {},
           {"lastStatus": "STOPPED"}, "SpotInterruption", "Your Spot Task was interrupted", "Your Spot",
           "SERVICE_STEADY_STATE", "ECS Task State Change", "aws.ecs", ["aws.ecs"], "aws.ec2"]
    for path in sorted((EVENTS / "ecs").glob("*.json")):
        event = json.loads(path.read_text())
        yield event
        for where, key in [((), "source"), ((), "detail-type"), (("detail",), "lastStatus"),
                           (("detail",), "stopCode"), (("detail",), "stoppedReason"), (("detail",), "eventName"),
                           ((), "detail")]:
            for value in odd:
                changed = copy.deepcopy(event)
                node = changed
                for part in where:
                    node = node.get(part) if isinstance(node, dict) else None
                if isinstance(node, dict):
                    node[key] = value
                    yield changed
    yield from ["not an event", None, [], 7, {}]


def test_the_compiled_patterns_answer_as_the_pattern_matcher():
    from ecs_guardrail.routing import compile_pattern

    compiled = {name: compile_pattern(pattern) for name, pattern in PATTERNS.items()}
    seen = 0
    for event in _variants():
        for name, pattern in PATTERNS.items():
            assert compiled[name](event) is matches(pattern, event), (name, event)
        assert targets(event) == {n for n, p in PATTERNS.items() if matches(p, event)}
        seen += 1
    assert seen > 1000


def test_a_replayed_event_reaches_the_recorder_only():
    """Issue 29 item 7: EventBridge adds ``replay-name`` to every event it replays from the archive; the
    watchdog's pattern requires it absent (``exists: false``), in both matchers."""
    from ecs_guardrail.routing import compile_pattern

    live = load_event("task-fargate-stopped-essential-oom-exit137.derived")
    replayed = {**live, "replay-name": "fix-1"}
    assert targets(live) == {"recorder", "watchdog"}
    assert targets(replayed) == {"recorder"}
    assert not matches(PATTERNS["watchdog"], replayed) and matches(PATTERNS["watchdog"], live)
    for want in ([{"exists": True}], [{"exists": False}]):
        pattern = {"replay-name": want}
        for event in (live, replayed):
            assert compile_pattern(pattern)(event) is matches(pattern, event) is (
                ("replay-name" in event) is want[0]["exists"])
