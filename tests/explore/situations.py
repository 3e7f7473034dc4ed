"""The explorer's situations (a history and the invocations that race) and the run of one schedule."""

from __future__ import annotations

import copy
import json
import os
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

import ecsgen
import pytest
from scheduler import Scheduler, Step, Task
from world import T0, World, crash, decision_times

from ecs_guardrail.handlers.runtime import metrics

PREEMPTIONS = 2
#: how much of the two-preemption bound runs: ``quick`` (``make test``) every schedule within one preemption
#: and a fixed, seeded sample of :data:`QUICK_SAMPLE` of each situation's two-preemption ones; ``full``
#: (``make explore``, ``make mutate``, CI's own step) every one, exhaustively
BUDGET = os.environ.get("EXPLORE_BUDGET", "quick")
if BUDGET not in ("quick", "full"):
    raise ValueError(f"EXPLORE_BUDGET={BUDGET!r}: quick (make test) or full (make explore)")
QUICK_SAMPLE = 40
SAMPLE = int(os.environ.get("EXPLORE_SCHEDULES", "150"))
COUNTS: dict[str, int] = {}


@dataclass
class Situation:
    """A world's history (settled before the schedule) and the invocations that then race."""

    name: str
    history: Callable[[World], None]
    tasks: Callable[[World], list[Task]]
    env: dict[str, str] | None = None
    #: the situation's own invariants after the schedule (violations), beside the world's
    check: Callable[[World], list[str]] | None = None

    def base(self) -> World:
        w = World.new(**(self.env or {}))
        self.history(w)
        return w


def _same_service_history(w: World) -> None:
    w.settle([crash("dev", "svc0", 1, 0), crash("dev", "svc0", 2, 1)])


def _near_cap_history(w: World) -> None:
    # two loops 40 minutes apart in event time, delivered at the same moment (a backlog): the fleet
    # test sees one failing service each; the cap (bound 1) must keep one of them up
    w.settle([crash("dev", "svc0", 1, 0), crash("dev", "svc0", 2, 1), crash("dev", "svc1", 1, 40),
              crash("dev", "svc1", 2, 41)])


def _held_history(w: World) -> None:
    w.settle([crash("dev", "svc0", i, i) for i in (1, 2, 3)] + [crash("dev", "svc1", 1, 40),
                                                                crash("dev", "svc1", 2, 41)])


def _prod_history(w: World) -> None:
    w.settle([crash("prod", "orders", 1, 0), crash("prod", "orders", 2, 1)])


PROBE_ENV = {"RECOVERY": "probe", "PROBE_DELAY_MINUTES": "15", "PROBE_PASS_MINUTES": "10"}


def _probing_history(w: World) -> None:
    # svc0 held at zero at minute 3, its first probe started by the sweep at minute 20 (desired count 1)
    _held_history(w)
    w.settle_sweep(20)


def _job_crash(n: int, minute: float) -> dict:
    return ecsgen.task_event("dev", None, f"{n:032x}", "crash_exit", T0 + timedelta(minutes=minute),
                             group="family:nightly")


def _job_window_history(w: World) -> None:
    # a job window of three failures opened at minute 0: over at minute 30
    w.settle([_job_crash(n, m) for n, m in ((1, 0), (2, 5), (3, 9))])


def _one_job_summary(w: World) -> list[str]:
    """The window's summary went out (the sweep's or the next failure's), at least once as every alert,
    and every copy of it is the same alert (one alert id: a receiver can tell a repeat)."""
    ids = {json.loads(str(a.get("message")))["metadata"]["additionalContext"]["alert_id"]
           for a in w.alerts() if "failed 3 times in 30 min" in str(a.get("subject"))}
    return [] if len(ids) == 1 else [f"the job window's summary went out as {len(ids)} alerts: {sorted(ids)}"]


def _probing_episode_kept(w: World) -> list[str]:
    """The probed episode (svc0's scale-down at minute 3) is never replaced: the impaired event fails
    the probe while it runs, and is late news of the probe window once the pass restored svc0."""
    times = decision_times(w, "dev", "svc0")
    ep = w.store().state.load("dev", "svc0", fresh=True).episode
    if len(times) == 1 and ep is not None and ep.decision_time == T0 + timedelta(minutes=3):
        return []
    return [f"svc0's probed episode was replaced: decisions {times}, current {ep and ep.decision_time}"]


def _held_late_stops_history(w: World) -> None:
    # svc0 held at zero at minute 3, its episode ended by a steady state at minute 4; two late stops of
    # tasks launched before the scale-down (minutes 5, 6); svc1 two crashes (near the cap)
    _held_history(w)
    steady = ecsgen.impaired_event("dev", "svc0", T0 + timedelta(minutes=4))
    steady["id"] = "steady-svc0-4"
    steady["detail"].update(eventName="SERVICE_STEADY_STATE", eventType="INFO")
    w.settle([steady, crash("dev", "svc0", 4, 5), crash("dev", "svc0", 5, 6)])


def _one_decision_of(service: str) -> Callable[[World], list[str]]:
    """Issue 37: a service held at zero gets no second decision (and no second alert of one)."""
    def check(w: World) -> list[str]:
        times = decision_times(w, "dev", service)
        subjects = [str(a.get("subject")) for a in w.alerts() if f"dev/{service}" in str(a.get("subject"))
                    and "recovered" not in str(a.get("subject"))]
        out = [] if len(times) == 1 else [f"{service} held at zero got {len(times)} decisions: {times}"]
        return out + ([] if len(subjects) <= 1 else [f"{service} held at zero alerted {len(subjects)} times"])
    return check


def _probe_or_operator(w: World) -> list[str]:
    """After a probe step raced an operator's raise and the operator's count stands: every later probe
    step (a sweep long after, when a pass, a start or a way back is due) leaves it as it is."""
    count = w.operator.get("svc0")
    if count is None or w.desired()["svc0"] != count:
        return []  # the operator's call did not run, or the race the README names
    for minute in (60, 200, 500):
        w.settle_sweep(minute)
    if w.desired()["svc0"] != count:
        return [f"a later probe step changed the operator's count {count} to {w.desired()['svc0']}"]
    ep = w.store().state.load("dev", "svc0", fresh=True).episode
    if ep is not None and ep.held_at_zero:
        return [f"svc0 at the operator's count {count}, still held ({ep.action_status.value}) after the sweeps"]
    return []


LATE_STOP = crash("dev", "svc0", 6, 7)

SITUATIONS = [
    Situation("same-service-redelivered", _same_service_history,
              lambda w: [Task("a", w.deliver(crash("dev", "svc0", 3, 2))),
                         Task("b", w.deliver(crash("dev", "svc0", 3, 2)))]),
    Situation("same-service-two-crashes", _same_service_history,
              lambda w: [Task("a", w.deliver(crash("dev", "svc0", 3, 2))),
                         Task("b", w.deliver(crash("dev", "svc0", 4, 2.5)))]),
    Situation("two-services-near-the-cap", _near_cap_history,
              lambda w: [Task("a", w.deliver(crash("dev", "svc0", 3, 2))),
                         Task("b", w.deliver(crash("dev", "svc1", 3, 42)))]),
    Situation("held-service-restored-while-another-decides", _held_history,
              lambda w: [Task("restore", w.restore("svc0")),
                         Task("b", w.deliver(crash("dev", "svc1", 3, 42)))]),
    Situation("probed-service-while-another-decides-near-the-cap", _probing_history,
              lambda w: [Task("sweep", w.sweep(31)), Task("b", w.deliver(crash("dev", "svc1", 3, 42)))], PROBE_ENV),
    Situation("probe-failing-while-restore-runs", _probing_history,
              lambda w: [Task("restore", w.restore("svc0")), Task("a", w.deliver(crash("dev", "svc0", 4, 25)))],
              PROBE_ENV),
    Situation("probe-due-beside-a-failing-probe", _probing_history,
              lambda w: [Task("sweep", w.sweep(31)), Task("a", w.deliver(crash("dev", "svc0", 4, 25)))], PROBE_ENV),
    # a service-level failure (SERVICE_TASK_START_IMPAIRED) is the probe's verdict, never a new decision
    Situation("start-impaired-beside-a-due-probe-pass", _probing_history,
              lambda w: [Task("sweep", w.sweep(31)),
                         Task("a", w.deliver(ecsgen.impaired_event("dev", "svc0", T0 + timedelta(minutes=25))))],
              PROBE_ENV, lambda w: _probing_episode_kept(w)),
    # issue 37: a held service's late stops beside another service's loop near the cap: one decision
    Situation("held-service-late-stop-beside-a-loop-near-the-cap", _held_late_stops_history,
              lambda w: [Task("a", w.deliver(copy.deepcopy(LATE_STOP))),
                         Task("b", w.deliver(crash("dev", "svc1", 3, 42)))], check=_one_decision_of("svc0")),
    Situation("held-service-late-stop-redelivered", _held_late_stops_history,
              lambda w: [Task("a", w.deliver(copy.deepcopy(LATE_STOP))),
                         Task("b", w.deliver(copy.deepcopy(LATE_STOP)))], check=_one_decision_of("svc0")),
    # issue 30 items 1-4: a probe's start, failure and pass against an operator's raise and a restore
    Situation("probe-start-against-an-operators-raise", _held_history,
              lambda w: [Task("sweep", w.sweep(20)), Task("operator", w.raise_("svc0", 5))], PROBE_ENV,
              _probe_or_operator),
    Situation("probe-failure-against-an-operators-raise", _probing_history,
              lambda w: [Task("a", w.deliver(crash("dev", "svc0", 4, 25))), Task("operator", w.raise_("svc0", 5))],
              PROBE_ENV, _probe_or_operator),
    Situation("probe-pass-against-an-operators-raise", _probing_history,
              lambda w: [Task("sweep", w.sweep(31)), Task("operator", w.raise_("svc0", 4))], PROBE_ENV,
              _probe_or_operator),
    Situation("probe-start-against-a-restore", _held_history,
              lambda w: [Task("sweep", w.sweep(20)), Task("restore", w.restore("svc0"))], PROBE_ENV),
    Situation("probe-pass-against-a-restore", _probing_history,
              lambda w: [Task("sweep", w.sweep(31)), Task("restore", w.restore("svc0"))], PROBE_ENV),
    Situation("job-window-closed-by-the-sweep-beside-the-next-failure", _job_window_history,
              lambda w: [Task("sweep", w.sweep(31)), Task("a", w.deliver(_job_crash(4, 32)))],
              check=_one_job_summary),
] + [
    # an alert-only cluster named every way ALERT_ONLY_CLUSTERS allows: nothing there may ever be changed
    Situation(f"alert-only-cluster-by-{how}", _prod_history,
              lambda w: [Task("a", w.deliver(crash("prod", "orders", 3, 2))),
                         Task("b", w.deliver(crash("prod", "orders", 4, 2.5)))], {"ALERT_ONLY_CLUSTERS": value})
    for how, value in (("name", "prod"), ("glob", "pro*"),
                       ("arn", f"arn:aws:ecs:{ecsgen.REGION}:{ecsgen.ACCOUNT}:cluster/prod"))
]
_BASES: dict[str, tuple[World, bytes]] = {}


def fresh_world(sit: Situation) -> World:
    """A copy of the situation's world after its history (the history is settled once per situation).

    The copy is unpickled from the settled world's pickle: the same fresh objects a deep copy gives, in
    about a fifth of its CPU (thousands of schedules each start from one)."""
    if sit.name not in _BASES:
        base = sit.base()
        _BASES[sit.name] = (base, pickle.dumps((base.aws, base.table), pickle.HIGHEST_PROTOCOL))
    base, state = _BASES[sit.name]
    aws, table = pickle.loads(state)
    w = World(aws, table, dict(base.desired0), env=dict(base.env))
    w.clock.now = base.clock.now
    return w


def run_schedule(sit: Situation, choose: Callable[..., str], fault: Callable[..., str | None] | None = None,
         label: str = "") -> tuple[World, list[Step]]:
    metrics.clear_metrics()
    w = fresh_world(sit)
    sched = Scheduler(choose, fault, on_expire=lambda: w.clock.advance(3600), check=w.check_always)
    w.sched = sched
    tasks = sit.tasks(w)
    sched.run(tasks)
    w.retry(tasks)
    problems = w.check_after() + w.check_operator() + w.check_restore() + (sit.check(w) if sit.check else [])
    if problems:
        steps = " ".join(f"{s.chosen}:{s.op}" for s in sched.trace)
        pytest.fail(f"{sit.name} {label}: " + "; ".join(problems) + f"\nschedule: {steps}")
    return w, sched.trace



THREE = [
    Situation("three-services-near-the-cap", lambda w: w.settle(
        [crash("dev", s, i, m + i - 1) for s, m in (("svc0", 0), ("svc1", 40), ("svc2", 80)) for i in (1, 2)]),
        lambda w: [Task("a", w.deliver(crash("dev", "svc0", 3, 2))), Task("b", w.deliver(crash("dev", "svc1", 3, 42))),
                   Task("c", w.deliver(crash("dev", "svc2", 3, 82)))]),
    Situation("redelivery-beside-a-second-loop", _near_cap_history,
              lambda w: [Task("a", w.deliver(crash("dev", "svc0", 3, 2))),
                         Task("b", w.deliver(crash("dev", "svc0", 3, 2))),
                         Task("c", w.deliver(crash("dev", "svc1", 3, 42)))]),
    Situation("held-service-late-stop-redelivered-beside-a-loop-near-the-cap", _held_late_stops_history,
              lambda w: [Task("a", w.deliver(copy.deepcopy(LATE_STOP))),
                         Task("b", w.deliver(copy.deepcopy(LATE_STOP))),
                         Task("c", w.deliver(crash("dev", "svc1", 3, 42)))], check=_one_decision_of("svc0")),
    Situation("probe-failure-against-an-operators-raise-and-a-sweep", _probing_history,
              lambda w: [Task("a", w.deliver(crash("dev", "svc0", 4, 25))), Task("operator", w.raise_("svc0", 5)),
                         Task("sweep", w.sweep(31))], PROBE_ENV, _probe_or_operator),
    Situation("restore-between-two-loops", _held_history,
              lambda w: [Task("restore", w.restore("svc0")), Task("b", w.deliver(crash("dev", "svc1", 3, 42))),
                         Task("c", w.deliver(crash("dev", "svc1", 4, 43)))]),
]

