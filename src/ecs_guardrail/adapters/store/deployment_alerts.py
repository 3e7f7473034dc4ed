"""One alert per failed deployment: the claim, in one conditional write (issue 35 item 3).

A ``SERVICE_DEPLOYMENT_FAILED`` event can arrive twice (EventBridge delivers at least once) and two
invocations can read it at once; the alert must go out once. The item ``DEP#<cluster key>#<service>``
/ ``D#<deploymentId>`` (:func:`~ecs_guardrail.adapters.store.keys.deployment_alert`) is written with
``attribute_not_exists(pk)`` by the invocation that sends the alert (``state`` ``claimed``, its
``owner`` and ``lease_until``, Unix seconds), then marked ``sent``. Of two concurrent invocations
exactly one wins the write (DynamoDB Developer Guide, "Condition expressions"); the other finds it
claimed (``busy``) or sent. A claim whose owner died before sending expires at ``lease_until``: the
next delivery of the event (Lambda's retry) takes it over with a write conditional on the old owner
and lease, so an alert is never lost to a crash between the claim and the send. A send that no sink
took gives the claim back (``lease_until`` 0) for the retry.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from ecs_guardrail.adapters.store import keys
from ecs_guardrail.adapters.store.table import Cond, ConditionFailedError, Table
from ecs_guardrail.core.permissions import permissions

__all__ = ["DeploymentAlerts", "ClaimResult"]

#: ``claimed``: this invocation sends the alert; ``sent``: it went out already; ``busy``: another
#: invocation claimed it and its lease runs
ClaimResult = Literal["claimed", "sent", "busy"]


class DeploymentAlerts:
    """The claims of failed deployments' alerts in the history table (``ttl_days``: items expire that
    many days after the failure's event time, or after now if later)."""

    def __init__(self, table: Table, ttl_days: int = 90) -> None:
        self.table = table
        self.ttl = timedelta(days=ttl_days)

    def _item(self, ck: str, service: str, deployment_id: str, state: str, owner: str, lease_until: int,
              at: datetime) -> dict[str, Any]:
        pk, sk = keys.deployment_alert(ck, service, deployment_id)
        return {"pk": pk, "sk": sk, "state": state, "owner": owner, "lease_until": lease_until,
                "deployment_id": deployment_id[:200], "event_time": at.astimezone(UTC).isoformat(),
                "expires_at": int((max(at, datetime.now(UTC)) + self.ttl).timestamp())}

    @permissions(history_table=["dynamodb:PutItem"])
    def claim(self, ck: str, service: str, deployment_id: str, *, owner: str, now: float, lease_until: float,
              at: datetime) -> ClaimResult:
        """Claim the alert of ``deployment_id`` for ``owner`` until ``lease_until`` (Unix seconds; ``now``:
        the invocation's clock). One PutItem (two when an expired claim is taken over)."""
        item = self._item(ck, service, deployment_id, "claimed", owner, int(lease_until), at)
        try:
            self.table.put(item, Cond(absent=True))
            return "claimed"
        except ConditionFailedError as exc:
            old = exc.old
        if old is None:
            return "busy"
        if old.get("state") == "sent":
            return "sent"
        if int(old.get("lease_until") or 0) > now:
            return "busy"
        try:  # the owner died (or gave it back) before sending: take it over from exactly that claim
            self.table.put(item, Cond(any_of=({"state": "claimed", "owner": old.get("owner"),
                                              "lease_until": old.get("lease_until")},)))
            return "claimed"
        except ConditionFailedError as exc:
            return "sent" if exc.old is not None and exc.old.get("state") == "sent" else "busy"

    @permissions(history_table=["dynamodb:PutItem"])
    def finish(self, ck: str, service: str, deployment_id: str, *, owner: str, at: datetime, sent: bool) -> bool:
        """Mark the claim ``sent`` (``sent`` True) or give it back for a retry (``lease_until`` 0), provided
        ``owner`` still holds it. False when another invocation took it over meanwhile."""
        item = self._item(ck, service, deployment_id, "sent" if sent else "claimed", owner, 0, at)
        try:
            self.table.put(item, Cond(any_of=({"state": "claimed", "owner": owner},)))
            return True
        except ConditionFailedError:
            return False
