"""template.yaml and terraform/ deploy the same system; this module checks
iAM: both templates grant exactly what the code declares (ecs_guardrail.iam), and the alert-only deny.

Runs without AWS; see parity.py and conftest.py for what these modules share.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Any

import iac
import pytest
from parity import (
    PLATFORM,
    SLACK_ARN,
    TEMPLATE,
    TF,
    TF_POLICY,
    _classify_cfn,
    _classify_tf,
    _tf_document_name,
    cfn_statements,
    declared,
    granted,
    tf_dynamic_statements,
    tf_source_documents,
    tf_statements,
)

from ecs_guardrail import iam


def test_tf_base_document_is_each_functions_own() -> None:
    """The platform document is per function (its own log group) and every policy sources it; the
    watchdog and the sweep function (the watchdog's code) source the one crash_path document after it,
    and have no statement of their own (written once, not copied)."""
    assert TF["data"]["aws_iam_policy_document"]["platform"]["for_each"] == "${local.functions}"
    for function in iam.FUNCTIONS:
        sources = TF["data"]["aws_iam_policy_document"][TF_POLICY[function]]["source_policy_documents"]
        crash_path = [("crash_path", None)] if function in ("watchdog", "sweep") else []
        assert [_tf_document_name(r) for r in sources] == [("platform", function), *crash_path]
    for function in ("watchdog", "sweep"):
        own = TF["data"]["aws_iam_policy_document"][TF_POLICY[function]]
        assert not {"statement", "dynamic"} & set(own), f"{function}: statements copied beside crash_path"
    assert tf_source_documents("crash_path") == []


@pytest.mark.parametrize("function", sorted(iam.FUNCTIONS))
def test_granted_actions_equal_declared_actions(function: str) -> None:
    expected = declared(function) | PLATFORM
    assert granted(cfn_statements(function, SlackWebhookSecretArn=SLACK_ARN), _classify_cfn, function) == expected
    assert granted(tf_statements(function), _classify_tf, function) == expected


def test_slack_secret_is_granted_only_when_configured() -> None:
    without = granted(cfn_statements("watchdog", SlackWebhookSecretArn=""), _classify_cfn, "watchdog")
    assert without == (declared("watchdog") | PLATFORM) - {("webhook_secret", "secretsmanager:GetSecretValue")}
    slack = [for_each for for_each, c in tf_dynamic_statements("watchdog") if c["sid"] == "SlackWebhookSecret"]
    assert slack == ["${local.has_slack_webhook ? [var.slack_webhook_secret_arn] : []}"]
    assert TF["locals"]["has_slack_webhook"] == '${var.slack_webhook_secret_arn != ""}'


def test_watchdog_queries_no_index_and_no_function_gets_more_than_the_table() -> None:
    """Item 6: no function is granted an index (the watchdog queries the table only)."""
    for function in iam.FUNCTIONS:
        cfn = cfn_statements(function, SlackWebhookSecretArn=SLACK_ARN)
        assert not [r for s in cfn for r in iac.as_list(s["Resource"]) if "/index/" in str(r)], function
        tf = tf_statements(function)
        assert not [r for s in tf for r in iac.as_list(s.get("resources", [])) if "/index/" in str(r)], function
    table_actions = {a for kind, a in declared("watchdog") if kind == "history_table"}
    assert "dynamodb:Query" in table_actions  # it does query: the table's own key


def _tag_statements_cfn() -> list[dict[str, Any]]:
    return [s for s in cfn_statements("watchdog") if s["Effect"] == "Allow" and "ecs:TagResource" in s["Action"]]


def test_tag_resource_only_for_the_tag_the_watchdog_writes() -> None:
    """Item 5: ecs:TagResource (and, for a probe's pass, ecs:UntagResource: issue 29 item 2) is conditioned
    on aws:TagKeys = the previous-desired-count tag only."""
    from ecs_guardrail.adapters.ecs import PREVIOUS_COUNT_TAG
    from ecs_guardrail.core.policy import OPT_OUT_TAG

    (cfn,) = _tag_statements_cfn()
    assert cfn["Action"] == ["ecs:TagResource", "ecs:UntagResource"]
    assert cfn["Condition"]["ForAllValues:StringEquals"] == {"aws:TagKeys": [PREVIOUS_COUNT_TAG]}
    assert cfn["Condition"]["Null"] == {"aws:TagKeys": "false"}  # a request without tag keys is no match
    (tf,) = [s for s in tf_statements("watchdog") if "ecs:TagResource" in s["actions"] and "effect" not in s]
    assert tf["actions"] == ["ecs:TagResource", "ecs:UntagResource"]
    conditions = {(c["test"], c["variable"]): c["values"] for c in iac.as_list(tf["condition"])}
    assert conditions == {
        ("ForAllValues:StringEquals", "aws:TagKeys"): [PREVIOUS_COUNT_TAG],
        ("Null", "aws:TagKeys"): ["false"],
    }
    assert OPT_OUT_TAG != PREVIOUS_COUNT_TAG


def test_no_write_on_a_wildcard_resource() -> None:
    for function in iam.FUNCTIONS:
        for kind, action in declared(function) | PLATFORM:
            if kind == "any":
                verb = action.split(":", 1)[1]
                assert verb.startswith(("List", "Describe", "Get", "Put")), action
                assert not verb.startswith("Put") or action.startswith("xray:"), action


def test_ecs_service_arn_is_this_account_and_region_long_format() -> None:
    assert (
        TF["locals"]["ecs_service_arns"] == "arn:${local.partition}:ecs:${local.region}:${local.account_id}:service/*/*"
    )
    assert TF["locals"]["ecs_service_deployment_arns"] == (
        "arn:${local.partition}:ecs:${local.region}:${local.account_id}:service-deployment/*/*/*")


def test_the_watchdog_reads_service_deployments_and_nothing_else_new() -> None:
    """Issue 19: the deployment rule's new calls are exactly ListServiceDeployments (on the service) and
    DescribeServiceDeployments (on the service deployment), granted to the watchdog (and the sweep function,
    which runs its code) only, in both templates
    (the declared-equals-granted tests above hold the rest)."""
    wanted = {("ecs_service", "ecs:ListServiceDeployments"),
              ("ecs_service_deployment", "ecs:DescribeServiceDeployments")}
    for function in iam.FUNCTIONS:
        cfn = granted(cfn_statements(function), _classify_cfn, function)
        tf = granted(tf_statements(function), _classify_tf, function)
        new = {(k, a) for k, a in cfn | tf if "ServiceDeployment" in a}
        # the sweep function runs the watchdog's code (the crash path's own lane, issue 32)
        assert new == (wanted if function in ("watchdog", "sweep") else set()), function


def iam_match(pattern: str, arn: str) -> bool:
    """IAM ARN matching: * any run of characters (slashes included), ? one character."""
    return fnmatch.fnmatchcase(arn, pattern.replace("[", "[[]"))


def cfn_deny(alert_only: str) -> dict[str, Any]:
    denies = [s for s in cfn_statements("watchdog", AlertOnlyClusters=alert_only)
              if s["Effect"] == "Deny" and s["Sid"] == "DenyActingOnAlertOnlyClusters"]
    assert len(denies) == 1
    return denies[0]


SCALING_WRITES = {"application-autoscaling:RegisterScalableTarget", "application-autoscaling:PutScalingPolicy",
                  "application-autoscaling:PutScheduledAction"}


@pytest.mark.parametrize(("alert_only", "denied"), [("", True), ("production", False), ("none", False)])
def test_scaling_writes_are_denied_where_iam_can_say_so(alert_only: str, denied: bool) -> None:
    """Item 7: Application Auto Scaling ARNs carry a random id, not the cluster (its only condition keys
    are the namespace and dimension), so IAM can deny its writes only when every cluster is alert-only;
    elsewhere the adapter refuses them (tests/functional/test_alert_only_refusal.py)."""
    others = [s for s in cfn_statements("watchdog", AlertOnlyClusters=alert_only)
              if s["Effect"] == "Deny" and s["Sid"] != "DenyActingOnAlertOnlyClusters"]
    if not denied:
        assert others == []
        return
    (deny,) = others
    assert set(iac.as_list(deny["Action"])) == SCALING_WRITES
    assert deny["Condition"] == {"StringEquals": {"application-autoscaling:service-namespace": "ecs"}}
    # every scaling write the watchdog is granted is in it
    assert {a for _, a in declared("watchdog") if a.startswith("application-autoscaling:")
            and not a.split(":", 1)[1].startswith("Describe")} <= SCALING_WRITES
    statements = iac.as_list(TF["data"]["aws_iam_policy_document"]["watchdog_deny_alert_only"]["dynamic"])
    (tf_deny,) = [d["statement"] for d in statements]
    assert tf_deny["for_each"] == '${local.every_cluster_alert_only ? ["ecs"] : []}'
    content = tf_deny["content"][0] if isinstance(tf_deny["content"], list) else tf_deny["content"]
    assert set(content["actions"]) == SCALING_WRITES and content["effect"] == "Deny"
    (cond,) = iac.as_list(content["condition"])
    assert cond["variable"] == "application-autoscaling:service-namespace"


def svc(cluster: str, service: str = "web", region: str = "eu-west-1", account: str = "111122223333") -> str:
    return f"arn:aws:ecs:{region}:{account}:service/{cluster}/{service}"


@pytest.mark.parametrize(
    ("alert_only", "denied", "allowed"),
    [
        (
            "production",
            [svc("production"), svc("production", "api", "us-east-1", "444455556666")],
            [svc("staging"), svc("production-canary")],
        ),
        (
            "production,prod-*",
            [svc("production"), svc("prod-eu"), svc("prod-")],
            [svc("dev"), svc("preprod")],
        ),
        ("team?", [svc("team1")], [svc("team12"), svc("team")]),
        ("", [svc("production"), svc("dev"), svc("anything", "at-all")], []),
        # item 7: a cluster ARN denies that cluster's services in its own region and account
        (
            "arn:aws:ecs:eu-west-1:111122223333:cluster/production,staging",
            [svc("production"), svc("staging", "api", "us-east-1", "444455556666")],
            [svc("production", "web", "us-east-1"), svc("production", "web", "eu-west-1", "444455556666"),
             svc("production-canary")],
        ),
        ("arn:aws:ecs:eu-west-1:111122223333:cluster/live", [svc("live")], [svc("production"), svc("dev")]),
        ("none", [], [svc("production"), svc("dev")]),
    ],
)
def test_deny_covers_every_service_of_alert_only_clusters(
    alert_only: str, denied: list[str], allowed: list[str]
) -> None:
    deny = cfn_deny(alert_only)
    assert set(iac.as_list(deny["Action"])) == {"ecs:UpdateService", "ecs:TagResource", "ecs:UntagResource"}
    patterns = iac.as_list(deny["Resource"])
    for arn in denied:
        assert any(iam_match(p, arn) for p in patterns), (arn, patterns)
    for arn in allowed:
        assert not any(iam_match(p, arn) for p in patterns), (arn, patterns)
        # and the watchdog could act there (its own region and account): its allow matches the same service
        assert iam_match("arn:aws:ecs:eu-west-1:111122223333:service/*/*", arn) or ":eu-west-1:111122223333:" not in arn


def test_deny_covers_every_mutating_ecs_action_the_watchdog_has() -> None:
    mutating = {
        a
        for kind, a in declared("watchdog")
        if a.startswith("ecs:") and not a.split(":", 1)[1].startswith(("Describe", "List"))
    }
    assert mutating <= set(iac.as_list(cfn_deny("production")["Action"]))
    tf_deny = TF["data"]["aws_iam_policy_document"]["watchdog_deny_alert_only"]["statement"][0]
    assert tf_deny["effect"] == "Deny"
    assert mutating <= set(tf_deny["actions"])
    assert tf_deny["resources"] == "${local.alert_only_service_arns}"
    attachment = TF["resource"]["aws_iam_role_policy"]["watchdog_deny_alert_only"]
    assert (
        attachment["role"] == '${aws_iam_role.function["watchdog"].id}'
        or attachment["role"] == '${aws_iam_role.function[\\"watchdog\\"].id}'
    )
    assert attachment["policy"] == "${data.aws_iam_policy_document.watchdog_deny_alert_only.json}"


def test_nothing_runs_before_the_deny_exists() -> None:
    """Item 4: the watchdog function and its event target depend on the deny (create and destroy order)."""
    # CloudFormation: the deny is an inline policy of the role the function needs (no separate resource)
    policies = TEMPLATE["Resources"]["WatchdogRole"]["Properties"]["Policies"]
    assert "deny-alert-only-clusters" in [p["PolicyName"] for p in policies]
    assert not iac.resources_of_type(TEMPLATE, "AWS::IAM::Policy")
    assert TEMPLATE["Resources"]["WatchdogFunction"]["Properties"]["Role"] == {"Fn::GetAtt": ["WatchdogRole", "Arn"]}
    # Terraform: explicit depends_on, on the function and on every event target
    deny = "${aws_iam_role_policy.watchdog_deny_alert_only}"
    assert deny in TF["resource"]["aws_lambda_function"]["this"]["depends_on"]
    assert deny in TF["resource"]["aws_cloudwatch_event_target"]["this"]["depends_on"]


@pytest.mark.parametrize("alert_only", [
    "production", "production,prod-*,team?", "", "none",
    "arn:aws:ecs:eu-west-1:111122223333:cluster/production,staging,arn:aws-cn:ecs:cn-north-1:111122223333:cluster/x",
])
def test_terraform_deny_equals_template_deny(tf_variables_only: Path, alert_only: str) -> None:
    tf = iac.terraform_console(tf_variables_only, "local.alert_only_service_arns", {"alert_only_clusters": alert_only})
    assert tf == iac.as_list(cfn_deny(alert_only)["Resource"])


def test_cross_account_mode_on_both_sides() -> None:
    policy = TEMPLATE["Resources"]["CrossAccountBusPolicy"]
    assert policy["Condition"] == "HasSourceAccounts"
    statement = iac.Evaluator(TEMPLATE, iac.parameter_values(TEMPLATE, SourceAccountIds="111111111111,222222222222"))(
        policy["Properties"]["Statement"]
    )
    assert statement["Principal"] == {"AWS": ["111111111111", "222222222222"]}
    assert statement["Action"] == "events:PutEvents"
    tf = TF["resource"]["aws_cloudwatch_event_permission"]["member_accounts"]
    assert tf["for_each"] == "${toset(local.source_account_ids)}" and tf["action"] == "events:PutEvents"
    assert (iac.ROOT / "terraform" / "examples" / "member-account" / "main.tf").is_file()
    assert (iac.ROOT / "deploy" / "member-account.yaml").is_file()


def test_member_account_forwarder_role_trusts_only_its_own_account() -> None:
    """Issue 24 item 17: the forwarder role's trust has the aws:SourceAccount condition the central
    function's has, in both member-side templates (IAM "confused deputy" guidance)."""
    member = iac.load_template(iac.ROOT / "deploy" / "member-account.yaml")
    (stmt,) = member["Resources"]["ForwardRole"]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert stmt["Condition"] == {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}}
    tf = iac.load_terraform(iac.TERRAFORM / "examples" / "member-account")
    (statement,) = tf["data"]["aws_iam_policy_document"]["assume_events"]["statement"]
    (condition,) = statement["condition"]
    assert (condition["test"], condition["variable"]) == ("StringEquals", "aws:SourceAccount")
    assert condition["values"] == ["${data.aws_caller_identity.current.account_id}"]


def test_alert_channels_are_granted_exactly_when_configured() -> None:
    """Issue 35 item 4: the routes' named channels (topics, Slack webhook secrets) are granted sns:Publish /
    secretsmanager:GetSecretValue on exactly the ARNs configured, in both templates, and nothing when none."""
    from parity import CHANNEL_SECRET_ARN, CHANNEL_TOPIC_ARN

    other_topic = "arn:aws:sns:eu-west-1:111122223333:dev-alerts"
    by_sid = {s.get("Sid"): s for s in cfn_statements(
        "watchdog", AlertChannelTopicArns=f"{CHANNEL_TOPIC_ARN},{other_topic}",
        AlertChannelSecretArns=CHANNEL_SECRET_ARN)}
    assert by_sid["AlertChannelTopics"]["Action"] == ["sns:Publish"]
    assert by_sid["AlertChannelTopics"]["Resource"] == [CHANNEL_TOPIC_ARN, other_topic]
    assert by_sid["AlertChannelSecrets"]["Action"] == ["secretsmanager:GetSecretValue"]
    assert by_sid["AlertChannelSecrets"]["Resource"] == [CHANNEL_SECRET_ARN]
    sids = {s.get("Sid") for s in cfn_statements("watchdog")}
    assert not {"AlertChannelTopics", "AlertChannelSecrets"} & sids
    for function in set(iam.FUNCTIONS) - {"watchdog"}:
        assert not {"AlertChannelTopics", "AlertChannelSecrets"} & {s.get("Sid") for s in cfn_statements(function)}
    dynamic = {c["sid"]: (for_each, c) for for_each, c in tf_dynamic_statements("watchdog")}
    assert dynamic["AlertChannelTopics"][0] == '${length(local.alert_channel_topic_arns) > 0 ? ["sns"] : []}'
    assert dynamic["AlertChannelTopics"][1]["resources"] == "${local.alert_channel_topic_arns}"
    assert dynamic["AlertChannelSecrets"][1]["resources"] == "${local.alert_channel_secret_arns}"
    assert TF["locals"]["alert_channel_topic_arns"] == '${compact(split(",", var.alert_channel_topic_arns))}'
    assert TF["locals"]["alert_channel_secret_arns"] == '${compact(split(",", var.alert_channel_secret_arns))}'
