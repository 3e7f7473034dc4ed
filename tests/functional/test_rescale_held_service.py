"""A service the watchdog holds at zero whose episode ECS closed (SERVICE_STEADY_STATE: the scale-down
completed) and that triggers again: no second decision (issue 37, rule 2: held at zero decides nothing),
and the restore count and the scaling state of the first scale-down survive (break-it pass 2)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from ecs_guardrail.adapters.autoscaling import ScalableTargets
from ecs_guardrail.adapters.ecs import PREVIOUS_COUNT_TAG, EcsService
from ecs_guardrail.app.restore import restore
from ecs_guardrail.core.clusters import parse_alert_only_clusters
from ecs_guardrail.replay.run import replay
from ecs_guardrail.replay.scenario import load_scenario
from tests.conftest import EVENTS
from tests.fuzz.breakkit import crash, scenario

STEADY = json.loads((EVENTS / "ecs" / "service-action-steady-state.docs.json").read_text())
IMPAIRED = json.loads((EVENTS / "ecs" / "service-action-task-start-impaired.json").read_text())

ACTS_EVERYWHERE = parse_alert_only_clusters("none")


def _service_event(base: dict[str, Any], minute: int) -> dict[str, Any]:
    e = copy.deepcopy(base)
    e.update(account="111122223333", region="eu-west-1", time=f"2025-08-21T12:{minute:02d}:00Z", id=f"svc-{minute}")
    e["resources"] = ["arn:aws:ecs:eu-west-1:111122223333:service/development/api"]
    e["detail"]["clusterArn"] = "arn:aws:ecs:eu-west-1:111122223333:cluster/development"
    return e


@pytest.mark.parametrize("engine", ["fast", "moto"])
def test_a_held_service_that_triggers_again_keeps_the_first_ones_count_and_scaling_state(tmp_path, engine):
    fleet = {"account": "111122223333", "region": "eu-west-1", "clusters": [{"name": "development", "services": [
        {"name": "api", "desiredCount": 3, "autoScaling": {"minCapacity": 1, "maxCapacity": 6}}]}]}
    events = [crash(n, minute=n) for n in range(1, 6)]
    events += [_service_event(STEADY, 10), _service_event(IMPAIRED, 12)]
    folder = scenario(tmp_path, fleet=fleet, events=events, settings=b"ALERT_ONLY_CLUSTERS=nothing\n")
    seen: dict[str, Any] = {}

    def keep_open(aws: Any, result: Any) -> None:
        ecs = EcsService(aws.client("ecs"))
        seen["tag"] = ecs.describe("development", "api").tags.get(PREVIOUS_COUNT_TAG)
        scaling = ScalableTargets(aws.client("application-autoscaling"), alert_only=ACTS_EVERYWHERE)
        seen["restore"] = restore(result.history, ecs, "development", "api", scaling=scaling)
        seen["after"] = ecs.describe("development", "api").desired_count
        target = scaling.describe("development", "api")
        seen["suspended"] = target.suspended.all_suspended if target is not None else None

    result = replay(load_scenario(folder), keep_open=keep_open, engine=engine)
    assert [d["action"] for d in result.decisions] == ["scale_to_zero"]  # the IMPAIRED at 12: no second one
    assert [d["previous_desired_count"] for d in result.decisions] == [3]
    assert seen["tag"] == "3"  # was overwritten with "0": restore had nothing to put back
    assert seen["restore"].desired_count == 3 and seen["after"] == 3
    assert seen["suspended"] is False  # the second scale-down recorded "suspended" as the state to put back
