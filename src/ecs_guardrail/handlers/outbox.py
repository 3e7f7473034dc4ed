"""The alerts' side of one invocation: where a cluster is, the reads an alert's text needs, and delivery.

Composition is pure and lives in :mod:`ecs_guardrail.core.alert`; the reads live in adapters
(:class:`~ecs_guardrail.adapters.placement.Placement`, :class:`~ecs_guardrail.adapters.taskdef.TaskDefinitions`,
:func:`~ecs_guardrail.adapters.serving.newest_serving`, the watchdog's summaries). An :class:`Outbox` joins
them for the episode interpreter (:mod:`ecs_guardrail.handlers.episode`), the watchdog's jobs, the
failed-deployment alert and the sweep.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ecs_guardrail.adapters.ecs import ServiceFacts
from ecs_guardrail.adapters.placement import Placement
from ecs_guardrail.adapters.serving import newest_serving
from ecs_guardrail.adapters.store.watchdog_state import UnreadableSummaryError, WatchdogState
from ecs_guardrail.adapters.taskdef import TaskDefinitions
from ecs_guardrail.core import alert as A
from ecs_guardrail.core.alert import Alert, Where
from ecs_guardrail.core.entitlement import ServingSample
from ecs_guardrail.core.records import Decision, Failure
from ecs_guardrail.core.summary import Episode, ServiceSummary
from ecs_guardrail.handlers.runtime import Runtime

__all__ = ["Outbox"]


class Outbox:
    """Alert places, reads and delivery over one :class:`Runtime` for one invocation.

    ``alerts_sent`` counts the alerts a sink took (at least one sink, or none configured); ``arns`` is
    :attr:`Placement.arns` (cluster key -> an ARN of the cluster)."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.config = rt.settings.policy()
        self.state: WatchdogState = rt.history.state
        self.placement = Placement(rt.home, rt.history.region)
        self.arns = self.placement.arns
        self.where = self.placement.where
        self.place = self.placement.place
        self.alerts_sent = 0

    def taskdefs(self) -> TaskDefinitions:
        """DescribeTaskDefinition answers, cached per ARN for the life of the execution environment."""
        return TaskDefinitions.cached(self.rt.cache, self.rt.clients)

    def links(self, where: Where, failures: tuple[Failure, ...] = ()) -> Any:
        """The alert's links (:func:`~ecs_guardrail.core.alert.alert_links`): console pages, the log streams
        of ``failures`` (their task definitions' ``awslogs`` options) and the runbook (``RUNBOOK_URL``)."""
        logs = A.pick_log_streams(failures, self.taskdefs().log_destinations, where.region)
        return A.alert_links(where, logs=logs, runbook=self.rt.settings.RUNBOOK_URL)

    def serving(self, facts: ServiceFacts, at: datetime, max_age_minutes: int = 3,
                requests: bool = True) -> tuple[ServingSample, ...]:
        """:func:`~ecs_guardrail.adapters.serving.newest_serving` over this runtime's clients and cache."""
        return newest_serving(self.rt.clients, self.rt.cache, facts, at, max_age_minutes, requests)

    def deliver(self, alert: Alert) -> bool:
        """Send ``alert`` to every sink; True when one took it (or none is configured)."""
        results = self.rt.send(alert)
        if results and any(r.ok for r in results):
            self.alerts_sent += 1
            return True
        return not results  # no sink configured: nothing failed, nothing to retry

    def mass_rows(self, ck: str, decision: Decision) -> list[tuple[str, int, int, Failure | None]]:
        """Per failing service of a mass event, its line of the cluster alert (:func:`core.alert.mass_row`):
        only the shown services' summaries are read (one GetItem each, whatever the cluster's size)."""
        names, shown = A.mass_shown(decision)
        return [A.mass_row(n, self._readable(ck, n) if n in shown else None, decision,
                           self.config.window) for n in names]

    def _readable(self, ck: str, service: str) -> ServiceSummary | None:
        """Another service's summary for its line of a cluster alert; ``None`` (its line without its
        failures) when the stored item is unreadable: the alert still goes out."""
        try:
            return self.state.load(ck, service, fresh=True)
        except UnreadableSummaryError:
            return None

    def with_task_definitions(self, ck: str, service: str, failures: tuple[Failure, ...]) -> tuple[Failure, ...]:
        """``failures`` with their task definition ARNs (:func:`core.alert.with_task_definitions`); the
        service's summary is read only when one is missing."""
        if all(f.task_definition_arn for f in failures):
            return failures
        return A.with_task_definitions(failures, self.state.load(ck, service))

    def undo_command(self, decision: Decision) -> str | None:
        """The exact ``restore`` command for a scale-down, with this table and region; else ``None``."""
        return A.undo_command(decision, self.rt.history.table, self.rt.history.region)

    def mass_held(self, ck: str, service: str, ep: Episode) -> tuple[list[str], list[str]]:
        """Every service a mass hold held, and those still in their own episode
        (:func:`core.alert.mass_held`): the decision record, and one Query of the cluster's summaries."""
        record = self.state.decision(ck, service, ep.decision_time) or {}
        return A.mass_held(service, ep, record, self.state.cluster(ck).summaries)
