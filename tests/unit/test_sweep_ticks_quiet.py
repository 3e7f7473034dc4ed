"""``SweepTicks.quiet`` (issue 33 item 2): the stretch of event times in which ``before_event`` would do nothing
(no minute of the sweep, the CSV or a lane ends by it). ``Replay._route`` skips the call for an event in it; the
minutes ticked, and when, are those of calling ``before_event`` for every event."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from ecs_guardrail.replay.clock import MinuteClock
from ecs_guardrail.replay.run import SweepTicks

T0 = datetime(2025, 10, 7, 10, 0, tzinfo=UTC)


class _Ticks(SweepTicks):
    """Ticks logged, nothing sampled or swept."""

    def __init__(self, csv: tuple[datetime, datetime] | None, log: list[Any]) -> None:
        rt = SimpleNamespace(settings=SimpleNamespace(policy=lambda: SimpleNamespace(window=timedelta(minutes=5))))
        sampler = SimpleNamespace(first=csv[0] if csv else None, last=csv[1] if csv else None)
        super().__init__(sampler, rt, None, None)
        self.log = log

    def tick(self, minute: datetime) -> None:
        self.log.append(("tick", minute))


def _run(events: list[datetime | None], csv: tuple[datetime, datetime] | None,
         lane: tuple[datetime, datetime] | None, skip: bool) -> list[Any]:
    log: list[Any] = []
    clock = _Ticks(csv, log)
    if lane is not None:
        clock.lanes.append(MinuteClock(lane[0], lane[1], lambda m: log.append(("lane", m))))
    for t in events:
        quiet = clock.quiet
        if not skip or t is None or quiet is None or not quiet[0] <= t < quiet[1]:
            clock.before_event(t)
        log.append(("event", t))
    clock.finish()
    return log


@pytest.mark.parametrize("seed", range(60))
def test_skipping_events_in_the_quiet_stretch_ticks_as_calling_before_event_for_each(seed):
    rng = random.Random(seed)
    t, events = T0, []
    for _ in range(rng.randint(1, 80)):
        t += timedelta(seconds=rng.choice([0, 1, 5, 20, 59, 60, 61, 300, 900]))
        late = rng.random() < 0.15  # a late event: older than the clock
        events.append(None if rng.random() < 0.05 else t - timedelta(seconds=rng.randint(1, 1200)) if late else t)
    csv = rng.choice([None, (T0, T0 + timedelta(minutes=30)), (T0 + timedelta(minutes=7), T0 + timedelta(minutes=9)),
                      (T0 - timedelta(minutes=20), T0 + timedelta(minutes=2))])
    lane = rng.choice([None, (T0 + timedelta(minutes=3), T0 + timedelta(minutes=12)),
                       (T0 - timedelta(minutes=5), T0 + timedelta(minutes=1))])
    skipped = _run(events, csv, lane, skip=True)
    assert skipped == _run(events, csv, lane, skip=False)


def test_a_lane_minute_inside_the_events_minute_ends_the_quiet_stretch():
    """A lane's minute that ends within the minute of the last event: an event after it is not skipped."""
    log: list[Any] = []
    clock = _Ticks(None, log)
    clock.lanes.append(MinuteClock(T0, T0, lambda m: log.append(("lane", m))))
    clock.before_event(T0 + timedelta(seconds=10))
    assert clock.quiet is not None and clock.quiet[1] <= T0 + timedelta(minutes=1)
    assert not clock.quiet[0] <= T0 + timedelta(minutes=1, seconds=1) < clock.quiet[1]
