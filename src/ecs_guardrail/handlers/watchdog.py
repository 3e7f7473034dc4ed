"""Watchdog Lambda: stopped tasks, service actions and deployment events in; decisions, actions and
alerts out.

Recipe per event (ARCHITECTURE.md, "Decision policy" and "Watchdog state"):

1. parse and classify; file the failure in the service's bounded summary (one conditional write;
   the first final verdict of a task stands, a Spot notice's included);
2. resume what an earlier invocation left unfinished (its lease expired): an action, an alert;
3. :func:`~ecs_guardrail.core.policy.detect`; on a trigger, gather the facts once (the cluster's
   summaries and slots, ECS, Application Auto Scaling, serving evidence) and
   :func:`~ecs_guardrail.core.policy.decide`;
4. claim the episode and write the decision record in ONE transaction, holding a lease;
5. act within the cap on services held at zero (a conditional slot), after suspending the
   service's scalable target; then alert; then complete the episode and drop the lease;
6. when an episode ends (a quiet window, ``SERVICE_STEADY_STATE``, a restore), the write that ends
   it owes its recovery message; one invocation claims it (conditional write) and sends it.

Every alert says where (account, region, cluster, service) and links to the console: the service,
its stopped tasks, the log streams of the last stops (``awslogs`` options of the task definition,
read with the same cached DescribeTaskDefinition the job path uses) and ``RUNBOOK_URL``.

Whatever can run twice will: a redelivery or a concurrent invocation finds the episode claimed and
either waits for the lease or resumes the unfinished step, so an action happens at most once and an
alert is never lost.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from ecs_guardrail.adapters.alerts import SnsTopic, WebhookUrl
from ecs_guardrail.adapters.autoscaling import ScalableTargets
from ecs_guardrail.adapters.cloudwatch import HealthyHostCount, Series
from ecs_guardrail.adapters.ecs import EcsService, ServiceFacts
from ecs_guardrail.adapters.elb import TargetGroups, load_balancer_dimension, target_group_dimension
from ecs_guardrail.adapters.store import keys
from ecs_guardrail.adapters.store.table import ConditionFailedError
from ecs_guardrail.adapters.store.watchdog_state import ClusterView, WatchdogState
from ecs_guardrail.adapters.taskdef import TaskDefinitions
from ecs_guardrail.core.alert import (
    Alert,
    LogStream,
    Where,
    alert_links,
    decision_alert,
    job_failure_alert,
    job_summary_alert,
    mass_alert,
    recovery_alert,
)
from ecs_guardrail.core.classify import StopKind, classify_stop, is_stop_event, job_failed, remembered_per_task
from ecs_guardrail.core.entitlement import DeploymentEvent, EntitlementFacts, ScalableTargetFacts, entitlement
from ecs_guardrail.core.episode import (
    ActionStatus,
    AlertStatus,
    DeploymentNote,
    Episode,
    EpisodeEnd,
    RecoveryStatus,
    ServiceSummary,
    add_deployment,
    add_failure,
    add_spot,
    ended_by_steady,
    mark_restored,
    note_activity,
    note_steady,
    open_episode,
    reevaluated,
)
from ecs_guardrail.core.errors import (
    EventRejectedError,
    GuardrailError,
    ScalingSuspendError,
    ServiceAccessDeniedError,
    ServiceNotFoundError,
)
from ecs_guardrail.core.events import DeploymentStateChange, ServiceAction, TaskStateChange, parse_event
from ecs_guardrail.core.links import arn_parts, log_stream_name, partition_of
from ecs_guardrail.core.policy import (
    Action,
    Decision,
    Entitlement,
    Failure,
    Reason,
    Trigger,
    decide,
    detect,
    fleet_view,
    is_alert_only_cluster,
)
from ecs_guardrail.core.records import decision_from_record, decision_record
from ecs_guardrail.handlers.runtime import Runtime, lambda_runtime, logger, metrics

__all__ = ["handler", "process", "Watchdog", "AlertDeliveryError", "DecisionInProgressError", "USES"]

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
}

#: ECS service action names the watchdog reads (``detail.eventName``)
IMPAIRED = "SERVICE_TASK_START_IMPAIRED"
STEADY = "SERVICE_STEADY_STATE"
#: seconds kept back from the Lambda's remaining time when taking a lease
_LEASE_MARGIN_S = 5.0


class AlertDeliveryError(GuardrailError):
    """Every alert sink failed. Raised after the decision is recorded, so Lambda retries the alert.

    ``outcome`` is what the invocation decided (the decision is already in the history table).
    """

    def __init__(self, message: str, outcome: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.outcome = outcome or {}


class DecisionInProgressError(GuardrailError):
    """Another invocation holds the lease of this service's unfinished episode. Raised by the Lambda
    entry point so that Lambda retries the event later and resumes the work if that invocation died
    (Powertools idempotency's ``IdempotencyAlreadyInProgressError`` plays the same part)."""


@dataclass(frozen=True, slots=True)
class _Known:
    """What a decision read that its action can reuse in the same invocation (no second read)."""

    facts: ServiceFacts | None
    scalable: ScalableTargetFacts | None
    view: ClusterView


def _failure(event: TaskStateChange, kind: StopKind, cause: str | None,
             exit_codes: tuple[tuple[str, int | None], ...], service: str) -> Failure:
    d = event.detail
    return Failure(service=service, time=event.time, kind=kind, task_arn=d.task_arn,
                   availability_zone=d.availability_zone, stop_code=d.stop_code, reason=d.stopped_reason,
                   cause=cause, exit_codes=exit_codes, task_definition_arn=d.task_definition_arn)


def _exit_text(exit_codes: tuple[tuple[str, int | None], ...], essential: frozenset[str] | None) -> str:
    """The exit code a job summary reports: the first failing essential container's (any container's
    when the essential ones are unknown), ``"unknown"`` when the event has none."""
    codes = dict(exit_codes)
    names = sorted(essential) if essential else [n for n, _ in exit_codes]
    for name in names:
        code = codes.get(name)
        if code != 0:
            return "unknown" if code is None else str(code)
    return "unknown"


class Watchdog:
    """The recipe above over one :class:`Runtime` for one invocation.

    ``decisions`` collects what this invocation decided (public JSON shape); ``lease_s`` is how long
    its lease lasts (seconds, from the Lambda context's remaining time).
    """

    def __init__(self, rt: Runtime, context: Any = None) -> None:
        self.rt = rt
        self.config = rt.settings.policy()
        self.state: WatchdogState = rt.history.state
        self.owner = f"{getattr(context, 'aws_request_id', 'local')}/{uuid.uuid4().hex[:8]}"
        remaining = getattr(context, "get_remaining_time_in_millis", None)
        self.lease_s = max(1.0, (remaining() / 1000.0 if remaining else 60.0) - _LEASE_MARGIN_S)
        self.decisions: list[dict[str, Any]] = []
        self.alerts_failed: list[str] = []
        self.alerts_sent = 0
        self._arns: dict[str, str] = {}  # cluster key -> an ARN of the cluster (account, region, partition)

    # -------------------------------------------------------------- where
    def _where(self, cluster: str, arn: str) -> tuple[str, str | None]:
        """The cluster key of the watchdog's state, and ``"account A, region R"`` when not home."""
        parts = arn.split(":")
        home = self.rt.home
        if home is None or len(parts) < 6 or (parts[4], parts[3]) == home:
            ck, foreign = cluster, None
        else:
            ck, foreign = keys.cluster_key(cluster, parts[4], parts[3]), f"account {parts[4]}, region {parts[3]}"
        if len(parts) >= 6:
            self._arns.setdefault(ck, arn)
        return ck, foreign

    def _place(self, ck: str, cluster: str, service: str | None = None, family: str | None = None) -> Where:
        """Account, region and partition of cluster key ``ck``: from an ARN of the cluster seen in this
        invocation, else the cluster key (``NAME@ACCOUNT@REGION``), else the watchdog's home."""
        partition, region, account = arn_parts(self._arns.get(ck))
        if region is None and "@" in ck:
            _, account, region = ck.split("@", 2)
        if region is None and self.rt.home is not None:
            account, region = self.rt.home
        region = region or self.rt.history.region
        return Where(cluster=cluster, service=service, family=family, account=account, region=region,
                     partition=partition or partition_of(region or ""))

    def _logs(self, failures: tuple[Failure, ...], region: str | None) -> tuple[LogStream, ...]:
        """The ``awslogs`` stream of each failure's task (its first failing container that logs with
        ``awslogs`` and a stream prefix), newest five; read from the cached task definitions."""
        out: list[LogStream] = []
        for f in failures[-5:]:
            if not f.task_definition_arn:
                continue
            dests = self._taskdefs().log_destinations(f.task_definition_arn)
            failing = [n for n, c in f.exit_codes if c != 0] + [n for n, c in f.exit_codes if c == 0]
            for name in failing + sorted(set(dests) - set(failing)):
                d = dests.get(name)
                if d is not None and d.prefix and (d.region or region):
                    task_id = f.task_arn.rsplit("/", 1)[-1]
                    out.append(LogStream(task_id, name, d.group, log_stream_name(d.prefix, name, task_id),
                                         d.region or region or ""))
                    break
        return tuple(out)

    def _with_task_definitions(self, ck: str, service: str, failures: tuple[Failure, ...]) -> tuple[Failure, ...]:
        """``failures`` (from a decision record, which does not carry it) with each task's task
        definition ARN, from the service's summary where it still holds the task."""
        if all(f.task_definition_arn for f in failures):
            return failures
        s = self.state.load(ck, service)
        known = {f.task_arn: f.task_definition_arn for f in s.crashes + s.kills if f.task_definition_arn}
        return tuple(replace(f, task_definition_arn=f.task_definition_arn or known.get(f.task_arn)) for f in failures)

    def _links(self, where: Where, failures: tuple[Failure, ...] = ()) -> Any:
        return alert_links(where, logs=self._logs(failures, where.region), runbook=self.rt.settings.RUNBOOK_URL)

    # -------------------------------------------------------------- recovery
    def _recover(self, ck: str, cluster: str, service: str) -> bool:
        """Send the episode's owed recovery message, once: the claim (``PENDING`` -> ``SENT``) is a
        conditional write, so of two invocations that both see it owed exactly one sends it. Returns
        True when this invocation sent it (or tried: a delivery that fails is logged and marked
        ``FAILED``, never re-sent)."""
        def claim(s: ServiceSummary) -> ServiceSummary | None:
            ep = s.episode
            if ep is None or ep.recovery is not RecoveryStatus.PENDING:
                return None
            return replace(s, episode=replace(ep, recovery=RecoveryStatus.SENT))

        s, claimed = self.state.update(ck, service, claim)
        ep = s.episode
        if not claimed or ep is None:
            return False
        where = self._place(ck, cluster, service)
        detail = None
        if ep.ended_by is EpisodeEnd.RESTORED and ep.acted:
            detail = f"Desired count back to {ep.previous_desired_count}." if ep.previous_desired_count else None
        alert = recovery_alert(where, action=ep.action, reason=ep.reason.value, decision_time=ep.decision_time,
                               ended_by=(ep.ended_by or EpisodeEnd.QUIET).value,
                               ended_at=ep.ended_at or ep.last_failure, detail=detail, links=self._links(where))
        if not self._deliver(alert):
            logger.error("recovery alert not delivered; not retried", extra={"cluster": ck, "service": service})
            decided = ep.decision_time

            def failed(x: ServiceSummary) -> ServiceSummary | None:
                e = x.episode
                if e is None or e.decision_time != decided or e.recovery is not RecoveryStatus.SENT:
                    return None
                return replace(x, episode=replace(e, recovery=RecoveryStatus.FAILED))

            self.state.update(ck, service, failed)
        metrics.add_metric(name="RecoveriesAlerted", unit="Count", value=1)
        return True

    def _recover_if_owed(self, ck: str, cluster: str, s: ServiceSummary) -> ServiceSummary:
        """:meth:`_recover` when ``s`` owes one; returns the summary as stored afterwards."""
        if s.episode is None or s.episode.recovery is not RecoveryStatus.PENDING:
            return s
        self._recover(ck, cluster, s.service)
        return self.state.load(ck, s.service)

    # -------------------------------------------------------------- entry points
    def on_task(self, event: TaskStateChange) -> dict[str, Any]:
        d = event.detail
        if not is_stop_event(d):
            return {"status": "ignored", "why": "not a stop"}
        verdict = classify_stop(d)
        if not verdict.final:
            return {"status": "ignored", "why": "stop notice without a stop code; waiting for the STOPPED event"}
        ck, foreign = self._where(d.cluster, d.cluster_arn)
        if d.service is None:
            if d.family is not None:
                return self._job(event, ck, d.family, verdict.kind, verdict.cause, verdict.exit_codes)
            return {"status": "ignored", "why": f"group {d.group!r} is not a service"}
        service = d.service
        if remembered_per_task(verdict):  # a Spot or termination notice: the task's later STOPPED is not a crash
            _, new = self.state.update(ck, service, lambda s: add_spot(s, d.task_arn, event.time))
            return {"status": "spot" if verdict.kind is StopKind.SPOT else "notice", "new": new}
        if not verdict.kind.counts_as_failure:
            return {"status": "ignored", "why": f"{verdict.kind.value} stop does not count"}
        failure = _failure(event, verdict.kind, verdict.cause, verdict.exit_codes, service)
        config = self.config

        def file(s: ServiceSummary) -> ServiceSummary | None:
            new = add_failure(s, failure, config.keep, edge=config.fleet_signal_min_failures, horizon=config.horizon)
            return None if new is None else (note_activity(new, failure.time, config.window) or new)

        s, new = self.state.update(ck, service, file)
        s = self._recover_if_owed(ck, d.cluster, s)
        if new:
            metrics.add_metric(name="CrashesCounted" if verdict.kind is StopKind.CRASH else "HealthCheckKills",
                               unit="Count", value=1)
        out = self._evaluate(ck, d.cluster, d.cluster_arn, service, s, event.time, impaired=False, foreign=foreign)
        if not new and out.get("status") == "counted":
            return {"status": "duplicate"}
        return out

    def on_service_action(self, event: ServiceAction) -> dict[str, Any]:
        name = event.detail.event_name
        arn = event.detail.cluster_arn or event.resources[0]
        ck, foreign = self._where(event.cluster, arn)
        service = event.service
        if name == STEADY:
            s, changed = self.state.update(ck, service, lambda x: note_steady(x, event.time))
            closed = changed and s.episode_end is EpisodeEnd.STEADY_STATE and s.counted_after == event.time
            if not closed:  # a restore (another process) may have made a recovery owed since this cache
                s = self.state.load(ck, service, fresh=True)
            recovered = self._recover_if_owed(ck, event.cluster, s) is not s
            return {"status": "episode_closed" if closed else "ignored", "why": STEADY,
                    **({"recovered": True} if recovered else {})}
        if name != IMPAIRED:
            return {"status": "ignored", "why": f"{name} is recorded, not acted on"}
        s, _ = self.state.update(ck, service, lambda x: note_activity(x, event.time, self.config.window))
        s = self._recover_if_owed(ck, event.cluster, s)
        return self._evaluate(ck, event.cluster, arn, service, s, event.time, impaired=True, foreign=foreign)

    def on_deployment(self, event: DeploymentStateChange) -> dict[str, Any]:
        d = event.detail
        ck, _ = self._where(event.cluster, event.resources[0])
        note = DeploymentNote(event.time, d.event_name, getattr(d, "deployment_id", None), d.reason)
        s, new = self.state.update(ck, event.service, lambda s: add_deployment(s, note))
        self._recover_if_owed(ck, event.cluster, s)
        return {"status": "deployment_noted" if new else "duplicate", "event": d.event_name}

    # -------------------------------------------------------------- standalone jobs
    def _job(self, event: TaskStateChange, ck: str, family: str, kind: StopKind, cause: str | None,
             exit_codes: tuple[tuple[str, int | None], ...]) -> dict[str, Any]:
        d = event.detail
        if d.last_status.upper() != "STOPPED":
            return {"status": "ignored", "why": "standalone task: waiting for the STOPPED event's exit codes"}
        if exit_codes and all(c == 0 for _, c in exit_codes):
            return self._job_ok(event, ck, family, "standalone task finished normally")
        if kind is not StopKind.CRASH:
            return {"status": "ignored", "why": f"standalone task stopped ({kind.value}): not a failed run"}
        essential = self._taskdefs().essential_containers(d.task_definition_arn) if d.task_definition_arn else None
        failed, why = job_failed(exit_codes, essential)
        if not failed:
            return self._job_ok(event, ck, family, f"standalone task finished normally ({why})")
        failure = replace(_failure(event, kind, cause, exit_codes, f"family:{family}"),
                          reason=f"{why}; {d.stopped_reason or 'no reason'}")
        window = self.config.window
        filing = self.state.job_failure(ck, family, d.task_arn, event.time, window, _exit_text(exit_codes, essential))
        if filing is None:
            return {"status": "duplicate"}
        metrics.add_metric(name="JobFailures", unit="Count", value=1)
        if filing.opened:
            where = self._place(ck, d.cluster, family=family)
            links = self._links(where, (failure,))
            minutes = self.config.window_minutes
            if filing.closed is not None:
                start, count, last_exit, last_time = filing.closed
                alert = job_summary_alert(d.cluster, family, failures=count, window_minutes=minutes,
                                          window_start=start, last_exit=last_exit, last_time=last_time,
                                          next_failure=failure, where=where, links=links)
            else:
                alert = job_failure_alert(d.cluster, family, failure, where=where, links=links,
                                          window_minutes=minutes, window_end=event.time + window)
            self._deliver(alert)
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
        where = self._place(ck, d.cluster, family=family)
        self._deliver(job_summary_alert(d.cluster, family, failures=count, window_minutes=self.config.window_minutes,
                                        window_start=start, last_exit=last_exit, last_time=last_time,
                                        ok_run_at=event.time, where=where, links=self._links(where, ())))
        return {"status": "ignored", "why": why, "cluster": d.cluster, "family": family, "summarised": count}

    # -------------------------------------------------------------- decide
    def _evaluate(self, ck: str, cluster: str, cluster_arn: str, service: str, s: ServiceSummary, at: datetime,
                  *, impaired: bool, foreign: str | None) -> dict[str, Any]:
        ep = s.episode
        if ep is not None and ep.unfinished:
            resumed = self._resume(ck, service, s)
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
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") not in ("AccessDeniedException", "ClusterNotFoundException"):
                raise
            count = 0
        return facts, why, count

    def _taskdefs(self) -> TaskDefinitions:
        """DescribeTaskDefinition answers, cached per ARN for the life of the execution environment."""
        cached = self.rt.cache.get("taskdefs")
        if cached is None:
            cached = self.rt.cache["taskdefs"] = TaskDefinitions(self.rt.clients("ecs"))
        return cached

    def _serving(self, facts: ServiceFacts, at: datetime) -> tuple[Any, ...]:
        """The newest HealthyHostCount minimum per target group within 3 minutes of ``at`` (one
        DescribeTargetGroups and one GetMetricData per decision; only for a service behind a load balancer)."""
        if not facts.target_group_arns:
            return ()
        lbs = TargetGroups(self.rt.clients("elbv2")).load_balancers(list(facts.target_group_arns))
        series = [Series(target_group_dimension(arn), load_balancer_dimension(lb))
                  for arn in facts.target_group_arns for lb in lbs.get(arn, ())]
        if not series:
            return ()
        metrics_source = self.rt.cache.get("metrics") or HealthyHostCount(self.rt.clients("cloudwatch"))
        # evidence names the target group as operators know it (targetgroup/NAME/ID -> NAME)
        return tuple(replace(x, target_group=x.target_group.split("/")[1] if x.target_group.count("/") == 2
                             else x.target_group) for x in metrics_source.newest_healthy(series, at))

    def _entitle(self, trigger: Trigger, cluster: str, cluster_arn: str, facts: ServiceFacts | None,
                 why: str | None, foreign: str | None, s: ServiceSummary) -> tuple[Entitlement,
                                                                                  ScalableTargetFacts | None]:
        """Rule 4 over the facts gathered once for this decision (core/entitlement.py decides)."""
        scalable = None
        serving: tuple[Any, ...] = ()
        if facts is not None and trigger.kind != "health_check_kills":
            try:
                scalable = ScalableTargets(self.rt.clients("application-autoscaling")).describe(cluster, s.service)
            except ScalingSuspendError as exc:
                logger.warning("scalable target unreadable", extra={"error": str(exc)})
            serving = self._serving(facts, trigger.time)
        base = facts.entitlement_fields() if facts is not None else {
            "exists": False, "access_denied": bool(why and "access denied" in why.lower())}
        ef = EntitlementFacts(
            cluster=cluster, service=s.service, **base,
            deployment_events=tuple(DeploymentEvent(n.time, n.event_name, n.deployment_id, n.reason)
                                    for n in s.deployments),
            serving=serving,
            alert_only_cluster=is_alert_only_cluster(self.config, cluster, facts.cluster_arn if facts else cluster_arn),
            alert_only_patterns=self.config.alert_only_clusters, elsewhere=foreign, dry_run=self.config.dry_run,
            scalable_target=scalable,
        )
        v = entitlement(trigger.kind, ef, trigger.time)
        if v.entitled:
            return Entitlement(), scalable
        evidence = dict(v.evidence)
        if why and not facts:
            evidence.setdefault("ecs", why)
        return Entitlement(Reason(v.reason.value), v.message, evidence), scalable

    def _held(self, ck: str, cluster: str, service: str, view: ClusterView, bound: int,
              at: datetime) -> tuple[str, ...]:
        """The other services held at zero; when they fill the bound, re-read them from ECS and free the
        slot of any an operator raised (rule 5)."""
        held = tuple(h for h in view.held() if h != service)
        if len(held) + 1 <= bound or self.rt.ecs is None:
            return held
        still = []
        for other in held:
            try:
                facts = self.rt.ecs.describe(cluster, other)
            except ServiceNotFoundError:
                facts = None
            if facts is not None and facts.desired_count > 0:
                self.state.release_slot(ck, other, view)
                self._mark_restored(ck, cluster, other, at)
                logger.info("held service raised by an operator: slot freed", extra={"service": other})
            else:
                still.append(other)
        return tuple(still)

    def _mark_restored(self, ck: str, cluster: str, service: str, at: datetime) -> None:
        """An operator raised the desired count of ``service`` (seen at event time ``at``): its
        episode ends restored, and its recovery message goes out."""
        def restored(s: ServiceSummary) -> ServiceSummary | None:
            ep = s.episode
            if ep is None or not ep.held_at_zero:
                return None
            return mark_restored(s, at)

        s, _ = self.state.update(ck, service, restored)
        self._recover_if_owed(ck, cluster, s)

    def _decide(self, ck: str, cluster: str, cluster_arn: str, s: ServiceSummary, trigger: Trigger,
                foreign: str | None) -> dict[str, Any]:
        service = s.service
        facts, why, count = self._facts(cluster, service, foreign)
        view = self.state.cluster(ck)
        summaries = [x for x in view.summaries if x.service != service] + [s]
        count = count or len(summaries)
        fleet = fleet_view(self.config, service, summaries, trigger.time, count)
        ent, scalable = self._entitle(trigger, cluster, cluster_arn, facts, why, foreign, s)
        held = (self._held(ck, cluster, service, view, fleet.bound, trigger.time) if ent.reason is None
                else view.held())
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
        if before is not None and before.previous_desired_count is not None:
            prev = before.previous_desired_count
        record = decision_record(decision, previous_desired_count=prev, dry_run=self.config.dry_run,
                                 escalation=trigger.escalation)
        ep = Episode(decision_time=decision.time, last_failure=max(trigger.time, s.newest_failure or trigger.time),
                     action=decision.action, reason=decision.reason, trigger=trigger.kind,
                     action_status=ActionStatus.PENDING if decision.acts else ActionStatus.NONE,
                     alert_status=AlertStatus.PENDING, previous_desired_count=prev,
                     previous_suspended=before.previous_suspended if before is not None else None,
                     lease_owner=self.owner,
                     lease_until=time.time() + self.lease_s,
                     escalated=trigger.escalation or bool(s.episode and s.episode.escalated and (
                         trigger.escalation or trigger.reevaluation)))
        new = open_episode(s, ep)
        try:
            s = self.state.claim(ck, s, new, record)
        except ConditionFailedError:
            logger.info("another invocation claimed this episode first", extra={"cluster": ck, "service": service})
            return {"status": "lost_race"}
        metrics.add_metric(name=f"Decision_{decision.action.value}", unit="Count", value=1)
        logger.info("decision", extra={"decision": record})
        record = self._finish(ck, s, record, _Known(facts, scalable, view))
        self.decisions.append(record)
        s, ended = self.state.update(ck, service, ended_by_steady)  # ECS reported steady at or after T already
        if ended:
            self._recover_if_owed(ck, cluster, s)
        return {"status": "decided", "decision": record}

    # -------------------------------------------------------------- act, alert, complete (under the lease)
    def _mine(self, ck: str, service: str, **changes: Any) -> ServiceSummary:
        """Change the episode while this invocation holds its lease.

        Raises:
            DecisionInProgressError: the lease was lost (expired and taken over).
        """
        def change(s: ServiceSummary) -> ServiceSummary | None:
            ep = s.episode
            if ep is None or ep.lease_owner != self.owner:
                raise DecisionInProgressError(f"{ck}/{service}: lease lost to {ep and ep.lease_owner}")
            return replace(s, episode=replace(ep, **changes))

        return self.state.update(ck, service, change)[0]

    def _finish(self, ck: str, s: ServiceSummary, record: dict[str, Any],
                known: _Known | None = None) -> dict[str, Any]:
        """Do what the claimed episode still owes, in order: the action, the alert, the completion (the
        alert's status and the lease's release are one write). ``known``: facts the decision just read."""
        service, ep = s.service, s.episode
        assert ep is not None
        cluster = record["cluster"]
        if ep.action_status is ActionStatus.PENDING:
            record, s = self._act(ck, cluster, s, record, known)
            ep = s.episode
            assert ep is not None
        done: dict[str, Any] = {"lease_owner": None, "lease_until": 0.0}
        if ep.alert_status in (AlertStatus.PENDING, AlertStatus.FAILED):
            status, owner = self._alert(ck, record, owner=ep.cluster_alert_owner)
            done.update(alert_status=status, cluster_alert_owner=owner)
        self._mine(ck, service, **done)
        return record

    def _act(self, ck: str, cluster: str, s: ServiceSummary, record: dict[str, Any],
             known: _Known | None = None) -> tuple[dict[str, Any], ServiceSummary]:
        ep = s.episode
        assert ep is not None and self.rt.ecs is not None
        service = s.service
        view = known.view if known is not None else self.state.cluster(ck)
        slot = self.state.take_slot(ck, service, ep.decision_time, max(1, int(record.get("bound") or 1)), view)
        if slot is None:  # another service took the last slot between the decision and now
            held = [x for x in self.state.cluster(ck).held() if x != service]
            record = {**record, "action": Action.HOLD.value, "reason": Reason.BLAST_RADIUS_CAP.value,
                      "message": f"held: {', '.join(held)} took the last held-at-zero slot of {cluster} "
                                 f"(bound {record.get('bound')}). " + record["message"],
                      "evidence": {"held_at_zero": held}}
            self.state.amend_decision(ck, record)
            return record, self._mine(ck, service, action=Action.HOLD, reason=Reason.BLAST_RADIUS_CAP,
                                      action_status=ActionStatus.NONE)
        facts = known.facts if known is not None and known.facts is not None else self.rt.ecs.describe(cluster, service)
        prev = ep.previous_desired_count if ep.previous_desired_count is not None else facts.desired_count
        suspended = ep.previous_suspended
        if suspended is None:
            scaling = ScalableTargets(self.rt.clients("application-autoscaling"))
            try:
                target = known.scalable if known is not None else scaling.describe(cluster, service)
                if target is not None:
                    suspended = scaling.suspend(target).to_api()
                    self._mine(ck, service, previous_suspended=suspended)
            except ScalingSuspendError as exc:  # never scale what a scaling policy would put back unseen
                self.state.release_slot(ck, service)
                record = {**record, "action": Action.ALERT_ONLY.value, "reason": Reason.SCALING_SUSPEND_FAILED.value,
                          "message": f"alert-only: could not suspend the service's Application Auto Scaling "
                                     f"scalable target ({exc.reason}), so it was not scaled to 0 (a scaling "
                                     f"policy would put the tasks back). " + record["message"],
                          "evidence": {**record.get("evidence", {}), "autoscaling_error": exc.reason}}
                self.state.amend_decision(ck, record)
                return record, self._mine(ck, service, action=Action.ALERT_ONLY,
                                          reason=Reason.SCALING_SUSPEND_FAILED, action_status=ActionStatus.NONE)
        self.rt.ecs.scale_to_zero(facts, prev)
        metrics.add_metric(name="ServicesScaledToZero", unit="Count", value=1)
        return record, self._mine(ck, service, action_status=ActionStatus.DONE, previous_desired_count=prev)

    def _alert(self, ck: str, record: dict[str, Any], owner: bool = False) -> tuple[AlertStatus, bool]:
        """Send the episode's alert; ``owner``: this episode already opened the mass event (its cluster
        alert failed before and is re-sent, never reported as covered by itself)."""
        decision = decision_from_record(record)
        if decision.reason is Reason.MASS_UNHEALTHY:
            if not owner and not self.state.open_mass_event(ck, decision.time, self.config.window):
                return AlertStatus.COVERED, False
            where = self._place(ck, decision.cluster)
            ok = self._deliver(mass_alert(decision, list(decision.failing), where=where, links=self._links(where)))
            if not ok:
                self.alerts_failed.append(f"{decision.cluster} (cluster alert)")
            return (AlertStatus.SENT if ok else AlertStatus.FAILED), True
        where = self._place(ck, decision.cluster, decision.service)
        failures = self._with_task_definitions(ck, decision.service, decision.last_failures)
        ok = self._deliver(decision_alert(decision, previous_desired_count=record.get("previous_desired_count"),
                                          undo=self._undo_command(decision), where=where,
                                          links=self._links(where, failures)))
        if not ok:
            self.alerts_failed.append(f"{decision.cluster}/{decision.service}")
        return (AlertStatus.SENT if ok else AlertStatus.FAILED), False

    def _resume(self, ck: str, service: str, s: ServiceSummary) -> dict[str, Any] | None:
        """Take over an unfinished episode whose lease expired; ``None`` when there is nothing to do,
        ``{"status": "in_progress"}`` while another invocation's lease runs."""
        ep = s.episode
        if ep is None or not ep.unfinished:
            return None
        now = time.time()
        if ep.leased(now) and ep.lease_owner != self.owner:
            return {"status": "in_progress", "cluster": ck, "service": service}

        def take(x: ServiceSummary) -> ServiceSummary | None:
            e = x.episode
            if e is None or not e.unfinished or (e.leased(time.time()) and e.lease_owner != self.owner):
                return None
            return replace(x, episode=replace(e, lease_owner=self.owner, lease_until=time.time() + self.lease_s))

        s, taken = self.state.update(ck, service, take)
        if not taken:
            return {"status": "in_progress", "cluster": ck, "service": service}
        ep = s.episode
        assert ep is not None
        record = self.state.decision(ck, service, ep.decision_time)
        if record is None:  # cannot happen with the transaction; never act without the record
            logger.error("episode without its decision record", extra={"cluster": ck, "service": service})
            self._mine(ck, service, action_status=ActionStatus.NONE, alert_status=AlertStatus.FAILED,
                       lease_owner=None, lease_until=0.0)
            return {"status": "error", "why": "decision record missing"}
        logger.info("resuming an unfinished episode", extra={"cluster": ck, "service": service,
                                                             "action_status": ep.action_status.value,
                                                             "alert_status": ep.alert_status.value})
        record = self._finish(ck, s, record)
        return {"status": "resumed", "cluster": ck, "service": service, "decision": record}

    def _undo_command(self, decision: Decision) -> str | None:
        """The exact ``restore`` command for a scale-down (table and region included), else ``None``."""
        if decision.action is not Action.SCALE_TO_ZERO:
            return None
        region = self.rt.history.region
        return (f"ecs-guardrail restore --cluster {decision.cluster} --service {decision.service} "
                f"--table {self.rt.history.table}" + (f" --region {region}" if region else ""))

    def _deliver(self, alert: Alert) -> bool:
        results = self.rt.send(alert)
        if results and any(r.ok for r in results):
            self.alerts_sent += 1
            return True
        return not results  # no sink configured: nothing failed, nothing to retry


def home_of(context: Any) -> tuple[str, str] | None:
    """``(account, region)`` of the running function, from the Lambda context's function ARN."""
    parts = str(getattr(context, "invoked_function_arn", "") or "").split(":")
    return (parts[4], parts[3]) if len(parts) >= 6 and parts[4].isdigit() and parts[3] else None


def process(raw: Any, rt: Runtime, context: Any = None) -> tuple[dict[str, Any], Watchdog]:
    """Handle one EventBridge event. Returns the outcome and the :class:`Watchdog` (its decisions).

    A malformed event is logged with its reason and returns ``{"status": "rejected"}`` (the recorder
    keeps it in the table); it is never counted.
    """
    wd = Watchdog(rt, context)
    try:
        event = parse_event(raw)
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


def invoke(raw: Any, rt: Runtime, context: Any = None) -> dict[str, Any]:
    """:func:`process` plus the Lambda's outcome shape and errors (shared by Lambda and ``replay``).

    Raises:
        AlertDeliveryError: every alert sink failed after the decision was recorded (retried by Lambda).
        DecisionInProgressError: another invocation holds the service's lease (retried by Lambda).
    """
    outcome, wd = process(raw, rt, context)
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

    Raises:
        SettingsError: an invalid setting; nothing is decided (the event goes to the retry / DLQ path).
        AlertDeliveryError, DecisionInProgressError: see :func:`invoke`.
    """
    metrics.add_metric(name="EventsReceived", unit="Count", value=1)
    return invoke(event, lambda_runtime("watchdog", home_of(context)), context)


