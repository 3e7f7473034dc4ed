"""One clock for a replay: delivered events and the sampler's minute ticks, in event-time order.

ARCHITECTURE.md ("Availability"): every minute is judged with the state *of that minute*. In
production the sampler samples minute M at M + ``SAMPLE_LOOKBACK_MINUTES`` (CloudWatch publishes load
balancer metrics late); the desired count it writes with the sample is the one of that moment. A replay
has the whole CSV up front, so it needs no lookback: **the tick of minute M samples minute M directly
in event time, at M + 1 min** (``sampled_at`` = M + 1 min, the desired and running counts as the events
delivered so far left them; the metrics of a block of minutes are read at its last tick, and the last
partial block at the last tick of the CSV).

Placement, the rule the tests pin:

- events keep their delivery order (they may be out of time order and repeated: the watchdog sees them
  exactly as EventBridge delivered them);
- the event clock is the latest event ``time`` delivered so far (it never goes back);
- the tick of minute M runs **before the first delivered event whose time is >= M + 1 min**, i.e. as
  soon as the clock passes the end of minute M. An event at 10:04:59 is delivered before the tick of
  10:04; an event at 10:05:00 after it;
- a late event (time before minutes already ticked) is delivered without ticks; minutes already sampled
  stay as sampled (production does not revise them either);
- an event without a readable ``time`` moves no clock;
- after the last event, the remaining ticks run up to the last minute of ``healthy_hosts.csv``.

Ticks cover the minutes from the first to the last CSV row only (no CSV, no ticks).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

__all__ = ["MinuteClock", "event_time"]

MINUTE = timedelta(minutes=1)


#: the last ``(text, time)`` :func:`event_time` read: a line read twice (a failure's, by the driver and its
#: summary) and the events of one second are parsed once (a tuple, replaced whole: no thread sees half of it)
_LAST: tuple[str, datetime | None] = ("", None)


def event_time(raw: Any) -> datetime | None:
    """The EventBridge envelope's ``time`` in UTC, or None when absent or unreadable."""
    global _LAST
    text = raw.get("time") if isinstance(raw, dict) else None
    if not isinstance(text, str):
        return None
    last = _LAST
    if text == last[0] and type(text) is str:
        return last[1]
    t: datetime | None
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00"))
        if t.tzinfo is not UTC:  # "...Z" and "+00:00" give the UTC singleton: nothing to move
            t = t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)
    except (ValueError, OverflowError):  # OverflowError: year 1 or 9999 moved to UTC ("0001-01-01T00:00:00+01:00")
        t = None
    _LAST = (text, t)
    return t


class MinuteClock:
    """Runs ``tick(minute)`` once for every minute from ``first`` to ``last`` (whole minutes, UTC,
    both included), each at the place the module docstring defines."""

    def __init__(self, first: datetime | None, last: datetime | None, tick: Callable[[datetime], None]) -> None:
        self._next = first
        self._last = last
        self._tick = tick
        self.ticks = 0
        #: the earliest event time :meth:`before_event` ticks at (``None``: no minute left to tick)
        self.due_at: datetime | None = None
        self._due()

    def _due(self) -> None:
        nxt = self._next
        self.due_at = nxt + MINUTE if nxt is not None and self._last is not None and nxt <= self._last else None

    def before_event(self, t: datetime | None) -> None:
        """Call before delivering an event of time ``t``: runs every minute that ended by ``t``."""
        if t is None:
            return
        while self.due_at is not None and self.due_at <= t:
            self._run()

    def finish(self) -> None:
        """Runs the minutes left, up to ``last``."""
        while self._next is not None and self._last is not None and self._next <= self._last:
            self._run()

    def _run(self) -> None:
        assert self._next is not None
        m = self._next
        self._next = m + MINUTE
        self._due()
        self.ticks += 1
        self._tick(m)
