"""The probes of ``RECOVERY=probe`` (ARCHITECTURE.md, "Recovery"): start one, pass it (restore), fail it (back to
0, the delay doubled), or finish a step a dead invocation left; every step a transition of
:mod:`ecs_guardrail.core.lifecycle` stored under the episode's lease before the next call.

Carved out of ``handlers/episode.py`` (issue 34 item 3): :class:`ProbingEpisodes` is the invocation's
:class:`~ecs_guardrail.handlers.episode.Episodes` (its state, runtime, lease and effects) with the probe steps;
the watchdog and the sweep build it.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from msgspec.structs import replace

from ecs_guardrail.adapters.alerts import SnsTopic, WebhookUrl
from ecs_guardrail.adapters.ecs import EcsService, ServiceFacts
from ecs_guardrail.adapters.restore_service import perform_restore
from ecs_guardrail.adapters.store.watchdog_state import WatchdogState
from ecs_guardrail.adapters.taskdef import TaskDefinitions
from ecs_guardrail.core.alert import (
    still_failing_alert,
)
from ecs_guardrail.core.errors import (
    DecisionInProgressError,
)
from ecs_guardrail.core.lazy import lazy_module
from ecs_guardrail.core.permissions import performs
from ecs_guardrail.core.summary import (
    Episode,
    Phase,
    RecoveryStatus,
    ServiceSummary,
)
from ecs_guardrail.handlers.episode import Episodes, Job
from ecs_guardrail.handlers.runtime import logger, metrics

if TYPE_CHECKING:
    from ecs_guardrail.core import lifecycle as lc
else:  # the episode machine: loaded on first use, not at the watchdog's import (issue 33 item 7)
    lc = lazy_module("ecs_guardrail.core.lifecycle")

__all__ = ["ProbingEpisodes"]


class ProbingEpisodes(Episodes):
    """One invocation's :class:`~ecs_guardrail.handlers.episode.Episodes`, and the probe steps of its held services."""

    def probe(self, ck: str, cluster: str, service: str, now: datetime, *, fix: bool = False) -> str | None:
        """Do what the held service's episode owes at ``now`` (the sweep's time, or the event time of
        a new task definition revision when ``fix``): start a probe, pass it (restore, as ``restore``
        does), or finish a step a dead invocation left. Every step is a transition of the machine,
        stored under this invocation's lease before the next call (:mod:`ecs_guardrail.core.lifecycle`).

        Returns what was done (``"started"``, ``"passed"``, ``"failed"``, ``"resumed"``) or ``None``
        (nothing due, ``RECOVERY=manual``, ``DRY_RUN``, an alert-only cluster, or another invocation
        holds the lease). A probe never runs on an alert-only cluster (nothing there was stopped).

        Raises:
            LeaseLostError: the lease was taken over mid-step (the new holder finishes).
            botocore.exceptions.ClientError: a transient AWS error: the phase reached is stored, the
                next sweep resumes from it.
        """
        settings = self.probes
        if settings is None or self.config.dry_run or self._alert_only(ck, cluster) or self.rt.ecs is None:
            return None
        def due_of(e: Episode | None) -> str | None:
            due = lc.probe_due(e, now, settings)
            if fix and e is not None and e.phase in (Phase.ACTED, Phase.HELD) and due is None:
                due = "start" if lc.probe_due(replace(e, probe_at=now), now, settings) == "start" else None
            return due

        s = self.state.load(ck, service, fresh=True)
        ep = s.episode
        due = due_of(ep)
        if due is None and ep is not None and ep.lease_owner is not None and not ep.in_flight \
                and not ep.alert_owed and self._lease(ck, service):
            # a probe step that died (or whose last write was throttled) left its lease, nothing else: drop it
            self._step(ck, service, lc.LeaseReleased())
            return None
        if due is None or ep is None:
            return None
        if due == "start" and not self._still_at_zero(ck, cluster, service, now):
            return None
        if not self._lease(ck, service):
            return None
        s = self.state.load(ck, service, fresh=True)  # what the lease now protects: re-read, re-decide
        if due_of(s.episode) != due:
            self._step(ck, service, lc.LeaseReleased())  # another invocation moved it on meanwhile
            return None
        if due == "start":
            s, _ = self._step(ck, service, lc.ProbeClaimed(now))
            self.probe_counts["started"] += 1
            metrics.add_metric(name="ProbesStarted", unit="Count", value=1)
        elif due == "pass":
            return self._pass(ck, cluster, s, now)
        return self._drive_probe(ck, cluster, service, now) or ("started" if due == "start" else "resumed")

    def probe_failed(self, ck: str, cluster: str, service: str, at: datetime) -> str | None:
        """A genuine crash or health-check kill of ``service`` at event time ``at`` while it is probed:
        the probe failed; back to 0, the delay doubles (one "still failing" alert when it reaches its cap).
        A verdict already stored whose way back to 0 a dead step left (``PROBE_FAILED``) is resumed.
        ``None`` when the service is not probing, or the pass already restored it (late news).

        Raises:
            DecisionInProgressError: another invocation holds the lease (Lambda retries the event).
        """
        if self.probes is None:
            return None
        s = self.state.load(ck, service, fresh=True)
        ep = s.episode
        if ep is None or not ep.probing:
            return None
        if not self._lease(ck, service):
            raise DecisionInProgressError(f"{ck}/{service}: a probe step holds the lease; retry later")
        ep = self.state.load(ck, service, fresh=True).episode  # what the lease now protects: re-read
        if ep is not None and ep.phase is Phase.PROBE_FAILED:
            # the verdict is stored; a step that died on the way back to 0 left it: this delivery resumes it
            self._drive_probe(ck, cluster, service, at)
            return "failed"
        if ep is None or ep.phase not in (Phase.PROBE_CLAIMED, Phase.PROBING):
            self._step(ck, service, lc.LeaseReleased())  # the probe ended meanwhile (passed, or failed)
            return None
        previous = int(ep.previous_desired_count or 0)
        if ep.probe_live and self.rt.ecs is not None and previous != 1 \
                and self.rt.ecs.describe(cluster, service).desired_count == previous:
            # the pass already judged the window and its restore ran (a step that died after it): late
            # news of a judged window; the sweep finishes the restore
            self._step(ck, service, lc.LeaseReleased())
            return None
        self._step(ck, service, lc.ProbeFailed(at))
        self.probe_counts["failed"] += 1
        metrics.add_metric(name="ProbesFailed", unit="Count", value=1)
        self._drive_probe(ck, cluster, service, at)
        return "failed"

    def _still_at_zero(self, ck: str, cluster: str, service: str, now: datetime) -> bool:
        """Before a probe: is the held service still at desired count 0? One above 0 was raised by
        someone else (an operator, or a ``restore`` that raced a failing probe): its scale-down ends as
        an operator's raise (slot freed, recovery owed) and no probe ever lowers it to 1."""
        assert self.rt.ecs is not None
        facts = self.rt.ecs.describe(cluster, service)
        if facts.desired_count == 0:
            return True
        if self._overruled_unleased(ck, cluster, service, facts.desired_count, now):
            logger.info("held service raised by someone else: not probed, slot freed", extra={"service": service})
        return False

    def _overruled_unleased(self, ck: str, cluster: str, service: str, desired: int, at: datetime) -> bool:
        """End a held service's episode ``operator_raised`` before any probe step holds its lease (a
        conditional write on the phase, as :func:`slots.end_raised`); True when this write did it."""
        def change(s: ServiceSummary) -> ServiceSummary | None:
            ep = s.episode
            if ep is None or ep.phase not in (Phase.ACTED, Phase.HELD):
                return None
            try:
                return lc.transition(s, lc.ProbeOverruled(at, desired)).summary
            except lc.IllegalTransitionError:
                return None

        self.state.load(ck, service)
        s, changed = self.state.update(ck, service, change)
        if changed:
            self._after_overruled(ck, cluster, s)
        return changed

    def _after_overruled(self, ck: str, cluster: str, s: ServiceSummary) -> None:
        self.state.release_slot(ck, s.service)  # idempotent: the slot of a service no longer held
        s = self.recover_if_owed(ck, cluster, s)
        if s.episode is None or s.episode.recovery is not RecoveryStatus.FAILED:
            self.state.close_work(ck, s.service)  # a failed recovery stays indexed: the sweep retries it

    def _lease(self, ck: str, service: str) -> bool:
        now = self._now()
        try:
            self._step(ck, service, lc.LeaseTaken(self.owner, lc.lease_until(now, self.remaining_s), now))
        except lc.IllegalTransitionError:
            return False
        return True

    def _drive_probe(self, ck: str, cluster: str, service: str, at: datetime, *, facts: ServiceFacts | None = None,
                     first: lc.Effect | None = None) -> str | None:
        """Perform the probe steps owed (or ``first``, a pass's restore, with the service as it read it:
        ``facts``), effect by effect, until the lease is released: the one interpreter
        (:meth:`~ecs_guardrail.handlers.episode.Episodes.run`). ``"operator_raised"`` when a step found a
        desired count it had not set (:meth:`_owned`), else ``None``."""
        assert self.probes is not None and self.rt.ecs is not None
        job = self.run(Job(ck, cluster, service, probe_at=at, facts=facts), self.state.load(ck, service), first)
        if not isinstance(job.last, lc.ProbeOverruled):
            return None
        self._after_overruled(ck, cluster, self.state.load(ck, service))
        metrics.add_metric(name="ProbesOverruled", unit="Count", value=1)
        return "operator_raised"

    def _owned(self, job: Job, ep: Episode, step: lc.Effect) -> tuple[ServiceFacts, lc.Outcome | None]:
        """Before a probe's change: the service as DescribeServices says (or as the pass read it), and
        :class:`~ecs_guardrail.core.lifecycle.ProbeOverruled` when its desired count is not the one the probe
        itself last set (an operator's action, ARCHITECTURE.md "Recovery": the episode ends
        ``operator_raised``, the slot is freed, and nothing else is changed)."""
        assert self.rt.ecs is not None and job.probe_at is not None
        facts = job.facts or self.rt.ecs.describe(job.cluster, job.service)
        if lc.probe_owns_count(ep, step, facts.desired_count):  # a resumed step checks as well
            return facts, None
        logger.warning("an operator set the desired count of a probed service: the probe stops and changes "
                       "nothing (slot freed, scalable target left as it is)",
                       extra={"cluster": job.ck, "service": job.service, "desired_count": facts.desired_count})
        return facts, lc.ProbeOverruled(job.probe_at, facts.desired_count)

    @performs(EcsService.describe, EcsService.probe)
    def _start_probe(self, job: Job, s: ServiceSummary, effect: lc.StartProbe) -> lc.Outcome:
        """:class:`~ecs_guardrail.core.lifecycle.StartProbe`: desired count 1, over the count the probe set."""
        assert self.rt.ecs is not None and s.episode is not None
        if self._alert_only(job.ck, job.cluster):  # never reached: probes stop before; refuse before any call
            return lc.LeaseReleased()
        facts, overruled = self._owned(job, s.episode, effect)
        if overruled is not None:
            return overruled
        self._check_lease(job.ck, job.service, s.episode.lease_until)  # right before the UpdateService
        self.rt.ecs.probe(facts)
        return lc.ProbeStarted()

    @performs(EcsService.describe, EcsService.scale_to_zero)
    def _stop_probe(self, job: Job, s: ServiceSummary, effect: lc.StopProbe) -> lc.Outcome:
        """:class:`~ecs_guardrail.core.lifecycle.StopProbe`: back to 0 after a failed probe."""
        ep = s.episode
        assert self.rt.ecs is not None and self.probes is not None and ep is not None and job.probe_at is not None
        if self._alert_only(job.ck, job.cluster):  # never reached: probes stop before; refuse before any call
            return lc.LeaseReleased()
        facts, overruled = self._owned(job, ep, effect)
        if overruled is not None:
            return overruled
        self._check_lease(job.ck, job.service, ep.lease_until)  # right before the UpdateService
        self.rt.ecs.scale_to_zero(facts, effect.previous_desired_count)
        return lc.ProbeStopped(ep.probe_at or job.probe_at, self.probes)

    @performs(perform_restore)
    def _restore_service(self, job: Job, s: ServiceSummary, effect: lc.RestoreService) -> lc.Outcome:
        """:class:`~ecs_guardrail.core.lifecycle.RestoreService` at a probe's pass: the one restore
        (:func:`~ecs_guardrail.adapters.restore_service.perform_restore`, as the operator's ``restore``), over
        the count the probe set (else :class:`~ecs_guardrail.core.lifecycle.ProbeOverruled`).

        Raises:
            RestoreError: the count is back but Application Auto Scaling refused the scalable target's
                previous state (its error code named): the episode stays probing, the next sweep finishes it.
        """
        ep = s.episode
        assert self.rt.ecs is not None and ep is not None and job.probe_at is not None
        facts, overruled = self._owned(job, ep, effect)
        if overruled is not None:
            return overruled
        self._check_lease(job.ck, job.service, ep.lease_until)
        done = perform_restore(self.rt.ecs, self._scaling(), job.cluster, job.service, facts,
                               effect.previous_desired_count, effect.previous)
        done.check(f"{job.cluster}/{job.service}: a passed probe restored desired count "
                   f"{effect.previous_desired_count}")
        return lc.ProbePassed(job.probe_at)

    def _pass(self, ck: str, cluster: str, s: ServiceSummary, now: datetime) -> str:
        """The probe ran PROBE_PASS_MINUTES without a failure: restore exactly as ``restore`` does
        (desired count, then the scalable target's previous SuspendedState), then end the episode
        (slot freed, recovery owed) and send the recovery. A probe whose task never reached RUNNING
        (runningCount 0) failed instead."""
        assert self.rt.ecs is not None and self.probes is not None
        ep = s.episode
        assert ep is not None
        service = s.service
        facts = self.rt.ecs.describe(cluster, service)
        previous = int(ep.previous_desired_count or 0)
        restore_step = lc.RestoreService(previous, ep.previous_suspended)
        if not lc.probe_owns_count(ep, restore_step, facts.desired_count):
            return self._drive_probe(ck, cluster, service, now, facts=facts, first=restore_step) or "operator_raised"
        # the pass's own restore already ran (a step that died or was throttled after UpdateService): it
        # was judged then; finish it (count, tag, scalable target), never judge it again
        resumed = facts.desired_count == previous != 1
        failed_at = None if resumed else self._failed_while_probing(s, ep.probe_at or now, now)
        unhealthy = self._no_healthy_host(facts, ep.probe_at or now, now) \
            if facts.running_count >= 1 and failed_at is None and not resumed else None
        if not resumed and (facts.running_count < 1 or unhealthy or failed_at is not None):
            if unhealthy:
                logger.info("probe task running but its target groups report no healthy host: probe failed",
                            extra={"service": service, "target_groups": unhealthy})
            if failed_at is not None:  # its verdict was counted but not stored (a lease left behind)
                logger.info("the probe's service failed during the probe: probe failed",
                            extra={"service": service, "failure_at": failed_at.isoformat()})
            self._step(ck, service, lc.ProbeFailed(failed_at or now))
            self.probe_counts["failed"] += 1
            self._drive_probe(ck, cluster, service, now)
            return "failed"
        if self._drive_probe(ck, cluster, service, now, facts=facts, first=restore_step) is not None:
            return "operator_raised"
        s = self.state.load(ck, service)
        self.probe_counts["passed"] += 1
        metrics.add_metric(name="ProbesPassed", unit="Count", value=1)
        s = self.recover_if_owed(ck, cluster, s)
        if s.episode is None or s.episode.recovery is not RecoveryStatus.FAILED:
            self.state.close_work(ck, service)  # a failed recovery stays indexed: the sweep retries it
        return "passed"

    @staticmethod
    def _failed_while_probing(s: ServiceSummary, since: datetime, now: datetime) -> datetime | None:
        """Event time of the first genuine crash or health-check kill of the service counted in its summary
        within the probe (``since`` to ``now``), or ``None``: the probe's verdict even when the invocation
        that saw it could not store it (ARCHITECTURE.md, "Recovery": whatever state the lease was left in)."""
        times = [f.time for f in s.crashes + s.kills if since <= f.time <= now]
        return min(times) if times else None

    def _no_healthy_host(self, facts: ServiceFacts, since: datetime, now: datetime) -> list[str]:
        """The target groups of a probed service whose newest HealthyHostCount minute in the pass window
        (``since`` to ``now``) is 0: each must report a healthy host for the probe to pass. A target
        group with no datapoint there gives no evidence either way (never "down")."""
        minutes = max(1, int((now - since).total_seconds() // 60))
        return sorted(x.target_group for x in self.out.serving(facts, now, minutes, requests=False)
                      if x.healthy_host_count is not None and x.healthy_host_count < 1)

    @performs(WatchdogState.load, TaskDefinitions, SnsTopic, WebhookUrl)
    def _send_still_failing(self, job: Job, s: ServiceSummary, effect: lc.SendStillFailing) -> None:
        """:class:`~ecs_guardrail.core.lifecycle.SendStillFailing`: the one "still failing" alert at the cap."""
        assert self.probes is not None
        ep = self.state.load(job.ck, job.service).episode
        assert ep is not None
        where = self.out.place(job.ck, job.cluster, job.service)
        if not self.out.deliver(still_failing_alert(where, probes=effect.probes,
                                                delay_minutes=self.probes.max_delay_minutes,
                                                decision_time=ep.decision_time, at=effect.at,
                                                links=self.out.links(where))):
            logger.error("still-failing alert not delivered", extra={"cluster": job.ck, "service": job.service})

    # ------------------------------------------------------------------ recovery
