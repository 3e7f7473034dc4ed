"""`make check-deploy`'s pure parts (scripts/deploy_parity.py): the emulator override points only at
127.0.0.1, a second plan may change only what the emulator cannot store, and the parity table fails
on substance (concurrency, IAM, alarms) and on names (one naming scheme: issue 24 items 16 and 19)."""

from __future__ import annotations

import copy
import importlib.util
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("deploy_parity", ROOT / "scripts" / "deploy_parity.py")
assert _spec and _spec.loader
dp = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(dp)


def test_the_override_sends_every_service_to_the_local_emulator_and_lifts_protection():
    text = dp.tf_override("http://127.0.0.1:4566", "us-west-2")
    block = text[text.index("endpoints {"):].split("}", 1)[0].splitlines()[1:]
    pairs = dict(line.strip().split(" = ", 1) for line in block if line.strip())
    assert set(pairs) == set(dp.SERVICES) and set(pairs.values()) == {'"http://127.0.0.1:4566"'}
    assert 'region                      = "us-west-2"' in text and "deletion_protection = false" in text


def _plan(tmp_path: Path, *changes: tuple[str, str, list[str], dict, dict]) -> str:
    """A ``terraform show -json`` plan of ``(address, type, actions, before, after)`` changes."""
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"resource_changes": [
        {"address": a, "type": k, "change": {"actions": acts, "before": b, "after": f, "after_unknown": {}}}
        for a, k, acts, b, f in changes]}))
    return str(path)


WATCHDOG = 'module.ecs_guardrail.aws_lambda_function.this["watchdog"]'
LOGGING = {"log_format": "Text", "log_group": "/aws/lambda/ecs-guardrail-watchdog"}


def test_a_second_plan_may_change_only_named_emulator_drift(tmp_path, capsys):
    """Issue 29 item 3: only an in-place update of attributes EMULATOR_DRIFT names passes, each printed;
    another attribute of the same resource, or any create, destroy or replacement, fails."""
    drift = (WATCHDOG, "aws_lambda_function", ["update"], {"logging_config": [], "timeout": 60},
             {"logging_config": [LOGGING], "timeout": 60})
    assert dp.plan_again(_plan(tmp_path, drift)) == 0
    assert "logging_config (emulator drift: moto" in capsys.readouterr().out
    more = (WATCHDOG, "aws_lambda_function", ["update"], {"logging_config": [], "timeout": 60},
            {"logging_config": [LOGGING], "timeout": 30})
    assert dp.plan_again(_plan(tmp_path, more)) == 1
    assert f"{WATCHDOG} timeout would change in place" in capsys.readouterr().out
    nested = (WATCHDOG, "aws_lambda_function", ["update"], {"environment": [{"variables": {"DRY_RUN": "true"}}]},
              {"environment": [{"variables": {"DRY_RUN": "false"}}]})
    assert dp.plan_again(_plan(tmp_path, nested)) == 1
    assert "environment[0].variables.DRY_RUN would change" in capsys.readouterr().out
    for actions, verb in ((["delete", "create"], "replaced"), (["create", "delete"], "replaced"),
                          (["delete"], "destroyed"), (["create"], "created")):
        table = ("module.ecs_guardrail.aws_dynamodb_table.history[0]", "aws_dynamodb_table", actions, {}, {})
        assert dp.plan_again(_plan(tmp_path, drift, table)) == 1, actions
        assert f"aws_dynamodb_table.history[0] would be {verb}" in capsys.readouterr().out
    # the watchdog destroyed is never drift, though its type has a drift entry
    gone = (WATCHDOG, "aws_lambda_function", ["delete"], {"logging_config": []}, None)
    assert dp.plan_again(_plan(tmp_path, gone)) == 1
    assert dp.plan_again(_plan(tmp_path)) == 0
    assert "no changes" in capsys.readouterr().out


def _snapshot(prefix: str) -> dict:
    return {
        "functions": {"ecs_guardrail.handlers.watchdog.handler": {
            "name": f"{prefix}-watchdog", "role": "r", "timeout": 60, "memory": 256, "reserved_concurrency": 5,
            "environment": {"HISTORY_TABLE": "{history table}", "DRY_RUN": "true"}, "allow": ["ecs:UpdateService"],
            "deny": [{"actions": ["ecs:UpdateService"], "resources": ["arn:*:ecs:*:*:service/production/*"],
                      "condition": {}}]}},
        "alarms": {"AWS/Lambda Errors [FunctionName]": [{"name": f"{prefix}-Watchdog-Errors", "actions": 1}]},
        "rules": {json.dumps({"source": ["aws.ecs"]}): f"{prefix}-watchdog"},
        "tables": {"history": {"name": f"{prefix}-history", "keys": ["pk", "sk"], "indexes": ["gsi1"]}},
        "queues": [f"{prefix}-dlq"], "topics": [f"{prefix}-alerts"], "log_groups": ["/aws/events/x/ecs"],
    }


def test_the_parity_table_fails_on_substance_and_on_names(tmp_path, capsys):
    """Issue 24 item 16: one naming scheme, so a name differing between the paths is a failure too."""
    tf, sam = tmp_path / "tf.json", tmp_path / "sam.json"
    tf.write_text(json.dumps(_snapshot("ecs-guardrail")))
    sam.write_text(json.dumps(_snapshot("ecs-guardrail")))
    assert dp.compare(tf, sam) == 0
    assert "0 differ in substance" in capsys.readouterr().out
    sam.write_text(json.dumps(_snapshot("stack-Generated")))
    assert dp.compare(tf, sam) == 1
    out = capsys.readouterr().out
    assert "function watchdog: name" in out and "DIFFERS" in out
    # SAM's table and queues keep generated names on purpose (they hold state): reported, never a failure
    assert "table name" in out and "generated on purpose, it holds state" in out
    stateful = copy.deepcopy(_snapshot("ecs-guardrail"))
    stateful["tables"]["history"]["name"], stateful["queues"] = "stack-HistoryTable-X1", ["stack-Queue-Y2"]
    sam.write_text(json.dumps(stateful))
    assert dp.compare(tf, sam) == 0
    capsys.readouterr()
    other = copy.deepcopy(_snapshot("ecs-guardrail"))
    other["functions"]["ecs_guardrail.handlers.watchdog.handler"]["reserved_concurrency"] = None
    sam.write_text(json.dumps(other))
    assert dp.compare(tf, sam) == 1
    assert "function watchdog: reserved_concurrency" in capsys.readouterr().out


def test_sam_alarms_come_from_the_template_where_moto_creates_none(tmp_path, capsys):
    """moto's CloudFormation creates no CloudWatch alarm: the SAM side counts the translated template's
    (conditions evaluated, names resolved to physical ids), and the table marks those rows and reports
    what moto created without failing on it."""
    translated = {
        "Parameters": {"Slack": {"Type": "String", "Default": ""}},
        "Conditions": {"HasSlack": {"Fn::Not": [{"Fn::Equals": [{"Ref": "Slack"}, ""]}]}},
        "Resources": {
            "WatchdogFunction": {"Type": "AWS::Lambda::Function", "Properties": {}},
            "Topic": {"Type": "AWS::SNS::Topic", "Properties": {}},
            "WatchdogErrorsAlarm": {"Type": "AWS::CloudWatch::Alarm", "Properties": {
                "AlarmName": {"Fn::Sub": "${WatchdogFunction}-Errors"}, "Namespace": "AWS/Lambda",
                "MetricName": "Errors", "Dimensions": [{"Name": "FunctionName", "Value": {"Ref": "WatchdogFunction"}}],
                "AlarmActions": [{"Ref": "Topic"}]}},
            "SlackAlarm": {"Type": "AWS::CloudWatch::Alarm", "Condition": "HasSlack", "Properties": {
                "AlarmName": "x", "Namespace": "EcsGuardrail", "MetricName": "SlackSecretUnreadable"}},
        },
    }
    alarms = dp.template_alarms(translated, {"WatchdogFunction": "ecs-guardrail-watchdog", "Topic": "arn:t"})
    assert alarms == {"AWS/Lambda Errors [FunctionName]": [{"name": "ecs-guardrail-watchdog-Errors", "actions": 1}]}
    tf, sam = tmp_path / "tf.json", tmp_path / "sam.json"
    tf.write_text(json.dumps(_snapshot("ecs-guardrail")))
    state = _snapshot("ecs-guardrail") | {"alarms_source": "the translated template", "alarms_created_by_emulator": 0}
    sam.write_text(json.dumps(state))
    assert dp.compare(tf, sam) == 0
    out = capsys.readouterr().out
    assert "sam: from the template, not emulated by moto" in out
    assert "alarms moto's CloudFormation created" in out and "not emulated by moto: it creates no" in out


def test_json_as_the_emulator_returns_it():
    assert dp._json('{"a": 1}') == {"a": 1} == dp._json("%7B%22a%22%3A%201%7D") == dp._json("{'a': 1}")
    assert dp._actions([None, {"Effect": "Allow", "Action": "s3:GetObject"}], "Allow") == ["s3:GetObject"]


def test_rules_sharing_a_pattern_are_all_named(tmp_path, capsys):
    """The archive's managed rule and a function's rule can share a pattern: the snapshot keeps every
    name of a pattern (a dict of one name kept whichever ECS listed last, so two runs disagreed)."""
    tf, sam = tmp_path / "tf.json", tmp_path / "sam.json"
    a, b = _snapshot("ecs-guardrail"), _snapshot("ecs-guardrail")
    pattern = json.dumps({"source": ["aws.ecs"]})
    a["rules"] = {pattern: ["Events-Archive-ecs-guardrail-ecs", "ecs-guardrail-watchdog"]}
    b["rules"] = {pattern: ["Events-Archive-ecs-guardrail-ecs", "ecs-guardrail-watchdog"]}
    tf.write_text(json.dumps(a))
    sam.write_text(json.dumps(b))
    assert dp.compare(tf, sam) == 0
    b["rules"] = {pattern: ["Events-Archive-ecs-guardrail-ecs", "stack-WatchdogRule-X"]}
    sam.write_text(json.dumps(b))
    assert dp.compare(tf, sam) == 1
    assert "rule names" in capsys.readouterr().out


def test_the_parity_table_compares_environment_values_not_only_names(tmp_path, capsys):
    """Issue 29 item 3, blind spot 2: the same variable with another value is a difference in substance."""
    tf, sam = tmp_path / "tf.json", tmp_path / "sam.json"
    tf.write_text(json.dumps(_snapshot("ecs-guardrail")))
    other = _snapshot("ecs-guardrail")
    other["functions"]["ecs_guardrail.handlers.watchdog.handler"]["environment"]["DRY_RUN"] = "false"
    sam.write_text(json.dumps(other))
    assert dp.compare(tf, sam) == 1
    out = capsys.readouterr().out
    assert re.search(r"function watchdog: DRY_RUN\s+true\s+false\s+DIFFERS", out)
    assert re.search(r"function watchdog: environment names .* same", out)  # the names alone agreed


def test_the_parity_table_compares_deny_resources_not_only_actions(tmp_path, capsys):
    """Issue 29 item 3, blind spot 3: a misspelt deny prefix (the same actions) is a difference."""
    tf, sam = tmp_path / "tf.json", tmp_path / "sam.json"
    tf.write_text(json.dumps(_snapshot("ecs-guardrail")))
    other = _snapshot("ecs-guardrail")
    deny = other["functions"]["ecs_guardrail.handlers.watchdog.handler"]["deny"][0]
    deny["resources"] = ["arn:*:ecs:*:*:services/production/*"]
    sam.write_text(json.dumps(other))
    assert dp.compare(tf, sam) == 1
    assert re.search(r"function watchdog: deny 1 resources .* DIFFERS", capsys.readouterr().out)


def test_deny_statements_are_read_with_their_resources_and_condition():
    statements = [{"Effect": "Deny", "Action": "ecs:UpdateService", "Resource": "arn:*:ecs:*:*:service/p/*"},
                  {"Effect": "Allow", "Action": "ecs:ListServices", "Resource": "*"}, None]
    assert dp._denies(statements) == [{"actions": ["ecs:UpdateService"], "resources": ["arn:*:ecs:*:*:service/p/*"],
                                       "condition": {}}]
