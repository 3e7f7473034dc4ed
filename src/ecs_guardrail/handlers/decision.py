"""The decision recipe of one trigger (ARCHITECTURE.md, "Decision policy", rules 2 to 5): resume an
unfinished episode, :func:`~ecs_guardrail.core.policy.detect`, gather the facts once (reads:
:mod:`ecs_guardrail.adapters.decision_reads`; rule 4's verdict: :mod:`ecs_guardrail.core.decision_facts`),
:func:`~ecs_guardrail.core.policy.decide`, and claim through :class:`~ecs_guardrail.handlers.episode.Episodes`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ecs_guardrail.adapters.decision_reads import (
    ServiceRead,
    read_fleet,
    read_scalable,
    read_service,
    read_service_deployments,
)
from ecs_guardrail.core.decision_facts import entitle, open_episode_key
from ecs_guardrail.core.entitlement import ScalableTargetFacts
from ecs_guardrail.core.errors import DecisionInProgressError
from ecs_guardrail.core.lazy import lazy_module
from ecs_guardrail.core.policy import Entitlement, PolicyConfig, Trigger, decide, detect, is_alert_only_cluster
from ecs_guardrail.core.records import TriggerKind
from ecs_guardrail.core.summary import ServiceSummary, episode_is_open, reevaluated
from ecs_guardrail.handlers import hold, slots
from ecs_guardrail.handlers.episode import Claim, Known
from ecs_guardrail.handlers.probe import ProbingEpisodes
from ecs_guardrail.handlers.runtime import Runtime, logger

if TYPE_CHECKING:
    from ecs_guardrail.core import lifecycle as lc
    from ecs_guardrail.handlers.outbox import Outbox
else:  # the episode machine: loaded on the first trigger or resume, not by a call that only counts (issue 33.7)
    lc = lazy_module("ecs_guardrail.core.lifecycle")

__all__ = ["Decider", "CLAIM_ATTEMPTS"]

#: claims one event tries before it gives up for a Lambda retry (each failed one re-reads and detects again)
CLAIM_ATTEMPTS = 4


class Decider:
    """Rules 2 to 5 over one service's trigger, for one invocation: ``episodes`` claims and drives what
    is decided (its ``decisions`` are the invocation's)."""

    def __init__(self, rt: Runtime, episodes: ProbingEpisodes | Callable[[], ProbingEpisodes], *,
                 config: PolicyConfig | None = None) -> None:
        """``episodes``: the invocation's, or what makes them on first use (a failure that only counts, about
        every stop of a fleet, needs no episode I/O, lease owner id or outbox: issue 33.2); ``config``: the
        settings' :class:`PolicyConfig` when the caller has it already."""
        self.rt = rt
        self.config = config if config is not None else rt.settings.policy()
        self.state = rt.history.state
        if isinstance(episodes, ProbingEpisodes):
            self.__dict__["episodes"] = episodes
        else:
            self._make_episodes = episodes

    @functools.cached_property
    def episodes(self) -> ProbingEpisodes:
        """The invocation's episode I/O (claim, resume, hold), made on first use."""
        return self._make_episodes()

    @property
    def out(self) -> Outbox:
        """The episodes' outbox (the alerts' reads)."""
        return self.episodes.out

    def evaluate(self, ck: str, cluster: str, cluster_arn: str, service: str, s: ServiceSummary, at: datetime,
                  *, impaired: bool, foreign: str | None) -> dict[str, Any]:
        """Resume, :func:`detect`, and decide; a claim whose condition failed is not a lost race by itself
        (issue 30 item 5): the write that changed the summary may claim nothing (an old deployment event, a
        Spot notice, a steady state, a quiet window moved on). Reload and detect again; ``lost_race`` only
        when an episode is open now that was not before (another invocation decided).

        Raises:
            DecisionInProgressError: the summary kept changing under :data:`CLAIM_ATTEMPTS` claims in a
                row (Lambda retries the event; nothing was decided, nothing is lost).
        """
        before = open_episode_key(s)
        for _ in range(CLAIM_ATTEMPTS):
            out = self._evaluate_once(ck, cluster, cluster_arn, service, s, at, impaired=impaired, foreign=foreign)
            if out.get("status") != "claim_conflict":
                return out
            s = self.state.load(ck, service, fresh=True)
            now = open_episode_key(s)
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
            held = hold.held_at_zero(self.episodes, ck, cluster, service, s, at)
            if held is not None:
                return held
            s = self.state.load(ck, service, fresh=True)  # raised by an operator: the hold ended just now
            trigger = None if lc.holds_decisions(s) else detect(self.config, s, at, impaired=impaired)
        if trigger is None:
            if s.episode is not None and episode_is_open(s, at, self.config.window):
                return {"status": "in_episode", "decided": s.episode.action.value}
            return {"status": "counted"}
        return self._decide(ck, cluster, cluster_arn, s, trigger, foreign)

    def _entitle(self, trigger: Trigger, cluster: str, cluster_arn: str, read: ServiceRead, foreign: str | None,
                 s: ServiceSummary) -> tuple[Entitlement, ScalableTargetFacts | None, str | None]:
        """Rule 4 over the facts gathered once for this decision (the reads: adapters/decision_reads.py;
        the verdict: core/decision_facts.py). Returns the entitlement, the scalable target (``None``:
        none) and why it could not be read."""
        facts, config, rt = read.facts, self.config, self.rt
        scalable, unreadable = None, None
        serving: tuple[Any, ...] = ()
        if facts is not None and trigger.kind is not TriggerKind.HEALTH_CHECK_KILLS:
            scalable, error = read_scalable(rt.clients, config.alert_only, cluster, s.service)
            if error is not None:
                unreadable = error.reason
                logger.warning("scalable target unreadable", extra={"error": str(error)})
            serving = self.out.serving(facts, trigger.time)
        ent = entitle(trigger.kind, trigger.time, cluster=cluster, s=s,
                      fields=facts.entitlement_fields() if facts is not None else None, why=read.why,
                      denied=read.denied, serving=serving,
                      service_deployments=read_service_deployments(rt.ecs, cluster, s.service, facts),
                      alert_only_cluster=is_alert_only_cluster(config, cluster,
                                                               facts.cluster_arn if facts else cluster_arn),
                      alert_only_patterns=config.alert_only_clusters, elsewhere=foreign, dry_run=config.dry_run,
                      scalable=scalable)
        return ent, scalable, unreadable

    def _decide(self, ck: str, cluster: str, cluster_arn: str, s: ServiceSummary, trigger: Trigger,
                foreign: str | None) -> dict[str, Any]:
        service = s.service
        read = read_service(self.rt.ecs, cluster, service, foreign)
        if read.facts is None and foreign is None:
            logger.warning("service not readable; deciding without its facts", extra={"error": read.why})
        facts = read.facts
        fleet = read_fleet(self.state, self.config, ck, service, trigger.time, read.count)
        view = self.state.slots_view(ck)
        ent, scalable, unreadable = self._entitle(trigger, cluster, cluster_arn, read, foreign, s)
        held = (slots.free_raised(self.episodes, ck, cluster, service, view, fleet.bound, trigger.time)
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
