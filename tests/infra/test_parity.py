"""template.yaml and terraform/ deploy the same system, and grant exactly what the code calls.

Everything here runs without AWS. Tests that need the terraform binary (variable validation, the
alert-only deny evaluated by terraform itself) skip with a reason where none is on PATH; pytest's
``-ra`` prints it, so nothing is skipped silently.
"""

from __future__ import annotations

import fnmatch
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from ecs_guardrail import iam

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the helpers beside this file, any import mode
import iac  # noqa: E402

TEMPLATE = iac.load_template()
TF = iac.load_terraform()
PATTERNS = json.loads(iac.PATTERNS.read_text())

# function name -> logical ids in template.yaml
CFN_FUNCTION = {
    "recorder": "RecorderFunction",
    "watchdog": "WatchdogFunction",
    "availability": "AvailabilityFunction",
}
CFN_ROLE = {"recorder": "RecorderRole", "watchdog": "WatchdogRole", "availability": "AvailabilityRole"}
CFN_LOG_GROUP = {
    "recorder": "RecorderLogGroup",
    "watchdog": "WatchdogLogGroup",
    "availability": "AvailabilityLogGroup",
}
TF_POLICY = {"recorder": "recorder", "watchdog": "watchdog", "availability": "availability"}

# Terraform-only inputs, each with the SAM counterpart that is not a parameter.
TF_ONLY_VARIABLES = {
    "name": "the stack name (AWS::StackName) prefixes every resource",
    "lambda_zip_path": "Globals.Function.CodeUri",
    "tags": "sam deploy --tags",
    "deletion_protection": "DeletionPolicy: RetainExceptOnCreate on HistoryTable (protection would fail a first "
                           "create's rollback)",
}

# What the Lambda platform needs besides the code's calls: the function's own log group, X-Ray
# segments (Tracing: Active) and the on-failure destination, which Lambda sends to with the role.
PLATFORM = {
    ("own_log_group", "logs:CreateLogStream"),
    ("own_log_group", "logs:PutLogEvents"),
    ("any", "xray:PutTraceSegments"),
    ("any", "xray:PutTelemetryRecords"),
    ("failure_queue", "sqs:SendMessage"),
}
SLACK_ARN = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:ecs-guardrail/slack-AbCdEf"


def snake(pascal: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", pascal).lower()


def declared(function: str) -> set[tuple[str, str]]:
    return {(kind, action) for kind, actions in iam.handler_permissions(function).items() for action in actions}


# ---------------------------------------------------------------------------------------------- patterns


def test_rule_patterns_equal_events_patterns_json() -> None:
    """The four copies of the patterns agree: routing.PATTERNS (replay), events/patterns.json, both templates."""
    from ecs_guardrail.routing import PATTERNS as CODE_PATTERNS

    assert set(PATTERNS) == {"recorder", "watchdog"}
    assert json.loads(json.dumps(CODE_PATTERNS)) == PATTERNS
    rules = iac.resources_of_type(TEMPLATE, "AWS::Events::Rule")
    assert rules["RecorderRule"]["Properties"]["EventPattern"] == PATTERNS["recorder"]
    assert rules["WatchdogRule"]["Properties"]["EventPattern"] == PATTERNS["watchdog"]

    tf_rules = TF["resource"]["aws_cloudwatch_event_rule"]
    assert json.loads(iac.heredoc(tf_rules["recorder"]["event_pattern"])) == PATTERNS["recorder"]
    assert json.loads(iac.heredoc(tf_rules["watchdog"]["event_pattern"])) == PATTERNS["watchdog"]


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
        (("Container Restarts",), None),  # the sampler's restart observations (source ecs-guardrail)
    ]
    assert watchdog["source"] == ["aws.ecs", "ecs-guardrail"]
    assert watchdog["$or"][-1] == {"source": ["ecs-guardrail"], "detail-type": ["Container Restarts"]}
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
    assert cfn_group["LogGroupName"]["Fn::Sub"].startswith("/aws/events/")
    assert cfn_group["RetentionInDays"] == {"Ref": "LogRetentionDays"}
    tf_group = TF["resource"]["aws_cloudwatch_log_group"]["ecs_events"]
    assert tf_group["name"].startswith("/aws/events/")
    assert tf_group["retention_in_days"] == "${var.log_retention_days}"


# ---------------------------------------------------------------------------------------------- parameters


def _normal_default(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def test_same_parameters_and_defaults() -> None:
    cfn = {snake(name): spec for name, spec in TEMPLATE["Parameters"].items()}
    tf = {name: spec for name, spec in TF["variable"].items() if name not in TF_ONLY_VARIABLES}
    assert set(cfn) == set(tf), "parameters present on one side only"
    for name in cfn:
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
]


def cfn_accepts(name: str, value: str) -> bool:
    spec = TEMPLATE["Parameters"][name]
    if spec["Type"] == "CommaDelimitedList":  # the pattern applies to each item
        item_spec = {k: v for k, v in spec.items() if k != "Type"}
        return all(_accepts_one(item_spec, item) for item in value.split(","))
    return _accepts_one(spec, value)


def _accepts_one(spec: dict[str, Any], value: str) -> bool:
    if "AllowedValues" in spec and value not in {str(v) for v in spec["AllowedValues"]}:
        return False
    if "AllowedPattern" in spec and not re.fullmatch(spec["AllowedPattern"], value):
        return False
    if spec.get("Type") == "Number":
        try:
            number = float(value)
        except ValueError:
            return False
        if "MinValue" in spec and number < float(spec["MinValue"]):
            return False
        if "MaxValue" in spec and number > float(spec["MaxValue"]):
            return False
    return True


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


@pytest.fixture(scope="module")
def tf_variables_only(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if iac.terraform_binary() is None:
        pytest.skip(
            "terraform is not on PATH: variable validation and the Terraform deny are proven by "
            "the template side only (install terraform to run these)"
        )
    return iac.terraform_module_copy(tmp_path_factory.mktemp("tfvars"), "variables.tf", "alert_only.tf")


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


# ---------------------------------------------------------------------------------------------- functions


def _cfn_value(value: Any) -> str:
    if isinstance(value, dict) and "Ref" in value:
        ref = value["Ref"]
        if ref in TEMPLATE["Parameters"]:
            return f"var:{snake(ref)}"
        return {"HistoryTable": "resource:history_table", "AlertTopic": "resource:alert_topic"}[ref]
    assert isinstance(value, str), value
    return value


def _tf_value_ref(value: Any) -> str:
    if isinstance(value, bool | int | float):
        return _normal_default(value)
    match = re.fullmatch(r"\$\{(?:tostring\()?var\.(\w+)\)?\}", value)
    if match:
        return f"var:{match.group(1)}"
    resources = {
        "${aws_dynamodb_table.history.name}": "resource:history_table",
        "${aws_sns_topic.alerts.arn}": "resource:alert_topic",
    }
    if value in resources:
        return resources[value]
    assert "${" not in value, f"unexpected expression {value}"
    return value


# What the brief's contract says each function reads (plus Powertools').
CONTRACT_ENV = {
    "recorder": {"HISTORY_TABLE", "HISTORY_TTL_DAYS"},
    "watchdog": {
        "ALERT_ONLY_CLUSTERS",
        "CRASH_THRESHOLD",
        "CRASH_WINDOW_MINUTES",
        "MAX_ACTION_FRACTION",
        "MIN_ACTIONS_ALLOWED",
        "FLEET_SIGNAL_MIN_FAILURES",
        "CLIENT_ERROR_RATIO",
        "DRY_RUN",
        "HISTORY_TABLE",
        "HISTORY_TTL_DAYS",
        "ALERT_TOPIC_ARN",
        "SLACK_WEBHOOK_SECRET_ARN",
        "RUNBOOK_URL",
        "SNS_FORMAT",
        "RECOVERY",
        "PROBE_DELAY_MINUTES",
        "PROBE_MAX_DELAY_MINUTES",
        "PROBE_PASS_MINUTES",
    },
    "availability": {"HISTORY_TABLE", "HISTORY_TTL_DAYS", "SAMPLE_LOOKBACK_MINUTES"},
}
POWERTOOLS_ENV = {"POWERTOOLS_SERVICE_NAME", "POWERTOOLS_METRICS_NAMESPACE", "POWERTOOLS_LOG_LEVEL"}


@pytest.mark.parametrize("function", sorted(CFN_FUNCTION))
def test_same_environment_reaches_each_function(function: str) -> None:
    cfn = {k: _cfn_value(v) for k, v in iac.function_environment(TEMPLATE, CFN_FUNCTION[function]).items()}
    tf = {k: _tf_value_ref(v) for k, v in TF["locals"]["functions"][function]["environment"].items()}
    assert cfn == tf
    assert set(cfn) == CONTRACT_ENV[function] | POWERTOOLS_ENV
    assert cfn["POWERTOOLS_SERVICE_NAME"] == "ecs-guardrail"
    assert cfn["POWERTOOLS_METRICS_NAMESPACE"] == "EcsGuardrail"


def test_environment_names_are_settings_the_code_reads() -> None:
    try:
        from ecs_guardrail.settings import SETTING_NAMES
    except ImportError as exc:  # settings.py lives on main; at merge this runs
        pytest.skip(f"ecs_guardrail.settings not importable on this branch ({exc})")
    for function in CFN_FUNCTION:
        names = set(TF["locals"]["functions"][function]["environment"]) - POWERTOOLS_ENV
        assert names <= SETTING_NAMES, names - SETTING_NAMES


@pytest.mark.parametrize("function", sorted(CFN_FUNCTION))
def test_same_function_configuration(function: str) -> None:
    logical = CFN_FUNCTION[function]
    props = TEMPLATE["Resources"][logical]["Properties"]
    tf_fn = TF["resource"]["aws_lambda_function"]["this"]
    spec = TF["locals"]["functions"][function]
    assert props["Handler"] == spec["handler"] == iam.FUNCTIONS[function]
    assert iac.function_property(TEMPLATE, logical, "Runtime") == tf_fn["runtime"] == "python3.12"
    assert iac.function_property(TEMPLATE, logical, "Architectures") == tf_fn["architectures"] == ["arm64"]
    assert iac.function_property(TEMPLATE, logical, "MemorySize") == tf_fn["memory_size"]
    assert iac.function_property(TEMPLATE, logical, "Tracing") == {"Ref": "TracingMode"}
    assert tf_fn["tracing_config"][0]["mode"] == "${var.tracing_mode}"
    assert props["Timeout"] == spec["timeout"]
    invoke = props["EventInvokeConfig"]
    assert invoke["MaximumRetryAttempts"] == spec["max_retry_attempt"]
    assert invoke["MaximumEventAgeInSeconds"] == spec["max_event_age"]
    assert invoke["DestinationConfig"]["OnFailure"] == {
        "Type": "SQS",
        "Destination": {"Fn::GetAtt": ["FunctionFailureQueue", "Arn"]},
    }
    assert props["LoggingConfig"]["LogGroup"] == {"Ref": CFN_LOG_GROUP[function]}
    # one code artifact on both sides
    code_uri = iac.function_property(TEMPLATE, logical, "CodeUri")
    assert Path(code_uri).name == Path(TF["variable"]["lambda_zip_path"]["default"]).name
    assert tf_fn["filename"] == "${var.lambda_zip_path}"


def test_tf_function_wiring() -> None:
    res = TF["resource"]
    assert res["aws_lambda_function"]["this"]["for_each"] == "${local.functions}"
    on_failure = res["aws_lambda_function_event_invoke_config"]["this"]["destination_config"][0]["on_failure"][0]
    assert on_failure["destination"] == "${aws_sqs_queue.function_failures.arn}"
    assert set(TF["locals"]["functions"]) == set(iam.FUNCTIONS)


# ---------------------------------------------------------------------------------------------- IAM


def _classify_cfn(resource: str, function: str) -> str:
    own_log = f"{{getatt:{CFN_LOG_GROUP[function]}.Arn}}"
    exact = {
        "{getatt:HistoryTable.Arn}": "history_table",
        "arn:aws:ecs:eu-west-1:111122223333:service/*/*": "ecs_service",
        "arn:aws:ecs:eu-west-1:111122223333:service-deployment/*/*/*": "ecs_service_deployment",
        "arn:aws:events:eu-west-1:111122223333:event-bus/default": "default_bus",
        "arn:aws:application-autoscaling:eu-west-1:111122223333:scalable-target/*": "scalable_target",
        "*": "any",
        "{ref:AlertTopic}": "alert_topic",
        SLACK_ARN: "webhook_secret",
        own_log: "own_log_group",
        "{getatt:FunctionFailureQueue.Arn}": "failure_queue",
    }
    assert resource in exact, f"{function}: unclassified resource {resource}"
    return exact[resource]


def _classify_tf(resource: str, function: str) -> str:
    exact = {
        "${aws_dynamodb_table.history.arn}": "history_table",
        "${local.ecs_service_arns}": "ecs_service",
        "${local.ecs_service_deployment_arns}": "ecs_service_deployment",
        "${local.default_bus_arn}": "default_bus",
        "${local.scalable_target_arns}": "scalable_target",
        "*": "any",
        "${aws_sns_topic.alerts.arn}": "alert_topic",
        "${statement.value}": "webhook_secret",
        f'${{aws_cloudwatch_log_group.function[\\"{function}\\"].arn}}:*': "own_log_group",
        f'${{aws_cloudwatch_log_group.function["{function}"].arn}}:*': "own_log_group",
        "${aws_cloudwatch_log_group.function[each.key].arn}:*": "own_log_group",  # the base document
        "${aws_sqs_queue.function_failures.arn}": "failure_queue",
    }
    assert resource in exact, f"{function}: unclassified resource {resource}"
    return exact[resource]


def cfn_statements(function: str, **params: str) -> list[dict[str, Any]]:
    evaluator = iac.Evaluator(TEMPLATE, iac.parameter_values(TEMPLATE, **params))
    role = evaluator(TEMPLATE["Resources"][CFN_ROLE[function]]["Properties"])
    return [s for policy in role["Policies"] for s in policy["PolicyDocument"]["Statement"]]


def _tf_document_name(reference: str) -> tuple[str, str | None]:
    """``${data.aws_iam_policy_document.NAME["KEY"].json}`` -> (NAME, KEY or None)."""
    match = re.fullmatch(r'\$\{data\.aws_iam_policy_document\.(\w+)(?:\[\\?"(\w+)\\?"\])?\.json\}', reference)
    assert match, reference
    return match.group(1), match.group(2)


def tf_document_statements(name: str) -> list[dict[str, Any]]:
    """A policy document's statements, its source_policy_documents' included; a dynamic one counts."""
    doc = TF["data"]["aws_iam_policy_document"][name]
    statements = []
    for reference in doc.get("source_policy_documents", []):
        source, _key = _tf_document_name(reference)
        statements += tf_document_statements(source)
    statements += iac.as_list(doc.get("statement", []))
    for dynamic in iac.as_list(doc.get("dynamic", [])):
        statements += iac.as_list(dynamic["statement"]["content"])
    return statements


def tf_statements(function: str) -> list[dict[str, Any]]:
    """Statements of the function's policy documents (the watchdog's deny included)."""
    names = [TF_POLICY[function]] + (["watchdog_deny_alert_only"] if function == "watchdog" else [])
    return [s for name in names for s in tf_document_statements(name)]


def test_tf_base_document_is_each_functions_own() -> None:
    """The platform document is per function (its own log group) and every policy sources it."""
    assert TF["data"]["aws_iam_policy_document"]["platform"]["for_each"] == "${local.functions}"
    for function in iam.FUNCTIONS:
        sources = TF["data"]["aws_iam_policy_document"][TF_POLICY[function]]["source_policy_documents"]
        assert [_tf_document_name(r) for r in sources] == [("platform", function)]


def granted(statements: list[dict[str, Any]], classify, function: str, effect: str = "Allow") -> set[tuple[str, str]]:
    pairs = set()
    for s in statements:
        if s.get("Effect", s.get("effect", "Allow")) != effect:
            continue
        actions = iac.as_list(s.get("Action", s.get("actions")))
        resources = iac.as_list(s.get("Resource", s.get("resources")))
        pairs |= {(classify(r, function), a) for r in resources for a in actions}
    return pairs


@pytest.mark.parametrize("function", sorted(iam.FUNCTIONS))
def test_granted_actions_equal_declared_actions(function: str) -> None:
    expected = declared(function) | PLATFORM
    assert granted(cfn_statements(function, SlackWebhookSecretArn=SLACK_ARN), _classify_cfn, function) == expected
    assert granted(tf_statements(function), _classify_tf, function) == expected


def test_slack_secret_is_granted_only_when_configured() -> None:
    without = granted(cfn_statements("watchdog", SlackWebhookSecretArn=""), _classify_cfn, "watchdog")
    assert without == (declared("watchdog") | PLATFORM) - {("webhook_secret", "secretsmanager:GetSecretValue")}
    dynamic = TF["data"]["aws_iam_policy_document"]["watchdog"]["dynamic"]
    assert (
        iac.as_list(dynamic)[0]["statement"]["for_each"]
        == "${local.has_slack_webhook ? [var.slack_webhook_secret_arn] : []}"
    )
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
    """Item 5: ecs:TagResource is conditioned on aws:TagKeys = the previous-desired-count tag only."""
    from ecs_guardrail.adapters.ecs import PREVIOUS_COUNT_TAG
    from ecs_guardrail.core.policy import OPT_OUT_TAG

    (cfn,) = _tag_statements_cfn()
    assert cfn["Action"] == ["ecs:TagResource"]
    assert cfn["Condition"]["ForAllValues:StringEquals"] == {"aws:TagKeys": [PREVIOUS_COUNT_TAG]}
    assert cfn["Condition"]["Null"] == {"aws:TagKeys": "false"}  # a request without tag keys is no match
    (tf,) = [s for s in tf_statements("watchdog") if "ecs:TagResource" in s["actions"] and "effect" not in s]
    assert tf["actions"] == ["ecs:TagResource"]
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
    DescribeServiceDeployments (on the service deployment), granted to the watchdog only, in both templates
    (the declared-equals-granted tests above hold the rest)."""
    wanted = {("ecs_service", "ecs:ListServiceDeployments"),
              ("ecs_service_deployment", "ecs:DescribeServiceDeployments")}
    for function in iam.FUNCTIONS:
        cfn = granted(cfn_statements(function), _classify_cfn, function)
        tf = granted(tf_statements(function), _classify_tf, function)
        new = {(k, a) for k, a in cfn | tf if "ServiceDeployment" in a}
        assert new == (wanted if function == "watchdog" else set()), function


# ---------------------------------------------------------------------------------------------- the deny


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


# ---------------------------------------------------------------------------------------------- failure paths


def test_every_rule_target_has_dlq_and_retry_policy() -> None:
    cfn_rules = iac.resources_of_type(TEMPLATE, "AWS::Events::Rule")
    assert set(cfn_rules) == {"RecorderRule", "WatchdogRule", "EcsEventsLogRule", "AvailabilityScheduleRule"}
    cfn_retry = {}
    for name, rule in cfn_rules.items():
        for target in rule["Properties"]["Targets"]:
            assert target["DeadLetterConfig"] == {"Arn": {"Fn::GetAtt": ["EventsDeadLetterQueue", "Arn"]}}, name
            cfn_retry[(name, target["Id"])] = (
                target["RetryPolicy"]["MaximumRetryAttempts"],
                target["RetryPolicy"]["MaximumEventAgeInSeconds"],
            )
    (tf_target,) = TF["resource"]["aws_cloudwatch_event_target"].values()  # one block, for_each
    assert tf_target["for_each"] == "${local.event_targets}"
    assert tf_target["dead_letter_config"][0]["arn"] == "${aws_sqs_queue.events_dlq.arn}"
    assert tf_target["retry_policy"][0] == {
        "maximum_retry_attempts": "${each.value.retries}",
        "maximum_event_age_in_seconds": "${each.value.max_age}",
    }
    targets = TF["locals"]["event_targets"]
    assert set(targets) == {"recorder", "watchdog", "ecs_events_log", "availability", "sweep"}
    tf_retry = {name: (t["retries"], t["max_age"]) for name, t in targets.items()}
    names = {  # (rule, target id) -> Terraform target
        ("RecorderRule", "recorder"): "recorder",
        ("WatchdogRule", "watchdog"): "watchdog",
        ("EcsEventsLogRule", targets["ecs_events_log"]["target_id"]): "ecs_events_log",
        ("AvailabilityScheduleRule", "availability"): "availability",
        ("AvailabilityScheduleRule", "sweep"): "sweep",  # the watchdog's sweep, on the same schedule
    }
    assert {names[k]: v for k, v in cfn_retry.items()} == tf_retry
    assert {t["target_id"] for t in targets.values()} == {k[1] for k in names}
    # the sweep is the watchdog function on the sampler's schedule, allowed by its own permission
    sweep = [t for t in cfn_rules["AvailabilityScheduleRule"]["Properties"]["Targets"] if t["Id"] == "sweep"]
    assert sweep[0]["Arn"] == {"Fn::GetAtt": ["WatchdogFunction", "Arn"]}
    assert targets["sweep"]["arn"] == '${aws_lambda_function.this["watchdog"].arn}'
    assert targets["sweep"]["rule"] == "${aws_cloudwatch_event_rule.availability.name}"
    perm = TEMPLATE["Resources"]["WatchdogSweepInvokePermission"]["Properties"]
    assert perm["SourceArn"] == {"Fn::GetAtt": ["AvailabilityScheduleRule", "Arn"]}
    tf_perm = TF["resource"]["aws_lambda_permission"]["sweep"]
    assert tf_perm["source_arn"] == "${aws_cloudwatch_event_rule.availability.arn}"
    assert tf_perm["function_name"] == '${aws_lambda_function.this["watchdog"].function_name}'
    # the DLQ lets exactly these rules in
    condition = TEMPLATE["Resources"]["EventsDeadLetterQueuePolicy"]["Properties"]["PolicyDocument"]["Statement"][0]
    assert {r["Fn::GetAtt"][0] for r in condition["Condition"]["ArnEquals"]["aws:SourceArn"]} == set(cfn_rules)


CFN_RULES = {
    "RecorderRule": "recorder",
    "WatchdogRule": "watchdog",
    "EcsEventsLogRule": "ecs_events_log",
    "AvailabilityScheduleRule": "availability",
}
FUNCTION_METRICS = ("Errors", "Throttles", "DestinationDeliveryFailures", "AsyncEventsDropped")
RULE_METRICS = ("FailedInvocations", "InvocationsFailedToBeSentToDlq")


def _cfn_alarms(template: dict[str, Any] = TEMPLATE, **params: str) -> dict[tuple[str, str, str], dict[str, Any]]:
    evaluator = iac.Evaluator(template, iac.parameter_values(template, **params))
    alarms = {}
    for logical, alarm in iac.resources_of_type(template, "AWS::CloudWatch::Alarm").items():
        if "Condition" in alarm and not evaluator.condition(alarm["Condition"]):
            continue
        props = evaluator(alarm["Properties"])
        (dimension,) = props["Dimensions"]
        match = re.fullmatch(r"\{(?:ref|getatt):(\w+)(?:\.\w+)?\}", str(dimension["Value"]))
        target = match.group(1) if match else dimension["Value"]
        alarms[(props["Namespace"], props["MetricName"], target)] = props | {"logical": logical}
        assert props["AlarmActions"] == ["{ref:AlertTopic}"], logical
        assert props.get("AlarmDescription"), f"{logical} has no description"
    return alarms


SINGLE_ALARMS = ("SamplerLivenessAlarm", "SlackSecretUnreadableAlarm", "AlertOnlyEntryUnmatchedAlarm")


def test_alarms_cover_both_failure_paths_and_the_failure_paths_failing() -> None:
    """Item 8: queues, per-function and per-rule failure metrics, the sampler's liveness; item 12: folded."""
    expected = {
        ("AWS/SQS", "ApproximateNumberOfMessagesVisible", "EventsDeadLetterQueue"),
        ("AWS/SQS", "ApproximateNumberOfMessagesVisible", "FunctionFailureQueue"),
        ("AWS/Lambda", "Invocations", "AvailabilityFunction"),  # liveness
        ("EcsGuardrail", "AlertOnlyEntriesUnmatched", "ecs-guardrail"),  # issue 17 item 11
    }
    expected |= {("AWS/Lambda", m, fn) for m in FUNCTION_METRICS for fn in CFN_FUNCTION.values()}
    expected |= {("AWS/Events", m, rule) for m in RULE_METRICS for rule in CFN_RULES}
    assert set(_cfn_alarms()) == expected
    # folded: every alarm but the liveness one comes from a Fn::ForEach loop
    raw = iac.raw_template()["Resources"]
    assert not [
        k
        for k, v in raw.items()
        if not k.startswith("Fn::ForEach") and v["Type"] == "AWS::CloudWatch::Alarm" and k not in SINGLE_ALARMS
    ]

    tf = TF["resource"]["aws_cloudwatch_metric_alarm"]
    assert set(tf) == {"queue", "function", "rule", "sampler_liveness", "account_silence", "slack_secret_unreadable",
                       "alert_only_entry_unmatched"}
    assert set(TF["locals"]["queue_alarms"]) == {"events_dlq", "function_failures"}
    assert tf["function"]["for_each"] == "${local.function_alarms}"
    assert tf["rule"]["for_each"] == "${local.rule_alarms}"
    assert "setproduct(keys(local.functions), keys(local.function_alarm_text))" in TF["locals"]["function_alarms"]
    assert "setproduct(keys(local.rule_names), keys(local.rule_alarm_text))" in TF["locals"]["rule_alarms"]
    assert set(TF["locals"]["function_alarm_text"]) == set(FUNCTION_METRICS)
    assert set(TF["locals"]["rule_alarm_text"]) == set(RULE_METRICS)
    assert set(TF["locals"]["rule_names"]) == set(CFN_RULES.values())
    # the same texts on both sides
    mappings = TEMPLATE["Mappings"]
    assert {k: v["Text"] for k, v in mappings["FunctionAlarm"].items()} == TF["locals"]["function_alarm_text"]
    assert {k: v["Text"] for k, v in mappings["RuleAlarm"].items()} == TF["locals"]["rule_alarm_text"]
    for name, alarm in tf.items():
        assert alarm["alarm_description"], name
        assert alarm["alarm_actions"] == ["${aws_sns_topic.alerts.arn}"], name


def test_an_unreadable_slack_secret_is_alarmed_when_slack_is_configured() -> None:
    """Item 7: the SlackSecretUnreadable metric the watchdog counts (Powertools: namespace EcsGuardrail,
    dimension service) has an alarm wherever a secret is configured."""
    from ecs_guardrail.handlers.runtime import metrics

    key = ("EcsGuardrail", "SlackSecretUnreadable", "ecs-guardrail")
    assert key not in _cfn_alarms()
    on = _cfn_alarms(SlackWebhookSecretArn=SLACK_ARN)
    assert on[key]["Dimensions"] == [{"Name": "service", "Value": "ecs-guardrail"}]
    assert metrics.namespace == "EcsGuardrail" and metrics.service == "ecs-guardrail"
    tf = TF["resource"]["aws_cloudwatch_metric_alarm"]["slack_secret_unreadable"]
    assert tf["count"] == "${local.has_slack_webhook ? 1 : 0}"
    assert (tf["namespace"], tf["metric_name"], tf["dimensions"]) == key[:2] + ({"service": "ecs-guardrail"},)


def test_an_alert_only_entry_matching_no_cluster_is_alarmed_on_both_stacks() -> None:
    """Issue 17 item 11: the AlertOnlyEntriesUnmatched count the watchdog emits on every invocation
    (Powertools: namespace EcsGuardrail, dimension service) alarms above 0, the same on both sides."""
    key = ("EcsGuardrail", "AlertOnlyEntriesUnmatched", "ecs-guardrail")
    cfn = _cfn_alarms()[key]
    tf = TF["resource"]["aws_cloudwatch_metric_alarm"]["alert_only_entry_unmatched"]
    assert "count" not in tf  # always on: the default "production" is an entry to check
    assert (tf["namespace"], tf["metric_name"], tf["dimensions"]) == key[:2] + ({"service": "ecs-guardrail"},)
    same = ("Statistic", "Period", "EvaluationPeriods", "Threshold", "ComparisonOperator", "TreatMissingData")
    assert {k: cfn[k] for k in same} == {k: tf[snake(k)] for k in same}
    assert cfn["Statistic"] == "Maximum" and cfn["Threshold"] == 0
    assert ("any", "ecs:ListClusters") in declared("watchdog")


def test_liveness_comes_from_the_sampler_not_the_event_heartbeat() -> None:
    """Item 8: no invocation of the scheduled sampler for HeartbeatMinutes, whatever the fleet does."""
    cfn = TEMPLATE["Resources"]["SamplerLivenessAlarm"]["Properties"]
    assert (cfn["Namespace"], cfn["MetricName"]) == ("AWS/Lambda", "Invocations")
    assert cfn["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": "AvailabilityFunction"}}]
    assert cfn["EvaluationPeriods"] == cfn["DatapointsToAlarm"] == {"Ref": "HeartbeatMinutes"}
    assert cfn["TreatMissingData"] == "breaching" and cfn["Period"] == 60
    tf = TF["resource"]["aws_cloudwatch_metric_alarm"]["sampler_liveness"]
    assert (tf["namespace"], tf["metric_name"]) == ("AWS/Lambda", "Invocations")
    assert tf["dimensions"]["FunctionName"].startswith("${aws_lambda_function.this[")
    assert "availability" in tf["dimensions"]["FunctionName"]
    assert tf["evaluation_periods"] == tf["datapoints_to_alarm"] == "${var.heartbeat_minutes}"
    assert tf["treat_missing_data"] == "breaching" and tf["period"] == 60
    # nothing alarms on the summed event heartbeat any more
    assert not [a for a in _cfn_alarms().values() if a["MetricName"] == "MatchedEvents"]
    assert not [
        a for a in TF["resource"]["aws_cloudwatch_metric_alarm"].values() if a["metric_name"] == "MatchedEvents"
    ]


def test_per_account_silence_is_optional_and_off_by_default() -> None:
    """Item 8: one alarm per listed account, none by default."""
    assert not [k for k in _cfn_alarms() if k[0] == "EcsGuardrail/Events"]
    accounts = "111122223333,444455556666"
    template = iac.load_template(SilenceAlarmAccountIds=accounts)
    on = _cfn_alarms(template, SilenceAlarmAccountIds=accounts)
    assert {k for k in on if k[0] == "EcsGuardrail/Events"} == {
        ("EcsGuardrail/Events", "EcsEvents", "111122223333"),
        ("EcsGuardrail/Events", "EcsEvents", "444455556666"),
    }
    metric_filter = template["Resources"]["EcsEventsByAccountFilter"]
    assert metric_filter["Condition"] == "HasSilenceAlarms"
    (transformation,) = metric_filter["Properties"]["MetricTransformations"]
    assert transformation["Dimensions"] == [{"Key": "Account", "Value": "$.account"}]
    tf = TF["resource"]["aws_cloudwatch_metric_alarm"]["account_silence"]
    assert tf["for_each"] == "${toset(local.silence_alarm_account_ids)}"
    assert TF["variable"]["silence_alarm_account_ids"]["default"] == ""
    tf_filter = TF["resource"]["aws_cloudwatch_log_metric_filter"]["ecs_events_by_account"]
    assert tf_filter["count"] == "${length(local.silence_alarm_account_ids) > 0 ? 1 : 0}"
    assert tf_filter["metric_transformation"][0]["dimensions"] == {"Account": "$.account"}


def test_member_account_forwarder_dead_letters_are_alarmed() -> None:
    """Item 8: the member-account forwarder's DLQ, in both member-side templates."""
    member = iac.load_template(iac.ROOT / "deploy" / "member-account.yaml")
    (alarm,) = iac.resources_of_type(member, "AWS::CloudWatch::Alarm").values()
    props = alarm["Properties"]
    assert props["Dimensions"] == [
        {"Name": "QueueName", "Value": {"Fn::GetAtt": ["ForwardDeadLetterQueue", "QueueName"]}}
    ]
    assert props["AlarmDescription"]
    tf = iac.load_terraform(iac.TERRAFORM / "examples" / "member-account")
    tf_alarm = tf["resource"]["aws_cloudwatch_metric_alarm"]["forward_dlq"]
    assert tf_alarm["dimensions"] == {"QueueName": "${aws_sqs_queue.forward_dlq.name}"}
    assert tf_alarm["metric_name"] == props["MetricName"] == "ApproximateNumberOfMessagesVisible"
    # issue 24 item 17: the alarm always has a target (a dead forwarder is invisible centrally)
    assert props["AlarmActions"] == [{"Ref": "AlarmTopicArn"}]
    assert "Default" not in member["Parameters"]["AlarmTopicArn"]
    assert tf_alarm["alarm_actions"] == ["${var.alarm_topic_arn}"]
    assert "default" not in tf["variable"]["alarm_topic_arn"]


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


# ---------------------------------------------------------------------------------------------- state


def test_history_table_is_the_same() -> None:
    cfn = TEMPLATE["Resources"]["HistoryTable"]["Properties"]
    tf = TF["resource"]["aws_dynamodb_table"]["history"]
    assert cfn["BillingMode"] == tf["billing_mode"] == "PAY_PER_REQUEST"
    assert {(k["AttributeName"], k["KeyType"]) for k in cfn["KeySchema"]} == {("pk", "HASH"), ("sk", "RANGE")}
    assert (tf["hash_key"], tf["range_key"]) == ("pk", "sk")
    assert (
        {(a["AttributeName"], a["AttributeType"]) for a in cfn["AttributeDefinitions"]}
        == {(a["name"], a["type"]) for a in tf["attribute"]}
        == {("pk", "S"), ("sk", "S"), ("gsi1pk", "S"), ("gsi1sk", "S")}
    )
    (gsi,) = cfn["GlobalSecondaryIndexes"]
    (tf_gsi,) = tf["global_secondary_index"]
    assert gsi["IndexName"] == tf_gsi["name"] == "gsi1"
    assert (tf_gsi["hash_key"], tf_gsi["range_key"]) == ("gsi1pk", "gsi1sk")
    assert cfn["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
    assert tf["ttl"][0] == {"attribute_name": "expires_at", "enabled": True}
    assert cfn["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert tf["point_in_time_recovery"][0]["enabled"] is True
    assert cfn["SSESpecification"]["SSEEnabled"] is True and tf["server_side_encryption"][0]["enabled"] is True


def _timeline_fields() -> list[str]:
    from ecs_guardrail.adapters.history import HistoryStore  # the lead re-points this on merge

    keys = {"pk", "sk", "gsi1pk", "gsi1sk"}
    return [f for f in HistoryStore.TIMELINE_FIELDS if f not in keys]


def test_index_projects_exactly_the_timeline_fields() -> None:
    """Item 10: gsi1 projects INCLUDE with exactly HistoryStore.TIMELINE_FIELDS (never the raw event)."""
    (gsi,) = TEMPLATE["Resources"]["HistoryTable"]["Properties"]["GlobalSecondaryIndexes"]
    (tf_gsi,) = TF["resource"]["aws_dynamodb_table"]["history"]["global_secondary_index"]
    assert gsi["Projection"]["ProjectionType"] == tf_gsi["projection_type"] == "INCLUDE"
    assert gsi["Projection"]["NonKeyAttributes"] == _timeline_fields()
    assert tf_gsi["non_key_attributes"] == _timeline_fields()
    assert "raw" not in _timeline_fields()
    # the embedded AWS (replay, tests) builds the same index
    from ecs_guardrail.replay.embedded import create_history_table

    class Recorder:
        def create_table(self, **kwargs: Any) -> None:
            self.table = kwargs

        def update_time_to_live(self, **kwargs: Any) -> None:
            pass

    ddb = Recorder()
    create_history_table(ddb, "t")
    (local_gsi,) = ddb.table["GlobalSecondaryIndexes"]
    assert local_gsi["Projection"] == {"ProjectionType": "INCLUDE", "NonKeyAttributes": _timeline_fields()}


def test_a_failed_first_deploy_can_be_retried() -> None:
    """Item 1: no fixed table name in the stack, and a failed create does not leave the table behind."""
    table = TEMPLATE["Resources"]["HistoryTable"]
    assert "TableName" not in table["Properties"]  # functions get it by Ref, the CLI from the output
    assert table["DeletionPolicy"] == "RetainExceptOnCreate"
    assert table["UpdateReplacePolicy"] == "Retain"
    # deletion protection would make the rollback of a failed create fail: PITR and the policy guard it
    assert "DeletionProtectionEnabled" not in table["Properties"]
    assert table["Properties"]["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert iac.function_environment(TEMPLATE, "WatchdogFunction")["HISTORY_TABLE"] == {"Ref": "HistoryTable"}
    # Terraform has no rollback: a failed apply keeps the table in state and the retry goes on from there
    tf = TF["resource"]["aws_dynamodb_table"]["history"]
    assert tf["deletion_protection_enabled"] == "${var.deletion_protection}"  # default true (issue 24 item 18)
    assert "lifecycle" not in tf
    assert TF["locals"]["functions"]["watchdog"]["environment"]["HISTORY_TABLE"] == "${aws_dynamodb_table.history.name}"


NAMED = {  # resource type -> the name property CloudFormation would otherwise take from the stack name
    "AWS::IAM::Role": "RoleName",
    "AWS::Serverless::Function": "FunctionName",
    "AWS::Events::Rule": "Name",
    "AWS::SQS::Queue": "QueueName",
    "AWS::Events::Archive": "ArchiveName",
    "AWS::DynamoDB::Table": "TableName",
}


def test_names_fit_and_do_not_collide_across_regions() -> None:
    """Item 2: IAM names are per account; names with a 64/80/48-character limit are generated."""
    for type_, prop in NAMED.items():
        for logical, resource in iac.resources_of_type(TEMPLATE, type_).items():
            assert prop not in resource["Properties"], f"{logical} has a fixed {prop}"
    statement_id = iac.Evaluator(TEMPLATE, iac.parameter_values(TEMPLATE, SourceAccountIds="111111111111"))(
        TEMPLATE["Resources"]["CrossAccountBusPolicy"]["Properties"]["StatementId"]
    )
    assert len(statement_id) <= 64 and "ecs-guardrail" in statement_id
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
    # Terraform's regional names: var.name is at most 40 characters, so "<name>-availability" fits 64
    assert "{0,39}" in TF["variable"]["name"]["validation"][0]["condition"]
    assert 40 + 1 + max(len(f) for f in iam.FUNCTIONS) <= 64


def test_reserved_concurrency() -> None:
    """Item 9: the watchdog has a few (parameter, default 5), the sampler 1, the recorder none."""
    res = TEMPLATE["Resources"]
    # 0 means no reservation on either capped function (issue 24 item 18: accounts whose quota is 10)
    assert res["WatchdogFunction"]["Properties"]["ReservedConcurrentExecutions"] == {
        "Fn::If": ["NoReservedConcurrency", {"Ref": "AWS::NoValue"}, {"Ref": "WatchdogReservedConcurrency"}]
    }
    assert TEMPLATE["Conditions"]["NoReservedConcurrency"] == {
        "Fn::Equals": [{"Ref": "WatchdogReservedConcurrency"}, "0"]}
    assert TEMPLATE["Parameters"]["WatchdogReservedConcurrency"]["Default"] == "5"
    assert res["AvailabilityFunction"]["Properties"]["ReservedConcurrentExecutions"] == {
        "Fn::If": ["NoReservedConcurrency", {"Ref": "AWS::NoValue"}, 1]
    }
    assert "ReservedConcurrentExecutions" not in res["RecorderFunction"]["Properties"]
    functions = TF["locals"]["functions"]
    assert functions["watchdog"]["reserved_concurrency"] == (
        "${var.watchdog_reserved_concurrency == 0 ? -1 : var.watchdog_reserved_concurrency}")
    assert functions["availability"]["reserved_concurrency"] == "${var.watchdog_reserved_concurrency == 0 ? -1 : 1}"
    assert functions["recorder"]["reserved_concurrency"] == -1  # unreserved
    assert TF["resource"]["aws_lambda_function"]["this"]["reserved_concurrent_executions"] == (
        "${each.value.reserved_concurrency}"
    )
    assert TF["variable"]["watchdog_reserved_concurrency"]["default"] == 5
    # the CKV_AWS_115 skip is only where there is no cap, and says so
    for logical in CFN_FUNCTION.values():
        skips = {s["id"]: s["comment"] for s in res[logical]["Metadata"]["checkov"]["skip"]}
        assert ("CKV_AWS_115" in skips) is (logical == "RecorderFunction"), logical
    assert "recorder is deliberately unreserved" in skips_text("RecorderFunction") or "Only the recorder" in skips_text(
        "RecorderFunction"
    )
    main_tf = (iac.TERRAFORM / "main.tf").read_text()
    assert "#checkov:skip=CKV_AWS_115:Only the recorder is unreserved" in main_tf


def skips_text(logical: str) -> str:
    return " ".join(s["comment"] for s in TEMPLATE["Resources"][logical]["Metadata"]["checkov"]["skip"])


def test_no_checkov_skip_for_checks_that_pass() -> None:
    """Item 11: checkov's Terraform check accepts sqs_managed_sse_enabled, so terraform/ has no CKV_AWS_27
    skip; its CloudFormation check does not read SqsManagedSseEnabled, so the templates keep one, saying so."""
    for path in iac.TERRAFORM.rglob("*.tf"):
        assert not re.search(r"CKV_AWS_27\b", path.read_text()), path
    for path in [iac.TEMPLATE, iac.ROOT / "deploy" / "member-account.yaml"]:
        for resource in iac.resources_of_type(iac.load_template(path), "AWS::SQS::Queue").values():
            assert resource["Properties"]["SqsManagedSseEnabled"] is True
            (skip,) = [s for s in resource["Metadata"]["checkov"]["skip"] if s["id"] == "CKV_AWS_27"]
            assert "KmsMasterKeyId" in skip["comment"]


def test_provider_pinned_to_the_validated_major() -> None:
    """Item 11: data.aws_region's name is deprecated in provider 6: pinned below it everywhere."""
    for path in iac.TERRAFORM.rglob("versions.tf"):
        text = path.read_text()
        assert '">= 5.60, < 6.0"' in text, path
        assert '">= 1.7.0"' in text, path  # mock_provider in terraform test


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


# dependencies only the operator's commands import (pyproject says so beside each), never a handler:
# the Lambda zip goes without them, and this test proves no handler can reach them
REPLAY_ONLY = {"python-dotenv": "dotenv"}


def test_replay_only_dependencies_are_imported_lazily_and_never_by_a_handler() -> None:
    """python-dotenv (settings.env's parser) came back with issue 21 for ``replay``: imported inside
    ``replay.scenario.read_settings_env`` only, so a handler's import never needs it (not in the Lambda lock)."""
    import ast

    src = iac.ROOT / "src" / "ecs_guardrail"
    for module in REPLAY_ONLY.values():
        for path in sorted(src.rglob("*.py")):
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
                if not any(n == module or n.startswith(module + ".") for n in names):
                    continue
                rel = path.relative_to(src).as_posix()
                assert rel == "replay/scenario.py", f"{rel} imports {module}: only replay/scenario.py may"
                assert node not in tree.body, f"{rel} imports {module} at module level: import it where it is used"


def test_lambda_lock_satisfies_pyproject() -> None:
    """deploy/lambda-requirements.txt (what `make package` installs) meets pyproject's dependencies."""
    import tomllib

    from packaging.requirements import Requirement

    pins = {}
    for line in (iac.ROOT / "deploy" / "lambda-requirements.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    project = tomllib.loads((iac.ROOT / "pyproject.toml").read_text())["project"]
    for spec in project["dependencies"]:
        requirement = Requirement(spec)
        name = re.sub(r"[-_.]+", "-", requirement.name).lower()
        if name in {"boto3", "botocore", "s3transfer"}:
            assert name not in pins, f"{name} ships with the Lambda runtime"
            continue
        if name in REPLAY_ONLY:
            assert name not in pins, f"{name} is replay's, the Lambda never imports it: keep it out of the zip"
            continue
        assert name in pins, f"{spec} missing from the Lambda lock"
        assert requirement.specifier.contains(pins[name], prereleases=True), f"{name}=={pins[name]} vs {spec}"


def test_outputs_match() -> None:
    cfn = {snake(name) for name in TEMPLATE["Outputs"]}
    assert cfn == set(TF["output"])
    for name, output in TEMPLATE["Outputs"].items():
        assert output.get("Description"), f"output {name} has no Description"
    for name, output in TF["output"].items():
        assert output.get("description"), f"output {name} has no description"


def test_the_documented_sam_path_cannot_deploy_a_build_without_code() -> None:
    """Item 3: `make deploy` packages then deploys template.yaml (never .aws-sam/build); samconfig.toml
    pins the template for package and deploy; the README's Deploy section says so."""
    import tomllib

    config = tomllib.loads((iac.ROOT / "samconfig.toml").read_text())["default"]
    for command in ("package", "deploy"):
        assert config[command]["parameters"]["template_file"] == "template.yaml", command
    capabilities = config["deploy"]["parameters"]["capabilities"].split()
    assert "CAPABILITY_AUTO_EXPAND" in capabilities  # AWS::LanguageExtensions
    assert "CAPABILITY_IAM" in capabilities and "CAPABILITY_NAMED_IAM" not in capabilities  # no fixed names
    makefile = (iac.ROOT / "mk" / "deploy.mk").read_text()
    assert re.search(r"^deploy: package$", makefile, flags=re.M)
    assert "rm -rf .aws-sam/build" in makefile and "--template-file template.yaml" in makefile
    readme = (iac.ROOT / "README.md").read_text()
    deploy_section = readme[readme.index("## Deploy") :].split("\n## ", 1)[0]
    assert "make deploy" in deploy_section and "sam build" in deploy_section
    assert "make deploy" in (iac.ROOT / "docs" / "deploy.md").read_text()


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


def test_terraform_deletion_protection_is_a_variable_defaulting_on() -> None:
    """Issue 24 item 18: after a partial destroy, a protected table blocks a fresh apply; the variable
    lets a rebuild turn it off, and terraform/README.md says how to import the kept table instead."""
    assert TF["variable"]["deletion_protection"]["default"] is True
    assert TF["variable"]["deletion_protection"]["type"] in ("bool", "${bool}")
    table = TF["resource"]["aws_dynamodb_table"]["history"]
    assert table["deletion_protection_enabled"] == "${var.deletion_protection}"
    readme = (iac.TERRAFORM / "README.md").read_text()
    assert "terraform import 'module.ecs_guardrail.aws_dynamodb_table.history'" in readme
