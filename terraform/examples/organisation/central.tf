# The central account (deploy/central.yaml is the same for CloudFormation): the organisation's alert
# topic, the member heartbeats on its default bus, counted per account, and one silence alarm per member.

data "aws_caller_identity" "central" {}
data "aws_partition" "central" {}

locals {
  central_bus_arn = "arn:${data.aws_partition.central.partition}:events:${var.region}:${data.aws_caller_identity.central.account_id}:event-bus/default"
}

# Subscribe AWS Chatbot (Slack, Teams) here: the members' default SNS_FORMAT=chatbot is its JSON.
resource "aws_sns_topic" "org_alerts" {
  #checkov:skip=CKV_AWS_26:Alert text only, no secrets. The AWS managed SNS key cannot be used by other accounts (every member's publish would be refused); a CMK needs a key policy for the organisation and kms grants on every member role.
  name = "${local.name}-org-alerts"
}

data "aws_iam_policy_document" "org_alerts" {
  statement {
    sid       = "OrganisationPublishes"
    actions   = ["sns:Publish"]
    resources = [aws_sns_topic.org_alerts.arn]
    principals {
      type        = "AWS"
      identifiers = ["*"]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:PrincipalOrgID"
      values   = [var.organization_id]
    }
  }
  statement {
    sid       = "OwnAlarms"
    actions   = ["sns:Publish"]
    resources = [aws_sns_topic.org_alerts.arn]
    principals {
      type        = "Service"
      identifiers = ["cloudwatch.amazonaws.com"]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [data.aws_caller_identity.central.account_id]
    }
  }
}

resource "aws_sns_topic_policy" "org_alerts" {
  arn    = aws_sns_topic.org_alerts.arn
  policy = data.aws_iam_policy_document.org_alerts.json
}

# the members' heartbeat rules may put their events on this default bus (organisation only)
resource "aws_cloudwatch_event_permission" "member_heartbeats" {
  principal    = "*"
  statement_id = "${local.name}-member-heartbeats"
  condition {
    key   = "aws:PrincipalOrgID"
    type  = "StringEquals"
    value = var.organization_id
  }
}

resource "aws_cloudwatch_log_group" "heartbeats" {
  #checkov:skip=CKV_AWS_158:Heartbeats only (an account id and a time); CloudWatch Logs encrypts at rest by default.
  #checkov:skip=CKV_AWS_338:Heartbeats are counted as they arrive; two weeks is enough to see when an account went silent.
  name              = "/aws/events/${local.name}/heartbeats"
  retention_in_days = 14
}

data "aws_iam_policy_document" "heartbeats_to_logs" {
  statement {
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.heartbeats.arn}:*"]
    principals {
      type        = "Service"
      identifiers = ["events.amazonaws.com", "delivery.logs.amazonaws.com"]
    }
  }
}

resource "aws_cloudwatch_log_resource_policy" "heartbeats" {
  policy_name     = "${local.name}-heartbeats-to-logs"
  policy_document = data.aws_iam_policy_document.heartbeats_to_logs.json
}

resource "aws_cloudwatch_event_rule" "member_heartbeats" {
  name        = "${local.name}-member-heartbeats"
  description = "The ecs-guardrail member stacks' heartbeats (their NAME-heartbeat rules), one log line each."
  event_pattern = jsonencode({
    source        = ["aws.events"]
    "detail-type" = ["Scheduled Event"]
    resources     = [{ wildcard = "arn:*:events:*:*:rule/*-heartbeat" }]
  })
}

resource "aws_cloudwatch_event_target" "member_heartbeats" {
  rule      = aws_cloudwatch_event_rule.member_heartbeats.name
  target_id = "heartbeat-log"
  arn       = aws_cloudwatch_log_group.heartbeats.arn
}

# the account is the event's own "account" field: EventBridge sets it to the sender's account
resource "aws_cloudwatch_log_metric_filter" "heartbeats_by_account" {
  name           = "${local.name}-heartbeats-by-account"
  log_group_name = aws_cloudwatch_log_group.heartbeats.name
  pattern        = "{ $.source = \"aws.events\" }"
  metric_transformation {
    namespace  = "EcsGuardrail/Org"
    name       = "Heartbeats"
    value      = "1"
    unit       = "Count"
    dimensions = { Account = "$.account" }
  }
}

resource "aws_cloudwatch_metric_alarm" "silent" {
  for_each            = local.members
  alarm_name          = "${local.name}-silent-${each.value}"
  alarm_description   = "Account ${each.value} (${each.key}) sent no ecs-guardrail heartbeat for ${var.silent_minutes} minutes: its stack was deleted (or its heartbeat rule disabled), or the bus policy no longer lets it in. Its alerts have stopped too."
  namespace           = "EcsGuardrail/Org"
  metric_name         = "Heartbeats"
  dimensions          = { Account = each.value }
  statistic           = "Sum"
  period              = 60
  evaluation_periods  = var.silent_minutes
  datapoints_to_alarm = var.silent_minutes
  threshold           = 1
  comparison_operator = "LessThanThreshold"
  treat_missing_data  = "breaching"
  alarm_actions       = [aws_sns_topic.org_alerts.arn]
  ok_actions          = [aws_sns_topic.org_alerts.arn]
}
