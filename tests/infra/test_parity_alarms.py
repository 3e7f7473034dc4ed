"""template.yaml and terraform/ deploy the same system; this module checks
the failure paths and their alarms: DLQs and retries on every target, the same alarms on both sides.

Runs without AWS; see parity.py and conftest.py for what these modules share.
"""

from __future__ import annotations

import sys

import iac
import pytest
from parity import (
    CFN_FUNCTION,
    CFN_RULES,
    FUNCTION_METRICS,
    RULE_METRICS,
    SLACK_ARN,
    TEMPLATE,
    TF,
    _cfn_alarms,
    declared,
    snake,
)

sys.path.insert(0, str(iac.ROOT / "scripts"))
import gen_alarms  # noqa: E402 - scripts/ is not a package


def test_every_rule_target_has_dlq_and_retry_policy() -> None:
    # the org heartbeat to another account's bus has no retry policy and no DLQ: test_parity_org.py
    cfn_rules = {k: v for k, v in iac.resources_of_type(TEMPLATE, "AWS::Events::Rule").items() if k != "HeartbeatRule"}
    assert set(cfn_rules) == {"RecorderRule", "WatchdogRule", "EcsEventsLogRule", "AvailabilityScheduleRule",
                              "SweepRule"}
    cfn_retry = {}
    for name, rule in cfn_rules.items():
        for target in rule["Properties"]["Targets"]:
            assert target["DeadLetterConfig"] == {"Arn": {"Fn::GetAtt": ["EventsDeadLetterQueue", "Arn"]}}, name
            cfn_retry[(name, target["Id"])] = (
                target["RetryPolicy"]["MaximumRetryAttempts"],
                target["RetryPolicy"]["MaximumEventAgeInSeconds"],
            )
    (tf_target,) = [t for n, t in TF["resource"]["aws_cloudwatch_event_target"].items()
                    if n != "heartbeat"]  # one block, for_each
    assert tf_target["for_each"] == "${local.event_targets}"
    assert tf_target["dead_letter_config"][0]["arn"] == "${aws_sqs_queue.events_dlq.arn}"
    assert tf_target["retry_policy"][0] == {
        "maximum_retry_attempts": "${each.value.retries}",
        "maximum_event_age_in_seconds": "${each.value.max_age}",
    }
    targets = TF["locals"]["event_targets"]
    assert set(targets) == {"recorder", "watchdog", "ecs_events_log", "availability", "sweep", "restarts"}
    tf_retry = {name: (t["retries"], t["max_age"]) for name, t in targets.items()}
    names = {  # (rule, target id) -> Terraform target
        ("RecorderRule", "recorder"): "recorder",
        ("WatchdogRule", "watchdog"): "watchdog",
        ("EcsEventsLogRule", targets["ecs_events_log"]["target_id"]): "ecs_events_log",
        ("AvailabilityScheduleRule", "availability"): "availability",
        ("AvailabilityScheduleRule", "sweep"): "sweep",  # the sweep function, on the same schedule
        ("SweepRule", "sweep"): "restarts",  # the restart observations, to the sweep function
    }
    assert {names[k]: v for k, v in cfn_retry.items()} == tf_retry
    assert {t["target_id"] for t in targets.values()} == {k[1] for k in names}
    # the sweep is its own function (the crash path's lane, issue 32) on the sampler's schedule and on the
    # restart observations' rule, each allowed by its own permission
    sweep = [t for t in cfn_rules["AvailabilityScheduleRule"]["Properties"]["Targets"] if t["Id"] == "sweep"]
    assert sweep[0]["Arn"] == {"Fn::GetAtt": ["SweepFunction", "Arn"]}
    assert cfn_rules["SweepRule"]["Properties"]["Targets"][0]["Arn"] == {"Fn::GetAtt": ["SweepFunction", "Arn"]}
    assert targets["sweep"]["arn"] == targets["restarts"]["arn"] == '${aws_lambda_function.this["sweep"].arn}'
    assert targets["sweep"]["rule"] == "${aws_cloudwatch_event_rule.availability.name}"
    assert targets["restarts"]["rule"] == "${aws_cloudwatch_event_rule.sweep.name}"
    for logical, rule, tf_name in (("SweepScheduleInvokePermission", "AvailabilityScheduleRule", "sweep"),
                                   ("SweepInvokePermission", "SweepRule", "restarts")):
        perm = TEMPLATE["Resources"][logical]["Properties"]
        assert perm["SourceArn"] == {"Fn::GetAtt": [rule, "Arn"]}
        assert perm["FunctionName"] == {"Ref": "SweepFunction"}
        tf_perm = TF["resource"]["aws_lambda_permission"][tf_name]
        assert tf_perm["function_name"] == '${aws_lambda_function.this["sweep"].function_name}'
    assert TF["resource"]["aws_lambda_permission"]["sweep"]["source_arn"] == \
        "${aws_cloudwatch_event_rule.availability.arn}"
    assert TF["resource"]["aws_lambda_permission"]["restarts"]["source_arn"] == "${aws_cloudwatch_event_rule.sweep.arn}"
    # the DLQ lets exactly these rules in
    condition = TEMPLATE["Resources"]["EventsDeadLetterQueuePolicy"]["Properties"]["PolicyDocument"]["Statement"][0]
    assert {r["Fn::GetAtt"][0] for r in condition["Condition"]["ArnEquals"]["aws:SourceArn"]} == set(cfn_rules)


# the two queue alarms are written out: their names follow the queue's suffix (events-dlq,
# function-failures) while the queues keep generated names, and a Fn::ForEach with a FindInMap name
# is E3019 to cfn-lint (it cannot tell the two names apart)
SINGLE_ALARMS = ("SamplerLivenessAlarm", "SlackSecretUnreadableAlarm", "AlertOnlyEntryUnmatchedAlarm",
                 "EventsDeadLetterQueueAlarm", "FunctionFailureQueueAlarm")


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
    # folded: every alarm but the single ones comes from scripts/gen_alarms.py's tables, inside its block
    text = iac.TEMPLATE.read_text()
    generated = text.split(gen_alarms.BEGIN.format(part="alarms"))[1].split(gen_alarms.END.format(part="alarms"))[0]
    raw = iac.raw_template()["Resources"]
    repeated = {k for k, v in raw.items() if v["Type"] == "AWS::CloudWatch::Alarm" and k not in SINGLE_ALARMS}
    assert repeated == {line[2:-1] for line in generated.splitlines() if line.startswith("  ") and line[2] != " "
                        and line.endswith(":") and not line.startswith("  #")}
    assert len(repeated) == 4 * 4 + 5 * 2 + gen_alarms.SILENCE_SLOTS

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
    # the same texts on both sides (the generator's tables are template.yaml's one source)
    assert TF["locals"]["function_alarm_text"] == gen_alarms.FUNCTION_METRICS
    assert TF["locals"]["rule_alarm_text"] == gen_alarms.RULE_METRICS
    assert set(gen_alarms.FUNCTIONS.values()) == set(CFN_FUNCTION.values())
    assert set(gen_alarms.RULES) == set(CFN_RULES)
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
    # a route's Slack secret (issue 35 item 4) is read the same way, and alarmed the same way
    assert _cfn_alarms(AlertChannelSecretArns=SLACK_ARN)[key] == on[key]
    assert tf["count"] == "${local.has_any_slack_secret ? 1 : 0}"
    assert TF["locals"]["has_any_slack_secret"] == (
        "${local.has_slack_webhook || length(local.alert_channel_secret_arns) > 0}")
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


def test_the_generated_alarm_blocks_are_current() -> None:
    """Issue 29 item 1: template.yaml's BEGIN/END GENERATED blocks are what scripts/gen_alarms.py writes
    (edit its tables, then run it); the SAM CLI cannot build Fn::ForEach, so none is left."""
    text = iac.TEMPLATE.read_text()
    assert gen_alarms.update(text) == text, "template.yaml is stale: run python3 scripts/gen_alarms.py"
    raw = iac.raw_template()
    assert raw["Transform"] == "AWS::Serverless-2016-10-31"  # no AWS::LanguageExtensions
    assert not [k for section in ("Conditions", "Resources", "Outputs") for k in raw[section] if k.startswith("Fn::")]


def test_the_generator_check_fails_on_a_stale_or_unmarked_copy(tmp_path) -> None:
    """A hand edit inside a block is reported (exit 1) and nothing written; a lost marker is exit 2."""
    text = iac.TEMPLATE.read_text()
    stale = tmp_path / "template.yaml"
    stale.write_text(text.replace("      MetricName: Throttles\n", "      MetricName: Throttle\n", 1))
    assert stale.read_text() != text
    assert gen_alarms.main(["--check", "--template", str(stale)]) == 1
    assert "MetricName: Throttle\n" in stale.read_text()
    assert gen_alarms.main(["--template", str(stale)]) == 0 and stale.read_text() == text
    stale.write_text(text.replace(gen_alarms.END.format(part="alarms"), ""))
    assert gen_alarms.main(["--check", "--template", str(stale)]) == 2
    with pytest.raises(ValueError, match="END GENERATED alarms"):
        gen_alarms.update(stale.read_text())


def test_silence_slots_match_the_parameter_limit_on_both_sides() -> None:
    """SilenceAlarmAccountIds takes at most SILENCE_SLOTS ids on both paths: one more is refused."""
    from parity import cfn_accepts

    ids = [f"{n:012d}" for n in range(1, gen_alarms.SILENCE_SLOTS + 2)]
    assert cfn_accepts("SilenceAlarmAccountIds", ",".join(ids[:-1]))
    assert not cfn_accepts("SilenceAlarmAccountIds", ",".join(ids))
    condition = TF["variable"]["silence_alarm_account_ids"]["validation"][0]["condition"]
    assert f"{{0,{gen_alarms.SILENCE_SLOTS - 1}}}" in condition
    full = ",".join(ids[:-1])
    on = _cfn_alarms(iac.load_template(SilenceAlarmAccountIds=full), SilenceAlarmAccountIds=full)
    assert {k[2] for k in on if k[0] == "EcsGuardrail/Events"} == set(ids[:-1])
