"""template.yaml and terraform/ deploy the same system; this module checks
the inputs: the same parameters and variables, defaults, validation on both sides, outputs.

Runs without AWS; see parity.py and conftest.py for what these modules share.
"""

from __future__ import annotations

import re
from pathlib import Path

import iac
import pytest
from parity import SLACK_ARN, TEMPLATE, TF, TF_ONLY_VARIABLES, _normal_default, cfn_accepts, cfn_statements, snake


def test_same_parameters_and_defaults() -> None:
    cfn = {snake(name): spec for name, spec in TEMPLATE["Parameters"].items()}
    tf = {name: spec for name, spec in TF["variable"].items() if name not in TF_ONLY_VARIABLES}
    assert set(cfn) == set(tf), "parameters present on one side only"
    for name in cfn:
        if name == "name":  # SAM: empty = the stack's name (test_parity_names); terraform: ecs-guardrail
            continue
        assert _normal_default(cfn[name].get("Default", "")) == _normal_default(tf[name].get("default", "")), name
    assert cfn["alert_only_clusters"]["Default"] == "production"


def test_every_input_is_validated_and_described() -> None:
    for name, spec in TEMPLATE["Parameters"].items():
        assert {"AllowedPattern", "AllowedValues"} & set(spec), f"{name} has no AllowedPattern/AllowedValues"
        assert spec.get("Description"), name
    for name, spec in TF["variable"].items():
        assert spec.get("description") and spec.get("type"), name
        if name in TF_ONLY_VARIABLES or spec["type"] == "bool":
            continue  # a bool is validated by its type; the artifact path and tags are free-form
        assert spec.get("validation"), f"variable {name} has no validation block"


# One row per case: (parameter, value, accepted?). Both sides must agree with the expectation.
VALIDATION_CASES = [
    # alert routes (issue 35 item 4)
    ("AlertRoutes", "", True),
    ("AlertRoutes", "prod-*=oncall,dev-*=dev-alerts", True),
    ("AlertRoutes", "team?=a/b.c", True),
    ("AlertRoutes", "prod-*", False),
    ("AlertRoutes", "prod-* =oncall", False),
    ("AlertRoutes", "prod-*=oncall,", False),
    ("AlertRoutes", "=oncall", False),
    ("AlertChannelTopicArns", "", True),
    ("AlertChannelTopicArns", "arn:aws:sns:eu-west-1:111122223333:oncall", True),
    ("AlertChannelTopicArns",
     "arn:aws:sns:eu-west-1:111122223333:oncall,arn:aws-us-gov:sns:us-gov-west-1:111122223333:dev-alerts", True),
    ("AlertChannelTopicArns", "arn:aws:sns:eu-west-1:1111:oncall", False),
    ("AlertChannelTopicArns", "arn:aws:sns:eu-west-1:111122223333:oncall, arn:aws:sns:eu-west-1:111122223333:a",
     False),
    ("AlertChannelTopicArns", "arn:aws:secretsmanager:eu-west-1:111122223333:secret:dev-alerts-AbCdEf", False),
    ("AlertChannelSecretArns", "", True),
    ("AlertChannelSecretArns", "arn:aws:secretsmanager:eu-west-1:111122223333:secret:dev-alerts-AbCdEf", True),
    ("AlertChannelSecretArns", "arn:aws:secretsmanager:eu-west-1:111122223333:secret:oncall", False),
    ("AlertChannelSecretArns", "arn:aws:sns:eu-west-1:111122223333:oncall", False),
    ("Name", "ecs-guardrail", True),
    ("Name", "a" * 40, True),
    ("Name", "a" * 41, False),
    ("Name", "1guardrail", False),
    ("Name", "ecs_guardrail", False),
    ("ExistingHistoryTableName", "", True),
    ("ExistingHistoryTableName", "ecs-guardrail-history", True),
    ("ExistingHistoryTableName", "ecs-guardrail-HistoryTable-1A2B3C4D5E6F", True),
    ("ExistingHistoryTableName", "ab", False),
    ("ExistingHistoryTableName", "a" * 256, False),
    ("ExistingHistoryTableName", "arn:aws:dynamodb:eu-west-1:111122223333:table/x", False),
    ("AlertOnlyClusters", "production", True),
    ("AlertOnlyClusters", "", True),
    ("AlertOnlyClusters", "prod-*,staging_eu,team?", True),
    ("AlertOnlyClusters", "prod, staging", False),
    ("AlertOnlyClusters", "arn:aws:ecs:eu-west-1:111122223333:cluster/prod", True),
    ("AlertOnlyClusters", "staging,arn:aws-us-gov:ecs:us-gov-west-1:111122223333:cluster/prod", True),
    ("AlertOnlyClusters", "arn:aws:ecs:eu-west-1:111122223333:service/prod/web", False),
    ("AlertOnlyClusters", "arn:aws:ecs:eu-west-1:1111:cluster/prod", False),
    ("AlertOnlyClusters", "prod,,staging", False),
    ("AlertOnlyClusters", "production#prod", False),
    # item 11: the explicit "no alert-only cluster", alone only
    ("AlertOnlyClusters", "none", True),
    ("AlertOnlyClusters", "NONE", True),
    ("AlertOnlyClusters", "none,production", False),
    ("AlertOnlyClusters", "production,None", False),
    ("AlertOnlyClusters", "nonexistent,xnone", True),
    # issue 35: the log groups whose last lines alerts quote (FilterLogEvents granted on them only)
    ("CrashLogGroupPattern", "/ecs/*", True),
    ("CrashLogGroupPattern", "/aws/ecs/containerinsights/prod-?/app", True),
    ("CrashLogGroupPattern", "", False),
    ("CrashLogGroupPattern", "/ecs/a b", False),
    ("CrashLogGroupPattern", "arn:aws:logs:eu-west-1:111122223333:log-group:/ecs/*", False),
    ("CrashThreshold", "1", True),
    ("CrashThreshold", "1000", True),
    ("CrashThreshold", "0", False),
    ("CrashThreshold", "1001", False),
    ("CrashThreshold", "2.5", False),
    ("CrashWindowMinutes", "1440", True),
    ("CrashWindowMinutes", "1441", False),
    ("CrashWindowMinutes", "0", False),
    ("MaxActionFraction", "0", True),
    ("MaxActionFraction", "1", True),
    ("MaxActionFraction", "0.35", True),
    ("MaxActionFraction", "1.5", False),
    ("MaxActionFraction", "-0.1", False),
    ("MinActionsAllowed", "0", True),
    ("MinActionsAllowed", "1000", True),
    ("MinActionsAllowed", "-1", False),
    ("ClientErrorRatio", "0.05", True),
    ("ClientErrorRatio", "1", True),
    ("ClientErrorRatio", ".5", True),
    ("ClientErrorRatio", "0", False),
    ("ClientErrorRatio", "0.0", False),
    ("ClientErrorRatio", "1.5", False),
    ("ClientErrorRatio", "-0.1", False),
    ("FleetSignalMinFailures", "1", True),
    ("FleetSignalMinFailures", "0", False),
    ("DryRun", "true", True),
    ("DryRun", "false", True),
    ("DryRun", "yes", False),
    ("RunbookUrl", "", True),
    ("RunbookUrl", "https://wiki.example.com/runbooks/{cluster}/{service}", True),
    ("RunbookUrl", "http://wiki.example.com/{service}", False),
    ("RunbookUrl", "https://wiki.example.com/a b", False),
    ("SnsFormat", "chatbot", True),
    ("SnsFormat", "text", True),
    ("SnsFormat", "json", False),
    ("Recovery", "manual", True),
    ("Recovery", "probe", True),
    ("Recovery", "auto", False),
    ("ProbeDelayMinutes", "1", True),
    ("ProbeDelayMinutes", "1440", True),
    ("ProbeDelayMinutes", "0", False),
    ("ProbeDelayMinutes", "1441", False),
    ("ProbeMaxDelayMinutes", "240", True),
    ("ProbeMaxDelayMinutes", "1440", True),
    ("ProbeMaxDelayMinutes", "1441", False),
    ("ProbePassMinutes", "10", True),
    ("ProbePassMinutes", "240", True),
    ("ProbePassMinutes", "241", False),
    ("LogLevel", "DEBUG", True),
    ("LogLevel", "TRACE", False),
    ("TracingMode", "Active", True),
    ("TracingMode", "PassThrough", True),
    ("TracingMode", "active", False),
    ("LogRetentionDays", "14", True),
    ("LogRetentionDays", "15", False),
    ("ArchiveRetentionDays", "0", True),
    ("ArchiveRetentionDays", "3650", True),
    ("ArchiveRetentionDays", "3651", False),
    ("SampleSchedule", "rate(1 minute)", True),
    ("SampleSchedule", "rate(5 minutes)", True),
    ("SampleSchedule", "cron(0/2 * * * ? *)", True),
    ("SampleSchedule", "rate(1 minutes)", False),
    ("SampleSchedule", "every minute", False),
    ("SampleSchedule", "rate(12 minutes)", True),
    ("SampleSchedule", "rate(1 hours)", False),
    ("SampleLookbackMinutes", "180", True),
    ("SampleLookbackMinutes", "181", False),
    ("HistoryTtlDays", "3650", True),
    ("HistoryTtlDays", "0", False),
    ("HeartbeatMinutes", "5", True),
    ("HeartbeatMinutes", "1440", True),
    ("HeartbeatMinutes", "4", False),
    ("HeartbeatMinutes", "1441", False),
    ("WatchdogReservedConcurrency", "1", True),
    ("WatchdogReservedConcurrency", "100", True),
    ("WatchdogReservedConcurrency", "0", True),  # 0: unreserved (issue 24 item 18)
    ("WatchdogReservedConcurrency", "101", False),
    ("SilenceAlarmAccountIds", "", True),
    ("SilenceAlarmAccountIds", "111122223333,444455556666", True),
    ("SilenceAlarmAccountIds", "1234", False),
    ("SilenceAlarmMinutes", "5", True),
    ("SilenceAlarmMinutes", "4", False),
    ("SlackWebhookSecretArn", SLACK_ARN, True),
    ("SlackWebhookSecretArn", "", True),
    ("SlackWebhookSecretArn", "https://hooks.slack.com/services/T000/B000/XXXX", False),
    # item 7: a partial ARN (no -XXXXXX suffix) matches no IAM Resource: rejected on both sides
    ("SlackWebhookSecretArn", "arn:aws:secretsmanager:eu-west-1:111122223333:secret:ecs-guardrail/slack", False),
    ("AlertEmail", "oncall@example.com", True),
    ("AlertEmail", "", True),
    ("AlertEmail", "a@b,c@d.e", False),
    ("SourceAccountIds", "111122223333,444455556666", True),
    ("SourceAccountIds", "", True),
    ("SourceAccountIds", "1234", False),
    # org (issue 32 item 4)
    ("CentralAlertTopicArn", "arn:aws:sns:eu-west-1:999988887777:org-alerts", True),
    ("CentralAlertTopicArn", "", True),
    ("CentralAlertTopicArn", "arn:aws:sqs:eu-west-1:999988887777:org-alerts", False),
    ("CentralAlertTopicArn", "org-alerts", False),
    ("AccountName", "payments-prod", True),
    ("AccountName", "", True),
    ("AccountName", "-leading-hyphen", False),
    ("AccountName", "has space", False),
    ("AccountName", "x" * 51, False),
    ("CentralEventBusArn", "arn:aws:events:eu-west-1:999988887777:event-bus/default", True),
    ("CentralEventBusArn", "", True),
    ("CentralEventBusArn", "arn:aws:sns:eu-west-1:999988887777:default", False),
]


def test_every_parameter_has_validation_cases() -> None:
    assert {name for name, _, _ in VALIDATION_CASES} == set(TEMPLATE["Parameters"])
    assert {(n, ok) for n, _, ok in VALIDATION_CASES} >= {(n, False) for n in TEMPLATE["Parameters"]}


@pytest.mark.parametrize(("name", "value", "accepted"), VALIDATION_CASES)
def test_cloudformation_validation(name: str, value: str, accepted: bool) -> None:
    assert cfn_accepts(name, value) is accepted


@pytest.mark.parametrize(
    ("name", "low", "high"),
    [
        ("CrashThreshold", 1, 1000),
        ("CrashWindowMinutes", 1, 1440),
        ("MinActionsAllowed", 0, 1000),
        ("FleetSignalMinFailures", 1, 1000),
        ("ArchiveRetentionDays", 0, 3650),
        ("SampleLookbackMinutes", 1, 180),
        ("ProbeDelayMinutes", 1, 1440),
        ("ProbeMaxDelayMinutes", 1, 1440),
        ("ProbePassMinutes", 1, 240),
        ("HistoryTtlDays", 1, 3650),
        ("HeartbeatMinutes", 5, 1440),
        ("WatchdogReservedConcurrency", 0, 100),
        ("SilenceAlarmMinutes", 5, 1440),
    ],
)
def test_integer_patterns_accept_exactly_their_range(name: str, low: int, high: int) -> None:
    accepted = {n for n in range(-2, 4000) if cfn_accepts(name, str(n))}
    assert accepted == set(range(low, high + 1))
    assert not cfn_accepts(name, f"0{max(low, 1)}")  # no leading zeros


def test_terraform_validation_agrees(tf_variables_only: Path) -> None:
    """Terraform reports every invalid variable of a run, so rounds of one case per variable suffice."""
    rounds: list[dict[str, tuple[str, bool]]] = []
    for name, value, accepted in VALIDATION_CASES:
        for round_ in rounds:
            if name not in round_:
                round_[name] = (value, accepted)
                break
        else:
            rounds.append({name: (value, accepted)})
    for round_ in rounds:
        args = [a for n, (v, _) in round_.items() for a in ("-var", f"{snake(n)}={v}")]
        result = iac.run_terraform(tf_variables_only, "plan", "-input=false", "-lock=false", *args)
        output = result.stdout + result.stderr
        rejected = set(
            re.findall(
                r"Error: Invalid value for (?:input )?variable\s+"
                r'on variables\.tf line \d+:\n\s*\d+: variable "(\w+)"',
                output,
            )
        )
        assert rejected or result.returncode == 0, output
        for name, (value, accepted) in round_.items():
            assert (snake(name) not in rejected) is accepted, f"{name}={value!r}: terraform said\n{output}"
        if all(ok for _, ok in round_.values()):
            assert result.returncode == 0, output


def test_slack_secret_needs_the_full_arn() -> None:
    """Item 7: a partial ARN would match no IAM Resource; both sides require the -XXXXXX suffix."""
    partial = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:ecs-guardrail/slack-webhook"
    assert not cfn_accepts("SlackWebhookSecretArn", partial)
    assert cfn_accepts("SlackWebhookSecretArn", SLACK_ARN)
    tf_condition = TF["variable"]["slack_webhook_secret_arn"]["validation"][0]["condition"]
    assert "-[A-Za-z0-9]{6})?$" in tf_condition
    assert "-[A-Za-z0-9]{6})?$" in TEMPLATE["Parameters"]["SlackWebhookSecretArn"]["AllowedPattern"]
    (statement,) = [
        s for s in cfn_statements("watchdog", SlackWebhookSecretArn=SLACK_ARN) if s.get("Sid") == "SlackWebhookSecret"
    ]
    assert statement["Resource"] == [SLACK_ARN]  # exactly the ARN given, which now is the full one


def test_slack_webhook_is_only_a_secret_reference() -> None:
    for name, spec in TEMPLATE["Parameters"].items():
        if "slack" in name.lower() or "webhook" in name.lower():
            assert name == "SlackWebhookSecretArn" and "secretsmanager" in spec["AllowedPattern"]
            assert spec.get("NoEcho") is None  # an ARN is not a secret; the URL never passes here
    assert not [n for n in TF["variable"] if "webhook" in n and n != "slack_webhook_secret_arn"]
    assert "AWS::SecretsManager::Secret" not in {r["Type"] for r in TEMPLATE["Resources"].values()}


def test_outputs_match() -> None:
    cfn = {snake(name) for name in TEMPLATE["Outputs"]}
    assert cfn == set(TF["output"])
    for name, output in TEMPLATE["Outputs"].items():
        assert output.get("Description"), f"output {name} has no Description"
    for name, output in TF["output"].items():
        assert output.get("description"), f"output {name} has no description"


def test_terraform_readme_lists_every_variable_and_output() -> None:
    """Item 13: terraform/README.md (terraform-aws-modules style) has a row for each input and output,
    with its default, and no row for anything that no longer exists."""
    readme = (iac.TERRAFORM / "README.md").read_text()
    inputs = readme[readme.index("## Inputs") : readme.index("## Outputs")]
    outputs = readme[readme.index("## Outputs") :]
    listed_inputs = set(re.findall(r'<a name="input_(\w+)"></a>', inputs))
    listed_outputs = set(re.findall(r'<a name="output_(\w+)"></a>', outputs))
    assert listed_inputs == set(TF["variable"])
    assert listed_outputs == set(TF["output"])
    for name, spec in TF["variable"].items():
        (row,) = [line for line in inputs.splitlines() if f'name="input_{name}"' in line]
        if "default" in spec:
            assert _normal_default(spec["default"]) in row or spec["default"] in ("", {}), (name, row)
    for name in TF["output"]:
        (row,) = [line for line in outputs.splitlines() if f'name="output_{name}"' in line]
        assert TF["output"][name]["description"] in row, name
