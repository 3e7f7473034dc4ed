"""Watchdog Lambda: stopped tasks and service actions in, decisions, actions and alerts out.

Recipe per event (ARCHITECTURE.md, "Decision policy"):

1. parse and classify the stop; remember the verdict once per task ARN (a Spot notice's verdict wins);
2. load the cluster's window from the history table (one Query) and :func:`~ecs_guardrail.core.policy.detect`;
3. claim the service's episode and record the decision (one transaction) **before** anything else;
4. act within the blast-radius cap (conditional slot), tag the previous desired count, scale to 0;
5. alert: one per service per episode, one per cluster for a mass event.

A redelivered event resumes an episode whose action was recorded but not confirmed, or whose alert
failed, and otherwise changes nothing.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from ecs_guardrail.adapters.alerts import SnsTopic, WebhookUrl
from ecs_guardrail.adapters.ecs import EcsService, ServiceFacts
from ecs_guardrail.adapters.history import Episode, HistoryStore, ServiceState, iso
from ecs_guardrail.core.alert import decision_alert, job_failure_alert, mass_alert
from ecs_guardrail.core.classify import StopKind, classify_stop, is_stop_event
from ecs_guardrail.core.errors import EventRejectedError, GuardrailError, ServiceNotFoundError
from ecs_guardrail.core.events import ServiceAction, TaskStateChange, parse_event
from ecs_guardrail.core.policy import (
    Action,
    Decision,
    Failure,
    Reason,
    Scope,
    decide,
    detect,
    episode_is_open,
    fleet_view,
)
from ecs_guardrail.handlers.runtime import Runtime, load_settings_or_fail, logger, metrics, runtime

__all__ = ["handler", "process", "decision_record", "AlertDeliveryError", "USES"]

#: adapters whose declared calls this function makes; walked by the IAM test
USES = {
    "history": HistoryStore.IAM_ACTIONS,
    "ecs": EcsService.IAM_ACTIONS,
    "sns": SnsTopic.IAM_ACTIONS,
    "slack_secret": WebhookUrl.IAM_ACTIONS,
    # issue 9 (entitlement): declared here until the adapters' own IAM_ACTIONS land on merge
    "entitlement": {
        "scalable_target": frozenset({"application-autoscaling:RegisterScalableTarget"}),
        "any": frozenset({
            "application-autoscaling:DescribeScalableTargets", "ecs:DescribeTaskDefinition",
            "cloudwatch:GetMetricData", "elasticloadbalancing:DescribeTargetGroups",
        }),
    },
}

#: ECS service action names the watchdog reads (``detail.eventName``)
IMPAIRED = "SERVICE_TASK_START_IMPAIRED"
STEADY = "SERVICE_STEADY_STATE"


class AlertDeliveryError(GuardrailError):
    """Every alert sink failed. Raised after the decision is recorded, so Lambda retries the alert.

    ``outcome`` is what the invocation decided (the decision is already in the history table).
    """

    def __init__(self, message: str, outcome: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.outcome = outcome or {}


def decision_record(d: Decision, *, previous_desired_count: int | None = None,
                    dry_run: bool = False) -> dict[str, Any]:
    """The public JSON shape of a decision (SCENARIOS.md): field names are a contract."""
    return {
        "type": "decision",
        "time": iso(d.time),
        "cluster": d.cluster,
        "service": d.service,
        "action": d.action.value,
        "reason": d.reason.value,
        "crashes_in_window": d.crashes_in_window,
        "health_check_kills_in_window": d.health_check_kills_in_window,
        "trigger": d.trigger,
        "failing_services": d.failing_services,
        "services_in_cluster": d.services_in_cluster,
        "bound": d.bound,
        "previous_desired_count": previous_desired_count,
        "dry_run": dry_run,
        "message": d.message,
        "last_stops": [
            {"task": f.task_arn.rsplit("/", 1)[-1], "time": iso(f.time), "kind": f.kind.value,
             "stop_code": f.stop_code, "reason": f.reason, "cause": f.cause,
             "exit_codes": {n: c for n, c in f.exit_codes}, "availability_zone": f.availability_zone}
            for f in d.last_failures
        ],
    }


def _failure(event: TaskStateChange, kind: StopKind, cause: str | None,
             exit_codes: tuple[tuple[str, int | None], ...]) -> Failure:
    d = event.detail
    return Failure(
        service=d.service or d.family or (d.group or ""),
        time=event.time,
        kind=kind,
        task_arn=d.task_arn,
        availability_zone=d.availability_zone,
        stop_code=d.stop_code,
        reason=d.stopped_reason,
        cause=cause,
        exit_codes=exit_codes,
    )


class Watchdog:
    """The recipe above over one :class:`Runtime`. ``decisions`` collects what this invocation decided."""

    def __init__(self, rt: Runtime, home: tuple[str, str] | None = None) -> None:
        self.rt = rt
        self.home = home  # (account, region) this watchdog may act in; None: not known, not checked
        self.config = rt.settings.policy()
        self.decisions: list[dict[str, Any]] = []
        self.alerts_failed: list[str] = []
        self.alerts_sent = 0

    def _cluster_key(self, cluster: str, arn: str) -> tuple[str, str | None]:
        """The cluster's key in the watchdog's state, and ``"account A, region R"`` when it is not home.

        In cross-account mode events of member accounts reach this watchdog: a cluster of the same
        name elsewhere must never count toward (or be acted on as) the local one. ``@`` cannot appear
        in a cluster name, so the keys cannot collide.
        """
        parts = arn.split(":")
        if self.home is None or len(parts) < 6 or (parts[4], parts[3]) == self.home:
            return cluster, None
        return f"{cluster}@{parts[4]}@{parts[3]}", f"account {parts[4]}, region {parts[3]}"

    # -------------------------------------------------------------- entry points
    def on_task(self, event: TaskStateChange) -> dict[str, Any]:
        d = event.detail
        cluster, foreign = self._cluster_key(d.cluster, d.cluster_arn)
        if not is_stop_event(d):
            return {"status": "ignored", "why": "not a stop"}
        verdict = classify_stop(d)
        if not verdict.final:
            return {"status": "ignored", "why": "stop notice without a stop code; waiting for the STOPPED event"}
        kind = verdict.kind
        family = d.family if not d.service else None
        if kind not in (StopKind.CRASH, StopKind.HEALTH_CHECK_KILL, StopKind.SPOT):
            return {"status": "ignored", "why": f"{kind.value} stop does not count"}
        if family is not None:
            return self._standalone(event, cluster, family, verdict.kind, verdict.cause, verdict.exit_codes)
        if d.service is None:
            return {"status": "ignored", "why": f"group {d.group!r} is not a service"}
        failure = _failure(event, kind, verdict.cause, verdict.exit_codes)
        new, old, svc = self.rt.history.record_failure(
            cluster, failure, spot=kind is StopKind.SPOT, prune_before=event.time - 2 * self.config.window)
        if kind is StopKind.SPOT:
            return {"status": "spot", "new": new}
        if svc is None:
            return {"status": "ignored", "why": f"task already classified as {old and old.get('kind')}"}
        if not new:
            # a redelivery: the counting happened; resume unfinished work, and decide if the first
            # delivery failed between counting and deciding (no episode yet; claim_episode keeps it once)
            resumed = self._resume(cluster, d.service, svc.episode)
            if resumed:
                return resumed
            ep = svc.episode
            if ep is None or not (ep.closed or episode_is_open(ep.last_failure, ep.closed, event.time, self.config)):
                out = self._evaluate(cluster, d.cluster_arn, d.service, event.time, svc, impaired=False,
                                     foreign=foreign)
                if out["status"] != "counted":
                    return out
            return {"status": "duplicate"}
        metrics.add_metric(name="CrashesCounted" if kind is StopKind.CRASH else "HealthCheckKills",
                           unit="Count", value=1)
        return self._evaluate(cluster, d.cluster_arn, d.service, event.time, svc, impaired=False, foreign=foreign)

    def on_service_action(self, event: ServiceAction) -> dict[str, Any]:
        name = event.detail.event_name
        if name != IMPAIRED:
            return {"status": "ignored", "why": f"{name} is recorded, not acted on"}
        service = event.service
        cluster, foreign = self._cluster_key(event.cluster, event.detail.cluster_arn or event.resources[0])
        svc = self.rt.history.load_service(cluster, service)
        resumed = self._resume(cluster, service, svc.episode)
        if resumed:
            return resumed
        return self._evaluate(cluster, event.detail.cluster_arn or "", service, event.time, svc, impaired=True,
                              foreign=foreign)

    # -------------------------------------------------------------- steps
    def _standalone(self, event: TaskStateChange, cluster: str, family: str, kind: StopKind, cause: str | None,
                    exit_codes: tuple[tuple[str, int | None], ...]) -> dict[str, Any]:
        d = event.detail
        if d.last_status.upper() != "STOPPED":
            return {"status": "ignored", "why": "standalone task: waiting for the STOPPED event's exit codes"}
        if kind is not StopKind.CRASH or (exit_codes and all(c == 0 for _, c in exit_codes)):
            return {"status": "ignored", "why": "standalone task finished normally"}
        failure = replace(_failure(event, kind, cause, exit_codes), service=f"family:{family}")
        new, _, _ = self.rt.history.record_failure(cluster, failure)
        if not new:
            return {"status": "duplicate"}
        metrics.add_metric(name="JobFailures", unit="Count", value=1)
        self._deliver(job_failure_alert(cluster, family, failure))
        return {"status": "job_failed", "cluster": cluster, "family": family}

    def _resume(self, cluster: str, service: str, ep: Episode | None) -> dict[str, Any] | None:
        """Finish what a killed or failed invocation left: an unconfirmed scale-down, a failed alert."""
        if ep is None or ep.closed:
            return None
        if ep.status == "acting":
            record = dict(ep.decision)
            state = self.rt.history.load_cluster(cluster, ep.decision_time, self.config.window)
            bound = int(record.get("bound") or 1)
            slot = self.rt.history.acquire_slot(cluster, service, ep.decision_time, bound,
                                                self.config.window, state)
            if slot is None:
                self._hold_for_cap(cluster, service, record, bound)
            else:
                facts = self.rt.ecs.describe(cluster, service)  # type: ignore[union-attr]
                prev = ep.previous_desired_count if ep.previous_desired_count is not None else facts.desired_count
                self.rt.ecs.scale_to_zero(facts, prev)  # type: ignore[union-attr]
                self.rt.history.update_episode(cluster, service, status="done")
                logger.info("resumed an unfinished scale-down", extra={"cluster": cluster, "service": service})
            if ep.alert_status != "sent":
                self._alert_for(record, cluster, service, resend=True)
            return {"status": "resumed", "cluster": cluster, "service": service}
        if ep.alert_status == "failed":
            self._alert_for(dict(ep.decision), cluster, service, resend=True)
            return {"status": "alert_resent", "cluster": cluster, "service": service}
        return None

    def _hold_for_cap(self, cluster: str, service: str, record: dict[str, Any], bound: int) -> dict[str, Any]:
        record.update(action="hold", reason=Reason.BLAST_RADIUS_CAP.value,
                      message=f"held: another service took the last action slot of {cluster} "
                              f"(blast-radius cap {bound}). " + record.get("message", ""))
        self.rt.history.update_episode(cluster, service, status="decided", action="hold",
                                       reason=record["reason"], decision=_json(record))
        self.rt.history.update_decision_record(cluster, service, _parse_iso(record["time"]), action="hold",
                                               reason=record["reason"], message=record["message"])
        return record

    def _evaluate(self, cluster: str, cluster_arn: str, service: str, at: datetime,
                  svc: ServiceState, *, impaired: bool, foreign: str | None = None) -> dict[str, Any]:
        ep = svc.episode
        if ep is not None and episode_is_open(ep.last_failure, ep.closed, at, self.config):
            resumed = self._resume(cluster, service, ep)
            if at > ep.last_failure:
                self.rt.history.touch_episode(cluster, service, at)
            return resumed or {"status": "in_episode", "decided": ep.action}
        trigger = detect(self.config, svc.failures, service, at, impaired=impaired)
        if trigger is None:
            return {"status": "counted"}
        ecs = self.rt.ecs
        assert ecs is not None
        facts: ServiceFacts | None = None
        services = 0  # unknown: the bound falls to MIN_ACTIONS_ALLOWED (and without facts: alert only)
        if foreign is None:  # another account's or region's service is neither read nor touched
            try:
                facts = ecs.describe(cluster, service)
            except ServiceNotFoundError as exc:
                logger.warning("service not found; deciding without its tags", extra={"error": str(exc)})
            try:
                services = ecs.count_services(cluster)
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") not in ("AccessDeniedException",
                                                                     "ClusterNotFoundException"):
                    raise
        state = self.rt.history.load_cluster(cluster, trigger.time, self.config.window)
        services = services or len({f.service for f in state.failures})
        fleet = fleet_view(self.config, state.failures, state.scaled_down(), trigger.time, services)
        used = sum(1 for n, (_, t) in state.slots.items() if n < fleet.bound and t >= trigger.time - self.config.window)
        scope = Scope(cluster=cluster, cluster_arn=(facts.cluster_arn if facts else cluster_arn),
                      opted_out=bool(facts and facts.opted_out), readable=facts is not None, elsewhere=foreign)
        decision = decide(self.config, trigger, fleet, scope, free_action_slots=fleet.bound - used)
        prev = facts.desired_count if facts else None
        record = decision_record(decision, previous_desired_count=prev, dry_run=self.config.dry_run)
        if decision.reason is Reason.MASS_UNHEALTHY:
            record["failing"] = sorted(fleet.failing | fleet.scaled_down)
        won, winner = self.rt.history.claim_episode(
            decision, record, status="acting" if decision.acts else "decided",
            previous_desired_count=prev, open_after=trigger.time - self.config.window)
        if not won:
            logger.info("another invocation decided this episode",
                        extra={"cluster": cluster, "service": service, "winner": winner and winner.get("action")})
            return {"status": "lost_race", "winner": winner and winner.get("action")}
        metrics.add_metric(name=f"Decision_{decision.action.value}", unit="Count", value=1)
        logger.info("decision", extra={"decision": record})

        if decision.acts:
            assert facts is not None
            slot = self.rt.history.acquire_slot(cluster, service, decision.time, fleet.bound,
                                                self.config.window, state)
            if slot is None:
                record = self._hold_for_cap(cluster, service, record, fleet.bound)
            else:
                ecs.scale_to_zero(facts, facts.desired_count)
                self.rt.history.update_episode(cluster, service, status="done")
                metrics.add_metric(name="ServicesScaledToZero", unit="Count", value=1)
        self.decisions.append(record)
        self._alert_for(record, cluster, service)
        return {"status": "decided", "decision": record}

    def _alert_for(self, record: dict[str, Any], cluster: str, service: str, resend: bool = False) -> None:
        decision = _decision_from(record)
        if decision.reason is Reason.MASS_UNHEALTHY:
            first = record.get("cluster_alert_owner", False) if resend else \
                self.rt.history.open_mass_event(cluster, decision.time, self.config.window)
            if not first:
                self.rt.history.update_episode(cluster, service, alert_status="covered_by_cluster_alert")
                return
            record["cluster_alert_owner"] = True
            ok = self._deliver(mass_alert(decision, list(record.get("failing", []))))
        else:
            ok = self._deliver(decision_alert(decision, previous_desired_count=record.get("previous_desired_count"),
                                              undo=self._undo_command(cluster, service, record)))
        self.rt.history.update_episode(cluster, service, alert_status="sent" if ok else "failed",
                                       decision=_json(record))
        if not ok:
            self.alerts_failed.append(f"{cluster}/{service}")

    def _undo_command(self, cluster: str, service: str, record: dict[str, Any]) -> str | None:
        """The exact ``restore`` command for a scale-down (table and region included), else ``None``."""
        if record.get("action") != Action.SCALE_TO_ZERO.value:
            return None
        region = self.rt.history.region
        return (f"ecs-guardrail restore --cluster {cluster} --service {service} "
                f"--table {self.rt.history.table}" + (f" --region {region}" if region else ""))

    def _deliver(self, alert: Any) -> bool:
        results = self.rt.send(alert)
        if results and any(r.ok for r in results):
            self.alerts_sent += 1
            return True
        return not results  # no sink configured: nothing failed, nothing to retry


def _json(record: dict[str, Any]) -> str:
    return json.dumps(record, sort_keys=True)


def _parse_iso(text: str) -> datetime:
    return datetime.strptime(text[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)


def _decision_from(record: dict[str, Any]) -> Decision:
    """Rebuild a :class:`Decision` from its recorded JSON (to re-send an alert on redelivery)."""
    t = _parse_iso(record["time"])
    last = tuple(
        Failure(service=record["service"], time=_parse_iso(s["time"]),
                kind=StopKind(s["kind"]), task_arn=s["task"], availability_zone=s.get("availability_zone"),
                stop_code=s.get("stop_code"), reason=s.get("reason"), cause=s.get("cause"),
                exit_codes=tuple((k, v) for k, v in (s.get("exit_codes") or {}).items()))
        for s in record.get("last_stops", [])
    )
    return Decision(
        cluster=record["cluster"], service=record["service"], time=t, action=Action(record["action"]),
        reason=Reason(record["reason"]), crashes_in_window=record["crashes_in_window"],
        health_check_kills_in_window=record["health_check_kills_in_window"], message=record["message"],
        trigger=record.get("trigger", "crash_loop"), failing_services=record.get("failing_services", 0),
        services_in_cluster=record.get("services_in_cluster", 0), bound=record.get("bound", 0), last_failures=last,
    )


def home_of(context: Any) -> tuple[str, str] | None:
    """``(account, region)`` of the running function, from the Lambda context's function ARN."""
    parts = str(getattr(context, "invoked_function_arn", "") or "").split(":")
    return (parts[4], parts[3]) if len(parts) >= 6 and parts[4].isdigit() and parts[3] else None


def process(raw: Any, rt: Runtime, home: tuple[str, str] | None = None) -> tuple[dict[str, Any], Watchdog]:
    """Handle one EventBridge event. Returns the outcome and the :class:`Watchdog` (its decisions).

    A malformed event is logged with its reason and returns ``{"status": "rejected"}`` (the recorder
    keeps it in the table); it is never counted.
    """
    wd = Watchdog(rt, home)
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
    return {"status": "ignored", "why": f"{event.detail_type} is recorded, not acted on"}, wd


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Lambda entry point (EventBridge rule target, filtered to stops and service actions).

    Raises:
        SettingsError: an invalid setting; nothing is decided (the event goes to the retry / DLQ path).
        AlertDeliveryError: every alert sink failed after the decision was recorded (retried by Lambda).
    """
    metrics.add_metric(name="EventsReceived", unit="Count", value=1)
    settings = load_settings_or_fail()
    outcome, wd = process(event, runtime(settings, watchdog=True), home_of(context))
    outcome = dict(outcome)
    outcome["decisions"] = wd.decisions
    outcome["alerts_sent"] = wd.alerts_sent
    if wd.alerts_failed:
        raise AlertDeliveryError(
            f"alert delivery failed for {', '.join(wd.alerts_failed)}; decision recorded", outcome)
    return outcome
