"""The episode state machine (core/lifecycle.py): every path, without AWS (issue 17)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ecs_guardrail.core import lifecycle as lc
from ecs_guardrail.core.records import Action, Decision, Reason
from ecs_guardrail.core.structs import replace
from ecs_guardrail.core.summary import ActionStatus, AlertStatus, Episode, RecoveryStatus, ServiceSummary

T = datetime(2025, 8, 21, 12, 0, tzinfo=UTC)
ME = "req-1/abcd"
PREV = {"DynamicScalingInSuspended": True, "DynamicScalingOutSuspended": False, "ScheduledScalingSuspended": False}


def _decision(action: Action = Action.SCALE_TO_ZERO) -> Decision:
    return Decision(cluster="dev", service="api", time=T, action=action, reason=Reason.CRASH_LOOP,
                    crashes_in_window=3, health_check_kills_in_window=0, message="scaled to 0.", bound=1)


def _claimed(action: Action = Action.SCALE_TO_ZERO, owner: str = ME, until: float = 10_000.0) -> ServiceSummary:
    ep = Episode(decision_time=T, last_failure=T, action=action, reason=Reason.CRASH_LOOP, trigger="crash_loop",
                 action_status=ActionStatus.PENDING if action is Action.SCALE_TO_ZERO else ActionStatus.NONE,
                 alert_status=AlertStatus.PENDING, previous_desired_count=4, lease_owner=owner, lease_until=until)
    return ServiceSummary("api", seq=1, episode=ep)


def _walk(s: ServiceSummary, outcomes: list[lc.Outcome]) -> tuple[ServiceSummary, list[lc.Effect], list[lc.Effect]]:
    """Apply ``outcomes``; returns the summary, the effects asked for on the way, and the follow-ups."""
    asked: list[lc.Effect] = []
    follow: list[lc.Effect] = []
    d = _decision()
    for o in outcomes:
        eff = lc.next_effect(s.episode, ME)
        assert eff is not None
        asked.append(eff)
        tr = lc.transition(s, o, d)
        s = tr.summary or s
        d = tr.decision or d
        follow.extend(tr.effects)
    return s, asked, follow


def test_scale_down_records_the_scaling_state_before_suspending_and_acts_once():
    s, asked, follow = _walk(_claimed(), [lc.FactsRecorded(PREV), lc.ScalingSuspended(), lc.Scaled(),
                                          lc.AlertDelivered(), lc.LeaseReleased()])
    assert [type(e) for e in asked] == [lc.RecordFacts, lc.SuspendScaling, lc.ScaleToZero, lc.SendAlert,
                                        lc.ReleaseLease]
    assert asked[1] == lc.SuspendScaling(PREV) and asked[2] == lc.ScaleToZero(4)
    ep = s.episode
    assert ep.action_status is ActionStatus.DONE and ep.previous_suspended == PREV and ep.lease_owner is None
    assert ep.phase is lc.Phase.HELD and follow == []
    assert lc.next_effect(ep, ME) is None  # nothing owed, no lease


def test_phases_in_order():
    s = _claimed()
    seen = [s.episode.phase]
    for o in (lc.FactsRecorded(PREV), lc.ScalingSuspended(), lc.Scaled(), lc.AlertDelivered(), lc.LeaseReleased()):
        s = lc.transition(s, o, _decision()).summary
        seen.append(s.episode.phase)
    assert seen == [lc.Phase.CLAIMED, lc.Phase.FACTS_RECORDED, lc.Phase.SCALING_SUSPENDED, lc.Phase.ACTED,
                    lc.Phase.HELD, lc.Phase.HELD]
    s = lc.transition(s, lc.OperatorRaised(T + timedelta(hours=1))).summary
    assert s.episode.phase is lc.Phase.RELEASED


def test_without_a_scalable_target_or_already_suspended_no_suspension_is_asked():
    s, asked, _ = _walk(_claimed(), [lc.FactsRecorded(None), lc.Scaled()])
    assert [type(e) for e in asked] == [lc.RecordFacts, lc.ScaleToZero]
    every = {k: True for k in PREV}
    s, asked, _ = _walk(_claimed(), [lc.FactsRecorded(every), lc.Scaled()])
    assert [type(e) for e in asked] == [lc.RecordFacts, lc.ScaleToZero]


def test_recorded_scaling_state_can_never_be_overwritten():
    """Issue 17 item 2: a retry after the suspension must not record the watchdog's own suspension."""
    s = lc.transition(_claimed(), lc.FactsRecorded(PREV), _decision()).summary
    with pytest.raises(lc.IllegalTransitionError):
        lc.transition(s, lc.FactsRecorded({k: True for k in PREV}), _decision())
    s = lc.transition(s, lc.ScalingSuspended(), _decision()).summary
    with pytest.raises(lc.IllegalTransitionError):
        lc.transition(s, lc.FactsRecorded({k: True for k in PREV}), _decision())
    assert s.episode.previous_suspended == PREV


def test_slot_denied_becomes_a_hold_with_one_author_of_its_message():
    tr = lc.transition(_claimed(), lc.SlotDenied(("billing",), 1), _decision())
    ep = tr.summary.episode
    assert (ep.action, ep.reason, ep.action_status) == (Action.HOLD, Reason.BLAST_RADIUS_CAP, ActionStatus.NONE)
    [amend] = tr.effects
    assert isinstance(amend, lc.AmendDecision) and amend.decision == tr.decision
    assert tr.decision.message.startswith("held: billing took the last held-at-zero slot of dev (bound 1)")
    assert tr.decision.evidence == {"held_at_zero": ["billing"], "bound": 1}
    assert lc.next_effect(ep, ME) == lc.SendAlert()


@pytest.mark.parametrize("at", [ActionStatus.PENDING, ActionStatus.RECORDED])
def test_suspend_refused_is_an_alert_and_gives_the_slot_back(at):
    s = _claimed()
    if at is ActionStatus.RECORDED:
        s = lc.transition(s, lc.FactsRecorded(PREV), _decision()).summary
    tr = lc.transition(s, lc.SuspendRefused("AccessDeniedException: no"), _decision())
    assert tr.decision.reason is Reason.SCALING_SUSPEND_FAILED and tr.decision.action is Action.ALERT_ONLY
    assert [type(e) for e in tr.effects] == [lc.ReleaseSlot, lc.AmendDecision]
    assert tr.summary.episode.phase is lc.Phase.REFUSED
    assert lc.next_effect(tr.summary.episode, ME) == lc.SendAlert()


@pytest.mark.parametrize("steps", [[], [lc.FactsRecorded(PREV)], [lc.FactsRecorded(PREV), lc.ScalingSuspended()]])
def test_refused_action_puts_scaling_back_frees_the_slot_and_alerts(steps):
    """Issue 17 item 4: a refused action never swallows its alert."""
    s = _claimed()
    for o in steps:
        s = lc.transition(s, o, _decision()).summary
    tr = lc.transition(s, lc.ActionRefused("AccessDeniedException: explicit deny"), _decision())
    kinds = [type(e) for e in tr.effects]
    assert kinds == ([lc.ResumeScaling] if steps else []) + [lc.ReleaseSlot, lc.AmendDecision]
    if steps:
        assert tr.effects[0] == lc.ResumeScaling(PREV)
    assert (tr.decision.action, tr.decision.reason) == (Action.ALERT_ONLY, Reason.ACTION_FAILED)
    assert "explicit deny" in tr.decision.message and tr.decision.evidence["action_error"].startswith("Access")
    assert lc.next_effect(tr.summary.episode, ME) == lc.SendAlert()
    assert not tr.summary.episode.held_at_zero


@pytest.mark.parametrize("steps", [[], [lc.FactsRecorded(PREV)], [lc.FactsRecorded(PREV), lc.ScalingSuspended()]])
def test_an_action_in_flight_is_never_read_as_an_operators_raise(steps):
    """Issue 17 item 1: a raise seen while another invocation is inside the scale-down frees nothing."""
    s = _claimed()
    for o in steps:
        s = lc.transition(s, o, _decision()).summary
    with pytest.raises(lc.IllegalTransitionError, match="in flight"):
        lc.transition(s, lc.OperatorRaised(T))
    s = lc.transition(s, lc.FactsRecorded(PREV), _decision()).summary if not steps else s
    s = lc.transition(s, lc.Scaled(), _decision()).summary
    tr = lc.transition(s, lc.OperatorRaised(T + timedelta(minutes=5)))
    assert tr.summary.episode.action_status is ActionStatus.RESTORED and tr.effects == (lc.ReleaseSlot(),)


def test_no_alert_before_the_action_and_none_twice():
    with pytest.raises(lc.IllegalTransitionError):
        lc.transition(_claimed(), lc.AlertDelivered(), _decision())
    s = lc.transition(_claimed(Action.ALERT_ONLY), lc.AlertDelivered(), _decision()).summary
    with pytest.raises(lc.IllegalTransitionError):
        lc.transition(s, lc.AlertDelivered(), _decision())


def test_a_failed_alert_is_tried_once_per_invocation():
    s = lc.transition(_claimed(Action.ALERT_ONLY), lc.AlertFailed(), _decision()).summary
    assert s.episode.alert_status is AlertStatus.FAILED
    assert lc.next_effect(s.episode, ME) == lc.SendAlert()
    assert lc.next_effect(s.episode, ME, alert_tried=True) == lc.ReleaseLease()


def test_lease_outlives_its_holder():
    """Issue 17 item 3: remaining time plus a margin, never less (was remaining time minus 5 s)."""
    assert lc.lease_until(1000.0, 5.0) == 1000.0 + 5.0 + lc.LEASE_MARGIN_S
    assert lc.lease_until(1000.0, 0.0) >= 1000.0 + lc.LEASE_MARGIN_S
    assert lc.lease_until(1000.0, None) == 1000.0 + lc.DEFAULT_REMAINING_S + lc.LEASE_MARGIN_S
    for remaining in (0.5, 3.0, 60.0, 900.0):
        assert lc.lease_until(0.0, remaining) > remaining


def test_a_live_lease_cannot_be_taken_over_an_expired_one_can():
    s = _claimed(owner="other", until=500.0)
    assert lc.next_effect(s.episode, ME) is None
    assert not lc.may_take_over(s.episode, ME, 499.0)
    with pytest.raises(lc.IllegalTransitionError):
        lc.transition(s, lc.LeaseTaken(ME, 900.0, 499.0))
    assert lc.may_take_over(s.episode, ME, 500.0)
    s = lc.transition(s, lc.LeaseTaken(ME, 900.0, 500.0)).summary
    assert s.episode.lease_owner == ME and lc.next_effect(s.episode, ME) == lc.RecordFacts(1)


def test_a_lease_longer_than_any_invocation_is_corrupt_and_can_be_taken_over():
    """A stored lease_until no invocation could have written (year 33,000: a lease owner that never
    returns) held the episode and its service forever: every delivery was DecisionInProgressError."""
    from ecs_guardrail.core.summary import LEASE_LONGEST_S

    now = 1_000_000.0
    longest = lc.lease_until(now, lc.DEFAULT_REMAINING_S)
    assert longest - now <= LEASE_LONGEST_S
    live = _claimed(owner="ghost", until=longest)
    assert not lc.may_take_over(live.episode, ME, now) and live.episode.leased(now)
    for until in (now + LEASE_LONGEST_S + 1, 1e18):
        s = _claimed(owner="ghost", until=until)
        assert not s.episode.leased(now) and lc.may_take_over(s.episode, ME, now)
        taken = lc.transition(s, lc.LeaseTaken(ME, lc.lease_until(now, 5.0), now)).summary
        assert taken.episode.lease_owner == ME and lc.next_effect(taken.episode, ME) == lc.RecordFacts(1)
        assert lc.transition(s, lc.Restored(T, now)).summary.episode.action_status is ActionStatus.RESTORED


@pytest.mark.parametrize("action", [Action.ALERT_ONLY, Action.HOLD])
@pytest.mark.parametrize("status", [ActionStatus.PENDING, ActionStatus.RECORDED, ActionStatus.SUSPENDED])
def test_a_stored_non_scale_down_with_a_scale_down_in_flight_is_never_scaled(action, status):
    """A corrupt episode (an alert-only or hold decision, a scale-down status in flight): the machine
    asked RecordFacts then ScaleToZero, and would have scaled a service its decision did not scale."""
    s = _claimed(action=action)
    s = replace(s, episode=replace(s.episode, action_status=status, previous_suspended=PREV))
    assert lc.next_effect(s.episode, ME) == lc.ReleaseLease()
    for outcome in (lc.FactsRecorded(PREV), lc.SlotDenied(("web",), 1), lc.ScalingSuspended(), lc.Scaled()):
        with pytest.raises(lc.IllegalTransitionError, match="only a scale-down"):
            lc.transition(s, outcome, _decision(action))


def test_restore_refuses_an_action_in_flight_under_a_live_lease():
    s = _claimed(owner="other", until=500.0)
    with pytest.raises(lc.IllegalTransitionError, match="in flight"):
        lc.transition(s, lc.Restored(T, 100.0))
    tr = lc.transition(s, lc.Restored(T, 600.0))  # its holder is dead: restore may end it
    assert tr.summary.episode.action_status is ActionStatus.RESTORED and tr.effects == (lc.ReleaseSlot(),)
    assert tr.summary.episode.lease_owner is None


def test_restore_of_a_done_scale_down_owes_its_recovery():
    s = _claimed()
    for o in (lc.FactsRecorded(None), lc.Scaled(), lc.AlertDelivered(), lc.LeaseReleased()):
        s = lc.transition(s, o, _decision()).summary
    tr = lc.transition(s, lc.Restored(T + timedelta(hours=2), 0.0))
    assert tr.summary.episode.recovery is RecoveryStatus.PENDING
    assert lc.transition(tr.summary, lc.Restored(T, 0.0)).summary is None  # twice changes nothing


OUTCOMES = st.sampled_from([
    lc.FactsRecorded(PREV), lc.FactsRecorded(None), lc.SlotDenied(("x",), 1), lc.ScalingSuspended(),
    lc.SuspendRefused("e"), lc.Scaled(), lc.ActionRefused("e"), lc.AlertDelivered(), lc.AlertFailed(),
    lc.AlertCovered(), lc.LeaseReleased(), lc.OperatorRaised(T)])


@settings(max_examples=300, deadline=None)
@given(st.lists(OUTCOMES, max_size=12))
def test_any_sequence_of_outcomes_keeps_the_invariants(outcomes):
    """Whatever the order outcomes arrive in, an illegal one changes nothing, the recorded scaling state
    never changes once recorded, nothing is scaled twice, and nothing held is released in flight."""
    s, d = _claimed(), _decision()
    recorded = None
    scaled = 0
    for o in outcomes:
        before = s
        try:
            tr = lc.transition(s, o, d)
        except lc.IllegalTransitionError:
            assert s is before
            continue
        if isinstance(o, lc.Scaled):
            scaled += 1
        if isinstance(o, lc.OperatorRaised):
            assert before.episode.action_status is ActionStatus.DONE
        s = tr.summary or s
        d = tr.decision or d
        ep = s.episode
        if recorded is not None and ep.action_status in (ActionStatus.RECORDED, ActionStatus.SUSPENDED,
                                                          ActionStatus.DONE):
            assert ep.previous_suspended == recorded
        if ep.action_status is ActionStatus.RECORDED and recorded is None:
            recorded = ep.previous_suspended
        assert ep.held_at_zero == (ep.action is Action.SCALE_TO_ZERO and ep.action_status in (
            ActionStatus.PENDING, ActionStatus.RECORDED, ActionStatus.SUSPENDED, ActionStatus.DONE))
    assert scaled <= 1


def test_every_phase_is_reachable():
    reached = set()
    held = [lc.FactsRecorded(None), lc.Scaled(), lc.AlertDelivered(), lc.LeaseReleased()]
    for action, steps in ((Action.SCALE_TO_ZERO, []), (Action.SCALE_TO_ZERO, [lc.FactsRecorded(PREV)]),
                          (Action.SCALE_TO_ZERO, [lc.FactsRecorded(PREV), lc.ScalingSuspended()]),
                          (Action.SCALE_TO_ZERO, [lc.FactsRecorded(None), lc.Scaled()]),
                          (Action.SCALE_TO_ZERO, [lc.ActionRefused("e")]),
                          (Action.SCALE_TO_ZERO, held),
                          (Action.SCALE_TO_ZERO, [*held, lc.OperatorRaised(T)]),
                          (Action.SCALE_TO_ZERO, [lc.FactsRecorded(None), lc.Scaled(), lc.Restored(T, 0.0)]),
                          (Action.SCALE_TO_ZERO, [*held, lc.ProbeClaimed(T)]),
                          (Action.SCALE_TO_ZERO, [*held, lc.ProbeClaimed(T), lc.ProbeStarted()]),
                          (Action.SCALE_TO_ZERO, [*held, lc.ProbeClaimed(T), lc.ProbeStarted(), lc.ProbeFailed(T)]),
                          (Action.ALERT_ONLY, []), (Action.ALERT_ONLY, [lc.AlertDelivered()]),
                          (Action.ALERT_ONLY, [lc.AlertDelivered(), lc.LeaseReleased()])):
        s = _claimed(action)
        for o in steps:
            s = lc.transition(s, o, _decision()).summary
        reached.add(s.episode.phase)
    assert reached == set(lc.Phase)


def test_alert_only_episodes_owe_only_their_alert():
    s = _claimed(Action.ALERT_ONLY)
    assert s.episode.phase is lc.Phase.ALERT_OWED and lc.next_effect(s.episode, ME) == lc.SendAlert()
    s = replace(s, episode=replace(s.episode, alert_status=AlertStatus.SENT))
    assert lc.next_effect(s.episode, ME) == lc.ReleaseLease()


# ---------------------------------------------------------------------------------------------- probes (issue 21)
PROBES = lc.ProbeSettings(delay_minutes=15, max_delay_minutes=60, pass_minutes=10)


def _held() -> ServiceSummary:
    """A scale-down done and alerted, lease released: held at zero (phase HELD)."""
    s = _claimed()
    for o in (lc.FactsRecorded(PREV), lc.ScalingSuspended(), lc.Scaled(), lc.AlertDelivered(), lc.LeaseReleased()):
        s = lc.transition(s, o, _decision()).summary
    return s


def _lease(s: ServiceSummary, now: float = 1.0) -> ServiceSummary:
    return lc.transition(s, lc.LeaseTaken(ME, 1_000.0, now)).summary


def test_first_probe_is_due_after_the_delay_and_runs_with_scaling_still_suspended():
    s = _held()
    assert lc.probe_due(s.episode, T + timedelta(minutes=14), PROBES) is None
    assert lc.probe_due(s.episode, T + timedelta(minutes=15), PROBES) == "start"
    s = lc.transition(_lease(s), lc.ProbeClaimed(T + timedelta(minutes=15))).summary
    ep = s.episode
    assert ep.phase is lc.Phase.PROBE_CLAIMED and ep.probes == 1 and not ep.probe_live
    assert ep.held_at_zero and not ep.in_flight  # still held for the cap; not an action in flight
    assert lc.next_effect(ep, ME) == lc.StartProbe()
    assert lc.probe_due(ep, T + timedelta(minutes=15), PROBES) == "resume"  # a death here: the next sweep starts it
    s = lc.transition(s, lc.ProbeStarted()).summary
    assert lc.next_effect(s.episode, ME) == lc.ReleaseLease()
    assert lc.probe_due(s.episode, T + timedelta(minutes=24), PROBES) is None
    assert lc.probe_due(s.episode, T + timedelta(minutes=25), PROBES) == "pass"
    assert s.episode.previous_suspended == PREV  # what restore puts back is untouched by the probe


def test_a_probe_is_never_read_as_an_operators_raise():
    s = lc.transition(_lease(_held()), lc.ProbeClaimed(T)).summary
    with pytest.raises(lc.IllegalTransitionError):
        lc.transition(s, lc.OperatorRaised(T))
    s = lc.transition(lc.transition(s, lc.ProbeStarted()).summary, lc.ProbeFailed(T)).summary
    with pytest.raises(lc.IllegalTransitionError):
        lc.transition(s, lc.OperatorRaised(T))


def test_failed_probes_double_the_delay_up_to_the_cap_and_alert_once_there():
    s = _held()
    delays, alerts = [], []
    at = T + timedelta(minutes=15)
    for _ in range(5):
        s = lc.transition(_lease(s), lc.ProbeClaimed(at)).summary
        s = lc.transition(s, lc.ProbeStarted()).summary
        s = lc.transition(s, lc.ProbeFailed(at + timedelta(minutes=1))).summary
        assert s.episode.phase is lc.Phase.PROBE_FAILED
        assert lc.next_effect(s.episode, ME) == lc.StopProbe(4)
        tr = lc.transition(s, lc.ProbeStopped(at + timedelta(minutes=1), PROBES))
        s = lc.transition(tr.summary, lc.LeaseReleased()).summary
        alerts.extend(tr.effects)
        delays.append(s.episode.probe_delay_minutes)
        assert s.episode.probe_at == at + timedelta(minutes=1 + s.episode.probe_delay_minutes)
        at = s.episode.probe_at
    assert delays == [30, 60, 60, 60, 60]
    assert [(type(a), a.probes) for a in alerts] == [(lc.SendStillFailing, 2)]  # once, the first time at the cap
    assert s.episode.probes == 5 and s.episode.held_at_zero


def test_a_passed_probe_restores_and_frees_the_slot_with_its_recovery_owed():
    s = lc.transition(_lease(_held()), lc.ProbeClaimed(T)).summary
    with pytest.raises(lc.IllegalTransitionError, match="no probe task"):
        lc.transition(s, lc.ProbePassed(T))  # never "passes" a probe that was never asked for
    s = lc.transition(s, lc.ProbeStarted()).summary
    tr = lc.transition(s, lc.ProbePassed(T + timedelta(minutes=10)))
    ep = tr.summary.episode
    assert ep.action_status is ActionStatus.RESTORED and ep.phase is lc.Phase.RELEASED
    assert ep.recovery is RecoveryStatus.PENDING and ep.lease_owner is None and tr.effects == (lc.ReleaseSlot(),)


def test_probes_only_for_an_alerted_scale_down_and_restore_waits_for_a_running_probe_step():
    alert = _claimed(Action.ALERT_ONLY)
    with pytest.raises(lc.IllegalTransitionError):
        lc.transition(alert, lc.ProbeClaimed(T))
    assert lc.probe_due(alert.episode, T + timedelta(days=1), PROBES) is None
    pending = lc.transition(lc.transition(_claimed(), lc.FactsRecorded(None)).summary, lc.Scaled()).summary
    assert lc.probe_due(pending.episode, T + timedelta(days=1), PROBES) is None  # its alert is still owed
    failing = lc.transition(lc.transition(lc.transition(_lease(_held()), lc.ProbeClaimed(T)).summary,
                                          lc.ProbeStarted()).summary, lc.ProbeFailed(T)).summary
    with pytest.raises(lc.IllegalTransitionError, match="in flight"):
        lc.transition(failing, lc.Restored(T, 1.0))  # "back to 0" is owed under a live lease
    assert lc.transition(failing, lc.Restored(T, 2_000.0)).summary.episode.action_status is ActionStatus.RESTORED


def test_next_delay_doubles_from_the_first_delay():
    assert lc.next_delay_minutes(0, PROBES) == 30
    assert lc.next_delay_minutes(30, PROBES) == 60
    assert lc.next_delay_minutes(60, PROBES) == 60
