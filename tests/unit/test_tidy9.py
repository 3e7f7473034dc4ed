"""Round 8's "noticed and left" defects, fixed in round 9 (each test failed before its fix)."""

from __future__ import annotations

import copy

import pytest

from ecs_guardrail.core.classify import StopKind, classify_stop, is_stop_event, judge_job_stop
from ecs_guardrail.core.events import TaskDetail

_BASE = {
    "clusterArn": "arn:aws:ecs:eu-west-1:111122223333:cluster/dev",
    "taskArn": "arn:aws:ecs:eu-west-1:111122223333:task/dev/0123456789abcdef0123456789abcdef",
    "group": "service:api",
    "version": 5,
}

# Python's str.upper() maps these to STOPPED: the long s (U+017F) and the "st" ligature (U+FB06)
_NOT_STOPPED = ["\u017ftopped", "\u017fTOPPED", "\ufb06opped"]


@pytest.mark.parametrize("status", _NOT_STOPPED)
def test_a_status_that_only_unicode_upper_cases_to_stopped_is_not_stopped(status: str) -> None:
    """ECS's lastStatus/desiredStatus values are ASCII (ECS API reference, Task: PROVISIONING ... STOPPED);
    the case-insensitive comparison is ASCII-only, so ``ſtopped`` is an unknown status like any other:
    recorded, not a stop, never a crash."""
    assert status.upper() == "STOPPED"
    d = TaskDetail.validate({**_BASE, "lastStatus": status, "desiredStatus": status,
                             "stoppedReason": "Essential container in task exited",
                             "containers": [{"name": "app", "exitCode": 1}]})
    assert not is_stop_event(d)
    verdict = classify_stop(d)
    assert verdict.kind is StopKind.UNKNOWN and not verdict.final
    assert judge_job_stop(status, StopKind.CRASH, (("app", 1),), lambda: None).outcome == "wait"


def test_ascii_case_of_stopped_still_reads_as_stopped() -> None:
    for status in ("STOPPED", "stopped", "Stopped"):
        d = TaskDetail.validate({**_BASE, "lastStatus": status, "stoppedReason": "Essential container in task exited"})
        assert is_stop_event(d) and classify_stop(d).kind is StopKind.CRASH


def test_the_recorder_reports_no_stop_kind_for_a_long_s_stopped() -> None:
    from ecs_guardrail.adapters.history import HistoryStore
    from ecs_guardrail.adapters.store.memory import MemoryTable
    from ecs_guardrail.handlers.record import record_event
    from tests.conftest import load_event

    store = HistoryStore.on(MemoryTable("t", "eu-west-1"), 90, cache={})
    raw = copy.deepcopy(load_event("task-fargate-stopped-essential-oom-exit137.derived"))
    raw["detail"]["lastStatus"] = "\u017ftopped"
    out = record_event(raw, store)
    assert out["status"] == "recorded" and out.get("stop_kind") is None, out
    raw = copy.deepcopy(load_event("task-fargate-stopped-essential-oom-exit137.derived"))
    raw["id"] = raw["id"][:-4] + "0000"
    raw["detail"]["version"] = 99
    raw["detail"]["lastStatus"] = "stopped"
    assert record_event(raw, store).get("stop_kind") == "crash"
