"""``capture`` on moto, end to end: build a fleet, put its raw events in the stack's log group and its
healthy hosts in CloudWatch, capture, replay the captured folder: same decisions as the original."""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from ecs_guardrail.app.capture import capture
from ecs_guardrail.cli import DEFAULT_LOG_GROUP, main
from ecs_guardrail.replay.delivered import read_delivered
from ecs_guardrail.replay.embedded import EmbeddedAws
from ecs_guardrail.replay.healthy_hosts import load_into_cloudwatch, read_healthy_hosts_csv
from ecs_guardrail.replay.run import replay
from ecs_guardrail.replay.scenario import load_scenario

SCENARIO = Path(__file__).resolve().parents[2] / "events" / "scenarios" / "watchdog-made-zero"
SINCE, UNTIL = datetime.fromisoformat("2025-10-07T09:50:00+00:00"), datetime.fromisoformat("2025-10-07T10:40:00+00:00")


def _ms(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


@pytest.fixture(autouse=True)
def _moto_logs_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """moto's PutLogEvents drops events older than 14 days: its clock is set to the scenario's day."""
    import moto.logs.models

    monkeypatch.setattr(moto.logs.models, "utcnow", lambda: datetime(2025, 10, 8))


def _seed_logs(aws: EmbeddedAws, folder: Path, log_group: str = DEFAULT_LOG_GROUP) -> None:
    logs = aws.client("logs")
    logs.create_log_group(logGroupName=log_group)
    logs.create_log_stream(logGroupName=log_group, logStreamName="eventbridge")
    lines = [ln for ln in (folder / "events.jsonl").read_text().splitlines() if ln.strip()]
    # another cluster's event in the same log group is not part of the capture
    other = json.loads(lines[0])
    other["detail"]["clusterArn"] = other["detail"]["clusterArn"].rsplit("/", 1)[0] + "/elsewhere"
    lines.append(json.dumps(other))
    events = sorted(({"timestamp": _ms(json.loads(ln)["time"]), "message": ln} for ln in lines),
                    key=lambda e: e["timestamp"])
    logs.put_log_events(logGroupName=log_group, logStreamName="eventbridge", logEvents=events)


def _decisions(folder: Path) -> list[tuple[str, str, str, str, str]]:
    res = replay(load_scenario(folder))
    return [(d["time"], d["cluster"], d["service"], d["action"], d["reason"]) for d in res.decisions]


def test_capture_then_replay_gives_the_original_decisions(tmp_path: Path) -> None:
    out = tmp_path / "captured"
    with EmbeddedAws(load_scenario(SCENARIO)) as aws:
        _seed_logs(aws, SCENARIO)
        load_into_cloudwatch(aws.client("cloudwatch"), aws.target_groups,
                             read_healthy_hosts_csv(SCENARIO / "healthy_hosts.csv"))
        report = capture(aws.client, ["dev"], SINCE, UNTIL, out, log_group=DEFAULT_LOG_GROUP)
    assert report.problems == []
    fleet = json.loads((out / "fleet.json").read_text())
    original = json.loads((SCENARIO / "fleet.json").read_text())
    assert fleet["account"] == original["account"] and fleet["region"] == original["region"]
    assert {s["name"]: (s["desiredCount"], s["targetGroups"]) for s in fleet["clusters"][0]["services"]} == {
        s["name"]: (s["desiredCount"], s["targetGroups"]) for s in original["clusters"][0]["services"]}
    assert report.events == 10 and report.events_skipped == 1
    assert read_healthy_hosts_csv(out / "healthy_hosts.csv") == sorted(
        read_healthy_hosts_csv(SCENARIO / "healthy_hosts.csv"), key=lambda r: (r[0], r[1]))
    # each line's delivery time (the log event's ingestionTime): replay applies the future-stamp check
    delivered = read_delivered(out / "delivered.csv")
    assert sorted(delivered) == list(range(1, report.events + 1))
    shutil.copy(SCENARIO / "settings.env", out / "settings.env")  # settings are the operator's, not captured
    assert _decisions(out) == _decisions(SCENARIO)
    assert "## Missing\n\n- nothing" in (out / "CAPTURE.md").read_text()


def test_missing_log_group_and_denied_metrics_are_one_line_each(tmp_path: Path) -> None:
    out = tmp_path / "captured"
    with EmbeddedAws(load_scenario(SCENARIO)) as aws:
        def client(service: str):
            c = aws.client(service)
            if service == "cloudwatch":
                def deny(**_: object) -> None:
                    raise ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "GetMetricData")
                c.get_metric_data = deny
            return c

        report = capture(client, ["dev"], SINCE, UNTIL, out, log_group="/aws/events/nope/ecs")
    assert len(report.problems) == 2
    assert report.problems[0].startswith("log group /aws/events/nope/ecs not found")
    assert report.problems[1].startswith("no permission for cloudwatch:GetMetricData")
    notes = (out / "CAPTURE.md").read_text()
    assert all(p in notes for p in report.problems)
    assert (out / "events.jsonl").read_text() == "" and not (out / "healthy_hosts.csv").exists()


def test_retention_gap_is_named(tmp_path: Path) -> None:
    with EmbeddedAws(load_scenario(SCENARIO)) as aws:
        _seed_logs(aws, SCENARIO)
        aws.client("logs").put_retention_policy(logGroupName=DEFAULT_LOG_GROUP, retentionInDays=30)
        report = capture(aws.client, ["dev"], SINCE, UNTIL, tmp_path / "c", log_group=DEFAULT_LOG_GROUP)
    assert [p for p in report.problems if p.startswith("retention gap:")], report.problems


def test_cli_capture_rejects_a_backwards_period(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["capture", "--cluster", "dev", "--since", "2025-10-07T11:00", "--until", "2025-10-07T10:00",
               str(tmp_path / "x")])
    assert rc == 2 and "--until must be after --since" in capsys.readouterr().err


def test_cli_capture_into_a_file_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """OUT_DIR naming an existing file raised FileExistsError with a traceback (exit 1)."""
    target = tmp_path / "a-file"
    target.write_text("keep me")
    rc = main(["capture", "--cluster", "dev", "--since", "2025-10-07T10:00", "--until", "2025-10-07T11:00",
               str(target)])
    assert rc == 2 and "is not a folder" in capsys.readouterr().err
    assert target.read_text() == "keep me"


def test_an_aws_error_part_way_leaves_an_earlier_capture_whole(tmp_path: Path) -> None:
    """capture wrote the new fleet.json before reading the events: a failed events read left the new
    fleet.json beside the old events.jsonl."""
    out = tmp_path / "captured"
    out.mkdir()
    (out / "fleet.json").write_text("old fleet")
    (out / "events.jsonl").write_text("old events\n")
    with EmbeddedAws(load_scenario(SCENARIO)) as aws:
        def client(service: str):
            c = aws.client(service)
            if service == "logs":
                def fail(**_: object) -> None:
                    raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow"}},
                                      "DescribeLogGroups")
                c.describe_log_groups = fail
            return c

        with pytest.raises(ClientError):
            capture(client, ["dev"], SINCE, UNTIL, out, log_group=DEFAULT_LOG_GROUP)
    assert (out / "fleet.json").read_text() == "old fleet"
    assert (out / "events.jsonl").read_text() == "old events\n"


def test_capture_writes_the_deployment_keys_restart_policies_and_container_restarts(tmp_path: Path,
                                                                                    monkeypatch) -> None:
    """Issue 19: fleet.json gets deploymentStrategy, deploymentController, taskDefinitionFamily and the
    containers' restart policies; container_restarts.csv the Container Insights totals; the captured
    restart-policy loop replays to the same decision."""
    import moto.logs.models

    from ecs_guardrail.replay.restarts import load_restarts_into_cloudwatch, read_container_restarts_csv

    monkeypatch.setattr(moto.logs.models, "utcnow", lambda: datetime(2026, 3, 7))
    root = SCENARIO.parent
    restarts, blue_green = root / "restart-policy-loop", root / "blue-green-bake-failing-green"
    out, out_bg = tmp_path / "restarts", tmp_path / "bg"
    since = datetime.fromisoformat("2026-03-06T08:55:00+00:00")
    until = datetime.fromisoformat("2026-03-06T09:45:00+00:00")
    with EmbeddedAws(load_scenario(restarts)) as aws:
        _seed_logs(aws, restarts)
        fleet = json.loads((restarts / "fleet.json").read_text())
        known = {(c["name"], s["name"]) for c in fleet["clusters"] for s in c["services"]}
        load_restarts_into_cloudwatch(aws.client("cloudwatch"), read_container_restarts_csv(
            restarts / "container_restarts.csv"), known)
        report = capture(aws.client, ["platform"], since, until, out, log_group=DEFAULT_LOG_GROUP)
    assert report.restart_rows == 40 * 3  # 09:00 to 09:39, three services a minute
    api = next(s for s in json.loads((out / "fleet.json").read_text())["clusters"][0]["services"]
               if s["name"] == "api")
    assert api["containers"][0]["restartPolicy"] == {"enabled": True, "ignoredExitCodes": [0],
                                                     "restartAttemptPeriod": 60}
    assert (out / "container_restarts.csv").read_text().splitlines()[0] == "time,cluster,service,restart_count"
    assert [(d["service"], d["reason"]) for d in replay(load_scenario(out)).decisions] == [("api", "restart_loop")]
    with EmbeddedAws(load_scenario(blue_green)) as aws:  # the fleet only: no log group, events.jsonl empty
        capture(aws.client, ["shop"], since, until, out_bg, log_group=DEFAULT_LOG_GROUP)
    checkout = next(s for s in json.loads((out_bg / "fleet.json").read_text())["clusters"][0]["services"]
                    if s["name"] == "checkout")
    assert checkout["deploymentStrategy"] == {"strategy": "BLUE_GREEN", "bakeTimeInMinutes": 15}
    assert checkout["taskDefinitionFamily"] == "checkout-api"


def test_capture_keeps_the_clients_view_and_the_replay_its_still_serving(tmp_path: Path) -> None:
    folder = SCENARIO.parent / "loop-failing-checks-serving"  # 0 healthy hosts, 299 of 300 requests 2xx
    out = tmp_path / "captured"
    since = datetime.fromisoformat("2025-10-07T09:20:00+00:00")
    until = datetime.fromisoformat("2025-10-07T10:00:00+00:00")
    with EmbeddedAws(load_scenario(folder)) as aws:
        _seed_logs(aws, folder)
        load_into_cloudwatch(aws.client("cloudwatch"), aws.target_groups,
                             read_healthy_hosts_csv(folder / "healthy_hosts.csv"))
        report = capture(aws.client, ["staging"], since, until, out, log_group=DEFAULT_LOG_GROUP)
    assert report.problems == []
    header = (out / "healthy_hosts.csv").read_text().splitlines()[0]
    assert header == "time,target_group,healthy_host_count,request_count,target_2xx,target_5xx,elb_5xx"
    assert read_healthy_hosts_csv(out / "healthy_hosts.csv") == sorted(
        read_healthy_hosts_csv(folder / "healthy_hosts.csv"), key=lambda r: (r[0], r[1]))
    shutil.copy(folder / "settings.env", out / "settings.env")
    assert [d[3:] for d in _decisions(out)] == [("alert_only", "still_serving")] == \
        [d[3:] for d in _decisions(folder)]


def test_capture_writes_what_list_service_deployments_answers(tmp_path: Path) -> None:
    """Issue 31 item 10: fleet.json's ``deployments`` (SCENARIOS.md) is written by capture from
    ListServiceDeployments for a service whose deployments something else finishes, and a replay of the
    capture knows that the deployment whose closing event was lost had finished."""
    folder = SCENARIO.parent / "listed-deployment-finished-loop-scaled"
    out = tmp_path / "captured"
    with EmbeddedAws(load_scenario(folder)) as aws:
        capture(aws.client, ["orders-dev"], SINCE, UNTIL, out, log_group=DEFAULT_LOG_GROUP)
    services = {s["name"]: s for s in json.loads((out / "fleet.json").read_text())["clusters"][0]["services"]}
    rows = {r["id"]: r for r in services["checkout"]["deployments"]}
    assert rows["ecs-svc/4406718823409915271"] == {"id": "ecs-svc/4406718823409915271", "status": "SUCCESSFUL",
                                                    "startedAt": "2026-09-03T03:10:00Z",
                                                    "finishedAt": "2026-09-03T03:31:00Z"}
    assert "deployments" not in services["cart"]  # rolling, no breaker: the watchdog finishes nothing there
    shutil.copy(folder / "events.jsonl", out / "events.jsonl")
    shutil.copy(folder / "settings.env", out / "settings.env")
    assert [d[3:] for d in _decisions(out)] == [("scale_to_zero", "crash_loop")]


TOUR = SCENARIO.parent / "alerts-tour"
TOUR_SINCE, TOUR_UNTIL = datetime.fromisoformat("2025-09-02T08:50:00+00:00"), \
    datetime.fromisoformat("2025-09-02T11:30:00+00:00")


def _quoted(alerts: list[dict]) -> list[str]:
    """The 'Last log lines' field of each alert that has one (to the 'Last stops' field after it), in order."""
    import re

    return [m.group(0) for a in alerts for m in re.finditer(r"Last log lines \(.*?(?=Last stops)",
                                                                   str(a.get("message", "")))]


def test_capture_writes_the_log_lines_alerts_quote_masked_and_the_replay_quotes_them(tmp_path: Path,
                                                                                     monkeypatch) -> None:
    """capture wrote neither logs.jsonl nor logGroup: a captured incident replayed without the crash
    log lines its decision alerts quote. Now the essential container's awslogs group is the service's
    logGroup and each stopped task's stream is read as the crash-log reader reads it, masked."""
    import moto.logs.models

    monkeypatch.setattr(moto.logs.models, "utcnow", lambda: datetime(2025, 9, 3))
    out = tmp_path / "captured"
    with EmbeddedAws(load_scenario(TOUR)) as aws:
        _seed_logs(aws, TOUR)
        report = capture(aws.client, ["development"], TOUR_SINCE, TOUR_UNTIL, out, log_group=DEFAULT_LOG_GROUP)
    assert report.problems == []
    fleet = json.loads((out / "fleet.json").read_text())
    groups = {s["name"]: s.get("logGroup") for s in fleet["clusters"][0]["services"]}
    assert groups["worker"] == "/ecs/worker" and {g for n, g in groups.items() if n != "worker"} == {None}
    written = [json.loads(ln) for ln in (out / "logs.jsonl").read_text().splitlines()]
    assert report.log_lines == len(written) > 0 and report.log_streams >= 1
    text = (out / "logs.jsonl").read_text()
    for secret in ("hunter2", "AKIAIOSFODNN7EXAMPLE", "s3cr3t"):  # as the alert masks them, never on disk
        assert secret in (TOUR / "logs.jsonl").read_text() and secret not in text
    assert all(w["logStream"].startswith("ecs/app/") for w in written)
    assert "- logs.jsonl: " in (out / "CAPTURE.md").read_text()
    shutil.copy(TOUR / "settings.env", out / "settings.env")
    original, captured = replay(load_scenario(TOUR)), replay(load_scenario(out))
    assert _quoted(original.alerts) and _quoted(captured.alerts) == _quoted(original.alerts)


def test_capture_names_a_denied_log_group_once_and_writes_no_logs(tmp_path: Path, monkeypatch) -> None:
    import moto.logs.models

    monkeypatch.setattr(moto.logs.models, "utcnow", lambda: datetime(2025, 9, 3))
    out = tmp_path / "captured"
    (out).mkdir()
    (out / "logs.jsonl").write_text("an earlier capture's\n")
    with EmbeddedAws(load_scenario(TOUR)) as aws:
        _seed_logs(aws, TOUR)

        def client(service: str):
            c = aws.client(service)
            if service == "logs":
                real = c.filter_log_events

                def deny(**kwargs: object) -> object:
                    if kwargs.get("logGroupName") == "/ecs/worker":
                        raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}},
                                          "FilterLogEvents")
                    return real(**kwargs)
                c.filter_log_events = deny
            return c

        report = capture(client, ["development"], TOUR_SINCE, TOUR_UNTIL, out, log_group=DEFAULT_LOG_GROUP)
    assert report.problems == ["no permission for logs:FilterLogEvents on /ecs/worker: logs.jsonl has none of "
                               "its lines"]
    assert report.events > 0 and not (out / "logs.jsonl").exists()


def test_a_stop_time_at_the_calendars_ends_reads_no_stream_and_does_not_crash_capture() -> None:
    """A STOPPED event in the events log group stamped year 1 or 9999 (stoppedAt): its log window
    (stopped - LOOK_BACK .. + 30 s) overflowed, and the OverflowError ended the whole capture."""
    from ecs_guardrail.app.capture import _LogSource, _stopped_tasks

    def event(n: int, when: str) -> tuple[str, None]:
        return json.dumps({"source": "aws.ecs", "detail-type": "ECS Task State Change", "time": "2026-01-01T00:00:00Z",
                           "detail": {"lastStatus": "STOPPED", "group": "service:api", "stoppedAt": when,
                                      "taskArn": f"arn:aws:ecs:eu-west-1:111122223333:task/dev/{n}",
                                      "clusterArn": "arn:aws:ecs:eu-west-1:111122223333:cluster/dev"}}), None

    source = _LogSource("/ecs/api", "ecs", "app", None)
    found = _stopped_tasks([event(1, "0001-01-01T00:00:00Z"), event(2, "9999-12-31T23:59:59Z"),
                            event(3, "0001-01-01T00:00:00+01:00"), event(4, "2026-01-01T02:00:00+02:00")],
                           {("dev", "api"): source})
    assert [(t.isoformat(), task) for t, task, _ in found] == [("2026-01-01T00:00:00+00:00", "4")]


def test_capture_md_says_settings_env_is_the_operators(tmp_path: Path) -> None:
    from ecs_guardrail.app.capture import CaptureReport, _write_notes

    report = CaptureReport(tmp_path, ["dev"], SINCE, UNTIL, DEFAULT_LOG_GROUP)
    _write_notes(tmp_path / "CAPTURE.md", report)
    assert "- settings.env: not written (the settings are yours to add" in (tmp_path / "CAPTURE.md").read_text()
    (tmp_path / "settings.env").write_text("ALERT_ONLY_CLUSTERS=none\n")
    _write_notes(tmp_path / "CAPTURE.md", report)
    assert "- settings.env: kept as it was (yours)" in (tmp_path / "CAPTURE.md").read_text()
