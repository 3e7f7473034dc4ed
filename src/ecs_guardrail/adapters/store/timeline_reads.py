"""Reads of the timeline index: one Query per shard of each cluster-hour (``gsi1``), merged by sort key."""

from __future__ import annotations

import operator
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from ecs_guardrail.adapters.store import keys
from ecs_guardrail.adapters.store.table import Table
from ecs_guardrail.core.permissions import permissions
from ecs_guardrail.core.records import iso

__all__ = ["TimelineReads", "TIMELINE_FIELDS"]

#: what timelines and availability read of each timeline item (everything but the raw event); the
#: index projects exactly these (template.yaml and terraform/ ``NonKeyAttributes``)
TIMELINE_FIELDS: tuple[str, ...] = (
    "type", "time", "cluster", "service", "group", "task_arn", "last_status", "desired_status", "kind",
    "cause", "stop_code", "stopped_reason", "exit_codes", "az", "event_name", "detail_type", "action",
    "reason", "message", "decision", "services_in_cluster", "target_group", "healthy_host_count",
    "no_data", "desired_count", "running_count", "sampled_at", "account", "region", "per_minute",
)


#: the merge's key: ``gsi1sk``, which every item of the index has (DynamoDB indexes only items with its keys)
_SORT_KEY = operator.itemgetter("gsi1sk")


class TimelineReads:
    """The operator's and the availability report's reads (CLI ``timeline``, ``replay``)."""

    TIMELINE_FIELDS = TIMELINE_FIELDS

    def __init__(self, table: Table) -> None:
        self.table = table

    @permissions(history_index=["dynamodb:Query"])
    def timeline_items(self, cluster: str, since: datetime, until: datetime,
                       fields: tuple[str, ...] | None = None) -> Iterator[dict[str, Any]]:
        """Every timeline item of ``cluster`` with ``since <= time <= until``, in time order: one Query per
        shard of each cluster-hour (:func:`~ecs_guardrail.adapters.store.keys.timeline_partitions`, shard 0
        being the key items written before the shards carry), merged by ``gsi1sk``: the order one
        unsharded partition gave (items with one sort key share a shard and keep their order).
        ``fields`` projects the items; ``None`` returns them whole, raw event text included."""
        hour = since.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
        lo, hi = iso(since), iso(until) + "~"
        # the sort key is read for the merge and dropped again when the caller did not ask for it
        wanted = fields if fields is None or "gsi1sk" in fields else (*fields, "gsi1sk")
        drop = wanted is not fields
        while hour <= until:
            # the hour's shards, merged: each comes sorted by ``gsi1sk`` (an index item always has it), and a
            # stable sort of them one after the other is heapq.merge's order (ties: the earlier shard first,
            # then each shard's own order), done in C over the hour rather than one step per item
            items = [item for pk in keys.timeline_partitions(cluster, hour)
                     for item in self.table.query(pk, lo=lo, hi=hi, index=True, fields=wanted)]
            items.sort(key=_SORT_KEY)
            if drop:
                for item in items:
                    del item["gsi1sk"]
            yield from items
            hour += timedelta(hours=1)

    @permissions(history_index=["dynamodb:Query"])
    def timeline_values(self, cluster: str, since: datetime, until: datetime,
                        fields: tuple[str, ...]) -> Iterator[tuple[Any, ...]]:
        """:meth:`timeline_items` projected to ``fields``, each item as the tuple of its values of
        ``fields`` then its ``gsi1sk`` (``None``: no such attribute), not a dict: the same Queries, in
        the same order. A table with ``query_values`` (the in-memory one) builds the tuples itself;
        another's items are read as dicts and made tuples here."""
        hour = since.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
        lo, hi = iso(since), iso(until) + "~"
        wanted = (*fields, "gsi1sk")
        by_sort_key = operator.itemgetter(len(fields))
        query_values = getattr(self.table, "query_values", None)
        while hour <= until:
            if query_values is not None:
                rows = [row for pk in keys.timeline_partitions(cluster, hour)
                        for row in query_values(pk, wanted, lo=lo, hi=hi, index=True)]
            else:
                rows = [tuple(map(item.get, wanted)) for pk in keys.timeline_partitions(cluster, hour)
                        for item in self.table.query(pk, lo=lo, hi=hi, index=True, fields=wanted)]
            rows.sort(key=by_sort_key)  # stable: :meth:`timeline_items`' merge
            yield from rows
            hour += timedelta(hours=1)

    def timeline_brief(self, cluster: str, since: datetime, until: datetime,
                       fields: tuple[str, ...] | None = None) -> Iterator[dict[str, Any]]:
        """:meth:`timeline_items` without the raw event text (``fields``, default :data:`TIMELINE_FIELDS`)."""
        return self.timeline_items(cluster, since, until, fields or TIMELINE_FIELDS)
