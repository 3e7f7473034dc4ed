"""The crash path's own lane under a storm's backlog (issue 32 item 3), through the real handlers on the
explorer's world and a deterministic model of Lambda's asynchronous queues (replay/lanes.py): rounds,
never wall-clock time.

Thousands of task events wait in the watchdog's queue (its reserved concurrency 5); the one-minute
sweep (a probe due) and a restart observation (a restart loop on the alert-only cluster) are routed to
the sweep function's queue by the same patterns and schedule target both templates deploy, and both
are decided in the first round. In one shared queue (before the lane) the sweep would have run only
after the whole backlog.
"""

from __future__ import annotations

import math
from datetime import timedelta

import ecsgen
from situations import PROBE_ENV
from world import CONTEXT, T0, World, crash

from ecs_guardrail.core.summary import ActionStatus
from ecs_guardrail.handlers import lane, watchdog
from ecs_guardrail.replay.lanes import AsyncLanes, lane_of
from ecs_guardrail.routing import PATTERNS

#: the watchdog's default reserved concurrency (WatchdogReservedConcurrency) and the storm's backlog
WATCHDOG_SLOTS = 5
BACKLOG = 3000


def _schedule(minute: float) -> dict:
    return {"source": "aws.events", "detail-type": "Scheduled Event", "account": ecsgen.ACCOUNT,
            "time": ecsgen.iso(T0 + timedelta(minutes=minute)), "detail": {}}


def _restarts(minute: float, restarts: int) -> dict:
    """The sampler's observation of ``restarts`` container restarts of prod/orders in one minute."""
    return {"source": "ecs-guardrail", "detail-type": "Container Restarts", "account": ecsgen.ACCOUNT,
            "time": ecsgen.iso(T0 + timedelta(minutes=minute)), "region": ecsgen.REGION,
            "detail": {"clusterArn": f"arn:aws:ecs:{ecsgen.REGION}:{ecsgen.ACCOUNT}:cluster/prod",
                       "serviceName": "orders", "minute": ecsgen.iso(T0 + timedelta(minutes=minute)),
                       "restarts": restarts, "restartCount": restarts}}


def _storm() -> list[dict]:
    """A storm's task events on dev's other services, as they would wait in the watchdog's queue."""
    return [crash("dev", f"svc{2 + n % 3}", 100 + n, 19 + n / BACKLOG) for n in range(BACKLOG)]


def test_the_routing_puts_the_sweep_and_restart_observations_in_their_own_lane() -> None:
    assert lane_of(_schedule(20), ecsgen.ACCOUNT) == "sweep"
    assert lane_of(_restarts(19, 3), ecsgen.ACCOUNT) == "sweep"
    assert lane_of(crash("dev", "svc2", 1, 1), ecsgen.ACCOUNT) == "watchdog"
    # another account's observation is delivered to neither function (issue 29 item 4)
    assert lane_of({**_restarts(19, 3), "account": "999999999999"}, ecsgen.ACCOUNT) is None
    assert "Container Restarts" not in str(PATTERNS["watchdog"])
    # the model's slots are the templates' (tests/infra/test_parity_functions.py holds both to them)
    assert lane.RESERVED_CONCURRENCY == 2


def test_the_sweep_and_a_restart_observation_are_decided_in_the_first_round_behind_a_backlog() -> None:
    w = World.new(**PROBE_ENV)
    w.settle([crash("dev", "svc0", i, i) for i in (1, 2, 3)])  # svc0 held at zero at 12:03
    assert w.desired()["svc0"] == 0
    w.clock.now = (T0 + timedelta(minutes=20)).timestamp()

    def run(function: str, event: dict) -> dict:
        # the function's own entry (its handler without the Lambda environment): the sweep function's
        # is lane.invoke, the watchdog's watchdog.invoke
        rt = w.runtime()
        return lane.invoke(event, rt, CONTEXT) if function == "sweep" else watchdog.invoke(
            event, rt, CONTEXT, delivered_at=T0 + timedelta(minutes=20))

    lanes = AsyncLanes({"watchdog": WATCHDOG_SLOTS, "sweep": lane.RESERVED_CONCURRENCY}, account=ecsgen.ACCOUNT)
    storm, sweep, observed = _storm(), _schedule(20), _restarts(19, 3)
    # the storm's backlog is queued first: in one shared queue both would wait behind all of it
    assert set(lanes.deliver(storm)) == {"watchdog"}
    assert lanes.deliver([sweep, observed]) == ["sweep", "sweep"]
    ran = lanes.step(run)

    assert lanes.rounds_until("sweep", sweep) == lanes.rounds_until("sweep", observed) == 1
    assert lanes.pending("watchdog") == BACKLOG - WATCHDOG_SLOTS and lanes.pending("sweep") == 0
    outcomes = {id(e): out for _, e, out in ran}
    # the sweep started svc0's due probe (15 minutes after its 12:03 hold), once
    swept = outcomes[id(sweep)]
    assert not isinstance(swept, Exception), swept
    assert swept["probes"]["started"] == 1 and w.desired()["svc0"] == 1
    assert w.store().state.load("dev", "svc0", fresh=True).episode.action_status is ActionStatus.PROBING
    # the restart observation decided prod/orders' restart loop (alert-only), once
    decided = outcomes[id(observed)]
    assert not isinstance(decided, Exception), decided
    assert [d["action"] for d in decided["decisions"]] == ["alert_only"]
    assert [d["service"] for d in decided["decisions"]] == ["orders"]
    assert w.desired("prod")["orders"] == 3

    # the same arrivals in one shared queue (the watchdog's 5 slots, the lane before issue 32): the sweep
    # would wait for the whole backlog
    shared = AsyncLanes({"watchdog": WATCHDOG_SLOTS}, route=lambda e: "watchdog")
    shared.deliver(storm + [sweep, observed])
    while shared.rounds_until("watchdog", sweep) is None:
        shared.step(lambda f, e: None)
    assert shared.rounds_until("watchdog", sweep) == math.ceil((BACKLOG + 1) / WATCHDOG_SLOTS) == 601


def test_the_next_rounds_keep_the_lane_free_and_decide_nothing_twice() -> None:
    """A second sweep and a redelivered observation in round 2 (the backlog still waiting) change
    nothing: the probe is not started again and the restart loop not decided again."""
    w = World.new(**PROBE_ENV)
    w.settle([crash("dev", "svc0", i, i) for i in (1, 2, 3)])
    w.clock.now = (T0 + timedelta(minutes=20)).timestamp()
    runs = []

    def run(function: str, event: dict) -> dict:
        runs.append(function)
        rt = w.runtime()
        return lane.invoke(event, rt, CONTEXT) if function == "sweep" else {"status": "not run"}

    lanes = AsyncLanes({"watchdog": WATCHDOG_SLOTS, "sweep": lane.RESERVED_CONCURRENCY}, account=ecsgen.ACCOUNT)
    lanes.deliver(_storm())
    lanes.deliver([_schedule(20), _restarts(19, 3)])
    first = [out for f, _, out in lanes.step(run) if f == "sweep"]
    lanes.deliver([_schedule(21), _restarts(19, 3)])  # the next minute, and the observation redelivered
    second = [out for f, _, out in lanes.step(run) if f == "sweep"]
    assert [o["probes"]["started"] for o in (first[0], second[0])] == [1, 0]
    assert len(first[1]["decisions"]) == 1 and second[1]["decisions"] == []
    assert sum("orders" in str(a.get("subject")) for a in w.alerts()) == 1
    assert lanes.pending("watchdog") == BACKLOG - 2 * WATCHDOG_SLOTS


def test_a_schedule_stamped_far_from_the_clock_runs_at_the_clock_and_wedges_nothing() -> None:
    """A scheduled event at year 9999 started a probe stamped there; every later sweep raised
    OverflowError on it (no probe, recovery or quiet window of any service again). A time that is not
    ISO 8601 raised ValueError. Both now sweep at the clock's time."""
    w = World.new(**PROBE_ENV)
    w.settle([crash("dev", "svc0", i, i) for i in (1, 2, 3)])
    w.clock.now = (T0 + timedelta(minutes=20)).timestamp()
    for stamp in ("9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z", "garbage", 12345):
        out = lane.invoke({**_schedule(20), "time": stamp}, w.runtime(), CONTEXT)
        assert out["status"] == "swept"
    assert w.store().state.load("dev", "svc0", fresh=True).episode.action_status is ActionStatus.PROBING
    w.clock.now = (T0 + timedelta(minutes=40)).timestamp()
    out = lane.invoke(_schedule(40), w.runtime(), CONTEXT)
    assert out["probes"]["passed"] == 1 and out["restored"] == ["dev/svc0"]
