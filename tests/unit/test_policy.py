"""Every rule of the decision policy (ARCHITECTURE.md, "Decision policy"), without AWS."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ecs_guardrail.core.classify import StopKind
from ecs_guardrail.core.policy import (
    Action,
    Failure,
    PolicyConfig,
    Reason,
    Scope,
    blast_radius_bound,
    decide,
    detect,
    episode_is_open,
    fleet_view,
    is_alert_only_cluster,
)

T0 = datetime(2025, 8, 21, 10, 0, tzinfo=UTC)
CFG = PolicyConfig(alert_only_clusters=("production",))


def fails(service: str, minutes: list[float], kind: StopKind = StopKind.CRASH) -> list[Failure]:
    return [Failure(service, T0 + timedelta(minutes=m), kind, task_arn=f"{service}-{i}") for i, m in enumerate(minutes)]


# ---------------------------------------------------------------- rule 1: detection
def test_threshold_crashes_in_window_is_a_crash_loop():
    f = fails("api", [0, 5, 10, 15, 20])
    t = detect(CFG, f, "api", f[-1].time)
    assert t is not None and t.kind == "crash_loop" and t.crashes == 5
    assert t.time == T0 + timedelta(minutes=20)


def test_below_threshold_or_spread_beyond_window_is_not():
    assert detect(CFG, fails("api", [0, 5, 10, 15]), "api", T0 + timedelta(minutes=15)) is None
    spread = fails("api", [0, 10, 20, 30, 40])  # 5 crashes over 40 min: no 30-min span holds 5
    assert detect(CFG, spread, "api", spread[-1].time) is None


def test_window_uses_event_time_and_reordered_delivery_decides_at_the_same_time():
    f = fails("api", [0, 5, 10, 15, 20])
    # the oldest crash arrives last: the crossing is still at minute 20
    t = detect(CFG, f, "api", f[0].time)
    assert t is not None and t.time == T0 + timedelta(minutes=20)


def test_other_services_crashes_do_not_count():
    f = fails("api", [0, 1, 2, 3]) + fails("web", [4])
    assert detect(CFG, f, "api", T0 + timedelta(minutes=4)) is None


def test_impaired_service_action_is_a_loop_signal_below_the_rate():
    t = detect(CFG, fails("api", [0, 27]), "api", T0 + timedelta(minutes=28), impaired=True)
    assert t is not None and t.kind == "impaired" and t.crashes == 2


def test_health_check_kills_are_their_own_trigger():
    f = fails("api", [0, 1, 2, 3, 4], StopKind.HEALTH_CHECK_KILL)
    t = detect(CFG, f, "api", f[-1].time)
    assert t is not None and t.kind == "health_check_kills" and t.crashes == 0 and t.health_check_kills == 5


# ---------------------------------------------------------------- rule 2: one decision per episode
def test_episode_stays_open_while_failures_keep_coming():
    last = T0
    assert episode_is_open(last, False, T0 + timedelta(minutes=29), CFG)
    assert not episode_is_open(last, False, T0 + timedelta(minutes=31), CFG)
    assert not episode_is_open(last, True, T0 + timedelta(minutes=1), CFG)  # restored
    assert not episode_is_open(None, False, T0, CFG)


# ---------------------------------------------------------------- rule 3: fleet test / blast radius
@pytest.mark.parametrize(("services", "bound"), [(1, 1), (4, 1), (5, 1), (10, 2), (12, 2), (14, 2), (15, 3), (17, 3)])
def test_bound_rounds_down_explicitly(services, bound):
    assert blast_radius_bound(CFG, services) == bound


def test_min_actions_allowed_is_a_floor():
    assert blast_radius_bound(PolicyConfig(min_actions_allowed=3, max_action_fraction=0.0), 100) == 3


def _trigger(service="api", n=5):
    f = fails(service, list(range(n)))
    return detect(CFG, f, service, f[-1].time), f


def test_correlated_failure_holds_everything():
    trig, f = _trigger()
    others = [x for s in ("b", "c") for x in fails(s, [1, 2])]
    fleet = fleet_view(CFG, f + others, [], trig.time, services_in_cluster=10)
    assert fleet.affected == 3 and fleet.bound == 2 and fleet.correlated
    d = decide(CFG, trig, fleet, Scope("development"), free_action_slots=2)
    assert (d.action, d.reason) == (Action.HOLD, Reason.MASS_UNHEALTHY)
    assert "3 of 10 services failing at once" in d.message


def test_one_failure_is_not_a_fleet_signal():
    trig, f = _trigger()
    fleet = fleet_view(CFG, f + fails("b", [1]), [], trig.time, services_in_cluster=5)
    assert fleet.failing == {"api"}


def test_watchdog_scale_downs_in_window_count_toward_the_fleet():
    trig, f = _trigger()
    fleet = fleet_view(CFG, f, [("b", trig.time - timedelta(minutes=5))], trig.time, services_in_cluster=5)
    assert fleet.affected == 2 and fleet.correlated  # bound 1 for 5 services


def test_fleet_test_comes_before_scope():
    trig, f = _trigger()
    fleet = fleet_view(CFG, f + fails("b", [1, 2]), [], trig.time, services_in_cluster=5)
    d = decide(CFG, trig, fleet, Scope("production"), free_action_slots=1)
    assert d.reason is Reason.MASS_UNHEALTHY


# ---------------------------------------------------------------- rule 4: scope
def test_alert_only_cluster_says_so():
    trig, f = _trigger()
    fleet = fleet_view(CFG, f, [], trig.time, 8)
    d = decide(CFG, trig, fleet, Scope("production"), free_action_slots=1)
    assert (d.action, d.reason) == (Action.ALERT_ONLY, Reason.ALERT_ONLY_CLUSTER)
    assert "production is in ALERT_ONLY_CLUSTERS" in d.message


@pytest.mark.parametrize(
    ("patterns", "cluster", "arn", "alert_only"),
    [
        ((), "anything", "", True),  # unset: every cluster
        (("production",), "production", "", True),
        (("production",), "prod", "", False),
        (("prod-*",), "prod-eu", "", True),
        (("arn:aws:ecs:eu-west-1:111122223333:cluster/live",), "live",
         "arn:aws:ecs:eu-west-1:111122223333:cluster/live", True),
        (("*:cluster/live",), "live", "arn:aws:ecs:eu-west-1:111122223333:cluster/live", True),
    ],
)
def test_alert_only_matching(patterns, cluster, arn, alert_only):
    assert is_alert_only_cluster(PolicyConfig(alert_only_clusters=patterns), cluster, arn) is alert_only


def test_opt_out_tag_and_dry_run():
    trig, f = _trigger()
    fleet = fleet_view(CFG, f, [], trig.time, 8)
    d = decide(CFG, trig, fleet, Scope("development", opted_out=True), free_action_slots=1)
    assert (d.action, d.reason) == (Action.ALERT_ONLY, Reason.OPTED_OUT)
    dry = PolicyConfig(alert_only_clusters=("production",), dry_run=True)
    d = decide(dry, trig, fleet, Scope("development"), free_action_slots=1)
    assert (d.action, d.reason) == (Action.ALERT_ONLY, Reason.DRY_RUN)


def test_health_check_kills_never_scale_down():
    f = fails("api", [0, 1, 2, 3, 4], StopKind.HEALTH_CHECK_KILL)
    trig = detect(CFG, f, "api", f[-1].time)
    d = decide(CFG, trig, fleet_view(CFG, f, [], trig.time, 8), Scope("development"), free_action_slots=1)
    assert (d.action, d.reason) == (Action.ALERT_ONLY, Reason.HEALTH_CHECK_KILLS)


# ---------------------------------------------------------------- rule 5: act, within the cap
def test_act_when_nothing_else_applies():
    trig, f = _trigger()
    d = decide(CFG, trig, fleet_view(CFG, f, [], trig.time, 8), Scope("development"), free_action_slots=1)
    assert (d.action, d.reason) == (Action.SCALE_TO_ZERO, Reason.CRASH_LOOP) and d.acts


def test_blast_radius_cap_holds_when_no_slot_is_free():
    trig, f = _trigger()
    d = decide(CFG, trig, fleet_view(CFG, f, [], trig.time, 8), Scope("development"), free_action_slots=0)
    assert (d.action, d.reason) == (Action.HOLD, Reason.BLAST_RADIUS_CAP)
