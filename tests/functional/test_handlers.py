"""Recorder, watchdog and restore on moto; Slack against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import copy
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ecs_guardrail.adapters.alerts import SlackWebhook
from ecs_guardrail.adapters.ecs import PREVIOUS_COUNT_TAG, EcsService
from ecs_guardrail.adapters.history import HistoryStore
from ecs_guardrail.app.restore import restore
from ecs_guardrail.core.alert import Alert
from ecs_guardrail.core.errors import RestoreError, SettingsError
from ecs_guardrail.handlers import record, watchdog
from ecs_guardrail.handlers.runtime import LambdaContextStub
from ecs_guardrail.settings import load_settings
from tests.conftest import dev_account, load_event

REGION = "eu-west-1"
CLUSTER_ARN = "arn:aws:ecs:eu-west-1:123456789012:cluster/dev"
CTX = LambdaContextStub()


@pytest.fixture
def aws(monkeypatch):
    with dev_account(monkeypatch, REGION) as aws:
        yield aws


def crash(n: int, minute: int, service: str = "api", status: str = "STOPPED", version: int = 5) -> dict:
    e = copy.deepcopy(load_event("task-fargate-stopped-essential-oom-exit137.derived"))
    task = f"arn:aws:ecs:eu-west-1:123456789012:task/dev/{n:032x}"
    e["id"] = f"00000000-0000-0000-0000-{n:08d}{version:04d}"
    e["time"] = f"2025-08-21T10:{minute:02d}:00Z"
    e["region"] = REGION
    d = e["detail"]
    d.update(clusterArn=CLUSTER_ARN, taskArn=task, group=f"service:{service}", lastStatus=status, version=version)
    for c in d["containers"]:
        c["taskArn"] = task
    return e


def desired(aws, service="api") -> int:
    return aws["ecs"].describe_services(cluster="dev", services=[service])["services"][0]["desiredCount"]


def test_recorder_is_idempotent_and_keeps_versions(aws):
    e = crash(1, 0)
    assert record.handler(e, CTX)["status"] == "recorded"
    assert record.handler(e, CTX)["status"] == "duplicate"
    older = crash(1, 0, status="RUNNING", version=3)
    assert record.handler(older, CTX)["status"] == "recorded"  # late older version: kept as history...
    store = HistoryStore(aws["ddb"], "history")
    state = store.task_state(e["detail"]["taskArn"])
    assert state["version"] == 5 and state["last_status"] == "STOPPED"  # ...never the current state
    assert state["kind"] == "crash" and state["cause"] == "OutOfMemoryError"
    assert [v["version"] for v in store.task_history(e["detail"]["taskArn"])] == [3, 5]


def test_recorder_keeps_rejected_events_with_reason(aws):
    bad = {"source": "aws.ecs", "detail-type": "ECS Task State Change", "detail": {"taskArn": 7}}
    out = record.handler(bad, CTX)
    assert out["status"] == "rejected"
    from datetime import UTC, datetime

    kept = HistoryStore(aws["ddb"], "history").rejected(datetime.now(UTC))
    assert len(kept) == 1 and "version: field required" in kept[0]["reason"] and '"taskArn": 7' in kept[0]["raw"]


def test_watchdog_scales_once_and_restore_undoes_it(aws):
    for i in range(4):
        assert watchdog.handler(crash(i, i), CTX)["decisions"] == []
    out = watchdog.handler(crash(4, 4), CTX)
    [d] = out["decisions"]
    assert (d["action"], d["reason"], d["previous_desired_count"]) == ("scale_to_zero", "crash_loop", 3)
    assert desired(aws) == 0
    tags = aws["ecs"].list_tags_for_resource(
        resourceArn="arn:aws:ecs:eu-west-1:123456789012:service/dev/api")["tags"]
    assert {"key": PREVIOUS_COUNT_TAG, "value": "3"} in tags
    # further crashes and redeliveries in the same episode decide nothing
    assert watchdog.handler(crash(5, 6), CTX)["decisions"] == []
    again = watchdog.handler(crash(4, 4), CTX)  # a redelivery inside the episode: nothing new
    assert again["status"] in ("duplicate", "in_episode") and again["decisions"] == []
    assert desired(aws) == 0
    store, ecs = HistoryStore(aws["ddb"], "history"), EcsService(aws["ecs"])
    assert restore(store, ecs, "dev", "api").changed
    assert desired(aws) == 3
    again = restore(store, ecs, "dev", "api")
    assert not again.changed and "nothing changed" in again.message


def test_deprovisioning_and_stopped_events_of_one_task_count_once(aws):
    for i in range(3):
        watchdog.handler(crash(i, i, status="DEPROVISIONING", version=4), CTX)
        watchdog.handler(crash(i, i, status="STOPPED", version=5), CTX)
    assert desired(aws) == 3


def test_spot_verdict_wins_over_a_later_stopped_event(aws):
    for i in range(5):
        notice = crash(i, i, status="RUNNING", version=3)
        notice["detail"].update(stopCode="SpotInterruption", stoppedReason="Your Spot Task was interrupted.")
        assert watchdog.handler(notice, CTX)["status"] == "spot"
        out = watchdog.handler(crash(i, i), CTX)  # the notice's verdict stands: never counted as a crash
        assert out["status"] in ("ignored", "duplicate") and out["decisions"] == []
    assert desired(aws) == 3
    summary = HistoryStore(aws["ddb"], "history").state.load("dev", "api", fresh=True)
    assert summary.crashes == () and len(summary.spot) == 5


def test_restore_without_a_record_refuses(aws):
    with pytest.raises(RestoreError):
        restore(HistoryStore(aws["ddb"], "history"), EcsService(aws["ecs"]), "dev", "web")


def test_invalid_setting_fails_at_start_and_decides_nothing(aws, monkeypatch):
    monkeypatch.setenv("CRASH_THRESHOLD", "zero")
    with pytest.raises(SettingsError, match="CRASH_THRESHOLD"):
        watchdog.handler(crash(1, 1), CTX)


# ---------------------------------------------------------------- Slack on 127.0.0.1
class _Hook(BaseHTTPRequestHandler):
    answers: list[tuple[int, dict]] = []
    received: list[dict] = []

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).received.append(body)
        status, headers = type(self).answers.pop(0) if type(self).answers else (200, {})
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(b"ok" if status == 200 else b"error")

    def log_message(self, *args):
        pass


@pytest.fixture
def slack_server():
    _Hook.answers, _Hook.received = [], []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/services/T/B/X"
    server.shutdown()
    server.server_close()


ALERT = Alert(subject="s", text="scaled dev/api", blocks=[{"type": "section", "text": {"type": "mrkdwn", "text": "x"}}])


def test_slack_block_kit_message_delivered(slack_server):
    assert SlackWebhook(slack_server).send(ALERT).ok
    assert _Hook.received[0]["text"] == "scaled dev/api" and _Hook.received[0]["blocks"][0]["type"] == "section"


def test_slack_retries_500_and_429_with_retry_after(slack_server):
    _Hook.answers = [(500, {}), (429, {"Retry-After": "1"})]
    result = SlackWebhook(slack_server, backoff_factor_s=0.01).send(ALERT)
    assert result.ok and len(_Hook.received) == 3


def test_slack_failure_is_reported_not_raised(slack_server):
    _Hook.answers = [(500, {})] * 3
    result = SlackWebhook(slack_server, backoff_factor_s=0.01).send(ALERT)
    assert not result.ok and "HTTP 500" in result.error


def test_settings_from_environment_mapping():
    s = load_settings({"ALERT_ONLY_CLUSTERS": "production, prod-*", "DRY_RUN": "true"})
    assert s.ALERT_ONLY_CLUSTERS == ("production", "prod-*") and s.DRY_RUN
    assert load_settings({}).ALERT_ONLY_CLUSTERS == ()


# ---------------------------------------------------------------- cross-account mode
HOME_CTX = LambdaContextStub(invoked_function_arn="arn:aws:lambda:eu-west-1:123456789012:function:watchdog")


def foreign(event: dict, account: str = "222233334444") -> dict:
    return json.loads(json.dumps(event).replace(":123456789012:", f":{account}:"))


def test_another_accounts_cluster_of_the_same_name_never_counts_here(aws):
    # 2 local crashes and 3 in a member account's "dev": no loop anywhere
    for i in range(2):
        watchdog.handler(crash(i, i), HOME_CTX)
    outs = [watchdog.handler(foreign(crash(10 + i, 2 + i)), HOME_CTX) for i in range(3)]
    assert all(o["decisions"] == [] for o in outs)
    assert desired(aws) == 3


def test_another_accounts_crash_loop_is_alert_only_and_says_where(aws):
    outs = [watchdog.handler(foreign(crash(20 + i, i)), HOME_CTX) for i in range(5)]
    [d] = outs[-1]["decisions"]
    assert (d["action"], d["reason"]) == ("alert_only", "alert_only_cluster")
    assert "account 222233334444, region eu-west-1" in d["message"]
    assert desired(aws) == 3  # the local dev/api of the same name is untouched
