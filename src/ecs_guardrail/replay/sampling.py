"""The availability sampler in a replay: one tick a minute on the replay's clock, then the report.

The tick runs the production sampler's recipe (:func:`ecs_guardrail.handlers.availability.sample_minute`)
for minute M at event time M + 1 min (see :mod:`ecs_guardrail.replay.clock`), over the engine's metrics
source, and writes the counts and, at each block's end, the block to the engine's history store; the
last partial block is flushed before the report. The clients' view is read where the CSV has the
request columns. The report is computed from what was written, the watchdog's decisions and the task
events, read back from the same store.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from ecs_guardrail.adapters.ecs import EcsFleet
from ecs_guardrail.adapters.elb import TargetGroups
from ecs_guardrail.core.availability import AvailabilityReport, minute_floor
from ecs_guardrail.core.timeline import ITEM_FIELDS, availability_from_values
from ecs_guardrail.replay.engine import CachedFleet, CachedTargetGroups, make_metrics_source
from ecs_guardrail.replay.healthy_hosts import duplicate_minutes_warning, has_request_columns, read_healthy_hosts_csv

__all__ = ["ReplaySampler", "AVAILABILITY_FIELDS"]

MINUTE = timedelta(minutes=1)
_READS = ("Describe", "List", "Get")

#: what the availability report reads of each timeline item (the store's brief fields cover them): the
#: report's own (:data:`~ecs_guardrail.core.timeline.ITEM_FIELDS`, first, in their order), then whose it is
AVAILABILITY_FIELDS = (*ITEM_FIELDS, "account", "region")
_ACCOUNT = len(ITEM_FIELDS)  # where ``account`` is in a row of AVAILABILITY_FIELDS; ``region`` next


class ReplaySampler:
    """Samples a scenario's minutes on the replay clock (no CSV: no minutes, no report)."""

    def __init__(self, scenario: Any, aws: Any, engine: str, store: Any, client_error_ratio: float = 0.05) -> None:
        self.scenario = scenario
        self._home = (scenario.account, scenario.region)  # properties: read once, not per timeline item
        self.store = store
        self.client_error_ratio = client_error_ratio
        path = scenario.healthy_hosts_path
        self.rows = read_healthy_hosts_csv(path) if path is not None else []
        self.requests = path is not None and bool(self.rows) and has_request_columns(path)
        self.first: datetime | None = None
        self.last: datetime | None = None
        #: what the CSV earns before the replay (the replay prints each as ``<scenario>: warning: ...``)
        self.warnings: list[str] = []
        if not self.rows:
            return
        self.warnings.append(duplicate_minutes_warning(self.rows) or "")
        self.first = minute_floor(min(r[0] for r in self.rows))
        self.last = minute_floor(max(r[0] for r in self.rows))
        self.healthy, unknown = make_metrics_source(engine, aws, self.rows)
        self.warnings += [f"healthy_hosts.csv: target group {name!r} is not in fleet.json; rows ignored"
                          for name in unknown]
        self.warnings = [w for w in self.warnings if w]
        self._counter = aws.counter
        self._writes_seen = 0
        self._ops_seen = 0  # operations the counter had when :attr:`_write_ops` was picked
        self._write_ops: list[tuple[str, str]] = []
        fleet = EcsFleet(aws.counter.attach(aws.client("ecs")))
        target_groups = TargetGroups(aws.counter.attach(aws.client("elbv2")))
        self._cached = engine == "fast"
        self.fleet: Any = CachedFleet(fleet) if self._cached else fleet
        self.target_groups: Any = CachedTargetGroups(target_groups) if self._cached else target_groups

    def _ecs_writes(self) -> int:
        """ECS and Application Auto Scaling calls that may change a service, made so far by the handlers
        (the counter's operations that are such writes are picked again only when a new one was counted:
        its keys are only ever added)."""
        calls = self._counter.calls
        if len(calls) != self._ops_seen:
            self._ops_seen = len(calls)
            self._write_ops = [(svc, op) for svc, op in calls
                               if svc in ("ecs", "application-autoscaling") and not op.startswith(_READS)]
        return sum(calls[k] for k in self._write_ops)

    def tick(self, minute: datetime) -> None:
        """Sample ``minute``, as the state is now (event time ``minute`` + 1 min)."""
        from ecs_guardrail.handlers.availability import sample_minute

        if self._cached:  # the fast engine describes the fleet anew only after a handler changed it
            writes = self._ecs_writes()
            if writes != self._writes_seen:
                self._writes_seen = writes
                self.fleet.invalidate()

        flush = minute == self.last
        sample_minute(minute + MINUTE, fleet=self.fleet, target_groups=self.target_groups, healthy=self.healthy,
                      store=self.store, lookback_minutes=1, requests=self.requests, flush=flush,
                      not_before=self.first)

    def _own(self, item: dict[str, Any]) -> bool:
        """The fleet's own account and region (an item without them is the fleet's): another account's
        cluster of the same name never counts in this fleet's availability."""
        account, region = self._home
        return item.get("account") in (None, account) and item.get("region") in (None, region)

    def report(self, held_until: dict[tuple[str, str], datetime | None] | None = None,
               acted_at: dict[tuple[str, str, datetime], datetime] | None = None) -> AvailabilityReport | None:
        """The availability report over the CSV's minutes (None without rows); ``held_until`` and
        ``acted_at`` as :func:`~ecs_guardrail.core.timeline.availability_from_values` takes them."""
        if self.first is None or self.last is None:
            return None
        # task events from before the period tell which tasks were running at its start; streamed, one
        # cluster-hour Query at a time, each item as a tuple of its values (the report keeps a small tuple
        # per task event, never the items)
        accounts, regions = (None, self._home[0]), (None, self._home[1])  # :meth:`_own`, inline: every item
        at = _ACCOUNT
        rows = (row for c in self.scenario.fleet["clusters"]
                for row in self.store.timeline_values(c["name"], self.first - timedelta(days=1),
                                                      self.last + timedelta(seconds=59), AVAILABILITY_FIELDS)
                if row[at] in accounts and row[at + 1] in regions)
        return availability_from_values(rows, self.first, self.last, client_error_ratio=self.client_error_ratio,
                                        held_until=held_until, acted_at=acted_at)
