"""Issue 35 items 1-2 in a replay, on both engines: a decision's alert quotes the crashed container's last
lines from ``logs.jsonl`` (through the same adapter and FilterLogEvents as in AWS) and names the change
that started the loop; bad input (a 1 MB line, bytes that are not UTF-8, Slack mentions and links, a log
group with no lines) gets a clear line and no alert is lost."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ecs_guardrail.cli import main
from tests.conftest import SCENARIOS
from tests.fuzz.breakkit import crash, scenario

FAMILY = "example-web_task_def-dev"  # the family breakkit's events carry (revision 26)
CONTAINER = "example-web_container-dev"


def _alerts(folder: Path, engine: str, tmp: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    out = tmp / f"alerts-{engine}.jsonl"
    assert main(["replay", str(folder), "--json", "--engine", engine, "--alerts-out", str(out)]) == 0
    capsys.readouterr()
    alerts = [json.loads(line) for line in out.read_text().splitlines()]
    for a in alerts:
        a.pop("time", None)
    return alerts


def _decision_text(alerts: list[dict[str, Any]]) -> str:
    return next(a["text"] for a in alerts if a["channel"] == "slack" and a["kind"] in ("scale_down", "alert_only"))


def _deployment(name: str, minute: int, seconds: int = 30) -> dict[str, Any]:
    """An ``ECS Deployment State Change`` of development/api at 12:MM:SS (ECS-EVENTS.md's shape)."""
    t = f"2025-08-21T12:{minute:02d}:{seconds:02d}Z"
    return {"version": "0", "id": f"19190000-0000-4000-9000-{minute * 100 + seconds:012d}",
            "detail-type": "ECS Deployment State Change", "source": "aws.ecs",
            "account": "111122223333", "time": t, "region": "eu-west-1",
            "resources": ["arn:aws:ecs:eu-west-1:111122223333:service/development/api"],
            "detail": {"eventType": "INFO", "eventName": name, "deploymentId": "ecs-svc/1", "updatedAt": t,
                       "reason": f"ECS deployment ecs-svc/1 {name.rsplit('_', 1)[-1].lower()}."}}


def _running(n: int, revision: int) -> dict[str, Any]:
    """Task ``n`` of development/api RUNNING revision ``revision`` at 11:50 (before every crash)."""
    e = crash(n, "api")
    e["time"] = "2025-08-21T11:50:00Z"
    e["detail"]["taskDefinitionArn"] = e["detail"]["taskDefinitionArn"].replace(":26", f":{revision}")
    e["detail"]["lastStatus"] = e["detail"]["desiredStatus"] = "RUNNING"
    for key in ("stopCode", "stoppedReason", "stoppedAt", "stoppingAt", "executionStoppedAt"):
        e["detail"].pop(key, None)
    return e


def _loop(tmp: Path, logs: bytes | None, log_group: str = "/ecs/api", deployment: bool = False) -> Path:
    fleet = {"account": "111122223333", "region": "eu-west-1", "clusters": [{"name": "development", "services": [
        {"name": "api", "desiredCount": 2, "taskDefinitionFamily": FAMILY, "logGroup": log_group,
         "containers": [{"name": CONTAINER, "essential": True}]},
        *({"name": f"other{i}", "desiredCount": 1} for i in range(4))]}]}
    events: list[dict[str, Any]] = [crash(n, "api", minute=2 * n) for n in range(1, 6)]
    if deployment:
        events.insert(0, {"version": "0", "id": "19190000-0000-4000-9000-000000000001",
                          "detail-type": "ECS Deployment State Change", "source": "aws.ecs",
                          "account": "111122223333", "time": "2025-08-21T12:00:30Z", "region": "eu-west-1",
                          "resources": ["arn:aws:ecs:eu-west-1:111122223333:service/development/api"],
                          "detail": {"eventType": "INFO", "eventName": "SERVICE_DEPLOYMENT_IN_PROGRESS",
                                     "deploymentId": "ecs-svc/1", "updatedAt": "2025-08-21T12:00:30Z",
                                     "reason": "ECS deployment ecs-svc/1 in progress."}})
    folder = scenario(tmp / "scenario", fleet=fleet, events=events, settings=b"ALERT_ONLY_CLUSTERS=nothing\n")
    if logs is not None:
        (folder / "logs.jsonl").write_bytes(logs)
    return folder


def _line(seconds: int, message: str, task: int = 5) -> bytes:
    return json.dumps({"time": f"2025-08-21T12:09:{seconds:02d}Z",
                       "logStream": f"ecs/{CONTAINER}/{task:032x}", "message": message}).encode() + b"\n"


def test_alerts_tour_quotes_the_workers_last_lines_masked_on_both_engines(tmp_path, capsys):
    fast = _alerts(SCENARIOS / "alerts-tour", "fast", tmp_path, capsys)
    assert _alerts(SCENARIOS / "alerts-tour", "moto", tmp_path, capsys) == fast
    text = _decision_text([a for a in fast if a["kind"] == "scale_down"])
    assert "Last log lines (app, task 0000000000000000000000000000000a):" in text
    assert "psycopg.errors.UndefinedColumn: column orders.currency_code does not exist" in text
    assert "db_password=**** AWS_ACCESS_KEY_ID=****" in text and "hunter2" not in text
    assert "postgres://****@db.internal" in text and "s3cr3t" not in text and "AKIAIOSFODNN7EXAMPLE" not in text
    assert "&lt;!channel&gt;" in text and "<!channel>" not in text  # escaped as every alert's text
    assert "Change: started with worker:14 (image :latest) at 09:19Z; worker:13 (same image) ran without crashes" \
        in text
    # the SNS body (Chatbot JSON) carries the same lines, escaped for Slack too
    sns = next(a for a in fast if a["channel"] == "sns" and a["kind"] == "scale_down")
    assert "hunter2" not in sns["message"] and "&lt;!channel&gt;" in sns["message"]


def test_bad_log_lines_each_get_a_clear_line_and_the_alert_goes_out(tmp_path, capsys):
    logs = (_line(1, "x" * 1_000_000)  # a 1 MB line: cut
            + _line(2, "token=abc123 user logged in")
            + b'{"time": "2025-08-21T12:09:03Z", "logStream": "ecs/' + CONTAINER.encode() + b"/" + f"{5:032x}".encode()
            + b'", "message": "bad bytes \xff\xfe here"}\n'  # not UTF-8: replaced, the line kept
            + _line(4, "\x1b[31mred\x1b[0m and a NUL \x00 and \ud800")  # control characters, a lone surrogate
            + _line(5, "<!here> <@U123> <https://evil.example|click> & more"))
    folder = _loop(tmp_path, logs)
    fast = _alerts(folder, "fast", tmp_path, capsys)
    assert _alerts(folder, "moto", tmp_path, capsys) == fast
    text = _decision_text(fast)
    quoted = text.split("Last log lines (", 1)[1].split("\nLast stops:", 1)[0]
    assert len(quoted) < 1_700  # at most 1,500 characters of lines, and the label
    assert "xxx…" in quoted  # the 1 MB line is cut and says so
    assert "token=**** user logged in" in quoted
    assert "bad bytes \ufffd\ufffd here" in quoted
    assert "\x1b" not in quoted and "\x00" not in quoted
    assert "&lt;!here&gt; &lt;@U123&gt; &lt;https://evil.example|click&gt; &amp; more" in quoted
    blocks = json.dumps(next(a for a in fast if a["channel"] == "slack")["blocks"])
    assert "<!here>" not in blocks and "<https://evil.example" not in blocks


def test_a_log_group_with_no_stream_says_so_in_one_line_on_both_engines(tmp_path, capsys):
    folder = _loop(tmp_path, None)
    fast = _alerts(folder, "fast", tmp_path, capsys)
    assert _alerts(folder, "moto", tmp_path, capsys) == fast
    text = _decision_text(fast)
    assert "Last log lines: log group /ecs/api or stream ecs/example-web_container-dev/" in text
    assert "not found" in text.split("Last log lines: ", 1)[1].split("\n", 1)[0]


def test_more_than_ten_lines_keeps_the_newest_ten(tmp_path, capsys):
    logs = b"".join(_line(n, f"line {n}") for n in range(1, 16))
    text = _decision_text(_alerts(_loop(tmp_path, logs), "fast", tmp_path, capsys))
    quoted = text.split("Last log lines (", 1)[1].split("\nLast stops:", 1)[0].split("\n")[1:]
    assert quoted == [f"line {n}" for n in range(6, 16)]


def test_the_change_names_the_revision_and_the_deployment_that_started_the_loop(tmp_path, capsys):
    folder = _loop(tmp_path, None, deployment=True)
    fast = _alerts(folder, "fast", tmp_path, capsys)
    assert _alerts(folder, "moto", tmp_path, capsys) == fast
    text = _decision_text(fast)
    change = next(line for line in text.splitlines() if line.startswith("Change: "))
    assert change.startswith(f"Change: started with {FAMILY}:26 (image :latest) at 12:00Z")
    # the embedded ECS lists the service's one deployment: what ran before is not known, and it says so
    assert "the revision before is not in DescribeServices' deployments any more" in change


@pytest.mark.parametrize("closed", [False, True], ids=["in-progress", "completed"])
def test_the_change_names_the_revision_before_from_describe_services_on_both_engines(tmp_path, capsys, closed):
    """SERVICE_DEPLOYMENT_IN_PROGRESS leaves the revision the service's tasks ran before (revision 25, from
    a task event) ACTIVE in DescribeServices' deployments[] beside the PRIMARY, as a rolling deployment
    does; SERVICE_DEPLOYMENT_COMPLETED removes it (only the PRIMARY stays)."""
    events: list[dict[str, Any]] = [_running(90, 25), _deployment("SERVICE_DEPLOYMENT_IN_PROGRESS", 0)]
    events += [crash(n, "api", minute=2 * n) for n in range(1, 6)]
    if closed:
        events.insert(3, _deployment("SERVICE_DEPLOYMENT_COMPLETED", 2, 10))
    fleet = {"account": "111122223333", "region": "eu-west-1", "clusters": [{"name": "development", "services": [
        {"name": "api", "desiredCount": 2, "taskDefinitionFamily": FAMILY,
         "containers": [{"name": CONTAINER, "essential": True}]},
        *({"name": f"other{i}", "desiredCount": 1} for i in range(4))]}]}
    folder = scenario(tmp_path / "scenario", fleet=fleet, events=events, settings=b"ALERT_ONLY_CLUSTERS=nothing\n")
    fast = _alerts(folder, "fast", tmp_path, capsys)
    assert _alerts(folder, "moto", tmp_path, capsys) == fast
    change = next(line for line in _decision_text(fast).splitlines() if line.startswith("Change: "))
    assert change.startswith(f"Change: started with {FAMILY}:26 (image :latest) at 12:00Z; ")
    if closed:
        assert change.endswith("the revision before is not in DescribeServices' deployments any more")
    else:
        assert change.endswith(f"{FAMILY}:25 (same image) ran without crashes")


def test_without_a_deployment_the_change_names_the_running_revision(tmp_path, capsys):
    text = _decision_text(_alerts(_loop(tmp_path, None), "fast", tmp_path, capsys))
    assert f"Change: runs {FAMILY}:26 (image :latest); no deployment in the 30 min before the first crash" in text


def test_a_logs_jsonl_line_that_is_not_an_object_is_a_scenario_error(tmp_path, capsys):
    folder = _loop(tmp_path, b'{"time": "2025-08-21T12:09:00Z", "logStream": "app", "message": "x"}\n')
    assert main(["replay", str(folder), "--json"]) != 0
    assert "logs.jsonl line 1: logStream is PREFIX/CONTAINER/TASK_ID" in capsys.readouterr().err
