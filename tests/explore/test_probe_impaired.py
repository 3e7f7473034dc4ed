"""A service-level failure event (SERVICE_TASK_START_IMPAIRED) while a probe runs (issue 21): it is
the probe's verdict (the probe failed: back to 0, the delay doubles) and never a new decision that
overwrites the probing episode."""

from __future__ import annotations

from datetime import timedelta

import ecsgen
from situations import PROBE_ENV
from world import CONTEXT, T0, World, crash

from ecs_guardrail.core.summary import ActionStatus
from ecs_guardrail.handlers import watchdog
from ecs_guardrail.handlers.sweep import run_sweep


def _probing() -> World:
    w = World.new(**PROBE_ENV)
    w.settle([crash("dev", "svc0", i, i) for i in (1, 2, 3)])
    run_sweep(w.runtime(), T0 + timedelta(minutes=18), CONTEXT)
    assert w.store().state.load("dev", "svc0", fresh=True).episode.action_status is ActionStatus.PROBING
    return w


def test_start_impaired_while_probing_fails_the_probe_and_keeps_the_episode():
    w = _probing()
    before = w.store().state.load("dev", "svc0", fresh=True).episode
    out = watchdog.invoke(ecsgen.impaired_event("dev", "svc0", T0 + timedelta(minutes=20)), w.runtime(), CONTEXT)
    assert out["status"] == "probe_failed" and out["decisions"] == []
    ep = w.store().state.load("dev", "svc0", fresh=True).episode
    assert ep.decision_time == before.decision_time and ep.reason is before.reason  # the same episode
    assert ep.action_status is ActionStatus.DONE and ep.probe_delay_minutes == 30 and w.desired()["svc0"] == 0


def test_start_impaired_while_held_between_probes_opens_no_decision():
    w = World.new(**PROBE_ENV)
    w.settle([crash("dev", "svc0", i, i) for i in (1, 2, 3)])
    before = w.store().state.load("dev", "svc0", fresh=True).episode
    out = watchdog.invoke(ecsgen.impaired_event("dev", "svc0", T0 + timedelta(minutes=8)), w.runtime(), CONTEXT)
    assert out["decisions"] == [] and out["status"] == "held_at_zero"
    assert w.store().state.load("dev", "svc0", fresh=True).episode.decision_time == before.decision_time
