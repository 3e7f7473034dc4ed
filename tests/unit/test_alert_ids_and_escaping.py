"""Issue 17 items 6 and 10: every alert carries the id of its decision (Slack blocks and text, SNS
Chatbot JSON and text), the same on a repeat and different for each alert; SNS/Chatbot text is escaped
as Slack's text is, so a stop reason cannot ping a channel or hide a link."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from ecs_guardrail.adapters.alerts import SnsTopic
from ecs_guardrail.core.alert import (
    Alert,
    decision_alert,
    decision_id,
    job_failure_alert,
    job_summary_alert,
    mass_alert,
    recovery_alert,
    slack_payload,
)
from ecs_guardrail.core.records import Action, Reason
from tests.unit.test_alerts import HERE, T0, decision, failure

ID = "111122223333/eu-west-1/production/billing/2025-09-02T03:00:00Z"
HOSTILE = ("OutOfMemoryError <!channel> <!here> <@U024BE7LH> <#C024BE7LH> <!subteam^S012> "
           "<https://evil.example/x|click me> a&b")


def _sns(alert: Alert, fmt: str) -> str:
    return SnsTopic(None, "arn:aws:sns:eu-west-1:111122223333:t", fmt).render(alert)[1]


def _every_rendering(alert: Alert) -> dict[str, str]:
    slack = slack_payload(alert)
    return {
        "slack_text": slack["text"],
        "slack_blocks": json.dumps(slack["blocks"]),
        "sns_chatbot": _sns(alert, "chatbot"),
        "sns_text": _sns(alert, "text"),
    }


def _alerts() -> list[Alert]:
    d = decision()
    return [
        decision_alert(d, where=HERE),
        decision_alert(decision(Action.ALERT_ONLY, Reason.ALERT_ONLY_CLUSTER), where=HERE),
        mass_alert(decision(Action.HOLD, Reason.MASS_UNHEALTHY), ["billing", "orders"], where=HERE),
        recovery_alert(HERE, action=Action.SCALE_TO_ZERO, reason="crash_loop", decision_time=T0,
                       ended_by="restored", ended_at=T0 + timedelta(minutes=42)),
    ]


def test_the_decision_id_is_what_the_record_keys_on():
    assert decision_id("production", "billing", T0, HERE) == ID
    assert decision_id("production", "billing", T0) == "production/billing/2025-09-02T03:00:00Z"


@pytest.mark.parametrize("n", range(4))
def test_every_decision_alert_carries_its_decision_id_on_every_channel(n):
    alert = _alerts()[n]
    assert alert.decision_id == ID and alert.alert_id == f"{alert.kind}:{ID}"
    for channel, body in _every_rendering(alert).items():
        assert ID in body, channel
    chatbot = json.loads(_sns(alert, "chatbot"))
    assert chatbot["id"] == alert.alert_id
    assert chatbot["metadata"]["additionalContext"]["decision_id"] == ID
    text_facts = json.loads(_sns(alert, "text").split("decision (JSON): ", 1)[1])
    assert text_facts["decision_id"] == ID and text_facts["alert_id"] == alert.alert_id


def test_a_repeat_has_the_same_id_and_each_alert_its_own():
    again = [a.alert_id for a in _alerts()]
    assert again == [a.alert_id for a in _alerts()]  # composed again (a retry): the same ids
    assert len(set(again)) == len(again)  # decision, mass hold and recovery of one decision: distinct
    later = decision_alert(decision(time=T0 + timedelta(minutes=31)), where=HERE)  # the episode's next decision
    assert later.decision_id != ID


def test_job_alerts_carry_an_alert_id_without_a_decision():
    first = job_failure_alert("production", "nightly", failure(1))
    summary = job_summary_alert("production", "nightly", failures=3, window_minutes=30, window_start=T0,
                                last_exit="1", last_time=T0 + timedelta(minutes=5))
    assert first.decision_id is None and first.alert_id.startswith("job_failure:production/nightly/")
    assert summary.alert_id != first.alert_id
    assert first.alert_id in slack_payload(first)["text"] and first.alert_id in _sns(first, "chatbot")


def _strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [value] if isinstance(value, str) else []


def test_sns_and_chatbot_text_is_escaped_as_slack_text_is():
    d = decision(message=f"crash loop: {HOSTILE}", last_failures=(failure(0, reason=HOSTILE),))
    alert = decision_alert(d, where=HERE)
    for channel, body in _every_rendering(alert).items():
        for raw in ("<!channel>", "<!here>", "<@U024BE7LH>", "<#C024BE7LH>", "<!subteam^S012>", "<https://evil",
                    "|click me>"):
            assert raw not in body, (channel, raw)
        assert "&lt;!channel&gt;" in body, channel
    chatbot = json.loads(_sns(alert, "chatbot"))
    for text in _strings(chatbot["content"]) + _strings(chatbot["metadata"]):
        assert "<" not in text and ">" not in text, text
    # the same escaping as Slack's text, character for character
    assert chatbot["content"]["description"] == slack_payload(alert)["text"][:len(chatbot["content"]["description"])]
    assert "a&amp;b" in _sns(alert, "text")
