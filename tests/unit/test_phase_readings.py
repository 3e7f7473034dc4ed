"""The readings of an episode's stored statuses outside :attr:`Episode.phase` moved to the phase (round 7's
leftovers): each reading the handlers now make of the phase names the same episodes the status did, for
every combination of stored statuses, reason, lease and probe."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

from ecs_guardrail.core.records import Action, Reason
from ecs_guardrail.core.structs import replace
from ecs_guardrail.core.summary import (
    ActionStatus,
    AlertStatus,
    Episode,
    EpisodeEnd,
    Phase,
    RecoveryStatus,
    recovery_owed,
)

T = datetime(2026, 1, 2, 3, 4, tzinfo=UTC)


def _every_episode() -> list[Episode]:
    out = []
    for action_status, alert_status, reason, owner, live in itertools.product(
            ActionStatus, AlertStatus, (Reason.CRASH_LOOP, Reason.ACTION_FAILED), (None, "req/1"), (False, True)):
        out.append(Episode(decision_time=T, last_failure=T, action=Action.SCALE_TO_ZERO, reason=reason,
                           trigger="crash_loop", action_status=action_status, alert_status=alert_status,
                           lease_owner=owner, lease_until=1.0 if owner else 0.0, probe_live=live))
    return out


def test_each_phase_reading_names_the_episodes_its_status_reading_named() -> None:
    for ep in _every_episode():
        # app/timeline.py, replay/run.py, core/summary.mark_restored
        assert ep.released is (ep.action_status is ActionStatus.RESTORED), ep
        # handlers/folds.py: the claim that takes the slot in the same transaction
        assert (ep.phase is Phase.CLAIMED) is (ep.action_status is ActionStatus.PENDING), ep
        # handlers/slots.py: scaled to 0, neither in flight nor probing
        assert (ep.phase in (Phase.ACTED, Phase.HELD)) is (ep.action_status is ActionStatus.DONE), ep
        # handlers/sweep.py: a restored scale-down is never held at zero (the status test was redundant)
        assert not (ep.held_at_zero and ep.action_status is ActionStatus.RESTORED), ep


def test_the_phase_does_not_tell_sent_from_covered_so_recovery_owed_reads_the_alert_status() -> None:
    """A mass hold whose cluster alert another service sent (COVERED) stands in the same phase as one
    whose own alert went out (SENT); only the latter is owed a recovery message."""
    for ep in _every_episode():
        if ep.alert_status is not AlertStatus.SENT:
            continue
        covered = replace(ep, alert_status=AlertStatus.COVERED)
        assert covered.phase is ep.phase, ep
        assert ep.recovery is RecoveryStatus.NONE
        assert not recovery_owed(covered, EpisodeEnd.RESTORED)
        assert recovery_owed(ep, EpisodeEnd.RESTORED)
