"""Entitlement: what the watchdog may stop (ARCHITECTURE.md, decision policy rule 4).

Pure rules over facts gathered once per decision (DescribeServices, the recorder's deployment events,
the newest HealthyHostCount sample per target group, DescribeScalableTargets, the settings). The rules
run in the architecture's order and the first that applies makes the decision ``alert_only`` with its
reason; when none applies the watchdog is entitled to scale the service to 0 (reason ``crash_loop``).

Each rule is a small function ``(trigger_kind, facts, at, sample_max_age) -> Verdict | None``; ``None``
means "this rule does not apply". :data:`RULES` lists them in order; :func:`entitlement` runs them.
No I/O, no clock: ``at`` is the decision's event time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from msgspec import Struct, field

from ecs_guardrail.core.deployment_protection import (
    HANDED_OFF_CONTROLLERS,
    HANDED_OFF_STRATEGIES,
    IN_PROGRESS_STATUSES,
    CircuitBreaker,
    Deployment,
    DeploymentEvent,
    DeploymentState,
    DeploymentStatus,
    ServiceDeployment,
    TaskSet,
    _hm,
    _iso,
    bake_note,
    breaker_evidence,
    breaker_note,
    breaker_threshold,
    deployment_event,
    deployment_protection,
    deployment_status,
    what_ecs_does,
)
from ecs_guardrail.core.enum_text import ascii_strip, ascii_upper
from ecs_guardrail.core.records import Reason, TriggerKind

__all__ = [
    "EntitlementReason",
    "DeploymentState",
    "DeploymentEvent",
    "Deployment",
    "DeploymentStatus",
    "ServiceDeployment",
    "TaskSet",
    "CircuitBreaker",
    "IN_PROGRESS_STATUSES",
    "HANDED_OFF_STRATEGIES",
    "HANDED_OFF_CONTROLLERS",
    "breaker_threshold",
    "deployment_protection",
    "breaker_note",
    "breaker_evidence",
    "ServingSample",
    "SuspendedState",
    "ALL_SUSPENDED",
    "ScalableTargetFacts",
    "EntitlementFacts",
    "Verdict",
    "RULES",
    "SAMPLE_MAX_AGE",
    "deployment_event",
    "deployment_status",
    "serving_evidence",
    "entitlement",
    "rule_restart_loop",
    "rule_health_check_kills",
    "rule_alert_only_cluster",
    "rule_opted_out",
    "rule_service_not_found",
    "rule_daemon_service",
    "rule_deployment_in_progress",
    "rule_still_serving",
    "rule_dry_run",
]

#: a HealthyHostCount sample older than this is no evidence (ARCHITECTURE.md rule 4, ``still_serving``)
SAMPLE_MAX_AGE = timedelta(minutes=3)

#: rule 4's reasons are the public :class:`~ecs_guardrail.core.records.Reason` values (one vocabulary)
EntitlementReason = Reason



class ServingSample(Struct, frozen=True):
    """The minimum ``HealthyHostCount`` of one target group over one minute.

    ``target_group``: the target group (dimension value ``targetgroup/NAME/ID`` or a name);
    ``minute``: start of the 1-minute period (UTC); ``healthy_host_count``: the Minimum statistic,
    ``None`` when no datapoint was published (never read as "up"). The clients' view of the same
    minute (Sum; ALB publishes these only when nonzero, so ``None`` is no request of that kind):
    ``request_count`` (``RequestCount``), ``target_2xx`` (``HTTPCode_Target_2XX_Count``),
    ``target_5xx`` (``HTTPCode_Target_5XX_Count``), ``elb_5xx`` (``HTTPCode_ELB_5XX_Count``).
    """

    target_group: str
    minute: datetime
    healthy_host_count: float | None
    request_count: float | None = None
    target_2xx: float | None = None
    target_5xx: float | None = None
    elb_5xx: float | None = None

    def answering(self, client_error_ratio: float) -> bool:
        """The clients' view of the minute (ARCHITECTURE.md, "Two observers"): served, with at least one
        2xx and 5xx (targets' and the load balancer's) under ``client_error_ratio`` of the requests."""
        requests = (self.request_count or 0.0) + (self.elb_5xx or 0.0)
        errors = (self.target_5xx or 0.0) + (self.elb_5xx or 0.0)
        return (self.target_2xx or 0.0) >= 1 and requests > 0 and errors / requests < client_error_ratio

    @property
    def answered_2xx(self) -> bool:
        """``still_serving``'s clients' evidence (ARCHITECTURE.md rule 4): the targets answered any
        request with 2xx in the minute (``HTTPCode_Target_2XX_Count`` > 0), whatever the share of 5xx.
        Fail safe: a service that answers 60 % of its requests loses those 60 % if it is stopped."""
        return (self.target_2xx or 0.0) > 0


class SuspendedState(Struct, frozen=True):
    """Application Auto Scaling ``SuspendedState`` of a scalable target (a missing field is ``False``)."""

    dynamic_scaling_in_suspended: bool = False
    dynamic_scaling_out_suspended: bool = False
    scheduled_scaling_suspended: bool = False

    @property
    def all_suspended(self) -> bool:
        return self.dynamic_scaling_in_suspended and self.dynamic_scaling_out_suspended and \
            self.scheduled_scaling_suspended

    def to_api(self) -> dict[str, bool]:
        """The API shape (``DynamicScalingInSuspended``...), JSON-safe: what the decision records."""
        return {"DynamicScalingInSuspended": self.dynamic_scaling_in_suspended,
                "DynamicScalingOutSuspended": self.dynamic_scaling_out_suspended,
                "ScheduledScalingSuspended": self.scheduled_scaling_suspended}

    @classmethod
    def from_api(cls, value: Mapping[str, Any] | None) -> SuspendedState:
        """From the API shape (DescribeScalableTargets ``SuspendedState``); ``None`` or missing keys = False."""
        value = value or {}
        return cls(bool(value.get("DynamicScalingInSuspended", False)),
                   bool(value.get("DynamicScalingOutSuspended", False)),
                   bool(value.get("ScheduledScalingSuspended", False)))


ALL_SUSPENDED = SuspendedState(True, True, True)


class ScalableTargetFacts(Struct, frozen=True):
    """The service's Application Auto Scaling scalable target (DescribeScalableTargets).

    ``resource_id``: ``service/CLUSTER/SERVICE``; ``min_capacity``/``max_capacity``: task counts
    (``MinCapacity``/``MaxCapacity``); ``suspended``: ``SuspendedState``.
    """

    resource_id: str
    min_capacity: int
    max_capacity: int
    suspended: SuspendedState = SuspendedState()
    scalable_dimension: str = "ecs:service:DesiredCount"
    service_namespace: str = "ecs"


class EntitlementFacts(Struct, frozen=True):
    """Everything rule 4 looks at, gathered once per decision.

    ``exists`` False: DescribeServices found no ACTIVE service; ``access_denied``: ECS refused to describe
    it (AccessDeniedException). ``scheduling_strategy``: ``schedulingStrategy`` (REPLICA / DAEMON);
    ``circuit_breaker_enabled``/``circuit_breaker_rollback``:
    ``deploymentConfiguration.deploymentCircuitBreaker.enable``/``.rollback``; ``deployments``:
    DescribeServices ``deployments[]``; ``deployment_events``: the service's deployment events as the
    recorder stored them (any order; sorted by time here); ``serving``: HealthyHostCount samples (the
    newest per target group is used); ``opted_out``: tag ``ecs-guardrail:mode`` = ``alert-only``, or a
    mistyped ``ecs-guardrail:`` tag (``opt_out_mistyped``: those tags as ``KEY=VALUE``,
    :func:`ecs_guardrail.core.policy.read_opt_out`);
    ``alert_only_cluster``: the cluster matches ``ALERT_ONLY_CLUSTERS`` (``alert_only_patterns`` is that
    setting, for the message); ``elsewhere``: "account A, region R" when the cluster is not in the
    watchdog's own account and region; ``dry_run``: ``DRY_RUN``; ``scalable_target``: the service's
    scalable target, if it has one.

    What decides ``deployment_in_progress`` besides the events: ``deployment_controller``
    (``deploymentController.type``: ECS / CODE_DEPLOY / EXTERNAL); ``deployment_strategy``
    (``deploymentConfiguration.strategy``: ROLLING / BLUE_GREEN / LINEAR / CANARY); ``bake_time_minutes``
    (``deploymentConfiguration.bakeTimeInMinutes``); ``lifecycle_hooks`` (how many
    ``deploymentConfiguration.lifecycleHooks``); ``circuit_breaker`` (the whole
    ``deploymentCircuitBreaker``, thresholds included; without it the two booleans above);
    ``desired_count`` (``desiredCount``, for the breaker's threshold); ``service_deployments``
    (ListServiceDeployments / DescribeServiceDeployments; ``None`` when not read, ``()`` when ECS lists
    none); ``task_sets`` (``taskSets[]``, CODE_DEPLOY and EXTERNAL); ``acting_at``: when the watchdog
    acts, for "in progress when the watchdog acts" (``None``: every recorded deployment event counts,
    those stamped after the decision's time included).
    """

    cluster: str
    service: str
    exists: bool = True
    access_denied: bool = False
    scheduling_strategy: str = "REPLICA"
    circuit_breaker_enabled: bool = False
    circuit_breaker_rollback: bool = False
    deployments: tuple[Deployment, ...] = ()
    deployment_events: tuple[DeploymentEvent, ...] = ()
    serving: tuple[ServingSample, ...] = ()
    opted_out: bool = False
    opt_out_mistyped: tuple[str, ...] = ()
    alert_only_cluster: bool = False
    elsewhere: str | None = None
    dry_run: bool = False
    scalable_target: ScalableTargetFacts | None = None
    alert_only_patterns: tuple[str, ...] = ()
    deployment_controller: str = "ECS"
    deployment_strategy: str = "ROLLING"
    bake_time_minutes: int | None = None
    lifecycle_hooks: int = 0
    circuit_breaker: CircuitBreaker | None = None
    desired_count: int = 0
    service_deployments: tuple[ServiceDeployment, ...] | None = None
    task_sets: tuple[TaskSet, ...] = ()
    acting_at: datetime | None = None

    @property
    def name(self) -> str:
        return f"{self.cluster}/{self.service}"

    @property
    def breaker(self) -> CircuitBreaker:
        """The circuit breaker, from :attr:`circuit_breaker` or the two legacy booleans."""
        if self.circuit_breaker is not None:
            return self.circuit_breaker
        return CircuitBreaker(self.circuit_breaker_enabled, self.circuit_breaker_rollback)

    @property
    def handed_off(self) -> str | None:
        """Why something other than the watchdog finishes or rolls back this service's deployments, or
        ``None``: ``"controller CODE_DEPLOY"``, ``"strategy BLUE_GREEN"``, ``"circuit breaker"``."""
        controller = ascii_upper(ascii_strip(self.deployment_controller))
        if controller in HANDED_OFF_CONTROLLERS:
            return f"controller {controller}"
        strategy = ascii_upper(ascii_strip(self.deployment_strategy))
        if strategy in HANDED_OFF_STRATEGIES:
            return f"strategy {strategy}"
        if self.breaker.enabled:
            return "circuit breaker"
        return None


class Verdict(Struct, frozen=True):
    """Rule 4's answer.

    ``entitled``: the watchdog may scale the service to 0 (reason ``crash_loop``); otherwise ``reason``
    names the first rule that applied. ``message``: one line an on-call engineer can use.
    ``evidence``: JSON-safe facts behind it (for ``still_serving``: ``target_group``,
    ``healthy_host_count``, ``minute``; for ``deployment_in_progress``: ``deployment_id``, ``state``,
    ``source`` and what ECS said: ``event_name`` or ``rollout_state``, ``reason``, ``time``).
    """

    entitled: bool
    reason: EntitlementReason
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)



def serving_evidence(samples: tuple[ServingSample, ...], at: datetime,
                     max_age: timedelta = SAMPLE_MAX_AGE) -> list[ServingSample]:
    """Target groups still serving at ``at``: newest sample per target group with ``minute`` in
    ``[at - max_age, at]`` and ``healthy_host_count`` >= 1, or any 2xx answered
    (:attr:`ServingSample.answered_2xx`, whatever the share of 5xx: a service failing its health checks
    while serving pages), sorted by target group.

    An older sample (or one after ``at``) is no evidence; so is a sample without a datapoint (``None``).
    """
    newest: dict[str, ServingSample] = {}
    for s in samples:
        if not (at - max_age <= s.minute <= at):
            continue
        cur = newest.get(s.target_group)
        if cur is None or s.minute >= cur.minute:
            newest[s.target_group] = s
    return [s for tg, s in sorted(newest.items())
            if (s.healthy_host_count is not None and s.healthy_host_count >= 1) or s.answered_2xx]


# --- the rules, in ARCHITECTURE.md's order -----------------------------------------------------------

Rule = Callable[[str, EntitlementFacts, datetime, timedelta], Verdict | None]


def _no(reason: EntitlementReason, message: str, /, **evidence: Any) -> Verdict:
    return Verdict(False, reason, message, evidence)


def rule_restart_loop(trigger_kind: str, facts: EntitlementFacts, at: datetime,
                      max_age: timedelta) -> Verdict | None:
    """The trigger is container restarts inside running tasks (a restart policy): always alert-only. A
    restart pulls no image and the task keeps its place and its other containers, so a scale to 0 would
    only remove capacity (ARCHITECTURE.md, "Restart-policy loops")."""
    if trigger_kind != TriggerKind.RESTART_LOOP:
        return None
    return _no(EntitlementReason.RESTART_LOOP,
               f"alert-only: {facts.name} restarts its containers in a loop inside running tasks (container "
               f"restart policy; no task stopped, so ECS's circuit breaker and events see nothing); never scaled "
               f"down: a scale to 0 would only remove capacity. Fix the container or its restart policy",
               trigger=trigger_kind, source="Container Insights RestartCount")


def rule_health_check_kills(trigger_kind: str, facts: EntitlementFacts, at: datetime,
                            max_age: timedelta) -> Verdict | None:
    """The trigger is health-check kills, not crashes: a restart cannot fix a dependency."""
    if trigger_kind != TriggerKind.HEALTH_CHECK_KILLS:
        return None
    return _no(EntitlementReason.HEALTH_CHECK_KILLS,
               f"alert-only: {facts.name} tasks are killed by health checks, not crashing; never scaled down "
               f"(a restart cannot fix a dependency)", trigger=trigger_kind)


def rule_alert_only_cluster(trigger_kind: str, facts: EntitlementFacts, at: datetime,
                            max_age: timedelta) -> Verdict | None:
    """Another account or region than the watchdog's, or the cluster matches ``ALERT_ONLY_CLUSTERS``."""
    if facts.elsewhere:
        return _no(EntitlementReason.ALERT_ONLY_CLUSTER,
                   f"alert-only: cluster {facts.cluster} is in {facts.elsewhere}; this watchdog acts only in "
                   f"its own account and region", cluster=facts.cluster, elsewhere=facts.elsewhere)
    if facts.alert_only_cluster:
        which = ", ".join(facts.alert_only_patterns) or "unset: every cluster"
        return _no(EntitlementReason.ALERT_ONLY_CLUSTER,
                   f"alert-only: cluster {facts.cluster} is in ALERT_ONLY_CLUSTERS ({which})",
                   cluster=facts.cluster, alert_only_clusters=list(facts.alert_only_patterns))
    return None


def rule_opted_out(trigger_kind: str, facts: EntitlementFacts, at: datetime, max_age: timedelta) -> Verdict | None:
    """The service is tagged ``ecs-guardrail:mode`` = ``alert-only``, or carries a mistyped
    ``ecs-guardrail:`` tag (another value, another key: read as opted out, fail safe)."""
    if not facts.opted_out:
        return None
    if facts.opt_out_mistyped:
        tags = ", ".join(facts.opt_out_mistyped)
        return _no(EntitlementReason.OPTED_OUT,
                   f"alert-only: {facts.name} is tagged {tags}, which is not ecs-guardrail:mode=alert-only; "
                   "read as opted out (fail safe): fix the tag to say what you mean",
                   tag="ecs-guardrail:mode", value="alert-only", mistyped=list(facts.opt_out_mistyped))
    return _no(EntitlementReason.OPTED_OUT,
               f"alert-only: {facts.name} is tagged ecs-guardrail:mode=alert-only",
               tag="ecs-guardrail:mode", value="alert-only")


def rule_service_not_found(trigger_kind: str, facts: EntitlementFacts, at: datetime,
                           max_age: timedelta) -> Verdict | None:
    """The service does not exist (any more), or ECS refused to describe it: nothing to act on.

    Access denied shares this reason (the vocabulary is fixed) but says so in the message and evidence.
    """
    if facts.access_denied:
        return _no(EntitlementReason.SERVICE_NOT_FOUND,
                   f"alert-only: ECS denied DescribeServices for {facts.name} (AccessDeniedException: another "
                   f"account's service, or the watchdog's role lacks ecs:DescribeServices); nothing changed",
                   ecs_error="AccessDeniedException")
    if not facts.exists:
        return _no(EntitlementReason.SERVICE_NOT_FOUND,
                   f"alert-only: {facts.name} is not an ACTIVE service in ECS (deleted or draining); "
                   f"nothing to scale", ecs_error="ServiceNotFound")
    return None


def rule_daemon_service(trigger_kind: str, facts: EntitlementFacts, at: datetime,
                        max_age: timedelta) -> Verdict | None:
    """``schedulingStrategy`` DAEMON: one task per container instance, no desired count to set."""
    if ascii_upper(ascii_strip(facts.scheduling_strategy)) != "DAEMON":
        return None
    return _no(EntitlementReason.DAEMON_SERVICE,
               f"alert-only: {facts.name} is a DAEMON service (one task per container instance); it has no "
               f"desired count to set to 0", scheduling_strategy="DAEMON")



def rule_deployment_in_progress(trigger_kind: str, facts: EntitlementFacts, at: datetime,
                                max_age: timedelta) -> Verdict | None:
    """A deployment that something other than the watchdog finishes or rolls back is in progress at ``at``
    or when the watchdog acts (:func:`deployment_protection`): the rolling strategy with the circuit
    breaker on, ECS's BLUE_GREEN / LINEAR / CANARY strategies, the CODE_DEPLOY and EXTERNAL controllers."""
    found = deployment_protection(facts, at)
    if found is None:
        return None
    status, when = found
    what = "is rolling back" if status.state is DeploymentState.ROLLING_BACK else "is deploying"
    stamp = f" at {_hm(status.time)}" if status.time else ""
    said = f"{status.said}{stamp}" + (f": {status.reason}" if status.reason else "")
    strategy = ascii_upper(ascii_strip(facts.deployment_strategy))
    controller = ascii_upper(ascii_strip(facts.deployment_controller))
    how = f"controller {controller}" if controller != "ECS" else f"strategy {strategy}"
    note = breaker_note(facts)
    evidence = {**status.evidence(), "when": when, "deployment_controller": controller,
                "deployment_strategy": strategy, **breaker_evidence(facts)}
    if facts.bake_time_minutes is not None:
        evidence["bake_time_minutes"] = facts.bake_time_minutes
    if facts.lifecycle_hooks:
        evidence["lifecycle_hooks"] = facts.lifecycle_hooks
    return _no(EntitlementReason.DEPLOYMENT_IN_PROGRESS,
               f"alert-only: ECS {what} {facts.name} ({how}, deployment {status.deployment_id or 'unknown'}, in "
               f"progress {when}; {status.source} said {said}){bake_note(facts, at)}; {what_ecs_does(facts, status)}, "
               f"and a scale to 0 would also stop the previous revision's healthy tasks that it needs"
               + (f"; {note}" if note else ""), **evidence)


def rule_still_serving(trigger_kind: str, facts: EntitlementFacts, at: datetime,
                       max_age: timedelta) -> Verdict | None:
    """A target group reported ``HealthyHostCount`` >= 1 in its newest sample, at most ``max_age`` old, or
    its targets answered any request with 2xx in it (``HTTPCode_Target_2XX_Count`` > 0)."""
    serving = serving_evidence(facts.serving, at, max_age)
    if not serving:
        return None
    first = serving[0]
    count = first.healthy_host_count or 0.0
    hosts = int(count) if float(count).is_integer() else count
    more = f" (and {len(serving) - 1} more target group(s))" if len(serving) > 1 else ""
    if count >= 1:
        what = f"had {hosts} healthy host(s) at {_hm(first.minute)}"
    else:  # the checker says no, the clients say yes
        what = (f"answered {int(first.target_2xx or 0)} request(s) with 2xx at {_hm(first.minute)} with "
                f"{hosts} healthy host(s) (the health check fails, the targets serve)")
    return _no(EntitlementReason.STILL_SERVING,
               f"alert-only: {facts.name} still serves clients: target group {first.target_group} "
               f"{what}{more}; scaling to 0 would cut them off",
               target_group=first.target_group, healthy_host_count=count, minute=_iso(first.minute),
               **({"target_2xx": first.target_2xx, "request_count": first.request_count} if count < 1 else {}),
               serving_target_groups=[{"target_group": s.target_group, "healthy_host_count": s.healthy_host_count,
                                       "minute": _iso(s.minute),
                                       **({"target_2xx": s.target_2xx} if s.target_2xx is not None else {})}
                                      for s in serving])


def rule_dry_run(trigger_kind: str, facts: EntitlementFacts, at: datetime, max_age: timedelta) -> Verdict | None:
    """``DRY_RUN=true``: decide and alert, change nothing."""
    if not facts.dry_run:
        return None
    return _no(EntitlementReason.DRY_RUN, f"dry run: would scale {facts.name} to 0; changed nothing",
               dry_run=True)


#: rule 4 in ARCHITECTURE.md's order: the first that returns a verdict decides
RULES: tuple[Rule, ...] = (
    rule_restart_loop,
    rule_health_check_kills,
    rule_alert_only_cluster,
    rule_opted_out,
    rule_service_not_found,
    rule_daemon_service,
    rule_deployment_in_progress,
    rule_still_serving,
    rule_dry_run,
)


def entitlement(trigger_kind: str, facts: EntitlementFacts, at: datetime, *,
                sample_max_age: timedelta = SAMPLE_MAX_AGE) -> Verdict:
    """May the watchdog scale ``facts.service`` to 0 for a trigger of ``trigger_kind`` at event time ``at``?

    ``trigger_kind``: a :class:`~ecs_guardrail.core.records.TriggerKind` (``core.policy.Trigger.kind``).
    ``sample_max_age``: how old a HealthyHostCount sample may be and still count as evidence.

    Returns:
        the first applying rule's :class:`Verdict` (``entitled`` False), or an entitled verdict with reason
        ``crash_loop`` whose evidence names the scalable target to suspend, if any.
    """
    for rule in RULES:
        verdict = rule(trigger_kind, facts, at, sample_max_age)
        if verdict is not None:
            return verdict
    evidence: dict[str, Any] = {"trigger": trigger_kind}
    extra = ""
    if facts.scalable_target is not None:
        st = facts.scalable_target
        evidence["scalable_target"] = {"resource_id": st.resource_id, "min_capacity": st.min_capacity,
                                       "max_capacity": st.max_capacity, "suspended_state": st.suspended.to_api()}
        extra = f"; its scalable target {st.resource_id} (min {st.min_capacity}) is suspended first"
    note = breaker_note(facts)
    if note:  # no deployment is in progress, so the breaker is not watching: say who acts first anyway
        extra += f"; {note}, once a deployment runs"
        evidence.update(breaker_evidence(facts))
    return Verdict(True, EntitlementReason.CRASH_LOOP,
                   f"entitled: no rule keeps {facts.name} running; scale to 0 to stop the crash loop{extra}",
                   evidence)
