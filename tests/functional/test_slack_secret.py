"""An unreadable Slack webhook secret is an error (metric + log line), never a silent "no Slack" (issue 11, 7).

Secrets Manager answers AccessDenied when the role's grant does not match the ARN the function asks for
(typically a partial ARN without the ``-XXXXXX`` suffix). botocore's Stubber plays that answer.
"""

from __future__ import annotations

import logging

import boto3
import pytest
from botocore.stub import Stubber

from ecs_guardrail.adapters.alerts import SecretUnreadableError, WebhookUrl
from ecs_guardrail.core.alert import Alert
from ecs_guardrail.handlers import runtime as rt_module
from ecs_guardrail.handlers.runtime import Clients, Runtime

PARTIAL_ARN = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:ecs-guardrail/slack-webhook"


def _secrets_client():
    return boto3.client("secretsmanager", region_name="eu-west-1", aws_access_key_id="testing",
                        aws_secret_access_key="testing")  # noqa: S106 - Stubber: no request leaves


def _stubbed(code: str, message: str) -> tuple[WebhookUrl, Stubber]:
    client = _secrets_client()
    stubber = Stubber(client)
    stubber.add_client_error("get_secret_value", service_error_code=code, service_message=message,
                             http_status_code=400, expected_params={"SecretId": PARTIAL_ARN})
    stubber.activate()
    return WebhookUrl(client, PARTIAL_ARN, max_age_s=0), stubber


def test_access_denied_is_a_typed_error_with_its_code() -> None:
    webhook, stubber = _stubbed("AccessDeniedException", "not authorized to perform secretsmanager:GetSecretValue")
    with pytest.raises(SecretUnreadableError) as caught:
        webhook.get()
    assert caught.value.code == "AccessDeniedException" and caught.value.access_denied
    stubber.assert_no_pending_responses()


def test_access_denied_counts_a_metric_and_logs_an_error(caplog: pytest.LogCaptureFixture) -> None:
    webhook, stubber = _stubbed("AccessDeniedException", "not authorized to perform secretsmanager:GetSecretValue")
    runtime = Runtime(settings=None, history=None, clients=Clients(), webhook=webhook)  # type: ignore[arg-type]
    rt_module.metrics.clear_metrics()
    with caplog.at_level(logging.ERROR, logger="ecs-guardrail"):
        (delivery,) = runtime.send(Alert(subject="crash loop", text="scaled to zero"))
    assert not delivery.ok and delivery.sink == "slack"
    metric_set = rt_module.metrics.metric_set
    assert metric_set["SlackSecretUnreadable"]["Value"] == [1.0]
    assert "AlertDeliveryFailed" in metric_set  # and the delivery failure as before
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert any("Slack webhook secret unreadable" in m and "full ARN" in m for m in errors), errors
    rt_module.metrics.clear_metrics()
    stubber.assert_no_pending_responses()


def test_other_errors_are_counted_too_without_the_arn_hint(caplog: pytest.LogCaptureFixture) -> None:
    webhook, _ = _stubbed("ResourceNotFoundException", "Secrets Manager can't find the specified secret.")
    runtime = Runtime(settings=None, history=None, clients=Clients(), webhook=webhook)  # type: ignore[arg-type]
    rt_module.metrics.clear_metrics()
    with caplog.at_level(logging.ERROR, logger="ecs-guardrail"):
        runtime.send(Alert(subject="s", text="t"))
    assert rt_module.metrics.metric_set["SlackSecretUnreadable"]["Value"] == [1.0]
    assert any("Slack webhook secret unreadable" in r.getMessage() and "full ARN" not in r.getMessage()
               for r in caplog.records)
    rt_module.metrics.clear_metrics()
