"""Issue 32 item 4: a per-account stack's alerts name the account on every channel (core/org.py).

Replays the bundled bad-image-dev scenario with ``ACCOUNT_NAME`` and ``CENTRAL_ALERT_TOPIC_ARN`` and reads
what each channel received (``--alerts-out``'s lines); without them the alerts are unchanged."""

from __future__ import annotations

import json

import msgspec

from ecs_guardrail.core.alert import SNS_SUBJECT_MAX, Alert, Where
from ecs_guardrail.core.org import account_tag, label_alert
from ecs_guardrail.replay.run import replay
from ecs_guardrail.replay.scenario import load_scenario
from tests.conftest import ROOT

SCENARIO = ROOT / "events" / "scenarios" / "bad-image-dev"
CENTRAL = "arn:aws:sns:us-west-1:999988887777:org-alerts"


def _previews(**settings: str) -> list[dict]:
    scenario = load_scenario(SCENARIO)
    if settings:
        scenario = msgspec.structs.replace(scenario, settings=scenario.settings.with_values(**settings))
    return replay(scenario).alerts


def test_every_channel_names_the_account_and_its_name() -> None:
    lines = _previews(ACCOUNT_NAME="payments-prod", CENTRAL_ALERT_TOPIC_ARN=CENTRAL)
    assert {line["channel"] for line in lines} == {"sns", "slack"}
    for line in lines:
        if line["channel"] == "sns":
            assert line["subject"].startswith("ecs-guardrail [payments-prod 111122223333] ")
            msg = json.loads(line["message"])  # Chatbot's JSON
            assert "account 111122223333 (payments-prod) · region" in msg["content"]["description"]
            assert {"111122223333", "payments-prod"} <= set(msg["content"]["keywords"])
            assert msg["metadata"]["additionalContext"]["account"] == "111122223333"
        else:
            assert "account 111122223333 (payments-prod) · region" in line["text"]
            assert "account 111122223333 (payments-prod)" in json.dumps(line["blocks"], ensure_ascii=False)


def test_a_central_topic_without_a_name_puts_the_account_id_in_the_subject() -> None:
    lines = _previews(CENTRAL_ALERT_TOPIC_ARN=CENTRAL)
    sns = [line for line in lines if line["channel"] == "sns"]
    assert sns and all(line["subject"].startswith("ecs-guardrail [111122223333] ") for line in sns)


def test_a_single_account_stack_sends_what_it_sent_before() -> None:
    plain = Alert(subject="ecs-guardrail held: dev/api", text="x\naccount 1 · region r", where=Where("dev"))
    assert label_alert(plain, account_name=None, central=False) is plain
    assert all(not line.get("subject", "ecs-guardrail s").startswith("ecs-guardrail [") for line in _previews())


def test_the_subject_stays_within_sns_limits() -> None:
    alert = Alert(subject="ecs-guardrail " + "é" * 200, text="", where=Where("dev", account="111122223333"))
    subject = label_alert(alert, account_name="n" * 50, central=True).subject
    assert len(subject) <= SNS_SUBJECT_MAX and subject.isascii()
    assert account_tag(None, None) == "account unknown"
