"""Issue 31: the replay is production (the same sweep, alerts, clock and classification) and the last
late-delivery gaps. Each bundled scenario named here is a copy of its ``../shared/scenarios`` folder and is
checked against its expected.json by ``tests/e2e/test_scenarios.py`` (both engines: ``test_engines.py``);
these tests pin the mechanism behind each item, each one failing on the main of before the fix."""

from __future__ import annotations

import copy
import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ecs_guardrail.core.availability import ScaleDown, _watchdog_periods
from ecs_guardrail.core.classify import StopKind, kind_with_notice
from ecs_guardrail.core.errors import RestoreError
from ecs_guardrail.core.restore_count import MAX_RESTORE_COUNT, choose_restore_count
from ecs_guardrail.replay.run import far_future_warnings, replay
from ecs_guardrail.replay.scenario import load_scenario
from tests.conftest import SCENARIOS, cli_in_process

T0 = datetime(2026, 3, 4, 10, 0, tzinfo=UTC)
MIN = timedelta(minutes=1)


def _alerts(folder: Path, tmp_path: Path, *extra: str) -> list[dict]:
    out = tmp_path / f"alerts-{len(list(tmp_path.iterdir()))}.jsonl"
    proc = cli_in_process("replay", str(folder), "--json", "--alerts-out", str(out), *extra)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return [a for a in map(json.loads, out.read_text().splitlines()) if a["channel"] == "sns"]


# ---- item 1: the sweep runs whatever RECOVERY says, from the first event to one quiet window past the last
def test_the_default_replay_sends_the_job_summary_the_sweep_sends(tmp_path: Path) -> None:
    folder = SCENARIOS / "job-summary-default-recovery"  # RECOVERY left at manual
    kinds = [a["kind"] for a in _alerts(folder, tmp_path)]
    assert kinds == ["job_failure", "job_summary"]
    # the same alert model under either RECOVERY value
    assert [a["kind"] for a in _alerts(folder, tmp_path, "--set", "RECOVERY=probe")] == kinds


def test_the_sweep_clock_skips_minutes_in_which_nothing_can_fall_due() -> None:
    from types import SimpleNamespace

    from ecs_guardrail.core.policy import PolicyConfig
    from ecs_guardrail.replay.run import SweepTicks

    ticks: list[datetime] = []

    class Clock(SweepTicks):
        def tick(self, minute: datetime) -> None:
            ticks.append(minute)

    rt = SimpleNamespace(settings=SimpleNamespace(policy=lambda: PolicyConfig(window_minutes=3)))
    clock = Clock(SimpleNamespace(first=None, last=None), rt, None, None)  # reach: window + 1 = 4 min
    far = T0 + timedelta(days=365 * 70)  # an event stamped 2096: no 70 years of ticks
    clock.before_event(T0)
    clock.before_event(T0 + 2 * MIN + timedelta(seconds=30))
    assert ticks == [T0, T0 + MIN]  # each minute before the first event stamped after its end
    clock.before_event(T0 + MIN)  # late: no tick, the clock never goes back
    clock.before_event(far)
    assert ticks == [T0 + i * MIN for i in range(7)]  # to 4 min past 10:02:30; 10:07 to 2096 skipped
    clock.finish()
    assert ticks[7:] == [far + i * MIN for i in range(5)]  # one quiet window + 1 min past the last event


# ---- item 2: an owed recovery after a quiet-window end, with no later event of the service
@pytest.mark.parametrize("recovery", ["manual", "probe"])
def test_a_quiet_window_recovery_is_sent_without_another_event(tmp_path: Path, recovery: str) -> None:
    alerts = _alerts(SCENARIOS / "quiet-window-recovery-sent", tmp_path, "--set", f"RECOVERY={recovery}")
    assert [a["kind"] for a in alerts] == ["alert_only", "recovery"]
    assert alerts[1]["time"] == "2026-07-15T20:17:30Z"  # one window after the last failure (19:47:30)


# ---- item 3: classify once; a remembered notice is read as the watchdog reads it
def test_a_notice_decides_the_kind_of_its_tasks_stop_as_the_watchdog_counts_it() -> None:
    at = T0
    assert kind_with_notice(StopKind.CRASH, at, (StopKind.SPOT, at - MIN), notice_first=True) is StopKind.SPOT
    # delivered after the STOPPED event: takes back a crash stamped at or after it, never one before
    assert kind_with_notice(StopKind.CRASH, at, (StopKind.INFRASTRUCTURE, at), notice_first=False) \
        is StopKind.INFRASTRUCTURE
    assert kind_with_notice(StopKind.CRASH, at, (StopKind.SPOT, at + MIN), notice_first=False) is StopKind.CRASH
    assert kind_with_notice(StopKind.SCHEDULER, at, (StopKind.SPOT, at), notice_first=False) is StopKind.SCHEDULER
    assert kind_with_notice(StopKind.CRASH, at, None, notice_first=True) is StopKind.CRASH


def test_notices_delivered_after_their_stops_are_counted_as_notices() -> None:
    summary = replay(load_scenario(SCENARIOS / "notice-after-its-stop")).summary
    assert summary["stops_by_kind"] == {"infrastructure": 6} and summary["decisions"] == 0


# ---- item 4: an NLB is sampled from AWS/NetworkELB
def test_the_fast_engine_names_an_nlb_as_aws_does() -> None:
    from ecs_guardrail.replay.memory_aws import MemoryAws

    elb = MemoryAws("111122223333", "eu-west-1").client("elbv2")
    net = elb.create_load_balancer(Name="n", Type="network")["LoadBalancers"][0]["LoadBalancerArn"]
    app = elb.create_load_balancer(Name="a", Type="application")["LoadBalancers"][0]["LoadBalancerArn"]
    assert ":loadbalancer/net/n/" in net and ":loadbalancer/app/a/" in app


# ---- item 5: a rejected line never moves the replay's clock
def test_rejected_lines_move_no_clock(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    shutil.copytree(SCENARIOS / "future-stamp-rejected-keeps-clock", folder)
    lines = (folder / "events.jsonl").read_text().splitlines()
    junk = dict(json.loads(lines[0]), time="2030-01-01T00:00:00Z", detail={})  # JSON, stamped, malformed
    (folder / "events.jsonl").write_text("\n".join([*lines, "{not json", json.dumps(junk)]) + "\n")
    res = replay(load_scenario(folder))
    assert res.summary["events_rejected"] == 3  # line 3 (49 min after its delivery: delivered.csv), 2 junk
    assert res.clock_span is not None
    stamps = sorted(datetime.fromisoformat(json.loads(x)["time"].replace("Z", "+00:00")) for x in lines)
    assert res.clock_span[1] == stamps[-2]  # neither the future stamp (the newest) nor 2030 moved the clock
    assert res.summary["watchdog_service_minutes"] == 31


# ---- item 6: a decision owns its minutes from T, even delivered after the samples end
def test_a_late_scale_down_owns_its_minutes_after_the_last_sample() -> None:
    t = T0 + timedelta(minutes=36, seconds=10)
    seen = [("c", "s", T0 + i * MIN, 3, None) for i in range(37, 65)]  # the old count, sampled before it acted
    late = ScaleDown("c", "s", t, acted_at=T0 + timedelta(minutes=80))
    assert _watchdog_periods([late], seen)[("c", "s")] == [(T0 + 36 * MIN, None)]
    on_time = ScaleDown("c", "s", t)  # acted at T: a count above 0 after it was a restore
    assert _watchdog_periods([on_time], seen)[("c", "s")] == [(T0 + 36 * MIN, T0 + 37 * MIN)]


# ---- item 7: the fleet test remembers another service's failures however long ago its newest was
def test_minute_counts_keep_old_failures_behind_a_much_later_one() -> None:
    from ecs_guardrail.core.classify import StopKind as K
    from ecs_guardrail.core.records import Failure
    from ecs_guardrail.core.summary import ServiceSummary, add_failure, failures_between

    def fail(n: int, at: datetime) -> Failure:
        return Failure(service="enricher", time=at, kind=K.HEALTH_CHECK_KILL, task_arn=f"arn:aws:ecs:r:1:task/c/{n}")

    s = ServiceSummary("enricher")
    for n, at in enumerate((T0 + timedelta(minutes=31, seconds=40), T0 + timedelta(minutes=37, seconds=50),
                            T0 + timedelta(minutes=118, seconds=10))):
        s = add_failure(s, fail(n, at), 10, horizon=timedelta(minutes=60)) or s
    start, end = T0 + timedelta(minutes=12, seconds=45), T0 + timedelta(minutes=42, seconds=45)
    assert failures_between(s.minutes, start, end, 2) == 2


# ---- item 10: fleet.json deployments, checked, and warned when a deployment is never closed
def _with_deployments(tmp_path: Path, rows: object) -> Path:
    folder = tmp_path / "d"
    shutil.copytree(SCENARIOS / "listed-deployment-finished-loop-scaled", folder)
    fleet = json.loads((folder / "fleet.json").read_text())
    fleet["clusters"][0]["services"][0]["deployments"] = rows
    (folder / "fleet.json").write_text(json.dumps(fleet))
    return folder


def test_an_unlisted_unclosed_deployment_protects_and_is_warned(tmp_path: Path) -> None:
    proc = cli_in_process("replay", str(_with_deployments(tmp_path, [])), "--json")
    assert proc.returncode == 0
    assert "deployment ecs-svc/4406718823409915271 of orders-dev/checkout has no closing event" in proc.stderr
    assert '"finishedAt": "...Z"}; without finishedAt it stays in progress' in proc.stderr  # the whole row
    decision = json.loads(proc.stdout.splitlines()[0])
    assert (decision["action"], decision["reason"]) == ("alert_only", "deployment_in_progress")


def test_a_rejected_deployment_event_opens_nothing_and_its_id_is_not_echoed(tmp_path: Path) -> None:
    folder = _with_deployments(tmp_path, [])
    events = folder / "events.jsonl"
    lines = events.read_text().splitlines()
    opened = json.loads(next(line for line in lines if "SERVICE_DEPLOYMENT_IN_PROGRESS" in line))
    for n, did in enumerate(("ecs-svc/12\x1b[31mred", "ecs-svc/12\x00", "ecs-svc/" + "9" * 5000, "")):
        bad = copy.deepcopy(opened)
        bad["id"], bad["detail"]["deploymentId"] = f"hostile-{n}", did
        lines.append(json.dumps(bad))
    events.write_text("\n".join(lines) + "\n")
    proc = cli_in_process("replay", str(folder), "--json")
    assert proc.returncode == 0
    assert proc.stderr.count("is not an ECS deployment id") == 4
    # the accepted IN_PROGRESS is still warned; the four rejected ones open nothing
    assert proc.stderr.count("has no closing event") == 1
    assert "\x1b" not in proc.stderr and "\x00" not in proc.stderr and "9" * 100 not in proc.stderr


def test_a_listed_row_without_finished_at_keeps_the_deployment_in_progress(tmp_path: Path) -> None:
    # what the warning's hint says: the row closes the deployment only with the time it ended
    proc = cli_in_process("replay", str(_with_deployments(tmp_path, [{"id": "ecs-svc/4406718823409915271",
                                                                        "status": "SUCCESSFUL"}])), "--json")
    decision = json.loads(proc.stdout.splitlines()[0])
    assert (decision["action"], decision["reason"]) == ("alert_only", "deployment_in_progress")


def test_a_rejected_deployment_line_opens_no_deployment(tmp_path: Path) -> None:
    # a line whose deploymentId the event model rejects is named as rejected, and is no deployment either:
    # no "has no closing event" warning (with an "add its row" hint) for an id the replay never took
    folder = _with_deployments(tmp_path, [])
    bad = "arn:aws:ecs:eu-west-1:111122223333:service-deployment/orders-dev/checkout/x"
    events = (folder / "events.jsonl").read_text().replace("ecs-svc/4406718823409915271", bad)
    (folder / "events.jsonl").write_text(events)
    proc = cli_in_process("replay", str(folder), "--json")
    assert proc.returncode == 0
    assert "is not an ECS deployment id" in proc.stderr
    assert "has no closing event" not in proc.stderr


@pytest.mark.parametrize("engine", ["fast", "moto"])
def test_a_listed_deployment_id_with_letters_is_read_as_events_read_it(tmp_path: Path, engine: str) -> None:
    # capture writes "ecs-svc/" + the service-deployment ARN's last part (letters and digits), and the event
    # model accepts such a deploymentId: fleet.json's row is taken too, not refused as "ecs-svc/DIGITS"
    did = "ecs-svc/ejGvqq2ilnbKT9qj0vLJe"
    folder = _with_deployments(tmp_path, [{"id": did, "status": "SUCCESSFUL", "startedAt": "2026-09-03T03:10:00Z",
                                           "finishedAt": "2026-09-03T03:31:00Z"}])
    events = (folder / "events.jsonl").read_text().replace("ecs-svc/4406718823409915271", did)
    (folder / "events.jsonl").write_text(events)
    proc = cli_in_process("replay", str(folder), "--json", "--engine", engine)
    assert proc.returncode == 0, proc.stderr
    assert "has no closing event" not in proc.stderr
    decision = json.loads(proc.stdout.splitlines()[0])
    assert decision["action"] == "scale_to_zero"


@pytest.mark.parametrize("rows, says", [
    ({"id": "ecs-svc/1"}, "deployments is a list"),
    ([{"id": "ecs-svc/1", "status": "DONE"}], "status 'DONE'"),
    ([{"id": "svc-1", "status": "SUCCESSFUL"}], "is not a deployment id"),
    ([{"id": "ecs-svc/1", "status": "SUCCESSFUL", "finishedAt": "yesterday"}], "finishedAt 'yesterday'"),
    ([{"id": "ecs-svc/1", "status": "SUCCESSFUL", "endedAt": "2026-09-03T03:31:00Z"}], "unknown key 'endedAt'"),
])
def test_bad_deployment_rows_are_refused_with_their_place(tmp_path: Path, rows: object, says: str) -> None:
    proc = cli_in_process("replay", str(_with_deployments(tmp_path, rows)), "--json")
    assert proc.returncode == 2 and says in proc.stderr and "orders-dev/checkout" in proc.stderr


# ---- item 11: events from before stopCode existed
def test_a_2018_event_without_stop_code_is_classified_by_its_reason() -> None:
    from ecs_guardrail.core.classify import classify_stop
    from ecs_guardrail.core.events import parse_event

    raw = json.loads((SCENARIOS / "no-stopcode-service-loop" / "events.jsonl").read_text().splitlines()[0])
    assert "stopCode" not in raw["detail"]
    assert classify_stop(parse_event(raw).detail).kind is StopKind.CRASH
    failed = copy.deepcopy(raw)
    failed["detail"]["stoppedReason"] = "Task failed to start"
    assert classify_stop(parse_event(failed).detail).kind is StopKind.CRASH
    other = copy.deepcopy(raw)
    other["detail"]["stoppedReason"] = "Scaling activity initiated by (deployment ecs-svc/1)"
    assert classify_stop(parse_event(other).detail).kind is StopKind.UNKNOWN


def test_a_container_instance_event_is_known_not_new() -> None:
    from ecs_guardrail.core.events import OtherEcsEvent, parse_event

    raw = {"version": "0", "id": "8952ba83-7be2-4ab5-9c32-6687532d15a2", "detail-type":
           "ECS Container Instance State Change", "source": "aws.ecs", "account": "111122223333",
           "time": "2016-12-06T16:41:06Z", "region": "us-east-1",
           "resources": ["arn:aws:ecs:us-east-1:111122223333:container-instance/b54a2a04-046f-4331-9d74-3f6d7f6ca315"],
           "detail": {"clusterArn": "arn:aws:ecs:us-east-1:111122223333:cluster/default", "status": "ACTIVE"}}
    event = parse_event(raw)
    assert isinstance(event, OtherEcsEvent) and "new to this tool" not in event.note


# ---- item 13: under RECOVERY=probe a probe's change is the watchdog's, in the timeline too
def test_the_probe_timeline_blames_no_operator() -> None:
    proc = cli_in_process("replay", str(SCENARIOS / "probe-never-recovers"), "--timeline")
    assert proc.returncode == 0
    timeline = proc.stdout.split("Incident timeline", 1)[1]
    assert "set to 0 by an operator (out of the count)" not in timeline
    assert "every service healthy again" not in timeline
    assert "scaled to 0 by the watchdog: 229)" in timeline  # the summary's 229 watchdog minutes


# ---- item 14: the readable report and warnings
def test_the_report_says_what_only_json_said() -> None:
    # the report wraps its text lines at the width (COLUMNS, else 200): read it as words
    probed = " ".join(cli_in_process("replay", str(SCENARIOS / "probe-bad-image-fixed")).stdout.split())
    assert "restored by a probe" in probed and "undo: ecs-guardrail restore" not in probed
    assert "probes: 2 started, 1 passed, 1 failed" in probed and "image pulls: 24" in probed
    gray = " ".join(cli_in_process("replay", str(SCENARIOS / "gray-failure-5xx")).stdout.split())
    assert "clients failing behind healthy hosts 20 (a gray failure" in gray


def test_a_restart_loop_is_not_told_as_crashes() -> None:
    d = replay(load_scenario(SCENARIOS / "restart-policy-loop")).decisions[0]
    assert d["reason"] == "restart_loop" and "5 container restarts" in d["message"]
    assert "crashes and" not in d["message"] and "no task stopped" in d["message"]


def test_an_event_far_past_the_rest_is_warned_without_delivered_csv() -> None:
    times = {n: T0 + n * MIN for n in range(1, 41)}
    times[41] = datetime(2099, 1, 1, tzinfo=UTC)
    (warning,) = far_future_warnings(times, {})
    assert warning.startswith("events.jsonl:41: stamped 2099-01-01T00:00:00Z") and "delivered.csv" in warning
    assert far_future_warnings(times, {41: T0}) == []  # delivered.csv has its row: the replay checks it
    assert far_future_warnings({n: T0 + n * timedelta(hours=30) for n in range(1, 4)}, {}) == []  # a slow capture


def test_replay_of_an_empty_path_refuses() -> None:
    proc = cli_in_process("replay", "")
    assert proc.returncode == 2 and "empty string" in proc.stderr and proc.stdout == ""


def test_restore_never_suggests_a_count_its_parser_refuses() -> None:
    with pytest.raises(RestoreError) as exc:
        choose_restore_count("dev/api", recorded=None, count=None, tag="99999", tag_key="k", max_capacity=None,
                             history_max=3)
    assert "--count 99999" not in str(exc.value) and f"1 to {MAX_RESTORE_COUNT:,}" in str(exc.value)
    with pytest.raises(RestoreError) as small:
        choose_restore_count("dev/api", recorded=None, count=None, tag="7", tag_key="k", max_capacity=None,
                             history_max=3)
    assert "--count 7 to confirm it" in str(small.value)
