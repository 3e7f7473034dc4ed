"""core/fleet_minutes.py: the fleet test's per-cluster, per-minute evidence answers rule 3's question
exactly (ARCHITECTURE.md: other services with at least FLEET_SIGNAL_MIN_FAILURES failures in
``[T - window, T]``, both ends included, however long ago their newest failure was), checked
against the question asked of every failure directly, and against :func:`fleet_view` over summaries."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from ecs_guardrail.core.classify import StopKind
from ecs_guardrail.core.fleet_minutes import (
    MEMBERS_KEPT,
    SHARDS,
    FleetMinute,
    fleet_signals,
    member,
    minute_of,
    offset_of,
    shard_of,
)
from ecs_guardrail.core.policy import PolicyConfig, fleet_view, fleet_view_of
from ecs_guardrail.core.records import Failure
from ecs_guardrail.core.summary import ServiceSummary, count_minutes

T0 = datetime(2025, 8, 21, 12, 0, tzinfo=UTC)
W = timedelta(minutes=30)


def minutes_of(failures: list[tuple[str, datetime, str]]) -> list[FleetMinute]:
    """What the adapter stores for ``(service, time, task)`` failures (no overflow), as read back."""
    by: dict[datetime, dict[str, set[str]]] = {}
    for svc, t, task in failures:
        by.setdefault(minute_of(t), {}).setdefault(svc, set()).add(member(t, task))
    return [FleetMinute(m, {s: sorted(ms) for s, ms in svcs.items()}, {s for s, ms in svcs.items() if len(ms) >= 2})
            for m, svcs in sorted(by.items())]


def direct(failures: list[tuple[str, datetime, str]], start: datetime, end: datetime, need: int) -> set[str]:
    n = Counter(svc for svc, t, _ in failures if start <= t <= end)
    return {svc for svc, c in n.items() if c >= need}


def test_member_round_trips_the_offset_to_the_microsecond():
    t = T0 + timedelta(minutes=3, seconds=7, microseconds=250)
    assert member(t, "arn:aws:ecs:eu-west-1:1:task/c/0123456789abcdef") == "7.000250|89abcdef"
    assert offset_of(member(t, "x/t")) == 7_000_250
    assert offset_of(member(T0 + timedelta(seconds=59), "x/t")) == 59_000_000


def test_shard_is_stable_and_in_range():
    assert shard_of("api") == shard_of("api") and all(0 <= shard_of(f"s{i}") < SHARDS for i in range(200))
    assert len({shard_of(f"svc{i:04d}") for i in range(200)}) == SHARDS  # spread over every shard


def test_both_ends_of_the_window_are_included_and_cut_minutes_are_exact():
    end = T0 + timedelta(minutes=40, seconds=20)
    start = end - W  # 12:10:20
    failures = [("a", start, "1"), ("a", end, "2"),  # exactly on both ends: 2
                ("b", start - timedelta(seconds=1), "1"), ("b", end, "2"),  # one a second too early: 1
                ("c", end + timedelta(microseconds=1), "1"), ("c", end - timedelta(minutes=29), "2")]
    got = fleet_signals(minutes_of(failures), start, end, 2)
    assert got.failing == {"a"} == direct(failures, start, end, 2)


def test_failures_long_before_a_services_newest_still_count():
    # issue 31 item 7: b's two failures in the window are three windows older than its newest one
    end = T0 + timedelta(minutes=20)
    failures = [("b", T0 + timedelta(minutes=1), "1"), ("b", T0 + timedelta(minutes=2), "2"),
                ("b", T0 + timedelta(hours=2), "3")]
    assert fleet_signals(minutes_of(failures), end - W, end, 2).failing == {"b"}


def test_overflowed_minute_counts_whole_and_is_uncertain_when_cut():
    m = T0 + timedelta(minutes=5)
    full = FleetMinute(m, {"a": ["1|t1"]}, {"a", "b"}, overflow=frozenset({"a", "b"}))
    for need in (2, 3):
        got = fleet_signals([full], m - timedelta(minutes=10), m + timedelta(minutes=10), need)
        assert got.failing == {"a", "b"} and got.uncertain == frozenset()
        cut = fleet_signals([full], m + timedelta(seconds=30) - W, m + timedelta(seconds=30), need)
        assert cut.failing == frozenset() and cut.uncertain == {"a", "b"}  # the caller asks their summaries
    assert MEMBERS_KEPT >= 2


def test_scale_downs_in_the_window_only():
    m = minute_of(T0)
    fm = FleetMinute(m, scaled={"a": (T0 + timedelta(seconds=10),), "b": (T0 + timedelta(seconds=50),)})
    got = fleet_signals([fm], T0 + timedelta(seconds=10), T0 + timedelta(seconds=40), 2)
    assert got.scaled_down == {"a"}


SERVICES = st.sampled_from(["a", "b", "c", "d"])
OFFSETS = st.integers(min_value=0, max_value=4 * 3600 * 1_000_000)  # microseconds over four hours


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(SERVICES, OFFSETS), max_size=40), OFFSETS, st.integers(min_value=1, max_value=4))
def test_same_answer_as_asking_every_failure(raw, end_us, need):
    failures = [(svc, T0 + timedelta(microseconds=us), f"t{i}") for i, (svc, us) in enumerate(raw)]
    end = T0 + timedelta(microseconds=end_us)
    start = end - W
    assert fleet_signals(minutes_of(failures), start, end, need).failing == direct(failures, start, end, need)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(SERVICES, st.integers(min_value=0, max_value=3600)), max_size=30),
       st.integers(min_value=0, max_value=3600))
def test_same_view_as_fleet_view_over_summaries_within_their_horizon(raw, end_s):
    # whole seconds, within two windows of each service's newest failure (what the summaries keep):
    # the two representations give the same FleetView
    config = PolicyConfig()
    failures = [(svc, T0 + timedelta(seconds=s), f"t{i}") for i, (svc, s) in enumerate(raw)]
    end = T0 + timedelta(seconds=end_s)
    summaries = []
    for svc in "abcd":
        mine = [Failure(svc, t, StopKind.CRASH, task_arn=f"x/{task}") for s, t, task in failures if s == svc]
        summaries.append(ServiceSummary(svc, crashes=tuple(mine), minutes=count_minutes(mine, horizon=2 * W)))
    old = fleet_view(config, "a", summaries, end, 10)
    signals = fleet_signals(minutes_of(failures), end - W, end, config.fleet_signal_min_failures)
    assert fleet_view_of(config, "a", signals.failing, signals.scaled_down, 10) == old
