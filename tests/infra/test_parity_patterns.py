"""template.yaml and terraform/ deploy the same system; this module checks
the EventBridge patterns: routing.PATTERNS, events/patterns.json and both templates agree.

Runs without AWS; see parity.py and conftest.py for what these modules share.
"""

from __future__ import annotations

import json

import iac
import pytest
from parity import PATTERNS, TEMPLATE, TF

from ecs_guardrail.routing import STACK_ACCOUNT


def _own_account(node):
    """The stack's account as each side writes it (``!Ref AWS::AccountId``, ``${local.account_id}``) made
    routing.STACK_ACCOUNT, so the copies compare equal."""
    if node in ({"Ref": "AWS::AccountId"}, "${local.account_id}"):
        return STACK_ACCOUNT
    if isinstance(node, dict):
        return {k: _own_account(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_own_account(v) for v in node]
    return node


def test_rule_patterns_equal_events_patterns_json() -> None:
    """The four copies of the patterns agree: routing.PATTERNS (replay), events/patterns.json, both templates."""
    from ecs_guardrail.routing import PATTERNS as CODE_PATTERNS

    assert set(PATTERNS) == {"recorder", "watchdog", "sweep"}
    assert json.loads(json.dumps(CODE_PATTERNS)) == PATTERNS
    rules = iac.resources_of_type(TEMPLATE, "AWS::Events::Rule")
    assert rules["RecorderRule"]["Properties"]["EventPattern"] == PATTERNS["recorder"]
    assert _own_account(rules["WatchdogRule"]["Properties"]["EventPattern"]) == PATTERNS["watchdog"]
    assert _own_account(rules["SweepRule"]["Properties"]["EventPattern"]) == PATTERNS["sweep"]

    tf_rules = TF["resource"]["aws_cloudwatch_event_rule"]
    assert json.loads(iac.heredoc(tf_rules["recorder"]["event_pattern"])) == PATTERNS["recorder"]
    assert _own_account(json.loads(iac.heredoc(tf_rules["watchdog"]["event_pattern"]))) == PATTERNS["watchdog"]
    assert _own_account(json.loads(iac.heredoc(tf_rules["sweep"]["event_pattern"]))) == PATTERNS["sweep"]


def test_watchdog_is_filtered_at_the_bus() -> None:
    watchdog = PATTERNS["watchdog"]
    shapes = [(tuple(branch["detail-type"]), branch.get("detail")) for branch in watchdog["$or"]]
    assert shapes == [
        (("ECS Task State Change",), {"lastStatus": ["STOPPED"]}),
        (("ECS Task State Change",), {"stopCode": ["SpotInterruption", "TerminationNotice"]}),
        (("ECS Task State Change",), {"stoppedReason": [{"prefix": "Your Spot Task"}]}),
        (("ECS Service Action",), {"eventName": ["SERVICE_TASK_START_IMPAIRED"]}),
        (("ECS Service Action",), {"eventName": ["SERVICE_STEADY_STATE"]}),
        (("ECS Deployment State Change",), None),  # every deployment state change
    ]
    assert watchdog["source"] == ["aws.ecs"]
    # the sampler's restart observations go to the sweep function, the crash path's own lane (issue 32);
    # issue 29 item 4: the stack's own account only (a member account may put events on the bus)
    assert PATTERNS["sweep"] == {"source": ["ecs-guardrail"], "replay-name": [{"exists": False}],
                                 "detail-type": ["Container Restarts"], "account": [STACK_ACCOUNT]}
    # the recorder takes every aws.ecs event: ECS adds detail-types, and one it does not read is kept
    assert PATTERNS["recorder"] == {"source": ["aws.ecs"]}


@pytest.mark.parametrize(
    ("fixture", "watchdog"),
    [
        ("service-action-steady-state.docs.json", True),
        ("deployment-completed.docs.json", True),
        ("deployment-failed-circuit-breaker.docs.json", True),
        ("deployment-in-progress.docs.json", True),
        ("service-action-task-start-impaired.json", True),
        ("task-fargate-running-service-exec-agent-pending.json", False),
    ],
)
def test_watchdog_rule_routes_the_documented_events(fixture: str, watchdog: bool) -> None:
    from ecs_guardrail.routing import matches

    event = json.loads((iac.ROOT / "events" / "ecs" / fixture).read_text())
    assert matches(PATTERNS["watchdog"], event) is watchdog
    assert matches(PATTERNS["recorder"], event)


def test_raw_copy_and_archive_take_every_ecs_event() -> None:
    everything = {"source": ["aws.ecs"]}
    assert TEMPLATE["Resources"]["EcsEventsLogRule"]["Properties"]["EventPattern"] == everything
    assert TEMPLATE["Resources"]["EcsEventsArchive"]["Properties"]["EventPattern"] == everything
    assert (
        json.loads(iac.heredoc(TF["resource"]["aws_cloudwatch_event_rule"]["ecs_events_log"]["event_pattern"]))
        == everything
    )
    assert json.loads(iac.heredoc(TF["resource"]["aws_cloudwatch_event_archive"]["ecs"]["event_pattern"])) == everything
    cfn_target = iac.Evaluator(TEMPLATE, iac.parameter_values(TEMPLATE))(
        TEMPLATE["Resources"]["EcsEventsLogRule"]["Properties"]["Targets"][0]["Arn"]
    )
    assert cfn_target == "arn:aws:logs:eu-west-1:111122223333:log-group:{ref:EcsEventsLogGroup}"
    assert TF["locals"]["event_targets"]["ecs_events_log"]["arn"] == "${aws_cloudwatch_log_group.ecs_events.arn}"
    # log targets must live under /aws/events/, and both keep them for the retention parameter
    cfn_group = TEMPLATE["Resources"]["EcsEventsLogGroup"]["Properties"]
    assert iac.Evaluator(TEMPLATE, iac.parameter_values(TEMPLATE))(cfn_group["LogGroupName"]).startswith(
        "/aws/events/")
    assert cfn_group["RetentionInDays"] == {"Ref": "LogRetentionDays"}
    tf_group = TF["resource"]["aws_cloudwatch_log_group"]["ecs_events"]
    assert tf_group["name"].startswith("/aws/events/")
    assert tf_group["retention_in_days"] == "${var.log_retention_days}"
