"""Deployment protection (ARCHITECTURE.md, decision policy rule 4, ``deployment_in_progress``): is a deployment
that something other than the watchdog finishes or rolls back in progress?

The facts are read once per decision (the recorder's ``ECS Deployment State Change`` events, DescribeServices
``deployments[]``, ``taskSets[]`` and ``deploymentConfiguration``, ListServiceDeployments); the rule that turns
the answer into an ``alert_only`` verdict is :func:`ecs_guardrail.core.entitlement.rule_deployment_in_progress`.
No I/O, no clock: ``at`` is the decision's event time. Moved out of ``core/entitlement.py`` (issue 34).
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from msgspec import Struct

from ecs_guardrail.core.enum_text import ascii_strip, ascii_upper
from ecs_guardrail.core.links import resource_name

if TYPE_CHECKING:
    from ecs_guardrail.core.events import DeploymentStateChange

__all__ = [
    "IN_PROGRESS_EVENT",
    "COMPLETED_EVENT",
    "FAILED_EVENT",
    "DeploymentState",
    "DeploymentEvent",
    "deployment_event",
    "Deployment",
    "IN_PROGRESS_STATUSES",
    "HANDED_OFF_STRATEGIES",
    "HANDED_OFF_CONTROLLERS",
    "ServiceDeployment",
    "TaskSet",
    "CircuitBreaker",
    "breaker_threshold",
    "DeploymentStatus",
    "deployment_status",
    "deployment_protection",
    "breaker_note",
    "breaker_evidence",
    "bake_note",
    "what_ecs_does",
    "deployments_worth_reading",
    "DeploymentFacts",
]


class DeploymentFacts(Protocol):
    """What deployment protection reads of a decision's facts (``core.entitlement.EntitlementFacts`` gives
    it; a protocol here, so this module imports nothing of entitlement's): DescribeServices'
    ``deployments[]``, ``taskSets[]``, ``desiredCount``, ``deploymentController.type`` and
    ``deploymentConfiguration`` (strategy, bake time, circuit breaker), the recorder's deployment events, the
    service deployments ListServiceDeployments gave (``None``: not read) and when the watchdog acts."""

    @property
    def circuit_breaker_rollback(self) -> bool: ...
    @property
    def deployments(self) -> tuple[Deployment, ...]: ...
    @property
    def deployment_events(self) -> tuple[DeploymentEvent, ...]: ...
    @property
    def deployment_controller(self) -> str: ...
    @property
    def deployment_strategy(self) -> str: ...
    @property
    def bake_time_minutes(self) -> int | None: ...
    @property
    def desired_count(self) -> int: ...
    @property
    def service_deployments(self) -> tuple[ServiceDeployment, ...] | None: ...
    @property
    def task_sets(self) -> tuple[TaskSet, ...]: ...
    @property
    def acting_at(self) -> datetime | None: ...
    @property
    def breaker(self) -> CircuitBreaker: ...
    @property
    def handed_off(self) -> str | None: ...

#: ``ECS Deployment State Change`` event names (``detail.eventName``)
IN_PROGRESS_EVENT = "SERVICE_DEPLOYMENT_IN_PROGRESS"
COMPLETED_EVENT = "SERVICE_DEPLOYMENT_COMPLETED"
FAILED_EVENT = "SERVICE_DEPLOYMENT_FAILED"
# ECS's reason on the IN_PROGRESS event of a rollback: "ECS deployment circuit breaker: rolling back to
# deploymentId ecs-svc/..." (ECS-EVENTS.md); matched case-insensitively on this fragment
_ROLLBACK_MARK = "rolling back"




class DeploymentState(StrEnum):
    """Where the service's deployment stands at decision time.

    ``NONE``: nothing known (no event, no rolloutState); ``IN_PROGRESS``: a deployment is rolling out;
    ``ROLLING_BACK``: the circuit breaker failed a deployment and ECS is rolling back to the previous one;
    ``COMPLETED``: the newest deployment reached steady state; ``FAILED``: the newest deployment failed and
    nothing is rolling back (no rollback configured, or the rollback itself failed).
    """

    NONE = "none"
    IN_PROGRESS = "in_progress"
    ROLLING_BACK = "rolling_back"
    COMPLETED = "completed"
    FAILED = "failed"

    @property
    def in_progress(self) -> bool:
        return self in (DeploymentState.IN_PROGRESS, DeploymentState.ROLLING_BACK)


class DeploymentEvent(Struct, frozen=True):
    """One ``ECS Deployment State Change`` event of the service.

    ``time``: the envelope's ``time`` (UTC); ``event_name``: ``detail.eventName``
    (SERVICE_DEPLOYMENT_IN_PROGRESS / _COMPLETED / _FAILED); ``deployment_id``: ``detail.deploymentId``
    (``ecs-svc/...``); ``reason``: ``detail.reason`` (for a rollback: "ECS deployment circuit breaker:
    rolling back to deploymentId ...").
    """

    time: datetime
    event_name: str
    deployment_id: str | None = None
    reason: str | None = None


def deployment_event(event: DeploymentStateChange) -> DeploymentEvent:
    """The :class:`DeploymentEvent` of a parsed ``ECS Deployment State Change`` (envelope ``time``)."""
    return DeploymentEvent(event.time, event.detail.event_name, event.detail.deployment_id, event.detail.reason)


class Deployment(Struct, frozen=True):
    """One entry of DescribeServices ``services[].deployments[]``.

    ``id`` (``ecs-svc/...``), ``status`` (PRIMARY / ACTIVE / INACTIVE), ``rollout_state``
    (``rolloutState``: IN_PROGRESS / COMPLETED / FAILED, absent for some deployment controllers),
    ``rollout_state_reason`` (``rolloutStateReason``) and ``updated_at`` (``updatedAt``, UTC).
    """

    id: str
    status: str
    rollout_state: str | None = None
    rollout_state_reason: str | None = None
    updated_at: datetime | None = None


#: ``ListServiceDeployments`` statuses of a service deployment that ECS has not finished (ARCHITECTURE.md
#: rule 4; the ECS API reference's ``ServiceDeploymentStatus`` also has SUCCESSFUL, STOPPED,
#: STOP_REQUESTED, ROLLBACK_SUCCESSFUL and ROLLBACK_FAILED)
IN_PROGRESS_STATUSES = frozenset({"PENDING", "IN_PROGRESS", "ROLLBACK_REQUESTED", "ROLLBACK_IN_PROGRESS"})
#: ``deploymentConfiguration.strategy`` values whose deployment ECS itself finishes or rolls back
#: (bake time and lifecycle hooks included); ``ROLLING`` hands off only with its circuit breaker on
HANDED_OFF_STRATEGIES = frozenset({"BLUE_GREEN", "LINEAR", "CANARY"})
#: ``deploymentController.type`` values whose deployments something other than ECS's scheduler runs
HANDED_OFF_CONTROLLERS = frozenset({"CODE_DEPLOY", "EXTERNAL"})


class ServiceDeployment(Struct, frozen=True):
    """One service deployment (ECS API reference: ``ServiceDeploymentBrief`` of ListServiceDeployments,
    completed by ``ServiceDeployment`` of DescribeServiceDeployments where read).

    ``arn``: ``serviceDeploymentArn``; ``status``: ``status`` (:data:`IN_PROGRESS_STATUSES` and the
    finished ones); ``created_at``/``started_at``/``finished_at``: ``createdAt``/``startedAt``/
    ``finishedAt`` (UTC; ``finished_at`` is ``stoppedAt`` for a stopped one); ``status_reason``:
    ``statusReason``; ``lifecycle_stage``: ``lifecycleStage`` (``BAKE_TIME``, ``PRODUCTION_TRAFFIC_SHIFT``,
    ...; DescribeServiceDeployments only); ``stage_since``: ``updatedAt``, when that stage was entered
    as far as the API says.
    """

    arn: str
    status: str
    created_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    status_reason: str | None = None
    lifecycle_stage: str | None = None
    stage_since: datetime | None = None

    @property
    def in_progress(self) -> bool:
        return ascii_upper(ascii_strip(self.status)) in IN_PROGRESS_STATUSES

    @property
    def began(self) -> datetime | None:
        return self.started_at or self.created_at

    def covers(self, at: datetime) -> bool:
        """Was this deployment running at ``at``: begun at or before it, and finished after it (or not
        finished and still in progress)? A deployment with no begin time covers nothing."""
        began = self.began
        if began is None or began > at:
            return False
        if self.finished_at is not None:
            return self.finished_at > at
        return self.in_progress


class TaskSet(Struct, frozen=True):
    """One entry of DescribeServices ``taskSets[]`` (``CODE_DEPLOY`` and ``EXTERNAL`` controllers):
    ``status`` (PRIMARY / ACTIVE / DRAINING) and ``stability_status`` (STEADY_STATE / STABILIZING)."""

    id: str
    status: str
    stability_status: str | None = None


class CircuitBreaker(Struct, frozen=True):
    """``deploymentConfiguration.deploymentCircuitBreaker`` (ECS API reference, DeploymentCircuitBreaker
    and ThresholdConfiguration): ``threshold_type`` (``COUNT`` / ``BOUNDED_PERCENT`` /
    ``UNBOUNDED_PERCENT``) and ``threshold_value`` from ``thresholdConfiguration`` (absent: ECS's default,
    ``BOUNDED_PERCENT`` 50); ``reset_on_healthy_task``: ``resetOnHealthyTask`` (absent: ECS's default,
    True)."""

    enabled: bool = False
    rollback: bool = False
    threshold_type: str | None = None
    threshold_value: int | None = None
    reset_on_healthy_task: bool | None = None


def breaker_threshold(breaker: CircuitBreaker, desired_count: int) -> int:
    """How many failed tasks make ECS trip the circuit breaker of a service with ``desired_count`` tasks.

    ``COUNT``: the value itself; ``BOUNDED_PERCENT`` (the default, value 50): value % of the desired count,
    rounded up, at least 3 and at most 200; ``UNBOUNDED_PERCENT``: the same without the bounds (at least 1).
    Source: ECS API reference, ThresholdConfiguration and ServiceDeploymentCircuitBreaker.threshold
    ("0.5 * desired task count", minimum 3, maximum 200). An unknown type is read as the default.
    """
    kind = ascii_upper(ascii_strip(breaker.threshold_type or "BOUNDED_PERCENT"))
    value = 50 if breaker.threshold_value is None else max(0, int(breaker.threshold_value))
    if kind == "COUNT":
        return max(1, value)
    share = -(-value * max(0, desired_count) // 100)  # ceiling
    if kind == "UNBOUNDED_PERCENT":
        return max(1, share)
    return min(200, max(3, share))



class DeploymentStatus(Struct, frozen=True):
    """The deployment state at decision time and where it was read.

    ``source``: ``"event"`` (the newest deployment event), ``"rolloutState"`` (DescribeServices) or
    ``"none"``. ``said``: ECS's own words (event name or rolloutState); ``reason``: its reason text.
    """

    state: DeploymentState
    source: str = "none"
    deployment_id: str | None = None
    said: str | None = None
    reason: str | None = None
    time: datetime | None = None

    def evidence(self) -> dict[str, Any]:
        out: dict[str, Any] = {"deployment_id": self.deployment_id, "state": str(self.state),
                               "source": self.source, "reason": self.reason}
        out["event_name" if self.source == "event" else "rollout_state"] = self.said
        if self.time is not None:
            out["time"] = _iso(self.time)
        return out


def _iso(t: datetime) -> str:
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _hm(t: datetime) -> str:
    return _iso(t)[11:16] + "Z"


def _from_events(events: tuple[DeploymentEvent, ...], rollback: bool, at: datetime) -> DeploymentStatus | None:
    """Walk the deployment events up to ``at`` (oldest first); ``None`` when there is none."""
    seen = sorted((e for e in events if e.time <= at), key=lambda e: e.time)  # stable: ties keep order
    if not seen:
        return None
    state = DeploymentState.NONE
    for e in seen:
        name = ascii_upper(ascii_strip(e.event_name))
        if name == IN_PROGRESS_EVENT:
            rolling = state is DeploymentState.ROLLING_BACK or _ROLLBACK_MARK in (e.reason or "").lower()
            state = DeploymentState.ROLLING_BACK if rolling else DeploymentState.IN_PROGRESS
        elif name == COMPLETED_EVENT:
            state = DeploymentState.COMPLETED
        elif name == FAILED_EVENT:
            # a FAILED while already rolling back is the rollback failing: nothing is in progress any more
            rolls_back = rollback and state is not DeploymentState.ROLLING_BACK
            state = DeploymentState.ROLLING_BACK if rolls_back else DeploymentState.FAILED
        # an unknown event name changes nothing
    last = seen[-1]
    return DeploymentStatus(state, "event", last.deployment_id, last.event_name, last.reason, last.time)


def _from_rollout(deployments: tuple[Deployment, ...], rollback: bool) -> DeploymentStatus:
    """DescribeServices ``deployments[].rolloutState``: where no deployment event was seen."""
    for d in deployments:
        if ascii_upper(d.rollout_state or "") == "IN_PROGRESS":
            rolling = _ROLLBACK_MARK in (d.rollout_state_reason or "").lower()
            return DeploymentStatus(DeploymentState.ROLLING_BACK if rolling else DeploymentState.IN_PROGRESS,
                                    "rolloutState", d.id, d.rollout_state, d.rollout_state_reason)
    primary = next((d for d in deployments if ascii_upper(d.status) == "PRIMARY"), None)
    if primary is None or not primary.rollout_state:
        return DeploymentStatus(DeploymentState.NONE)
    said = ascii_upper(primary.rollout_state)
    if said == "FAILED":
        state = DeploymentState.ROLLING_BACK if rollback else DeploymentState.FAILED
    elif said == "COMPLETED":
        state = DeploymentState.COMPLETED
    else:
        state = DeploymentState.NONE
    return DeploymentStatus(state, "rolloutState", primary.id, primary.rollout_state, primary.rollout_state_reason)


def deployment_status(facts: DeploymentFacts, at: datetime) -> DeploymentStatus:
    """The service's deployment state at event time ``at`` (ARCHITECTURE.md rule 4 and ECS-EVENTS.md).

    From the deployment events at or before ``at``: in progress from a SERVICE_DEPLOYMENT_IN_PROGRESS until
    the newest event is SERVICE_DEPLOYMENT_COMPLETED, or SERVICE_DEPLOYMENT_FAILED without rollback; a
    FAILED with rollback (``circuit_breaker_rollback``) is ``ROLLING_BACK`` until the rollback completes
    or fails (a FAILED during a rollback ends it). Without any such event, DescribeServices'
    ``rolloutState`` says the same (any deployment IN_PROGRESS; a PRIMARY FAILED with rollback).
    """
    from_events = _from_events(facts.deployment_events, facts.circuit_breaker_rollback, at)
    if from_events is not None:
        return from_events
    return _from_rollout(facts.deployments, facts.circuit_breaker_rollback)



def _api_status(sd: ServiceDeployment, source: str) -> DeploymentStatus:
    rolling = "ROLLBACK" in ascii_upper(sd.status)
    return DeploymentStatus(DeploymentState.ROLLING_BACK if rolling else DeploymentState.IN_PROGRESS, source,
                            sd.arn, sd.status, sd.status_reason, sd.began)


def _closed_by_api(facts: DeploymentFacts, status: DeploymentStatus, at: datetime) -> str | None:
    """An event-derived "in progress" whose closing event was lost: the API says the deployment ended at or
    before ``at`` (a service deployment finished after the event and not covering ``at``, or DescribeServices
    names the event's deployment COMPLETED / FAILED, updated after the event). Returns what said so."""
    since = status.time
    if since is None:
        return None
    for sd in facts.service_deployments or ():
        if sd.covers(at):
            return None
    for sd in sorted(facts.service_deployments or (), key=lambda x: x.finished_at or since, reverse=True):
        if not sd.in_progress and sd.finished_at is not None and since <= sd.finished_at <= at:
            return (f"ListServiceDeployments: {sd.status} at {_hm(sd.finished_at)} "
                    f"({resource_name(sd.arn)})")
    for d in facts.deployments:
        said = ascii_upper(d.rollout_state or "")
        if d.id == status.deployment_id and said in ("COMPLETED", "FAILED") and d.updated_at is not None \
                and since <= d.updated_at <= at and not (said == "FAILED" and facts.breaker.rollback):
            return f"DescribeServices: {d.id} rolloutState {said} at {_hm(d.updated_at)}"
    return None


def _task_sets_status(facts: DeploymentFacts) -> DeploymentStatus | None:
    """CODE_DEPLOY / EXTERNAL: a deployment is under way while the service has more than one live task
    set (ACTIVE beside PRIMARY) or one still STABILIZING; with no task set to read, the watchdog cannot
    tell and protects (fail safe)."""
    live = [t for t in facts.task_sets if ascii_upper(t.status) != "DRAINING"]
    if not live:
        return DeploymentStatus(DeploymentState.IN_PROGRESS, "taskSets", None, "none readable",
                                "no task set to read: the deployment state is unknown, treated as in progress")
    moving = [t for t in live if ascii_upper(t.stability_status or "") == "STABILIZING"]
    if len(live) > 1 or moving:
        t = next((x for x in live if ascii_upper(x.status) != "PRIMARY"), moving[0] if moving else live[0])
        return DeploymentStatus(DeploymentState.IN_PROGRESS, "taskSets", t.id, t.status,
                                f"{len(live)} live task set(s), {len(moving)} stabilizing")
    return None


def deployment_protection(facts: DeploymentFacts, at: datetime) -> tuple[DeploymentStatus, str] | None:
    """Is a deployment that something other than the watchdog finishes or rolls back in progress, at the
    decision's event time ``at`` or when the watchdog acts (``facts.acting_at``)? ARCHITECTURE.md rule 4:
    the protection holds either way (fail safe both ways).

    Returns ``(status, when)`` with ``when`` ``"at T"`` or ``"when acting"``, or ``None`` (not protected:
    no hand-off, see :attr:`DeploymentFacts.handed_off`, or nothing in progress). Sources, in order:
    the deployment events up to ``at`` (bounded by the API where it says the deployment ended before
    ``at``: a lost COMPLETED event never protects for ever), a service deployment covering ``at``
    (``createdAt``/``startedAt`` to ``finishedAt``), then, for "when acting": a service deployment whose
    status is in :data:`IN_PROGRESS_STATUSES`, the events up to ``acting_at``, DescribeServices'
    ``rolloutState`` where no service deployment was read; and for CODE_DEPLOY / EXTERNAL, the task sets.
    """
    if facts.handed_off is None:
        return None
    rollback = facts.breaker.rollback or ascii_upper(facts.deployment_strategy) in HANDED_OFF_STRATEGIES
    at_t = _from_events(facts.deployment_events, rollback, at)
    if at_t is not None and at_t.state.in_progress:
        closed = _closed_by_api(facts, at_t, at)
        if closed is None:
            return at_t, "at T"
    sds = facts.service_deployments
    covering = next((sd for sd in sorted(sds or (), key=lambda x: x.began or at) if sd.covers(at)), None)
    if covering is not None:
        return _api_status(covering, "ListServiceDeployments"), "at T"
    # when the watchdog acts
    if sds is not None:
        now = next((sd for sd in sds if sd.in_progress), None)
        if now is not None:
            return _api_status(now, "ListServiceDeployments"), "when acting"
    # every event recorded by the time the watchdog acts (``acting_at`` bounds them where it is known)
    acting = facts.acting_at or max((e.time for e in facts.deployment_events), default=at)
    if acting > at:
        later = _from_events(facts.deployment_events, rollback, acting)
        if later is not None and later.state.in_progress and later.time is not None and later.time > at \
                and _closed_by_api(facts, later, acting) is None:
            return later, "when acting"
    if at_t is None and sds is None:
        rolled = _from_rollout(facts.deployments, rollback)
        if rolled.state.in_progress:
            return rolled, "when acting"
    if ascii_upper(ascii_strip(facts.deployment_controller)) in HANDED_OFF_CONTROLLERS \
            and (at_t is None or sds is None):
        ts = _task_sets_status(facts)
        if ts is not None:
            return ts, "when acting"
    return None


def what_ecs_does(facts: DeploymentFacts, status: DeploymentStatus) -> str:
    """What finishes or rolls back this deployment instead of the watchdog, as one clause of the alert."""
    controller = ascii_upper(ascii_strip(facts.deployment_controller))
    if controller == "CODE_DEPLOY":
        return "CodeDeploy finishes the deployment or rolls it back to the original task set"
    if controller == "EXTERNAL":
        return "the external deployment controller owns its task sets and finishes or rolls back"
    strategy = ascii_upper(ascii_strip(facts.deployment_strategy))
    if status.state is DeploymentState.ROLLING_BACK:
        return "ECS is rolling back to the previous revision"
    if strategy in HANDED_OFF_STRATEGIES:
        return (f"ECS keeps the previous (blue) revision's tasks until the {strategy} deployment succeeds, and "
                f"rolls back to them if it fails (circuit breaker, alarms or a lifecycle hook)")
    return "ECS's circuit breaker fails the deployment" + (" and rolls back" if facts.breaker.rollback else "")


def bake_note(facts: DeploymentFacts, at: datetime) -> str:
    """``"; bake time N min, M min left"`` for a BLUE_GREEN / LINEAR / CANARY deployment with a bake time
    (``deploymentConfiguration.bakeTimeInMinutes``), else ``""``."""
    if facts.bake_time_minutes is None \
            or ascii_upper(ascii_strip(facts.deployment_strategy)) not in HANDED_OFF_STRATEGIES:
        return ""
    bake = facts.bake_time_minutes
    stage = next((sd for sd in facts.service_deployments or () if sd.in_progress and sd.lifecycle_stage), None)
    if stage is not None and ascii_upper(stage.lifecycle_stage or "") == "BAKE_TIME" and stage.stage_since:
        left = max(0.0, bake - (at - stage.stage_since).total_seconds() / 60)
        return f"; bake time {bake} min, {left:.0f} min left"
    return f"; bake time {bake} min after production traffic shifts"


def breaker_note(facts: DeploymentFacts) -> str:
    """One clause saying when ECS would trip this service's circuit breaker, or ``""`` without one:
    "ECS trips its circuit breaker after 3 failed tasks (BOUNDED_PERCENT 50 of 4 desired, at least 3,
    at most 200; the count resets on a healthy task)"."""
    b = facts.breaker
    if not b.enabled:
        return ""
    n = breaker_threshold(b, facts.desired_count)
    kind = ascii_upper(b.threshold_type or "BOUNDED_PERCENT")
    value = 50 if b.threshold_value is None else b.threshold_value
    how = f"COUNT {value}" if kind == "COUNT" else f"{kind} {value} of {facts.desired_count} desired" + (
        ", at least 3, at most 200" if kind == "BOUNDED_PERCENT" else "")
    reset = "resets" if b.reset_on_healthy_task is not False else "does not reset"
    return f"ECS trips its circuit breaker after {n} failed tasks ({how}; the count {reset} on a healthy task)"


def breaker_evidence(facts: DeploymentFacts) -> dict[str, Any]:
    """The circuit breaker as the decision's evidence records it (empty without one)."""
    b = facts.breaker
    if not b.enabled:
        return {}
    return {"circuit_breaker": {"rollback": b.rollback, "threshold": breaker_threshold(b, facts.desired_count),
                                "threshold_type": b.threshold_type or "BOUNDED_PERCENT",
                                "threshold_value": 50 if b.threshold_value is None else b.threshold_value,
                                "reset_on_healthy_task": b.reset_on_healthy_task is not False}}


def deployments_worth_reading(breaker: CircuitBreaker, controller: str, strategy: str) -> bool:
    """Rule 4's question before a decision: is ListServiceDeployments worth a call for this service?

    Only where something other than the watchdog finishes or rolls back its deployments: the circuit breaker
    on (``deploymentConfiguration.deploymentCircuitBreaker.enable``), a ``deploymentController.type`` other
    than ``ECS``, or a ``deploymentConfiguration.strategy`` other than ``ROLLING`` (DescribeServices). Elsewhere
    :func:`deployment_protection` decides from the deployment events and ``rolloutState`` alone.
    """
    return breaker.enabled or controller != "ECS" or strategy != "ROLLING"
