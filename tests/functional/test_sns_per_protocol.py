"""SNS gets one body per protocol (issue 29 item 5): an e-mail subscriber reads text, never the Chatbot JSON.

On moto: the message is published with ``MessageStructure="json"``; an SQS subscriber (the machines'
``default``) and moto's own per-protocol choice (``Subscription._parse_message_structure``, the rule of the
SNS API Reference: the protocol's key, else ``default``) give what each subscriber receives.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import boto3
import pytest
from moto import mock_aws
from moto.sns.models import Subscription, sns_backends

from ecs_guardrail.adapters.alerts import SnsTopic
from ecs_guardrail.core.alert import SNS_MESSAGE_MAX_BYTES, Alert

REGION = "eu-west-1"
ALERT = Alert(subject="ecs-guardrail scaled to 0: dev/api", text="dev/api scaled to 0: crash loop (R&D <team>)",
              data={"cluster": "dev", "service": "api", "decision_id": "123/eu-west-1/dev/api/t"})


def _received(fmt: str, alert: Alert = ALERT) -> dict[str, str]:
    """What each protocol's subscriber receives for ``alert`` published with ``SNS_FORMAT=fmt``."""
    with mock_aws():
        sns, sqs = boto3.client("sns", region_name=REGION), boto3.client("sqs", region_name=REGION)
        topic = sns.create_topic(Name="alerts")["TopicArn"]
        queue = sqs.create_queue(QueueName="q")["QueueUrl"]
        qarn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=qarn)
        assert SnsTopic(sns, topic, fmt).send(alert).ok
        (sqs_msg,) = sqs.receive_message(QueueUrl=queue)["Messages"]
        (_, published, subject, _, _) = sns_backends["123456789012"][REGION].topics[topic].sent_notifications[0]
    assert subject == alert.subject
    out = {p: Subscription._parse_message_structure(SimpleNamespace(protocol=p), published, p)  # type: ignore[arg-type]
           for p in ("https", "lambda", "email", "email-json", "sms", "http")}
    out["sqs"] = json.loads(sqs_msg["Body"])["Message"]
    return out


def test_chatbot_format_machines_get_the_chatbot_json_and_email_gets_text() -> None:
    got = _received("chatbot")
    chatbot = json.loads(got["https"])
    assert chatbot["version"] == "1.0" and chatbot["source"] == "custom"
    assert "R&amp;D &lt;team&gt;" in chatbot["content"]["description"]  # Chatbot posts it to Slack as is
    assert got["lambda"] == got["sqs"] == got["email-json"] == got["http"] == got["https"]
    email = got["email"]
    assert not email.lstrip().startswith("{")  # the issue: e-mail subscribers read the raw Chatbot JSON
    assert email.startswith("dev/api scaled to 0: crash loop (R&D <team>)")  # not escaped for Slack
    assert "Decision facts (JSON):" in email and '"decision_id": "123/eu-west-1/dev/api/t"' in email
    assert got["sms"] == ALERT.subject


def test_text_format_machines_get_the_escaped_text_and_email_the_readable_one() -> None:
    got = _received("text")
    assert got["https"].startswith("dev/api scaled to 0: crash loop (R&amp;D &lt;team&gt;)")
    assert "decision (JSON): " in got["https"] and got["sqs"] == got["https"] == got["lambda"]
    assert got["email"].startswith("dev/api scaled to 0: crash loop (R&D <team>)")
    assert got["email"] != got["https"]


@pytest.mark.parametrize("fmt", ["chatbot", "text"])
def test_the_whole_structure_fits_sns_and_only_the_email_is_cut(fmt: str) -> None:
    huge = Alert(subject="s", text="é" * 200_000, data={"cluster": "dev"})
    subject, message = SnsTopic(None, "arn:aws:sns:eu-west-1:1:t", fmt).structure(huge)
    assert len(message.encode()) <= SNS_MESSAGE_MAX_BYTES
    bodies = json.loads(message)
    assert bodies["default"] == SnsTopic(None, "arn:aws:sns:eu-west-1:1:t", fmt).render(
        huge, SNS_MESSAGE_MAX_BYTES - 4096, quoted=True)[1]
    if fmt == "chatbot":
        assert json.loads(bodies["default"])["content"]["description"]  # still JSON, shortened inside
    assert bodies["email"].endswith("…") and set(bodies) == {"default", "email", "sms"}
