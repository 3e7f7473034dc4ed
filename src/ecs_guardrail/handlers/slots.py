"""Rule 5's slots of a cluster's bound on services held at zero, freed when they are no longer held.

A held service stays held while its episode's action is in flight; ECS is asked (DescribeServices
``desiredCount``) only about a finished scale-down, and its slot is freed after the episode ended
``operator_raised`` in one conditional write (the machine's ``OperatorRaised`` transition).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from ecs_guardrail.adapters.store.watchdog_state import ClusterView, UnreadableSummaryError, WatchdogState
from ecs_guardrail.core.errors import ServiceAccessDeniedError, ServiceNotFoundError
from ecs_guardrail.core.lazy import lazy_module
from ecs_guardrail.core.summary import Episode, Phase, ServiceSummary
from ecs_guardrail.handlers.runtime import logger

if TYPE_CHECKING:
    from ecs_guardrail.core import lifecycle as lc
    from ecs_guardrail.handlers.episode import Episodes
else:  # the episode machine: loaded on the first trigger or resume, not by a call that only counts (issue 33.7)
    lc = lazy_module("ecs_guardrail.core.lifecycle")

__all__ = ["free_raised", "end_raised"]


def free_raised(episodes: Episodes, ck: str, cluster: str, service: str, view: ClusterView, bound: int,
                at: datetime) -> tuple[str, ...]:
    """The other services held at zero in ``view`` (cluster key ``ck``). When they fill ``bound`` (a
    count of services), free the slots that are no longer held: a service whose scale-down is *done* and
    whose desired count an operator raised (ECS re-read), and a slot whose episode already ended restored
    (a restore that died before freeing it). A service whose action is in flight stays held, whatever its
    desired count says."""
    state, ecs = episodes.state, episodes.rt.ecs
    held = tuple(h for h in view.held() if h != service)
    if len(held) + 1 <= bound or ecs is None:
        return held
    eps = {x: _episode(state, ck, x) for x in held}  # at most the bound
    still = []
    for other in held:
        ep = eps.get(other)
        if ep is not None and not ep.held_at_zero and not ep.in_flight:
            state.release_slot(ck, other, view)  # a finished restore's slot
            continue
        if ep is None or (ep.phase is not Phase.ACTED and ep.phase is not Phase.HELD):  # scaled to 0, not probing
            still.append(other)  # in flight (or unknown): held
            continue
        try:
            facts = ecs.describe(cluster, other)
        except (ServiceNotFoundError, ServiceAccessDeniedError):
            facts = None
        if facts is not None and facts.desired_count > 0 and end_raised(episodes, ck, cluster, other, at):
            state.release_slot(ck, other, view)
            logger.info("held service raised by an operator: slot freed", extra={"service": other})
        else:
            still.append(other)
    return tuple(still)


def _episode(state: WatchdogState, ck: str, service: str) -> Episode | None:
    """``service``'s episode, or ``None`` when its stored summary is unreadable (then it stays held: one
    service's corrupt item must not stop the decisions of every other service of the cluster)."""
    try:
        return state.load(ck, service, fresh=True).episode
    except UnreadableSummaryError as exc:
        logger.error("held service's summary unreadable: it stays held", extra={"service": service,
                                                                                 "error": str(exc)})
        return None


def end_raised(episodes: Episodes, ck: str, cluster: str, service: str, at: datetime) -> bool:
    """End ``service``'s scale-down as restored by an operator at ``at`` (conditional on the phase at
    write time); True when this write did it. Its recovery message then goes out."""
    def change(s: ServiceSummary) -> ServiceSummary | None:
        if s.episode is None:
            return None
        try:
            return lc.transition(s, lc.OperatorRaised(at)).summary
        except lc.IllegalTransitionError:
            return None

    state = episodes.state
    state.load(ck, service)
    s, changed = state.update(ck, service, change)
    if changed:
        episodes.recover_if_owed(ck, cluster, s)
    return changed
