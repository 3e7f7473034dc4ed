"""The watchdog's per-service state as typed records, and its pure transitions.

ARCHITECTURE.md, "Decision policy" rules 1 and 2, and "Watchdog state". One :class:`ServiceSummary`
per service holds everything the policy needs about that service, in a size that does not grow
with the length of a loop:

- the newest ``keep`` crashes and the newest ``keep`` health-check kills (``keep`` is at least
  ``CRASH_THRESHOLD``, so the threshold test is exact; older failures cannot change a decision
  because ``keep`` newer ones exist);
- the tasks a Spot or termination notice marked (their later STOPPED event never counts), kept for
  :data:`SPOT_MEMORY` of event time (ECS stops a Spot task about two minutes after its notice);
- per-minute failure counts (:class:`MinuteCount`) over two windows behind the newest failure, so the
  fleet test can answer "failures in this window" for any window a late event opens, without keeping
  every failure (a loop that crashes every two seconds adds one entry a minute, never one a crash);
- the task ids of the newest :data:`RECENT_TASKS_KEPT` filings in delivery order (a redelivery of a
  failure too old for the rings is still known), and the times of earlier scale-downs that a later
  decision replaced (the fleet test still counts them);
- the newest :data:`DEPLOYMENT_MEMORY` deployment events (``ECS Deployment State Change``);
- the current episode: its decision, where the action and the alert stand, and the lease of the
  invocation working on it.

The adapters store a summary as one item and read it back into these records; core never sees a
raw item. Every transition here returns a new summary (records are frozen) or ``None`` for "no
change", so the caller writes only when something changed.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from msgspec import Struct
from msgspec.structs import replace

from ecs_guardrail.core.classify import StopKind
from ecs_guardrail.core.links import resource_name
from ecs_guardrail.core.records import Action, Failure, Reason

__all__ = [
    "ActionStatus", "AlertStatus", "RecoveryStatus", "EpisodeEnd", "Phase", "IN_FLIGHT", "ALERT_OWED",
    "PROBE_PHASES", "HELD_PHASES", "Episode", "DeploymentNote", "ServiceSummary",
    "JobSummary", "JobFiling", "MinuteCount", "SPOT_MEMORY", "DEPLOYMENT_MEMORY", "JOB_TASKS_KEPT",
    "RECENT_TASKS_KEPT", "SCALE_DOWNS_KEPT", "add_failure", "add_spot", "add_deployment", "episode_is_open",
    "in_window", "close_episode", "mark_restored", "recovery_owed", "owe_recovery", "file_job_failure",
    "count_minutes", "failures_between", "note_activity", "open_episode", "reevaluated", "scale_down_times",
    "file_service_failure", "move_recovery",
]

#: how long (event time) a Spot or termination notice's verdict is remembered for a task
SPOT_MEMORY = timedelta(minutes=30)
#: deployment events kept per service (a rollback is FAILED, IN_PROGRESS, COMPLETED: three)
DEPLOYMENT_MEMORY = 6
#: task ids of the newest filings (delivery order) a summary remembers to know a redelivery
RECENT_TASKS_KEPT = 32
#: earlier scale-downs of the service (replaced by a later decision) a summary remembers
SCALE_DOWNS_KEPT = 4
_MINUTE = timedelta(minutes=1)
#: a failure's event time, a minute count's minute (C getters)
_TIME = operator.attrgetter("time")
_MINUTE_OF = operator.attrgetter("minute")


#: the longest a lease can run from any moment (seconds): Lambda's longest timeout (900 s), the lease's margin
#: (core/lifecycle.py LEASE_MARGIN_S, 60 s) and as much again for clock skew; a longer one is corrupt
LEASE_LONGEST_S = 900.0 + 60.0 + 60.0


class ActionStatus(StrEnum):
    """Where the episode's action stands (the phases are :class:`ecs_guardrail.core.lifecycle.Phase`).

    ``NONE``: nothing to do (alert only, hold); ``PENDING``: a scale-down is decided and claimed
    (the previous desired count recorded with the claim); ``RECORDED``: its held-at-zero slot is
    taken and the scalable target's previous ``SuspendedState`` recorded, before any call changes
    it; ``SUSPENDED``: the scalable target is suspended; ``DONE``: scaled to 0 (the service is *held
    at zero* until restored); ``RESTORED``: put back by ``restore`` or raised by an operator.
    ``PENDING``, ``RECORDED`` and ``SUSPENDED`` are *in flight*: an invocation is inside the action.
    ``PROBING`` (``RECOVERY=probe``): a probe is claimed or running, desired count 1 with the scalable
    target still suspended; ``PROBE_FAILED``: the probe saw a failure and the service is owed its way
    back to 0. Both are still *held at zero* for the blast-radius cap (ARCHITECTURE.md, "Recovery")."""

    NONE = "none"
    PENDING = "pending"
    RECORDED = "recorded"
    SUSPENDED = "suspended"
    DONE = "done"
    PROBING = "probing"
    PROBE_FAILED = "probe_failed"
    RESTORED = "restored"


class AlertStatus(StrEnum):
    """Where the episode's alert stands. ``PENDING``: decided, not yet delivered (a later delivery
    resumes it); ``SENT``; ``FAILED``: every sink failed (a later delivery re-sends);
    ``COVERED``: a mass hold whose one cluster alert another service's decision sent."""

    PENDING = "pending"
    SENT = "sent"
    FAILED = "failed"
    COVERED = "covered"


class RecoveryStatus(StrEnum):
    """Where the episode's recovery message stands (at most one per episode). ``NONE``: not owed
    (the episode is open, never alerted, or a scale-down not restored yet); ``PENDING``: owed, the
    episode ended (the write that ended it set this); ``SENT``: claimed by one invocation (set
    *before* delivery, so two never send it); ``FAILED``: every sink failed (logged; the next scheduled
    sweep moves it back to ``PENDING`` and sends it again, :mod:`ecs_guardrail.handlers.sweep`: one
    claim per attempt, so two invocations never send the same attempt)."""

    NONE = "none"
    PENDING = "pending"
    SENT = "sent"
    FAILED = "failed"


class EpisodeEnd(StrEnum):
    """Why an episode ended (rule 2): a full quiet window, ECS's ``SERVICE_STEADY_STATE`` at or
    after the decision, ``restore`` (or an operator's raise seen while held), or an operator's count
    found by a probe before its next change (``operator_raised``)."""

    QUIET = "quiet"
    STEADY_STATE = "steady_state"
    RESTORED = "restored"
    #: a probe read a desired count it had not set before its next change (ARCHITECTURE.md, "Recovery":
    #: a probe never fights an operator): the operator's count and scalable target are left as they are
    OPERATOR_RAISED = "operator_raised"


class Phase(StrEnum):
    """Where an episode stands: derived from the stored statuses by :attr:`Episode.phase` (the one place
    they are read), and what every transition of :mod:`ecs_guardrail.core.lifecycle` switches on.

    A scale-down: ``CLAIMED`` (decision and claim written in one transaction, under a lease),
    ``FACTS_RECORDED`` (its held-at-zero slot taken, the scalable target's previous state recorded),
    ``SCALING_SUSPENDED`` (RegisterScalableTarget suspended scaling), ``ACTED`` (UpdateService set the
    desired count to 0: held at zero, the alert owed), ``HELD`` (held at zero, alerted). ``REFUSED``: AWS
    refused the action, the decision became ``alert_only`` and its alert is owed; ``ALERT_OWED``: an
    alert-only or hold decision whose alert is owed; ``ALERTED``: its alert went out (or the cluster alert
    covers it), the lease still held; ``DONE``: nothing owed, lease released. Probes (``RECOVERY=probe``):
    ``PROBE_CLAIMED`` (desired count 1 owed), ``PROBING`` (desired count 1 asked for), ``PROBE_FAILED``
    ("back to 0" owed). ``RELEASED``: the scale-down was undone (a restore, a probe that passed, an
    operator's raise) and its slot freed; ``RELEASED_ALERT_OWED``: undone before its alert went out (the
    alert is still owed).
    """

    CLAIMED = "claimed"
    FACTS_RECORDED = "facts_recorded"
    SCALING_SUSPENDED = "scaling_suspended"
    ACTED = "acted"
    HELD = "held"
    REFUSED = "refused"
    ALERT_OWED = "alert_owed"
    ALERTED = "alerted"
    DONE = "done"
    PROBE_CLAIMED = "probe_claimed"
    PROBING = "probing"
    PROBE_FAILED = "probe_failed"
    RELEASED = "released"
    RELEASED_ALERT_OWED = "released_alert_owed"


_REFUSALS = (Reason.ACTION_FAILED, Reason.SCALING_SUSPEND_FAILED)
_PHASE_OF = {ActionStatus.PENDING: Phase.CLAIMED, ActionStatus.RECORDED: Phase.FACTS_RECORDED,
             ActionStatus.SUSPENDED: Phase.SCALING_SUSPENDED, ActionStatus.PROBE_FAILED: Phase.PROBE_FAILED}
#: an invocation is inside the scale-down (its alert is owed as well)
IN_FLIGHT = frozenset({Phase.CLAIMED, Phase.FACTS_RECORDED, Phase.SCALING_SUSPENDED})
#: the alert is owed once the action (if any) is finished
ALERT_OWED = frozenset({Phase.ACTED, Phase.REFUSED, Phase.ALERT_OWED, Phase.RELEASED_ALERT_OWED})
#: a probe is claimed, running, or owed its way back to 0
PROBE_PHASES = frozenset({Phase.PROBE_CLAIMED, Phase.PROBING, Phase.PROBE_FAILED})
#: a scale-down's service is held at zero (the blast-radius cap counts it)
HELD_PHASES = IN_FLIGHT | PROBE_PHASES | {Phase.ACTED, Phase.HELD}
#: the scale-down was undone (a restore, a probe that passed, an operator's raise), its alert owed or not
RELEASED_PHASES = frozenset({Phase.RELEASED, Phase.RELEASED_ALERT_OWED})
_NOT_ACTED = frozenset({Phase.REFUSED, Phase.ALERT_OWED, Phase.ALERTED, Phase.DONE})
_OWED = IN_FLIGHT | ALERT_OWED


class Episode(Struct, frozen=True):
    """One decision and its progress.

    Times are event times (UTC) except ``lease_until``, which is wall-clock Unix seconds: the
    lease protects an invocation's work, and an invocation's life is measured by the clock.
    ``previous_suspended`` is the scalable target's ``SuspendedState`` before the watchdog
    suspended it (``None``: no scalable target, or not suspended by the watchdog).

    Probes (``RECOVERY=probe``, ARCHITECTURE.md "Recovery"): ``probes`` started so far;
    ``probe_at``: when the next probe is due (held at zero) or when the running one started
    (``PROBING``), in the sweep's time; ``probe_delay_minutes``: the delay that scheduled it (doubles
    per failed probe up to ``PROBE_MAX_DELAY_MINUTES``); ``probe_live``: UpdateService desiredCount 1
    ran for the current probe; ``still_failing_sent``: the one "still failing" alert at the cap went out.
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
    recovery: RecoveryStatus = RecoveryStatus.NONE
    ended_by: EpisodeEnd | None = None
    ended_at: datetime | None = None
    probes: int = 0
    probe_at: datetime | None = None
    probe_delay_minutes: int = 0
    probe_live: bool = False
    still_failing_sent: bool = False
    evaluated_at: datetime | None = None

    @property
    def last_evaluation(self) -> datetime:
        """Event time ``T`` of the newest evaluation of the policy for this episode: its decision, or a
        later silent re-evaluation of a provisional hold (rule 2)."""
        return self.evaluated_at or self.decision_time

    @property
    def phase(self) -> Phase:
        """Where the episode stands: the one reading of ``action_status`` and ``alert_status`` (as
        Powertools' idempotency record has one status, read in one place). Every property below, the
        machine's :func:`~ecs_guardrail.core.lifecycle.transition` and
        :func:`~ecs_guardrail.core.lifecycle.next_effect` switch on it."""
        status = self.action_status
        if status is ActionStatus.NONE or status is ActionStatus.DONE or status is ActionStatus.RESTORED:
            owed = self.alert_status is AlertStatus.PENDING or self.alert_status is AlertStatus.FAILED
            if status is ActionStatus.RESTORED:
                return Phase.RELEASED_ALERT_OWED if owed else Phase.RELEASED
            if status is ActionStatus.DONE:
                return Phase.ACTED if owed else Phase.HELD
            if owed:
                return Phase.REFUSED if self.reason in _REFUSALS else Phase.ALERT_OWED
            return Phase.ALERTED if self.lease_owner is not None else Phase.DONE
        if status is ActionStatus.PROBING:
            return Phase.PROBING if self.probe_live else Phase.PROBE_CLAIMED
        return _PHASE_OF[status]

    @property
    def acted(self) -> bool:
        """A scale-down was decided and not turned into an alert or a hold (pending, done, restored)."""
        return self.action is Action.SCALE_TO_ZERO and self.phase not in _NOT_ACTED

    @property
    def held_at_zero(self) -> bool:
        """The watchdog scaled (or is scaling) this service to 0 and nobody has restored it."""
        return self.action is Action.SCALE_TO_ZERO and self.phase in HELD_PHASES

    @property
    def released(self) -> bool:
        """The watchdog's scale-down of this service was undone (``restore``, a probe that passed, an
        operator's raise seen by a probe): ``RELEASED`` or ``RELEASED_ALERT_OWED``."""
        return self.phase in RELEASED_PHASES

    @property
    def probing(self) -> bool:
        """A probe is claimed, running, or owed its way back to 0 (``PROBING``, ``PROBE_FAILED``)."""
        return self.phase in PROBE_PHASES

    @property
    def in_flight(self) -> bool:
        """An invocation is inside this episode's scale-down (claimed, not yet done or refused)."""
        return self.phase in IN_FLIGHT

    @property
    def alert_owed(self) -> bool:
        """The episode's alert is decided and not delivered (``PENDING``, or ``FAILED``: re-sent)."""
        return self.phase in ALERT_OWED

    @property
    def unfinished(self) -> bool:
        """An action or an alert is still owed, or a lease is still held (a later delivery resumes it
        once the lease expires)."""
        return self.phase in _OWED or self.lease_owner is not None

    def leased(self, now: float) -> bool:
        """True while another invocation's lease runs (``now``: wall-clock Unix seconds). A lease ending
        more than :data:`LEASE_LONGEST_S` after ``now`` runs no more: no invocation takes one that long (a
        stored ``lease_until`` of year 33,000 would hold the episode, and its service, forever)."""
        return self.lease_owner is not None and now < self.lease_until <= now + LEASE_LONGEST_S


class DeploymentNote(Struct, frozen=True):
    """One ``ECS Deployment State Change`` (``detail.eventName``, ``deploymentId``, ``reason``)."""

    time: datetime
    event_name: str
    deployment_id: str | None = None
    reason: str | None = None


class MinuteCount(Struct, frozen=True):
    """Failures (crashes and health-check kills) of one service stamped in one minute.

    ``minute``: the minute's start (UTC); ``count``: failures stamped in ``[minute, minute + 1 min)``;
    ``seconds``: their offsets into the minute (seconds, ascending): all of them while ``count`` is at
    most ``2 x edge``, else the ``edge`` smallest and the ``edge`` largest. That is enough to answer
    "at least ``edge`` failures in ``[start, end]``" exactly when a window's end falls inside the
    minute (:func:`failures_between`), in a size that does not grow with the failures.
    """

    minute: datetime
    count: int
    seconds: tuple[float, ...]


class ServiceSummary(Struct, frozen=True):
    """Everything the watchdog keeps of one service (see the module docstring), bounded in size.

    ``seq`` is the optimistic-concurrency version of the stored item (0: not stored yet).
    ``counted_after``: failures at or before this event time belong to an ended episode and never
    count toward the next one. ``episode_end``: why the last episode ended (``None`` while open).
    ``minutes``: per-minute failure counts, oldest first (the fleet test's evidence, which ignores
    episodes); ``recent``: task ids of the newest filings, in delivery order; ``scaled``: event times
    of this service's earlier scale-downs that a later decision replaced, oldest first;
    ``steady_at``: the newest ``SERVICE_STEADY_STATE`` that ended no episode when it was delivered.
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
    minutes: tuple[MinuteCount, ...] = ()
    recent: tuple[str, ...] = ()
    scaled: tuple[datetime, ...] = ()
    steady_at: datetime | None = None

    @property
    def newest_failure(self) -> datetime | None:
        return max(map(_TIME, self.crashes + self.kills), default=None)

    def knows_task(self, task_arn: str) -> bool:
        """A verdict exists for the task (compared by task id: older entries are stored with the id only)."""
        tid = resource_name(task_arn)
        if tid[-8:] in self.recent:  # _short(task_arn)
            return True
        tail = "/" + tid  # resource_name(x) == tid: x is the id itself or ends with "/<id>" (an id has no "/")
        for f in self.crashes + self.kills:  # plain loops: a generator per ring cost more than the tests
            arn = f.task_arn
            if arn == tid or arn.endswith(tail):
                return True
        return any(t == tid or t.endswith(tail) for t, _ in self.spot)

    def counted(self, kind: StopKind, end: datetime, window: timedelta) -> tuple[Failure, ...]:
        """Failures of ``kind`` with event time in ``[end - window, end]`` (both ends included) that
        belong to no ended episode, oldest first."""
        ring = self.crashes if kind is StopKind.CRASH else self.kills
        return in_window(ring, end, window, self.counted_after)


#: failed task ARNs a job family remembers to deduplicate redeliveries (a bounded ring)
JOB_TASKS_KEPT = 32


class JobSummary(Struct, frozen=True):
    """A standalone job family's current window, in a size that does not grow with the failures.

    ``tasks``: the newest :data:`JOB_TASKS_KEPT` failed task ARNs (deduplication); ``last_alert``: event
    time of the failure that opened the current window (its alert went out then); the window is
    ``[last_alert, last_alert + window]``. ``failures_since_alert``: failed runs in the window, its
    opener included; ``last_exit`` (``"1"``, ``"unknown"``) and ``last_time``: the newest of them.
    """

    family: str
    seq: int = 0
    tasks: tuple[str, ...] = ()
    last_alert: datetime | None = None
    failures_since_alert: int = 0
    last_exit: str | None = None
    last_time: datetime | None = None


class JobFiling(Struct, frozen=True):
    """What filing one failed run did: ``job`` (the new state to write), ``opened`` (this run opened
    a window: alert), and ``closed`` (the window it closed, when that window saw more than its opener:
    send its summary) as ``(window start, failures, last exit, last failure time)``."""

    job: JobSummary
    opened: bool
    closed: tuple[datetime, int, str, datetime] | None = None


def file_job_failure(job: JobSummary, task_arn: str, at: datetime, exit_text: str,
                     window: timedelta) -> JobFiling | None:
    """File a failed run of a job family (ARCHITECTURE.md: one alert per family per window, then one
    summary when the window closes).

    A run at most ``window`` after the window opened (both ends included; a late one with an older
    time too) is counted in it, unless a clean run already closed and summarised that window (count 0:
    the run is only remembered). A run after that closes the window and opens the next one: the
    caller sends the closed window's summary (when it counted more than the run that opened it;
    otherwise the opening alert already said everything) together with the news of the new window,
    in one message. Returns ``None`` for a task already filed (a redelivery).
    """
    if task_arn in job.tasks:
        return None
    tasks = (job.tasks + (task_arn,))[-JOB_TASKS_KEPT:]
    if job.last_alert is not None and at <= job.last_alert + window and job.failures_since_alert == 0:
        # a late failure of a window a clean run already closed and summarised: no window in the past
        return JobFiling(replace(job, tasks=tasks), opened=False)
    if job.last_alert is not None and at <= job.last_alert + window:
        newest = job.last_time is None or at >= job.last_time
        return JobFiling(replace(job, tasks=tasks, failures_since_alert=job.failures_since_alert + 1,
                                 last_exit=exit_text if newest else job.last_exit,
                                 last_time=at if newest else job.last_time), opened=False)
    closed = None
    if job.last_alert is not None and job.failures_since_alert > 1:
        closed = (job.last_alert, job.failures_since_alert, job.last_exit or "unknown", job.last_time or job.last_alert)
    return JobFiling(replace(job, tasks=tasks, last_alert=at, failures_since_alert=1, last_exit=exit_text,
                             last_time=at), opened=True, closed=closed)


def close_job_window(job: JobSummary, at: datetime, window: timedelta) -> JobFiling | None:
    """A run of the family finished normally at ``at``: close its window if that window is over.

    A job that stops failing sends no further failure, so without this its last window's summary would
    never go out. Returns a filing whose ``closed`` is the summary to send (the window counted more than
    the run that opened it), with ``job`` reset to no open window; ``None`` when there is nothing to
    close or say (no window, the window still open, or a window of one failure, which its opening alert
    already reported whole). The closed window keeps its start with a count of 0 (summarised): a failure
    of it delivered late is filed there (:func:`file_job_failure`) and opens no window in the past.
    """
    if job.last_alert is None or at <= job.last_alert + window or job.failures_since_alert <= 1:
        return None
    closed = (job.last_alert, job.failures_since_alert, job.last_exit or "unknown", job.last_time or job.last_alert)
    return JobFiling(replace(job, failures_since_alert=0), opened=False, closed=closed)


def in_window(failures: tuple[Failure, ...], end: datetime, window: timedelta,
              after: datetime | None = None) -> tuple[Failure, ...]:
    """``failures`` with ``end - window <= time <= end`` and ``time > after``, oldest first."""
    start = end - window
    return tuple(sorted((f for f in failures if start <= f.time <= end and (after is None or f.time > after)),
                        key=lambda f: (f.time, resource_name(f.task_arn))))


def _ring(failures: tuple[Failure, ...], new: Failure, keep: int) -> tuple[Failure, ...]:
    merged = failures + (new,)
    times = tuple(map(_TIME, merged))
    if all(map(operator.lt, times, times[1:])):  # already in order, no two at one time (a new failure is newest)
        return merged[-keep:]
    return tuple(sorted(merged, key=lambda f: (f.time, resource_name(f.task_arn)))[-keep:])


def _short(task_arn: str) -> str:
    """The part of a task ARN a summary remembers for deduplication: the last 8 characters of the task
    id (32 bits of a random 128-bit id: two of one service's 32 newest collide with a chance of about
    one in ten million, and a collision only makes one stop count once too few in the fleet test)."""
    return resource_name(task_arn)[-8:]


def _minute_of(t: datetime) -> datetime:
    return t.astimezone(UTC).replace(second=0, microsecond=0)


def _count_in_minute(minutes: tuple[MinuteCount, ...], t: datetime, edge: int,
                     horizon: timedelta) -> tuple[MinuteCount, ...]:
    """``minutes`` with one more failure at ``t``; at most ``horizon`` / 1 min + 1 minutes with failures
    are kept, the newest ones (so is ``t`` itself forgotten when it is older than all of those).

    A bound on the *number* of failing minutes, not on their age: the fleet test counts another
    service's failures in a window "however long ago that service's newest failure was"
    (ARCHITECTURE.md, rule 3), so a service that failed twice at 08:31 and once at 09:58 still shows
    its 08:31 failures to a crash of another service stamped 08:42 and delivered after 09:58. Only a
    service that failed in more distinct minutes than that since forgets its oldest ones (the item
    stays as small as before: a loop failing every minute keeps the same 61 minutes)."""
    utc = t.astimezone(UTC)
    m = utc.replace(second=0, microsecond=0)  # _minute_of(t)
    offset = (utc - m).total_seconds()
    kept = int(horizon // _MINUTE) + 1
    last = minutes[-1].minute if minutes else None
    if last is None or (m >= last and _ascending(minutes)):
        # the failure is in the newest minute or after it, as nearly every one is (the stored minutes are in
        # order, one per minute): the same tuple as the general way below, without its map and sort
        old = minutes[-1] if m == last else None
        head = minutes[:-1] if old is not None else minutes
        return (*head, _minute_count(m, old, offset, edge))[-kept:]
    by_minute = {mc.minute: mc for mc in minutes}
    by_minute[m] = _minute_count(m, by_minute.get(m), offset, edge)
    return tuple(by_minute[k] for k in sorted(by_minute)[-kept:])


def _ascending(minutes: tuple[MinuteCount, ...]) -> bool:
    """Each minute after the one before it (what :func:`_count_in_minute` makes; a hand-edited item may
    hold them in another order, or one minute twice)."""
    times = tuple(map(_MINUTE_OF, minutes))
    return all(map(operator.lt, times, times[1:]))


def _minute_count(m: datetime, old: MinuteCount | None, offset: float, edge: int) -> MinuteCount:
    """Minute ``m``'s count ``old`` (``None``: none yet) with one more failure ``offset`` seconds into it."""
    secs = sorted((old.seconds if old else ()) + (offset,))
    count = (old.count if old else 0) + 1
    if count > 2 * edge:
        secs = secs[:edge] + secs[-edge:]
    return MinuteCount(m, count, tuple(secs))


def count_minutes(failures: Iterable[Failure], edge: int = 2,
                  horizon: timedelta = timedelta(minutes=60)) -> tuple[MinuteCount, ...]:
    """The per-minute counts :func:`add_failure` keeps, built from ``failures`` at once (tests, and a
    summary read back from an older item that kept rings only)."""
    minutes: tuple[MinuteCount, ...] = ()
    for f in sorted(failures, key=lambda f: f.time):
        minutes = _count_in_minute(minutes, f.time, edge, horizon)
    return minutes


def failures_between(minutes: tuple[MinuteCount, ...], start: datetime, end: datetime, cap: int) -> int:
    """How many failures the per-minute counts hold with ``start <= time <= end``, capped at ``cap``.

    Exact up to ``cap`` when ``cap`` is at most the ``edge`` the counts were kept with and the span is
    at least a minute (a minute cut by ``start`` keeps its ``edge`` largest offsets, one cut by ``end``
    its ``edge`` smallest). The fleet test asks "at least ``FLEET_SIGNAL_MIN_FAILURES``" and needs no
    more. Returns 0 for an empty span.
    """
    if end < start or cap <= 0:
        return 0
    total = 0
    for mc in minutes:
        lo, hi = mc.minute, mc.minute + _MINUTE
        if hi <= start or lo > end:
            continue
        if lo >= start and hi <= end:
            total += mc.count
        else:
            s_off = max(0.0, (start - lo).total_seconds())
            e_off = (end - lo).total_seconds()
            inside = sum(1 for x in mc.seconds if s_off <= x <= e_off)
            if len(mc.seconds) < mc.count and inside >= cap:
                inside = cap  # at least cap; the rest are not known one by one
            total += inside
        if total >= cap:
            return cap
    return min(total, cap)


def add_failure(summary: ServiceSummary, failure: Failure, keep: int, *, edge: int = 2,
                horizon: timedelta = timedelta(minutes=60)) -> ServiceSummary | None:
    """File one classified failure (a crash or a health-check kill) of the service.

    The first final verdict of a task stands: a task already filed (in a ring, or among the
    :data:`RECENT_TASKS_KEPT` newest filings), or marked by a Spot or termination notice, changes
    nothing (returns ``None``). Every new failure is counted in its own minute (:class:`MinuteCount`,
    ``edge`` offsets kept at each end of a minute, minutes more than ``horizon`` behind the newest
    forgotten); the rings keep the ``keep`` newest of each kind, so a failure older than those is in
    the minute counts only (it can no longer change this service's own threshold test).

    Raises:
        ValueError: ``failure.kind`` does not count as a failure (:attr:`StopKind.counts_as_failure`).
    """
    if not failure.kind.counts_as_failure:
        raise ValueError(f"{failure.kind.value} does not count as a failure")
    if summary.knows_task(failure.task_arn):
        return None
    minutes = _count_in_minute(summary.minutes, failure.time, edge, horizon)
    recent = (summary.recent + (_short(failure.task_arn),))[-RECENT_TASKS_KEPT:]
    if failure.kind is StopKind.CRASH:
        ring = _ring(summary.crashes, failure, keep)
        return replace(summary, minutes=minutes, recent=recent, **({"crashes": ring} if failure in ring else {}))
    ring = _ring(summary.kills, failure, keep)
    return replace(summary, minutes=minutes, recent=recent, **({"kills": ring} if failure in ring else {}))


def note_activity(summary: ServiceSummary, at: datetime, window: timedelta) -> ServiceSummary | None:
    """Rule 2's quiet window after a failure, or a ``SERVICE_TASK_START_IMPAIRED`` (which counts like a
    failure for it), stamped ``at``: an open episode whose last failure is more than ``window`` before
    ``at`` ended quietly then (failures up to its last one stay in it); otherwise a newer ``at`` moves
    its last failure. ``None`` when nothing changes (no open episode, or ``at`` not newer)."""
    ep = summary.episode
    if ep is None or summary.episode_end is not None:
        return None
    if at > ep.last_failure + window:
        return close_episode(summary, EpisodeEnd.QUIET, ep.last_failure, ep.last_failure + window)
    if at > ep.last_failure:
        return replace(summary, episode=replace(ep, last_failure=at))
    return None


def open_episode(summary: ServiceSummary, episode: Episode) -> ServiceSummary:
    """``summary`` with ``episode`` as its current (open) episode: a new one, or the next decision of
    the open one (an escalation, a re-evaluated hold). A scale-down the replaced decision made is
    remembered in ``scaled`` (newest :data:`SCALE_DOWNS_KEPT`): a later decision does not erase it
    from the fleet test (rule 3)."""
    prev, scaled = summary.episode, summary.scaled
    if prev is not None and prev.acted and prev.decision_time != episode.decision_time:
        scaled = tuple(sorted(set(scaled) | {prev.decision_time}))[-SCALE_DOWNS_KEPT:]
    return replace(summary, episode=episode, episode_end=None, scaled=scaled)


def scale_down_times(summary: ServiceSummary) -> tuple[datetime, ...]:
    """Event times of every scale-down of the service the summary remembers (the current episode's
    when it acted, and earlier ones a later decision replaced), oldest first."""
    ep = summary.episode
    now = (ep.decision_time,) if ep is not None and ep.acted else ()
    return tuple(sorted(set(summary.scaled) | set(now)))


def reevaluated(summary: ServiceSummary, at: datetime, action: Action, reason: Reason, *,
                escalation: bool = False) -> ServiceSummary | None:
    """Rule 2, a re-evaluation of the open episode at event time ``at`` whose outcome is
    ``(action, reason)``: when that is the episode's current outcome, nothing is recorded or sent,
    and this returns the summary with the evaluation moved to ``at`` (and the one escalation used up
    when ``escalation``). ``None`` when the outcome differs (the caller records the episode's next
    decision) or there is no episode."""
    ep = summary.episode
    if ep is None or (ep.action, ep.reason) != (action, reason):
        return None
    return replace(summary, episode=replace(ep, evaluated_at=max(at, ep.last_evaluation),
                                            escalated=ep.escalated or escalation))


def _uncount(minutes: tuple[MinuteCount, ...], t: datetime) -> tuple[MinuteCount, ...]:
    """``minutes`` with one failure at ``t`` taken out again (a notice delivered after its task's stop)."""
    m = _minute_of(t)
    offset = (t.astimezone(UTC) - m).total_seconds()
    out = []
    for mc in minutes:
        if mc.minute == m and mc.count > 0:
            secs = list(mc.seconds)
            if offset in secs:
                secs.remove(offset)
            if mc.count > 1:
                out.append(MinuteCount(m, mc.count - 1, tuple(secs)))
            continue
        out.append(mc)
    return tuple(out)


def add_spot(summary: ServiceSummary, task_arn: str, at: datetime) -> ServiceSummary | None:
    """Remember that a notice stamped ``at`` marked ``task_arn`` (its STOPPED event is never a crash): a
    Spot interruption, or a TerminationNotice elsewhere (Fargate maintenance, retirement, Managed
    Instances draining: :func:`ecs_guardrail.core.classify.remembered_per_task`).

    The notice marks what kind of stop the task's stop is, whatever the delivery order: when the
    task's STOPPED event (stamped at or after ``at``) was delivered first and filed as a failure, that
    failure is taken out of the rings and the minute counts again (a decision it already caused
    stands). Returns ``None`` when a notice of the task is already remembered, or the task failed
    before ``at`` (the first verdict stands). Notices older than :data:`SPOT_MEMORY` before ``at`` are
    forgotten, so the list is bounded by the tasks stopped in that span, not by the length of a loop.
    """
    tid = resource_name(task_arn)
    tail = "/" + tid  # resource_name(x) == tid: x is the id itself or ends with "/<id>" (an id has no "/")
    for t, _ in summary.spot:
        if t == tid or t.endswith(tail):
            return None
    filed = [f for f in summary.crashes + summary.kills if f.task_arn == tid or f.task_arn.endswith(tail)]
    # not filed in a ring and no notice of it: summary.knows_task is its recent filings alone
    if any(f.time < at for f in filed) or (not filed and _short(task_arn) in summary.recent):
        return None
    new = summary
    for f in filed:
        new = replace(new, crashes=tuple(x for x in new.crashes if x is not f),
                      kills=tuple(x for x in new.kills if x is not f), minutes=_uncount(new.minutes, f.time))
    horizon = at - SPOT_MEMORY
    # the kept notices are the very pairs stored before (their stored text is made once: watchdog_state.py)
    kept = tuple(pair for pair in new.spot if pair[1] >= horizon)
    return replace(new, spot=(*kept, (task_arn, at)))


def note_steady(summary: ServiceSummary, at: datetime) -> ServiceSummary | None:
    """ECS reported ``SERVICE_STEADY_STATE`` for the service at ``at`` (rule 2): the open episode ends
    then when its decision's time is at or before ``at`` and its action and alert are done; otherwise
    ``at`` is remembered (``steady_at``), and a decision at or before it, delivered later (its event
    was late) or still finishing, ends there once it is done (:func:`ended_by_steady`). ``None`` when
    nothing changes."""
    ep = summary.episode
    if ep is not None and summary.episode_end is None and ep.decision_time <= at and not ep.unfinished:
        return close_episode(summary, EpisodeEnd.STEADY_STATE, at)
    if summary.steady_at is not None and summary.steady_at >= at:
        return None
    return replace(summary, steady_at=at)


def ended_by_steady(summary: ServiceSummary) -> ServiceSummary | None:
    """The open, finished episode ended by a remembered ``SERVICE_STEADY_STATE`` at or after its
    decision (:func:`note_steady`), or ``None``."""
    ep, at = summary.episode, summary.steady_at
    if ep is None or at is None or summary.episode_end is not None or ep.unfinished or at < ep.decision_time:
        return None
    return close_episode(summary, EpisodeEnd.STEADY_STATE, at)


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


def close_episode(summary: ServiceSummary, why: EpisodeEnd, at: datetime,
                  ended_at: datetime | None = None) -> ServiceSummary | None:
    """End the open episode at event time ``at`` (``None`` when there is none). Failures stamped up to
    ``at`` never count again; failures stamped after it belong to the next episode (rule 1: a failure
    belongs to the episode its own time falls in).

    ``ended_at`` (default ``at``) is when it ended for its recovery message (a quiet window ends one
    window after the last failure), which this write makes owed when :func:`recovery_owed` says so:
    the one writer that ends an episode is the one that owes its recovery.
    """
    if summary.episode is None or summary.episode_end is not None:
        return None
    # the episode ends at ``at``: a failure stamped later belongs to the next episode, even when it was
    # delivered (and filed in this episode's last failure) before the event that ended this one
    return replace(summary, episode_end=why, counted_after=at,
                   episode=owe_recovery(summary.episode, why, ended_at or at))


def recovery_owed(ep: Episode, why: EpisodeEnd) -> bool:
    """Is a recovery message owed when ``ep`` ends ``why``?

    Only for an episode whose own alert went out (``SENT``: a ``COVERED`` mass hold, or an alert still
    pending or failed, never told the channel anything to recover from), once (``recovery`` still
    ``NONE``), and for a scale-down only when the service is restored: a stopped service is quiet and
    steady because it is stopped, not because it recovered.
    """
    # alert_status read here, not through the phase: the phase says whether an alert is still owed, not
    # whose alert went out (SENT and COVERED are both ALERTED, HELD, DONE or RELEASED), and only the
    # channel that heard of this service's own episode is owed its recovery
    if ep.alert_status is not AlertStatus.SENT or ep.recovery is not RecoveryStatus.NONE:
        return False
    return why in (EpisodeEnd.RESTORED, EpisodeEnd.OPERATOR_RAISED) if ep.acted else True


def owe_recovery(ep: Episode, why: EpisodeEnd, at: datetime) -> Episode:
    """``ep`` with its recovery owed (``PENDING``, ended ``why`` at ``at``) when :func:`recovery_owed`."""
    if not recovery_owed(ep, why):
        return ep
    return replace(ep, recovery=RecoveryStatus.PENDING, ended_by=why, ended_at=at)


def mark_restored(summary: ServiceSummary, at: datetime,
                  why: EpisodeEnd = EpisodeEnd.RESTORED) -> ServiceSummary | None:
    """The watchdog's scale-down of this service was undone (``restore``, or an operator raised its
    desired count), noticed at ``at``: the action is ``RESTORED``, the episode ends if still open
    (at its last failure, in event time: rule 1; a later failure belongs to a new episode) and its
    recovery becomes owed, ended at ``at``; ``why`` is ``RESTORED``, or ``OPERATOR_RAISED`` when a probe
    found an operator's count. ``None`` when there is no scale-down to restore, or it already was."""
    ep = summary.episode
    if ep is None or not ep.acted or ep.released:
        return None
    ep = owe_recovery(replace(ep, action_status=ActionStatus.RESTORED), why, at)
    new = replace(summary, episode=ep)
    if summary.episode_end is None:
        new = replace(new, episode_end=why, counted_after=ep.last_failure)
    return new



def file_service_failure(summary: ServiceSummary, failure: Failure, keep: int, window: timedelta, *,
                         edge: int = 2, horizon: timedelta = timedelta(minutes=60)) -> ServiceSummary | None:
    """File one failure of a service (:func:`add_failure`: its own minute counted, ``edge`` and
    ``horizon`` as there) and move its open episode on (rule 2, :func:`note_activity`): a failure more
    than one ``window`` after the episode's last failure means a full quiet window passed, and the
    episode ended quietly then; a newer failure inside the window moves ``last_failure`` forward.
    Returns ``None`` when nothing changes (a task already filed)."""
    new = add_failure(summary, failure, keep, edge=edge, horizon=horizon)
    return None if new is None else (note_activity(new, failure.time, window) or new)


def move_recovery(summary: ServiceSummary, decision_time: datetime, was: RecoveryStatus,
                  to: RecoveryStatus) -> ServiceSummary | None:
    """The recovery message of the episode decided at ``decision_time`` moved from ``was`` to ``to``
    (``SENT`` -> ``FAILED`` when every channel failed; ``FAILED`` -> ``PENDING`` when the sweep owes it
    again). ``None`` when the episode is another one by now, or its recovery is no longer ``was``: the
    caller's conditional write then changes nothing."""
    e = summary.episode
    if e is None or e.decision_time != decision_time or e.recovery is not was:
        return None
    return replace(summary, episode=replace(e, recovery=to))
