"""Watchdog Lambda: stopped tasks, service actions and deployment events in; decisions, actions and
alerts out.

The recipe per event (ARCHITECTURE.md, "Decision policy" and "Watchdog state"); every decision it
takes is a typed function of :mod:`ecs_guardrail.core`, every AWS error is translated by an adapter,
and the episode's own life is the state machine of :mod:`ecs_guardrail.core.lifecycle`, driven by
:mod:`ecs_guardrail.handlers.episode`:

1. parse, reject an event stamped in the future (kept by the recorder with its reason), classify;
   file the failure in the service's bounded summary (:func:`~ecs_guardrail.core.episode.file_service_failure`,
   one conditional write);
2. resume what an earlier invocation left unfinished once its lease expired
   (:meth:`~ecs_guardrail.handlers.episode.Episodes.resume`);
3. :func:`~ecs_guardrail.core.policy.detect`; on a trigger, gather the facts once (the cluster's
   summaries and slots, ECS, Application Auto Scaling, serving evidence) and
   :func:`~ecs_guardrail.core.policy.decide`;
4. claim, act, alert and complete through :class:`~ecs_guardrail.handlers.episode.Episodes`;
5. when an episode ends (a quiet window, ``SERVICE_STEADY_STATE``, a restore), the write that ends
   it owes its recovery message; one invocation claims it (conditional write) and sends it.

Whatever can run twice will: a redelivery or a concurrent invocation finds the episode claimed and
either waits for the lease or resumes the unfinished step, so an action happens at most once per
episode and an alert at least once (carrying the decision's id, so a repeat is recognisable).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from ecs_guardrail.adapters.alerts import SnsTopic, WebhookUrl
from ecs_guardrail.adapters.autoscaling import ScalableTargets
from ecs_guardrail.adapters.cloudwatch import HealthyHostCount
from ecs_guardrail.adapters.clusters import AccountClusters
from ecs_guardrail.adapters.ecs import EcsService, ServiceFacts
from ecs_guardrail.adapters.elb import TargetGroups
from ecs_guardrail.adapters.store.watchdog_state import WatchdogState
from ecs_guardrail.adapters.taskdef import TaskDefinitions
from ecs_guardrail.core.alert import job_failure_alert, job_summary_alert
from ecs_guardrail.core.classify import StopKind, classify_stop, is_stop_event, judge_job_stop, remembered_per_task
from ecs_guardrail.core.delivery import check_delivery
from ecs_guardrail.core.entitlement import DeploymentEvent, EntitlementFacts, ScalableTargetFacts, entitlement
from ecs_guardrail.core.episode import (
    DeploymentNote,
    EpisodeEnd,
    ServiceSummary,
    add_deployment,
    add_spot,
    failures_between,
    file_service_failure,
    note_activity,
    note_steady,
    reevaluated,
)
from ecs_guardrail.core.errors import (
    AlertDeliveryError,
    ClusterNotFoundError,
    DecisionInProgressError,
    EventRejectedError,
    ScalingSuspendError,
    ServiceAccessDeniedError,
    ServiceNotFoundError,
)
from ecs_guardrail.core.events import DeploymentStateChange, ServiceAction, TaskStateChange, parse_event
from ecs_guardrail.core.links import parse_arn
from ecs_guardrail.core.policy import (
    Entitlement,
    Failure,
    FleetView,
    Reason,
    Trigger,
    decide,
    detect,
    fleet_view_of,
    is_alert_only_cluster,
)
from ecs_guardrail.core.records import Action
from ecs_guardrail.core.restarts import RestartObservation, restart_failures
from ecs_guardrail.handlers.episode import Claim, Episodes, Known
from ecs_guardrail.handlers.runtime import Runtime, lambda_runtime, logger, metrics, report_unmatched_alert_only

__all__ = ["handler", "process", "invoke", "Watchdog", "AlertDeliveryError", "DecisionInProgressError", "USES"]

#: adapters whose declared calls this function makes; walked by the IAM test
USES = {
    "history": WatchdogState.IAM_ACTIONS,
    "ecs": EcsService.IAM_ACTIONS,
    "task_definitions": TaskDefinitions.IAM_ACTIONS,
    "autoscaling": ScalableTargets.IAM_ACTIONS,
    "target_groups": TargetGroups.IAM_ACTIONS,
    "cloudwatch": HealthyHostCount.IAM_ACTIONS,
    "sns": SnsTopic.IAM_ACTIONS,
    "slack_secret": WebhookUrl.IAM_ACTIONS,
    "alert_only_check": AccountClusters.IAM_ACTIONS,
}

#: ECS service action names the watchdog reads (``detail.eventName``)
IMPAIRED = "SERVICE_TASK_START_IMPAIRED"
STEADY = "SERVICE_STEADY_STATE"
#: ``ECS Deployment State Change`` that a new deployment (an operator's UpdateService, a new revision) started
FIX_DEPLOYMENT = "SERVICE_DEPLOYMENT_IN_PROGRESS"


def _failure(event: TaskStateChange, kind: StopKind, cause: str | None,
             exit_codes: tuple[tuple[str, int | None], ...], service: str) -> Failure:
    d = event.detail
    return Failure(service=service, time=event.time, kind=kind, task_arn=d.task_arn,
                   availability_zone=d.availability_zone, stop_code=d.stop_code, reason=d.stopped_reason,
                   cause=cause, exit_codes=exit_codes, task_definition_arn=d.task_definition_arn)


class Watchdog:
    """The recipe above over one :class:`Runtime` for one invocation.

    ``episodes`` does the episode I/O (claim, lease, act, alert, recovery); ``decisions`` (public JSON
    shape) and the alert counters are its.
    """

    def __init__(self, rt: Runtime, context: Any = None) -> None:
        self.rt = rt
        self.config = rt.settings.policy()
        self.state: WatchdogState = rt.history.state
        self.episodes = Episodes(rt, context)

    @property
    def decisions(self) -> list[dict[str, Any]]:
        return self.episodes.decisions

    @property
    def alerts_failed(self) -> list[str]:
        return self.episodes.alerts_failed

    @property
    def alerts_sent(self) -> int:
        return self.episodes.alerts_sent

    @property
    def owner(self) -> str:
        return self.episodes.owner

    # -------------------------------------------------------------- entry points
    def on_task(self, event: TaskStateChange) -> dict[str, Any]:
        d = event.detail
        if not is_stop_event(d):
            return {"status": "ignored", "why": "not a stop"}
        verdict = classify_stop(d)
        if not verdict.final:
            return {"status": "ignored", "why": "stop notice without a stop code; waiting for the STOPPED event"}
        ck, foreign = self.episodes.where(d.cluster, d.cluster_arn)
        if d.service is None:
            if d.family is not None:
                return self._job(event, ck, d.family, verdict.kind, verdict.cause, verdict.exit_codes)
            return {"status": "ignored", "why": f"group {d.group!r} is not a service"}
        service = d.service
        if remembered_per_task(verdict):  # a Spot or termination notice: the task's later STOPPED is not a crash
            taken: list[Failure] = []

            def notice(s: ServiceSummary) -> ServiceSummary | None:
                out = add_spot(s, d.task_arn, event.time)
                taken[:] = [f for f in s.crashes + s.kills if out is not None and f not in out.crashes + out.kills]
                return out

            _, new = self.state.update(ck, service, notice)
            if new and taken:  # its STOPPED came first and was counted: out of the fleet minutes too
                self.state.uncount_failures(ck, service, taken)
            return {"status": "spot" if verdict.kind is StopKind.SPOT else "notice", "new": new}
        if not verdict.kind.counts_as_failure:
            return {"status": "ignored", "why": f"{verdict.kind.value} stop does not count"}
        failure = _failure(event, verdict.kind, verdict.cause, verdict.exit_codes, service)
        held = self._held_for_probes(ck, d.cluster, service, event.time)
        if held is not None:
            return held
        config = self.config
        s, new = self.state.update(ck, service, lambda s: file_service_failure(
            s, failure, config.keep, config.window, edge=config.fleet_signal_min_failures, horizon=config.horizon))
        if new or failure in s.crashes + s.kills:
            # counted in its minute after the summary filed it (a redelivery of a failure the summary
            # holds adds it again, which changes nothing: the write before it may have been lost)
            self.state.count_failures(ck, service, [failure], config.fleet_signal_min_failures)
        s = self.episodes.recover_if_owed(ck, d.cluster, s)
        if new:
            metrics.add_metric(name="CrashesCounted" if verdict.kind is StopKind.CRASH else "HealthCheckKills",
                               unit="Count", value=1)
        out = self._evaluate(ck, d.cluster, d.cluster_arn, service, s, event.time, impaired=False, foreign=foreign)
        if not new and out.get("status") == "counted":
            return {"status": "duplicate"}
        return out

    def _held_for_probes(self, ck: str, cluster: str, service: str, at: datetime) -> dict[str, Any] | None:
        """``RECOVERY=probe``: a failure of a service the watchdog holds at zero is the probe's verdict
        (a running probe failed) or, with no probe running, a straggler of the scale-down; neither
        opens a new decision. ``None``: not held (or ``RECOVERY=manual``): the recipe goes on."""
        if self.episodes.probes is None:
            return None
        ep = self.state.load(ck, service, fresh=True).episode
        if ep is None or not ep.held_at_zero or ep.unfinished:  # an unfinished episode is resumed first
            return None
        if self.episodes.probe_failed(ck, cluster, service, at) is not None:
            return {"status": "probe_failed", "cluster": cluster, "service": service}
        return {"status": "held_at_zero", "why": "the service is held at zero; only a probe's failures count"}

    def on_service_action(self, event: ServiceAction) -> dict[str, Any]:
        name = event.detail.event_name
        arn = event.detail.cluster_arn or event.resources[0]
        ck, foreign = self.episodes.where(event.cluster, arn)
        service = event.service
        if name == STEADY:
            s, changed = self.state.update(ck, service, lambda x: note_steady(x, event.time))
            closed = changed and s.episode_end is EpisodeEnd.STEADY_STATE and s.counted_after == event.time
            if not closed:  # a restore (another process) may have made a recovery owed since this cache
                s = self.state.load(ck, service, fresh=True)
            recovered = self.episodes.recover_if_owed(ck, event.cluster, s) is not s
            return {"status": "episode_closed" if closed else "ignored", "why": STEADY,
                    **({"recovered": True} if recovered else {})}
        if name != IMPAIRED:
            return {"status": "ignored", "why": f"{name} is recorded, not acted on"}
        # a service-level failure of a held service is the probe's verdict (or a straggler): never a new
        # decision over the probing episode
        held = self._held_for_probes(ck, event.cluster, service, event.time)
        if held is not None:
            return held
        s, _ = self.state.update(ck, service, lambda x: note_activity(x, event.time, self.config.window))
        ep = s.episode  # as stored now (a probe's pass may have finished while this invocation read)
        if self.episodes.probes is not None and ep is not None and ep.probes and ep.ended_by is EpisodeEnd.RESTORED \
                and ep.ended_at is not None and event.time <= ep.ended_at:
            # late news of a probe window the pass already judged: never a decision in the past that
            # stops the service just restored (a genuine impairment is reported again, after the restore)
            return {"status": "ignored", "why": f"{IMPAIRED} stamped before the probe passed"}
        s = self.episodes.recover_if_owed(ck, event.cluster, s)
        return self._evaluate(ck, event.cluster, arn, service, s, event.time, impaired=True, foreign=foreign)

    def on_restarts(self, obs: RestartObservation) -> dict[str, Any]:
        """Container restarts the sampler saw (core/restarts.py): filed as failures, then evaluated like
        stops (a ``restart_loop`` trigger is always alert-only; restarts count in the fleet test)."""
        ck, foreign = self.episodes.where(obs.cluster, obs.cluster_arn)
        keep, window = self.config.keep, self.config.window
        failures = restart_failures(obs.cluster, obs.service, obs.minute, obs.restarts)

        filed: list[Failure] = []

        def file(s: ServiceSummary) -> ServiceSummary | None:
            out = None
            filed.clear()
            for f in failures:  # as on_task files a stop (core/episode.py), one restart at a time
                step = file_service_failure(out or s, f, keep, window, edge=self.config.fleet_signal_min_failures,
                                            horizon=self.config.horizon)
                if step is not None:
                    out = step
                    filed.append(f)
            return out

        s, new = self.state.update(ck, obs.service, file)
        if not new:
            return {"status": "duplicate"}
        self.state.count_failures(ck, obs.service, filed, self.config.fleet_signal_min_failures)
        metrics.add_metric(name="ContainerRestartsCounted", unit="Count", value=obs.restarts)
        return self._evaluate(ck, obs.cluster, obs.cluster_arn, obs.service, s, obs.minute, impaired=False,
                              foreign=foreign)

    def on_deployment(self, event: DeploymentStateChange) -> dict[str, Any]:
        d = event.detail
        ck, _ = self.episodes.where(event.cluster, event.resources[0])
        note = DeploymentNote(event.time, d.event_name, getattr(d, "deployment_id", None), d.reason)
        s, new = self.state.update(ck, event.service, lambda s: add_deployment(s, note))
        self.episodes.recover_if_owed(ck, event.cluster, s)
        probed = None
        if new and d.event_name == FIX_DEPLOYMENT and self.episodes.probes is not None:
            # an operator's fix (a new task definition revision) on a held service: probe it at once
            probed = self.episodes.probe(ck, event.cluster, event.service, event.time, fix=True)
        return {"status": "deployment_noted" if new else "duplicate", "event": d.event_name,
                **({"probe": probed} if probed else {})}

    # -------------------------------------------------------------- standalone jobs
    def _job(self, event: TaskStateChange, ck: str, family: str, kind: StopKind, cause: str | None,
             exit_codes: tuple[tuple[str, int | None], ...]) -> dict[str, Any]:
        d = event.detail
        arn = d.task_definition_arn
        run = judge_job_stop(d.last_status, kind, exit_codes,
                             lambda: self.episodes.taskdefs().essential_containers(arn) if arn else None)
        if run.outcome == "ok":
            return self._job_ok(event, ck, family, run.why)
        if run.outcome != "failed":
            return {"status": "ignored", "why": run.why}
        failure = replace(_failure(event, kind, cause, exit_codes, f"family:{family}"),
                          reason=f"{run.why}; {d.stopped_reason or 'no reason'}")
        window = self.config.window
        filing = self.state.job_failure(ck, family, d.task_arn, event.time, window, run.exit_text)
        if filing is None:
            return {"status": "duplicate"}
        metrics.add_metric(name="JobFailures", unit="Count", value=1)
        if filing.opened:
            # the sweep closes the window on time (its summary needs no further run of the job)
            self.state.open_job(ck, d.cluster, family, event.time + window)
            where = self.episodes.place(ck, d.cluster, family=family)
            links = self.episodes.links(where, (failure,))
            minutes = self.config.window_minutes
            if filing.closed is not None:
                start, count, last_exit, last_time = filing.closed
                alert = job_summary_alert(d.cluster, family, failures=count, window_minutes=minutes,
                                          window_start=start, last_exit=last_exit, last_time=last_time,
                                          next_failure=failure, where=where, links=links)
            else:
                alert = job_failure_alert(d.cluster, family, failure, where=where, links=links,
                                          window_minutes=minutes, window_end=event.time + window)
            self.episodes.deliver(alert)
        return {"status": "job_failed", "cluster": d.cluster, "family": family, "alerted": filing.opened,
                **({"summarised": filing.closed[1]} if filing.closed else {})}

    def _job_ok(self, event: TaskStateChange, ck: str, family: str, why: str) -> dict[str, Any]:
        """A run of ``family`` finished normally: if it closes a window that counted several failures,
        send that window's summary now (a job that stops failing sends no further failure to do it)."""
        d = event.detail
        filing = self.state.job_run_ok(ck, family, event.time, self.config.window)
        if filing is None or filing.closed is None:
            return {"status": "ignored", "why": why}
        start, count, last_exit, last_time = filing.closed
        where = self.episodes.place(ck, d.cluster, family=family)
        self.episodes.deliver(job_summary_alert(d.cluster, family, failures=count,
                                                window_minutes=self.config.window_minutes, window_start=start,
                                                last_exit=last_exit, last_time=last_time, ok_run_at=event.time,
                                                where=where, links=self.episodes.links(where, ())))
        return {"status": "ignored", "why": why, "cluster": d.cluster, "family": family, "summarised": count}

    # -------------------------------------------------------------- decide
    def _evaluate(self, ck: str, cluster: str, cluster_arn: str, service: str, s: ServiceSummary, at: datetime,
                  *, impaired: bool, foreign: str | None) -> dict[str, Any]:
        ep = s.episode
        if ep is not None and ep.unfinished:
            resumed = self.episodes.resume(ck, service, s)
            if resumed is not None:
                return resumed
            s = self.state.load(ck, service)
        trigger = detect(self.config, s, at, impaired=impaired)
        if trigger is None:
            if s.episode is not None and s.episode_end is None and at <= s.episode.last_failure + self.config.window:
                return {"status": "in_episode", "decided": s.episode.action.value}
            return {"status": "counted"}
        return self._decide(ck, cluster, cluster_arn, s, trigger, foreign)

    def _facts(self, cluster: str, service: str, foreign: str | None) -> tuple[ServiceFacts | None, str | None, int]:
        """DescribeServices and ListServices, once per decision. Returns (facts, why unreadable, services)."""
        if foreign is not None:
            return None, f"in {foreign}", 0
        ecs = self.rt.ecs
        assert ecs is not None
        facts, why = None, None
        try:
            facts = ecs.describe(cluster, service)
        except (ServiceNotFoundError, ServiceAccessDeniedError) as exc:
            why = str(exc)
            logger.warning("service not readable; deciding without its facts", extra={"error": why})
        try:
            count = ecs.count_services(cluster)
        except (ClusterNotFoundError, ServiceAccessDeniedError):
            count = 0
        return facts, why, count

    def _serving(self, facts: ServiceFacts, at: datetime) -> tuple[Any, ...]:
        """The newest minute of both observers per target group within 3 minutes of ``at``
        (:meth:`Episodes.serving`)."""
        return self.episodes.serving(facts, at)

    def _entitle(self, trigger: Trigger, cluster: str, cluster_arn: str, facts: ServiceFacts | None,
                 why: str | None, foreign: str | None,
                 s: ServiceSummary) -> tuple[Entitlement, ScalableTargetFacts | None, str | None]:
        """Rule 4 over the facts gathered once for this decision (core/entitlement.py decides).

        Returns the entitlement, the scalable target (``None``: none) and why it could not be read.
        """
        scalable, unreadable = None, None
        serving: tuple[Any, ...] = ()
        if facts is not None and trigger.kind != "health_check_kills":
            try:
                scalable = ScalableTargets(self.rt.clients("application-autoscaling"),
                                           alert_only=self.config.alert_only).describe(cluster, s.service)
            except ScalingSuspendError as exc:
                unreadable = exc.reason
                logger.warning("scalable target unreadable", extra={"error": str(exc)})
            serving = self._serving(facts, trigger.time)
        base = facts.entitlement_fields() if facts is not None else {
            "exists": False, "access_denied": bool(why and "access denied" in why.lower())}
        ef = EntitlementFacts(
            cluster=cluster, service=s.service, **base,
            deployment_events=tuple(DeploymentEvent(n.time, n.event_name, n.deployment_id, n.reason)
                                    for n in s.deployments),
            serving=serving, service_deployments=self._service_deployments(cluster, s, facts),
            alert_only_cluster=is_alert_only_cluster(self.config, cluster, facts.cluster_arn if facts else cluster_arn),
            alert_only_patterns=self.config.alert_only_clusters, elsewhere=foreign, dry_run=self.config.dry_run,
            scalable_target=scalable, client_error_ratio=self.rt.settings.CLIENT_ERROR_RATIO,
        )
        v = entitlement(trigger.kind, ef, trigger.time)
        if v.entitled:
            return Entitlement(), scalable, unreadable
        evidence = dict(v.evidence)
        if why and not facts:
            evidence.setdefault("ecs", why)
        return Entitlement(Reason(v.reason.value), v.message, evidence), scalable, unreadable

    def _service_deployments(self, cluster: str, s: ServiceSummary, facts: ServiceFacts | None) -> Any:
        """ListServiceDeployments (one page; DescribeServiceDeployments for the unfinished) for a service
        whose deployments something else finishes; ``None`` when not read (core decides then from the
        events and rolloutState)."""
        if facts is None or self.rt.ecs is None or not (
                facts.circuit_breaker.enabled or facts.deployment_controller != "ECS"
                or facts.deployment_strategy != "ROLLING"):
            return None
        return self.rt.ecs.service_deployments(cluster, s.service)

    def _fleet(self, ck: str, service: str, at: datetime, count: int) -> FleetView:
        """Rule 3 at event time ``at`` from the cluster's fleet minutes (core/fleet_minutes.py): a
        bounded read whatever the cluster's size. A service whose overflowed minute the window cuts is
        decided from its own summary's per-minute counts (their edge offsets are exact there).
        ``count``: ListServices' answer; 0 (unreadable, another account) counts the services the
        watchdog keeps a summary of, this one included."""
        config = self.config
        need, start = config.fleet_signal_min_failures, at - config.window
        signals = self.state.fleet(ck, start, at, need)
        failing = set(signals.failing)
        for other in sorted(signals.uncertain - {service}):
            if failures_between(self.state.load(ck, other, fresh=True).minutes, start, at, need) >= need:
                failing.add(other)
        if not count:
            count = len(self.state.service_names(ck) | {service})
        return fleet_view_of(config, service, failing, signals.scaled_down, count)

    def _decide(self, ck: str, cluster: str, cluster_arn: str, s: ServiceSummary, trigger: Trigger,
                foreign: str | None) -> dict[str, Any]:
        service = s.service
        facts, why, count = self._facts(cluster, service, foreign)
        fleet = self._fleet(ck, service, trigger.time, count)
        view = self.state.slots_view(ck)
        ent, scalable, unreadable = self._entitle(trigger, cluster, cluster_arn, facts, why, foreign, s)
        held = (self.episodes.free_raised(ck, cluster, service, view, fleet.bound, trigger.time)
                if ent.reason is None else view.held())
        decision = decide(self.config, cluster, trigger, fleet, ent, held)
        if trigger.escalation or trigger.reevaluation:  # rule 2: the episode's current outcome again is silent
            def same(x: ServiceSummary) -> ServiceSummary | None:
                return reevaluated(x, trigger.time, decision.action, decision.reason, escalation=trigger.escalation)

            if same(s) is not None:
                self.state.update(ck, service, same)
                return {"status": "re_evaluated", "decided": decision.action.value}
        prev = facts.desired_count if facts else None
        # still at 0 from an earlier scale-down whose episode ended (SERVICE_STEADY_STATE once ECS reached
        # 0): its count and scaling state are what restore must put back, not 0 and "suspended"
        before = s.episode if (s.episode is not None and s.episode.held_at_zero and facts is not None
                               and facts.desired_count == 0) else None
        if before is not None and decision.action is not Action.SCALE_TO_ZERO:
            # the service is still at 0 from the watchdog's own scale-down: a hold or an alert now must not
            # replace that episode, or the service would stay at 0 while its slot is freed (the cap's count
            # lost it: a second service scaled past the bound, found by tests/property/test_held_at_zero.py)
            return {"status": "held_at_zero", "cluster": cluster, "service": service,
                    "decided": decision.action.value,
                    "why": "the service is held at zero by an earlier scale-down; restore ends that first"}
        if before is not None and before.previous_desired_count is not None:
            prev = before.previous_desired_count
        claim = Claim(decision, prev, self.config.dry_run, trigger.escalation)
        return self.episodes.claim(
            ck, s, claim, trigger.kind, last_failure=max(trigger.time, s.newest_failure or trigger.time),
            previous_suspended=before.previous_suspended if before is not None else None,
            escalated=trigger.escalation or bool(s.episode and s.episode.escalated and (
                trigger.escalation or trigger.reevaluation)),
            known=Known(facts, scalable, view, unreadable))


def home_of(context: Any) -> tuple[str, str] | None:
    """``(account, region)`` of the running function, from the Lambda context's function ARN."""
    a = parse_arn(str(getattr(context, "invoked_function_arn", "") or ""))
    return (a.account, a.region) if a is not None and a.account.isdigit() and a.region else None


def process(raw: Any, rt: Runtime, context: Any = None, *,
            delivered_at: datetime | None = None) -> tuple[dict[str, Any], Watchdog]:
    """Handle one EventBridge event. Returns the outcome and the :class:`Watchdog` (its decisions).

    ``delivered_at``: when the event was delivered (the invocation's clock in Lambda; a scenario's
    ``delivered.csv`` in a replay; ``None``: unknown, the future-stamp check is skipped).

    A malformed event, or one stamped more than 15 minutes after its delivery, is logged with its
    reason and returns ``{"status": "rejected"}`` (the recorder keeps it in the table); it is never counted.
    """
    wd = Watchdog(rt, context)
    try:
        restarts = RestartObservation.from_event(raw)
    except ValueError as exc:  # kept in the function's log, with its reason (the recorder never sees it)
        metrics.add_metric(name="EventsRejected", unit="Count", value=1)
        logger.warning("restart observation rejected", extra={"reason": str(exc), "event": str(raw)[:4000]})
        return {"status": "rejected", "reason": str(exc)}, wd
    if restarts is not None:
        return wd.on_restarts(restarts), wd
    try:
        event = parse_event(raw)
        check_delivery(event.time, delivered_at)
    except EventRejectedError as exc:
        metrics.add_metric(name="EventsRejected", unit="Count", value=1)
        logger.warning("event rejected", extra={"reason": exc.reason})
        return {"status": "rejected", "reason": exc.reason}, wd
    if isinstance(event, TaskStateChange):
        return wd.on_task(event), wd
    if isinstance(event, ServiceAction):
        return wd.on_service_action(event), wd
    if isinstance(event, DeploymentStateChange):
        return wd.on_deployment(event), wd
    return {"status": "ignored", "why": f"{event.detail_type} is recorded, not acted on"}, wd


def invoke(raw: Any, rt: Runtime, context: Any = None, *, delivered_at: datetime | None = None) -> dict[str, Any]:
    """:func:`process` plus the Lambda's outcome shape and errors (shared by Lambda and ``replay``).

    Raises:
        AlertDeliveryError: every alert sink failed after the decision was recorded (retried by Lambda).
        DecisionInProgressError: another invocation holds the service's lease (retried by Lambda).
        LeaseLostError: this invocation outlived its lease and stopped (retried by Lambda; the new holder
            finishes the episode).
    """
    outcome, wd = process(raw, rt, context, delivered_at=delivered_at)
    outcome = dict(outcome)
    outcome["decisions"] = wd.decisions
    outcome["alerts_sent"] = wd.alerts_sent
    if wd.alerts_failed:
        raise AlertDeliveryError(f"alert delivery failed for {', '.join(wd.alerts_failed)}; decision recorded",
                                 outcome)
    if outcome.get("status") == "in_progress":
        raise DecisionInProgressError(f"{outcome.get('cluster')}/{outcome.get('service')}: another invocation "
                                      "holds the lease; retry later")
    return outcome


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Lambda entry point (EventBridge rule target: stops, Spot notices, service actions, deployments).

    The delivery time is the invocation's clock: an event stamped more than 15 minutes after it is
    rejected (ARCHITECTURE.md, "Time-sane").

    Raises:
        SettingsError: an invalid setting; nothing is decided (the event goes to the retry / DLQ path).
        AlertDeliveryError, DecisionInProgressError, LeaseLostError: see :func:`invoke`.
    """
    metrics.add_metric(name="EventsReceived", unit="Count", value=1)
    rt = lambda_runtime("watchdog", home_of(context))
    report_unmatched_alert_only(rt)  # replay warns instead (local.alert_only_warnings)
    if event.get("detail-type") == "Scheduled Event" and event.get("source") == "aws.events":
        from ecs_guardrail.handlers.sweep import run_sweep, scheduled_now

        return run_sweep(rt, scheduled_now(event, rt.clock), context)
    return invoke(event, rt, context, delivered_at=datetime.fromtimestamp(rt.clock(), UTC))
