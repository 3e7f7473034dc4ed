"""Time-sane delivery: an event stamped in the future is rejected (ARCHITECTURE.md, "Safe by construction").

A single crash event stamped 2199 would move its service's window into the future, and no later real
crash would ever count again. ECS stamps events with the time of the state change; EventBridge
delivers them after it, late by seconds to hours (asynchronous retries up to 6 hours), never before.
So an event whose ``time`` is more than :data:`MAX_FUTURE_SKEW` after its delivery is wrong, and is
rejected with its reason (and kept by the recorder, like every rejected event). A replay knows a
line's delivery time only where the scenario records it (``delivered.csv``, SCENARIOS.md); elsewhere
it cannot tell a future stamp from a quiet gap and does not check.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from ecs_guardrail.core.errors import EventFromTheFutureError

__all__ = ["MAX_FUTURE_SKEW", "check_delivery"]

#: how far after its delivery an event's ``time`` may be (clock skew between ECS and Lambda is seconds)
MAX_FUTURE_SKEW = timedelta(minutes=15)


def check_delivery(event_time: datetime, delivered_at: datetime | None) -> None:
    """Reject an event stamped more than :data:`MAX_FUTURE_SKEW` after ``delivered_at``.

    ``event_time``: the envelope's ``time`` (UTC); ``delivered_at``: when the invocation received it
    (UTC; ``None``: unknown, not checked).

    Raises:
        EventFromTheFutureError: the event is stamped too far ahead; its ``reason`` names both times.
    """
    if delivered_at is None:
        return
    ahead = event_time - delivered_at
    if ahead > MAX_FUTURE_SKEW:
        minutes = ahead.total_seconds() / 60
        raise EventFromTheFutureError(
            f"event stamped {event_time.isoformat()} is {minutes:.0f} min after its delivery at "
            f"{delivered_at.isoformat()} ("
            + (f"{ahead.days:,} days; " if ahead.days >= 2 else "")  # 91180377 min says little: 63,319 days does
            + f"more than {int(MAX_FUTURE_SKEW.total_seconds() // 60)} min): "
            "a wrong clock; kept, never counted")
