"""The incident timeline and attribution (core, no AWS), from hand-written history items."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime, timedelta

import pytest

from ecs_guardrail.app.timeline import render
from ecs_guardrail.core.attribution import Verdict, attribute
from ecs_guardrail.core.classify import StopKind
from ecs_guardrail.core.policy import Failure, PolicyConfig
from ecs_guardrail.core.timeline import build_timeline, busiest_window

T0 = datetime(2025, 8, 21, 12, 0, tzinfo=UTC)
CFG = PolicyConfig()


def iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def at(minutes: float) -> datetime:
    return T0 + timedelta(seconds=round(minutes * 60))


def stop(minutes: float, service: str, kind: str, n: int, az: str = "eu-west-1a", **extra) -> dict:
    return {"type": "task", "cluster": "dev", "service": service, "task_arn": f"arn:task/dev/{service}-{n}",
            "time": iso(at(minutes)), "last_status": "STOPPED", "kind": kind, "az": az,
            "stopped_reason": {"crash": "Essential container in task exited",
                               "health_check_kill": "Task failed ELB health checks in (target-group x)"}.get(kind),
            "cause": extra.get("cause"), "exit_codes": extra.get("exit_codes", [])}


def running(minutes: float, service: str, n: int, az: str = "eu-west-1a") -> dict:
    return {"type": "task", "cluster": "dev", "service": service, "task_arn": f"arn:task/dev/{service}-{n}",
            "time": iso(at(minutes)), "last_status": "RUNNING", "az": az}


def hh(minute: int, service: str, value: int | None, desired: int = 1) -> dict:
    return {"type": "healthy_hosts", "cluster": "dev", "service": service, "target_group": f"{service}-tg",
            "time": iso(at(minute)), "healthy_host_count": value, "no_data": value is None,
            "desired_count": desired, "running_count": 1, "sampled_at": iso(at(minute + 5))}


def crash_loop_items() -> list[dict]:
    """api crash-loops from 12:01, the watchdog scales it down at 12:05; web stays healthy."""
    items = [running(0, "api", 0), running(0, "web", 0, "eu-west-1b")]
    items += [stop(1 + i, "api", "crash", i, cause="OutOfMemoryError",
                   exit_codes=[{"name": "app", "code": 137}]) for i in range(5)]
    items.append({"type": "decision", "cluster": "dev", "service": "api", "time": iso(at(5.05)),
                  "action": "scale_to_zero", "reason": "crash_loop", "services_in_cluster": 2,
                  "message": "scaled to 0 to stop the crash loop. crash loop: 5 crashes in 30 min."})
    # each sample carries the desired count seen when it was taken, 5 minutes after its minute
    items += [hh(i, "api", 1 if i < 2 else 0, desired=1 if i == 0 else 0) for i in range(10)]
    items += [hh(i, "web", 2) for i in range(10)]
    return items


def test_postmortem_lines_in_order() -> None:
    tl = build_timeline(crash_loop_items(), "dev", T0, T0 + timedelta(hours=1), config=CFG)
    cats = [ln.category for ln in tl.lines]
    assert cats[0] == "first_crash"
    assert tl.lines[0].services == ("api",) and "OutOfMemoryError" in tl.lines[0].text and "137" in tl.lines[0].text
    runs = [ln for ln in tl.lines if ln.category == "stops"]
    assert len(runs) == 1 and runs[0].count == 5 and runs[0].end == at(5)  # one line for the whole run
    decision = next(ln for ln in tl.lines if ln.category == "decision")
    assert "scale_to_zero (crash_loop)" in decision.text and "scaled to 0 to stop the crash loop" in decision.text
    drops = [ln for ln in tl.lines if ln.category == "healthy_hosts"]
    assert [(ln.start, ln.title) for ln in drops] == [
        (at(2), "healthy hosts dropped to 0"), (at(5), "at 0 by the watchdog")]
    assert tl.availability is not None
    assert tl.availability.by_cause == {"down": 3, "no_data": 0, "zero_by_watchdog": 5}


def test_text_has_attribution_and_totals() -> None:
    text = render(build_timeline(crash_loop_items(), "dev", T0, T0 + timedelta(hours=1), config=CFG), "text")
    assert "first crash" in text and "decision: scale_to_zero" in text
    assert "Attribution" in text and "SERVICE" in text
    assert "service-minutes lost: 8 (no healthy host: 3, no datapoint: 0, scaled to 0 by the watchdog: 5)" in text
    assert len(text.splitlines()) < 25


def test_recovery_line_after_healthy_hosts_come_back() -> None:
    items = [hh(i, s, 0 if 3 <= i < 6 else 2) for i in range(10) for s in ("a", "b", "c")]
    tl = build_timeline(items, "dev", T0, T0 + timedelta(hours=1), config=CFG)
    back = [ln for ln in tl.lines if ln.title == "healthy hosts back"]
    assert len(back) == 1 and back[0].start == at(6) and "3 services (all)" in back[0].text
    recovery = [ln for ln in tl.lines if ln.category == "recovery"]
    assert len(recovery) == 1 and recovery[0].start == at(6)
    assert recovery[0].detail == {"outage_start": iso(at(3)), "minutes": 3, "service_minutes_lost": 9}


def test_service_filter_keeps_fleet_attribution() -> None:
    tl = build_timeline(crash_loop_items(), "dev", T0, T0 + timedelta(hours=1), service="web", config=CFG)
    assert all(set(ln.services) <= {"web"} for ln in tl.lines)
    assert tl.attribution.rows[0].service == "api"


@pytest.mark.parametrize("fmt", ["markdown", "json", "csv"])
def test_other_formats(fmt: str) -> None:
    tl = build_timeline(crash_loop_items(), "dev", T0, T0 + timedelta(hours=1), config=CFG)
    out = render(tl, fmt)
    if fmt == "json":
        doc = json.loads(out)
        assert doc["type"] == "timeline" and doc["attribution"]["verdict"] == "service"
        assert doc["availability"]["unavailable_service_minutes"] == 8
        assert doc["lines"][0]["category"] == "first_crash"
    elif fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(out)))
        assert rows[0]["category"] == "first_crash" and len(rows) == len(tl.lines)
    else:
        assert out.startswith("### Incident timeline") and "| time (UTC) | what | detail |" in out
        assert "**Attribution**" in out


def test_unknown_format() -> None:
    tl = build_timeline([], "dev", T0, T0 + timedelta(hours=1))
    with pytest.raises(ValueError):
        render(tl, "yaml")
    assert "nothing recorded" in render(tl, "text")


# ----------------------------------------------------------------------------------- attribution
def fail(service: str, n: int, az: str, kind: StopKind = StopKind.CRASH) -> Failure:
    return Failure(service, T0 + timedelta(minutes=n), kind, f"{service}-{n}", az)


def verdict(failures, tasks, zones=("a", "b", "c"), services=10) -> Verdict:
    return attribute(CFG, failures, tasks, zones, services, T0, T0 + timedelta(hours=1)).verdict


def test_one_task_of_one_service_is_an_instance() -> None:
    tasks = {"api": {f"api-{i}" for i in range(6)}}
    assert verdict([fail("api", 0, "a"), fail("api", 0, "a")], tasks) is Verdict.INSTANCE


def test_most_tasks_of_one_service_is_the_service() -> None:
    tasks = {"api": {"api-0", "api-1", "api-2"}}
    assert verdict([fail("api", i, "abc"[i]) for i in range(3)], tasks) is Verdict.SERVICE


def test_many_services_in_one_zone_is_the_zone() -> None:
    failures = [fail(s, i, "b") for s in ("a1", "a2", "a3", "a4") for i in range(2)]
    assert verdict(failures, {}) is Verdict.ZONE


def test_many_services_across_zones_is_shared_dependency_or_checker() -> None:
    failures = [fail(s, i, "abc"[i], StopKind.HEALTH_CHECK_KILL) for s in ("a1", "a2", "a3", "a4") for i in range(3)]
    a = attribute(CFG, failures, {}, ("a", "b", "c"), 10, T0, T0 + timedelta(hours=1))
    assert a.verdict is Verdict.SHARED and a.verdict.value == "shared dependency or checker"
    assert len(a.failing) == 4 and a.bound == 2 and a.zones == ("a", "b", "c")


def test_nothing_failed() -> None:
    assert verdict([], {}) is Verdict.NONE


# ---------------------------------------------------------------- accounts and regions never mix; clean job exits
def _homed(item: dict, account: str | None, region: str | None = "eu-west-1") -> dict:
    return {**item, **({"account": account} if account else {}), **({"region": region} if region else {})}


def test_two_accounts_clusters_of_one_name_get_one_timeline_each():
    from ecs_guardrail.core.timeline import build_timelines

    own = [_homed(stop(m, "api", "crash", n), None, None) for n, m in enumerate((1, 2, 3, 4, 5))]
    other = [_homed(stop(m, svc, "crash", n), "999988887777")
             for svc in ("a", "b", "c", "d") for n, m in enumerate((1, 2, 3, 4, 5))]
    tls = build_timelines(own + other, "dev", at(0), at(30), account="111122223333", region="eu-west-1", config=CFG)
    assert [(t.account, t.region) for t in tls] == [("111122223333", "eu-west-1"), ("999988887777", "eu-west-1")]
    mine, theirs = tls
    assert mine.attribution.verdict is Verdict.SERVICE and [r.service for r in mine.attribution.rows] == ["api"]
    assert {r.service for r in theirs.attribution.rows} == {"a", "b", "c", "d"}
    assert all("api" not in ln.services for ln in theirs.lines)
    assert mine.to_dict()["account"] == "111122223333"


def test_two_timelines_of_one_cluster_name_say_whose_they_are_in_their_heading():
    from ecs_guardrail.core.timeline import build_timelines

    own = [_homed(stop(m, "api", "crash", n), None, None) for n, m in enumerate((1, 2, 3))]
    other = [_homed(stop(m, "web", "crash", n), "999988887777") for n, m in enumerate((1, 2, 3))]
    mine, theirs = build_timelines(own + other, "dev", at(0), at(30), account="111122223333", region="eu-west-1",
                                   config=CFG)
    heads = [render(t, fmt).splitlines()[0] for t in (mine, theirs) for fmt in ("text", "markdown")]
    assert heads[0].startswith("Incident timeline: cluster dev (account 111122223333, region eu-west-1), ")
    assert heads[1] == "### Incident timeline: `dev` (account 111122223333, region eu-west-1)"
    assert heads[2].startswith("Incident timeline: cluster dev (account 999988887777, region eu-west-1), ")
    assert heads[3] == "### Incident timeline: `dev` (account 999988887777, region eu-west-1)"
    plain = build_timeline([stop(1, "api", "crash", 1)], "dev", at(0), at(30), config=CFG)
    assert render(plain, "text").startswith("Incident timeline: cluster dev, ")  # nothing known, nothing said


def test_same_account_other_region_is_apart_too():
    from ecs_guardrail.core.attribution import group_by_home

    items = [_homed(stop(1, "api", "crash", 1), "111122223333", "eu-west-1"),
             _homed(stop(1, "api", "crash", 2), "111122223333", "us-east-1"),
             stop(2, "api", "crash", 3)]
    groups = group_by_home(items, "111122223333", "eu-west-1")
    assert {k: len(v) for k, v in groups.items()} == {("111122223333", "eu-west-1", "dev"): 2,
                                                      ("111122223333", "us-east-1", "dev"): 1}


def test_a_standalone_jobs_clean_exit_is_finished_not_a_crash():
    from ecs_guardrail.core.attribution import is_clean_job_exit

    job = {**stop(1, "", "crash", 1, exit_codes=[{"name": "app", "code": 0}, {"name": "sidecar", "code": 0}]),
           "service": None, "group": "family:report-builder"}
    failed = {**stop(2, "", "crash", 2, exit_codes=[{"name": "app", "code": 1}]),
              "service": None, "group": "family:report-builder"}
    tl = build_timeline([job, failed], "dev", at(0), at(30), config=CFG)
    titles = [ln.title for ln in tl.lines]
    assert "standalone tasks finished (exit 0)" in titles
    firsts = [ln for ln in tl.lines if ln.category == "first_crash"]
    assert len(firsts) == 1 and firsts[0].detail["task_arn"].endswith("-2")  # the clean exit is no crash
    assert tl.attribution.rows == ()  # a failed job is on the timeline, never in the attribution (no fleet test)
    assert is_clean_job_exit("family:x", [("app", 0)]) and not is_clean_job_exit("family:x", [("app", None)])
    assert not is_clean_job_exit("service:api", [{"name": "app", "code": 0}])
    assert not is_clean_job_exit("family:x", [])


def test_a_longer_window_does_not_dilute_a_service_failure_into_an_instance():
    """A bad image: every new task of api fails to start while one old task runs on. Tasks stopped hours before
    the failures (earlier deployments) are not in the share's denominator, so the verdict is the service's
    whatever --since/--until the reader asks for."""
    old = []
    for n in range(6):  # six earlier tasks, each replaced by a deployment hours before
        old += [running(-300 + n * 30, "api", 100 + n), stop(-290 + n * 30, "api", "scheduler", 100 + n)]
    items = old + [running(-400, "api", 50)] + [stop(1 + i, "api", "crash", i) for i in range(6)]
    narrow = build_timeline(items, "dev", at(0), at(30), config=CFG)
    wide = build_timeline(items, "dev", at(-480), at(30), config=CFG)
    assert narrow.attribution.verdict is Verdict.SERVICE
    assert wide.attribution.verdict is Verdict.SERVICE
    assert wide.attribution.rows[0].tasks_seen == 7  # the six that failed and the one still running


def _zones(n: int) -> str:
    return f"eu-west-1{'abc'[n % 3]}"


def test_failures_hours_apart_are_not_failing_at_once() -> None:
    """Ten services each crash twice, one service an hour: never more than one failing in a 30-min
    window, so no shared-dependency verdict (the fleet test would not have held either)."""
    items = [running(0, f"svc{k}", 100 + k, _zones(k)) for k in range(10)]
    for k in range(10):
        items += [stop(60 * k + m, f"svc{k}", "crash", 10 * k + m, _zones(k)) for m in range(2)]
    tl = build_timeline(items, "dev", at(-5), at(660))
    assert tl.attribution.verdict is not Verdict.SHARED
    assert len(tl.attribution.failing) == 1


def test_failures_of_many_services_within_one_window_are_still_shared() -> None:
    items = [running(0, f"svc{k}", 100 + k, _zones(k)) for k in range(10)]
    for k in range(10):
        items += [stop(k + m / 2, f"svc{k}", "crash", 10 * k + m, _zones(k)) for m in range(2)]
    items += [stop(300, "svc0", "crash", 999)]  # a later failure does not stretch the window
    tl = build_timeline(items, "dev", at(-5), at(400))
    assert tl.attribution.verdict is Verdict.SHARED and len(tl.attribution.failing) == 10


def _standalone_failures(group: str, count: int) -> list[dict]:
    """``count`` failed standalone tasks (no service) of ``group``, a minute apart."""
    out = []
    for m in range(count):
        task = stop(m, "x", "crash", 50 + m, exit_codes=[{"name": "app", "code": 1}])
        task.pop("service")
        task["group"] = group
        out.append(task)
    return out


def test_a_failing_standalone_job_is_not_a_failing_service() -> None:
    items = [running(0, "api", 1), running(0, "web", 2)]
    items += [stop(m, "api", "crash", 10 + m) for m in range(2)]
    items += _standalone_failures("family:nightly", 6)
    tl = build_timeline(items, "dev", at(-5), at(30))
    assert tl.attribution.failing == ("api",)
    assert all(not r.service.startswith("family:") for r in tl.attribution.rows)


def test_busiest_window_prefers_more_failing_services_then_more_failures() -> None:
    f = [Failure("a", at(0), StopKind.CRASH, "t1"), Failure("a", at(1), StopKind.CRASH, "t2"),
         Failure("b", at(100), StopKind.CRASH, "t3"), Failure("c", at(101), StopKind.CRASH, "t4"),
         Failure("b", at(102), StopKind.CRASH, "t5"), Failure("c", at(103), StopKind.CRASH, "t6")]
    assert busiest_window(f, CFG) == (at(100), at(103))
    lone = [Failure("a", at(0), StopKind.CRASH, "t1"), Failure("b", at(100), StopKind.CRASH, "t2"),
            Failure("b", at(101), StopKind.CRASH, "t3")]  # b reaches 2 failures: the window of b
    assert busiest_window(lone, CFG) == (at(100), at(101))


def test_a_standalone_task_with_a_custom_group_is_not_a_failing_service() -> None:
    """RunTask --group nightly-reports: the task's group is not family:..., but it is no service either
    (the watchdog files it as a job of its task definition's family, outside the fleet test): it must not
    make a second failing service."""
    items = [running(0, "api", 1), running(0, "web", 2)]
    items += [stop(m, "api", "crash", 10 + m) for m in range(5)]
    items += _standalone_failures("nightly-reports", 2)
    tl = build_timeline(items, "dev", at(-5), at(30))
    assert tl.attribution.failing == ("api",)
    assert [r.service for r in tl.attribution.rows] == ["api"]
    assert tl.attribution.verdict is not Verdict.SHARED


def test_a_timeline_spanning_days_dates_its_attribution():
    """Issue 31 item 11: the attribution's times had no date in a timeline over two days (14:02 of which day?)."""
    text = render(build_timeline(crash_loop_items(), "dev", T0 - timedelta(days=1), T0 + timedelta(hours=1),
                                 config=CFG), "text")
    line = next(ln for ln in text.splitlines() if ln.startswith("Attribution "))
    assert line.startswith(f"Attribution {T0:%Y-%m-%d} ") and line.count(f"{T0:%Y-%m-%d}") == 2, line
    one_day = render(build_timeline(crash_loop_items(), "dev", T0, T0 + timedelta(hours=1), config=CFG), "text")
    assert f"{T0:%Y-%m-%d}" not in next(ln for ln in one_day.splitlines() if ln.startswith("Attribution "))


def test_a_cut_stop_reason_closes_its_parenthesis():
    from ecs_guardrail.core.timeline import _Stop, _stop_words

    reason = ("Task failed ELB health checks in (target-group arn:aws:elasticloadbalancing:eu-central-1:"
              "111122223333:targetgroup/basket/0123456789abcdef)")
    stop = _Stop(time=datetime(2025, 8, 21, tzinfo=UTC), service="basket", kind="health_check_kill",
                 task_arn="t", az="eu-central-1a", cause=None, reason=reason, exit_codes=("app=143",))
    words = _stop_words(stop)
    assert words.startswith("basket: Task failed ELB health checks in (target-group arn:aws:")
    assert "\u2026); exit app=143; eu-central-1a" in words and words.count("(") == words.count(")")
