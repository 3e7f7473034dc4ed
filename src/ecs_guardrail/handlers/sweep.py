"""The scheduled sweep: what the watchdog owes on time, not with a service's next event.

ARCHITECTURE.md, "Recovery". It runs in the sweep function (:mod:`ecs_guardrail.handlers.lane`: the
watchdog's code in the crash path's own lane, issue 32; its role holds the watchdog's statements, so every
call it makes is granted: DescribeServices, UpdateService, RegisterScalableTarget, the table, SNS and the
Slack secret), as the ``sweep`` target of the availability sampler's one-minute EventBridge schedule
(``template.yaml`` ``AvailabilityScheduleRule``, ``terraform`` ``aws_cloudwatch_event_rule.availability``),
so no schedule of its own exists for it (the watchdog's handler still runs it for a scheduled event
aimed at the watchdog function). Each run:

1. reads the bounded index of open work
   (:meth:`~ecs_guardrail.adapters.store.watchdog_state.WatchdogState.open_work_items`: one item per
   cluster naming its services held at zero and every service whose episode alerted, never the history);
2. for each service named there: ends an open episode whose quiet window has passed (rule 2: more than
   one window with no failure; its recovery becomes owed as on the event path, an alert-only episode's
   included), sends an owed recovery (a ``restore`` run by an operator, whose
   credentials need no SNS or Slack), retries a recovery whose every channel failed, and with
   ``RECOVERY=probe`` runs the probe step that is due (start, pass and restore, or a step a dead
   invocation left), each through the episode's lease and the machine of
   :mod:`ecs_guardrail.core.lifecycle`;
3. drops a service from the index once nothing is owed (its episode ended, not held at zero, and its
   recovery sent or never owed);
4. for each standalone job family named there whose window is over: closes the window and sends its
   summary (when it counted more than the failure that opened it), then drops the family's entry,
   so a job that stops failing (or stops running) still gets its summary on time.

A mass hold's services are each scaled and held one by one, so each one held is named in the index
and its own recovery names it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from ecs_guardrail.adapters.store.watchdog_state import StateConflictError
from ecs_guardrail.core.alert import job_summary_alert
from ecs_guardrail.core.errors import (
    LeaseLostError,
    ServiceAccessDeniedError,
    ServiceNotFoundError,
    UnreadableSummaryError,
)
from ecs_guardrail.core.summary import (
    RecoveryStatus,
    ServiceSummary,
    close_job_window,
    move_recovery,
    note_activity,
)
from ecs_guardrail.handlers.probe import ProbingEpisodes
from ecs_guardrail.handlers.runtime import Runtime, logger, metrics

__all__ = ["run_sweep", "scheduled_now", "Sweep"]


#: how far a scheduled event's ``time`` may be from the clock and still be the sweep's "now": late by up to
#: EventBridge's longest retry (24 h, its maximum event age), early by a clock's skew at most
SCHEDULE_LATE = timedelta(hours=24)
SCHEDULE_EARLY = timedelta(minutes=5)


def scheduled_now(event: Any, clock: Callable[[], float]) -> datetime:
    """The schedule's own time (EventBridge scheduled event ``time``), else the clock's (UTC): also when
    the time is not ISO 8601, or is more than :data:`SCHEDULE_LATE` before or :data:`SCHEDULE_EARLY`
    after the clock (logged). A sweep at year 9999 stamped a probe there, and every later sweep raised
    OverflowError on it: no probe, recovery or quiet window of any service again."""
    from ecs_guardrail.handlers.availability import scheduled_time

    now = datetime.fromtimestamp(clock(), UTC)
    try:
        t = scheduled_time(event, now)
    except (ValueError, TypeError, OverflowError):
        logger.warning("scheduled event's time is not ISO 8601: the sweep runs at the clock's",
                       extra={"time": str(event.get("time") if isinstance(event, dict) else None)[:80]})
        return now
    if not now - SCHEDULE_LATE <= t <= now + SCHEDULE_EARLY:
        logger.warning("scheduled event's time is far from the clock: the sweep runs at the clock's",
                       extra={"time": t.isoformat(), "clock": now.isoformat()})
        return now
    return t


class Sweep:
    """One sweep over one :class:`Runtime` (``episodes``: the episode I/O, with its probe counters)."""

    def __init__(self, rt: Runtime, context: Any = None) -> None:
        self.rt = rt
        self.context = context
        self.state = rt.history.state

    @functools.cached_property
    def episodes(self) -> ProbingEpisodes:
        """The episode I/O, made at the first service or job the index names (most minutes it names none)."""
        return ProbingEpisodes(self.rt, self.context)

    def run(self, now: datetime, *, probes: bool = True) -> dict[str, Any]:
        """One pass at ``now`` (the schedule's time). Returns counts: ``services`` in the index, ``probes``
        (started, passed, failed), ``recoveries`` sent and ``retried``, ``closed`` index entries, and the
        services a passed probe ``restored`` (``cluster/service``). ``probes=False`` runs no probe step
        (a replay past its recorded stream, where nothing says how a probe would end)."""
        out: dict[str, Any] = {"status": "swept", "services": 0, "recoveries": 0, "retried": 0, "closed": 0,
                               "summaries": 0, "restored": []}
        for ck, cluster, service in self.state.open_work_items():
            out["services"] += 1
            try:
                self._service(ck, cluster, service, now, out, probes)
            except LeaseLostError as exc:  # the new holder finishes; the next sweep looks again
                logger.warning("sweep lost a lease", extra={"service": service, "error": str(exc)})
            except (ServiceNotFoundError, ServiceAccessDeniedError) as exc:
                logger.warning("held service not readable: left in the index", extra={"error": str(exc)})
            except UnreadableSummaryError as exc:  # one corrupt item never stops the rest of the sweep
                from ecs_guardrail.handlers.unreadable import report_unreadable

                report_unreadable(self.rt, exc, "sweep")  # left in the index: looked at again once repaired
        for ck, cluster, family, due in self.state.open_job_items():
            if now <= due:
                continue
            try:
                out["summaries"] += self._job(ck, cluster, family, due, now)
            except StateConflictError as exc:  # the event path is writing it; the next sweep looks again
                logger.warning("job window kept changing under the sweep", extra={"family": family,
                                                                                 "error": str(exc)})
            except UnreadableSummaryError as exc:  # one corrupt job item never stops the other families'
                from ecs_guardrail.handlers.unreadable import report_unreadable

                report_unreadable(self.rt, exc, "sweep")
        out["probes"] = (dict(self.episodes.probe_counts) if "episodes" in self.__dict__
                         else {"started": 0, "passed": 0, "failed": 0})
        metrics.add_metric(name="SweepServices", unit="Count", value=out["services"])
        return out

    def _service(self, ck: str, cluster: str, service: str, now: datetime, out: dict[str, Any],
                 probes: bool = True) -> None:
        s = self.state.load(ck, service, fresh=True)
        s = self._quiet_end(ck, s, now)
        if self._retry_failed_recovery(ck, s):
            out["retried"] += 1
            s = self.state.load(ck, service)
        ep = s.episode
        if ep is not None and ep.recovery is RecoveryStatus.PENDING:
            if self.episodes.recover(ck, cluster, service):
                out["recoveries"] += 1
            s = self.state.load(ck, service)
            ep = s.episode
        probed = self.episodes.probe(ck, cluster, service, now) if probes else None
        if probed == "passed":
            out["restored"].append(f"{cluster}/{service}")
        if probed is not None:
            s = self.state.load(ck, service)
            ep = s.episode
            if ep is not None and ep.recovery is RecoveryStatus.SENT:
                out["recoveries"] += 1
        if ep is None or ep.held_at_zero \
                or ep.recovery in (RecoveryStatus.PENDING, RecoveryStatus.FAILED) or s.episode_end is None:
            return
        self.state.close_work(ck, service)
        out["closed"] += 1

    def _job(self, ck: str, cluster: str, family: str, due: datetime, now: datetime) -> int:
        """Close job ``family``'s window that ended at ``due`` (now past): its summary (when it counted
        more than its opening failure) is delivered first, then the window closed in one conditional
        write, then the index entry dropped; so a sweep that dies or finds every sink down leaves the
        window owing its summary to the next sweep (at least once, as every alert: a repeat has the
        same alert id). Returns the summaries sent (0, 1)."""
        cfg = self.episodes.config
        filing = close_job_window(self.state.job(ck, family), now, cfg.window)
        if filing is not None and filing.closed is not None:
            start, count, last_exit, last_time = filing.closed
            where = self.episodes.out.place(ck, cluster, family=family)
            if not self.episodes.out.deliver(job_summary_alert(
                    cluster, family, failures=count, window_minutes=cfg.window_minutes, window_start=start,
                    last_exit=last_exit, last_time=last_time, closed_at=start + cfg.window, where=where,
                    links=self.episodes.out.links(where, ()))):
                logger.error("job summary not delivered; the next sweep retries it", extra={"family": family})
                return 0
            self.state.job_window_due(ck, family, now, cfg.window)  # None: a failure closed it meanwhile
        self.state.close_job(ck, family, due)
        return 1 if filing is not None and filing.closed is not None else 0

    def _quiet_end(self, ck: str, s: ServiceSummary, now: datetime) -> ServiceSummary:
        """Rule 2's quiet window, on time: an open episode whose last failure is more than one window
        before ``now`` ended then, and its recovery is owed when :func:`~ecs_guardrail.core.summary.
        recovery_owed` says so (an alert-only episode whose alert went out), with no further event of the
        service needed. An episode still being acted on (its lease) or a service held at zero (its
        recovery is owed at its restore; a probe runs over it) is left as it is. Returns the summary as
        stored afterwards."""
        ep = s.episode
        window = self.episodes.config.window
        if ep is None or s.episode_end is not None or ep.unfinished or ep.held_at_zero \
                or now <= ep.last_failure + window:
            return s
        s, _ = self.state.update(ck, s.service, lambda x: note_activity(x, now, window)
                                 if x.episode is not None and not x.episode.unfinished
                                 and not x.episode.held_at_zero else None)
        return s

    def _retry_failed_recovery(self, ck: str, s: ServiceSummary) -> bool:
        """A recovery whose every channel failed is owed again (one conditional write: FAILED -> PENDING)."""
        ep = s.episode
        if ep is None or ep.recovery is not RecoveryStatus.FAILED:
            return False
        decided = ep.decision_time
        _, changed = self.state.update(ck, s.service, lambda x: move_recovery(x, decided, RecoveryStatus.FAILED,
                                                                              RecoveryStatus.PENDING))
        return changed


def run_sweep(rt: Runtime, now: datetime, context: Any = None, *, probes: bool = True) -> dict[str, Any]:
    """One sweep (Lambda and ``replay`` share it): :meth:`Sweep.run` at ``now``."""
    return Sweep(rt, context).run(now, probes=probes)
