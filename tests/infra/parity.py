"""What the tests/infra/test_parity_*.py modules share: both templates loaded once, the logical ids
of the functions, and the readers of each side's IAM statements, parameters and alarms.

Split out of test_parity.py (issue 22) with no change to what any test asserts; conftest.py registers
this module for pytest's assertion rewriting and holds the terraform fixture.
"""

from __future__ import annotations

import json
import re
from typing import Any

import iac  # (tests/infra is on sys.path: conftest.py puts it there in any import mode)

from ecs_guardrail import iam

TEMPLATE = iac.load_template()
TF = iac.load_terraform()
PATTERNS = json.loads(iac.PATTERNS.read_text())


# function name -> logical ids in template.yaml
CFN_FUNCTION = {
    "recorder": "RecorderFunction",
    "watchdog": "WatchdogFunction",
    "availability": "AvailabilityFunction",
    "sweep": "SweepFunction",
}
CFN_ROLE = {"recorder": "RecorderRole", "watchdog": "WatchdogRole", "availability": "AvailabilityRole",
            "sweep": "SweepRole"}
CFN_LOG_GROUP = {
    "recorder": "RecorderLogGroup",
    "watchdog": "WatchdogLogGroup",
    "availability": "AvailabilityLogGroup",
    "sweep": "SweepLogGroup",
}
TF_POLICY = {"recorder": "recorder", "watchdog": "watchdog", "availability": "availability", "sweep": "sweep"}
#: the functions whose roles carry the alert-only deny (the watchdog's code runs in both)
DENIED = ("watchdog", "sweep")


# Terraform-only inputs, each with the SAM counterpart that is not a parameter.
TF_ONLY_VARIABLES = {
    "lambda_zip_path": "each function's CodeUri",
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
#: alert routes' named channels (issue 35 item 4): a topic and a secret, as the tests deploy them
CHANNEL_TOPIC_ARN = "arn:aws:sns:eu-west-1:111122223333:oncall"
CHANNEL_SECRET_ARN = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:dev-alerts-AbCdEf"
CENTRAL_TOPIC_ARN = "arn:aws:sns:eu-west-1:999988887777:org-alerts"


def snake(pascal: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", pascal).lower()


def declared(function: str) -> set[tuple[str, str]]:
    return {(kind, action) for kind, actions in iam.handler_permissions(function).items() for action in actions}


def _normal_default(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


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
        CHANNEL_TOPIC_ARN: "alert_topic",  # a named channel's topic is an alert topic
        CHANNEL_SECRET_ARN: "webhook_secret",  # a named channel's secret is a Slack webhook secret
        CENTRAL_TOPIC_ARN: "alert_topic",  # org (issue 32 item 4): the organisation's topic
        own_log: "own_log_group",
        "{getatt:FunctionFailureQueue.Arn}": "failure_queue",
        "arn:aws:logs:eu-west-1:111122223333:log-group:/ecs/*": "crash_log_group",
    }
    assert resource in exact, f"{function}: unclassified resource {resource}"
    return exact[resource]


def _classify_tf(resource: str, function: str) -> str:
    exact = {
        "${local.history_table_arn}": "history_table",
        "${local.ecs_service_arns}": "ecs_service",
        "${local.ecs_service_deployment_arns}": "ecs_service_deployment",
        "${local.default_bus_arn}": "default_bus",
        "${local.scalable_target_arns}": "scalable_target",
        "*": "any",
        "${aws_sns_topic.alerts.arn}": "alert_topic",
        "${statement.value}": "webhook_secret",
        "${local.alert_channel_topic_arns}": "alert_topic",
        "${local.alert_channel_secret_arns}": "webhook_secret",
        "${var.central_alert_topic_arn}": "alert_topic",  # org (issue 32 item 4): the organisation's topic
        f'${{aws_cloudwatch_log_group.function[\\"{function}\\"].arn}}:*': "own_log_group",
        f'${{aws_cloudwatch_log_group.function["{function}"].arn}}:*': "own_log_group",
        "${aws_cloudwatch_log_group.function[each.key].arn}:*": "own_log_group",  # the base document
        "${aws_sqs_queue.function_failures.arn}": "failure_queue",
        "arn:${local.partition}:logs:${local.region}:${local.account_id}:log-group:${var.crash_log_group_pattern}":
            "crash_log_group",
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


def tf_local(value: Any) -> Any:
    """``${local.NAME}`` -> the literal value of ``locals { NAME = ... }`` (followed while it is another
    bare local reference); any other value as it is. Strict: a name that is not a local is a KeyError."""
    seen: set[str] = set()
    while isinstance(value, str) and (match := re.fullmatch(r"\$\{local\.(\w+)\}", value)):
        assert match.group(1) not in seen, f"local.{match.group(1)} refers to itself"
        seen.add(match.group(1))
        value = TF["locals"][match.group(1)]
    return value


def tf_function_environment(function: str) -> dict[str, Any]:
    """The Lambda environment terraform/ gives ``function``: its ``local.functions`` entry's map, the local
    that entry names (the watchdog and the sweep function share ``local.crash_path_environment``), or a
    ``merge()`` of such maps (each function's own settings merged onto ``local.common_environment``)."""
    environment = tf_map(TF["locals"]["functions"][function]["environment"])
    assert isinstance(environment, dict), f"{function}: environment is not a literal map: {environment!r}"
    return environment


def tf_map(value: Any) -> Any:
    """:func:`tf_local`, and ``${merge(A, B, ...)}`` of locals and literal maps as Terraform's ``merge``
    computes it (a later map's key wins); python-hcl2 gives a ``merge()`` call as one string, whose literal
    maps are parsed here again with hcl2. Anything else as :func:`tf_local` gives it."""
    value = tf_local(value)
    if not isinstance(value, str) or not (match := re.fullmatch(r"\$\{merge\((.*)\)\}", value, re.S)):
        return value
    merged: dict[str, Any] = {}
    for arg in _top_level_args(match.group(1)):
        if re.fullmatch(r"local\.\w+", arg):
            part = tf_map(f"${{{arg}}}")
        else:
            hcl2, options = iac._hcl_options()
            part = hcl2.loads(f"v = {arg}\n", serialization_options=options)["v"]
        assert isinstance(part, dict), f"merge() of something not a map: {arg!r}"
        merged.update(part)
    return merged


def _top_level_args(text: str) -> list[str]:
    """A call's arguments: ``text`` split at the commas outside brackets and strings."""
    args, depth, start, quoted = [], 0, 0, False
    for n, ch in enumerate(text):
        if ch == '"' and text[n - 1:n] != "\\":
            quoted = not quoted
        elif not quoted and ch in "({[":
            depth += 1
        elif not quoted and ch in ")}]":
            depth -= 1
        elif not quoted and ch == "," and depth == 0:
            args.append(text[start:n].strip())
            start = n + 1
    args.append(text[start:].strip())
    return [a for a in args if a]


def tf_source_documents(name: str) -> list[tuple[str, str | None]]:
    """A policy document's ``source_policy_documents`` as (document, for_each key or None)."""
    document = TF["data"]["aws_iam_policy_document"][name]
    return [_tf_document_name(r) for r in document.get("source_policy_documents", [])]


def tf_dynamic_statements(name: str) -> list[tuple[str, dict[str, Any]]]:
    """The dynamic statements of a policy document and of the documents it sources, as (for_each, content)."""
    out = [pair for source, _key in tf_source_documents(name) for pair in tf_dynamic_statements(source)]
    for dynamic in iac.as_list(TF["data"]["aws_iam_policy_document"][name].get("dynamic", [])):
        out += [(dynamic["statement"]["for_each"], c) for c in iac.as_list(dynamic["statement"]["content"])]
    return out


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
    names = [TF_POLICY[function]] + (["watchdog_deny_alert_only"] if function in DENIED else [])
    return [s for name in names for s in tf_document_statements(name)]


def granted(statements: list[dict[str, Any]], classify, function: str, effect: str = "Allow") -> set[tuple[str, str]]:
    pairs = set()
    for s in statements:
        if s.get("Effect", s.get("effect", "Allow")) != effect:
            continue
        actions = iac.as_list(s.get("Action", s.get("actions")))
        resources = iac.as_list(s.get("Resource", s.get("resources")))
        pairs |= {(classify(r, function), a) for r in resources for a in actions}
    return pairs


CFN_RULES = {
    "RecorderRule": "recorder",
    "WatchdogRule": "watchdog",
    "EcsEventsLogRule": "ecs_events_log",
    "AvailabilityScheduleRule": "availability",
    "SweepRule": "sweep",
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


