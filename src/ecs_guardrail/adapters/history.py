"""The history table as one object: the event log, the watchdog's state, samples and timeline reads.

Each part lives in its own module under :mod:`ecs_guardrail.adapters.store` (keys, event log,
watchdog state, samples, timeline reads) and writes through the table port
(:class:`~ecs_guardrail.adapters.store.table.Table`): DynamoDB in Lambda and ``replay --engine
moto``, memory in ``replay``'s fast engine. :class:`HistoryStore` only puts them side by side for
callers that need several (the CLI, ``replay``, ``restore``).
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar

from ecs_guardrail.adapters.store import keys
from ecs_guardrail.adapters.store.event_log import EventLog, epoch
from ecs_guardrail.adapters.store.table import Table
from ecs_guardrail.adapters.store.timeline_reads import TIMELINE_FIELDS, TimelineReads
from ecs_guardrail.core.records import iso

if TYPE_CHECKING:
    from ecs_guardrail.adapters.store.samples import Samples
    from ecs_guardrail.adapters.store.watchdog_state import WatchdogState

__all__ = ["HistoryStore", "iso", "epoch", "timeline_key", "from_epoch"]


def timeline_key(cluster: str, t: datetime) -> str:
    """The timeline index partition of ``cluster`` at ``t`` (one per cluster per UTC hour)."""
    return keys.timeline_partition(cluster, t)


def from_epoch(seconds: int | float) -> datetime:
    return datetime.fromtimestamp(float(seconds), tz=UTC)


class HistoryStore:
    """The four parts of the history table over one :class:`Table`.

    ``HistoryStore(client, table_name)`` wraps a DynamoDB client; :meth:`on` takes any table port
    (:class:`~ecs_guardrail.adapters.store.memory.MemoryTable` for the fast replay engine).
    """

    TIMELINE_FIELDS: ClassVar[tuple[str, ...]] = TIMELINE_FIELDS

    def __init__(self, client: Any, table_name: str, ttl_days: int = 90) -> None:
        from ecs_guardrail.adapters.store.dynamodb import DynamoTable

        self._init(DynamoTable(client, table_name), ttl_days)

    @classmethod
    def on(cls, table: Table, ttl_days: int = 90,
           cache: dict[tuple[str, str], Any] | None = None) -> HistoryStore:
        store = cls.__new__(cls)
        store._init(table, ttl_days, cache)
        return store

    def _init(self, table: Table, ttl_days: int, cache: dict[tuple[str, str], Any] | None = None) -> None:
        self.port = table
        self.table = table.name
        self.region = table.region
        self.ttl_days = ttl_days
        self._cache = cache
        self.events = EventLog(table, ttl_days)
        self.timeline = TimelineReads(table)

    @functools.cached_property
    def samples(self) -> Samples:
        """The availability samples (made on first use: the recorder never reads them)."""
        from ecs_guardrail.adapters.store.samples import Samples

        return Samples(self.port, self.ttl_days)

    @functools.cached_property
    def state(self) -> WatchdogState:
        """The watchdog's episodes, counters and slots (made on first use: the recorder never reads them)."""
        from ecs_guardrail.adapters.store.watchdog_state import WatchdogState

        return WatchdogState(self.port, self.ttl_days, self._cache)

    # the names the CLI, the sampler and replay call (delegates)
    def record_task_event(self, **kw: Any) -> bool:
        return self.events.record_task_event(**kw)

    def record_service_event(self, **kw: Any) -> bool:
        return self.events.record_service_event(**kw)

    def record_rejected(self, raw: Any, reason: str, received: datetime) -> bool:
        return self.events.record_rejected(raw, reason, received)

    def task_history(self, task_arn: str) -> list[dict[str, Any]]:
        return self.events.task_history(task_arn)

    def task_state(self, task_arn: str) -> dict[str, Any] | None:
        return self.events.task_state(task_arn)

    def rejected(self, day: datetime) -> list[dict[str, Any]]:
        return self.events.rejected(day)

    def record_block(self, block: Any, *, target_group_dimension: str, load_balancers: int) -> bool:
        return self.samples.record_block(block, target_group_dimension=target_group_dimension,
                                         load_balancers=load_balancers)

    def record_counts(self, counts: Any, *, force: bool = False) -> bool:
        return self.samples.record_counts(counts, force=force)

    def timeline_items(self, cluster: str, since: datetime, until: datetime,
                       fields: tuple[str, ...] | None = None) -> Any:
        return self.timeline.timeline_items(cluster, since, until, fields)

    def timeline_brief(self, cluster: str, since: datetime, until: datetime,
                       fields: tuple[str, ...] | None = None) -> Any:
        return self.timeline.timeline_brief(cluster, since, until, fields)

    def timeline_values(self, cluster: str, since: datetime, until: datetime, fields: tuple[str, ...]) -> Any:
        return self.timeline.timeline_values(cluster, since, until, fields)
