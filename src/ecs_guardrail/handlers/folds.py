"""Writes folded into one (issue 33 item 6: AWS calls per scaling decision), used by the episode
interpreter (:mod:`ecs_guardrail.handlers.episode`):

- :func:`claim_taking_slot`: the claim, the held-at-zero slot and the facts step in ONE TransactWriteItems
  (:meth:`~ecs_guardrail.adapters.store.watchdog_state.WatchdogState.claim_with_slot`) instead of a
  transaction and two PutItems (``Episodes.claim``).
- :func:`release_after_alert`: the alert's outcome and the lease's release in ONE conditional write instead
  of two (``Episodes._step``).

Neither drops a step: the slot is taken under the same conditions as ``take_slot`` (its own slot reused, a
free one written only if still free, else the claim is made alone and the slot taken or denied as before);
the facts recorded are the ones the interpreter would record from the same reads (DescribeServices and the
scalable target, read before the claim); the lease is released only when nothing else is owed (no
compensation, the alert delivered or covered), in the write that proves this invocation still holds it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from msgspec import structs

from ecs_guardrail.adapters.store.watchdog_state import WatchdogState
from ecs_guardrail.core.lazy import lazy_module
from ecs_guardrail.core.records import Action
from ecs_guardrail.core.summary import Phase, ServiceSummary

if TYPE_CHECKING:
    from ecs_guardrail.core import lifecycle as lc
    from ecs_guardrail.handlers.episode_job import Known
else:  # the episode machine: loaded on the first trigger or resume, not by a call that only counts (issue 33.7)
    lc = lazy_module("ecs_guardrail.core.lifecycle")

__all__ = ["claim_taking_slot", "release_after_alert"]


def claim_taking_slot(state: WatchdogState, ck: str, current: ServiceSummary, new: ServiceSummary,
                      record: dict[str, Any], known: Known | None) -> tuple[ServiceSummary, Known | None]:
    """Claim ``new`` (the episode opened over ``current``) with its decision ``record``; for a scale-down
    whose reads this invocation made (``known``), take the slot in the same transaction and store the
    episode with its facts recorded. Returns the summary as stored and ``known`` with the slot in its view
    (so ``take_slot`` reuses it and writes nothing). Raises ``ConditionFailedError`` as ``claim`` does."""
    ep = new.episode
    if known is None or ep is None or ep.action is not Action.SCALE_TO_ZERO \
            or ep.phase is not Phase.CLAIMED:
        return state.claim(ck, current, new, record), known
    slotted = None
    if known.facts is not None and known.scalable_error is None:
        suspended = ep.previous_suspended if ep.previous_suspended is not None else (
            known.scalable.suspended.to_api() if known.scalable is not None else None)
        slotted = lc.transition(new, lc.FactsRecorded(suspended)).summary
    stored, n = state.claim_with_slot(ck, current, new, record, at=ep.decision_time,
                                      bound=max(1, int(record.get("bound") or 1)), view=known.view, slotted=slotted)
    if n is None:
        return stored, known
    return stored, structs.replace(known, view=known.view.with_slot(n, current.service, ep.decision_time))


def release_after_alert(tr: lc.Transition, outcome: lc.Outcome, owner: str) -> lc.Transition:
    """``tr`` (the machine's step for ``outcome``) with the lease released in the same write when the
    alert's outcome leaves nothing else owed: delivered or covered, no effect to perform after storing,
    and the machine's next effect for ``owner`` is the release."""
    if tr.summary is None or tr.effects or not isinstance(outcome, (lc.AlertDelivered, lc.AlertCovered)):
        return tr
    ep = tr.summary.episode
    if ep is None or not isinstance(lc.next_effect(ep, owner, alert_tried=True), lc.ReleaseLease):
        return tr
    return structs.replace(tr, summary=lc.transition(tr.summary, lc.LeaseReleased()).summary)
