"""The availability sampler's writes: one item per target group per minute, written once."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, ClassVar

from ecs_guardrail.adapters.store import keys
from ecs_guardrail.adapters.store.event_log import EventLog, epoch
from ecs_guardrail.adapters.store.table import Cond, ConditionFailedError, Table
from ecs_guardrail.core.availability import Sample
from ecs_guardrail.core.records import iso

__all__ = ["Samples"]


class Samples:
    """Healthy-host samples (``HH#<cluster>#<service>#<targetgroup/NAME/ID>`` / ``<minute>``)."""

    IAM_ACTIONS: ClassVar[dict[str, frozenset[str]]] = {"history_table": frozenset({"dynamodb:PutItem"})}

    def __init__(self, table: Table, ttl_days: int = 90) -> None:
        self.table = table
        self._log = EventLog(table, ttl_days)

    def record_sample(self, sample: Sample, *, target_group_dimension: str, load_balancers: int) -> bool:
        """Write one target group's healthy hosts for one minute, once (conditional put).

        ``type`` ``healthy_hosts`` on the timeline index; ``no_data`` is True when the minute had no
        datapoint. Returns False when the minute was written before (a re-run writes nothing new).
        """
        t = sample.minute
        pk, sk = keys.sample(sample.cluster, sample.service, target_group_dimension, t)
        hh = sample.healthy_host_count
        item: dict[str, Any] = {
            "pk": pk, "sk": sk,
            "gsi1pk": keys.timeline_partition(sample.cluster, t),
            "gsi1sk": keys.timeline_sort(t, "healthy_hosts", sample.service, sample.target_group),
            "type": "healthy_hosts", "time": iso(t), "t": epoch(t), "cluster": sample.cluster,
            "service": sample.service, "target_group": sample.target_group,
            "target_group_dimension": target_group_dimension, "load_balancers": load_balancers,
            "healthy_host_count": (int(hh) if hh is not None and float(hh).is_integer() else hh),
            "no_data": hh is None, "desired_count": sample.desired_count, "running_count": sample.running_count,
            "sampled_at": iso(sample.sampled_at) if sample.sampled_at else None,
            "expires_at": self._log.expires(t),
        }
        try:
            self.table.put(item, Cond(absent=True))
            return True
        except ConditionFailedError:
            return False

    def newest(self, cluster: str, service: str, target_group_dimension: str, at: timedelta | Any,
               max_age: timedelta = timedelta(minutes=3)) -> dict[str, Any] | None:
        """The newest sample of one target group with minute in ``[at - max_age, at]``, or ``None``."""
        pk = keys.sample(cluster, service, target_group_dimension, at)[0]
        return next(self.table.query(pk, lo=iso(at - max_age), hi=iso(at), descending=True, limit=1), None)
