"""Issue 17's findings, each replayed as the one schedule that broke main, on the in-memory AWS.

Each test drives invocations through ``scheduler.Scheduler`` with a chooser written for the finding,
so the interleaving is exact and reproducible; the explorer (``test_interleavings.py``) then covers
every other schedule of the same situations.
"""

from __future__ import annotations

from datetime import timedelta

from scheduler import Scheduler, Task
from world import CONTEXT, LEASE_S, SCALING, SVC1_SCALING, World, crash

from ecs_guardrail.core.records import parse_time
from ecs_guardrail.core.summary import ActionStatus
from ecs_guardrail.handlers import watchdog
from ecs_guardrail.handlers.runtime import LambdaContextStub


def _switch_when(sched_ref: list[Scheduler], who: str, op: str, to: str):
    """Run ``who`` until it is about to call ``op``, then ``to`` to the end, then the rest."""
    switched = []

    def choose(names: list[str], last: str | None, step: int) -> str:
        sched = sched_ref[0]
        if not switched and sched._parked.get(who) == op and to in names:
            switched.append(step)
        if switched and to in names:
            return to
        return who if who in names else names[0]

    return choose, switched


def test_cap_is_not_exceeded_when_another_decision_runs_inside_a_scale_down():
    """Item 1: A is inside svc0's scale-down (UpdateService not yet called) when B decides for svc1 of the
    same cluster. B must not read svc0's desired count 2 as an operator's raise."""
    w = World.new()
    w.settle([crash("dev", "svc0", 1, 0), crash("dev", "svc0", 2, 1), crash("dev", "svc1", 1, 40),
              crash("dev", "svc1", 2, 41)])
    ref: list[Scheduler] = []
    choose, switched = _switch_when(ref, "a", "ecs.update_service", "b")
    sched = Scheduler(choose, check=w.check_always)
    ref.append(sched)
    w.sched = sched
    a = Task("a", w.deliver(crash("dev", "svc0", 3, 2)))
    b = Task("b", w.deliver(crash("dev", "svc1", 3, 42)))
    sched.run([a, b])
    assert switched, "the schedule reached A's UpdateService"
    assert a.error is None and b.error is None
    assert w.desired()["svc0"] == 0 and w.desired()["svc1"] == 2
    [db] = b.result["decisions"]
    assert (db["action"], db["reason"]) == ("hold", "blast_radius_cap")
    assert w.max_at_zero == 1 and w.violations == []
    view = w.store().state.cluster("dev")
    assert view.held() == ("svc0",)
    ep0 = next(x for x in view.summaries if x.service == "svc0").episode
    assert ep0.action_status is ActionStatus.DONE  # never marked restored under A


def test_restore_after_a_death_between_suspend_and_its_record_gives_scaling_back():
    """Item 2: the scalable target is suspended; the invocation dies at the next write. The retry must not
    record "fully suspended" as the previous state, so restore gives back exactly svc1's own state."""
    w = World.new()
    w.settle([crash("dev", "svc1", 1, 40), crash("dev", "svc1", 2, 41)])
    seen: list[str] = []

    def fault(task: str, op: str, step: int) -> str | None:
        seen.append(op)
        after = seen[:-1]
        return "die" if after and after[-1] == "application-autoscaling.register_scalable_target" else None

    sched = Scheduler(lambda names, last, step: names[0], fault)
    w.sched = sched
    t = Task("a", w.deliver(crash("dev", "svc1", 3, 42)))
    sched.run([t])
    assert t.error is not None and "died" in str(t.error)
    assert w.scaling("svc1") == {k: True for k in SCALING}  # suspended by the watchdog
    w.retry([t])
    assert t.error is None and w.desired()["svc1"] == 0
    ep = w.store().state.load("dev", "svc1", fresh=True).episode
    assert ep.previous_suspended == SVC1_SCALING
    assert w.check_restore() == []
    assert w.scaling("svc1") == SVC1_SCALING and w.desired()["svc1"] == 2


def test_next_crash_in_the_last_seconds_of_a_slow_invocation_waits_for_its_lease():
    """Item 3: A has 5 s left and is slow in its alert (Slack retries); the next crash of the same service,
    4 s later on the clock, must wait (in progress), not resume the episode and alert again."""
    w = World.new()
    w.settle([crash("dev", "svc0", 1, 0), crash("dev", "svc0", 2, 1)])
    short = LambdaContextStub(remaining_ms=5_000, invoked_function_arn=CONTEXT.invoked_function_arn)
    ref: list[Scheduler] = []
    choose, switched = _switch_when(ref, "a", "sns.publish", "b")
    sched = Scheduler(choose)
    ref.append(sched)
    w.sched = sched
    a = Task("a", lambda: watchdog.invoke(crash("dev", "svc0", 3, 2), w.runtime(), short))

    def b_later():
        w.clock.advance(4.0)  # A is still alive: 1 s of its 5 s left
        return watchdog.invoke(crash("dev", "svc0", 4, 2.2), w.runtime(), CONTEXT)

    b = Task("b", b_later)
    sched.run([a, b])
    assert switched
    assert isinstance(b.error, watchdog.DecisionInProgressError)  # Lambda retries B later
    assert a.error is None
    assert len(w.alerts()) == 1 and w.updates["svc0"] == 1
    w.retry([b])
    assert b.error is None and len(w.alerts()) == 1


def test_an_event_stamped_in_the_future_is_rejected_and_never_blinds_its_service():
    """Item 5: one crash event stamped 2199 moved the service's window into the future; no later real
    crash was ever counted. Now it is rejected with its reason (the recorder keeps it: see
    tests/unit/test_delivery.py)."""
    w = World.new()
    future = crash("dev", "svc0", 99, 0)
    future["time"] = "2199-01-01T00:00:00Z"
    first = parse_time(crash("dev", "svc0", 1, 0)["time"])
    out = watchdog.invoke(future, w.runtime(), CONTEXT, delivered_at=first + timedelta(minutes=3))
    assert out["status"] == "rejected" and "after its delivery" in out["reason"]
    outs = []
    for i in (1, 2, 3):
        e = crash("dev", "svc0", i, i)
        at = parse_time(e["time"]) + timedelta(seconds=30)
        outs.append(watchdog.invoke(e, w.runtime(), CONTEXT, delivered_at=at))
    assert outs[-1]["status"] == "decided" and w.desired()["svc0"] == 0
    # 14 minutes ahead is clock skew, not a wrong clock: accepted
    skewed = crash("dev", "svc2", 1, 10)
    out = watchdog.invoke(skewed, w.runtime(), CONTEXT, delivered_at=parse_time(skewed["time"]) - timedelta(minutes=14))
    assert out["status"] != "rejected"


def test_lease_after_the_retry_delay_is_taken_over_by_the_retry():
    """A death right after the claim: Lambda's retry (after the lease, on the injected clock) resumes the
    episode from its recorded phase and acts once."""
    w = World.new()
    w.settle([crash("dev", "svc0", 1, 0), crash("dev", "svc0", 2, 1)])
    seen: list[str] = []

    def fault(task: str, op: str, step: int) -> str | None:
        seen.append(op)
        return "die" if op == "table.put" and "table.transact_put" in seen[:-1] else None

    sched = Scheduler(lambda names, last, step: names[0], fault)
    w.sched = sched
    t = Task("a", w.deliver(crash("dev", "svc0", 3, 2)))
    sched.run([t])
    assert t.error is not None and w.desired()["svc0"] == 2
    w.sched = None
    # before the lease ends, a redelivery waits
    try:
        w.deliver(crash("dev", "svc0", 3, 2))()
        raise AssertionError("a live lease was taken over")
    except watchdog.DecisionInProgressError:
        pass
    w.clock.advance(LEASE_S)
    out = w.deliver(crash("dev", "svc0", 3, 2))()
    assert out["status"] == "resumed" and w.desired()["svc0"] == 0 and w.updates["svc0"] == 1
    assert len(w.alerts()) == 1 and w.check_after() == []


def test_an_unreadable_scalable_target_is_never_scaled_past(monkeypatch):
    """DescribeScalableTargets answered AccessDenied at the decision: the watchdog cannot know whether a
    scaling policy would put the tasks back, so it alerts (scaling_suspend_failed) and scales nothing."""
    from botocore.exceptions import ClientError

    from ecs_guardrail.replay import memory_aws

    def denied(self, **_):
        raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}}, "DescribeScalableTargets")

    monkeypatch.setattr(memory_aws._ApplicationAutoScaling, "describe_scalable_targets", denied)
    w = World.new()
    w.settle([crash("dev", "svc0", i, i) for i in (1, 2, 3)])
    assert w.desired()["svc0"] == 2 and w.updates["svc0"] == 0
    [item] = w.table.query("SVC#dev#svc0", prefix="DEC#")
    assert (item["action"], item["reason"]) == ("alert_only", "scaling_suspend_failed")
    assert len(w.alerts()) == 1 and w.store().state.cluster("dev").held() == ()
