"""The performers of the episode machine's effects (:mod:`ecs_guardrail.core.lifecycle`): one small method
per effect, each declared with :func:`~ecs_guardrail.core.permissions.performs` (the AWS actions it needs,
the union of the adapter units it calls; ``tests/infra/test_iam_calls.py`` checks every call made while it
runs against that declaration). :class:`Performers` is the base of the interpreter
(:class:`~ecs_guardrail.handlers.episode.Episodes`), which asks the machine for the next effect and stores
each outcome under the lease; the probe's performers are :class:`~ecs_guardrail.handlers.probe.ProbingEpisodes`'.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from msgspec import structs

from ecs_guardrail.adapters.alerts import SnsTopic, WebhookUrl
from ecs_guardrail.adapters.autoscaling import ScalableTargets, resource_id
from ecs_guardrail.adapters.ecs import EcsService, describe_services
from ecs_guardrail.adapters.logs import CrashLogs
from ecs_guardrail.adapters.store.watchdog_state import WatchdogState
from ecs_guardrail.adapters.taskdef import TaskDefinitions
from ecs_guardrail.core.alert import decision_alert, mass_alert
from ecs_guardrail.core.entitlement import ScalableTargetFacts, SuspendedState
from ecs_guardrail.core.errors import (
    ActionRefusedError,
    LeaseLostError,
    ScalingSuspendError,
    ServiceAccessDeniedError,
    ServiceNotFoundError,
)
from ecs_guardrail.core.lazy import lazy_module
from ecs_guardrail.core.permissions import performs
from ecs_guardrail.core.policy import PolicyConfig, is_alert_only_cluster
from ecs_guardrail.core.records import Reason
from ecs_guardrail.core.summary import ServiceSummary
from ecs_guardrail.handlers import crash_context
from ecs_guardrail.handlers.episode_job import Claim, Job, Known
from ecs_guardrail.handlers.outbox import Outbox
from ecs_guardrail.handlers.runtime import Runtime, logger, metrics

if TYPE_CHECKING:
    from ecs_guardrail.core import lifecycle as lc
else:  # the episode machine: loaded on the first trigger or resume, not by a call that only counts (issue 33.7)
    lc = lazy_module("ecs_guardrail.core.lifecycle")

__all__ = ["Performers"]


class Performers:
    """The effects' performers over one invocation's :class:`Runtime` (``rt``), table (``state``), alert
    side (``out``) and policy (``config``); ``alerts_failed`` collects the alerts no sink took. Set up by
    :class:`~ecs_guardrail.handlers.episode.Episodes`."""

    rt: Runtime
    config: PolicyConfig
    state: WatchdogState
    out: Outbox
    arns: dict[str, str]
    alerts_failed: list[str]

    def _now(self) -> float:
        return self.rt.clock()

    def _scaling(self) -> ScalableTargets:
        """The Application Auto Scaling adapter, refusing writes for alert-only clusters before the call."""
        return ScalableTargets(self.rt.clients("application-autoscaling"), alert_only=self.config.alert_only)

    def _alert_only(self, ck: str, cluster: str) -> bool:
        """Is ``cluster`` alert-only (name, glob or ARN entry of ``ALERT_ONLY_CLUSTERS``)? Checked again
        before every call that changes capacity, whatever the decision said."""
        return is_alert_only_cluster(self.config, cluster, self.arns.get(ck, cluster))

    def _check_lease(self, ck: str, service: str, until: float) -> None:
        """An invocation that outlived its own lease stops before its next call (another may own the
        episode by now). With the lease at remaining time + margin this cannot happen in Lambda; it
        guards the watchdog against a clock jump or a runtime that ignores its timeout.

        Raises:
            LeaseLostError: the lease expired on this invocation's clock.
        """
        if self._now() >= until:
            raise LeaseLostError(f"{ck}/{service}: this invocation outlived its lease; it stops here")

    # ------------------------------------------------------------------ the performers
    @performs(WatchdogState.take_slot, WatchdogState.cluster, ScalableTargets.describe)
    def _record_facts(self, job: Job, s: ServiceSummary, effect: lc.RecordFacts) -> lc.Outcome:
        """:class:`~ecs_guardrail.core.lifecycle.RecordFacts`: take the slot, then read (or reuse) the
        scalable target's state before any change."""
        ep = s.episode
        assert ep is not None and job.claim is not None
        ck, cluster, service, known = job.ck, job.cluster, job.service, job.known
        bound = max(1, int(job.claim.decision.bound or 1))
        view = known.view if known is not None else self.state.cluster(ck)
        if self.state.take_slot(ck, service, ep.decision_time, bound, view) is None:
            held = tuple(x for x in self.state.cluster(ck).held() if x != service)
            return lc.SlotDenied(held, bound)
        if ep.previous_suspended is not None:  # inherited from the earlier scale-down still holding it
            return lc.FactsRecorded(ep.previous_suspended)
        if known is not None and known.scalable_error is not None:
            return lc.SuspendRefused(known.scalable_error)
        if known is not None and known.facts is not None:
            target = known.scalable
        else:
            try:
                target = self._scaling().describe(cluster, service)
            except ScalingSuspendError as exc:
                return lc.SuspendRefused(exc.reason)
        return lc.FactsRecorded(target.suspended.to_api() if target is not None else None)

    @performs(ScalableTargets._register)
    def _suspend(self, job: Job, s: ServiceSummary, effect: lc.SuspendScaling) -> lc.Outcome:
        """:class:`~ecs_guardrail.core.lifecycle.SuspendScaling` (the adapter refuses an alert-only
        cluster before the call)."""
        target = ScalableTargetFacts(resource_id=resource_id(job.cluster, job.service), min_capacity=0,
                                     max_capacity=0, suspended=SuspendedState.from_api(effect.previous))
        try:
            self._scaling().suspend(target)
        except ScalingSuspendError as exc:
            return lc.SuspendRefused(exc.reason)
        return lc.ScalingSuspended()

    @performs(WatchdogState._index_change, WatchdogState.load, EcsService.describe, EcsService.scale_to_zero)
    def _scale_to_zero(self, job: Job, s: ServiceSummary, effect: lc.ScaleToZero) -> lc.Outcome:
        """:class:`~ecs_guardrail.core.lifecycle.ScaleToZero`."""
        if not self._alert_only(job.ck, job.cluster):
            # named in the sweep's index before the call that holds it, so no held service is missed:
            # with RECOVERY=probe for its probes, with either setting for the recovery a ``restore``
            # (an operator's credentials, no SNS or Slack) makes owed
            self.state.open_work(job.ck, job.cluster, job.service)
        return self._scale(job.ck, job.cluster, job.service, effect.previous_desired_count, job.known)

    def _scale(self, ck: str, cluster: str, service: str, previous: int, known: Known | None) -> lc.Outcome:
        assert self.rt.ecs is not None
        if self._alert_only(ck, cluster):  # the entitlement rules already said so; never reach UpdateService
            return lc.ActionRefused(f"{cluster} is alert-only: UpdateService refused before the call")
        try:
            facts = known.facts if known is not None and known.facts is not None else \
                self.rt.ecs.describe(cluster, service)
            ep = self.state.load(ck, service).episode  # the last write of this invocation (cached)
            if ep is not None:
                self._check_lease(ck, service, ep.lease_until)  # right before the one call that matters most
            self.rt.ecs.scale_to_zero(facts, previous)
        except ActionRefusedError as exc:
            logger.error("scale-down refused by ECS: alerting instead", extra={"service": service, "error": exc.reason})
            return lc.ActionRefused(exc.reason)
        except (ServiceNotFoundError, ServiceAccessDeniedError) as exc:
            return lc.ActionRefused(str(exc))
        metrics.add_metric(name="ServicesScaledToZero", unit="Count", value=1)
        return lc.Scaled()

    # the units it calls: open_work (_index_change); the mass event's item (open_mass_event); summaries (load:
    # the mass alert's rows, task definition ARNs, the crash context); DescribeTaskDefinition (the alert's log
    # links, the change line); the crash's log lines; DescribeServices (the revision before); the sinks
    @performs(WatchdogState._index_change, WatchdogState.open_mass_event, WatchdogState.load,
              TaskDefinitions.essential_containers, CrashLogs._filter, describe_services, SnsTopic.send,
              WebhookUrl.get)
    def _send_alert(self, job: Job, s: ServiceSummary, effect: lc.SendAlert) -> lc.Outcome:
        """:class:`~ecs_guardrail.core.lifecycle.SendAlert`: named in the sweep's index before the alert
        goes out (whatever ends the episode, a quiet window with no further event of the service
        included, the sweep finds its owed recovery), then composed and delivered (:meth:`_alert`)."""
        ep = s.episode
        assert ep is not None and job.claim is not None
        self.state.open_work(job.ck, job.cluster, job.service)
        return self._alert(job.ck, job.claim, ep.cluster_alert_owner)

    @performs(WatchdogState.release_slot, WatchdogState.cluster)
    def _release_slot(self, job: Job, s: ServiceSummary, effect: lc.ReleaseSlot) -> None:
        """:class:`~ecs_guardrail.core.lifecycle.ReleaseSlot` (after the write that ended the hold)."""
        self.state.release_slot(job.ck, job.service)

    @performs(WatchdogState.amend_decision)
    def _amend(self, job: Job, s: ServiceSummary, effect: lc.AmendDecision) -> None:
        """:class:`~ecs_guardrail.core.lifecycle.AmendDecision`: the decision record says what it became."""
        assert job.claim is not None
        self.state.amend_decision(job.ck, structs.replace(job.claim, decision=effect.decision).record())

    @performs(ScalableTargets.describe, ScalableTargets._register)
    def _resume_scaling(self, job: Job, s: ServiceSummary, effect: lc.ResumeScaling) -> None:
        """:class:`~ecs_guardrail.core.lifecycle.ResumeScaling`: undo the suspension a refused scale-down left."""
        if self._alert_only(job.ck, job.cluster):  # nothing was suspended there, and nothing may be changed
            return
        try:
            self._scaling().restore_suspended(job.cluster, job.service, effect.previous)
        except Exception as exc:  # noqa: BLE001 - the alert must still go out; say what is left
            logger.error("could not put the scalable target's suspended state back after a refused "
                         "scale-down; set it by hand", extra={"service": job.service, "error": str(exc)[:300]})

    # ------------------------------------------------------------------ alert
    def _alert(self, ck: str, claim: Claim, owner: bool) -> lc.Outcome:
        """Send the episode's alert; ``owner``: this episode already opened the mass event (its cluster
        alert failed before and is re-sent, never reported as covered by itself)."""
        decision = claim.decision
        if decision.reason is Reason.MASS_UNHEALTHY:
            if not owner and not self.state.open_mass_event(ck, decision.time, self.config.window):
                return lc.AlertCovered()
            where = self.out.place(ck, decision.cluster)
            ok = self.out.deliver(mass_alert(decision, list(decision.failing), where=where, links=self.out.links(where),
                                         per_service=self.out.mass_rows(ck, decision),
                                         window_minutes=self.config.window_minutes))
            if not ok:
                self.alerts_failed.append(f"{decision.cluster} (cluster alert)")
            return lc.AlertDelivered(True) if ok else lc.AlertFailed(True)
        where = self.out.place(ck, decision.cluster, decision.service)
        failures = self.out.with_task_definitions(ck, decision.service, decision.last_failures)
        links = self.out.links(where, failures)
        on_call = crash_context.decision_fields(self.out, ck, decision, where, failures)  # crash's words, the change
        ok = self.out.deliver(decision_alert(decision, previous_desired_count=claim.previous_desired_count,
                                         undo=self.out.undo_command(decision), where=where,
                                         links=links, extra=on_call))
        if not ok:
            self.alerts_failed.append(f"{decision.cluster}/{decision.service}")
        return lc.AlertDelivered() if ok else lc.AlertFailed()
