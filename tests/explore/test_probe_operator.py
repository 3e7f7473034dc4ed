"""Issue 30 items 1-4 and 11: a probe never fights an operator (ARCHITECTURE.md, "Recovery"), on the
explorer's world (in-memory AWS and table, the real handlers).

Before each change a probe makes (desired count 1, back to 0, the restore at a pass) it reads the
desired count and changes it only when it is the count the probe itself last set; any other count is
an operator's: the episode ends ``operator_raised``, the slot is freed, the scalable target is left as
the operator has it. A resumed step checks the same. A genuine crash of a probing service is the
probe's verdict whatever state the lease was left in; a pass needs a RUNNING task. Each test fails on
the code before the fix, and on one of the four mutants issue 30 item 11 names (``make mutate``)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from scheduler import Scheduler, Task
from situations import PROBE_ENV
from world import CONTEXT, LEASE_S, T0, World, crash

from ecs_guardrail.core.errors import LeaseLostError
from ecs_guardrail.core.structs import replace
from ecs_guardrail.core.summary import ActionStatus, EpisodeEnd
from ecs_guardrail.handlers import watchdog
from ecs_guardrail.handlers.sweep import run_sweep

ALL_SUSPENDED = {"DynamicScalingInSuspended": True, "DynamicScalingOutSuspended": True,
                 "ScheduledScalingSuspended": True}


def _held(**env: str) -> World:
    w = World.new(**{**PROBE_ENV, **env})
    w.settle([crash("dev", "svc0", i, i) for i in (1, 2, 3)])
    assert w.desired()["svc0"] == 0 and w.scaling("svc0") == ALL_SUSPENDED
    return w


def _ep(w: World, service: str = "svc0"):  # type: ignore[no-untyped-def]
    return w.store().state.load("dev", service, fresh=True).episode


def _sweep(w: World, minute: float) -> dict:
    return run_sweep(w.runtime(), T0 + timedelta(minutes=minute), CONTEXT)


def _operator_sets(w: World, count: int, service: str = "svc0") -> None:
    """An operator's UpdateService (console or CLI), outside the watchdog."""
    w.aws.memory.client("ecs").update_service(cluster="dev", service=service, desiredCount=count)


def _left_as_the_operator_has_it(w: World, count: int) -> None:
    ep = _ep(w)
    assert w.desired()["svc0"] == count
    assert ep.action_status is ActionStatus.RESTORED and ep.ended_by is EpisodeEnd.OPERATOR_RAISED
    assert "svc0" not in w.store().state.cluster("dev").held()  # the slot is freed
    assert w.scaling("svc0") == ALL_SUSPENDED  # the scalable target as the operator has it: untouched
    assert ep.lease_owner is None


def _die_after(w: World, op: str, minute: float) -> Task:
    """The sweep at ``minute`` dies at the call right after its first ``op`` (a Lambda timeout there)."""
    seen: list[str] = []

    def fault(task: str, at: str, step: int) -> str | None:
        seen.append(at)
        return "die" if len(seen) > 1 and seen[-2] == op and seen.count(op) == 1 else None

    w.sched = Scheduler(lambda names, last, step: names[0], fault)
    t = Task("sweep", w.sweep(minute))
    w.sched.run([t])
    w.sched = None
    return t


# ---------------------------------------------------------------- item 1
def test_a_resumed_probe_start_never_lowers_an_operators_raise():
    """The sweep dies between UpdateService desiredCount 1 and its record; the operator raises the
    service to 5; the next sweep resumes the step: it reads 5, not its own 0 or 1, and stops."""
    w = _held()
    t = _die_after(w, "ecs.update_service", 18)
    assert t.error is not None and w.desired()["svc0"] == 1
    assert _ep(w).action_status is ActionStatus.PROBING and not _ep(w).probe_live
    _operator_sets(w, 5)
    w.clock.advance(LEASE_S)
    out = _sweep(w, 19)
    assert out.get("errors", 0) in (0, None, []), out
    _left_as_the_operator_has_it(w, 5)


def test_a_raise_between_the_probe_claim_and_its_update_is_left_alone():
    """The live race (no death): the operator's raise lands after the probe was claimed, before the step
    reads the desired count. The read sees 5: no UpdateService desiredCount 1."""
    w = _held()
    raised: list[int] = []

    def choose(names: list[str], last: str | None, step: int) -> str:
        sched = w.sched
        assert sched is not None
        reads = [s for s in sched.trace if s.chosen == "sweep" and s.op == "ecs.describe_services"]
        parked = sched._parked.get("sweep")
        if len(reads) == 1 and parked == "ecs.describe_services" and not raised and "operator" in names:
            # the probe is claimed (its first read, before the claim, saw 0); the step's own read is next
            raised.append(step)
        if raised and "operator" in names:
            return "operator"  # the operator's UpdateService runs to its end
        return "sweep" if "sweep" in names else names[0]

    w.sched = Scheduler(choose)
    ecs = w._client("ecs")
    tasks = [Task("sweep", w.sweep(18)),
             Task("operator", lambda: ecs.update_service(cluster="dev", service="svc0", desiredCount=5))]
    w.sched.run(tasks)
    w.sched = None
    assert raised and all(t.error is None for t in tasks), [t.error for t in tasks]
    _left_as_the_operator_has_it(w, 5)


def test_a_raise_before_the_probe_is_due_is_never_probed():
    w = _held()
    _operator_sets(w, 3)
    assert _sweep(w, 18)["probes"]["started"] == 0
    _left_as_the_operator_has_it(w, 3)


# ---------------------------------------------------------------- item 2
def test_a_crash_while_probing_never_sets_an_operators_raise_back_to_zero():
    w = _held()
    _sweep(w, 18)
    assert w.desired()["svc0"] == 1
    _operator_sets(w, 5)
    out = watchdog.invoke(crash("dev", "svc0", 4, 20), w.runtime(), CONTEXT)
    assert out["decisions"] == []
    _left_as_the_operator_has_it(w, 5)


# ---------------------------------------------------------------- item 3
def test_a_probe_that_passes_never_resets_an_operators_raise():
    w = _held()
    _sweep(w, 18)
    _operator_sets(w, 4)
    out = _sweep(w, 28)
    assert out["restored"] == []
    _left_as_the_operator_has_it(w, 4)  # 4 stays 4, never the recorded 2
    recovered = [a for a in w.alerts() if "recovered: dev/svc0" in str(a.get("subject"))]
    assert len(recovered) == 1 and "an operator set the service's desired count" in str(recovered[0]["message"])


# ---------------------------------------------------------------- item 4
@pytest.mark.parametrize("lease", ["expired", "live"])
def test_a_probe_step_that_left_its_lease_behind_keeps_the_probes_verdict(lease):
    """The sweep that started the probe dies before it drops its lease. The probe task then crashes:
    that is the probe's verdict, never a resume; the pass that follows never restores the service."""
    w = _held()
    t = _die_after(w, "ecs.update_service", 18)  # dies at the write that records ProbeStarted
    assert t.error is not None
    w.clock.advance(LEASE_S)
    _sweep(w, 19)  # resumes the step: the probe is live, the lease released
    assert _ep(w).probe_live and w.desired()["svc0"] == 1
    # the next step dies holding its lease: a pass at 28 that dies right after reading ECS
    # the next probe step dies holding its lease (a Lambda timeout after its LeaseTaken write)
    state = w.store().state
    state.load("dev", "svc0")
    state.update("dev", "svc0", lambda s: None if s.episode is None else replace(
        s, episode=replace(s.episode, lease_owner="dead/0000", lease_until=w.clock() + LEASE_S)))
    if lease == "expired":
        w.clock.advance(LEASE_S + 1)
        out = watchdog.invoke(crash("dev", "svc0", 4, 20), w.runtime(), CONTEXT)
        assert out["status"] == "probe_failed", out
    else:
        with pytest.raises(watchdog.DecisionInProgressError):  # Lambda retries it; the crash is counted
            watchdog.invoke(crash("dev", "svc0", 4, 20), w.runtime(), CONTEXT)
        w.clock.advance(LEASE_S + 1)
        assert _sweep(w, 28)["restored"] == []
    assert w.desired()["svc0"] == 0 and _ep(w).action_status is ActionStatus.DONE
    assert _ep(w).probe_delay_minutes == 30
    assert _sweep(w, 29)["restored"] == [] and w.desired()["svc0"] == 0


def test_a_probe_passes_only_with_a_running_task():
    """Mutant 4 of issue 30 item 11: the probe's task never reached RUNNING (runningCount 0)."""
    w = _held()
    _sweep(w, 18)
    w.aws.memory.ecs_clusters["dev"]["services"]["svc0"]["runningCount"] = 0
    out = _sweep(w, 28)
    assert out["restored"] == [] and out["probes"]["failed"] == 1
    assert w.desired()["svc0"] == 0 and _ep(w).action_status is ActionStatus.DONE


# ---------------------------------------------------------------- item 11: the other mutants
def test_no_probe_on_a_cluster_that_became_alert_only_while_its_service_was_held():
    """Mutant 2: the existing test had no held service in the alert-only cluster, so it could not fail."""
    w = _held()
    w.env["ALERT_ONLY_CLUSTERS"] = "prod,dev"  # dev made alert-only after svc0 was scaled to 0
    changes = dict(w.changes)
    out = _sweep(w, 18)
    assert out["probes"]["started"] == 0 and w.desired()["svc0"] == 0
    assert dict(w.changes) == changes and _ep(w).action_status is ActionStatus.DONE and _ep(w).probes == 0


def test_an_invocation_that_outlived_its_lease_never_reaches_update_service(monkeypatch):
    """Mutant 3: the lease is checked right before UpdateService, not only before the step: the clock
    passes the lease while the scale-down names the service in the sweep's index."""
    from ecs_guardrail.adapters.store.watchdog_state import WatchdogState

    w = World.new()
    w.settle([crash("dev", "svc0", i, i) for i in (1, 2)])
    real = WatchdogState.open_work

    def slow_open_work(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        out = real(self, *args, **kwargs)
        w.clock.advance(LEASE_S)  # a stall (a clock jump, a runtime that ignores its timeout)
        return out

    monkeypatch.setattr(WatchdogState, "open_work", slow_open_work)
    with pytest.raises(LeaseLostError):
        watchdog.invoke(crash("dev", "svc0", 3, 3), w.runtime(), CONTEXT)
    assert w.desired()["svc0"] == 2 and w.updates["svc0"] == 0



def test_a_scale_down_resumed_after_its_cluster_became_alert_only_never_reaches_update_service():
    """The alert-only guard right before UpdateService (checked again whatever the decision said): the
    invocation died before its UpdateService; the cluster was made alert-only; the retry resumes the
    episode and refuses the call (the decision becomes an alert, ``action_failed``)."""
    w = World.new()
    w.settle([crash("dev", "svc0", i, i) for i in (1, 2)])
    w.sched = Scheduler(lambda names, last, step: names[0],
                        lambda task, op, step: "die" if op == "ecs.update_service" else None)
    t = Task("a", w.deliver(crash("dev", "svc0", 3, 3)))
    w.sched.run([t])
    w.sched = None
    assert t.error is not None and w.desired()["svc0"] == 2
    w.env["ALERT_ONLY_CLUSTERS"] = "prod,dev"
    w.clock.advance(LEASE_S)
    out = w.deliver(crash("dev", "svc0", 3, 3))()
    assert out["status"] == "resumed", out
    assert w.desired()["svc0"] == 2 and w.updates["svc0"] == 0
    assert (out["decision"]["action"], out["decision"]["reason"]) == ("alert_only", "action_failed")
