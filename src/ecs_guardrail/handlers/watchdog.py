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

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ecs_guardrail.adapters.alerts import SnsTopic, WebhookUrl
from ecs_guardrail.adapters.ecs import EcsService
from ecs_guardrail.adapters.placement import Placement
from ecs_guardrail.adapters.store.watchdog_state import WatchdogState
from ecs_guardrail.core.classify import StopKind, classify_stop, is_stop_event, remembered_per_task
from ecs_guardrail.core.delivery import check_delivery
from ecs_guardrail.core.deployment_failure import DEPLOYMENT_FAILED
from ecs_guardrail.core.errors import (
    AlertDeliveryError,
    DecisionInProgressError,
    EventRejectedError,
    UnreadableSummaryError,
)
from ecs_guardrail.core.events import DeploymentStateChange, ServiceAction, TaskStateChange, parse_event
from ecs_guardrail.core.lazy import lazy_callable, lazy_module
from ecs_guardrail.core.links import parse_arn
from ecs_guardrail.core.restarts import RestartObservation, restart_failures
from ecs_guardrail.core.summary import (
    DeploymentNote,
    EpisodeEnd,
    ServiceSummary,
    add_deployment,
    add_spot,
    file_service_failure,
    note_activity,
    note_steady,
)
from ecs_guardrail.handlers.runtime import Runtime, lambda_runtime, logger, metrics, report_unmatched_alert_only

if TYPE_CHECKING:
    from ecs_guardrail.core import lifecycle as lc
    from ecs_guardrail.core.decision_facts import failure_of, file_restarts
    from ecs_guardrail.core.policy import Failure, PolicyConfig
    from ecs_guardrail.core.recount import count_again
    from ecs_guardrail.handlers import hold
    from ecs_guardrail.handlers.decision import CLAIM_ATTEMPTS, Decider
    from ecs_guardrail.handlers.deployment_failed import alert_failed_deployment
    from ecs_guardrail.handlers.episode import owes_recovery
    from ecs_guardrail.handlers.jobs import on_job
    from ecs_guardrail.handlers.outbox import Outbox
    from ecs_guardrail.handlers.probe import ProbingEpisodes
else:
    # the episode machine: loaded on the first trigger or resume, not by a call that only counts (issue 33.7)
    lc = lazy_module("ecs_guardrail.core.lifecycle")
    # a counted failure's path (the episodes, the hold, the decider and the facts they gather), a job's and a failed
    # deployment's: loaded on the first event that needs them, not by an invocation that ignores its event (a
    # running task, a deployment's or a user's stop) or notes a Spot notice, nor by import (issue 33 item 7)
    hold = lazy_module("ecs_guardrail.handlers.hold")
    failure_of = lazy_callable("ecs_guardrail.core.decision_facts", "failure_of", globals())
    file_restarts = lazy_callable("ecs_guardrail.core.decision_facts", "file_restarts", globals())
    count_again = lazy_callable("ecs_guardrail.core.recount", "count_again", globals())
    Decider = lazy_callable("ecs_guardrail.handlers.decision", "Decider", globals())
    alert_failed_deployment = lazy_callable("ecs_guardrail.handlers.deployment_failed", "alert_failed_deployment",
                                            globals())
    on_job = lazy_callable("ecs_guardrail.handlers.jobs", "on_job", globals())
    owes_recovery = lazy_callable("ecs_guardrail.handlers.episode", "owes_recovery", globals())
    ProbingEpisodes = lazy_callable("ecs_guardrail.handlers.probe", "ProbingEpisodes", globals())

__all__ = ["handler", "process", "invoke", "Watchdog", "AlertDeliveryError", "DecisionInProgressError", "USES",
           "CLAIM_ATTEMPTS"]
#: read on demand (:func:`__getattr__`)
USES: dict[str, Any]


def _uses() -> dict[str, Any]:
    """:data:`USES`: the units (adapter classes: every declared method; or one declared method) whose AWS calls
    this function makes, the scheduled sweep's (handlers.sweep) included; ecs_guardrail.iam.handler_permissions
    unions their @permissions, and tests/infra/test_iam_calls.py checks every recorded call came from one of them.
    Built on the first read of ``USES`` (the adapters a decision needs are not imported by the handler's import)."""
    from ecs_guardrail.adapters.autoscaling import ScalableTargets
    from ecs_guardrail.adapters.cloudwatch import HealthyHostCount
    from ecs_guardrail.adapters.clusters import AccountClusters
    from ecs_guardrail.adapters.ecs import describe_services
    from ecs_guardrail.adapters.elb import TargetGroups
    from ecs_guardrail.adapters.logs import CrashLogs
    from ecs_guardrail.adapters.store.deployment_alerts import DeploymentAlerts
    from ecs_guardrail.adapters.store.event_log import EventLog
    from ecs_guardrail.adapters.taskdef import TaskDefinitions

    return {
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


def __getattr__(name: str) -> Any:
    """``USES`` (:func:`_uses`, kept after the first read) and ``CLAIM_ATTEMPTS`` (the decider's), read on
    demand (PEP 562) so that importing the handler imports neither the decision's adapters nor the decider.

    Raises:
        AttributeError: any other missing name.
    """
    if name == "USES":
        uses = globals()["USES"] = _uses()
        return uses
    if name == "CLAIM_ATTEMPTS":
        from ecs_guardrail.handlers.decision import CLAIM_ATTEMPTS

        return CLAIM_ATTEMPTS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: ECS service action names the watchdog reads (``detail.eventName``)
IMPAIRED = "SERVICE_TASK_START_IMPAIRED"
STEADY = "SERVICE_STEADY_STATE"
#: ``ECS Deployment State Change`` that a new deployment (an operator's UpdateService, a new revision) started
FIX_DEPLOYMENT = "SERVICE_DEPLOYMENT_IN_PROGRESS"


class _Made:
    """What an invocation makes on first use, shared by the :class:`Watchdog` and its decider: the places of
    the clusters seen before the episodes (:class:`Placement`) and the episodes. It holds no reference back to
    the watchdog, so a watchdog and its decider make no reference cycle (freed when the invocation ends, not by
    the cyclic garbage collector's next pass: issue 33.2)."""

    __slots__ = ("rt", "context", "placement", "episodes")

    def __init__(self, rt: Runtime, context: Any) -> None:
        self.rt = rt
        self.context = context
        self.placement: Placement | None = None  # :meth:`Watchdog.where`'s until the episodes are made
        self.episodes: ProbingEpisodes | None = None

    def get(self) -> ProbingEpisodes:
        """The invocation's episodes, made on the first call."""
        episodes = self.episodes
        if episodes is None:
            episodes = self.episodes = ProbingEpisodes(self.rt, self.context)
            if self.placement is not None:  # the clusters :meth:`Watchdog.where` placed: the alerts' places read them
                episodes.out.arns.update(self.placement.arns)
        return episodes


class Watchdog:
    """The recipe above over one :class:`Runtime` for one invocation.

    ``episodes`` does the episode I/O (claim, lease, act, alert, recovery); ``decisions`` (public JSON
    shape) and the alert counters are its.
    """

    def __init__(self, rt: Runtime, context: Any = None) -> None:
        self.rt = rt
        self.context = context
        self.state: WatchdogState = rt.history.state
        self._made = _Made(rt, context)
        settings = rt.settings
        #: the settings' policy (one object per settings: :meth:`Settings.policy`)
        self.config: PolicyConfig = settings.policy()
        #: ``RECOVERY=probe`` (:meth:`Settings.probes`): a failure may be a held service's probe verdict
        self.probing = settings.RECOVERY == "probe"
        self._decider: Decider | None = None

    # made on first use (issue 33.2): an event that is not a counted stop (a running task, a deployment's or a
    # user's stop, about half a fleet's stops) needs no episode I/O, lease owner id or decider
    @property
    def episodes(self) -> ProbingEpisodes:
        episodes = self._made.episodes
        return episodes if episodes is not None else self._made.get()

    def where(self, cluster: str, arn: str) -> tuple[str, str | None]:
        """:meth:`Placement.where` of this invocation (the outbox's, once the episodes are made): a Spot
        notice files its summary with the cluster key alone, no episode I/O."""
        made = self._made
        if made.episodes is not None:
            return made.episodes.out.where(cluster, arn)
        if made.placement is None:
            made.placement = Placement(self.rt.home, self.rt.history.region)
        return made.placement.where(cluster, arn)

    @property
    def out(self) -> Outbox:
        """Places, the alerts' reads, delivery (the episodes' own)."""
        return self.episodes.out

    @property
    def decider(self) -> Decider:
        """Resume, detect, gather once, decide, claim (the episodes made when it needs them); made on the
        first use (a plain attribute: ``functools.cached_property`` takes a lock at each first read in 3.11)."""
        decider = self._decider
        if decider is None:
            decider = self._decider = Decider(self.rt, self._made.get, config=self.config)
        return decider

    def recover_if_owed(self, ck: str, cluster: str, s: ServiceSummary) -> ServiceSummary:
        """:meth:`Episodes.recover_if_owed`, making the episodes only when a recovery is owed."""
        return self.episodes.recover_if_owed(ck, cluster, s) if owes_recovery(s) else s

    @property
    def decisions(self) -> list[dict[str, Any]]:
        episodes = self._made.episodes
        return episodes.decisions if episodes is not None else []

    @property
    def alerts_failed(self) -> list[str]:
        episodes = self._made.episodes
        return episodes.alerts_failed if episodes is not None else []

    @property
    def alerts_sent(self) -> int:
        episodes = self._made.episodes
        return episodes.alerts_sent if episodes is not None else 0

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
        service = d.service
        if service is None:
            if d.family is not None:
                ck, _ = self.where(d.cluster, d.cluster_arn)
                return on_job(self.out, self.state, self.config, event, ck, d.family, verdict.kind, verdict.cause,
                              verdict.exit_codes)
            return {"status": "ignored", "why": f"group {d.group!r} is not a service"}
        remembered = remembered_per_task(verdict)
        if not remembered and not verdict.kind.counts_as_failure:
            return {"status": "ignored", "why": f"{verdict.kind.value} stop does not count"}
        ck, foreign = self.where(d.cluster, d.cluster_arn)
        if remembered:  # a Spot or termination notice: the task's later STOPPED is not a crash
            taken: list[Failure] = []

            def notice(s: ServiceSummary) -> ServiceSummary | None:
                out = add_spot(s, d.task_arn, event.time)
                if out is None or (out.crashes is s.crashes and out.kills is s.kills):  # no failure taken out
                    taken.clear()
                else:
                    still = out.crashes + out.kills
                    taken[:] = [f for f in s.crashes + s.kills if f not in still]
                return out

            _, new = self.state.update(ck, service, notice)
            if new and taken:  # its STOPPED came first and was counted: out of the fleet minutes too
                self.state.uncount_failures(ck, service, taken)
            return {"status": "spot" if verdict.kind is StopKind.SPOT else "notice", "new": new}
        failure = failure_of(event, verdict.kind, verdict.cause, verdict.exit_codes, service)
        held = hold.held_for_probes(self.episodes, ck, d.cluster, service, event.time, failure) \
            if self.probing else None
        if held is not None:
            return held
        config = self.config
        s, new = self.state.update(ck, service, lambda s: file_service_failure(
            s, failure, config.keep, config.window, edge=config.fleet_signal_min_failures, horizon=config.horizon))
        if new or count_again(s, failure):  # core/recount.py: filed, even if its ring dropped it since
            # counted in its minute after the summary filed it (a redelivery of a failure the summary
            # holds adds it again, which changes nothing: the write before it may have been lost)
            self.state.count_failures(ck, service, [failure], config.fleet_signal_min_failures)
        s = self.recover_if_owed(ck, d.cluster, s)
        if new:
            metrics.add_metric(name="CrashesCounted" if verdict.kind is StopKind.CRASH else "HealthCheckKills",
                               unit="Count", value=1)
        out = self.decider.evaluate(ck, d.cluster, d.cluster_arn, service, s, event.time, impaired=False,
                                    foreign=foreign)
        if not new and out.get("status") == "counted":
            return {"status": "duplicate"}
        return out

    def on_service_action(self, event: ServiceAction) -> dict[str, Any]:
        name = event.detail.event_name
        arn = event.detail.cluster_arn or event.resources[0]
        ck, foreign = self.where(event.cluster, arn)
        service = event.service
        if name == STEADY:
            s, changed = self.state.update(ck, service, lambda x: note_steady(x, event.time))
            closed = changed and s.episode_end is EpisodeEnd.STEADY_STATE and s.counted_after == event.time
            if not closed:  # a restore (another process) may have made a recovery owed since this cache
                s = self.state.load(ck, service, fresh=True)
            after = self.recover_if_owed(ck, event.cluster, s)
            recovered = after is not s
            out = {"status": "episode_closed" if closed else "ignored", "why": STEADY,
                   **({"recovered": True} if recovered else {})}
            later = self._after_steady(ck, event, arn, after, foreign) if closed else None
            return {**later, "why": STEADY, **({"recovered": True} if recovered else {})} if later else out
        if name != IMPAIRED:
            return {"status": "ignored", "why": f"{name} is recorded, not acted on"}
        # a service-level failure of a held service is the probe's verdict (or a straggler): never a new
        # decision over the probing episode
        held = hold.held_for_probes(self.episodes, ck, event.cluster, service, event.time)
        if held is not None:
            return held
        s, _ = self.state.update(ck, service, lambda x: note_activity(x, event.time, self.config.window))
        ep = s.episode  # as stored now (a probe's pass may have finished while this invocation read)
        if self.episodes.probes is not None and ep is not None and ep.probes and ep.ended_by is EpisodeEnd.RESTORED \
                and ep.ended_at is not None and event.time <= ep.ended_at:
            # late news of a probe window the pass already judged: never a decision in the past that
            # stops the service just restored (a genuine impairment is reported again, after the restore)
            return {"status": "ignored", "why": f"{IMPAIRED} stamped before the probe passed"}
        s = self.recover_if_owed(ck, event.cluster, s)
        return self.decider.evaluate(ck, event.cluster, arn, service, s, event.time, impaired=True, foreign=foreign)

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
        out = self.decider.evaluate(ck, event.cluster, arn, event.service, s, newest, impaired=False, foreign=foreign)
        return out if out.get("status") == "decided" else None

    def on_restarts(self, obs: RestartObservation) -> dict[str, Any]:
        """Container restarts the sampler saw (core/restarts.py): filed as failures, then evaluated like
        stops (a ``restart_loop`` trigger is always alert-only; restarts count in the fleet test)."""
        ck, foreign = self.where(obs.cluster, obs.cluster_arn)
        keep, window = self.config.keep, self.config.window
        failures = restart_failures(obs.cluster, obs.service, obs.minute, obs.restarts)

        filed: list[Failure] = []
        edge, horizon = self.config.fleet_signal_min_failures, self.config.horizon
        s, new = self.state.update(ck, obs.service, lambda x: file_restarts(
            x, failures, keep, window, edge=edge, horizon=horizon, filed=filed))
        if not new:
            return {"status": "duplicate"}
        self.state.count_failures(ck, obs.service, filed, self.config.fleet_signal_min_failures)
        metrics.add_metric(name="ContainerRestartsCounted", unit="Count", value=obs.restarts)
        return self.decider.evaluate(ck, obs.cluster, obs.cluster_arn, obs.service, s, obs.minute, impaired=False,
                              foreign=foreign)

    def on_deployment(self, event: DeploymentStateChange) -> dict[str, Any]:
        d = event.detail
        ck, _ = self.where(event.cluster, event.resources[0])
        note = DeploymentNote(event.time, d.event_name, getattr(d, "deployment_id", None), d.reason)
        s, new = self.state.update(ck, event.service, lambda s: add_deployment(s, note))
        self.recover_if_owed(ck, event.cluster, s)
        probed = None
        if new and d.event_name == FIX_DEPLOYMENT and self.episodes.probes is not None:
            # an operator's fix (a new task definition revision) on a held service: probe it at once
            probed = self.episodes.probe(ck, event.cluster, event.service, event.time, fix=True)
        failed = alert_failed_deployment(self.episodes, event, ck, s) if d.event_name == DEPLOYMENT_FAILED else {}
        return {"status": "deployment_noted" if new else "duplicate", "event": d.event_name,
                **({"probe": probed} if probed else {}), **failed}


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
    reason and returns ``{"status": "rejected"}`` (the recorder keeps it in the table); it is counted in the
    ``EventsRejected`` metric, never as a failure.
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
        UnreadableSummaryError: the service's own stored summary cannot be read: logged with the item and its
            repair, which the message carries too (retried by Lambda, then kept in the function failure
            queue: :mod:`ecs_guardrail.handlers.unreadable`).
    """
    try:
        outcome, wd = process(raw, rt, context, delivered_at=delivered_at)
    except UnreadableSummaryError as exc:
        from ecs_guardrail.handlers.unreadable import report_unreadable, with_repair

        raise with_repair(exc, report_unreadable(rt, exc, "watchdog")) from exc
    episodes = wd._made.episodes  # made only when the event needed episode I/O
    outcome = {**outcome, "decisions": episodes.decisions if episodes is not None else [],
               "alerts_sent": episodes.alerts_sent if episodes is not None else 0}
    if episodes is not None and episodes.alerts_failed:
        raise AlertDeliveryError(f"alert delivery failed for {', '.join(episodes.alerts_failed)}; decision "
                                 "recorded", outcome)
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
