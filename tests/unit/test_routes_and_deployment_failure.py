"""Issue 35 items 3-4, pure parts: ALERT_ROUTES parsing and matching, channel names from ARNs, the settings'
errors at start, and what a failed deployment's alert says (rollback target, escaping)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ecs_guardrail.core.alert import Where, chatbot_message, slack_payload
from ecs_guardrail.core.deployment_failure import Rollback, deployment_failed_alert, rollback_target, rolled_back_to
from ecs_guardrail.core.errors import SettingsError
from ecs_guardrail.core.routes import (
    DEFAULT_ROUTE,
    parse_channels,
    parse_routes,
    route_of,
    secret_channel,
    topic_channel,
)
from ecs_guardrail.settings import load_settings

TOPIC = "arn:aws:sns:eu-west-1:111122223333:oncall"
SECRET = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:dev-alerts-AbCdEf"
T = datetime(2025, 10, 7, 9, 11, tzinfo=UTC)


def test_channel_names_come_from_the_resources() -> None:
    assert topic_channel(TOPIC) == "oncall"
    assert secret_channel(SECRET) == "dev-alerts"
    assert secret_channel("arn:aws:secretsmanager:eu-west-1:111122223333:secret:team/slack-x1Y2z3") == "team/slack"
    with pytest.raises(ValueError, match="full ARN"):
        secret_channel("arn:aws:secretsmanager:eu-west-1:111122223333:secret:oncall")
    with pytest.raises(ValueError, match="SNS topic ARN"):
        topic_channel(SECRET)
    both = parse_channels(TOPIC, f"{SECRET},arn:aws:secretsmanager:eu-west-1:111122223333:secret:oncall-AbCdEf")
    assert both.names == {"oncall", "dev-alerts"} and "oncall" in both.topics and "oncall" in both.secrets
    with pytest.raises(ValueError, match="default channel"):
        parse_channels("arn:aws:sns:eu-west-1:111122223333:default", "")


def test_the_first_matching_route_wins_without_case_and_the_rest_is_default() -> None:
    routes = parse_routes("prod-*=oncall,*-eu=dev-alerts,dev-?=dev-alerts", frozenset({"oncall", "dev-alerts"}))
    assert route_of(routes, "prod-eu") == "oncall"
    assert route_of(routes, "PROD-us") == "oncall"
    assert route_of(routes, "staging-eu") == "dev-alerts"
    assert route_of(routes, "dev-1") == "dev-alerts"
    assert route_of(routes, "dev-10") == DEFAULT_ROUTE
    assert route_of(routes, None) == DEFAULT_ROUTE
    assert route_of((), "prod") == DEFAULT_ROUTE
    assert parse_routes("x=default", frozenset()) != ()  # the default channel may be named
    assert len(parse_routes("x=oncall,X=oncall", frozenset({"oncall"}))) == 2  # a repeat to the same channel


@pytest.mark.parametrize(("value", "said"), [
    ("prod-*", "ALERT_ROUTES entry 'prod-*' is not GLOB=NAME"),
    ("prod-*=oncall,", "ALERT_ROUTES entry '' is not GLOB=NAME"),
    (" prod-*=oncall", "is not GLOB=NAME"),
    ("prod-*=on call", "is not GLOB=NAME"),
    ("arn:aws:ecs:eu-west-1:111122223333:cluster/prod=oncall", "is not GLOB=NAME"),
    ("prod-*=pager", "names channel 'pager', which is not configured (channels: dev-alerts, oncall"),
    ("prod-*=oncall,PROD-*=dev-alerts", "routes glob 'PROD-*' again, to another channel than prod-*=oncall"),
])
def test_a_bad_route_is_a_settings_error_at_start(value: str, said: str) -> None:
    with pytest.raises(SettingsError, match="invalid setting") as caught:
        load_settings({"ALERT_ROUTES": value, "ALERT_CHANNEL_TOPIC_ARNS": TOPIC, "ALERT_CHANNEL_SECRET_ARNS": SECRET})
    assert said in str(caught.value)


def test_bad_channel_arns_are_settings_errors() -> None:
    with pytest.raises(SettingsError, match="ALERT_CHANNEL_TOPIC_ARNS"):
        load_settings({"ALERT_CHANNEL_TOPIC_ARNS": SECRET})
    with pytest.raises(SettingsError, match="ALERT_CHANNEL_SECRET_ARNS"):
        load_settings({"ALERT_CHANNEL_SECRET_ARNS": "arn:aws:secretsmanager:eu-west-1:111122223333:secret:x"})
    with pytest.raises(SettingsError, match="two ARNs name channel 'oncall'"):
        load_settings({"ALERT_CHANNEL_TOPIC_ARNS": f"{TOPIC},{TOPIC.replace('eu-west-1', 'us-east-1')}"})
    s = load_settings({"ALERT_ROUTES": "", "ALERT_CHANNEL_TOPIC_ARNS": ""})
    assert s.routes() == () and not s.channels().names


def test_the_rollback_target_from_events_completed_deployments_or_describe_services() -> None:
    notes = [(T - timedelta(minutes=30), "SERVICE_DEPLOYMENT_COMPLETED", "ecs-svc/1", "done"),
             (T - timedelta(minutes=10), "SERVICE_DEPLOYMENT_IN_PROGRESS", "ecs-svc/2", "in progress")]
    assert rollback_target("ecs-svc/2", T, notes) == ("ecs-svc/1", "completed_event")
    rolling = [*notes, (T + timedelta(seconds=6), "SERVICE_DEPLOYMENT_IN_PROGRESS", "ecs-svc/0",
                        "ECS deployment circuit breaker: rolling back to deploymentId ecs-svc/0.")]
    assert rollback_target("ecs-svc/2", T, rolling) == ("ecs-svc/0", "event")
    described = [("ecs-svc/2", "FAILED"), ("ecs-svc/7", "COMPLETED")]
    assert rollback_target("ecs-svc/2", T, [], described) == ("ecs-svc/7", "describe_services")
    # an answer that does not list the failed deployment is about another moment of the service
    assert rollback_target("ecs-svc/2", T, [], [("ecs-svc/7", "COMPLETED")]) == (None, None)
    sample = "ECS deployment circuit breaker: rolling back to deploymentId deploymentID."  # the docs' placeholder
    assert rolled_back_to(sample) is None  # not an id ECS writes: detail.deploymentId's rule would reject it
    ecs = "ECS deployment circuit breaker: rolling back to deploymentId ecs-svc/4401."
    assert rolled_back_to(ecs) == "ecs-svc/4401"
    assert rolled_back_to(None) is None and rolled_back_to("ECS deployment ecs-svc/1 completed.") is None


def test_a_rollback_id_in_hostile_reason_text_passes_only_deployment_ids_rule() -> None:
    """The id in the reason is free text: it is taken only when ``is_deployment_id`` (the event model's
    ``detail.deploymentId`` rule) accepts it, else the rollback target stays unknown (never a forged one)."""
    head = "ECS deployment circuit breaker: rolling back to deploymentId "
    for hostile in ("ecs-svc/1\u202egnp.exe", "ecs-svc/1:../../x", "ecs-svc/" + "9" * 65, "ecs-svc/", "ecs-svc/1_2",
                    "arn:aws:ecs:eu-west-1:1:x", "ecs-svc/1/2", "<!here>", "ecs-svc/12<https://x.example|go>",
                    "ECS-SVC/1"):
        assert rolled_back_to(head + hostile + ".") is None, hostile
        notes = [(T, "SERVICE_DEPLOYMENT_IN_PROGRESS", "ecs-svc/0", head + hostile + ".")]
        assert rollback_target("ecs-svc/2", T, notes) == (None, None), hostile
    assert rolled_back_to(head + "ecs-svc/" + "7" * 64 + ".") == "ecs-svc/" + "7" * 64


def test_the_alert_says_what_ecs_does_and_quotes_its_reason_inert() -> None:
    where = Where(cluster="prod", service="api", account="111122223333", region="eu-west-1")
    hostile = "breaker <!here> <https://x.example|click> " + "x" * 2000
    alert = deployment_failed_alert(where, deployment_id="ecs-svc/2", reason=hostile, at=T,
                                    rollback=Rollback(True, "ecs-svc/1", "event"))
    assert alert.kind == "deployment_failed"
    assert alert.alert_id == "deployment_failed:111122223333/eu-west-1/prod/api/ecs-svc/2"
    assert "ECS rolls back to deployment ecs-svc/1" in alert.text and "Rolls back: yes" in alert.text
    slack = slack_payload(alert)  # the renderers escape what is not ours (Slack mrkdwn), as for every alert
    assert "<!here>" not in slack["text"] and "&lt;!here&gt;" in slack["text"]
    assert "<https://x.example" not in str(slack["blocks"]) and "<!here>" not in str(chatbot_message(alert))
    assert len(alert.data["ecs_reason"]) <= 500
    unknown = deployment_failed_alert(where, deployment_id="ecs-svc/2", reason=None, at=T, rollback=Rollback(None))
    assert "not known" in unknown.text and "Rolls back: unknown" in unknown.text
    pending = deployment_failed_alert(where, deployment_id="ecs-svc/2", reason="r", at=T, rollback=Rollback(True))
    assert "to the last deployment that completed" in pending.text


def test_a_blue_green_deployment_rolls_back_whatever_the_breaker_says() -> None:
    where = Where(cluster="shop", service="checkout")
    alert = deployment_failed_alert(where, deployment_id="ecs-svc/2", reason="r", at=T,
                                    rollback=Rollback(True, None, None, "BLUE_GREEN"))
    assert "a BLUE_GREEN deployment keeps the previous revision's tasks" in alert.text
    assert alert.data["strategy"] == "BLUE_GREEN" and alert.data["rolls_back"] is True
