"""template.yaml and terraform/ deploy the same system; this module checks
the functions: environment, configuration, wiring and reserved concurrency on both sides.

Runs without AWS; see parity.py and conftest.py for what these modules share.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import iac
import pytest
from parity import CFN_FUNCTION, CFN_LOG_GROUP, TEMPLATE, TF, _normal_default, snake, tf_function_environment

from ecs_guardrail import iam

HISTORY_TABLE_NAME = {"Fn::If": ["CreateHistoryTable", {"Ref": "HistoryTable"}, {"Ref": "ExistingHistoryTableName"}]}


def _cfn_value(value: Any) -> str:
    if value == HISTORY_TABLE_NAME:  # the table created, or the existing one (issue 24 item 18)
        return "resource:history_table"
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
        "${local.history_table_name}": "resource:history_table",
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
        "ALERT_ROUTES",  # alert routes (issue 35 item 4)
        "ALERT_CHANNEL_TOPIC_ARNS",
        "ALERT_CHANNEL_SECRET_ARNS",
        "CENTRAL_ALERT_TOPIC_ARN",  # org (issue 32 item 4)
        "ACCOUNT_NAME",
    },
    "availability": {"HISTORY_TABLE", "HISTORY_TTL_DAYS", "SAMPLE_LOOKBACK_MINUTES"},
}
# the sweep function runs the watchdog's code (the crash path's own lane, issue 32): the same settings
CONTRACT_ENV["sweep"] = CONTRACT_ENV["watchdog"]


POWERTOOLS_ENV = {"POWERTOOLS_SERVICE_NAME", "POWERTOOLS_METRICS_NAMESPACE", "POWERTOOLS_LOG_LEVEL"}


@pytest.mark.parametrize("function", sorted(CFN_FUNCTION))
def test_same_environment_reaches_each_function(function: str) -> None:
    cfn = {k: _cfn_value(v) for k, v in iac.function_environment(TEMPLATE, CFN_FUNCTION[function]).items()}
    tf = {k: _tf_value_ref(v) for k, v in tf_function_environment(function).items()}
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
        names = set(tf_function_environment(function)) - POWERTOOLS_ENV
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
    # the sweep function runs the watchdog's code: one environment map, not a copy
    for function in ("watchdog", "sweep"):
        assert TF["locals"]["functions"][function]["environment"] == "${local.crash_path_environment}", function
    # what every function reads is written once (template.yaml's Globals.Function.Environment), each
    # function's own merged onto it; no function writes a common name itself
    common = TF["locals"]["common_environment"]
    assert set(common) == set(TEMPLATE["Globals"]["Function"]["Environment"]["Variables"]), common
    assert TF["locals"]["functions"]["recorder"]["environment"] == "${local.common_environment}"
    assert TF["locals"]["functions"]["availability"]["environment"].startswith("${merge(local.common_environment, {")
    assert TF["locals"]["crash_path_environment"].startswith("${merge(local.common_environment, {")
    for function in sorted(TF["locals"]["functions"]):
        assert set(common) <= set(tf_function_environment(function)), function


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
