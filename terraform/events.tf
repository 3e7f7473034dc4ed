# EventBridge on the default bus. Patterns mirror events/patterns.json (tests/infra checks it).

resource "aws_cloudwatch_event_rule" "recorder" {
  name          = "${var.name}-recorder"
  description   = "Every ECS event to the recorder (event types it does not read are kept with a note)."
  event_pattern = <<-EOT
    {
      "source": ["aws.ecs"]
    }
  EOT
  tags          = var.tags
}

resource "aws_cloudwatch_event_rule" "watchdog" {
  name          = "${var.name}-watchdog"
  description   = "Only what the watchdog reads, filtered at the bus - stopped tasks, Spot notices, SERVICE_TASK_START_IMPAIRED, SERVICE_STEADY_STATE and deployment state changes."
  event_pattern = <<-EOT
    {
      "source": ["aws.ecs"],
      "replay-name": [{"exists": false}],
      "$or": [
        {"detail-type": ["ECS Task State Change"], "detail": {"lastStatus": ["STOPPED"]}},
        {"detail-type": ["ECS Task State Change"], "detail": {"stopCode": ["SpotInterruption", "TerminationNotice"]}},
        {"detail-type": ["ECS Task State Change"], "detail": {"stoppedReason": [{"prefix": "Your Spot Task"}]}},
        {"detail-type": ["ECS Service Action"], "detail": {"eventName": ["SERVICE_TASK_START_IMPAIRED"]}},
        {"detail-type": ["ECS Service Action"], "detail": {"eventName": ["SERVICE_STEADY_STATE"]}},
        {"detail-type": ["ECS Deployment State Change"]}
      ]
    }
  EOT
  tags          = var.tags
}

resource "aws_cloudwatch_event_rule" "ecs_events_log" {
  name          = "${var.name}-ecs-events-log"
  description   = "Raw copy of every ECS event to CloudWatch Logs (the source of the optional per-account silence metric)."
  event_pattern = <<-EOT
    {"source": ["aws.ecs"]}
  EOT
  tags          = var.tags
}

resource "aws_cloudwatch_event_rule" "availability" {
  name                = "${var.name}-availability"
  description         = "Runs the availability sampler, and the sweep function (due probes, owed recoveries)."
  schedule_expression = var.sample_schedule
  tags                = var.tags
}

# BEGIN lane (issue 32 item 3): the sampler's container-restart observations (restart-policy loops emit
# no ECS event) to the sweep function, from this stack's account only (a member account may put events
# on the bus in cross-account mode)
resource "aws_cloudwatch_event_rule" "sweep" {
  name          = "${var.name}-restarts"
  description   = "The sampler's container-restart observations to the sweep function (the crash path's own lane)."
  event_pattern = <<-EOT
    {
      "source": ["ecs-guardrail"],
      "replay-name": [{"exists": false}],
      "detail-type": ["Container Restarts"],
      "account": ["${local.account_id}"]
    }
  EOT
  tags          = var.tags
}
# END lane

# One target per rule, each with the events dead-letter queue and a retry policy. The watchdog's waits
# for the alert-only deny (and on destroy goes before it): the function is never reachable without it.
locals {
  event_targets = {
    recorder       = { rule = aws_cloudwatch_event_rule.recorder.name, target_id = "recorder", arn = aws_lambda_function.this["recorder"].arn, retries = 185, max_age = 86400 }
    watchdog       = { rule = aws_cloudwatch_event_rule.watchdog.name, target_id = "watchdog", arn = aws_lambda_function.this["watchdog"].arn, retries = 185, max_age = 86400 }
    ecs_events_log = { rule = aws_cloudwatch_event_rule.ecs_events_log.name, target_id = "raw-log", arn = aws_cloudwatch_log_group.ecs_events.arn, retries = 185, max_age = 86400 }
    availability   = { rule = aws_cloudwatch_event_rule.availability.name, target_id = "availability", arn = aws_lambda_function.this["availability"].arn, retries = 3, max_age = 900 }
    # the sweep runs in its own lane, the sweep function (issue 32 item 3)
    sweep = { rule = aws_cloudwatch_event_rule.availability.name, target_id = "sweep", arn = aws_lambda_function.this["sweep"].arn, retries = 3, max_age = 900 }
    # lane: the restart observations to the sweep function
    restarts = { rule = aws_cloudwatch_event_rule.sweep.name, target_id = "sweep", arn = aws_lambda_function.this["sweep"].arn, retries = 185, max_age = 86400 }
  }
}

resource "aws_cloudwatch_event_target" "this" {
  for_each = local.event_targets

  rule      = each.value.rule
  target_id = each.value.target_id
  arn       = each.value.arn

  dead_letter_config {
    arn = aws_sqs_queue.events_dlq.arn
  }
  retry_policy {
    maximum_retry_attempts       = each.value.retries
    maximum_event_age_in_seconds = each.value.max_age
  }

  depends_on = [aws_iam_role_policy.watchdog_deny_alert_only, aws_iam_role_policy.sweep_deny_alert_only]
}

moved {
  from = aws_cloudwatch_event_target.recorder
  to   = aws_cloudwatch_event_target.this["recorder"]
}
moved {
  from = aws_cloudwatch_event_target.watchdog
  to   = aws_cloudwatch_event_target.this["watchdog"]
}
moved {
  from = aws_cloudwatch_event_target.ecs_events_log
  to   = aws_cloudwatch_event_target.this["ecs_events_log"]
}
moved {
  from = aws_cloudwatch_event_target.availability
  to   = aws_cloudwatch_event_target.this["availability"]
}

resource "aws_lambda_permission" "events" {
  for_each = {
    recorder     = aws_cloudwatch_event_rule.recorder.arn
    watchdog     = aws_cloudwatch_event_rule.watchdog.arn
    availability = aws_cloudwatch_event_rule.availability.arn
  }

  statement_id  = "AllowEventBridge"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.this[each.key].function_name
  principal     = "events.amazonaws.com"
  source_arn    = each.value
}

resource "aws_lambda_permission" "sweep" {
  statement_id  = "AllowEventBridgeSweep"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.this["sweep"].function_name
  principal     = "events.amazonaws.com"
  source_arn    = aws_cloudwatch_event_rule.availability.arn
}

# lane: the restart observations' rule may invoke the sweep function
resource "aws_lambda_permission" "restarts" {
  statement_id  = "AllowEventBridgeRestarts"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.this["sweep"].function_name
  principal     = "events.amazonaws.com"
  source_arn    = aws_cloudwatch_event_rule.sweep.arn
}

resource "aws_cloudwatch_event_archive" "ecs" {
  name             = "${var.name}-ecs"
  description      = "Every ECS event, for `aws events start-replay`."
  event_source_arn = local.default_bus_arn
  retention_days   = var.archive_retention_days
  event_pattern    = <<-EOT
    {"source": ["aws.ecs"]}
  EOT
}

# Cross-account mode: member accounts forward their ECS events here (examples/member-account).
resource "aws_cloudwatch_event_permission" "member_accounts" {
  for_each = toset(local.source_account_ids)

  principal      = each.key
  statement_id   = "${var.name}-member-${each.key}"
  action         = "events:PutEvents"
  event_bus_name = "default"
}
