"""RECOVERY=probe through the real handlers on the explorer's world (issue 21): the probe schedule,
the sweep's bounded index, a failed recovery retried, no probe on an alert-only cluster, and the
probe's desired count of 1 never read as an operator's raise."""

from __future__ import annotations

from types import SimpleNamespace

from situations import PROBE_ENV
from world import CONTEXT, T0, World, crash

from ecs_guardrail.core.summary import ActionStatus, RecoveryStatus
from ecs_guardrail.handlers import watchdog
from ecs_guardrail.handlers.sweep import Sweep, run_sweep


def _held(**env: str) -> World:
    w = World.new(**{**PROBE_ENV, **env})
    w.settle([crash("dev", "svc0", i, i) for i in (1, 2, 3)])
    assert w.desired()["svc0"] == 0
    return w


def _ep(w: World, service: str = "svc0"):  # type: ignore[no-untyped-def]
    return w.store().state.load("dev", service, fresh=True).episode


def _sweep(w: World, minute: float) -> dict:
    from datetime import timedelta

    return run_sweep(w.runtime(), T0 + timedelta(minutes=minute), CONTEXT)


def test_index_names_only_the_held_service_and_is_emptied_by_the_restoring_probe():
    w = _held()
    assert w.store().state.open_work_items() == [("dev", "dev", "svc0")]
    assert _sweep(w, 17)["probes"]["started"] == 0  # due 15 min after the 12:03 decision: 12:18
    out = _sweep(w, 18)
    assert out["probes"]["started"] == 1 and w.desired()["svc0"] == 1
    assert w.scaling("svc0") == {k: True for k in w.scaling("svc0")}  # still suspended while probing
    assert _ep(w).action_status is ActionStatus.PROBING
    out = _sweep(w, 28)  # PROBE_PASS_MINUTES 10 without a failure
    assert out["restored"] == ["dev/svc0"] and out["recoveries"] == 1
    assert w.desired()["svc0"] == 2 and _ep(w).action_status is ActionStatus.RESTORED
    assert w.store().state.open_work_items() == [] and "svc0" not in w.store().state.cluster("dev").held()
    assert sum("recovered: dev/svc0" in str(a.get("subject")) for a in w.alerts()) == 1


def test_a_failure_while_probing_goes_back_to_zero_and_doubles_the_delay():
    w = _held()
    _sweep(w, 18)
    out = watchdog.invoke(crash("dev", "svc0", 4, 20), w.runtime(), CONTEXT)
    assert out["status"] == "probe_failed" and out["decisions"] == []  # the probe's verdict, not a decision
    ep = _ep(w)
    assert w.desired()["svc0"] == 0 and ep.action_status is ActionStatus.DONE and ep.probe_delay_minutes == 30
    assert _sweep(w, 49)["probes"]["started"] == 0 and _sweep(w, 50)["probes"]["started"] == 1


def test_the_probe_count_of_one_is_never_an_operators_raise_for_the_cap():
    w = _held()
    _sweep(w, 18)
    w.settle([crash("dev", "svc1", i, 40 + i) for i in (1, 2, 3)])
    assert w.desired()["svc1"] == 2  # svc0 (probing, desired 1) still holds the only slot
    assert _ep(w, "svc1").reason.value == "blast_radius_cap"


def test_no_probe_on_an_alert_only_cluster_even_if_the_index_names_it():
    w = _held()
    w.store().state.open_work("prod", "prod", "orders")
    _sweep(w, 200)
    assert not w.changes.get("prod") and w.desired("prod")["orders"] == 3


def test_manual_recovery_never_probes():
    w = World.new()
    w.settle([crash("dev", "svc0", i, i) for i in (1, 2, 3)])
    assert w.store().state.open_work_items() == [("dev", "dev", "svc0")]  # indexed for its recovery
    out = _sweep(w, 300)
    assert out["services"] == 1 and out["probes"]["started"] == 0 and w.desired()["svc0"] == 0
    assert w.store().state.open_work_items() == [("dev", "dev", "svc0")]  # still held: still indexed


def test_manual_restore_recovery_goes_out_with_the_next_sweep_not_the_next_event():
    w = World.new()
    w.settle([crash("dev", "svc0", i, i) for i in (1, 2, 3)])
    w.restore("svc0")()  # an operator's restore: its credentials send nothing, the recovery is owed
    assert _ep(w).recovery is RecoveryStatus.PENDING
    assert not any("recovered: dev/svc0" in str(a.get("subject")) for a in w.alerts())
    out = _sweep(w, 60)
    assert out["recoveries"] == 1 and out["closed"] == 1 and _ep(w).recovery is RecoveryStatus.SENT
    assert sum("recovered: dev/svc0" in str(a.get("subject")) for a in w.alerts()) == 1
    assert w.store().state.open_work_items() == []


def test_a_recovery_whose_every_channel_failed_is_retried_by_the_sweep():
    from datetime import timedelta

    w = _held()
    _sweep(w, 18)
    rt = w.runtime()
    rt.send = lambda alert: [SimpleNamespace(ok=False)]  # every sink down while the probe passes
    Sweep(rt, CONTEXT).run(T0 + timedelta(minutes=28))
    assert _ep(w).recovery is RecoveryStatus.FAILED and w.store().state.open_work_items()  # still owed
    out = _sweep(w, 29)
    assert out["retried"] == 1 and out["recoveries"] == 1 and _ep(w).recovery is RecoveryStatus.SENT
    assert w.store().state.open_work_items() == []
