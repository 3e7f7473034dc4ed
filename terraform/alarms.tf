# Alarms publish to the alert topic: both failure paths, per function and per rule failures, the
# sampler's liveness and (optional) per-account silence. Texts match template.yaml's Mappings.

locals {
  queue_alarms = {
    events_dlq        = aws_sqs_queue.events_dlq.name
    function_failures = aws_sqs_queue.function_failures.name
  }
  function_alarm_text = {
    Errors                      = "invocations failed (retried twice, then kept in the function-failures queue)"
    Throttles                   = "invocations were throttled (async retries keep the events up to the maximum event age)"
    DestinationDeliveryFailures = "a failed invocation could not be sent to the on-failure destination queue (the event is lost)"
    AsyncEventsDropped          = "async events were dropped without running (maximum event age or retries exhausted)"
  }
  rule_alarm_text = {
    FailedInvocations              = "EventBridge could not invoke the target (it retries, then dead-letters)"
    InvocationsFailedToBeSentToDlq = "EventBridge could not put a failed event in the dead-letter queue (the event is lost)"
  }
  rule_names = {
    recorder       = aws_cloudwatch_event_rule.recorder.name
    watchdog       = aws_cloudwatch_event_rule.watchdog.name
    ecs_events_log = aws_cloudwatch_event_rule.ecs_events_log.name
    availability   = aws_cloudwatch_event_rule.availability.name
    sweep          = aws_cloudwatch_event_rule.sweep.name # lane (issue 32 item 3)
  }
  # one alarm per (function, metric) and per (rule, metric)
  function_alarms = {
    for pair in setproduct(keys(local.functions), keys(local.function_alarm_text)) :
    "${pair[0]}-${pair[1]}" => { function = pair[0], metric = pair[1] }
  }
  rule_alarms = {
    for pair in setproduct(keys(local.rule_names), keys(local.rule_alarm_text)) :
    "${pair[0]}-${pair[1]}" => { rule = pair[0], metric = pair[1] }
  }
  silence_alarm_account_ids = compact([for a in split(",", var.silence_alarm_account_ids) : trimspace(a)])
}

# Both failure paths: either queue not empty.
resource "aws_cloudwatch_metric_alarm" "queue" {
  for_each = local.queue_alarms

  alarm_name          = "${each.value}-not-empty"
  alarm_description   = "${each.value} is not empty: EventBridge could not deliver an event to a rule target (events_dlq), or an invocation failed after Lambda's retries (function_failures)."
  namespace           = "AWS/SQS"
  metric_name         = "ApproximateNumberOfMessagesVisible"
  dimensions          = { QueueName = each.value }
  statistic           = "Maximum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alerts.arn]
  tags                = var.tags
}

resource "aws_cloudwatch_metric_alarm" "function" {
  for_each = local.function_alarms

  alarm_name          = "${aws_lambda_function.this[each.value.function].function_name}-${each.value.metric}"
  alarm_description   = "${each.value.function} function (AWS/Lambda ${each.value.metric}): ${local.function_alarm_text[each.value.metric]}."
  namespace           = "AWS/Lambda"
  metric_name         = each.value.metric
  dimensions          = { FunctionName = aws_lambda_function.this[each.value.function].function_name }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alerts.arn]
  tags                = var.tags
}

resource "aws_cloudwatch_metric_alarm" "rule" {
  for_each = local.rule_alarms

  alarm_name          = "${local.rule_names[each.value.rule]}-${each.value.metric}"
  alarm_description   = "${each.value.rule} rule (AWS/Events ${each.value.metric}): ${local.rule_alarm_text[each.value.metric]}."
  namespace           = "AWS/Events"
  metric_name         = each.value.metric
  dimensions          = { RuleName = local.rule_names[each.value.rule] }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alerts.arn]
  tags                = var.tags
}

# The Slack secret could not be read (AccessDenied: usually a partial ARN): alerts go to SNS only.
resource "aws_cloudwatch_metric_alarm" "slack_secret_unreadable" {
  # the default channel's secret or a route's (issue 35 item 4)
  count = local.has_any_slack_secret ? 1 : 0

  alarm_name          = "${var.name}-slack-secret-unreadable"
  alarm_description   = "The watchdog could not read the Slack webhook secret (see its log); alerts reach SNS only."
  namespace           = "EcsGuardrail"
  metric_name         = "SlackSecretUnreadable"
  dimensions          = { service = "ecs-guardrail" }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alerts.arn]
  tags                = var.tags
}

# An alert_only_clusters entry that matches no cluster of this account and region (a typo such as
# "prodution") protects nothing: the watchdog counts such entries on every invocation (ListClusters once
# per cold start).
resource "aws_cloudwatch_metric_alarm" "alert_only_entry_unmatched" {
  alarm_name          = "${var.name}-alert-only-entry-unmatched"
  alarm_description   = "An alert_only_clusters entry matches no ECS cluster of this account and region (see the watchdog's log): it makes nothing alert-only, and the cluster it meant may be scaled."
  namespace           = "EcsGuardrail"
  metric_name         = "AlertOnlyEntriesUnmatched"
  dimensions          = { service = "ecs-guardrail" }
  statistic           = "Maximum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alerts.arn]
  tags                = var.tags
}

# Who watches the watchdog: the scheduled sampler runs whatever the fleet does, so no invocation for
# heartbeat_minutes means the schedule, EventBridge or Lambda is broken (a quiet fleet at night is not).
resource "aws_cloudwatch_metric_alarm" "sampler_liveness" {
  alarm_name          = "${var.name}-sampler-not-running"
  alarm_description   = "The scheduled availability sampler was not invoked for heartbeat_minutes; the guardrail may be down."
  namespace           = "AWS/Lambda"
  metric_name         = "Invocations"
  dimensions          = { FunctionName = aws_lambda_function.this["availability"].function_name }
  statistic           = "Sum"
  period              = 60
  evaluation_periods  = var.heartbeat_minutes
  datapoints_to_alarm = var.heartbeat_minutes
  threshold           = 1
  comparison_operator = "LessThanThreshold"
  treat_missing_data  = "breaching"
  alarm_actions       = [aws_sns_topic.alerts.arn]
  ok_actions          = [aws_sns_topic.alerts.arn]
  tags                = var.tags
}

# Optional per-account silence: ECS events per account, counted from the raw copy of every event.
resource "aws_cloudwatch_log_metric_filter" "ecs_events_by_account" {
  count = length(local.silence_alarm_account_ids) > 0 ? 1 : 0

  name           = "${var.name}-ecs-events-by-account"
  log_group_name = aws_cloudwatch_log_group.ecs_events.name
  pattern        = "{ $.source = \"aws.ecs\" }"

  metric_transformation {
    namespace  = "EcsGuardrail/Events"
    name       = "EcsEvents"
    value      = "1"
    unit       = "Count"
    dimensions = { Account = "$.account" }
  }
}

resource "aws_cloudwatch_metric_alarm" "account_silence" {
  for_each = toset(local.silence_alarm_account_ids)

  alarm_name          = "${var.name}-no-ecs-events-from-${each.key}"
  alarm_description   = "No ECS event from account ${each.key} reached the raw event log for silence_alarm_minutes."
  namespace           = "EcsGuardrail/Events"
  metric_name         = "EcsEvents"
  dimensions          = { Account = each.key }
  statistic           = "Sum"
  period              = 60
  evaluation_periods  = var.silence_alarm_minutes
  datapoints_to_alarm = var.silence_alarm_minutes
  threshold           = 1
  comparison_operator = "LessThanThreshold"
  treat_missing_data  = "breaching"
  alarm_actions       = [aws_sns_topic.alerts.arn]
  ok_actions          = [aws_sns_topic.alerts.arn]
  tags                = var.tags
  depends_on          = [aws_cloudwatch_log_metric_filter.ecs_events_by_account]
}

# Renamed in the fold (CHANGELOG): existing deployments keep their alarms.
moved {
  from = aws_cloudwatch_metric_alarm.events_dlq
  to   = aws_cloudwatch_metric_alarm.queue["events_dlq"]
}
moved {
  from = aws_cloudwatch_metric_alarm.function_failures
  to   = aws_cloudwatch_metric_alarm.queue["function_failures"]
}
moved {
  from = aws_cloudwatch_metric_alarm.errors["recorder"]
  to   = aws_cloudwatch_metric_alarm.function["recorder-Errors"]
}
moved {
  from = aws_cloudwatch_metric_alarm.errors["watchdog"]
  to   = aws_cloudwatch_metric_alarm.function["watchdog-Errors"]
}
moved {
  from = aws_cloudwatch_metric_alarm.errors["availability"]
  to   = aws_cloudwatch_metric_alarm.function["availability-Errors"]
}
moved {
  from = aws_cloudwatch_metric_alarm.throttles["recorder"]
  to   = aws_cloudwatch_metric_alarm.function["recorder-Throttles"]
}
moved {
  from = aws_cloudwatch_metric_alarm.throttles["watchdog"]
  to   = aws_cloudwatch_metric_alarm.function["watchdog-Throttles"]
}
moved {
  from = aws_cloudwatch_metric_alarm.throttles["availability"]
  to   = aws_cloudwatch_metric_alarm.function["availability-Throttles"]
}
moved {
  from = aws_cloudwatch_metric_alarm.heartbeat
  to   = aws_cloudwatch_metric_alarm.sampler_liveness
}
