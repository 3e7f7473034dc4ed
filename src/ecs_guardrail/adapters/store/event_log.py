"""The recorder's writes: every ECS event as it arrived, and every rejected one with its reason.

One item per task version (a late older version never overwrites a newer one: each version is its
own item), one per service or deployment event, written once (``attribute_not_exists``): a
redelivery writes nothing and costs one failed conditional write.
"""

from __future__ import annotations

import hashlib
import json
import time as _time
from datetime import UTC, datetime, timedelta
from typing import Any

from ecs_guardrail.adapters.store import keys
from ecs_guardrail.adapters.store.table import Cond, ConditionFailedError, Item, Table
from ecs_guardrail.core.links import resource_name
from ecs_guardrail.core.permissions import permissions
from ecs_guardrail.core.records import iso

__all__ = ["EventLog", "epoch", "MAX_RAW_BYTES", "TaskEventItem"]

#: raw event text kept per item (DynamoDB items are at most 400 KB)
MAX_RAW_BYTES = 300_000
_ONCE = Cond(absent=True)


def epoch(t: datetime) -> int:
    """Unix time in whole seconds."""
    return int(t.timestamp())


class TaskEventItem(Item):
    """The history item of one task state change, as the recorder writes it (one attribute a field, in
    this order; ``None``: the item has no such attribute). Keys: ``pk`` ``TASK#<taskArn>``, ``sk``
    ``V#<version:010d>`` (``E#<event id>`` without a version), the timeline index's ``gsi1pk``/``gsi1sk``
    and the TTL ``expires_at`` (:meth:`EventLog.task_keys`). ``time`` is the envelope's time as
    :func:`~ecs_guardrail.core.records.iso` writes it, ``t`` the same in Unix seconds; ``raw`` the event's
    canonical JSON (at most 300,000 UTF-8 bytes); a stopping task's ``kind``, ``cause``, ``exit_codes``
    (``[{"name", "code"}]``) and ``exit_unknown`` (container names) are its stop classification.

    Built from a parsed event's fields (``core.events.TaskStateChange``): an absent or empty value is
    ``None`` (never ``""`` or ``[]``), so a table stores it without inspecting it (:class:`Item`). Its
    values are given in field order, not by keyword (``type`` is ``"task"``): msgspec matches 26 keywords
    in about 1.1 microseconds, 26 positions in about 0.15 (issue 33 item 2).
    """

    pk: str
    sk: str
    gsi1pk: str
    gsi1sk: str
    expires_at: int
    account: str | None
    region: str | None
    type: str  # "task"
    event_id: str
    detail_type: str
    time: str
    t: int
    cluster: str
    group: str | None
    service: str | None
    task_arn: str
    last_status: str
    desired_status: str | None
    version: int | None
    az: str | None
    launch_type: str | None
    capacity_provider: str | None
    task_definition: str | None
    stop_code: str | None
    stopped_reason: str | None
    raw: str
    kind: str | None = None
    cause: str | None = None
    exit_codes: list[dict[str, Any]] | None = None
    exit_unknown: list[str] | None = None


class EventLog:
    """Writes and reads the event log through a :class:`~ecs_guardrail.adapters.store.table.Table`.

    ``ttl_days``: items expire that many days after their event time (or after now, if later).
    """


    def __init__(self, table: Table, ttl_days: int = 90) -> None:
        self.table = table
        self.ttl = timedelta(days=ttl_days)
        self._ttl_s = self.ttl.total_seconds()

    def expires(self, t: datetime) -> int:
        """The TTL attribute for an item about event time ``t`` (Unix seconds): ``ttl_days`` after ``t`` or
        after now, whichever is later, in whole seconds (the seconds of ``max(t, now) + ttl``, counted
        from the two clocks' seconds: a fraction of a microsecond never carries over a second)."""
        return int(max(t.timestamp(), _time.time()) + self._ttl_s)

    @permissions(history_table=["dynamodb:PutItem"])
    def _once(self, item: dict[str, Any] | Item) -> bool:
        try:
            self.table.put(item, _ONCE)
            return True
        except ConditionFailedError:
            return False

    def task_keys(self, task_arn: str, version: int | None, event_id: str, cluster: str,
                  time: datetime, when: str | None = None,
                  stamp: float | None = None) -> tuple[str, str, str, str, int]:
        """``(pk, sk, gsi1pk, gsi1sk, expires_at)`` of a task state change's item (:class:`TaskEventItem`).

        Without ``detail.version`` (old or documentation events) the envelope id keys the item.
        ``when`` and ``stamp``: ``iso(time)`` and ``time.timestamp()`` when the caller has them already
        (the recorder computes each once an event, issue 33 item 2); ``None``: computed here.
        """
        if stamp is None:
            stamp = time.timestamp()
        if time.tzinfo is UTC and time.year >= 1000:  # iso's text: its first 13 characters are the index's hour
            pk, sk, index_pk, sort = keys.task_event_keys(task_arn, version, event_id, cluster,
                                                          iso(time) if when is None else when)
        else:
            pk, sk = keys.task_event(task_arn, version, event_id)
            sort = keys.timeline_sort(time, "task", resource_name(task_arn), sk)
            index_pk = keys.timeline_partition(cluster, time, sort)
        # self.expires(time): the seconds of max(t, now) + ttl
        return pk, sk, index_pk, sort, int(max(stamp, _time.time()) + self._ttl_s)

    def record_task(self, item: TaskEventItem) -> bool:
        """Write one task state change built by the recorder; ``False`` when this task version was
        already recorded (the item's keys: :meth:`task_keys`)."""
        return self._once(item)

    def record_task_event(self, *, task_arn: str, version: int | None, event_id: str, cluster: str,
                          time: datetime, attrs: dict[str, Any]) -> bool:
        """Write one task state change with the attributes ``attrs`` beside its keys (:meth:`task_keys`);
        ``False`` when this task version was already recorded."""
        pk, sk, index_pk, sort, expires_at = self.task_keys(task_arn, version, event_id, cluster, time)
        return self._once({"pk": pk, "sk": sk, "gsi1pk": index_pk, "gsi1sk": sort, "expires_at": expires_at,
                           **attrs})

    def record_service_event(self, *, cluster: str, service: str, event_id: str, time: datetime,
                             attrs: dict[str, Any]) -> bool:
        """Write one service action or deployment event; ``False`` for a redelivery (same id)."""
        pk, sk = keys.service_event(cluster, service, time, event_id)
        sort = keys.timeline_sort(time, "service", service, event_id)
        return self._once({"pk": pk, "sk": sk, "gsi1pk": keys.timeline_partition(cluster, time, sort), "gsi1sk": sort,
                           "expires_at": self.expires(time), **attrs})

    def record_rejected(self, raw: Any, reason: str, received: datetime) -> bool:
        """Keep a rejected event with its reason (raw text cut at :data:`MAX_RAW_BYTES`). False if kept already."""
        try:
            text = raw if isinstance(raw, str) else json.dumps(raw, default=str, sort_keys=True)
        except (RecursionError, ValueError, TypeError) as exc:  # the reason it was rejected, often
            text = f"<not storable as JSON: {type(exc).__name__}: {str(exc)[:200]}>"
        encoded = text.encode("utf-8", "replace")
        pk, sk = keys.rejected(received, hashlib.sha256(encoded).hexdigest()[:16])
        return self._once({"pk": pk, "sk": sk, "type": "rejected", "reason": reason[:1000],
                           "raw": encoded[:MAX_RAW_BYTES].decode("utf-8", "ignore"),
                           "raw_truncated": len(encoded) > MAX_RAW_BYTES, "expires_at": self.expires(received)})

    @permissions(history_table=["dynamodb:Query"])
    def task_history(self, task_arn: str) -> list[dict[str, Any]]:
        """Every recorded version of a task, oldest first."""
        return list(self.table.query(f"TASK#{task_arn}"))

    @permissions(history_table=["dynamodb:Query"])
    def task_state(self, task_arn: str) -> dict[str, Any] | None:
        """The task's newest recorded state (highest ``detail.version``), or ``None``."""
        return next(self.table.query(f"TASK#{task_arn}", prefix="V#", descending=True, limit=1), None)

    @permissions(history_table=["dynamodb:Query"])
    def rejected(self, day: datetime) -> list[dict[str, Any]]:
        """Rejected events received on ``day`` (UTC), oldest first."""
        return list(self.table.query(f"REJECTED#{day.astimezone(UTC):%Y-%m-%d}"))


