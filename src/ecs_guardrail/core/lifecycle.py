"""The episode's life as a state machine: one enumeration, a pure transition function, effects as data.

ARCHITECTURE.md, "Safe by construction", and STYLE.md, "The episode as a state machine". The handler
(:mod:`ecs_guardrail.handlers.episode`) asks :func:`next_effect` what the claimed episode owes next,
performs that one effect (an AWS call), turns its result into an :data:`Outcome`, and stores what
:func:`transition` returns (one conditional write that also proves it still holds the lease) before
the next effect. Core never calls AWS; a test walks every path here without it, and the interleaving
explorer (``tests/explore``) drives two or three invocations through the same effects.

The phases (:class:`~ecs_guardrail.core.summary.Phase`, derived from the stored statuses in one place,
:attr:`Episode.phase <ecs_guardrail.core.summary.Episode.phase>`), in the order a scale-down lives them.
:func:`transition` is the one transition function (its table :data:`_RULES` lists the phases each
outcome is allowed in) and :func:`next_effect` the one next-effect function, recovery and probes
included::

    CLAIMED ──(slot taken, scalable target's state read and recorded)──> FACTS_RECORDED
      │  └─(every held-at-zero slot taken)──> ALERT_OWED as a hold (blast_radius_cap)
    FACTS_RECORDED ──(RegisterScalableTarget: all suspended)──> SCALING_SUSPENDED
      │  └─(suspend refused)──> REFUSED (alert_only scaling_suspend_failed; slot released)
    SCALING_SUSPENDED / FACTS_RECORDED ──(UpdateService desiredCount 0)──> ACTED  (held at zero)
      └─(AWS refused: AccessDenied, service or cluster gone)──> REFUSED (alert_only action_failed;
        scaling put back, slot released)
    ACTED ──(alert delivered or covered)──> HELD (held at zero; lease released next)
    REFUSED / ALERT_OWED (alert-only, hold) ──(alert delivered or covered)──> ALERTED
    ALERTED ──(lease released)──> DONE
    ACTED / HELD ──(an operator's raise seen: OperatorRaised)──> RELEASED (slot freed)
    any ──(``restore`` finished: Restored; refused while a live lease is in flight)──> RELEASED

With ``RECOVERY=probe`` (ARCHITECTURE.md, "Recovery"), a service held at zero (``HELD``) lives on::

    HELD ──(probe due, or a new task definition revision: ProbeClaimed)──> PROBE_CLAIMED (desired count 1 owed)
    PROBE_CLAIMED ──(UpdateService desiredCount 1, scalable target still suspended: ProbeStarted)──> PROBING
    PROBING ──(a genuine crash or health-check kill: ProbeFailed)──> PROBE_FAILED ("back to 0" owed)
    PROBE_FAILED ──(UpdateService desiredCount 0: ProbeStopped)──> HELD (next probe after twice the delay,
      up to the cap; one "still failing" alert the first time the delay reaches the cap)
    PROBING (PROBE_PASS_MINUTES without a failure, a task running) ──(RestoreService: count and scalable
      target state put back: ProbePassed)──> RELEASED (slot freed, recovery owed)
    HELD / PROBE_CLAIMED / PROBING / PROBE_FAILED ──(before a probe's change, a desired count the probe
      did not set: ProbeOverruled)──> RELEASED (ended ``operator_raised``, slot freed; nothing else changed)

The probe phases are still held at zero for the cap, and never read as an operator's raise
(:class:`OperatorRaised` needs ``ACTED`` or ``HELD``).

Effects, outcomes and transitions are frozen :class:`msgspec.Struct` records (msgspec builds a class in C,
where a dataclass execs generated code: the first trigger's import of this module costs a fraction; issue 33
item 7).

Rules the machine enforces (each an :class:`IllegalTransitionError` when broken):

- what ``restore`` needs is recorded *before* the call that changes it: the previous desired count
  with the claim, the scalable target's previous ``SuspendedState`` in ``FACTS_RECORDED``, before
  RegisterScalableTarget; so a retry after a death or a throttled write between two calls never
  records the watchdog's own suspension as "previous";
- a slot is freed only by a finished restore or an operator's raise on a service whose scale-down is
  done (``ACTED`` or later), never while an invocation's action is in flight;
- a refused action becomes an alert (``action_failed``), so it never swallows its alert;
- held at zero decides nothing (:func:`holds_decisions`, rule 2): no episode, decision or alert over a
  service the watchdog holds at zero until a restore, an operator's raise or a probe changes its state;
- a probe never fights an operator (:func:`probe_owns_count`): each probe change is made only over the
  count the probe itself last set; any other count ends the episode (:class:`ProbeOverruled`);
- a lease outlives its holder: :func:`lease_until` is the invocation's whole remaining time plus
  :data:`LEASE_MARGIN_S` (as Powertools idempotency's in-progress expiry), so the next delivery can
  take an episode over only once its holder is certainly dead.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from msgspec import Struct
from msgspec.structs import replace

from ecs_guardrail.core.errors import IllegalTransitionError
from ecs_guardrail.core.records import Action, Decision, Reason
from ecs_guardrail.core.summary import (
    ALERT_OWED,
    IN_FLIGHT,
    PROBE_PHASES,
    ActionStatus,
    AlertStatus,
    Episode,
    EpisodeEnd,
    Phase,
    ServiceSummary,
    close_episode,
    mark_restored,
)

__all__ = [
    "Phase", "IllegalTransitionError", "LEASE_MARGIN_S", "DEFAULT_REMAINING_S", "lease_until",
    "RecordFacts", "SuspendScaling", "ScaleToZero", "ResumeScaling", "ReleaseSlot", "AmendDecision", "SendAlert",
    "ReleaseLease", "Effect", "FactsRecorded", "SlotDenied", "ScalingSuspended", "SuspendRefused", "Scaled",
    "ActionRefused", "AlertDelivered", "AlertCovered", "AlertFailed", "LeaseReleased", "LeaseTaken",
    "OperatorRaised", "Outcome", "Transition", "transition", "next_effect", "capped", "suspend_refused",
    "action_refused", "may_take_over", "Restored",
    "StartProbe", "StopProbe", "RestoreService", "SendStillFailing", "ProbeClaimed", "ProbeStarted", "ProbeFailed",
    "ProbeStopped", "ProbePassed", "probe_due", "next_delay_minutes", "ProbeSettings",
    "holds_decisions", "raise_seen", "ProbeOverruled", "probe_owns_count",
]

#: seconds a lease lasts beyond the holder's remaining time (Lambda ends an invocation at its timeout;
#: the margin covers the clock skew between the holder and the next invocation, and the final write)
LEASE_MARGIN_S = 60.0
#: remaining time assumed without a Lambda context (seconds): Lambda's longest timeout, 15 minutes
DEFAULT_REMAINING_S = 900.0

def holds_decisions(summary: ServiceSummary) -> bool:
    """Rule 2, *held at zero* (ARCHITECTURE.md, "Decision policy"): True while the service is held at
    zero by the watchdog's own scale-down (a ``scale_to_zero`` whose action is in flight, done, or
    probing, and not restored), whether or not its episode has ended since (a quiet window, a steady
    state). Its failures then update the counts (the fleet test sees them) and nothing else: no
    episode, no decision, no alert, whatever the fleet test says, a redelivery included, until a
    restore (:class:`Restored`), an operator's raise (:class:`OperatorRaised`) or a probe
    (:class:`ProbePassed`) changes its state. The one place the rule lives: the watchdog asks it
    before it decides, and the claim refuses a new decision over it."""
    ep = summary.episode
    return ep is not None and ep.held_at_zero


def raise_seen(summary: ServiceSummary, desired_count: int | None) -> bool:
    """Is ``desired_count`` (DescribeServices ``desiredCount``, tasks; ``None``: unread) an operator's
    raise of the held service? Only above 0, and only over a finished scale-down (``DONE``): an action in
    flight and a probe's own count of 1 are never read as one (the probe's check is its own)."""
    ep = summary.episode
    return (ep is not None and ep.action is Action.SCALE_TO_ZERO and ep.phase in (Phase.ACTED, Phase.HELD)
            and desired_count is not None and desired_count > 0)


def lease_until(now: float, remaining_s: float | None) -> float:
    """Expiry of a lease taken at ``now`` (Unix seconds) by an invocation with ``remaining_s`` seconds
    left (Lambda context ``get_remaining_time_in_millis() / 1000``; ``None``: :data:`DEFAULT_REMAINING_S`).

    Always later than the holder can live: remaining time plus :data:`LEASE_MARGIN_S`, never less.
    """
    remaining = DEFAULT_REMAINING_S if remaining_s is None else max(0.0, remaining_s)
    return now + remaining + LEASE_MARGIN_S


def may_take_over(ep: Episode, owner: str, now: float) -> bool:
    """May ``owner`` take the lease of ``ep`` at ``now`` (Unix seconds)? Only an unfinished episode,
    and only when its lease is free, expired, or already ``owner``'s."""
    if not ep.unfinished:
        return False
    return ep.lease_owner is None or ep.lease_owner == owner or not ep.leased(now)


# ---------------------------------------------------------------------------------------------- effects
class RecordFacts(Struct, frozen=True):
    """Take a held-at-zero slot (conditional write) and read the scalable target, then record its
    ``SuspendedState`` (outcome :class:`FactsRecorded` or :class:`SlotDenied`)."""

    bound: int


class SuspendScaling(Struct, frozen=True):
    """RegisterScalableTarget with dynamic scale-in, scale-out and scheduled scaling suspended."""

    previous: dict[str, bool]


class ScaleToZero(Struct, frozen=True):
    """Tag the service with ``previous_desired_count`` (tasks), then UpdateService desiredCount 0."""

    previous_desired_count: int


class ResumeScaling(Struct, frozen=True):
    """Put the scalable target's ``previous`` ``SuspendedState`` back (compensation after a refusal)."""

    previous: dict[str, bool]


class ReleaseSlot(Struct, frozen=True):
    """Free the service's held-at-zero slot."""


class AmendDecision(Struct, frozen=True):
    """Rewrite the decision record: the decision became ``decision`` (a hold by the cap, an alert)."""

    decision: Decision


class SendAlert(Struct, frozen=True):
    """Deliver the episode's alert (the one cluster alert for a mass hold)."""


class ReleaseLease(Struct, frozen=True):
    """Drop the lease: nothing more is owed by this invocation."""


class StartProbe(Struct, frozen=True):
    """Probe: UpdateService desiredCount 1 with the scalable target still suspended (no scaling policy
    may add tasks while the probe decides)."""


class StopProbe(Struct, frozen=True):
    """The probe failed: back to 0 (UpdateService desiredCount 0; the previous-count tag stays)."""

    previous_desired_count: int


class RestoreService(Struct, frozen=True):
    """The probe passed: restore as ``restore`` does, the desired count ``previous_desired_count`` and
    then the scalable target's ``previous`` ``SuspendedState`` (``None``: no scalable target)."""

    previous_desired_count: int
    previous: dict[str, bool] | None


class SendStillFailing(Struct, frozen=True):
    """The one "still failing after ``probes`` probes" alert, sent the first time the delay reaches its cap
    (``at``: event time of the failed probe's verdict)."""

    probes: int
    at: datetime


Effect = RecordFacts | SuspendScaling | ScaleToZero | ResumeScaling | ReleaseSlot | AmendDecision | SendAlert \
    | ReleaseLease | StartProbe | StopProbe | RestoreService | SendStillFailing


# ---------------------------------------------------------------------------------------------- outcomes
class FactsRecorded(Struct, frozen=True):
    """The slot is taken; ``previous_suspended`` is the scalable target's ``SuspendedState`` (API shape)
    before the watchdog touched it, ``None`` when the service has no scalable target."""

    previous_suspended: dict[str, bool] | None


class SlotDenied(Struct, frozen=True):
    """Every held-at-zero slot of the cluster is taken (by ``held``; the bound is ``bound`` services)."""

    held: tuple[str, ...]
    bound: int


class ScalingSuspended(Struct, frozen=True):
    """RegisterScalableTarget suspended the scalable target (or it already was)."""


class SuspendRefused(Struct, frozen=True):
    """Application Auto Scaling refused to suspend (``reason``: the AWS error in one line)."""

    reason: str


class Scaled(Struct, frozen=True):
    """UpdateService set desiredCount 0 (or it already was 0)."""


class ActionRefused(Struct, frozen=True):
    """ECS refused the action for good (``error``: code and message): AccessDenied from the explicit deny
    or an SCP, a service or cluster deleted meanwhile. A throttle is not a refusal: it is retried."""

    error: str


class AlertDelivered(Struct, frozen=True):
    """At least one sink took the alert; ``cluster_alert_owner``: this episode sent its cluster's alert."""

    cluster_alert_owner: bool = False


class AlertCovered(Struct, frozen=True):
    """A mass hold whose one cluster alert another service's decision sent."""


class AlertFailed(Struct, frozen=True):
    """Every sink failed; a later delivery re-sends. ``cluster_alert_owner`` as in :class:`AlertDelivered`."""

    cluster_alert_owner: bool = False


class LeaseReleased(Struct, frozen=True):
    """The holder dropped its lease."""


class LeaseTaken(Struct, frozen=True):
    """``owner`` took the lease until ``until`` (Unix seconds) at ``now``: a new claim's holder, or the
    next delivery resuming an episode whose holder died."""

    owner: str
    until: float
    now: float


class OperatorRaised(Struct, frozen=True):
    """The service's desired count was raised above 0 by someone else (seen at event time ``at``), or
    ``restore`` put it back."""

    at: datetime


class Restored(Struct, frozen=True):
    """``restore`` put the service back (desired count, then the scalable target's previous
    ``SuspendedState``: :class:`RestoreService`) at ``at`` (event time of the recovery message), on the wall
    clock ``now`` (Unix seconds: a scale-down or probe step whose lease still runs at ``now`` is in
    flight, and refuses it)."""

    at: datetime
    now: float


class ProbeClaimed(Struct, frozen=True):
    """The lease holder starts probe number ``probes + 1`` at ``at`` (the sweep's time, or the event
    time of a new task definition revision); recorded before UpdateService."""

    at: datetime


class ProbeStarted(Struct, frozen=True):
    """UpdateService desiredCount 1 ran (or the service already was at 1)."""


class ProbeFailed(Struct, frozen=True):
    """A genuine crash or health-check kill of the probing service at event time ``at``."""

    at: datetime


class ProbeStopped(Struct, frozen=True):
    """Back at 0 after a failed probe seen at ``at``; ``settings`` give the next delay and its cap."""

    at: datetime
    settings: ProbeSettings


class ProbePassed(Struct, frozen=True):
    """The probe passed and the service was restored (count and scalable target) at ``at``."""

    at: datetime


class ProbeOverruled(Struct, frozen=True):
    """Before a probe's change (desired count 1, back to 0, the restore at a pass), DescribeServices
    said ``desired_count`` (tasks), which is not the count the probe itself last set
    (:func:`probe_owns_count`): an operator's action, seen at ``at``. The episode ends ``operator_raised``;
    nothing else is changed (the count and the scalable target stay as the operator has them)."""

    at: datetime
    desired_count: int


Outcome = FactsRecorded | SlotDenied | ScalingSuspended | SuspendRefused | Scaled | ActionRefused | AlertDelivered \
    | AlertCovered | AlertFailed | LeaseReleased | LeaseTaken | OperatorRaised | Restored | ProbeClaimed \
    | ProbeStarted | ProbeFailed | ProbeStopped | ProbePassed | ProbeOverruled


class ProbeSettings(Struct, frozen=True):
    """``RECOVERY=probe``'s schedule, in minutes: the first delay (``PROBE_DELAY_MINUTES``), its cap
    (``PROBE_MAX_DELAY_MINUTES``) and how long a probe must stay free of failures (``PROBE_PASS_MINUTES``)."""

    delay_minutes: int = 15
    max_delay_minutes: int = 240
    pass_minutes: int = 10


def next_delay_minutes(current: int, settings: ProbeSettings) -> int:
    """The delay after a failed probe: twice ``current`` (the first delay when none yet), at most the cap."""
    base = current or settings.delay_minutes
    return min(settings.max_delay_minutes, base * 2)


class Transition(Struct, frozen=True):
    """What :func:`transition` returns: the summary to store (``None``: nothing changes) and the effects
    to perform after storing it, in order (compensations, the decision record's amendment)."""

    summary: ServiceSummary | None
    effects: tuple[Effect, ...] = ()
    decision: Decision | None = None


# ---------------------------------------------------------------------------------------------- downgrades
def capped(d: Decision, held: tuple[str, ...], bound: int) -> Decision:
    """A scale-down that lost the race for the cluster's last held-at-zero slot becomes a hold
    (``blast_radius_cap``), naming the services that hold the slots."""
    names = ", ".join(held) or "other services"
    return replace(d, action=Action.HOLD, reason=Reason.BLAST_RADIUS_CAP,
                   message=f"held: {names} took the last held-at-zero slot of {d.cluster} (bound {bound}). "
                           + d.message,
                   evidence={"held_at_zero": list(held), "bound": bound})


def suspend_refused(d: Decision, reason: str) -> Decision:
    """A scale-down whose scalable target could not be suspended becomes an alert
    (``scaling_suspend_failed``): a scaling policy would put the tasks back unseen."""
    return replace(d, action=Action.ALERT_ONLY, reason=Reason.SCALING_SUSPEND_FAILED,
                   message="alert-only: could not suspend the service's Application Auto Scaling scalable target "
                           f"({reason}), so it was not scaled to 0 (a scaling policy would put the tasks back). "
                           + d.message,
                   evidence={**d.evidence, "autoscaling_error": reason})


def action_refused(d: Decision, error: str) -> Decision:
    """A scale-down that ECS refused becomes an alert (``action_failed``) that names the error."""
    return replace(d, action=Action.ALERT_ONLY, reason=Reason.ACTION_FAILED,
                   message=f"alert-only: ECS refused the scale-down ({error}); the service was NOT scaled to 0 "
                           "and is still crash-looping. " + d.message,
                   evidence={**d.evidence, "action_error": error})


# ---------------------------------------------------------------------------------------------- the machine
def next_effect(ep: Episode, owner: str, *, alert_tried: bool = False) -> Effect | None:
    """What the lease holder ``owner`` does next for episode ``ep``, or ``None`` (nothing owed; another
    invocation holds the lease): one switch on :attr:`~ecs_guardrail.core.summary.Episode.phase`, in the
    order of the module docstring, a probe's steps included (``StartProbe`` for a claimed probe not yet
    asked for, ``StopProbe`` for a failed one).

    ``alert_tried``: this invocation already tried the alert and every sink failed: it releases the
    lease (and fails, so Lambda retries later) instead of hammering a sink that is down. A probe's pass
    is not asked of the machine: the sweep decides it (:func:`probe_due`) and performs
    :class:`RestoreService` before storing :class:`ProbePassed`; an operator's ``restore`` performs it
    before storing :class:`Restored`.
    """
    if ep.lease_owner != owner:
        return None
    p = ep.phase
    if p in IN_FLIGHT and ep.action is not Action.SCALE_TO_ZERO:
        # a stored episode no write of this machine makes (an alert-only or hold decision with a scale-down
        # in flight: hand-edited, corrupt): never scale a service its decision did not scale
        return ReleaseLease()
    if p is Phase.CLAIMED:
        return RecordFacts(1)
    if p is Phase.FACTS_RECORDED:
        prev = ep.previous_suspended
        if prev is not None and not all(prev.values()):
            return SuspendScaling(prev)
        return ScaleToZero(int(ep.previous_desired_count or 0))
    if p is Phase.SCALING_SUSPENDED:
        return ScaleToZero(int(ep.previous_desired_count or 0))
    if p is Phase.PROBE_CLAIMED:
        return StartProbe()
    if p is Phase.PROBE_FAILED:
        return StopProbe(int(ep.previous_desired_count or 0))
    if p in ALERT_OWED and not alert_tried:
        return SendAlert()
    return ReleaseLease()


def _ep(summary: ServiceSummary) -> Episode:
    if summary.episode is None:
        raise IllegalTransitionError(f"{summary.service}: no episode")
    return summary.episode


def _with(summary: ServiceSummary, **changes: Any) -> ServiceSummary:
    return replace(summary, episode=replace(_ep(summary), **changes))


def _need(decision: Decision | None, outcome: Outcome) -> Decision:
    if decision is None:
        raise IllegalTransitionError(f"{type(outcome).__name__} without its decision")
    return decision


def transition(summary: ServiceSummary, outcome: Outcome, decision: Decision | None = None) -> Transition:
    """The pure step of the machine: the summary after ``outcome`` and the effects it owes. The one
    transition function: every outcome (the scale-down's, the alert's, the lease's, a probe's, an
    operator's raise, a ``restore``) is allowed in the phases :data:`_RULES` lists for it, checked here
    on :attr:`~ecs_guardrail.core.summary.Episode.phase`, and its rule builds the new summary.

    ``decision`` is the episode's current decision (needed by the outcomes that change it: a slot
    denied, a refusal); the returned :attr:`Transition.decision` is the new one when it changed.

    Raises:
        IllegalTransitionError: ``outcome`` is not allowed in the episode's phase (see the module
            docstring); nothing must be written.
    """
    ep = _ep(summary)
    rule = _RULES.get(type(outcome))
    if rule is None:
        raise IllegalTransitionError(f"unknown outcome {outcome!r}")
    allowed, step = rule
    if type(outcome) in _PROBE_OUTCOMES and ep.action is not Action.SCALE_TO_ZERO:
        raise IllegalTransitionError(f"a probe of a {ep.action.value} decision: only a scale-down is probed")
    if type(outcome) in _SCALE_OUTCOMES and ep.action is not Action.SCALE_TO_ZERO:
        raise IllegalTransitionError(f"{type(outcome).__name__} of a {ep.action.value} decision: only a "
                                     "scale-down takes a slot, suspends scaling or scales")
    p = ep.phase
    if allowed is not None and p not in allowed:
        raise IllegalTransitionError(_refused(outcome, p))
    return step(summary, ep, outcome, decision)


def _refused(outcome: Outcome, p: Phase) -> str:
    why = f"{type(outcome).__name__} while the episode is {p.value}"
    if p in IN_FLIGHT:
        why += " (its action in flight: an action in flight is never read as an operator's raise, nor alerted " \
               "before it finishes)"
    if isinstance(outcome, ProbePassed) and p is Phase.PROBE_CLAIMED:
        why += " and no probe task was asked for"
    return why


def _lease_taken(s: ServiceSummary, ep: Episode, o: LeaseTaken, d: Decision | None) -> Transition:
    if not (ep.lease_owner is None or ep.lease_owner == o.owner or not ep.leased(o.now)):
        raise IllegalTransitionError(f"lease held by {ep.lease_owner} until {ep.lease_until}")
    return Transition(_with(s, lease_owner=o.owner, lease_until=o.until))


def _lease_released(s: ServiceSummary, ep: Episode, o: LeaseReleased, d: Decision | None) -> Transition:
    return Transition(_with(s, lease_owner=None, lease_until=0.0))


def _facts_recorded(s: ServiceSummary, ep: Episode, o: FactsRecorded, d: Decision | None) -> Transition:
    return Transition(_with(s, action_status=ActionStatus.RECORDED, previous_suspended=o.previous_suspended))


def _slot_denied(s: ServiceSummary, ep: Episode, o: SlotDenied, d: Decision | None) -> Transition:
    held = capped(_need(d, o), o.held, o.bound)
    return Transition(_with(s, action=Action.HOLD, reason=Reason.BLAST_RADIUS_CAP, action_status=ActionStatus.NONE),
                      (AmendDecision(held),), held)


def _scaling_suspended(s: ServiceSummary, ep: Episode, o: ScalingSuspended, d: Decision | None) -> Transition:
    return Transition(_with(s, action_status=ActionStatus.SUSPENDED))


def _suspend_refused(s: ServiceSummary, ep: Episode, o: SuspendRefused, d: Decision | None) -> Transition:
    alert = suspend_refused(_need(d, o), o.reason)
    return Transition(_with(s, action=Action.ALERT_ONLY, reason=Reason.SCALING_SUSPEND_FAILED,
                            action_status=ActionStatus.NONE), (ReleaseSlot(), AmendDecision(alert)), alert)


def _scaled(s: ServiceSummary, ep: Episode, o: Scaled, d: Decision | None) -> Transition:
    return Transition(_with(s, action_status=ActionStatus.DONE))


def _action_refused(s: ServiceSummary, ep: Episode, o: ActionRefused, d: Decision | None) -> Transition:
    alert = action_refused(_need(d, o), o.error)
    effects: tuple[Effect, ...] = (ResumeScaling(ep.previous_suspended),) if ep.previous_suspended is not None else ()
    return Transition(_with(s, action=Action.ALERT_ONLY, reason=Reason.ACTION_FAILED, action_status=ActionStatus.NONE),
                      effects + (ReleaseSlot(), AmendDecision(alert)), alert)


def _alerted(s: ServiceSummary, ep: Episode, o: AlertDelivered | AlertFailed | AlertCovered,
             d: Decision | None) -> Transition:
    if isinstance(o, AlertCovered):
        return Transition(_with(s, alert_status=AlertStatus.COVERED))
    sent = AlertStatus.SENT if isinstance(o, AlertDelivered) else AlertStatus.FAILED
    return Transition(_with(s, alert_status=sent, cluster_alert_owner=o.cluster_alert_owner))


def _released(s: ServiceSummary, ep: Episode, o: OperatorRaised | ProbePassed | ProbeOverruled,
              d: Decision | None) -> Transition:
    """An operator's raise, a probe that passed, or a probe overruled: the scale-down ends, its slot is freed."""
    why = EpisodeEnd.OPERATOR_RAISED if isinstance(o, ProbeOverruled) else EpisodeEnd.RESTORED
    restored = mark_restored(s, o.at, why)
    if restored is None:
        raise IllegalTransitionError("nothing to restore")
    if isinstance(o, OperatorRaised):
        return Transition(restored, (ReleaseSlot(),))
    live = {"probe_live": False} if isinstance(o, ProbeOverruled) else {}
    return Transition(_with(restored, lease_owner=None, lease_until=0.0, **live), (ReleaseSlot(),))


def _restored(s: ServiceSummary, ep: Episode, o: Restored, d: Decision | None) -> Transition:
    """``restore`` finished putting the service back (an operator's, or a probe-less one): the episode
    ends ``RESTORED``, its slot is freed after this write, and its lease dropped; twice changes nothing."""
    if ep.phase in IN_FLIGHT | PROBE_PHASES and ep.leased(o.now):
        raise IllegalTransitionError(f"{s.service}: a scale-down is in flight (lease of {ep.lease_owner} "
                                     f"runs for {ep.lease_until - o.now:.0f} s more); restore again after it")
    if ep.phase in (Phase.RELEASED, Phase.RELEASED_ALERT_OWED):
        return Transition(None)
    ended = mark_restored(s, o.at) if ep.acted else None
    if ended is None:
        ended = close_episode(s, EpisodeEnd.RESTORED, ep.last_failure, o.at) or s
    return Transition(_with(ended, lease_owner=None, lease_until=0.0), (ReleaseSlot(),))


def _probe_claimed(s: ServiceSummary, ep: Episode, o: ProbeClaimed, d: Decision | None) -> Transition:
    return Transition(_with(s, action_status=ActionStatus.PROBING, probes=ep.probes + 1, probe_at=o.at,
                            probe_live=False))


def _probe_started(s: ServiceSummary, ep: Episode, o: ProbeStarted, d: Decision | None) -> Transition:
    return Transition(_with(s, probe_live=True))


def _probe_failed(s: ServiceSummary, ep: Episode, o: ProbeFailed, d: Decision | None) -> Transition:
    return Transition(_with(s, action_status=ActionStatus.PROBE_FAILED, probe_at=o.at))


def _probe_stopped(s: ServiceSummary, ep: Episode, o: ProbeStopped, d: Decision | None) -> Transition:
    delay = next_delay_minutes(ep.probe_delay_minutes, o.settings)
    capped_now = delay >= o.settings.max_delay_minutes and not ep.still_failing_sent
    new = _with(s, action_status=ActionStatus.DONE, probe_live=False, probe_delay_minutes=delay,
                probe_at=o.at + timedelta(minutes=delay), still_failing_sent=ep.still_failing_sent or capped_now)
    return Transition(new, (SendStillFailing(ep.probes, o.at),) if capped_now else ())


_Rule = tuple[frozenset[Phase] | None, Callable[[ServiceSummary, Episode, Any, Decision | None], Transition]]
_HELD_DONE = frozenset({Phase.ACTED, Phase.HELD})
_PROBE_LIVE = frozenset({Phase.PROBE_CLAIMED, Phase.PROBING})
#: outcome -> the phases it is allowed in (``None``: any) and the rule that builds the new summary
_RULES: dict[type, _Rule] = {
    LeaseTaken: (None, _lease_taken),
    LeaseReleased: (None, _lease_released),
    FactsRecorded: (frozenset({Phase.CLAIMED}), _facts_recorded),
    SlotDenied: (frozenset({Phase.CLAIMED}), _slot_denied),
    ScalingSuspended: (frozenset({Phase.FACTS_RECORDED}), _scaling_suspended),
    SuspendRefused: (frozenset({Phase.CLAIMED, Phase.FACTS_RECORDED}), _suspend_refused),
    Scaled: (frozenset({Phase.FACTS_RECORDED, Phase.SCALING_SUSPENDED}), _scaled),
    ActionRefused: (IN_FLIGHT, _action_refused),
    AlertDelivered: (ALERT_OWED, _alerted),
    AlertFailed: (ALERT_OWED, _alerted),
    AlertCovered: (ALERT_OWED, _alerted),
    OperatorRaised: (frozenset({Phase.ACTED, Phase.HELD}), _released),
    Restored: (None, _restored),
    ProbeOverruled: (_HELD_DONE | PROBE_PHASES, _released),
    ProbeClaimed: (frozenset({Phase.HELD}), _probe_claimed),
    ProbeStarted: (_PROBE_LIVE, _probe_started),
    ProbeFailed: (_PROBE_LIVE, _probe_failed),
    ProbeStopped: (frozenset({Phase.PROBE_FAILED}), _probe_stopped),
    ProbePassed: (frozenset({Phase.PROBING}), _released),
}
_SCALE_OUTCOMES = (FactsRecorded, SlotDenied, ScalingSuspended, Scaled)
_PROBE_OUTCOMES = (ProbeClaimed, ProbeStarted, ProbeFailed, ProbeStopped, ProbePassed, ProbeOverruled)


# ---------------------------------------------------------------------------------------------- probes
def probe_due(ep: Episode | None, now: datetime, settings: ProbeSettings) -> str | None:
    """What the sweep owes a held service's episode ``ep`` at ``now`` (pure; the sweep's time):

    ``"start"`` (held at zero, alerted, and the next probe's time reached: the first one
    ``PROBE_DELAY_MINUTES`` after the decision), ``"pass"`` (a live probe ran ``PROBE_PASS_MINUTES``
    without a failure), ``"resume"`` (a probe step left unfinished: start it, or put the service back
    to 0), or ``None``.
    """
    if ep is None or ep.action is not Action.SCALE_TO_ZERO:
        return None
    p = ep.phase
    if p is Phase.PROBE_FAILED or p is Phase.PROBE_CLAIMED:
        return "resume"
    if p is Phase.PROBING:
        started = ep.probe_at or now
        return "pass" if now >= started + timedelta(minutes=settings.pass_minutes) else None
    if p is not Phase.HELD:
        return None
    due = ep.probe_at or ep.decision_time + timedelta(minutes=settings.delay_minutes)
    return "start" if now >= due else None


def probe_owns_count(ep: Episode, step: Effect, desired_count: int) -> bool:
    """Is ``desired_count`` (DescribeServices ``desiredCount``, read right before ``step``) the count the
    probe itself last set (ARCHITECTURE.md, "Recovery": a probe never fights an operator)?

    - before :class:`StartProbe` (desired count 1): 0 (the scale-down's, or a failed probe's way back),
      or 1 when a step died after its UpdateService and before its record (a resumed step);
    - before :class:`StopProbe` (back to 0): 1, or 0 when its own UpdateService already ran;
    - before :class:`RestoreService` (a pass): 1, or the previous count when its own restore already ran.

    Any other count is an operator's: the episode ends :class:`ProbeOverruled` and nothing is changed.
    What remains is the race between this read and the UpdateService call (ECS has no conditional update).
    """
    if isinstance(step, StartProbe):
        return desired_count in (0, 1)
    if isinstance(step, StopProbe):
        return desired_count in (1, 0)
    if isinstance(step, RestoreService):
        return desired_count in (1, int(ep.previous_desired_count or 0))
    raise IllegalTransitionError(f"{step!r} is not a probe's change")


