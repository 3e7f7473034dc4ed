"""A hostile tester's findings on round 5 (before it stopped): each input is refused with its reason, never a
crash or a leak. Restart observations with a count past a float's range or a name ECS never gives; a Slack
webhook secret shaped so that its token sits where the redaction does not look."""

from __future__ import annotations

import copy

import boto3
import pytest
from botocore.stub import Stubber

from ecs_guardrail.adapters.alerts import WebhookUrl
from ecs_guardrail.core.restarts import RestartObservation

ACCOUNT = "123456789012"
OBSERVATION = {"detail-type": "Container Restarts", "source": "ecs-guardrail", "account": ACCOUNT,
               "detail": {"clusterArn": f"arn:aws:ecs:eu-west-1:{ACCOUNT}:cluster/dev", "serviceName": "api",
                          "minute": "2025-01-01T00:00:00Z", "restarts": 1, "restartCount": 3}}


def test_a_well_formed_observation_is_read() -> None:
    obs = RestartObservation.from_event(OBSERVATION, account=ACCOUNT)
    assert obs is not None and (obs.cluster, obs.service, obs.restarts) == ("dev", "api", 1)


@pytest.mark.parametrize("field,value", [
    ("restartCount", 10**400),  # OverflowError in math.isfinite before: a traceback out of the watchdog
    ("serviceName", "a" * 100_000),  # a DynamoDB key over 1,024 bytes before: a retry into the DLQ
    ("serviceName", "a/b#c"),
    ("clusterArn", f"arn:aws:ecs:eu-west-1:{ACCOUNT}:cluster/"),
])
def test_an_observation_out_of_what_ecs_and_the_sampler_write_is_rejected(field: str, value: object) -> None:
    raw = copy.deepcopy(OBSERVATION)
    raw["detail"][field] = value
    with pytest.raises(ValueError, match=field if field == "restartCount" else "serviceName"):
        RestartObservation.from_event(raw, account=ACCOUNT)


@pytest.mark.parametrize("url", [
    "https://hooks.slack.com\\services\\T000\\B000\\TOKEN",
    "https://hooks.slack.com;services;T000;TOKEN",
    "https://user:TOKEN@hooks.slack.com/services/T000",
    "https://hooks.slack.com/services/T000?token=TOKEN",
    "http://127.0.0.1:TOKEN/hook",
    "https://hooks.slack.com",
])
def test_a_webhook_secret_not_shaped_as_host_and_path_is_refused_without_quoting_it(url: str) -> None:
    client = boto3.client("secretsmanager", region_name="eu-west-1", aws_access_key_id="testing",
                          aws_secret_access_key="testing")  # noqa: S106 - Stubber: no request leaves
    arn = f"arn:aws:secretsmanager:eu-west-1:{ACCOUNT}:secret:slack"
    with Stubber(client) as stubber:
        stubber.add_response("get_secret_value", {"SecretString": url, "ARN": arn, "Name": "slack"},
                             {"SecretId": arn})
        with pytest.raises(ValueError) as caught:
            WebhookUrl(client, arn, max_age_s=0).get()
    assert "TOKEN" not in str(caught.value) and "host and a /path" in str(caught.value)


def test_a_webhook_url_as_slack_shows_it_is_read() -> None:
    client = boto3.client("secretsmanager", region_name="eu-west-1", aws_access_key_id="testing",
                          aws_secret_access_key="testing")  # noqa: S106 - Stubber: no request leaves
    arn = f"arn:aws:secretsmanager:eu-west-1:{ACCOUNT}:secret:slack"
    url = "https://hooks.slack.com/services/T000/B000/XXXX"
    with Stubber(client) as stubber:
        stubber.add_response("get_secret_value", {"SecretString": url, "ARN": arn, "Name": "slack"},
                             {"SecretId": arn})
        assert WebhookUrl(client, arn, max_age_s=0).get() == url


def test_a_health_response_with_an_escaped_lone_surrogate_is_one_line_not_a_traceback() -> None:
    """``{"\\ud800": ...}`` decodes to a name no report can print (UnicodeEncodeError in the text report)."""
    from ecs_guardrail.core.errors import HealthJsonError
    from ecs_guardrail.core.health_json import read_health_json

    with pytest.raises(HealthJsonError, match="not valid Unicode"):
        read_health_json(b'{"status":"UP","components":{"\\ud800":{"status":"DOWN"}}}')
    assert read_health_json(b'{"status":"UP"}') == {"status": "UP"}
