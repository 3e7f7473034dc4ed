"""Issue 30 item 5: a claim lost to a write that claims nothing does not drop the decision.

Between a decision and its claim, another invocation records something that changes the service's
summary but claims nothing (a Spot notice of another task, a steady state). The claim's condition then
fails; the watchdog reloads, runs ``detect`` again and decides; ``lost_race`` only when an episode is
open now (tests/faults/test_faults.py keeps the real lost race)."""

from __future__ import annotations

import ecsgen
import pytest
from tests.faults.faultkit import embedded_fleet

from ecs_guardrail.adapters.store.watchdog_state import WatchdogState
from ecs_guardrail.handlers.watchdog import CLAIM_ATTEMPTS, process


def _interloper(fleet, kind: str) -> dict:
    t = ecsgen.T0 + __import__("datetime").timedelta(minutes=2, seconds=30)
    if kind == "spot_notice":
        return ecsgen.task_event("development", "svc0", "f" * 32, "spot", t, version=5, last_status="RUNNING")
    steady = ecsgen.impaired_event("development", "svc0", t)
    steady["id"] = "steady-0"
    steady["detail"].update(eventName="SERVICE_STEADY_STATE", eventType="INFO")
    return steady


@pytest.mark.parametrize("kind", ["spot_notice", "steady_state"])
def test_a_claim_that_lost_to_a_write_claiming_nothing_is_decided(monkeypatch, kind):
    with embedded_fleet() as fleet:
        rt_a, rt_b = fleet.runtime(), fleet.runtime()
        for i in range(2):
            process(fleet.crash("svc0", i), rt_a)
        third = fleet.crash("svc0", 3)
        real_claim = WatchdogState.claim
        seen: dict[str, object] = {}

        def interleaved(self, *args, **kwargs):
            if "b" not in seen:  # B's harmless write lands between A's read and A's claim
                seen["b"] = process(_interloper(fleet, kind), rt_b)[0]
            return real_claim(self, *args, **kwargs)

        monkeypatch.setattr(WatchdogState, "claim", interleaved)
        out = process(third, rt_a)[0]
        assert seen["b"]["status"] != "decided"  # B claimed nothing
        assert out["status"] == "decided", out
        assert out["decision"]["action"] == "scale_to_zero"
        assert len(fleet.decision_items("svc0")) == 1
        assert fleet.desired("svc0") == 0 and len(fleet.aws.alerts()) == 1


def test_a_summary_that_keeps_changing_is_retried_by_lambda_not_dropped(monkeypatch):
    from ecs_guardrail.adapters.store.table import ConditionFailedError
    from ecs_guardrail.core.errors import DecisionInProgressError

    with embedded_fleet() as fleet:
        rt = fleet.runtime()
        for i in range(2):
            process(fleet.crash("svc0", i), rt)
        calls = []

        def always_conflicts(self, *args, **kwargs):
            calls.append(1)
            raise ConditionFailedError({"seq": 0})

        monkeypatch.setattr(WatchdogState, "claim", always_conflicts)
        with pytest.raises(DecisionInProgressError):
            process(fleet.crash("svc0", 3), rt)
        assert len(calls) == CLAIM_ATTEMPTS and fleet.decision_items("svc0") == []
