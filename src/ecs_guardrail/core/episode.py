"""The watchdog's per-service state as typed records, and its pure transitions.

ARCHITECTURE.md, "Decision policy" rules 1 and 2, and "Watchdog state". One :class:`ServiceSummary`
per service holds everything the policy needs about that service, in a size that does not grow
with the length of a loop:

- the newest ``keep`` crashes and the newest ``keep`` health-check kills (``keep`` is at least
  ``CRASH_THRESHOLD``, so the threshold test is exact; older failures cannot change a decision
  because ``keep`` newer ones exist);
- the tasks a Spot or termination notice marked (their later STOPPED event never counts), kept for
  :data:`SPOT_MEMORY` of event time (ECS stops a Spot task about two minutes after its notice);
- the newest :data:`DEPLOYMENT_MEMORY` deployment events (``ECS Deployment State Change``);
- the current episode: its decision, where the action and the alert stand, and the lease of the
  invocation working on it.

The adapters store a summary as one item and read it back into these records; core never sees a
raw item. Every transition here returns a new summary (records are frozen) or ``None`` for "no
change", so the caller writes only when something changed.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum

from ecs_guardrail.core.classify import StopKind
from ecs_guardrail.core.records import Action, Failure, Reason

__all__ = [
    "ActionStatus", "AlertStatus", "EpisodeEnd", "Episode", "DeploymentNote", "ServiceSummary",
    "JobSummary", "SPOT_MEMORY", "DEPLOYMENT_MEMORY", "add_failure", "add_spot", "add_deployment",
    "episode_is_open", "in_window", "close_episode",
]

#: how long (event time) a Spot or termination notice's verdict is remembered for a task
SPOT_MEMORY = timedelta(minutes=30)
#: deployment events kept per service (a rollback is FAILED, IN_PROGRESS, COMPLETED: three)
DEPLOYMENT_MEMORY = 6


class ActionStatus(StrEnum):
    """Where the episode's action stands. ``NONE``: nothing to do (alert only, hold);
    ``PENDING``: a scale-down is decided and recorded, not yet confirmed by ECS; ``DONE``: scaled
    to 0 (the service is *held at zero* until restored); ``RESTORED``: put back by ``restore`` or
    raised by an operator."""

    NONE = "none"
    PENDING = "pending"
    DONE = "done"
    RESTORED = "restored"


class AlertStatus(StrEnum):
    """Where the episode's alert stands. ``PENDING``: decided, not yet delivered (a later delivery
    resumes it); ``SENT``; ``FAILED``: every sink failed (a later delivery re-sends);
    ``COVERED``: a mass hold whose one cluster alert another service's decision sent."""

    PENDING = "pending"
    SENT = "sent"
    FAILED = "failed"
    COVERED = "covered"


class EpisodeEnd(StrEnum):
    """Why an episode ended (rule 2): a full quiet window, ECS's ``SERVICE_STEADY_STATE`` at or
    after the decision, or ``restore``."""

    QUIET = "quiet"
    STEADY_STATE = "steady_state"
    RESTORED = "restored"


@dataclass(frozen=True, slots=True)
class Episode:
    """One decision and its progress.

    Times are event times (UTC) except ``lease_until``, which is wall-clock Unix seconds: the
    lease protects an invocation's work, and an invocation's life is measured by the clock.
    ``previous_suspended`` is the scalable target's ``SuspendedState`` before the watchdog
    suspended it (``None``: no scalable target, or not suspended by the watchdog).
    """

    decision_time: datetime
    last_failure: datetime
    action: Action
    reason: Reason
    trigger: str
    action_status: ActionStatus
    alert_status: AlertStatus
    previous_desired_count: int | None = None
    previous_suspended: dict[str, bool] | None = None
    lease_owner: str | None = None
    lease_until: float = 0.0
    escalated: bool = False
    cluster_alert_owner: bool = False

    @property
    def held_at_zero(self) -> bool:
        """The watchdog scaled (or is scaling) this service to 0 and nobody has restored it."""
        return self.action is Action.SCALE_TO_ZERO and self.action_status in (ActionStatus.PENDING,
                                                                               ActionStatus.DONE)

    @property
    def unfinished(self) -> bool:
        """An action or an alert is still owed (a later delivery resumes it once the lease expires)."""
        return self.action_status is ActionStatus.PENDING or self.alert_status in (AlertStatus.PENDING,
                                                                                    AlertStatus.FAILED)

    def leased(self, now: float) -> bool:
        """True while another invocation's lease runs (``now``: wall-clock Unix seconds)."""
        return self.lease_owner is not None and self.lease_until > now


@dataclass(frozen=True, slots=True)
class DeploymentNote:
    """One ``ECS Deployment State Change`` (``detail.eventName``, ``deploymentId``, ``reason``)."""

    time: datetime
    event_name: str
    deployment_id: str | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class ServiceSummary:
    """Everything the watchdog keeps of one service (see the module docstring), bounded in size.

    ``seq`` is the optimistic-concurrency version of the stored item (0: not stored yet).
    ``counted_after``: failures at or before this event time belong to an ended episode and never
    count toward the next one. ``episode_end``: why the last episode ended (``None`` while open).
    """

    service: str
    seq: int = 0
    crashes: tuple[Failure, ...] = ()
    kills: tuple[Failure, ...] = ()
    spot: tuple[tuple[str, datetime], ...] = ()
    deployments: tuple[DeploymentNote, ...] = ()
    episode: Episode | None = None
    episode_end: EpisodeEnd | None = None
    counted_after: datetime | None = None

    @property
    def newest_failure(self) -> datetime | None:
        times = [f.time for f in self.crashes + self.kills]
        return max(times) if times else None

    def knows_task(self, task_arn: str) -> bool:
        """A verdict exists for the task (compared by task id: older entries are stored with the id only)."""
        tid = task_arn.rsplit("/", 1)[-1]
        return any(f.task_arn.rsplit("/", 1)[-1] == tid for f in self.crashes + self.kills) or any(
            t.rsplit("/", 1)[-1] == tid for t, _ in self.spot)

    def counted(self, kind: StopKind, end: datetime, window: timedelta) -> tuple[Failure, ...]:
        """Failures of ``kind`` with event time in ``[end - window, end]`` (both ends included) that
        belong to no ended episode, oldest first."""
        ring = self.crashes if kind is StopKind.CRASH else self.kills
        return in_window(ring, end, window, self.counted_after)


@dataclass(frozen=True, slots=True)
class JobSummary:
    """A standalone job family's failures: the newest failed task ARNs (deduplication) and when its
    last alert went out (at most one alert per family per window)."""

    family: str
    seq: int = 0
    tasks: tuple[str, ...] = ()
    last_alert: datetime | None = None
    failures_since_alert: int = 0


def in_window(failures: tuple[Failure, ...], end: datetime, window: timedelta,
              after: datetime | None = None) -> tuple[Failure, ...]:
    """``failures`` with ``end - window <= time <= end`` and ``time > after``, oldest first."""
    start = end - window
    return tuple(sorted((f for f in failures if start <= f.time <= end and (after is None or f.time > after)),
                        key=lambda f: (f.time, f.task_arn.rsplit("/", 1)[-1])))


def _ring(failures: tuple[Failure, ...], new: Failure, keep: int) -> tuple[Failure, ...]:
    merged = sorted(failures + (new,), key=lambda f: (f.time, f.task_arn.rsplit("/", 1)[-1]))
    return tuple(merged[-keep:])


def add_failure(summary: ServiceSummary, failure: Failure, keep: int) -> ServiceSummary | None:
    """File one classified failure (a crash or a health-check kill) of the service.

    The first final verdict of a task stands: a task already filed, or marked by a Spot or
    termination notice, changes nothing (returns ``None``). A failure older than the ``keep``
    newest of its kind cannot change a decision and is dropped (``None``).

    Raises:
        ValueError: ``failure.kind`` does not count as a failure (:attr:`StopKind.counts_as_failure`).
    """
    if not failure.kind.counts_as_failure:
        raise ValueError(f"{failure.kind.value} does not count as a failure")
    if summary.knows_task(failure.task_arn):
        return None
    if failure.kind is StopKind.CRASH:
        ring = _ring(summary.crashes, failure, keep)
        return None if failure not in ring else replace(summary, crashes=ring)
    ring = _ring(summary.kills, failure, keep)
    return None if failure not in ring else replace(summary, kills=ring)


def add_spot(summary: ServiceSummary, task_arn: str, at: datetime) -> ServiceSummary | None:
    """Remember that a notice marked ``task_arn`` (its later STOPPED event is never a crash).

    Returns ``None`` when the task already has a verdict (the first one stands). Notices older than
    :data:`SPOT_MEMORY` before ``at`` are forgotten, so the list is bounded by the tasks stopped in
    that span, not by the length of a loop.
    """
    if summary.knows_task(task_arn):
        return None
    horizon = at - SPOT_MEMORY
    kept = tuple((t, when) for t, when in summary.spot if when >= horizon)
    return replace(summary, spot=kept + ((task_arn, at),))


def add_deployment(summary: ServiceSummary, note: DeploymentNote) -> ServiceSummary | None:
    """Keep the newest :data:`DEPLOYMENT_MEMORY` deployment events in event-time order; a redelivered
    one (same time, name and id) changes nothing."""
    if note in summary.deployments:
        return None
    notes = sorted(summary.deployments + (note,), key=lambda n: n.time)
    return replace(summary, deployments=tuple(notes[-DEPLOYMENT_MEMORY:]))


def episode_is_open(summary: ServiceSummary, at: datetime, window: timedelta) -> bool:
    """Rule 2: the episode stays open until more than one window passes with no failure of the
    service (a failure at exactly ``last_failure + window`` keeps it open), or it ended
    (``SERVICE_STEADY_STATE``, restore)."""
    ep = summary.episode
    if ep is None or summary.episode_end is not None:
        return False
    return at <= ep.last_failure + window


def close_episode(summary: ServiceSummary, why: EpisodeEnd, at: datetime) -> ServiceSummary | None:
    """End the open episode (``None`` when there is none). Failures up to ``at`` never count again."""
    if summary.episode is None or summary.episode_end is not None:
        return None
    after = max(at, summary.episode.last_failure)
    return replace(summary, episode_end=why, counted_after=after)

