# Exactly the calls each handler makes (ecs_guardrail.iam.handler_permissions), on the narrowest
# resources; the rest is the Lambda platform: its own log group, X-Ray segments, and the on-failure
# destination (Lambda sends to it with the function's role). tests/infra walks both sides.

data "aws_iam_policy_document" "assume_lambda" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["lambda.amazonaws.com"]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [local.account_id]
    }
  }
}

resource "aws_iam_role" "function" {
  for_each = local.functions

  name               = "${var.name}-${each.key}"
  assume_role_policy = data.aws_iam_policy_document.assume_lambda.json
  tags               = var.tags
}

data "aws_iam_policy_document" "recorder" {
  statement {
    sid       = "HistoryTable"
    actions   = ["dynamodb:PutItem"]
    resources = [aws_dynamodb_table.history.arn]
  }
  statement {
    sid       = "OwnLogGroup"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.function["recorder"].arn}:*"]
  }
  statement {
    sid       = "Tracing"
    actions   = ["xray:PutTelemetryRecords", "xray:PutTraceSegments"]
    resources = ["*"]
  }
  statement {
    sid       = "OnFailureDestination"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.function_failures.arn]
  }
}

data "aws_iam_policy_document" "watchdog" {
  statement {
    sid       = "HistoryTable"
    actions   = ["dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"]
    resources = [aws_dynamodb_table.history.arn, "${aws_dynamodb_table.history.arn}/index/*"]
  }
  statement {
    sid       = "EcsServices"
    actions   = ["ecs:DescribeServices", "ecs:TagResource", "ecs:UpdateService"]
    resources = [local.ecs_service_arns]
  }
  statement {
    sid       = "NoResourceLevelPermissions"
    actions   = ["ecs:ListServices"]
    resources = ["*"]
  }
  statement {
    sid       = "AlertTopic"
    actions   = ["sns:Publish"]
    resources = [aws_sns_topic.alerts.arn]
  }
  dynamic "statement" {
    for_each = local.has_slack_webhook ? [var.slack_webhook_secret_arn] : []
    content {
      sid       = "SlackWebhookSecret"
      actions   = ["secretsmanager:GetSecretValue"]
      resources = [statement.value]
    }
  }
  statement {
    sid       = "OwnLogGroup"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.function["watchdog"].arn}:*"]
  }
  statement {
    sid       = "Tracing"
    actions   = ["xray:PutTelemetryRecords", "xray:PutTraceSegments"]
    resources = ["*"]
  }
  statement {
    sid       = "OnFailureDestination"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.function_failures.arn]
  }
}

# Production unreachable by construction: an explicit Deny beats any Allow, so even a bug in the policy
# code cannot scale or tag a service of an alert-only cluster (any region, any account).
data "aws_iam_policy_document" "watchdog_deny_alert_only" {
  statement {
    sid       = "DenyActingOnAlertOnlyClusters"
    effect    = "Deny"
    actions   = ["ecs:TagResource", "ecs:UpdateService"]
    resources = local.alert_only_service_arns
  }
}

data "aws_iam_policy_document" "availability" {
  statement {
    sid       = "HistoryTable"
    actions   = ["dynamodb:PutItem"]
    resources = [aws_dynamodb_table.history.arn]
  }
  statement {
    sid       = "EcsServices"
    actions   = ["ecs:DescribeServices"]
    resources = [local.ecs_service_arns]
  }
  statement {
    sid       = "NoResourceLevelPermissions"
    actions   = ["cloudwatch:GetMetricData", "ecs:ListClusters", "ecs:ListServices", "elasticloadbalancing:DescribeTargetGroups"]
    resources = ["*"]
  }
  statement {
    sid       = "OwnLogGroup"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.function["availability"].arn}:*"]
  }
  statement {
    sid       = "Tracing"
    actions   = ["xray:PutTelemetryRecords", "xray:PutTraceSegments"]
    resources = ["*"]
  }
  statement {
    sid       = "OnFailureDestination"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.function_failures.arn]
  }
}

resource "aws_iam_role_policy" "function" {
  for_each = {
    recorder     = data.aws_iam_policy_document.recorder.json
    watchdog     = data.aws_iam_policy_document.watchdog.json
    availability = data.aws_iam_policy_document.availability.json
  }

  name   = each.key
  role   = aws_iam_role.function[each.key].id
  policy = each.value
}

resource "aws_iam_role_policy" "watchdog_deny_alert_only" {
  name   = "deny-alert-only-clusters"
  role   = aws_iam_role.function["watchdog"].id
  policy = data.aws_iam_policy_document.watchdog_deny_alert_only.json
}
