"""Availability arithmetic (core, no AWS): each service-minute's state, the totals, divergence."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from ecs_guardrail.core.availability import (
    MinuteState,
    Sample,
    SampleBlock,
    ScaleDown,
    availability_report,
    classify_service_minutes,
    minutes_between,
    running_tasks_by_minute,
)

T0 = datetime(2025, 8, 21, 15, 0, tzinfo=UTC)


def m(i: int) -> datetime:
    return T0 + timedelta(minutes=i)


def s(i: int, value: float | None, tg: str = "web", service: str = "api", desired: int | None = 2,
      running: int | None = None, sampled_at: datetime | None = None) -> Sample:
    return Sample("prod", service, tg, m(i), value, desired, running, sampled_at or m(i + 5))


def states(minutes) -> list[str]:
    return [x.state.value for x in minutes]


def test_up_down_and_no_data() -> None:
    got = classify_service_minutes([s(0, 2), s(1, 0), s(3, 1)], m(0), m(3))
    assert states(got) == ["up", "down", "no_data", "up"]  # minute 2 has no sample at all


def test_a_no_data_sample_is_never_up() -> None:
    got = classify_service_minutes([s(0, None)], m(0), m(0))
    assert states(got) == ["no_data"]
    assert not got[0].has_data


def test_every_target_group_must_have_a_healthy_host() -> None:
    samples = [s(0, 3, "web"), s(0, 0, "admin"), s(1, 3, "web"), s(2, 3, "web"), s(2, 1, "admin")]
    got = classify_service_minutes(samples, m(0), m(2))
    assert states(got) == ["down", "no_data", "up"]  # minute 1: admin reported nothing


def test_watchdog_scale_down_counts_against_it_until_restored() -> None:
    samples = [s(0, 2), s(1, 0, desired=0), s(2, None, desired=0), s(3, None, desired=0),
               s(4, 2, desired=2, sampled_at=m(9))]
    got = classify_service_minutes(samples, m(0), m(4),
                                   scale_downs=[ScaleDown("prod", "api", m(1) + timedelta(seconds=3))])
    assert states(got) == ["up", "zero_by_watchdog", "zero_by_watchdog", "zero_by_watchdog", "up"]


def test_restore_ends_the_watchdog_period() -> None:
    # restored at 15:03 (the first sample taken after the scale-down that shows desired 2), still failing
    samples = [s(0, 0, desired=0, sampled_at=m(1)), s(1, 0, desired=2, sampled_at=m(3)), s(2, 0, desired=2),
               s(3, 0, desired=2)]
    got = classify_service_minutes(samples, m(0), m(3), scale_downs=[ScaleDown("prod", "api", m(0))])
    assert states(got) == ["zero_by_watchdog", "zero_by_watchdog", "zero_by_watchdog", "down"]


def test_operator_zero_is_out_of_the_denominator() -> None:
    samples = [s(i, v, desired=d, sampled_at=m(i)) for i, v, d in ((0, 2, 2), (1, None, 0), (2, None, 0), (3, 2, 2))]
    report = availability_report(samples, m(0), m(3))
    api = report.services[0]
    assert api.minutes[MinuteState.ZERO_BY_OPERATOR] == 2
    assert api.denominator == 2 and api.unavailable == 0 and api.availability_pct == 100.0
    assert report.unavailable_service_minutes == 0


def test_desired_count_is_read_at_the_time_it_was_sampled() -> None:
    # the sampler reads minute M five minutes later: the watchdog's 12:05 scale-down must not make
    # minutes 12:02-12:04 look like an operator's zero
    samples = [s(i, 0 if i >= 2 else 1, desired=1 if i == 0 else 0) for i in range(8)]
    got = classify_service_minutes(samples, m(0), m(7), scale_downs=[ScaleDown("prod", "api", m(5))])
    assert states(got) == ["up", "up", "down", "down", "down", "zero_by_watchdog", "zero_by_watchdog",
                           "zero_by_watchdog"]


def test_report_totals_coverage_and_divergence() -> None:
    samples = [s(i, 2, running=2) for i in range(6)] + [s(i, 2, service="web", running=2) for i in (0, 1, 5)]
    samples += [s(2, 0, service="web", running=2), s(3, 0, service="web", running=2)]
    report = availability_report(samples, m(0), m(5))
    assert report.unavailable_service_minutes == 3  # web: 2 down + 1 no data
    assert report.by_cause == {"down": 2, "no_data": 1, "zero_by_watchdog": 0}
    assert report.denominator == 12
    assert report.availability_pct == 75.0
    assert report.coverage_pct == round(100 * 11 / 12, 3)
    assert report.divergent_service_minutes == 2  # tasks ran, nobody healthy; minute 4: running unknown
    d = report.to_dict()
    assert d["unavailable_service_minutes"] == 3 and {x["service"] for x in d["services"]} == {"api", "web"}


def test_services_without_samples_have_no_figure() -> None:
    assert availability_report([], m(0), m(5)).services == []


def test_running_tasks_from_events() -> None:
    states_ = [("prod", "api", "t1", m(0) + timedelta(seconds=10), "PENDING"),
               ("prod", "api", "t1", m(0) + timedelta(seconds=40), "RUNNING"),
               ("prod", "api", "t2", m(1) + timedelta(seconds=5), "RUNNING"),
               ("prod", "api", "t1", m(2) + timedelta(seconds=30), "STOPPED")]
    got = running_tasks_by_minute(states_, m(0), m(3))
    assert [got.get(("prod", "api", m(i)), 0) for i in range(4)] == [1, 2, 1, 1]


def test_divergence_uses_the_best_known_running_count() -> None:
    got = classify_service_minutes([s(0, 0, running=0)], m(0), m(0), running_tasks={("prod", "api", m(0)): 2})
    assert got[0].divergent and got[0].running_tasks == 2


@given(st.lists(st.one_of(st.none(), st.integers(min_value=0, max_value=3)), min_size=1, max_size=30),
       st.lists(st.booleans(), min_size=30, max_size=30))
def test_every_minute_is_counted_once_and_missing_data_is_never_up(values, operator_zero) -> None:
    samples = [s(i, v, desired=0 if operator_zero[i] else 2) for i, v in enumerate(values)]
    report = availability_report(samples, m(0), m(len(values) - 1))
    api = report.services[0]
    assert sum(api.minutes.values()) == len(values)
    up = api.minutes[MinuteState.UP]
    assert up == sum(1 for v in values if v is not None and v >= 1)
    assert api.denominator == up + api.unavailable


def _running_by_brute_force(task_states, start, end):
    """The definition, minute by minute: a task counts in minute M when its latest event before M's end
    says RUNNING (the oracle the sweep in ``running_tasks_by_minute`` must equal)."""
    out = {}
    for minute in minutes_between(start, end):
        edge = minute + timedelta(minutes=1)
        latest = {}
        for cluster, service, arn, t, status in sorted(task_states, key=lambda x: (x[3], x[4])):
            if t < edge:
                latest[(cluster, service, arn)] = status
        for (cluster, service, _arn), status in latest.items():
            if status == "RUNNING":
                out[(cluster, service, minute)] = out.get((cluster, service, minute), 0) + 1
    return out


@given(st.lists(st.tuples(st.sampled_from(["api", "web"]), st.sampled_from(["t1", "t2", "t3"]),
                          st.integers(min_value=-150, max_value=400),
                          st.sampled_from(["PENDING", "RUNNING", "STOPPED"])), max_size=25))
def test_running_tasks_sweep_equals_the_minute_by_minute_definition(raw) -> None:
    states_ = [("prod", svc, arn, m(0) + timedelta(seconds=sec), status) for svc, arn, sec, status in raw]
    assert running_tasks_by_minute(states_, m(0), m(5)) == _running_by_brute_force(states_, m(0), m(5))


def test_a_late_decision_owns_its_minutes_from_t() -> None:
    # defect 4 (issue 18): decided at T = minute 1 on an event delivered at minute 3; the samples of minutes
    # 1 and 2 were taken before the watchdog acted (desired still 2), the later ones show its 0. Every
    # minute from T is the watchdog's, never an operator's zero, whichever event's delivery made it
    samples = [s(0, 2, desired=2, sampled_at=m(1)), s(1, 0, desired=2, sampled_at=m(2)),
               s(2, 1, desired=2, sampled_at=m(3)), s(3, 0, desired=0, sampled_at=m(4)),
               s(4, None, desired=0, sampled_at=m(5)), s(5, 0, desired=0, sampled_at=m(6))]
    got = classify_service_minutes(samples, m(0), m(5), scale_downs=[ScaleDown("prod", "api", m(1))])
    assert states(got) == ["up"] + ["zero_by_watchdog"] * 5
    # restored later: the first raise seen after the zero ends it (a minute with healthy hosts at its minute)
    back = samples + [s(6, 2, desired=2, sampled_at=m(9)), s(7, 2, desired=2, sampled_at=m(9))]
    got = classify_service_minutes(back, m(0), m(7), scale_downs=[ScaleDown("prod", "api", m(1))])
    assert states(got)[6:] == ["up", "up"]
    # never seen at 0 (put back before the sampler looked): the first raise taken after T ends it, at the
    # minute it was taken; the minute of the decision stays the watchdog's
    quick = [s(0, 2, desired=2, sampled_at=m(1)), s(1, 0, desired=2, sampled_at=m(2)),
             s(2, 0, desired=2, sampled_at=m(3))]
    got = classify_service_minutes(quick, m(0), m(2), scale_downs=[ScaleDown("prod", "api", m(1))])
    assert states(got) == ["up", "zero_by_watchdog", "down"]


_value = st.one_of(st.none(), st.sampled_from([0.0, 1.0, 2.0, 3.5]))


@st.composite
def _blocks_and_samples(draw: st.DrawFn) -> list[SampleBlock | Sample]:
    """Blocks (some reaching outside the report's minutes, some with the clients' view, series of any
    length) and one-minute samples, of two services with one or two target groups, in any order."""
    out: list[SampleBlock | Sample] = []
    for _ in range(draw(st.integers(0, 6))):
        service, tg = draw(st.sampled_from([("api", "web"), ("api", "admin"), ("jobs", "q")]))
        n = draw(st.integers(0, 8))
        clients = draw(st.booleans())
        values = {"healthy_host_count": tuple(draw(st.lists(_value, min_size=n, max_size=n)))}
        if clients:
            for k in ("request_count", "target_2xx", "target_5xx", "elb_5xx"):
                values[k] = tuple(draw(st.lists(_value, max_size=n + 2)))
        out.append(SampleBlock("prod", service, tg, m(draw(st.integers(-4, 8))), values, clients))
    for _ in range(draw(st.integers(0, 6))):
        service, tg = draw(st.sampled_from([("api", "web"), ("api", "admin"), ("jobs", "q")]))
        out.append(Sample("prod", service, tg, m(draw(st.integers(-2, 8))), draw(_value),
                          draw(st.one_of(st.none(), st.integers(0, 3))), draw(st.one_of(st.none(), st.integers(0, 3))),
                          m(9), draw(_value), None, draw(_value), draw(_value), draw(st.booleans())))
    return draw(st.permutations(out))


@given(_blocks_and_samples(), st.integers(0, 3), st.integers(3, 7))
def test_blocks_classify_as_their_samples(sources: list[SampleBlock | Sample], lo: int, hi: int) -> None:
    """A block given whole (kept as columns) classifies every minute as its expanded samples do."""
    expanded = [x for b in sources for x in (b.samples() if isinstance(b, SampleBlock) else (b,))]
    running = running_tasks_by_minute([("prod", "api", "t1", m(1), "RUNNING"), ("prod", "jobs", "t2", m(2), "RUNNING")],
                                      m(lo), m(hi))
    kwargs = {"scale_downs": [ScaleDown("prod", "api", m(4))], "running_tasks": running,
              "client_error_ratio": 0.05}
    assert classify_service_minutes(sources, m(lo), m(hi), **kwargs) == \
        classify_service_minutes(expanded, m(lo), m(hi), **kwargs)


@given(st.lists(st.tuples(st.integers(0, 5), _value, _value, _value, _value, _value), max_size=8), st.booleans())
def test_one_series_block_values_as_the_general_merge(readings: list[tuple], clients: bool) -> None:
    """The sampler's block of a target group behind one load balancer (read straight from its series) is
    what the merge over several series gives for that one series."""
    from ecs_guardrail.adapters.cloudwatch import Reading
    from ecs_guardrail.handlers.availability import _block_values

    points = {m(i): Reading(h, r, t2, t5, e, clients) for i, h, r, t2, t5, e in readings}
    minutes = [m(i) for i in range(6)]
    assert _block_values([points], minutes, clients) == _block_values([points, {}], minutes, clients)
