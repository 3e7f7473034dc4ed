"""Watchdog Lambda: stopped tasks, service actions and deployment events in; decisions, actions and
alerts out.

The recipe per event (ARCHITECTURE.md, "Decision policy" and "Watchdog state"); every decision it
takes is a typed function of :mod:`ecs_guardrail.core`, every AWS error is translated by an adapter,
and the episode's own life is the state machine of :mod:`ecs_guardrail.core.lifecycle`, driven by
:mod:`ecs_guardrail.handlers.episode`:

1. parse, reject an event stamped in the future (kept by the recorder with its reason), classify;
   file the failure in the service's bounded summary (:func:`~ecs_guardrail.core.summary.file_service_failure`,
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
from typing import TYPE_CHECKING, Any

from ecs_guardrail.adapters.alerts import SnsTopic, WebhookUrl
from ecs_guardrail.adapters.autoscaling import ScalableTargets
from ecs_guardrail.adapters.cloudwatch import HealthyHostCount
from ecs_guardrail.adapters.clusters import AccountClusters
from ecs_guardrail.adapters.ecs import EcsService, ServiceFacts, describe_services
from ecs_guardrail.adapters.elb import TargetGroups
from ecs_guardrail.adapters.logs import CrashLogs
from ecs_guardrail.adapters.store.deployment_alerts import DeploymentAlerts
from ecs_guardrail.adapters.store.event_log import EventLog
from ecs_guardrail.adapters.store.watchdog_state import WatchdogState
from ecs_guardrail.adapters.taskdef import TaskDefinitions
from ecs_guardrail.core.alert import job_failure_alert, job_summary_alert
from ecs_guardrail.core.classify import StopKind, classify_stop, is_stop_event, judge_job_stop, remembered_per_task
from ecs_guardrail.core.delivery import check_delivery
from ecs_guardrail.core.deployment_failure import DEPLOYMENT_FAILED
from ecs_guardrail.core.deployment_protection import deployments_worth_reading
from ecs_guardrail.core.entitlement import DeploymentEvent, EntitlementFacts, ScalableTargetFacts, entitlement
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
from ecs_guardrail.core.lazy import lazy_module
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
from ecs_guardrail.core.records import TriggerKind
from ecs_guardrail.core.recount import count_again
from ecs_guardrail.core.restarts import RestartObservation, restart_failures
from ecs_guardrail.core.summary import (
    DeploymentNote,
    EpisodeEnd,
    ServiceSummary,
    add_deployment,
    add_spot,
    episode_is_open,
    failures_between,
    file_service_failure,
    note_activity,
    note_steady,
    reevaluated,
)
from ecs_guardrail.handlers.deployment_failed import alert_failed_deployment
from ecs_guardrail.handlers.episode import Claim, Known
from ecs_guardrail.handlers.probe import ProbingEpisodes
from ecs_guardrail.handlers.runtime import Runtime, lambda_runtime, logger, metrics, report_unmatched_alert_only

if TYPE_CHECKING:
    from ecs_guardrail.core import lifecycle as lc
else:  # the episode machine: loaded on the first trigger or resume, not by a call that only counts (issue 33.7)
    lc = lazy_module("ecs_guardrail.core.lifecycle")

__all__ = ["handler", "process", "invoke", "Watchdog", "AlertDeliveryError", "DecisionInProgressError", "USES"]

#: the units (adapter classes: every declared method; or one declared method) whose AWS calls this function
#: makes, the scheduled sweep's (handlers.sweep) included; ecs_guardrail.iam.handler_permissions unions their
#: @permissions, and tests/infra/test_iam_calls.py checks every recorded call came from one of them
USES = {
    "history": WatchdogState,
    "ecs": EcsService,
    "task_definitions": TaskDefinitions,
    "autoscaling": ScalableTargets,
    "target_groups": TargetGroups,
    "cloudwatch": HealthyHostCount,
    "sns": SnsTopic,
    "slack_secret": WebhookUrl,
    "alert_only_check": AccountClusters,
    "rejected_observations": EventLog._once,
    "crash_logs": CrashLogs,  # issue 35: the crash's own words
    "change_deployments": describe_services,  # issue 35: what ran before the deployment that started a loop
    "deployment_alerts": DeploymentAlerts,
}

#: ECS service action names the watchdog reads (``detail.eventName``)
IMPAIRED = "SERVICE_TASK_START_IMPAIRED"
STEADY = "SERVICE_STEADY_STATE"
#: ``ECS Deployment State Change`` that a new deployment (an operator's UpdateService, a new revision) started
FIX_DEPLOYMENT = "SERVICE_DEPLOYMENT_IN_PROGRESS"
#: claims one event tries before it gives up for a Lambda retry (each failed one re-reads and detects again)
CLAIM_ATTEMPTS = 4


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
        self.episodes = ProbingEpisodes(rt, context)

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
        held = self._held_for_probes(ck, d.cluster, service, event.time, failure)
        if held is not None:
            return held
        config = self.config
        s, new = self.state.update(ck, service, lambda s: file_service_failure(
            s, failure, config.keep, config.window, edge=config.fleet_signal_min_failures, horizon=config.horizon))
        if new or count_again(s, failure):  # core/recount.py: filed, even if its ring dropped it since
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

    def _held_for_probes(self, ck: str, cluster: str, service: str, at: datetime,
                         failure: Failure | None = None) -> dict[str, Any] | None:
        """``RECOVERY=probe``: a failure of a service the watchdog holds at zero is the probe's verdict
        (a running probe failed) or, with no probe running, a straggler of the scale-down; neither
        opens a new decision. ``None``: not held (or ``RECOVERY=manual``): the recipe goes on.

        A genuine crash or health-check kill (``failure``) of a *probing* service is its verdict whatever
        state a previous step left the lease or the episode in (ARCHITECTURE.md, "Recovery"): it is
        counted in the summary first (so a pass that comes before the verdict is stored sees it and
        fails), then stored as :class:`~ecs_guardrail.core.lifecycle.ProbeFailed` under the lease
        (:class:`DecisionInProgressError` while another invocation's lease runs: Lambda retries)."""
        if self.episodes.probes is None:
            return None
        ep = self.state.load(ck, service, fresh=True).episode
        if ep is None or not ep.held_at_zero:
            return None
        if ep.probing:
            if failure is not None:
                config = self.config
                self.state.update(ck, service, lambda s: file_service_failure(
                    s, failure, config.keep, config.window, edge=config.fleet_signal_min_failures,
                    horizon=config.horizon))
            if self.episodes.probe_failed(ck, cluster, service, at) is not None:
                return {"status": "probe_failed", "cluster": cluster, "service": service}
        elif ep.unfinished:  # an unfinished scale-down or alert is resumed first
            return None
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
            after = self.episodes.recover_if_owed(ck, event.cluster, s)
            recovered = after is not s
            out = {"status": "episode_closed" if closed else "ignored", "why": STEADY,
                   **({"recovered": True} if recovered else {})}
            later = self._after_steady(ck, event, arn, after, foreign) if closed else None
            return {**later, "why": STEADY, **({"recovered": True} if recovered else {})} if later else out
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

    def _after_steady(self, ck: str, event: ServiceAction, arn: str, s: ServiceSummary,
                      foreign: str | None) -> dict[str, Any] | None:
        """Rule 2: an episode that a ``SERVICE_STEADY_STATE`` ended takes none of the failures stamped
        after it, and those are evaluated at once for the next episode, also when they were delivered
        before the steady state (a late steady state never swallows a loop). The evaluation's ``T`` is
        the newest failure known. ``None`` when no failure is stamped after the steady state, or the
        service is held at zero by the watchdog's own scale-down (its failures open no decision)."""
        newest = s.newest_failure
        if newest is None or newest <= event.time or (s.episode is not None and s.episode.held_at_zero):
            return None
        out = self._evaluate(ck, event.cluster, arn, event.service, s, newest, impaired=False, foreign=foreign)
        return out if out.get("status") == "decided" else None

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
            for f in failures:  # as on_task files a stop (core/summary.py), one restart at a time
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
        failed = alert_failed_deployment(self.episodes, event, ck, s) if d.event_name == DEPLOYMENT_FAILED else {}
        return {"status": "deployment_noted" if new else "duplicate", "event": d.event_name,
                **({"probe": probed} if probed else {}), **failed}

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
        """Resume, :func:`detect`, and decide; a claim whose condition failed is not a lost race by itself
        (issue 30 item 5): the write that changed the summary may claim nothing (an old deployment event, a
        Spot notice, a steady state, a quiet window moved on). Reload and detect again; ``lost_race`` only
        when an episode is open now that was not before (another invocation decided).

        Raises:
            DecisionInProgressError: the summary kept changing under :data:`CLAIM_ATTEMPTS` claims in a
                row (Lambda retries the event; nothing was decided, nothing is lost).
        """
        def opened(x: ServiceSummary) -> tuple[Any, ...] | None:
            e = x.episode
            return None if e is None or x.episode_end is not None else (
                e.decision_time, e.last_evaluation, e.action, e.reason, e.escalated)

        before = opened(s)
        for _ in range(CLAIM_ATTEMPTS):
            out = self._evaluate_once(ck, cluster, cluster_arn, service, s, at, impaired=impaired, foreign=foreign)
            if out.get("status") != "claim_conflict":
                return out
            s = self.state.load(ck, service, fresh=True)
            now = opened(s)
            if now is not None and now != before:
                logger.info("another invocation claimed this episode first", extra={"cluster": ck, "service": service})
                return {"status": "lost_race"}
            logger.info("a write that claimed nothing changed the summary under the claim: detecting again",
                        extra={"cluster": ck, "service": service})
        raise DecisionInProgressError(f"{ck}/{service}: the summary changed under {CLAIM_ATTEMPTS} claims in a row; "
                                      "retry later")

    def _evaluate_once(self, ck: str, cluster: str, cluster_arn: str, service: str, s: ServiceSummary,
                       at: datetime, *, impaired: bool, foreign: str | None) -> dict[str, Any]:
        ep = s.episode
        if ep is not None and ep.unfinished:
            resumed = self.episodes.resume(ck, service, s)
            if resumed is not None:
                return resumed
            s = self.state.load(ck, service)
        trigger = detect(self.config, s, at, impaired=impaired)
        if trigger is not None and lc.holds_decisions(s):
            held = self._held_at_zero(ck, cluster, service, s, at)
            if held is not None:
                return held
            s = self.state.load(ck, service, fresh=True)  # raised by an operator: the hold ended just now
            trigger = None if lc.holds_decisions(s) else detect(self.config, s, at, impaired=impaired)
        if trigger is None:
            if s.episode is not None and episode_is_open(s, at, self.config.window):
                return {"status": "in_episode", "decided": s.episode.action.value}
            return {"status": "counted"}
        return self._decide(ck, cluster, cluster_arn, s, trigger, foreign)

    def _held_at_zero(self, ck: str, cluster: str, service: str, s: ServiceSummary,
                      at: datetime) -> dict[str, Any] | None:
        """Rule 2 over a trigger of a service held at zero (:func:`~ecs_guardrail.core.lifecycle.holds_decisions`):
        its failures are counted and nothing else is done, unless ECS says an operator raised it since
        (DescribeServices ``desiredCount`` above 0 over a finished scale-down: the episode ends as an
        operator's raise, slot freed, recovery owed; ``None`` is returned and the trigger is decided anew).
        """
        desired = None
        if self.rt.ecs is not None:
            try:
                desired = self.rt.ecs.describe(cluster, service).desired_count
            except (ServiceNotFoundError, ServiceAccessDeniedError):
                desired = None  # unreadable: still held (fail safe: nothing new to decide over a stopped service)
        if lc.raise_seen(s, desired) and self.episodes._raised(ck, cluster, service, at):
            self.state.release_slot(ck, service)
            logger.info("held service raised by someone else: its hold ended, slot freed", extra={"service": service})
            return None
        metrics.add_metric(name="HeldAtZeroFailures", unit="Count", value=1)
        return {"status": "held_at_zero", "cluster": cluster, "service": service,
                "why": "the service is held at zero by the watchdog's own scale-down: its failures are counted, "
                       "no new decision until it is restored or raised"}

    def _facts(self, cluster: str, service: str,
               foreign: str | None) -> tuple[ServiceFacts | None, str | None, bool, int]:
        """DescribeServices and ListServices, once per decision. Returns (facts, why unreadable, whether ECS
        denied DescribeServices, services): the adapter translated AccessDeniedException into
        :class:`ServiceAccessDeniedError`, and its type, not its text, says "denied"."""
        if foreign is not None:
            return None, f"in {foreign}", False, 0
        ecs = self.rt.ecs
        assert ecs is not None
        facts, why, denied = None, None, False
        try:
            facts = ecs.describe(cluster, service)
        except (ServiceNotFoundError, ServiceAccessDeniedError) as exc:
            why, denied = str(exc), isinstance(exc, ServiceAccessDeniedError)
            logger.warning("service not readable; deciding without its facts", extra={"error": why})
        try:
            count = ecs.count_services(cluster)
        except (ClusterNotFoundError, ServiceAccessDeniedError):
            count = 0
        return facts, why, denied, count

    def _serving(self, facts: ServiceFacts, at: datetime) -> tuple[Any, ...]:
        """The newest minute of both observers per target group within 3 minutes of ``at``
        (:meth:`Episodes.serving`)."""
        return self.episodes.serving(facts, at)

    def _entitle(self, trigger: Trigger, cluster: str, cluster_arn: str, facts: ServiceFacts | None,
                 why: str | None, foreign: str | None, s: ServiceSummary, *,
                 denied: bool = False) -> tuple[Entitlement, ScalableTargetFacts | None, str | None]:
        """Rule 4 over the facts gathered once for this decision (core/entitlement.py decides).

        Returns the entitlement, the scalable target (``None``: none) and why it could not be read.
        """
        scalable, unreadable = None, None
        serving: tuple[Any, ...] = ()
        if facts is not None and trigger.kind is not TriggerKind.HEALTH_CHECK_KILLS:
            try:
                scalable = ScalableTargets(self.rt.clients("application-autoscaling"),
                                           alert_only=self.config.alert_only).describe(cluster, s.service)
            except ScalingSuspendError as exc:
                unreadable = exc.reason
                logger.warning("scalable target unreadable", extra={"error": str(exc)})
            serving = self._serving(facts, trigger.time)
        base = facts.entitlement_fields() if facts is not None else {
            "exists": False, "access_denied": denied}
        ef = EntitlementFacts(
            cluster=cluster, service=s.service, **base,
            deployment_events=tuple(DeploymentEvent(n.time, n.event_name, n.deployment_id, n.reason)
                                    for n in s.deployments),
            serving=serving, service_deployments=self._service_deployments(cluster, s, facts),
            alert_only_cluster=is_alert_only_cluster(self.config, cluster, facts.cluster_arn if facts else cluster_arn),
            alert_only_patterns=self.config.alert_only_clusters, elsewhere=foreign, dry_run=self.config.dry_run,
            scalable_target=scalable,
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
        if facts is None or self.rt.ecs is None or not deployments_worth_reading(
                facts.circuit_breaker, facts.deployment_controller, facts.deployment_strategy):
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
        facts, why, denied, count = self._facts(cluster, service, foreign)
        fleet = self._fleet(ck, service, trigger.time, count)
        view = self.state.slots_view(ck)
        ent, scalable, unreadable = self._entitle(trigger, cluster, cluster_arn, facts, why, foreign, s,
                                                  denied=denied)
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
        # a service held at zero never reaches here (rule 2, core/lifecycle.holds_decisions, asked in _evaluate)
        claim = Claim(decision, prev, self.config.dry_run, trigger.escalation)
        return self.episodes.claim(
            ck, s, claim, trigger.kind, last_failure=max(trigger.time, s.newest_failure or trigger.time),
            previous_suspended=None,
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
        restarts = RestartObservation.from_event(raw, account=rt.home[0] if rt.home else None)
        if restarts is not None:  # the same 15-minute rule as task events (ARCHITECTURE.md, "Time-sane")
            check_delivery(restarts.minute, delivered_at)
    except (ValueError, EventRejectedError) as exc:
        # the recorder never sees an observation (its rule takes aws.ecs only): kept here, with its reason,
        # in the function's log and in the table's rejected events (``ecs-guardrail rejected``)
        reason = exc.reason if isinstance(exc, EventRejectedError) else str(exc)
        metrics.add_metric(name="EventsRejected", unit="Count", value=1)
        logger.warning("restart observation rejected", extra={"reason": reason, "event": str(raw)[:4000]})
        rt.history.record_rejected(raw, reason, delivered_at or datetime.fromtimestamp(rt.clock(), UTC))
        return {"status": "rejected", "reason": reason}, wd
    if restarts is not None:
        return wd.on_restarts(restarts), wd
    try:
        event = parse_event(raw)
        check_delivery(event.time, delivered_at)
    except EventRejectedError as exc:
        metrics.add_metric(name="EventsRejected", unit="Count", value=1)
        logger.warning("event rejected", extra={"reason": exc.reason})
        return {"status": "rejected", "reason": exc.reason}, wd
    if event.replay_name is not None:  # the rule refuses replays (routing.PATTERNS); a rule made by hand may not
        metrics.add_metric(name="ReplayedEventsIgnored", unit="Count", value=1)
        logger.info("replayed event ignored", extra={"replay_name": event.replay_name})
        return {"status": "ignored",
                "why": f"replayed from the archive (replay-name {event.replay_name}): recorded, never acted on"}, wd
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
def handler(event: Any, context: Any) -> dict[str, Any]:
    """Lambda entry point (EventBridge rule target: stops, Spot notices, service actions, deployments).

    ``event`` is whatever Lambda was given: a JSON value that is not an object (``null``, a list, a
    string, a number) is rejected with its reason (``{"status": "rejected"}``), never an
    ``AttributeError``.

    The delivery time is the invocation's clock: an event stamped more than 15 minutes after it is
    rejected (ARCHITECTURE.md, "Time-sane").

    Raises:
        SettingsError: an invalid setting; nothing is decided (the event goes to the retry / DLQ path).
        AlertDeliveryError, DecisionInProgressError, LeaseLostError: see :func:`invoke`.
    """
    metrics.add_metric(name="EventsReceived", unit="Count", value=1)
    rt = lambda_runtime("watchdog", home_of(context))
    report_unmatched_alert_only(rt)  # replay warns instead (local.alert_only_warnings)
    # an event that is not a JSON object (None, a list, a string, a number) goes to process(), which
    # rejects it with its reason as the recorder does; only an object can be the scheduled sweep's event
    if isinstance(event, dict) and event.get("detail-type") == "Scheduled Event" \
            and event.get("source") == "aws.events":
        from ecs_guardrail.handlers.sweep import run_sweep, scheduled_now

        return run_sweep(rt, scheduled_now(event, rt.clock), context)
    return invoke(event, rt, context, delivered_at=datetime.fromtimestamp(rt.clock(), UTC))
