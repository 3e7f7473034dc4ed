"""Every rule of the decision policy (ARCHITECTURE.md, "Decision policy"), without AWS.

The policy reads one bounded :class:`ServiceSummary` per service (core/summary.py); these tests build
summaries directly and check :func:`detect`, :func:`fleet_view`, :func:`decide` and the bound.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ecs_guardrail.core.classify import StopKind
from ecs_guardrail.core.policy import (
    Action,
    Entitlement,
    Failure,
    FleetView,
    PolicyConfig,
    Reason,
    blast_radius_bound,
    decide,
    detect,
    fleet_view,
    is_alert_only_cluster,
)
from ecs_guardrail.core.structs import replace
from ecs_guardrail.core.summary import ActionStatus, AlertStatus, Episode, EpisodeEnd, ServiceSummary, count_minutes

T0 = datetime(2025, 8, 21, 10, 0, tzinfo=UTC)
CFG = PolicyConfig(alert_only_clusters=("production",))
W = CFG.window


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def fails(service: str, minutes: list[float], kind: StopKind = StopKind.CRASH, tag: str = "") -> tuple[Failure, ...]:
    k = "c" if kind is StopKind.CRASH else "k"
    return tuple(Failure(service, at(m), kind, task_arn=f"{service}-{k}{tag}-{i}") for i, m in enumerate(minutes))


def summary(service: str = "api", crashes: list[float] = (), kills: list[float] = (), **kw) -> ServiceSummary:
    c, k = fails(service, list(crashes)), fails(service, list(kills), StopKind.HEALTH_CHECK_KILL)
    return ServiceSummary(service, crashes=c, kills=k, minutes=count_minutes(c + k, horizon=2 * W), **kw)


def episode(decided: float, last: float, reason: Reason = Reason.CRASH_LOOP, action: Action = Action.ALERT_ONLY,
            status: ActionStatus = ActionStatus.NONE, escalated: bool = False) -> Episode:
    return Episode(decision_time=at(decided), last_failure=at(last), action=action, reason=reason,
                   trigger=reason.value if reason is Reason.HEALTH_CHECK_KILLS else "crash_loop",
                   action_status=status, alert_status=AlertStatus.SENT, escalated=escalated)


# ---------------------------------------------------------------- rule 1: detection
def test_threshold_crashes_in_window_is_a_crash_loop():
    t = detect(CFG, summary(crashes=[0, 5, 10, 15, 20]), at(20))
    assert t is not None and t.kind == "crash_loop" and t.crashes == 5 and t.health_check_kills == 0
    assert t.time == at(20) and not t.escalation
    assert [f.time for f in t.last_failures] == [at(m) for m in (0, 5, 10, 15, 20)]


def test_threshold_exact_with_both_window_ends_included():
    # [T - W, T]: the crash at exactly T - 30 min counts, so 5 crashes span exactly one window
    t = detect(CFG, summary(crashes=[0, 10, 20, 25, 30]), at(30))
    assert t is not None and t.crashes == 5 and t.time == at(30)
    # one second more and the oldest falls out: 4 in the window, no loop
    s = summary(crashes=[0, 10, 20, 25])
    s = replace(s, crashes=s.crashes + (Failure("api", at(30) + timedelta(seconds=1), StopKind.CRASH, "late"),))
    assert detect(CFG, s, at(30)) is None
    # the newest end: T itself is included
    assert detect(CFG, summary(crashes=[30, 30, 30, 30, 30]), at(30)).crashes == 5


def test_threshold_minus_one_is_not_a_loop():
    assert detect(CFG, summary(crashes=[0, 5, 10, 15]), at(15)) is None
    spread = summary(crashes=[0, 10, 20, 30, 40])  # 5 over 40 min: no 30-min span holds 5
    assert detect(CFG, spread, at(40)) is None


def test_window_uses_event_time_and_reordered_delivery_decides_at_the_same_time():
    # the oldest crash arrives last: T is still the newest failure known (minute 20)
    t = detect(CFG, summary(crashes=[0, 5, 10, 15, 20]), at(0))
    assert t is not None and t.time == at(20)


def test_counted_after_excludes_an_ended_episodes_failures():
    s = summary(crashes=[0, 1, 2, 3, 10, 11], counted_after=at(3), episode_end=EpisodeEnd.STEADY_STATE,
                episode=episode(2, 3))
    assert detect(CFG, s, at(11)) is None  # only 10 and 11 count
    s = summary(crashes=[0, 1, 2, 3, 10, 11, 12, 13, 14], counted_after=at(3), episode_end=EpisodeEnd.QUIET,
                episode=episode(2, 3))
    t = detect(CFG, s, at(14))
    assert t is not None and t.crashes == 5 and min(f.time for f in t.last_failures) == at(10)


def test_counted_after_is_exclusive_of_its_own_instant():
    # failures AT counted_after belong to the ended episode; strictly later ones count
    s = summary(crashes=[5, 6, 7, 8, 9], counted_after=at(5))
    assert detect(CFG, s, at(9)) is None
    s = summary(crashes=[5, 6, 7, 8, 9, 9.5], counted_after=at(5))
    assert detect(CFG, s, at(9.5)).crashes == 5


def test_health_check_kills_trigger_the_alert_only_path():
    t = detect(CFG, summary(kills=[0, 1, 2, 3, 4]), at(4))
    assert t is not None and t.kind == "health_check_kills" and t.crashes == 0 and t.health_check_kills == 5
    fleet = fleet_view(CFG, "api", [summary(kills=[0, 1, 2, 3, 4])], t.time, 8)
    d = decide(CFG, "development", t, fleet,
               Entitlement(Reason.HEALTH_CHECK_KILLS, "alert-only: health-check kills are never scaled down"))
    assert (d.action, d.reason) == (Action.ALERT_ONLY, Reason.HEALTH_CHECK_KILLS) and not d.acts
    assert d.trigger == "health_check_kills"


def test_crashes_win_over_health_check_kills():
    t = detect(CFG, summary(crashes=[0, 1, 2, 3, 4], kills=[0, 1, 2, 3, 4]), at(4))
    assert t is not None and t.kind == "crash_loop" and t.crashes == 5 and t.health_check_kills == 5


def test_mixed_kinds_never_add_up_to_a_loop():
    assert detect(CFG, summary(crashes=[0, 1, 2], kills=[3, 4]), at(4)) is None


def test_other_services_crashes_do_not_count():
    assert detect(CFG, summary(crashes=[0, 1, 2, 3]), at(4)) is None


def test_impaired_service_action_is_a_loop_signal_below_the_rate():
    t = detect(CFG, summary(crashes=[0, 27]), at(28), impaired=True)
    assert t is not None and t.kind == "impaired" and t.crashes == 2 and t.time == at(28)


def test_impaired_without_any_failure_decides_at_its_own_time():
    t = detect(CFG, summary(), at(3), impaired=True)
    assert t is not None and t.kind == "impaired" and t.time == at(3) and t.crashes == 0


def test_impaired_older_than_the_newest_failure_decides_at_its_own_time():
    # defect 2 (issue 18): an IMPAIRED decision's T is the IMPAIRED event's own time, never the newest
    # failure's, so entitlement is judged on the sample of that time; the window ends there too
    t = detect(CFG, summary(crashes=[4, 10]), at(5), impaired=True)
    assert t is not None and t.time == at(5) and t.kind == "impaired" and t.crashes == 1


def test_impaired_of_an_ended_episode_decides_nothing():
    # stamped at or before the end of an ended episode, it belongs to that episode
    s = summary(crashes=[0, 1, 2, 3, 4], episode=episode(4, 4), episode_end=EpisodeEnd.STEADY_STATE,
                counted_after=at(8))
    assert detect(CFG, s, at(6), impaired=True) is None
    assert detect(CFG, s, at(9), impaired=True) is not None


def test_nothing_without_failures():
    assert detect(CFG, summary(), at(0)) is None


# ---------------------------------------------------------------- rule 2: episodes and the one escalation
def test_no_second_decision_inside_an_open_episode():
    s = summary(crashes=list(range(10)), episode=episode(4, 9))
    assert detect(CFG, s, at(9)) is None
    assert detect(CFG, s, at(9), impaired=True) is None


def test_a_new_episode_after_the_old_one_ended():
    s = summary(crashes=[0, 1, 2, 3, 4, 40, 41, 42, 43, 44], episode=episode(4, 4), episode_end=EpisodeEnd.QUIET,
                counted_after=at(4))
    t = detect(CFG, s, at(44))
    assert t is not None and t.kind == "crash_loop" and not t.escalation


def test_escalation_once_from_a_health_check_kills_episode():
    ep = episode(4, 10, reason=Reason.HEALTH_CHECK_KILLS)
    s = summary(kills=[0, 1, 2, 3, 4], crashes=[6, 7, 8, 9, 10], episode=ep)
    t = detect(CFG, s, at(10))
    assert t is not None and t.kind == "crash_loop" and t.escalation
    # the kills alone never re-trigger the episode they opened
    assert detect(CFG, summary(kills=[0, 1, 2, 3, 4, 5, 6, 7, 8, 9], episode=ep), at(9)) is None
    # ECS's impaired signal escalates too
    t = detect(CFG, summary(kills=[0, 1, 2, 3, 4], episode=ep), at(6), impaired=True)
    assert t is not None and t.kind == "impaired" and t.escalation


def test_escalation_never_twice():
    ep = episode(10, 12, reason=Reason.HEALTH_CHECK_KILLS, escalated=True)
    s = summary(kills=[0, 1, 2, 3, 4], crashes=[6, 7, 8, 9, 10, 11, 12], episode=ep)
    assert detect(CFG, s, at(12)) is None
    assert detect(CFG, s, at(12), impaired=True) is None


def test_a_crash_loop_episode_never_escalates():
    ep = episode(4, 10, reason=Reason.CRASH_LOOP)
    assert detect(CFG, summary(crashes=list(range(11)), episode=ep), at(10)) is None


# ---------------------------------------------------------------- rule 3: fleet test
@pytest.mark.parametrize(("services", "bound"), [(1, 1), (4, 1), (5, 1), (10, 2), (12, 2), (14, 2), (15, 3), (17, 3)])
def test_bound_rounds_down_explicitly(services, bound):
    assert blast_radius_bound(CFG, services) == bound


def test_min_actions_allowed_is_a_floor():
    assert blast_radius_bound(PolicyConfig(min_actions_allowed=3, max_action_fraction=0.0), 100) == 3
    assert blast_radius_bound(PolicyConfig(min_actions_allowed=1, max_action_fraction=0.2), 0) == 1
    assert blast_radius_bound(PolicyConfig(min_actions_allowed=2, max_action_fraction=0.5), 10) == 5


def _trigger(service: str = "api"):
    s = summary(service, crashes=[0, 1, 2, 3, 4])
    return detect(CFG, s, at(4)), s


def test_deciding_service_always_counts():
    trig, s = _trigger()
    fleet = fleet_view(CFG, "api", [], trig.time, 5)
    assert fleet.failing == {"api"} and fleet.affected == {"api"} and not fleet.correlated
    # even when its own summary is missing from the list, and whatever its count
    fleet = fleet_view(CFG, "api", [summary("api", crashes=[4])], trig.time, 5)
    assert fleet.failing == {"api"}


def test_others_need_fleet_signal_min_failures():
    trig, s = _trigger()
    fleet = fleet_view(CFG, "api", [s, summary("b", crashes=[1]), summary("c", kills=[2])], trig.time, 5)
    assert fleet.failing == {"api"}
    # two failures, crashes and health-check kills together, make a signal
    fleet = fleet_view(CFG, "api", [s, summary("b", crashes=[1], kills=[2])], trig.time, 5)
    assert fleet.failing == {"api", "b"} and fleet.correlated  # bound 1 for 5 services


def test_others_failures_outside_the_window_do_not_count():
    trig, s = _trigger()
    old = summary("b", crashes=[-40, -35])
    fleet = fleet_view(CFG, "api", [s, old], trig.time, 5)
    assert fleet.failing == {"api"}


def test_others_failures_in_the_window_count_whatever_happened_since():
    # issue 18 reading: a SERVICE_STEADY_STATE, an episode that ended, a later decision do not take a
    # service's failures of the window out of the fleet test (a service that failed and recovered in
    # the window is evidence that the failures were correlated)
    trig, s = _trigger()
    ended = summary("c", crashes=[1, 2], counted_after=at(2), episode_end=EpisodeEnd.STEADY_STATE,
                    episode=episode(1, 2))
    assert fleet_view(CFG, "api", [s, ended], trig.time, 5).failing == {"api", "c"}


def test_fleet_counts_failures_the_rings_no_longer_hold():
    # defect 1 (issue 18): the newest five failures of b are after the window a late failure of api
    # opens; b's two failures inside it are still counted (per-minute counts, not the ring)
    trig, s = _trigger()  # api: T = minute 4, window [-26, 4]
    b = summary("b", crashes=[2, 3, 6, 7, 8, 9, 10, 11])
    b = replace(b, crashes=b.crashes[-CFG.keep:])
    assert all(f.time > trig.time for f in b.crashes)
    fleet = fleet_view(CFG, "api", [s, b], trig.time, 5)
    assert fleet.failing == {"api", "b"} and fleet.correlated


def test_services_scaled_within_the_window_count():
    trig, s = _trigger()
    held = summary("b", episode=episode(-5, -5, action=Action.SCALE_TO_ZERO, status=ActionStatus.DONE))
    fleet = fleet_view(CFG, "api", [s, held], trig.time, 5)
    assert fleet.scaled_down == {"b"} and fleet.affected == {"api", "b"} and fleet.correlated
    # scaled more than a window ago: held (rule 5), but not a fleet signal now
    long_ago = summary("b", episode=episode(-60, -60, action=Action.SCALE_TO_ZERO, status=ActionStatus.DONE))
    assert fleet_view(CFG, "api", [s, long_ago], trig.time, 5).scaled_down == frozenset()
    # restored since: it was still scaled to zero within the window (its failures stopped because it was)
    restored = summary("b", episode=episode(-5, -5, action=Action.SCALE_TO_ZERO, status=ActionStatus.RESTORED))
    assert fleet_view(CFG, "api", [s, restored], trig.time, 5).scaled_down == {"b"}
    # a later decision (a hold) replaced the scale-down: the scale-down still counts
    replaced = summary("b", episode=episode(0, 0, action=Action.HOLD, reason=Reason.MASS_UNHEALTHY),
                       scaled=(at(-5),))
    assert fleet_view(CFG, "api", [s, replaced], trig.time, 5).scaled_down == {"b"}
    # a scale-down the cap turned into a hold never acted: not counted
    capped = summary("b", episode=episode(-5, -5, action=Action.HOLD, reason=Reason.BLAST_RADIUS_CAP))
    assert fleet_view(CFG, "api", [s, capped], trig.time, 5).scaled_down == frozenset()
    # at exactly T - W: included
    edge = summary("b", episode=episode(4 - 30, -30, action=Action.SCALE_TO_ZERO, status=ActionStatus.DONE))
    assert fleet_view(CFG, "api", [s, edge], trig.time, 5).scaled_down == {"b"}


def _view(failing: set[str], services: int, down: set[str] = frozenset()) -> FleetView:
    return FleetView(frozenset(failing), frozenset(down), services, blast_radius_bound(CFG, services))


# ---------------------------------------------------------------- decide: rules 3 to 6
def test_mass_unhealthy_only_when_more_than_one_and_more_than_the_bound():
    trig, _ = _trigger()
    d = decide(CFG, "development", trig, _view({"api", "b", "c"}, 10), Entitlement())
    assert (d.action, d.reason) == (Action.HOLD, Reason.MASS_UNHEALTHY)
    assert "3 of 10 services failing at once" in d.message
    assert d.failing == ("api", "b", "c") and d.evidence == {"failing": ["api", "b", "c"]}
    assert (d.failing_services, d.services_in_cluster, d.bound) == (3, 10, 2)
    # 2 failing, bound 2: not correlated
    d = decide(CFG, "development", trig, _view({"api", "b"}, 10), Entitlement())
    assert d.action is Action.SCALE_TO_ZERO
    # one failing over a bound of... 1 service: never mass (more than one is required)
    d = decide(PolicyConfig(alert_only_clusters=("production",), min_actions_allowed=0), "development", trig,
               FleetView(frozenset({"api"}), frozenset(), 1, 0), Entitlement())
    assert d.reason is not Reason.MASS_UNHEALTHY


def test_fleet_test_comes_before_entitlement():
    trig, _ = _trigger()
    d = decide(CFG, "production", trig, _view({"api", "b"}, 5),
               Entitlement(Reason.ALERT_ONLY_CLUSTER, "alert-only: production is in ALERT_ONLY_CLUSTERS"))
    assert d.reason is Reason.MASS_UNHEALTHY


def test_mass_counts_the_scaled_down_services():
    trig, _ = _trigger()
    d = decide(CFG, "development", trig, _view({"api"}, 5, down={"b"}), Entitlement())
    assert (d.action, d.reason, d.failing_services) == (Action.HOLD, Reason.MASS_UNHEALTHY, 2)
    assert d.failing == ("api", "b")


@pytest.mark.parametrize("reason", [Reason.ALERT_ONLY_CLUSTER, Reason.OPTED_OUT, Reason.SERVICE_NOT_FOUND,
                                    Reason.DAEMON_SERVICE, Reason.DEPLOYMENT_IN_PROGRESS, Reason.STILL_SERVING,
                                    Reason.DRY_RUN, Reason.HEALTH_CHECK_KILLS])
def test_entitlement_reason_makes_it_alert_only_with_message_and_evidence(reason):
    trig, _ = _trigger()
    ent = Entitlement(reason, f"alert-only: because {reason.value}", {"why": reason.value, "n": 1})
    d = decide(CFG, "development", trig, _view({"api"}, 8), ent, held=("x", "y", "z"))
    assert (d.action, d.reason) == (Action.ALERT_ONLY, reason) and not d.acts
    assert d.message.startswith(f"alert-only: because {reason.value}. crash loop: 5 crashes")
    assert d.evidence == {"why": reason.value, "n": 1}
    assert d.time == trig.time and d.crashes_in_window == 5


def test_blast_radius_cap_names_the_held_services():
    trig, _ = _trigger()
    d = decide(CFG, "development", trig, _view({"api"}, 8), Entitlement(), held=("b",))
    assert (d.action, d.reason) == (Action.HOLD, Reason.BLAST_RADIUS_CAP)
    assert d.evidence == {"held_at_zero": ["b"]}
    assert "already held at zero" in d.message and "(b; bound 1)" in d.message
    # the hint is a command that runs (issue 31 item 14: it lacked --table and --region)
    assert "ecs-guardrail restore --cluster development --service NAME --table TABLE --region REGION" in d.message


def test_blast_radius_cap_with_a_larger_bound():
    trig, _ = _trigger()
    # bound 2: one held other + this one = 2, fits
    d = decide(CFG, "development", trig, _view({"api"}, 10), Entitlement(), held=("b",))
    assert d.action is Action.SCALE_TO_ZERO
    d = decide(CFG, "development", trig, _view({"api"}, 10), Entitlement(), held=("c", "b"))
    assert (d.action, d.reason) == (Action.HOLD, Reason.BLAST_RADIUS_CAP)
    assert d.evidence == {"held_at_zero": ["b", "c"]} and "b, c" in d.message


def test_the_deciding_service_never_holds_its_own_slot_against_itself():
    trig, _ = _trigger()
    d = decide(CFG, "development", trig, _view({"api"}, 8), Entitlement(), held=("api",))
    assert (d.action, d.reason) == (Action.SCALE_TO_ZERO, Reason.CRASH_LOOP)


def test_act_when_nothing_else_applies():
    trig, _ = _trigger()
    d = decide(CFG, "development", trig, _view({"api"}, 8), Entitlement())
    assert (d.action, d.reason) == (Action.SCALE_TO_ZERO, Reason.CRASH_LOOP) and d.acts
    assert d.message.startswith("scaled to 0 to stop the crash loop. crash loop: 5 crashes and 0 health-check kills")
    assert d.cluster == "development" and d.service == "api" and d.trigger == "crash_loop"


# ---------------------------------------------------------------- alert-only clusters
@pytest.mark.parametrize(
    ("patterns", "cluster", "arn", "alert_only"),
    [
        ((), "anything", "", True),  # unset: every cluster
        (("production",), "production", "", True),
        (("production",), "prod", "", False),
        (("prod-*",), "prod-eu", "", True),
        (("arn:aws:ecs:eu-west-1:111122223333:cluster/live",), "live",
         "arn:aws:ecs:eu-west-1:111122223333:cluster/live", True),
        # an ARN entry where only the name is known (Application Auto Scaling's ResourceId): fail safe
        (("arn:aws:ecs:eu-west-1:111122223333:cluster/live",), "live", "", True),
        (("arn:aws:ecs:eu-west-1:111122223333:cluster/live",), "live",
         "arn:aws:ecs:eu-west-1:444455556666:cluster/live", False),
        (("none",), "none", "", False),  # the explicit "no alert-only cluster", even for a cluster so named
    ],
)
def test_alert_only_matching(patterns, cluster, arn, alert_only):
    assert is_alert_only_cluster(PolicyConfig(alert_only_clusters=patterns), cluster, arn) is alert_only


def test_keep_is_at_least_the_threshold_and_the_fleet_signal():
    assert PolicyConfig(crash_threshold=12).keep == 12
    assert PolicyConfig(crash_threshold=3, fleet_signal_min_failures=7).keep == 7
    assert PolicyConfig(crash_threshold=3).keep == 5


# ---------------------------------------------------------------- issue 18: provisional holds, escalation by trigger
def _hold(decided: float, last: float, trigger: str = "crash_loop", evaluated: float | None = None,
          escalated: bool = False) -> Episode:
    return Episode(decision_time=at(decided), last_failure=at(last), action=Action.HOLD, reason=Reason.MASS_UNHEALTHY,
                   trigger=trigger, action_status=ActionStatus.NONE, alert_status=AlertStatus.SENT,
                   escalated=escalated, evaluated_at=at(evaluated) if evaluated is not None else None)


def test_a_hold_is_re_evaluated_when_crashes_since_its_last_evaluation_reach_the_threshold():
    s = summary(crashes=[0, 3, 6, 9, 12, 15, 18, 21, 24], episode=_hold(12, 24))
    assert detect(CFG, s, at(24)) is None  # four since the hold at 12
    s = summary(crashes=[0, 3, 6, 9, 12, 15, 18, 21, 24, 27], episode=_hold(12, 27))
    t = detect(CFG, s, at(27))
    assert t is not None and t.reevaluation and not t.escalation and t.kind == "crash_loop"
    assert t.time == at(27) and t.previous_reason is Reason.MASS_UNHEALTHY
    # evaluated again silently at 27: the next re-evaluation needs five more after 27
    s = summary(crashes=[15, 18, 21, 24, 27, 30, 33], episode=_hold(12, 33, evaluated=27))
    assert detect(CFG, s, at(33)) is None


def test_a_changed_outcome_after_a_storm_says_the_rest_of_the_cluster_recovered():
    s = summary(crashes=[15, 18, 21, 24, 27], episode=_hold(12, 27))
    t = detect(CFG, s, at(27))
    d = decide(CFG, "development", t, fleet_view(CFG, "api", [s], t.time, 5), Entitlement())
    assert d.action is Action.SCALE_TO_ZERO
    assert "the rest of the cluster recovered; api still crash-loops" in d.message


def test_a_hold_whose_trigger_was_health_check_kills_escalates_like_its_alert():
    ep = _hold(4, 10, trigger="health_check_kills")
    t = detect(CFG, summary(kills=[0, 1, 2, 3, 4], crashes=[6, 7, 8, 9, 10], episode=ep), at(10))
    assert t is not None and t.escalation and t.kind == "crash_loop"
    # crashes before the decision do not count toward the escalation
    early = summary(kills=[0, 1, 2, 3, 4], crashes=[1, 2, 3, 7, 8], episode=ep)
    assert detect(CFG, early, at(8)) is None
    t = detect(CFG, summary(kills=[0, 1, 2, 3, 4], episode=ep), at(6), impaired=True)
    assert t is not None and t.escalation and t.kind == "impaired"
