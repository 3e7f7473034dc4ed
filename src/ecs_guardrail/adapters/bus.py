"""Amazon EventBridge: the sampler hands its container-restart observations to the watchdog.

A restart-policy loop emits no ECS event (ARCHITECTURE.md, "Restart-policy loops"), so the sampler,
which reads Container Insights each minute, puts one event per service that restarted on the account's
default bus (PutEvents, at most 10 entries a call; API reference), ``source`` ``ecs-guardrail`` and
``detail-type`` ``Container Restarts``; the sweep rule routes them to the sweep function, the
watchdog's code in its own lane (``events/patterns.json``; issue 32: never behind a storm's task
events). Such an event can only ever make an alert-only ``restart_loop`` decision (or a hold), never
a scale-down, whoever puts it.
"""

from __future__ import annotations

import json
from typing import Any

from ecs_guardrail.core.errors import ObservationsNotSentError
from ecs_guardrail.core.permissions import permissions

__all__ = ["ObservationBus", "ObservationsNotSentError"]


class ObservationBus:
    """PutEvents to the default bus through an ``events`` client passed in."""

    MAX_ENTRIES = 10

    def __init__(self, client: Any) -> None:
        self._events = client

    @permissions(default_bus=["events:PutEvents"])
    def put(self, events: list[dict[str, Any]]) -> int:
        """Put EventBridge-shaped events (``source``, ``detail-type``, ``time``, ``resources``, ``detail``).
        Returns how many were put.

        Raises:
            ObservationsNotSentError: EventBridge answered ``FailedEntryCount`` > 0 (the entries' error codes
                are named).
            botocore.exceptions.ClientError: the call itself failed.
        """
        for i in range(0, len(events), self.MAX_ENTRIES):
            entries = [{"Source": e["source"], "DetailType": e["detail-type"], "Resources": list(e["resources"]),
                        "Detail": json.dumps(e["detail"], sort_keys=True), "EventBusName": "default"}
                       for e in events[i:i + self.MAX_ENTRIES]]
            resp = self._events.put_events(Entries=entries)
            if resp.get("FailedEntryCount"):
                codes = sorted({r.get("ErrorCode", "?") for r in resp.get("Entries", []) if r.get("ErrorCode")})
                raise ObservationsNotSentError(f"EventBridge refused {resp['FailedEntryCount']} restart "
                                               f"observation(s): {', '.join(codes)}")
        return len(events)
