"""template.yaml and terraform/ deploy the same system; this module checks
the names: one naming scheme on both paths, from one name parameter (issue 24 item 16).

Every regional resource an operator or a runbook looks up (functions, the table, queues, the topic,
log groups, rules and the schedule, the archive, the metric filter, every alarm) is NAME-SUFFIX, with
NAME the SAM ``Name`` parameter or Terraform's ``var.name`` (the same validation: at most 40
characters). IAM roles are the exception on both paths: IAM is global, so their names are generated
(a second region must not collide). On SAM the state-holding resources (the history table and the two
queues) are the other exception: CloudFormation replaces a resource whose name changes, so naming them
would switch an existing stack's functions to an empty table and delete the queues with the events they
keep; they keep generated names there (found by Ref and the stack's outputs). Runs without AWS.
"""


from __future__ import annotations

import re
from typing import Any

import iac
import pytest
from parity import SLACK_ARN, TF

from ecs_guardrail import iam

ACCOUNTS = "111122223333,444455556666"

#: SAM types whose resources keep CloudFormation's generated names (an upgrade must never replace them)
SAM_GENERATED = {"AWS::DynamoDB::Table": "TableName", "AWS::SQS::Queue": "QueueName"}

# the name property of each named type, with the limit AWS documents for it
CFN_NAME = {
    "AWS::Serverless::Function": "FunctionName",
    "AWS::DynamoDB::Table": "TableName",
    "AWS::SNS::Topic": "TopicName",
    "AWS::SQS::Queue": "QueueName",
    "AWS::Logs::LogGroup": "LogGroupName",
    "AWS::Logs::ResourcePolicy": "PolicyName",
    "AWS::Events::Rule": "Name",
    "AWS::Events::Archive": "ArchiveName",
    "AWS::Logs::MetricFilter": "FilterName",
    "AWS::CloudWatch::Alarm": "AlarmName",
}
TF_NAME = {
    "aws_lambda_function": "function_name",
    "aws_dynamodb_table": "name",
    "aws_sns_topic": "name",
    "aws_sqs_queue": "name",
    "aws_cloudwatch_log_group": "name",
    "aws_cloudwatch_log_resource_policy": "policy_name",
    "aws_cloudwatch_event_rule": "name",
    "aws_cloudwatch_event_archive": "name",
    "aws_cloudwatch_log_metric_filter": "name",
    "aws_cloudwatch_metric_alarm": "alarm_name",
}
# Lambda FunctionName 64, EventBridge rule Name 64 and ArchiveName 48, SQS QueueName 80, SNS TopicName
# 256, DynamoDB TableName 255, CloudWatch AlarmName 255, Logs log group 512, metric filter 512
LIMIT = {
    "AWS::Serverless::Function": 64, "AWS::Events::Rule": 64, "AWS::Events::Archive": 48, "AWS::SQS::Queue": 80,
    "AWS::SNS::Topic": 256, "AWS::DynamoDB::Table": 255, "AWS::CloudWatch::Alarm": 255,
    "AWS::Logs::LogGroup": 512, "AWS::Logs::ResourcePolicy": 255, "AWS::Logs::MetricFilter": 512,
}
TF_TYPE = {tf: cfn for cfn, tf in zip(CFN_NAME, TF_NAME, strict=True)}


def _scheme(name: str) -> dict[str, set[str]]:
    """The naming scheme, written out: every name both paths must give, by type."""
    functions = sorted(iam.FUNCTIONS)
    rules = ["recorder", "watchdog", "ecs-events-log", "availability", "restarts"]
    function_metrics = ["Errors", "Throttles", "DestinationDeliveryFailures", "AsyncEventsDropped"]
    rule_metrics = ["FailedInvocations", "InvocationsFailedToBeSentToDlq"]
    return {
        "AWS::Serverless::Function": {f"{name}-{f}" for f in functions},
        "AWS::DynamoDB::Table": {f"{name}-history"},
        "AWS::SNS::Topic": {f"{name}-alerts"},
        "AWS::SQS::Queue": {f"{name}-events-dlq", f"{name}-function-failures"},
        "AWS::Logs::LogGroup": {f"/aws/lambda/{name}-{f}" for f in functions} | {f"/aws/events/{name}/ecs"},
        "AWS::Logs::ResourcePolicy": {f"{name}-ecs-events-to-logs"},
        "AWS::Events::Rule": {f"{name}-{r}" for r in rules} | {f"{name}-heartbeat"},  # org: to the central bus
        "AWS::Events::Archive": {f"{name}-ecs"},
        "AWS::Logs::MetricFilter": {f"{name}-ecs-events-by-account"},
        "AWS::CloudWatch::Alarm": {f"{name}-events-dlq-not-empty", f"{name}-function-failures-not-empty"}
        | {f"{name}-{f}-{m}" for f in functions for m in function_metrics}
        | {f"{name}-{r}-{m}" for r in rules for m in rule_metrics}
        | {f"{name}-{s}" for s in ("slack-secret-unreadable", "alert-only-entry-unmatched", "sampler-not-running")}
        | {f"{name}-no-ecs-events-from-{a}" for a in ACCOUNTS.split(",")},
    }


def cfn_names(name: str, optional: bool = True) -> dict[str, set[str]]:
    """Every name template.yaml gives (every optional resource on, or the defaults), a resource's name in
    another's resolved (an alarm is named after what it watches)."""
    params = {"Name": name}
    if optional:
        params |= {"SlackWebhookSecretArn": SLACK_ARN, "SilenceAlarmAccountIds": ACCOUNTS,
                   "CentralEventBusArn": "arn:aws:events:eu-west-1:999988887777:event-bus/default"}
    template = iac.load_template(**params)
    evaluate = iac.Evaluator(template, iac.parameter_values(template, **params))
    raw = {logical: evaluate(r["Properties"].get(CFN_NAME[r["Type"]], f"<no {CFN_NAME[r['Type']]}>"))
           for logical, r in template["Resources"].items()
           if r["Type"] in CFN_NAME and ("Condition" not in r or evaluate.condition(r["Condition"]))}

    def resolve(value: str) -> str:
        return re.sub(r"\{(?:ref|getatt):(\w+)(?:\.QueueName)?\}", lambda m: resolve(raw[m.group(1)]), value)

    names: dict[str, set[str]] = {}
    for logical, value in raw.items():
        names.setdefault(template["Resources"][logical]["Type"], set()).add(resolve(value))
    return names


# what a Terraform resource's count is with every optional input on, and at the defaults
COUNTS = {
    "${local.has_slack_webhook ? 1 : 0}": (1, 0),
    "${local.has_any_slack_secret ? 1 : 0}": (1, 0),  # the default or a route's Slack secret (issue 35)
    "${length(local.silence_alarm_account_ids) > 0 ? 1 : 0}": (1, 0),
    "${local.create_history_table ? 1 : 0}": (1, 1),
    "${local.has_central_event_bus ? 1 : 0}": (1, 0),  # org (issue 32 item 4): the heartbeat rule
}


def _instances(body: dict[str, Any], optional: bool = True) -> list[dict[str, str]]:
    """One context per instance of a Terraform resource (its count or for_each, as far as names need it)."""
    each = body.get("for_each")
    locals_ = TF["locals"]
    if "count" in body:
        assert body["count"] in COUNTS, body["count"]
        return [{}] * COUNTS[body["count"]][0 if optional else 1]
    if each is None:
        return [{}]
    if each == "${local.functions}":
        return [{"each.key": k} for k in locals_["functions"]]
    if each == "${local.queue_alarms}":
        return [{"each.key": k, "each.value": v} for k, v in locals_["queue_alarms"].items()]
    if each == "${local.function_alarms}":
        return [{"each.value.function": f, "each.value.metric": m}
                for f in locals_["functions"] for m in locals_["function_alarm_text"]]
    if each == "${local.rule_alarms}":
        return [{"each.value.rule": r, "each.value.metric": m}
                for r in locals_["rule_names"] for m in locals_["rule_alarm_text"]]
    if each == "${toset(local.silence_alarm_account_ids)}":
        return [{"each.key": a} for a in ACCOUNTS.split(",")] if optional else []
    raise AssertionError(f"unknown for_each {each}")


def tf_names(name: str, optional: bool = True) -> dict[str, set[str]]:
    """Every name terraform/ gives, its expressions resolved for ``var.name = name``."""
    resources = TF["resource"]

    def resolve(expr: str, ctx: dict[str, str]) -> str:
        def token(match: re.Match[str]) -> str:
            ref = match.group(1)
            if ref == "var.name":
                return name
            if ref in ctx:
                return resolve(ctx[ref], ctx)
            if ref == "local.rule_names[each.value.rule]":
                return resolve(TF["locals"]["rule_names"][ctx["each.value.rule"]], {})
            if ref == "aws_lambda_function.this[each.value.function].function_name":
                return resolve(resources["aws_lambda_function"]["this"]["function_name"],
                               {"each.key": ctx["each.value.function"]})
            plain = re.fullmatch(r"(aws_\w+)\.(\w+)\.(?:name|function_name)", ref)
            assert plain, f"unresolved {ref} in {expr}"
            return resolve(resources[plain.group(1)][plain.group(2)][TF_NAME[plain.group(1)]], {})

        return re.sub(r"\$\{([^}]+)\}", token, expr)

    names: dict[str, set[str]] = {}
    for type_, attr in TF_NAME.items():
        for body in resources.get(type_, {}).values():
            for ctx in _instances(body, optional):
                names.setdefault(TF_TYPE[type_], set()).add(resolve(body.get(attr, f"<no {attr}>"), ctx))
    return names


@pytest.mark.parametrize("name", ["ecs-guardrail", "team-a-guardrail"])
def test_both_paths_give_every_resource_the_same_name(name: str) -> None:
    """Item 16: the same names whichever path deployed it (runbooks, dashboards, `--table`)."""
    scheme = _scheme(name)
    sam = {t: names for t, names in scheme.items() if t not in SAM_GENERATED}
    sam |= {t: {f"<no {prop}>"} for t, prop in SAM_GENERATED.items()}
    assert cfn_names(name) == sam
    assert tf_names(name) == scheme


def test_sam_never_names_what_holds_state() -> None:
    """An upgrade of a stack deployed before the naming scheme must not replace its table or queues:
    no TableName, no QueueName (a DeletionPolicy keeps a replaced table, never a replaced queue)."""
    template = iac.load_template()
    for logical, r in template["Resources"].items():
        if r["Type"] in SAM_GENERATED:
            assert SAM_GENERATED[r["Type"]] not in r["Properties"], logical


def test_the_same_alarms_at_the_defaults() -> None:
    """Issue 24 item 19: `make check-deploy` once read 23 Terraform alarms beside none from SAM (moto's
    CloudFormation creates no alarm). Both paths declare the same alarms at the defaults too (24: two
    queues, 4 x 4 functions, 2 x 5 rules, the sampler's liveness, the unmatched alert-only entry: 30 since
    the sweep's own lane, issue 32), and the same 33 with Slack and two silence accounts (the test above)."""
    cfn, tf = cfn_names("ecs-guardrail", optional=False), tf_names("ecs-guardrail", optional=False)
    assert {t: n for t, n in cfn.items() if t not in SAM_GENERATED} == {t: n for t, n in tf.items()
                                                                         if t not in SAM_GENERATED}
    assert cfn["AWS::CloudWatch::Alarm"] == tf["AWS::CloudWatch::Alarm"]
    assert len(cfn["AWS::CloudWatch::Alarm"]) == 30
    assert len(cfn_names("ecs-guardrail")["AWS::CloudWatch::Alarm"]) == 33
    assert "AWS::Logs::MetricFilter" not in cfn  # the per-account filter only with silence alarms


def test_one_name_parameter_with_the_same_validation() -> None:
    """The prefix is one input on both sides (SAM Name, terraform var.name), validated alike."""
    parameter = iac.load_template()["Parameters"]["Name"]
    variable = TF["variable"]["name"]
    # SAM: empty means the stack's name (issue 29 item 7: a second stack must not collide); terraform has
    # no stack, so its default stays the project's name
    assert parameter["Default"] == "" and variable["default"] == "ecs-guardrail"
    assert parameter["AllowedPattern"] == "^([A-Za-z][A-Za-z0-9-]{0,39})?$"
    assert "^[A-Za-z][A-Za-z0-9-]{0,39}$" in variable["validation"][0]["condition"]


def test_an_empty_name_is_the_stack_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two stacks in one region with the default Name get their own names: each its stack's."""
    monkeypatch.setitem(iac.PSEUDO, "AWS::StackName", "second-stack")
    assert set(cfn_names("")["AWS::Serverless::Function"]) == {
        "second-stack-recorder", "second-stack-watchdog", "second-stack-availability", "second-stack-sweep"}
    assert set(cfn_names("given")["AWS::Serverless::Function"]) == {"given-recorder", "given-watchdog",
                                                                "given-availability", "given-sweep"}


def test_names_fit_their_limits_at_the_longest_prefix() -> None:
    longest = "a" * 40
    for names in (cfn_names(longest), tf_names(longest)):
        for type_, values in names.items():
            for value in values:
                assert len(value) <= LIMIT[type_], (type_, value, len(value))


def test_iam_names_are_generated_on_both_paths() -> None:
    """IAM is global: a fixed role name would collide in a second region, so both generate it (SAM
    <stack>-<logical id>-<random>, terraform a name_prefix), and no CAPABILITY_NAMED_IAM is needed."""
    template = iac.load_template()
    for logical, resource in iac.resources_of_type(template, "AWS::IAM::Role").items():
        assert "RoleName" not in resource["Properties"], logical
    role = TF["resource"]["aws_iam_role"]["function"]
    assert "name" not in role and role["name_prefix"] == '${substr("${var.name}-${each.key}", 0, 37)}-'
    member_role = iac.load_terraform(iac.TERRAFORM / "examples" / "member-account")["resource"]["aws_iam_role"][
        "forward"
    ]
    assert "name" not in member_role and member_role["name_prefix"]
    assert (
        "RoleName"
        not in iac.load_template(iac.ROOT / "deploy" / "member-account.yaml")["Resources"]["ForwardRole"]["Properties"]
    )
    statement_id = iac.Evaluator(template, iac.parameter_values(template, SourceAccountIds="111111111111"))(
        template["Resources"]["CrossAccountBusPolicy"]["Properties"]["StatementId"]
    )
    assert len(statement_id) <= 64 and "ecs-guardrail" in statement_id
    # Terraform's regional names: var.name is at most 40 characters, so "<name>-availability" fits 64
    assert "{0,39}" in TF["variable"]["name"]["validation"][0]["condition"]
    assert 40 + 1 + max(len(f) for f in iam.FUNCTIONS) <= 64


def test_the_deploy_guide_shows_the_scheme() -> None:
    """docs/deploy.md's Names table has every suffix of the scheme, and the Logs resource policy quota."""
    docs = (iac.ROOT / "docs" / "deploy.md").read_text()
    section = docs[docs.index("## Names") :].split("\n## ", 1)[0]
    for names in _scheme("<name>").values():
        for value in names:
            generic = re.sub(r"-(recorder|watchdog|availability|sweep)$", "-<function>", value)
            if "<name>-no-ecs-events-from-" in value:
                generic = "<name>-no-ecs-events-from-<account>"
            if generic.endswith(("Errors", "Throttles", "Failures", "Dropped", "Invocations", "Dlq")) \
                    and "-not-empty" not in generic:
                continue  # alarms per function and rule: the table gives the pattern and an example
            assert f"`{generic}`" in section or f"`{value}`" in section or value in section, value
    assert "test_parity_names.py" in section and "**10**" in section
