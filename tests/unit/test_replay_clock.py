"""The replay's one clock (ecs_guardrail.replay.clock): where a minute tick sits among delivered events."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ecs_guardrail.adapters.cloudwatch import Series
from ecs_guardrail.replay.clock import MinuteClock, event_time
from ecs_guardrail.replay.healthy_hosts import load_into_cloudwatch, namespace_of

T0 = datetime(2025, 10, 7, 10, 0, tzinfo=UTC)


def at(minutes: float) -> datetime:
    return T0 + timedelta(seconds=round(minutes * 60))


def run(deliveries: list[datetime | None], first: float | None = 0, last: float | None = 4) -> list[str]:
    log: list[str] = []
    clock = MinuteClock(None if first is None else at(first), None if last is None else at(last),
                        lambda m: log.append(f"tick {m:%H:%M}"))
    for t in deliveries:
        clock.before_event(t)
        log.append(f"event {t:%H:%M:%S}" if t else "event ?")
    clock.finish()
    return log


def test_tick_of_minute_m_runs_before_the_first_event_at_or_after_m_plus_one():
    assert run([at(0.5), at(59 / 60), at(1), at(3.5)]) == [
        "event 10:00:30", "event 10:00:59", "tick 10:00", "event 10:01:00", "tick 10:01", "tick 10:02",
        "event 10:03:30", "tick 10:03", "tick 10:04"]


def test_late_and_repeated_events_keep_delivery_order_and_move_no_clock_back():
    # delivered out of time order and once twice: delivery order kept, ticks never run twice or backwards
    assert run([at(2.5), at(0.5), at(2.5), at(1.2)]) == [
        "tick 10:00", "tick 10:01", "event 10:02:30", "event 10:00:30", "event 10:02:30", "event 10:01:12",
        "tick 10:02", "tick 10:03", "tick 10:04"]


def test_events_without_a_time_and_outside_the_csv_move_nothing():
    assert run([None, at(-10), at(10)], first=0, last=1) == [
        "event ?", "event 09:50:00", "tick 10:00", "tick 10:01", "event 10:10:00"]
    assert run([at(1)], first=None, last=None) == ["event 10:01:00"]


def test_event_time_reads_the_envelope():
    assert event_time({"time": "2025-10-07T10:00:30Z"}) == at(0.5)
    assert event_time({"time": "yesterday"}) is None and event_time([]) is None and event_time({}) is None


def test_the_csv_reads_back_through_the_real_adapter_for_alb_and_nlb():
    from ecs_guardrail.adapters.cloudwatch import HealthyHostCount, Reading
    from ecs_guardrail.replay.memory_aws import MemoryAws

    alb = Series("targetgroup/web/1", "app/lb/2")
    nlb = Series("targetgroup/tcp/3", "net/nlb/4")
    cw = MemoryAws("111122223333", "eu-west-1").client("cloudwatch")
    unknown = load_into_cloudwatch(
        cw, {"web": {"dimension": alb.target_group, "lb_dimension": alb.load_balancer},
             "tcp": {"dimension": nlb.target_group, "lb_dimension": nlb.load_balancer}},
        [(at(0), "web", 2.0, {"request_count": 100.0, "target_2xx": 90.0, "target_5xx": 10.0}),
         (at(0.5), "web", 1.0, {"elb_5xx": 4.0}), (at(1), "tcp", 0.0, {"request_count": 7.0}),
         (at(2), "tcp", 3.0, {}), (at(0), "gone", 1.0, {})])
    assert unknown == ["gone"]
    source = HealthyHostCount(cw)
    assert source.minima([alb, nlb], at(0), at(1)) == {alb: {at(0): 1.0}}  # the minimum of the minute
    assert source.minima([nlb], at(0), at(5)) == {nlb: {at(1): 0.0, at(2): 3.0}}
    got = source.read([alb, nlb], at(0), at(2))
    # the clients' view of an ALB: Sum per minute, the load balancer's own 5xx by its LoadBalancer dimension
    assert got[alb][at(0)] == Reading(1.0, 100.0, 90.0, 10.0, 4.0, True)
    assert got[alb][at(1)] == Reading(None, None, None, None, None, True)  # no request published: 0 requests
    assert got[nlb] == {at(1): Reading(0.0)}  # an NLB: healthy hosts only, its request cell ignored
    # the minima reads (2 series, then 1), then HealthyHostCount of both + 3 request metrics + the ALB's own 5xx
    assert source.metrics_requested == 2 + 1 + (2 + 3 + 1)
    assert namespace_of(nlb.load_balancer) == "AWS/NetworkELB"
    assert namespace_of(alb.load_balancer) == "AWS/ApplicationELB"


def test_an_event_time_that_overflows_in_utc_is_unreadable_not_a_crash():
    """breakit: year 1 with a positive offset (or 9999 with a negative one) is a datetime whose UTC is
    outside the calendar: astimezone raised OverflowError and the replay crashed before the recorder
    could reject the line."""
    assert event_time({"time": "0001-01-01T00:00:00+01:00"}) is None
    assert event_time({"time": "9999-12-31T23:59:59-01:00"}) is None
    assert event_time({"time": "2025-08-21T10:00:00+14:00"}) == datetime(2025, 8, 20, 20, 0, tzinfo=UTC)
