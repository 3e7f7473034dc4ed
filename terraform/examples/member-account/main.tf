# Cross-account mode, member side: forward this account's ECS events to the central account's default
# bus, where ecs-guardrail runs with source_account_ids including this account.

provider "aws" {
  region = var.region
}

data "aws_partition" "current" {}

data "aws_caller_identity" "current" {}

data "aws_iam_policy_document" "assume_events" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["events.amazonaws.com"]
    }
    # only this account's rules may use the role (confused deputy; as the central function's trust)
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [data.aws_caller_identity.current.account_id]
    }
  }
}

resource "aws_iam_role" "forward" {
  name_prefix        = "ecs-guardrail-forward-" # IAM names are per account: one per region
  assume_role_policy = data.aws_iam_policy_document.assume_events.json
}

data "aws_iam_policy_document" "forward" {
  statement {
    actions   = ["events:PutEvents"]
    resources = [var.central_event_bus_arn]
  }
}

resource "aws_iam_role_policy" "forward" {
  name   = "put-events-to-central-bus"
  role   = aws_iam_role.forward.id
  policy = data.aws_iam_policy_document.forward.json
}

resource "aws_cloudwatch_event_rule" "forward" {
  name          = "ecs-guardrail-forward"
  description   = "Every ECS event to the central ecs-guardrail account."
  event_pattern = <<-EOT
    {"source": ["aws.ecs"]}
  EOT
}

resource "aws_sqs_queue" "forward_dlq" {
  name                      = "ecs-guardrail-forward-dlq"
  message_retention_seconds = 1209600
  sqs_managed_sse_enabled   = true
}

resource "aws_sqs_queue_policy" "forward_dlq" {
  queue_url = aws_sqs_queue.forward_dlq.id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Principal = { Service = "events.amazonaws.com" }
      Action    = "sqs:SendMessage"
      Resource  = aws_sqs_queue.forward_dlq.arn
      Condition = { ArnEquals = { "aws:SourceArn" = aws_cloudwatch_event_rule.forward.arn } }
    }]
  })
}

resource "aws_cloudwatch_event_target" "forward" {
  rule      = aws_cloudwatch_event_rule.forward.name
  target_id = "central-bus"
  arn       = var.central_event_bus_arn
  role_arn  = aws_iam_role.forward.arn

  dead_letter_config {
    arn = aws_sqs_queue.forward_dlq.arn
  }
  retry_policy {
    maximum_retry_attempts       = 185
    maximum_event_age_in_seconds = 86400
  }
}

# A dead forwarder is invisible centrally: alarm on its dead-letter queue here.
resource "aws_cloudwatch_metric_alarm" "forward_dlq" {
  alarm_name          = "ecs-guardrail-forward-dlq-not-empty"
  alarm_description   = "ECS events of this account could not be forwarded to the central ecs-guardrail bus (see the forward dead-letter queue)."
  namespace           = "AWS/SQS"
  metric_name         = "ApproximateNumberOfMessagesVisible"
  dimensions          = { QueueName = aws_sqs_queue.forward_dlq.name }
  statistic           = "Maximum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [var.alarm_topic_arn]
}
