"""The episode's I/O: claim, lease, act, alert, recover; driven by the pure machine of
:mod:`ecs_guardrail.core.lifecycle`.

One :class:`Episodes` per invocation. :meth:`Episodes.claim` writes the decision and the claim in one
transaction under a lease that outlives the invocation; :meth:`Episodes.drive` then asks the machine
for the next effect, performs it (one AWS call, or a small fixed group of them), and stores the
transition's summary in a conditional write that also proves the lease is still this invocation's,
before the next effect. A death anywhere leaves a phase from which the next delivery resumes
(:meth:`Episodes.resume`) once the lease has expired, and never repeats a finished step: each effect
is idempotent against AWS (a scale-down of a service at 0, a suspension of a suspended target, a slot
the service already holds change nothing) and recorded before the call that follows it.

Alerts are at least once: an alert is delivered, then its status written; if that write fails, the
retry sends it again, with the same decision id so a receiver can tell the repeat. The action is at
most once per episode: every path to UpdateService passes the claim and the lease.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from msgspec import structs
from msgspec.structs import replace

from ecs_guardrail.adapters.store.table import ConditionFailedError
from ecs_guardrail.adapters.store.watchdog_state import WatchdogState
from ecs_guardrail.core.alert import (
    recovery_alert,
)
from ecs_guardrail.core.errors import (
    AlertDeliveryError,
    DecisionInProgressError,
    LeaseLostError,
)
from ecs_guardrail.core.lazy import lazy_module
from ecs_guardrail.core.records import Decision, Reason
from ecs_guardrail.core.summary import (
    ActionStatus,
    AlertStatus,
    Episode,
    EpisodeEnd,
    RecoveryStatus,
    ServiceSummary,
    ended_by_steady,
    move_recovery,
    open_episode,
)
from ecs_guardrail.handlers.episode_job import Claim, Job, Known
from ecs_guardrail.handlers.folds import claim_taking_slot, release_after_alert
from ecs_guardrail.handlers.outbox import Outbox
from ecs_guardrail.handlers.performers import Performers
from ecs_guardrail.handlers.runtime import Runtime, logger, metrics

if TYPE_CHECKING:
    from ecs_guardrail.core import lifecycle as lc
else:  # the episode machine: loaded on the first trigger or resume, not by a call that only counts (issue 33.7)
    lc = lazy_module("ecs_guardrail.core.lifecycle")

__all__ = ["Episodes", "owes_recovery", "Claim", "Known", "Job", "AlertDeliveryError", "DecisionInProgressError"]


#: effect (class name) -> the method that performs it (declared with ``@performs``: the AWS actions it needs);
#: the probe's steps are :class:`~ecs_guardrail.handlers.probe.ProbingEpisodes`' methods
_PERFORMER_NAMES = {
    "RecordFacts": "_record_facts", "SuspendScaling": "_suspend", "ScaleToZero": "_scale_to_zero",
    "SendAlert": "_send_alert", "ReleaseSlot": "_release_slot", "AmendDecision": "_amend",
    "ResumeScaling": "_resume_scaling", "StartProbe": "_start_probe", "StopProbe": "_stop_probe",
    "RestoreService": "_restore_service", "SendStillFailing": "_send_still_failing",
}


class Episodes(Performers):
    """The episode I/O of one invocation over one :class:`Runtime`.

    ``owner``: this invocation's lease owner id (request id + random suffix); ``remaining_s``: the
    Lambda's remaining time at start (seconds; ``None`` without a context). ``decisions`` collects the
    decisions this invocation recorded (public JSON), ``alerts_failed`` the alerts no sink took.
    """

    def __init__(self, rt: Runtime, context: Any = None) -> None:
        self.rt = rt
        self.config = rt.settings.policy()
        self.state: WatchdogState = rt.history.state
        self.owner = f"{getattr(context, 'aws_request_id', 'local')}/{uuid.uuid4().hex[:8]}"
        remaining = getattr(context, "get_remaining_time_in_millis", None)
        self.remaining_s = remaining() / 1000.0 if remaining else None
        self.decisions: list[dict[str, Any]] = []
        self.alerts_failed: list[str] = []
        self.out = Outbox(rt)  # places, the alerts' reads, delivery (handlers/outbox.py)
        self.arns = self.out.arns  # cluster key -> an ARN of the cluster (account, region, partition)
        self.probes: lc.ProbeSettings | None = rt.settings.probes()  # None: RECOVERY=manual
        self.probe_counts = {"started": 0, "passed": 0, "failed": 0}

    @property
    def alerts_sent(self) -> int:
        """Alerts a sink took in this invocation (:attr:`Outbox.alerts_sent`)."""
        return self.out.alerts_sent

    # ------------------------------------------------------------------ the lease-checked step
    def _step(self, ck: str, service: str, outcome: lc.Outcome,
              decision: Decision | None = None) -> tuple[ServiceSummary, lc.Transition]:
        """Store the machine's transition for ``outcome`` in one conditional write (retried on a lost
        race with the winner's state), provided this invocation still holds the lease.

        Raises:
            LeaseLostError: the lease is another invocation's now.
            IllegalTransitionError: the phase does not allow ``outcome``.
        """
        done: list[lc.Transition] = []

        def change(s: ServiceSummary) -> ServiceSummary | None:
            ep = s.episode
            if ep is None or (ep.lease_owner != self.owner and not isinstance(outcome, lc.LeaseTaken)):
                raise LeaseLostError(f"{ck}/{service}: lease lost to {ep and ep.lease_owner}")
            tr = release_after_alert(lc.transition(s, outcome, decision), outcome, self.owner)  # one write
            done[:] = [tr]
            return tr.summary

        self.state.load(ck, service)  # known to the cache: update() then never presumes an empty summary
        s, _ = self.state.update(ck, service, change)
        return s, done[0]

    # ------------------------------------------------------------------ claim
    def claim(self, ck: str, s: ServiceSummary, claim: Claim, trigger: str, *, last_failure: datetime,
              previous_suspended: dict[str, bool] | None, escalated: bool,
              known: Known | None) -> dict[str, Any]:
        """Open (or escalate) the episode for ``claim`` and the decision record in ONE transaction,
        under this invocation's lease; then :meth:`drive` it. Returns the handler's outcome:
        ``{"status": "decided", "decision": ...}``, or ``{"status": "claim_conflict"}`` when the
        transaction's condition failed (the summary changed since ``s`` was read; nothing was written):
        the caller reloads and runs ``detect`` again (:meth:`Watchdog._evaluate`), since the write that
        changed it may have claimed nothing."""
        d = claim.decision
        if lc.holds_decisions(s):  # rule 2: the caller asked already; never open a decision over a held service
            logger.error("a decision over a service held at zero refused", extra={"cluster": ck, "service": s.service})
            return {"status": "held_at_zero", "cluster": d.cluster, "service": s.service}
        now = self._now()
        ep = Episode(decision_time=d.time, last_failure=last_failure, action=d.action, reason=d.reason,
                     trigger=trigger, action_status=ActionStatus.PENDING if d.acts else ActionStatus.NONE,
                     alert_status=AlertStatus.PENDING, previous_desired_count=claim.previous_desired_count,
                     previous_suspended=previous_suspended, lease_owner=self.owner,
                     lease_until=lc.lease_until(now, self.remaining_s), escalated=escalated)
        new = open_episode(s, ep)  # a replaced scale-down stays in the fleet test (rule 3)
        record = claim.record()
        try:
            s, known = claim_taking_slot(self.state, ck, s, new, record, known)  # slot + facts in the claim
        except ConditionFailedError:
            # the summary changed since it was read: another invocation's claim, or a write that claims
            # nothing (a steady state, a Spot notice, a deployment event); the caller reloads and detects again
            logger.info("the claim's condition failed: the summary changed since it was read",
                        extra={"cluster": ck, "service": s.service})
            return {"status": "claim_conflict"}
        metrics.add_metric(name=f"Decision_{d.action.value}", unit="Count", value=1)
        logger.info("decision", extra={"decision": record})
        claim = self.drive(ck, s, claim, known)
        record = claim.record()
        self.decisions.append(record)
        s, ended = self.state.update(ck, s.service, ended_by_steady)  # ECS reported steady at or after T already
        if ended:
            self.recover_if_owed(ck, d.cluster, s)
        return {"status": "decided", "decision": record}

    # ------------------------------------------------------------------ resume
    def resume(self, ck: str, service: str, s: ServiceSummary) -> dict[str, Any] | None:
        """Take over an unfinished episode whose lease expired; ``None`` when there is nothing to do,
        ``{"status": "in_progress"}`` while another invocation's lease runs."""
        ep = s.episode
        if ep is None or not ep.unfinished:
            return None
        if not lc.may_take_over(ep, self.owner, self._now()):
            return {"status": "in_progress", "cluster": ck, "service": service}
        now = self._now()
        taken = lc.LeaseTaken(self.owner, lc.lease_until(now, self.remaining_s), now)
        try:
            s, _ = self._step(ck, service, taken)
        except lc.IllegalTransitionError:
            return {"status": "in_progress", "cluster": ck, "service": service}
        ep = s.episode
        assert ep is not None
        if ep.lease_owner != self.owner:  # nothing was unfinished by the time the write ran
            return None
        record = self.state.decision(ck, service, ep.decision_time)
        if record is None:  # cannot happen with the transaction; never act without the record
            logger.error("episode without its decision record", extra={"cluster": ck, "service": service})
            self.state.update(ck, service, lambda x: replace(x, episode=replace(
                x.episode, action_status=ActionStatus.NONE, lease_owner=None, lease_until=0.0))
                if x.episode is not None else None)
            return {"status": "error", "why": "decision record missing"}
        logger.info("resuming an unfinished episode", extra={"cluster": ck, "service": service,
                                                             "phase": ep.phase.value})
        claim = self.drive(ck, s, Claim.of(record), None)
        return {"status": "resumed", "cluster": ck, "service": service, "decision": claim.record()}

    # ------------------------------------------------------------------ the interpreter
    def drive(self, ck: str, s: ServiceSummary, claim: Claim, known: Known | None) -> Claim:
        """Perform what the claimed episode owes, effect by effect, until the lease is released
        (:meth:`run`). Returns the claim as it ended (a scale-down may have become a hold or an alert).

        Raises:
            LeaseLostError: the lease was taken over (this invocation outlived it; it stops at once).
            botocore.exceptions.ClientError: a transient AWS error (throttling after retries): the
                phase reached so far is stored, and Lambda's retry resumes from it.
        """
        job = self.run(Job(ck, claim.decision.cluster, s.service, claim=claim, known=known), s)
        assert job.claim is not None
        return job.claim

    def run(self, job: Job, s: ServiceSummary, first: lc.Effect | None = None) -> Job:
        """The one interpreter of the machine's effects: ask :func:`~ecs_guardrail.core.lifecycle.next_effect`
        (or perform ``first``, an effect the caller decided: a probe's pass), perform the effect with its
        performer (:data:`PERFORMERS`), store the transition of its outcome under the lease
        (:meth:`_step`), perform the effects that transition owes after the write (compensations, the
        decision's amendment, the slot's release, a "still failing" alert), and again, until the lease is
        released. A probe's steps are performed only by a probe's job (``job.probe_at``); any other job
        releases the lease over them (the sweep's probe resumes them). Returns the job as it ended (its
        claim's decision, the last outcome stored).

        Raises:
            LeaseLostError: the lease was taken over (this invocation outlived it; it stops at once).
            botocore.exceptions.ClientError: a transient AWS error: the phase reached is stored, and the
                next delivery (or sweep) resumes from it.
        """
        alert_tried = False
        while True:
            ep = s.episode
            assert ep is not None
            effect = first or lc.next_effect(ep, self.owner, alert_tried=alert_tried)
            first = None
            alert_tried = alert_tried or isinstance(effect, lc.SendAlert)
            if effect is None:
                return job
            if isinstance(effect, lc.ReleaseLease) or (job.probe_at is None
                                                       and isinstance(effect, lc.StartProbe | lc.StopProbe)):
                self._step(job.ck, job.service, lc.LeaseReleased())
                return job
            if job.probe_at is None:  # a probe step checks its lease itself, right before its UpdateService
                self._check_lease(job.ck, job.service, ep.lease_until)
            outcome = self._performer(effect)(job, s, effect)
            s, tr = self._step(job.ck, job.service, outcome, job.claim.decision if job.claim else None)
            job = structs.replace(job, last=outcome)
            if tr.decision is not None and job.claim is not None:
                job = structs.replace(job, claim=structs.replace(job.claim, decision=tr.decision))
            for follow in tr.effects:
                self._performer(follow)(job, s, follow)

    def _performer(self, effect: lc.Effect) -> Callable[[Job, ServiceSummary, Any], Any]:
        performer = getattr(self, _PERFORMER_NAMES.get(type(effect).__name__, ""), None)
        if performer is None:
            raise lc.IllegalTransitionError(f"effect {effect!r} has no performer here")
        return performer

    def recover(self, ck: str, cluster: str, service: str) -> bool:
        """Send the episode's owed recovery message, once: the claim (``PENDING`` -> ``SENT``) is a
        conditional write, so of two invocations that both see it owed exactly one sends it. Returns
        True when this invocation sent it (or tried: a delivery that fails is logged and marked
        ``FAILED``; the scheduled sweep owes it again, :mod:`ecs_guardrail.handlers.sweep`)."""
        def claim(s: ServiceSummary) -> ServiceSummary | None:
            ep = s.episode
            if ep is None or ep.recovery is not RecoveryStatus.PENDING:
                return None
            return replace(s, episode=replace(ep, recovery=RecoveryStatus.SENT))

        s, claimed = self.state.update(ck, service, claim)
        ep = s.episode
        if not claimed or ep is None:
            return False
        where = self.out.place(ck, cluster, service)
        detail = None
        if ep.ended_by is EpisodeEnd.RESTORED and ep.acted:
            detail = f"Desired count back to {ep.previous_desired_count}." if ep.previous_desired_count else None
            if ep.probes:
                minutes = int(((ep.ended_at or ep.decision_time) - ep.decision_time).total_seconds() // 60)
                detail = (f"Restored by a probe that passed (probe {ep.probes} of {ep.probes}, after {minutes} min "
                          f"held at zero). " + (detail or ""))
        if ep.ended_by is EpisodeEnd.OPERATOR_RAISED and ep.acted:
            detail = ("A probe found a desired count it had not set (an operator's) and stopped: the watchdog "
                      "changed nothing after that; the count and the scalable target are as the operator has them "
                      "(a scalable target the watchdog suspended stays suspended: `restore` puts its state back).")
        held = self.out.mass_held(ck, service, ep) if ep.reason is Reason.MASS_UNHEALTHY else None
        if held:
            names, still = held
            detail = (f"The mass hold covered {len(names)} services: {', '.join(names)}"
                      + (f"; still in their own episode: {', '.join(still)}." if still else
                         "; none of them is in an episode now.") + (" " + detail if detail else ""))
        alert = recovery_alert(where, action=ep.action, reason=ep.reason.value, decision_time=ep.decision_time,
                               ended_by=(ep.ended_by or EpisodeEnd.QUIET).value,
                               ended_at=ep.ended_at or ep.last_failure, detail=detail, links=self.out.links(where),
                               held=held[0] if held else None)
        if not self.out.deliver(alert):
            logger.error("recovery alert not delivered; the sweep retries it when the service is in its index",
                         extra={"cluster": ck, "service": service})
            decided = ep.decision_time
            self.state.update(ck, service, lambda x: move_recovery(x, decided, RecoveryStatus.SENT,
                                                                   RecoveryStatus.FAILED))
        metrics.add_metric(name="RecoveriesAlerted", unit="Count", value=1)
        return True

    def recover_if_owed(self, ck: str, cluster: str, s: ServiceSummary) -> ServiceSummary:
        """:meth:`recover` when ``s`` owes one; returns the summary as stored afterwards."""
        if not owes_recovery(s):
            return s
        self.recover(ck, cluster, s.service)
        return self.state.load(ck, s.service)


def owes_recovery(s: ServiceSummary) -> bool:
    """The episode of ``s`` ended and its recovery message is owed (``PENDING``): what
    :meth:`Episodes.recover_if_owed` acts on, asked before an invocation makes its episodes."""
    return s.episode is not None and s.episode.recovery is RecoveryStatus.PENDING
