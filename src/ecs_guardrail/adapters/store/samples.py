"""The availability sampler's writes: one item per target group per block of minutes, and the services'
task counts when they change.

Two item kinds, both on the timeline index:

- ``healthy_hosts`` (``HH#<cluster>#<service>#<targetgroup/NAME/ID>`` / ``<block start>``): a
  :class:`~ecs_guardrail.core.availability.SampleBlock`, its per-minute values in ``per_minute``
  (``{"healthy_host_count": [...], "request_count": [...], ...}``, ``null`` for no datapoint). A
  re-read of the block (late datapoints) replaces it only when a value changed;
- ``service_counts`` (``HC#<cluster>#<service>`` / ``<sampled at>``): DescribeServices'
  ``desiredCount``/``runningCount`` when they differ from the last ones written from this execution
  environment (a cold start writes them once more: the same facts, harmless), and once per block.

Items written before blocks (``healthy_hosts`` with ``healthy_host_count`` and no ``per_minute``: one
minute each) are still read (:func:`ecs_guardrail.core.timeline.availability_from_items`).
"""

from __future__ import annotations

import json
from typing import Any

from ecs_guardrail.adapters.store import keys
from ecs_guardrail.adapters.store.event_log import EventLog, epoch
from ecs_guardrail.adapters.store.table import Table
from ecs_guardrail.core.availability import SampleBlock, ServiceCounts
from ecs_guardrail.core.permissions import permissions
from ecs_guardrail.core.records import iso

__all__ = ["Samples"]

#: entries of the in-environment memo of what was written (bounded: a fleet's blocks and services)
_MEMO_LIMIT = 100_000


def _num(v: float | None) -> float | int | None:
    return None if v is None else int(v) if float(v).is_integer() else v


class Samples:
    """Writes of the sampler (``PutItem`` only), deduplicated against what this environment wrote."""


    def __init__(self, table: Table, ttl_days: int = 90) -> None:
        self.table = table
        self._log = EventLog(table, ttl_days)
        self._memo: dict[tuple[str, ...], Any] = {}
        #: items written so far (the cost model of ``make bench`` reads it)
        self.writes = 0

    def _remember(self, key: tuple[str, ...], digest: Any) -> bool:
        """True when ``key`` was not written with ``digest`` before (and remember it)."""
        if self._memo.get(key) == digest:
            return False
        if len(self._memo) >= _MEMO_LIMIT:
            self._memo.clear()
        self._memo[key] = digest
        return True

    @permissions(history_table=["dynamodb:PutItem"])
    def record_block(self, block: SampleBlock, *, target_group_dimension: str, load_balancers: int) -> bool:
        """Write one target group's block of minutes, unless this environment wrote the same values.

        Returns True when written (a first read, or a re-read that found late datapoints).
        """
        t = block.start
        pk, sk = keys.sample(block.cluster, block.service, target_group_dimension, t)
        # :func:`_num` of every value, inline (a fleet-day's blocks hold 57,000 of them)
        per_minute = {k: [v if v is None else int(v) if float(v).is_integer() else v for v in vs]
                      for k, vs in block.values.items()}
        digest = json.dumps(per_minute, sort_keys=True, separators=(",", ":"))
        if not self._remember((pk, sk), digest):
            return False
        sort = keys.timeline_sort(t, "healthy_hosts", block.service, block.target_group)
        item: dict[str, Any] = {
            "pk": pk, "sk": sk,
            "gsi1pk": keys.timeline_partition(block.cluster, t, sort),
            "gsi1sk": sort,
            "type": "healthy_hosts", "time": iso(t), "t": epoch(t), "cluster": block.cluster,
            "service": block.service, "target_group": block.target_group,
            "target_group_dimension": target_group_dimension, "load_balancers": load_balancers,
            "per_minute": per_minute,
            "sampled_at": iso(block.sampled_at) if block.sampled_at else None,
            "expires_at": self._log.expires(t),
        }
        self.table.put(item)
        self.writes += 1
        return True

    @permissions(history_table=["dynamodb:PutItem"])
    def record_counts(self, counts: ServiceCounts, *, force: bool = False) -> bool:
        """Write a service's desired and running counts at ``sampled_at`` when they changed since the
        last ones this environment wrote, or always with ``force`` (once per block). Returns True when
        written."""
        # every service every minute: the memo's key and value are tuples (no text built), compared first
        key, state = ("HC", counts.cluster, counts.service), (counts.desired_count, counts.running_count)
        if self._memo.get(key) != state:
            self._remember(key, state)
        elif not force:
            return False
        t = counts.sampled_at
        pk, sk = keys.service_counts(counts.cluster, counts.service, t)
        sort = keys.timeline_sort(t, "service_counts", counts.service)
        self.table.put({
            "pk": pk, "sk": sk,
            "gsi1pk": keys.timeline_partition(counts.cluster, t, sort),
            "gsi1sk": sort,
            "type": "service_counts", "time": iso(t), "t": epoch(t), "cluster": counts.cluster,
            "service": counts.service, "desired_count": counts.desired_count,
            "running_count": counts.running_count, "expires_at": self._log.expires(t),
        })
        self.writes += 1
        return True
