"""Restart-policy loops (ARCHITECTURE.md "Restart-policy loops"; issue 19): restart totals to failures, the
``restart_loop`` trigger (never ``crash_loop``), always alert-only, and counted in the fleet test."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ecs_guardrail.core.classify import StopKind
from ecs_guardrail.core.entitlement import EntitlementFacts, EntitlementReason, entitlement
from ecs_guardrail.core.policy import PolicyConfig, detect, fleet_view
from ecs_guardrail.core.records import Failure
from ecs_guardrail.core.restarts import (
    MAX_RESTARTS_PER_MINUTE,
    RestartObservation,
    is_restart,
    restart_failures,
    restart_increments,
)
from ecs_guardrail.core.summary import ServiceSummary, add_failure

T0 = datetime(2026, 3, 6, 9, 0, tzinfo=UTC)
CONFIG = PolicyConfig()


def m(n: int) -> datetime:
    return T0 + timedelta(minutes=n)


def test_increments_count_rises_and_never_a_drop() -> None:
    totals = [(m(0), 0), (m(1), 2), (m(2), 2), (m(3), 1), (m(4), 3), (m(5), 3)]
    assert restart_increments(totals) == [(m(1), 2), (m(4), 2)]
    assert restart_increments(totals[1:]) == [(m(4), 2)]  # the first total alone counts nothing
    assert restart_increments(totals[1:], before=0) == [(m(1), 2), (m(4), 2)]


def test_restart_failures_are_stable_and_distinct() -> None:
    a = restart_failures("platform", "api", m(5), 2)
    assert [f.task_arn for f in a] == ["restart/platform/api-202603060905-1", "restart/platform/api-202603060905-2"]
    assert all(is_restart(f) and f.kind is StopKind.CRASH for f in a)
    assert restart_failures("platform", "api", m(5), 2) == a
    s = ServiceSummary(service="api")
    for f in a + a:  # a re-read of the same minute files nothing new
        s = add_failure(s, f, CONFIG.keep) or s
    assert len(s.crashes) == 2


def _summary(*failures: Failure) -> ServiceSummary:
    s = ServiceSummary(service="api")
    for f in failures:
        s = add_failure(s, f, CONFIG.keep) or s
    return s


def _crash(minute: int, n: int) -> Failure:
    return Failure(service="api", time=m(minute), kind=StopKind.CRASH, task_arn=f"arn:aws:ecs:eu-west-1:1:task/p/{n}")


def test_restarts_reaching_the_threshold_are_a_restart_loop_never_a_crash_loop() -> None:
    restarts = [f for i in range(5) for f in restart_failures("platform", "api", m(2 * i), 1)]
    trigger = detect(CONFIG, _summary(*restarts), m(8))
    assert trigger is not None and trigger.kind == "restart_loop" and trigger.restarts == 5
    v = entitlement("restart_loop", EntitlementFacts(cluster="platform", service="api"), trigger.time)
    assert v.reason is EntitlementReason.RESTART_LOOP and not v.entitled
    # genuine stops alone at the threshold stay a crash loop, restarts or not
    mixed = _summary(*restarts[:2], *(_crash(10 + i, i) for i in range(5)))
    assert detect(CONFIG, mixed, m(14)).kind == "crash_loop"
    # the summary keeps the newest CRASH_THRESHOLD failures of the kind: restarts newer than the genuine stops
    # can crowd them out, and the decision is then the alert-only restart_loop (the safe side)
    crowded = _summary(*(_crash(i, i) for i in range(5)), *restarts)
    assert detect(CONFIG, crowded, m(8)).kind == "restart_loop"
    # fewer than the threshold together: nothing
    assert detect(CONFIG, _summary(*restarts[:2], _crash(1, 1)), m(8)) is None


def test_restarts_count_as_failures_in_the_fleet_test() -> None:
    other = ServiceSummary(service="worker")
    for f in restart_failures("platform", "worker", m(3), 2):
        other = add_failure(other, f, CONFIG.keep) or other
    fleet = fleet_view(CONFIG, "api", [other], m(5), services_in_cluster=4)
    assert fleet.failing == frozenset({"api", "worker"}) and fleet.correlated


def test_an_observation_round_trips_and_bad_ones_are_named() -> None:
    obs = RestartObservation("arn:aws:ecs:eu-west-1:111122223333:cluster/platform", "api", m(5), 2, 7.0)
    assert RestartObservation.from_event(obs.to_event("111122223333", "eu-west-1")) == obs
    assert RestartObservation.from_event({"source": "aws.ecs"}) is None
    bad = obs.to_event("111122223333", "eu-west-1")
    bad["detail"]["restarts"] = 0
    with pytest.raises(ValueError, match="restarts must be a count"):
        RestartObservation.from_event(bad)


def test_container_restarts_rows_spanning_centuries_are_refused(tmp_path) -> None:
    """break-it: one row stamped 2199 made the replay tick every minute up to it (it never finished);
    healthy_hosts.csv had this bound already."""
    from ecs_guardrail.core.errors import ScenarioError
    from ecs_guardrail.replay.restarts import read_container_restarts_csv

    p = tmp_path / "container_restarts.csv"
    p.write_text("time,cluster,service,restart_count\n2026-03-06T09:00:00Z,platform,api,0\n"
                 "2199-01-01T00:00:00Z,platform,api,3\n", encoding="utf-8")
    with pytest.raises(ScenarioError, match=r"container_restarts.csv: rows span \d+ minutes; a replay samples at most"):
        read_container_restarts_csv(p)
    p.write_text("time,cluster,service,restart_count\n2026-03-06T09:00:00Z,platform,api,0\n"
                 "2026-03-07T09:00:00Z,platform,api,3\n", encoding="utf-8")
    assert len(read_container_restarts_csv(p)) == 2


@pytest.mark.parametrize("field,value,reason", [
    ("restarts", 10**9, "restarts must be a count"),          # one failure is filed per restart: memory
    ("restarts", 10_001, "restarts must be a count"),
    ("restartCount", None, "restartCount must be a number"),
    ("restartCount", float("nan"), "restartCount must be a number"),
    ("minute", "9999-12-31T23:59:00Z", "out of range"),
    ("minute", "yesterday", "minute"),
    ("serviceName", "api\udcff", "service name"),
    ("serviceName", 7, "clusterArn must be an ECS cluster ARN"),
    ("clusterArn", None, "clusterArn must be an ECS cluster ARN"),
])
def test_a_malformed_observation_is_rejected_with_its_reason_never_a_crash(field, value, reason) -> None:
    """Break-it findings: a huge count grew the process to 12 GB; a null total, an out-of-range minute
    or a detail that is not an object raised TypeError/OverflowError out of the watchdog."""
    obs = RestartObservation("arn:aws:ecs:eu-west-1:111122223333:cluster/platform", "api", m(5), 2, 7.0)
    bad = obs.to_event("111122223333", "eu-west-1")
    bad["detail"][field] = value
    with pytest.raises(ValueError, match=reason):
        RestartObservation.from_event(bad)
    for detail in (["x"], "abc", None):
        with pytest.raises(ValueError, match="detail is not an object"):
            RestartObservation.from_event({**bad, "detail": detail})
    assert len(restart_failures("platform", "api", m(5), 10**9)) == MAX_RESTARTS_PER_MINUTE  # bounded anyway
