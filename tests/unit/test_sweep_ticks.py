"""The replay's sweep clock (``replay.run.SweepTicks``, issue 33 item 2): an event in the minute of the one
before it returns at once, and ``SweepTicks.quiet`` is the stretch of event times in which ``before_event``
would do nothing (no minute of the sweep, the CSV or a lane ends by it), which ``Replay._route`` skips. Either
way the minutes ticked, and when, are those of the full bookkeeping run for every event."""

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
    """Ticks logged, nothing sampled or swept; ``full``: the same-minute shortcut off."""

    def __init__(self, csv: tuple[datetime, datetime] | None, log: list[Any], full: bool = False) -> None:
        rt = SimpleNamespace(settings=SimpleNamespace(policy=lambda: SimpleNamespace(window=timedelta(minutes=5))))
        sampler = SimpleNamespace(first=csv[0] if csv else None, last=csv[1] if csv else None)
        super().__init__(sampler, rt, None, None)
        self.log, self.full = log, full

    def _sweep_before(self, t: datetime | None) -> None:
        if self.full:
            self._minute_done = None
        super()._sweep_before(t)

    def tick(self, minute: datetime) -> None:
        self.log.append(("tick", minute))


def _random_stream(rng: random.Random, most: int) -> tuple[list[datetime | None], tuple[datetime, datetime] | None]:
    """Up to ``most`` event times (some late: older than the clock; some without a time) and a CSV span."""
    t, events = T0, []
    for _ in range(rng.randint(1, most)):
        t += timedelta(seconds=rng.choice([0, 1, 5, 20, 59, 60, 61, 300, 900]))
        late = rng.random() < 0.15  # a late event: older than the clock
        events.append(None if rng.random() < 0.05 else t - timedelta(seconds=rng.randint(1, 1200)) if late else t)
    csv = rng.choice([None, (T0, T0 + timedelta(minutes=30)), (T0 + timedelta(minutes=7), T0 + timedelta(minutes=9)),
                      (T0 - timedelta(minutes=20), T0 + timedelta(minutes=2))])
    return events, csv


def _run(events: list[datetime | None], csv: tuple[datetime, datetime] | None, *, full: bool = False,
         lane: tuple[datetime, datetime] | None = None, skip: bool = False) -> list[Any]:
    log: list[Any] = []
    clock = _Ticks(csv, log, full)
    if lane is not None:
        clock.lanes.append(MinuteClock(lane[0], lane[1], lambda m: log.append(("lane", m))))
    for t in events:
        quiet = clock.quiet
        if not skip or t is None or quiet is None or not quiet[0] <= t < quiet[1]:
            clock.before_event(t)
        log.append(("event", t))
    clock.finish()
    return log


@pytest.mark.parametrize("seed", range(40))
def test_events_in_one_minute_tick_as_with_the_full_bookkeeping(seed):
    events, csv = _random_stream(random.Random(seed), 60)
    assert _run(events, csv, full=False) == _run(events, csv, full=True)


def test_an_event_in_the_csvs_first_minute_after_a_gap_then_another_in_it():
    """The clock's next minute is left before the event's own (the gap before the CSV's first minute,
    beyond the reach of the events before): the second event of that minute ticks the gap's minutes the
    first one's reach now covers, with the full bookkeeping as without the shortcut."""
    events = [T0 + timedelta(seconds=10), T0 + timedelta(minutes=10), T0 + timedelta(minutes=30, seconds=10),
              T0 + timedelta(minutes=30, seconds=20)]
    csv = (T0 + timedelta(minutes=30), T0 + timedelta(minutes=40))
    log = _run(events, csv, full=False)
    assert log == _run(events, csv, full=True)
    ticks_before_last = [m for kind, m in log[:log.index(("event", events[-1]))] if kind == "tick"]
    assert ticks_before_last[-1] == T0 + timedelta(minutes=29)


@pytest.mark.parametrize("seed", range(60))
def test_skipping_events_in_the_quiet_stretch_ticks_as_calling_before_event_for_each(seed):
    rng = random.Random(seed)
    events, csv = _random_stream(rng, 80)
    lane = rng.choice([None, (T0 + timedelta(minutes=3), T0 + timedelta(minutes=12)),
                       (T0 - timedelta(minutes=5), T0 + timedelta(minutes=1))])
    skipped = _run(events, csv, lane=lane, skip=True)
    assert skipped == _run(events, csv, lane=lane, skip=False)


def test_a_lane_minute_inside_the_events_minute_ends_the_quiet_stretch():
    """A lane's minute that ends within the minute of the last event: an event after it is not skipped."""
    log: list[Any] = []
    clock = _Ticks(None, log)
    clock.lanes.append(MinuteClock(T0, T0, lambda m: log.append(("lane", m))))
    clock.before_event(T0 + timedelta(seconds=10))
    assert clock.quiet is not None and clock.quiet[1] <= T0 + timedelta(minutes=1)
    assert not clock.quiet[0] <= T0 + timedelta(minutes=1, seconds=1) < clock.quiet[1]
