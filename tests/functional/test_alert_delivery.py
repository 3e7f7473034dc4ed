"""Issue 13 on moto: links read from the task definition, recovery messages once, job windows with one
summary (24 hours replayed), AWS Chatbot's format on SNS, Slack buttons against a server on 127.0.0.1."""

from __future__ import annotations

import copy
import importlib.util
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import boto3

from ecs_guardrail.adapters.alerts import SlackWebhook
from ecs_guardrail.adapters.ecs import EcsService
from ecs_guardrail.adapters.history import HistoryStore
from ecs_guardrail.adapters.store.dynamodb import DynamoTable
from ecs_guardrail.app.restore import restore
from ecs_guardrail.replay.run import replay
from ecs_guardrail.replay.scenario import load_scenario
from tests.conftest import ROOT
from tests.functional.test_handlers import _Hook, slack_server  # noqa: F401 - the 127.0.0.1 Slack fixture
from tests.functional.test_watchdog_state import (  # noqa: F401 - fixtures
    ACCOUNT,
    REGION,
    T0,
    TABLE,
    Aws,
    aws,
    crash,
    deliver,
    moto_env,
)

W = timedelta(minutes=30)


def steady(t, service: str = "api", cluster: str = "dev", n: int = 1) -> dict[str, Any]:
    return {"version": "0", "id": f"5e5e0000-0000-4000-8000-{n:012d}", "detail-type": "ECS Service Action",
            "source": "aws.ecs", "account": ACCOUNT, "time": t.strftime("%Y-%m-%dT%H:%M:%SZ"), "region": REGION,
            "resources": [f"arn:aws:ecs:{REGION}:{ACCOUNT}:service/{cluster}/{service}"],
            "detail": {"clusterArn": f"arn:aws:ecs:{REGION}:{ACCOUNT}:cluster/{cluster}", "eventType": "INFO",
                       "eventName": "SERVICE_STEADY_STATE", "createdAt": t.strftime("%Y-%m-%dT%H:%M:%SZ")}}


def logged_taskdef() -> str:
    """A task definition whose container logs with awslogs (group, stream prefix, region)."""
    ecs = boto3.client("ecs", region_name=REGION)
    return ecs.register_task_definition(family="api-logged", containerDefinitions=[{
        "name": "app", "image": "x", "memory": 128, "essential": True,
        "logConfiguration": {"logDriver": "awslogs", "options": {
            "awslogs-group": "/ecs/dev/api", "awslogs-stream-prefix": "ecs", "awslogs-region": REGION}}}],
    )["taskDefinition"]["taskDefinitionArn"]


def with_taskdef(event: dict[str, Any], arn: str) -> dict[str, Any]:
    e = copy.deepcopy(event)
    e["detail"]["taskDefinitionArn"] = arn
    for c in e["detail"]["containers"]:
        c["name"] = "app"
    return e


def kinds(rt: Any) -> list[str]:
    return [p["kind"] for p in rt.previews if p["channel"] == "slack"]


# ---------------------------------------------------------------- where and links
def test_decision_alert_links_the_service_its_stopped_tasks_the_logs_and_the_runbook(aws: Aws) -> None:  # noqa: F811 - the fixture
    arn = logged_taskdef()
    rt = aws.runtime(ALERT_ONLY_CLUSTERS="dev", RUNBOOK_URL="https://wiki.example.com/rb/{cluster}/{service}")
    rt.previews = []
    for i in range(3):
        deliver(with_taskdef(crash(i, T0 + timedelta(minutes=i)), arn), rt)
    [slack] = [p for p in rt.previews if p["channel"] == "slack"]
    [sns] = [p for p in rt.previews if p["channel"] == "sns"]
    [actions] = [b for b in slack["blocks"] if b["type"] == "actions"]
    urls = {e["text"]["text"]: e["url"] for e in actions["elements"]}
    console = f"https://{REGION}.console.aws.amazon.com"
    assert urls["Service"] == f"{console}/ecs/v2/clusters/dev/services/api/health?region={REGION}"
    assert urls["Stopped tasks"] == f"{console}/ecs/v2/clusters/dev/services/api/tasks?region={REGION}"
    assert urls["Runbook"] == "https://wiki.example.com/rb/dev/api"
    logs = [e["url"] for e in actions["elements"] if e["text"]["text"].startswith("Logs app")]
    assert len(set(logs)) == 3  # one per last stop, stream prefix/container/task-id
    assert all(u.startswith(f"{console}/cloudwatch/home?region={REGION}#logsV2:log-groups/log-group/"
                            "$252Fecs$252Fdev$252Fapi/log-events/ecs$252Fapp$252F") for u in logs)
    assert f"account {ACCOUNT} · region {REGION} · cluster dev · service api" in slack["text"]
    # SNS (default format chatbot) carries the same links as next steps
    msg = json.loads(sns["message"])
    assert msg["source"] == "custom" and any(s.startswith("Logs app") for s in msg["content"]["nextSteps"])
    # the task definition was read once for three stops (cached per ARN)
    assert aws.calls[("ecs", "DescribeTaskDefinition")] == 1


def test_sns_body_is_chatbot_json_by_default_and_plain_text_on_request(aws: Aws) -> None:  # noqa: F811 - the fixture
    for i in range(3):
        deliver(crash(i, T0 + timedelta(minutes=i)), aws.runtime(ALERT_ONLY_CLUSTERS="dev"))
    [published] = aws.alerts()
    body = json.loads(published["Message"])
    assert body["version"] == "1.0" and body["source"] == "custom"
    assert body["content"]["title"] == "alert only: dev/api" and "ALERT ONLY: dev/api" in body["content"]["description"]
    assert published["Subject"] == "ecs-guardrail alert only: dev/api"
    rt = aws.runtime(ALERT_ONLY_CLUSTERS="dev", SNS_FORMAT="text")
    for i in range(3):
        deliver(crash(10 + i, T0 + timedelta(hours=2, minutes=i), service="web"), rt)
    [text] = aws.alerts()
    assert text["Message"].startswith("ALERT ONLY: dev/web") and "decision (JSON): " in text["Message"]


def test_slack_receives_link_buttons(slack_server: str, aws: Aws) -> None:  # noqa: F811
    rt = aws.runtime(ALERT_ONLY_CLUSTERS="dev")
    rt.previews = []
    for i in range(3):
        deliver(crash(i, T0 + timedelta(minutes=i)), rt)
    alert_payload = next(p for p in rt.previews if p["channel"] == "slack")
    _Hook.received.clear()
    from ecs_guardrail.core.alert import Alert
    assert SlackWebhook(slack_server).send(Alert(subject="s", text=alert_payload["text"],
                                                 blocks=alert_payload["blocks"])).ok
    [got] = _Hook.received
    buttons = [e for b in got["blocks"] if b["type"] == "actions" for e in b["elements"]]
    assert {b["text"]["text"] for b in buttons} >= {"Service", "Stopped tasks"} and all("url" in b for b in buttons)


# ---------------------------------------------------------------- recovery
def test_recovery_on_steady_state_is_sent_once_even_by_two_invocations(aws: Aws) -> None:  # noqa: F811 - the fixture
    rt = aws.runtime(ALERT_ONLY_CLUSTERS="dev")
    rt.previews = []
    for i in range(3):
        deliver(crash(i, T0 + timedelta(minutes=i)), rt)
    assert kinds(rt) == ["alert_only"]
    # two cold execution environments get the same SERVICE_STEADY_STATE (a redelivery): one recovery
    a, b = aws.runtime(ALERT_ONLY_CLUSTERS="dev"), aws.runtime(ALERT_ONLY_CLUSTERS="dev")
    a.previews, b.previews = [], []
    deliver(steady(T0 + timedelta(minutes=20)), a)
    deliver(steady(T0 + timedelta(minutes=20)), b)
    assert kinds(a) + kinds(b) == ["recovery"]
    [rec] = [p for p in a.previews + b.previews if p["channel"] == "sns"]
    msg = json.loads(rec["message"])
    assert rec["subject"] == "ecs-guardrail recovered: dev/api after 18 min"
    assert "SERVICE_STEADY_STATE" in msg["content"]["description"] and rec["time"] == "2025-08-21T10:20:00Z"
    deliver(steady(T0 + timedelta(hours=6), n=2), a)
    assert kinds(a) == ["recovery"]  # never twice


def test_recovery_after_a_quiet_window_says_so(aws: Aws) -> None:  # noqa: F811 - the fixture
    rt = aws.runtime(ALERT_ONLY_CLUSTERS="dev")
    rt.previews = []
    for i in range(3):
        deliver(crash(i, T0 + timedelta(minutes=i)), rt)
    deliver(crash(9, T0 + timedelta(minutes=2) + W + timedelta(minutes=5)), rt)  # after a full quiet window
    assert kinds(rt) == ["alert_only", "recovery"]
    rec = [p for p in rt.previews if p["channel"] == "slack"][1]
    assert "a full window passed with no failure" in rec["text"] and "after 30 min" in rec["text"]


def test_scale_down_recovers_only_when_restored_and_once(aws: Aws) -> None:  # noqa: F811 - the fixture
    rt = aws.runtime(ALERT_ONLY_CLUSTERS="production")
    rt.previews = []
    for i in range(3):
        deliver(crash(i, T0 + timedelta(minutes=i)), rt)
    assert kinds(rt) == ["scale_down"] and aws.desired("api") == 0
    deliver(steady(T0 + timedelta(minutes=10)), rt)  # steady at 0 tasks: not a recovery
    assert kinds(rt) == ["scale_down"]
    store = HistoryStore.on(DynamoTable(boto3.client("dynamodb", region_name=REGION), TABLE))
    restore(store, EcsService(boto3.client("ecs", region_name=REGION)), "dev", "api",
            now=T0 + timedelta(minutes=47))
    assert aws.desired("api") == 2
    deliver(steady(T0 + timedelta(minutes=50), n=2), rt)
    deliver(steady(T0 + timedelta(minutes=55), n=3), rt)
    assert kinds(rt) == ["scale_down", "recovery"]
    rec = [p for p in rt.previews if p["channel"] == "slack"][1]
    assert "the service was restored" in rec["text"] and "after 45 min" in rec["text"]


# ---------------------------------------------------------------- job failures
_spec = importlib.util.spec_from_file_location("tour", ROOT / "scripts" / "make_scenario_alerts_tour.py")
assert _spec is not None and _spec.loader is not None
tour = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tour)


def test_a_job_failing_every_5_minutes_for_24_hours_sends_83_alerts_not_288(tmp_path: Path) -> None:
    """288 failed runs a day; default window 30 min: a window opens at the first failure (its alert) and
    counts the next six (up to and including +30 min); the sweep closes it on time (+30 min 30 s: its
    summary, issue 31: the replay runs the sweep as production does), and the run at +35 min opens the
    next one: two messages per 35 min, ceil(1440 / 35) = 42 windows, the last one's summary past the day:
    83 a day, never one per task."""
    start = T0.replace(hour=0, minute=0)
    events = tour.job_every(start, timedelta(minutes=5), 288)
    tour.write(tmp_path / "day", events, ["web"], "ALERT_ONLY_CLUSTERS=production\n",
               {"scaled_to_zero": [], "desired_counts": {}})
    result = replay(load_scenario(tmp_path / "day"))
    assert len(result.job_failures) == 288
    sns = [a for a in result.alerts if a["channel"] == "sns"]
    assert result.summary["alerts_sent"] == len(sns) == 83
    assert [a["kind"] for a in sns] == ["job_failure", "job_summary"] * 41 + ["job_failure"]
    first_summary = json.loads(sns[1]["message"])
    assert "failed 7 times in 30 min, last exit 1" in first_summary["content"]["title"]
    assert sns[1]["time"] == "2025-08-21T00:30:30Z"  # the event clock, not the wall clock
    assert result.decisions == []  # a job is never acted on


def test_two_concurrent_job_failures_open_one_window(aws: Aws) -> None:  # noqa: F811 - the fixture
    """Invocation A reads the family item before B writes it; A's conditional write then fails and A
    files its run into B's window: one alert between them."""
    rt_a, rt_b = aws.runtime(), aws.runtime()
    rt_a.previews, rt_b.previews = [], []
    table_a = rt_a.history.state.table
    real_get = table_a.get
    raced = {"done": False}

    def get_then_race(pk: str, sk: str) -> Any:
        item = real_get(pk, sk)
        if sk.startswith("J#") and not raced["done"]:
            raced["done"] = True
            deliver(job(2, T0 + timedelta(seconds=5)), rt_b)  # B wins the race
        return item

    table_a.get = get_then_race  # type: ignore[method-assign]
    deliver(job(1, T0), rt_a)
    assert raced["done"] and kinds(rt_a) + kinds(rt_b) == ["job_failure"]
    item = real_get("JOB#dev", "J#nightly")
    assert json.loads(item["doc"])["n"] == 2


def job(n: int, t) -> dict[str, Any]:
    e = crash(100 + n, t)
    e["detail"]["group"] = "family:nightly"
    return e


OK_RUN = {"code": "EssentialContainerExited", "reason": "Essential container in task exited", "exit": 0}


def _job_day(tmp_path: Path, failures: int, ok_after: list[timedelta]) -> Any:
    """``failures`` failed runs 5 min apart from T0 00:00, then clean runs at the offsets given."""
    start = T0.replace(hour=0, minute=0)
    events = tour.job_every(start, timedelta(minutes=5), failures)
    events += [tour.base.task_event(5000 + i, start + dt, "family:nightly-report", "STOPPED", 5, OK_RUN)
               for i, dt in enumerate(ok_after)]
    tour.write(tmp_path / "day", events, ["web"], "ALERT_ONLY_CLUSTERS=production\n",
               {"scaled_to_zero": [], "desired_counts": {}})
    result = replay(load_scenario(tmp_path / "day"))
    return [a for a in result.alerts if a["channel"] == "sns"]


def test_a_job_that_stops_failing_still_gets_its_last_window_summary(tmp_path: Path) -> None:
    """3 failures (00:00:30, 00:05:30, 00:10:30), a clean run inside the window (nothing yet); the window
    closes at 00:30:30 and the sweep sends its one summary then, as production's does (issue 31: the
    replay runs the sweep whatever RECOVERY says), with no further run needed; the clean runs after it
    send nothing."""
    sns = _job_day(tmp_path, 3, [timedelta(minutes=20), timedelta(minutes=40), timedelta(minutes=60)])
    assert [a["kind"] for a in sns] == ["job_failure", "job_summary"]
    summary = json.loads(sns[1]["message"])
    assert "failed 3 times in 30 min, last exit 1" in summary["content"]["title"]
    assert "No failure since: the window closed at 00:30:30Z" in summary["content"]["description"]


def test_a_single_failure_then_clean_runs_sends_only_its_alert(tmp_path: Path) -> None:
    sns = _job_day(tmp_path, 1, [timedelta(minutes=40), timedelta(minutes=80)])
    assert [a["kind"] for a in sns] == ["job_failure"]


def test_after_a_clean_close_the_next_failure_opens_a_new_window(tmp_path: Path) -> None:
    start = T0.replace(hour=0, minute=0)
    events = tour.job_every(start, timedelta(minutes=5), 2)
    events.append(tour.base.task_event(5000, start + timedelta(minutes=45), "family:nightly-report", "STOPPED", 5,
                                       OK_RUN))
    events += tour.job_every(start + timedelta(minutes=60), timedelta(minutes=5), 1, first_task=2000)
    tour.write(tmp_path / "day", events, ["web"], "ALERT_ONLY_CLUSTERS=production\n",
               {"scaled_to_zero": [], "desired_counts": {}})
    sns = [a for a in replay(load_scenario(tmp_path / "day")).alerts if a["channel"] == "sns"]
    assert [a["kind"] for a in sns] == ["job_failure", "job_summary", "job_failure"]
    assert "failed 2 times" in json.loads(sns[1]["message"])["content"]["title"]


def test_a_failure_delivered_after_the_clean_run_that_summarised_its_window_sends_nothing(aws: Aws) -> None:  # noqa: F811 - the fixture
    """Delivered F 10:00, F 10:10, clean 10:45, F 10:20 (late): the late failure is inside the window the
    clean run summarised; it must not open a second window (a second alert for 10:00-10:30)."""
    rt = aws.runtime()
    rt.previews = []
    clean = job(50, T0 + timedelta(minutes=45))
    for c in clean["detail"]["containers"]:
        c["exitCode"] = 0
    for e in (job(1, T0), job(2, T0 + timedelta(minutes=10)), clean, job(3, T0 + timedelta(minutes=20))):
        deliver(e, rt)
    assert kinds(rt) == ["job_failure", "job_summary"]


def test_a_job_run_with_a_custom_group_is_alerted_by_its_task_definition_family(tmp_path: Path) -> None:
    """RunTask --group nightly-reports: not family:..., yet a standalone job; its failures are windowed
    under the task definition's family (they were ignored: "group is not a service")."""
    start = T0.replace(hour=0, minute=0)
    events = tour.job_every(start, timedelta(minutes=5), 3)
    for e in events:
        e["detail"]["group"] = "nightly-reports"
    family = events[0]["detail"]["taskDefinitionArn"].rsplit("/", 1)[-1].rpartition(":")[0]
    tour.write(tmp_path / "day", events, ["web"], "ALERT_ONLY_CLUSTERS=production\n",
               {"scaled_to_zero": [], "desired_counts": {}})
    result = replay(load_scenario(tmp_path / "day"))
    assert [j["family"] for j in result.job_failures] == [family] * 3
    # its alert, then the window's summary when the sweep closes it (issue 31: the replay runs the sweep)
    assert [a["kind"] for a in result.alerts if a["channel"] == "sns"] == ["job_failure", "job_summary"]
    assert result.decisions == []
