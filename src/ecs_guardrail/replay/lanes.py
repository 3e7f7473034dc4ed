"""Lambda's asynchronous event queues, modelled deterministically: which function's queue an event
waits in, and how many of its events run per round (issue 32 item 3, "the crash path in its own lane").

EventBridge invokes a Lambda function asynchronously: the event waits in *that function's* queue
until one of the function's concurrency slots is free (Lambda Developer Guide, "Asynchronous
invocation" and "Reserved concurrency"). So two functions are two queues with their own slots: a
backlog in one never delays the other. :class:`AsyncLanes` models exactly that and nothing else: a
FIFO queue per function, and per round each function runs at most its ``slots`` events from the head
of its own queue (a round stands for one service time; no wall clock). Where an event goes is the
bus's routing (:func:`lane_of`: :data:`ecs_guardrail.routing.PATTERNS`, which both templates carry, and
the one-minute schedule's ``sweep`` target), so a test of the model is a test of the templates' lanes.

Used by tests/explore/test_lane_backlog.py (the sweep and a restart observation decided in the first
round while thousands of task events wait in the watchdog's queue) and by ``bench/storm.py``'s
figures of the two lanes.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ecs_guardrail.routing import targets

__all__ = ["AsyncLanes", "Lane", "lane_of", "DECIDING"]

#: the functions that run the watchdog's code, each with its own queue (the recorder's is not modelled)
DECIDING = ("watchdog", "sweep")


def lane_of(event: Any, account: str | None = None) -> str | None:
    """The function whose asynchronous queue ``event`` waits in: ``sweep`` for the one-minute schedule's
    event (``source`` ``aws.events``, ``detail-type`` ``Scheduled Event``: the schedule rule's ``sweep``
    target) and for what :data:`~ecs_guardrail.routing.PATTERNS` ``["sweep"]`` matches (the sampler's
    restart observations); ``watchdog`` for what the watchdog's pattern matches; ``None``: neither (the
    recorder's alone, or nothing)."""
    if isinstance(event, dict) and event.get("source") == "aws.events" \
            and event.get("detail-type") == "Scheduled Event":
        return "sweep"
    routes = targets(event, account)
    for name in DECIDING[::-1]:  # the patterns are disjoint (tests/infra); the sweep's lane first
        if name in routes:
            return name
    return None


@dataclass
class Lane:
    """One function's queue (FIFO, as Lambda's async queue is taken to be) and its reserved ``slots``."""

    name: str
    slots: int
    queue: deque[Any] = field(default_factory=deque)
    #: events run so far, in order: ``(round, event, outcome)``
    ran: list[tuple[int, Any, Any]] = field(default_factory=list)


class AsyncLanes:
    """The deciding functions' queues. ``slots``: function name -> reserved concurrency (at least 1);
    ``route``: event -> function (default :func:`lane_of` for ``account``)."""

    def __init__(self, slots: dict[str, int], *, account: str | None = None,
                 route: Callable[[Any], str | None] | None = None) -> None:
        if any(n < 1 for n in slots.values()):
            raise ValueError(f"every lane needs at least one slot: {slots}")
        self.lanes = {name: Lane(name, n) for name, n in slots.items()}
        self.route = route or (lambda e: lane_of(e, account))
        self.round = 0

    def deliver(self, events: Iterable[Any]) -> list[str | None]:
        """Put each event at the tail of its function's queue; returns each one's function (``None``:
        none of these, not queued).

        Raises:
            KeyError: an event routed to a function this model has no lane for."""
        out = []
        for e in events:
            name = self.route(e)
            if name is not None:
                self.lanes[name].queue.append(e)
            out.append(name)
        return out

    def pending(self, name: str) -> int:
        """Events waiting in function ``name``'s queue."""
        return len(self.lanes[name].queue)

    def step(self, run: Callable[[str, Any], Any]) -> list[tuple[str, Any, Any]]:
        """One round: each function, in the order given to the constructor, takes up to its ``slots``
        events from the head of its own queue and ``run(function, event)`` each (an exception is the
        outcome: Lambda retries it; here it is recorded, never re-queued). Returns ``(function, event,
        outcome)`` of what ran."""
        self.round += 1
        out = []
        for lane in self.lanes.values():
            for _ in range(min(lane.slots, len(lane.queue))):
                event = lane.queue.popleft()
                try:
                    outcome = run(lane.name, event)
                except Exception as exc:  # noqa: BLE001 - the outcome of that invocation, kept
                    outcome = exc
                lane.ran.append((self.round, event, outcome))
                out.append((lane.name, event, outcome))
        return out

    def rounds_until(self, name: str, event: Any) -> int | None:
        """The round in which ``event`` ran in function ``name`` (``None``: not yet)."""
        for r, e, _ in self.lanes[name].ran:
            if e is event:
                return r
        return None
