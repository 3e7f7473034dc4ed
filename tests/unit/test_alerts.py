"""Alert composition (core/alert.py, core/links.py) without AWS: where, links, the channels' limits."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from ecs_guardrail.core import links as L
from ecs_guardrail.core.alert import (
    CHATBOT_LIMITS,
    SLACK_LIMITS,
    LogStream,
    Where,
    alert_links,
    chatbot_message,
    decision_alert,
    job_summary_alert,
    mass_alert,
    recovery_alert,
    slack_payload,
)
from ecs_guardrail.core.classify import StopKind
from ecs_guardrail.core.records import Action, Decision, Failure, Reason

T0 = datetime(2025, 9, 2, 3, 0, tzinfo=UTC)
HERE = Where(cluster="production", service="billing", account="111122223333", region="eu-west-1")


def failure(n: int, service: str = "billing", reason: str = "OutOfMemoryError: Container killed") -> Failure:
    return Failure(service, T0 + timedelta(minutes=n), StopKind.CRASH,
                   task_arn=f"arn:aws:ecs:eu-west-1:1:task/p/{n:032x}",
                   stop_code="EssentialContainerExited", reason=reason, exit_codes=(("app", 137),))


def decision(action: Action = Action.SCALE_TO_ZERO, reason: Reason = Reason.CRASH_LOOP, **kw) -> Decision:
    base = dict(cluster="production", service="billing", time=T0, action=action, reason=reason,
                crashes_in_window=5, health_check_kills_in_window=0, message="crash loop: 5 crashes in 30 min",
                failing_services=1, services_in_cluster=10, bound=2,
                last_failures=tuple(failure(i) for i in range(5)))
    return Decision(**{**base, **kw})


# ---------------------------------------------------------------- links
@pytest.mark.parametrize("region,arn,host", [
    ("eu-west-1", None, "https://eu-west-1.console.aws.amazon.com"),
    ("us-gov-west-1", None, "https://console.amazonaws-us-gov.com"),
    ("cn-north-1", None, "https://console.amazonaws.cn"),
    ("cn-northwest-1", "arn:aws-cn:ecs:cn-northwest-1:1:cluster/x", "https://console.amazonaws.cn"),
    ("us-gov-east-1", "arn:aws-us-gov:ecs:us-gov-east-1:1:cluster/x", "https://console.amazonaws-us-gov.com"),
])
def test_console_host_follows_the_partition(region, arn, host):
    assert L.console_host(region, L.partition_of(region, arn)) == host


def test_service_stopped_tasks_and_log_stream_urls():
    assert L.service_url("eu-west-1", "production", "billing") == (
        "https://eu-west-1.console.aws.amazon.com/ecs/v2/clusters/production/services/billing/health?region=eu-west-1")
    assert L.stopped_tasks_url("eu-west-1", "production", "billing").endswith(
        "/ecs/v2/clusters/production/services/billing/tasks?region=eu-west-1")
    stream = L.log_stream_name("ecs", "app", "0123abcd")
    assert stream == "ecs/app/0123abcd"
    # the console's own encoding: "/" -> %2F -> %252F -> $252F
    assert L.log_stream_url("eu-west-1", "/ecs/billing", stream) == (
        "https://eu-west-1.console.aws.amazon.com/cloudwatch/home?region=eu-west-1#logsV2:log-groups/log-group/"
        "$252Fecs$252Fbilling/log-events/ecs$252Fapp$252F0123abcd")
    assert L.runbook_url("https://wiki/x/{cluster}/{service}?v={v}", "prod", "a b") == "https://wiki/x/prod/a%20b?v=%7Bv%7D"
    assert L.runbook_url("https://wiki/{cluster}}{", "a{b}", "s") == "https://wiki/a%7Bb%7D%7D%7B"


def test_every_alert_says_where_and_links_service_stopped_tasks_logs_and_runbook():
    logs = (LogStream("00aa", "app", "/ecs/billing", "ecs/app/00aa", "eu-west-1"),)
    links = alert_links(HERE, logs=logs, runbook="https://wiki.example.com/{cluster}/{service}")
    assert [link.label for link in links] == ["Service", "Stopped tasks", "Logs app 00aa", "Runbook"]
    alert = decision_alert(decision(), where=HERE, links=links, previous_desired_count=3)
    assert "account 111122223333 · region eu-west-1 · cluster production · service billing" in alert.text
    assert alert.data["account"] == "111122223333" and alert.data["region"] == "eu-west-1"
    [actions] = [b for b in alert.blocks if b["type"] == "actions"]
    assert [e["url"] for e in actions["elements"]] == [link.url for link in links]
    assert all(e["type"] == "button" for e in actions["elements"])
    assert links[-1].url == "https://wiki.example.com/production/billing"
    # a GovCloud cluster links to the GovCloud console
    gov = Where("production", "billing", "1", "us-gov-west-1", "aws-us-gov")
    assert alert_links(gov)[0].url.startswith("https://console.amazonaws-us-gov.com/ecs/v2/")


def test_recovery_alert_says_how_long_and_what_ended_it():
    a = recovery_alert(HERE, action=Action.ALERT_ONLY, reason="opted_out", decision_time=T0, ended_by="steady_state",
                       ended_at=T0 + timedelta(minutes=42))
    assert a.kind == "recovery" and a.subject == "ecs-guardrail recovered: production/billing after 42 min"
    assert "SERVICE_STEADY_STATE" in a.text and a.data["duration_minutes"] == 42


def test_job_summary_says_failed_n_times_in_m_min_last_exit():
    a = job_summary_alert("dev", "nightly", failures=12, window_minutes=60, window_start=T0, last_exit="1",
                          last_time=T0 + timedelta(minutes=55))
    assert "failed 12 times in 60 min, last exit 1" in a.title and a.kind == "job_summary"


# ---------------------------------------------------------------- Slack Block Kit limits
def _check_block_kit(blocks: list[dict]) -> None:
    lim = SLACK_LIMITS
    assert len(blocks) <= lim["blocks"]
    for b in blocks:
        if b["type"] == "header":
            assert b["text"]["type"] == "plain_text" and len(b["text"]["text"]) <= lim["header_text"]
        elif b["type"] == "section":
            assert "text" in b or "fields" in b
            if "text" in b:
                assert len(b["text"]["text"]) <= lim["section_text"]
            assert len(b.get("fields", [])) <= lim["fields"]
            assert all(len(f["text"]) <= lim["field_text"] for f in b.get("fields", []))
        elif b["type"] == "actions":
            assert 1 <= len(b["elements"]) <= lim["actions_elements"]
            ids = [e["action_id"] for e in b["elements"]]
            assert len(set(ids)) == len(ids)
            for e in b["elements"]:
                assert len(e["text"]["text"]) <= lim["button_text"] and len(e["url"]) <= lim["button_url"]
        elif b["type"] == "context":
            assert 1 <= len(b["elements"]) <= lim["context_elements"]
        else:
            pytest.fail(f"unexpected block {b['type']}")


def test_largest_alert_a_mass_hold_of_200_services_fits_block_kit():
    """The largest alert the watchdog produces: a mass hold naming 200 failing services with long
    names, 5 last stops with long reasons, every link (a long runbook URL and log streams)."""
    names = [f"service-with-a-rather-long-name-number-{i:03d}" for i in range(200)]
    long_reason = "CannotPullContainerError: " + "x" * 400
    d = decision(action=Action.HOLD, reason=Reason.MASS_UNHEALTHY, failing_services=200, services_in_cluster=220,
                 bound=44, failing=tuple(names), last_failures=tuple(failure(i, reason=long_reason) for i in range(5)),
                 evidence={"k" * 50: "v" * 3000})
    where = Where("production-" + "c" * 200, None, "111122223333", "eu-west-1")
    logs = tuple(LogStream(f"{i:032x}", "app" * 20, "/ecs/" + "g" * 400, "p/app/" + "s" * 300, "eu-west-1")
                 for i in range(5))
    links = alert_links(where, logs=logs, runbook="https://wiki.example.com/" + "r" * 2990 + "/{cluster}")
    for alert in (mass_alert(d, names, where=where, links=links),
                  decision_alert(d, where=Where(where.cluster, "s" * 255, "1", "eu-west-1"), links=links,
                                 extra={f"extra {i}": "e" * 2500 for i in range(12)})):
        _check_block_kit(alert.blocks)
        assert len(slack_payload(alert)["text"]) <= SLACK_LIMITS["section_text"]
        assert len(alert.subject) <= 100
        json.dumps(slack_payload(alert))
    held = mass_alert(d, names, where=where, links=links)
    assert "and " in held.text and "more" in held.text  # the listing says how many it left out
    # a runbook URL past 3,000 characters gets no button (a cut URL is a wrong one)
    [actions] = [b for b in held.blocks if b["type"] == "actions"]
    assert "Runbook" not in [e["text"]["text"] for e in actions["elements"]]


# ---------------------------------------------------------------- AWS Chatbot custom notifications
def _check_chatbot(msg: dict) -> None:
    """The documented fields ("Custom notifications using Amazon Q Developer in chat applications")
    and the limits :data:`CHATBOT_LIMITS` states."""
    lim = CHATBOT_LIMITS
    assert set(msg) <= {"version", "source", "id", "content", "metadata"}
    assert msg["version"] == "1.0" and msg["source"] == "custom"
    content = msg["content"]
    assert set(content) <= {"textType", "title", "description", "nextSteps", "keywords"}
    assert content.get("textType", "client-markdown") == "client-markdown"
    assert isinstance(content["title"], str) and 0 < len(content["title"]) <= lim["title"]
    assert isinstance(content["description"], str) and len(content["description"]) <= lim["description"]
    for key, n, each in (("nextSteps", "next_steps", "next_step"), ("keywords", "keywords", "keyword")):
        items = content.get(key, [])
        assert isinstance(items, list) and len(items) <= lim[n]
        assert all(isinstance(x, str) and 0 < len(x) <= lim[each] for x in items)
    meta = msg.get("metadata", {})
    assert set(meta) <= {"threadId", "summary", "eventType", "relatedResources", "additionalContext"}
    assert all(isinstance(x, str) for x in meta.get("relatedResources", []))
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in meta.get("additionalContext", {}).items())
    assert len(json.dumps(msg).encode()) <= 262_144


def test_chatbot_message_has_the_documented_fields_and_keeps_the_text_as_description():
    links = alert_links(HERE, runbook="https://wiki.example.com/{cluster}/{service}")
    alert = decision_alert(decision(), where=HERE, links=links, undo="ecs-guardrail restore --cluster production "
                           "--service billing --table t")
    msg = chatbot_message(alert)
    _check_chatbot(msg)
    assert msg["content"]["description"] == alert.text
    assert msg["content"]["nextSteps"][0].startswith("Undo: ecs-guardrail restore")
    assert any(step.startswith("Service: https://eu-west-1.console.aws.amazon.com/") for step in
               msg["content"]["nextSteps"])
    assert {"scale_to_zero", "crash_loop", "production", "111122223333", "eu-west-1"} <= set(msg["content"]["keywords"])
    assert msg["metadata"]["threadId"] == "production/billing"


def test_chatbot_message_of_the_largest_alert_stays_within_the_limits():
    names = [f"svc-{i:03d}-" + "n" * 200 for i in range(200)]
    d = decision(action=Action.HOLD, reason=Reason.MASS_UNHEALTHY, failing=tuple(names),
                 last_failures=tuple(failure(i, reason="r" * 3000) for i in range(5)))
    where = Where("production", None, "111122223333", "eu-west-1")
    logs = tuple(LogStream(f"{i:032x}", "app", "/ecs/" + "g" * 600, "p/app/x", "eu-west-1") for i in range(12))
    alert = mass_alert(d, names, where=where, links=alert_links(where, logs=logs))
    _check_chatbot(chatbot_message(alert))


# ---------------------------------------------------------------- event text in Slack mrkdwn (break-it pass 2)
def _mrkdwn_texts(blocks: list[dict]) -> list[str]:
    out = []
    for b in blocks:
        for t in [b.get("text") or {}, *(b.get("fields") or []), *(b.get("elements") or [])]:
            if isinstance(t, dict) and t.get("type") == "mrkdwn":
                out.append(t["text"])
    return out


def test_event_text_cannot_ping_the_channel_or_hide_a_link_in_slack():
    """A stopped reason is text from the task (an image name, an error message): Slack reads ``<!channel>``,
    ``<!here>`` and ``<URL|label>`` in mrkdwn (and in the fallback ``text``) as a mention and a disguised
    link, and ``` in the reason closed the "Last stops" code block so what followed was live. Slack's rule:
    escape ``&``, ``<`` and ``>`` in text that is not ours."""
    evil = "boom ``` <!channel> <https://evil.example|open the runbook> & <@U123> > x"
    d = decision(message=f"crash loop ({evil})",
                 last_failures=tuple(failure(i, reason=evil) for i in range(5)),
                 evidence={"reason": evil})
    for alert in (decision_alert(d, where=HERE), mass_alert(d, ["billing"], where=HERE)):
        payload = slack_payload(alert)
        for text in [payload["text"], *_mrkdwn_texts(payload["blocks"])]:
            assert "<!" not in text and "<http" not in text and "<@" not in text, text
            assert "&lt;!channel&gt;" in text or "boom" not in text
        stops = next(t for t in _mrkdwn_texts(payload["blocks"]) if t.startswith("*Last stops*"))
        assert stops.count("```") == 2, stops  # the code block opens and closes once
    assert evil in decision_alert(d, where=HERE).text  # SNS text keeps the reason as it was


def test_each_stop_line_carries_its_cause_where_the_reason_does_not():
    from ecs_guardrail.core.structs import replace

    oom = Failure("billing", T0, StopKind.CRASH, stop_code="EssentialContainerExited",
                  reason="Essential container in task exited", cause="OutOfMemoryError", exit_codes=(("app", 137),))
    said = replace(failure(1), cause="OutOfMemoryError")  # its reason names the cause already: not twice
    alert = decision_alert(decision(last_failures=(oom, oom, said)), previous_desired_count=2, where=HERE)
    lines = [ln for ln in alert.text.splitlines() if "EssentialContainerExited" in ln]
    assert len(lines) == 3
    assert all("Essential container in task exited (OutOfMemoryError) [app=137]" in ln for ln in lines[:2])
    assert lines[2].count("OutOfMemoryError") == 1


def test_a_stop_reason_cut_to_fit_its_line_says_it_was_cut():
    """A long reason (a job's "essential unknown ... grant the watchdog ..." verdict is 200 characters)
    is cut to 160; the cut is marked, never a word ending mid-way as if it were the whole reason."""
    long = "failed: essential unknown (task definition not readable: grant the watchdog ecs:DescribeTaskDefinition " \
           "on it, or it was deleted); exit codes app=1; Essential container in task exited"
    alert = decision_alert(decision(last_failures=(failure(1, reason=long), failure(2))), where=HERE)
    cut, whole = [ln for ln in alert.text.splitlines() if "EssentialContainerExited" in ln]
    assert long[:159] + "… [app=137]" in cut
    assert "OutOfMemoryError: Container killed [app=137]" in whole


def test_a_job_whose_task_definition_cannot_be_read_says_the_fix():
    from ecs_guardrail.core.classify import job_failed

    failed, text = job_failed((("app", 1),), None)
    assert failed and "grant the watchdog ecs:DescribeTaskDefinition" in text
