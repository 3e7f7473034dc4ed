# org (issue 32 item 4): one stack per account of an organisation, alerts central (docs/deploy.md,
# "An organisation"). template.yaml's "org" blocks are the same: CentralAlertTopicArn, AccountName,
# CentralEventBusArn, the watchdog's grant on the central topic, the heartbeat rule and its role.
# Its variables are at the end of variables.tf (the validation tests read that file alone).

locals {
  has_central_alert_topic = var.central_alert_topic_arn != ""
  has_central_event_bus   = var.central_event_bus_arn != ""
}

# The heartbeat: a scheduled rule puts its event on the central default bus; the central account counts
# them per account and alarms on the account whose heartbeats stop (a deleted stack takes its rule with
# it). The role may put events on that one bus, for this account's rules only.
data "aws_iam_policy_document" "heartbeat_trust" {
  count = local.has_central_event_bus ? 1 : 0
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["events.amazonaws.com"]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [local.account_id]
    }
  }
}

data "aws_iam_policy_document" "heartbeat" {
  count = local.has_central_event_bus ? 1 : 0
  statement {
    actions   = ["events:PutEvents"]
    resources = [var.central_event_bus_arn]
  }
}

resource "aws_iam_role" "heartbeat" {
  count              = local.has_central_event_bus ? 1 : 0
  name_prefix        = "${substr("${var.name}-heartbeat", 0, 37)}-"
  assume_role_policy = data.aws_iam_policy_document.heartbeat_trust[0].json
  tags               = var.tags
}

resource "aws_iam_role_policy" "heartbeat" {
  count  = local.has_central_event_bus ? 1 : 0
  name   = "heartbeat-to-central-bus"
  role   = aws_iam_role.heartbeat[0].id
  policy = data.aws_iam_policy_document.heartbeat[0].json
}

resource "aws_cloudwatch_event_rule" "heartbeat" {
  count               = local.has_central_event_bus ? 1 : 0
  name                = "${var.name}-heartbeat"
  description         = "Every 5 minutes, a heartbeat of this account's ecs-guardrail stack to the central account's bus."
  schedule_expression = "rate(5 minutes)"
  tags                = var.tags
}

# a lost heartbeat is the next one's job (5 minutes later; the central alarm allows 2 missing)
resource "aws_cloudwatch_event_target" "heartbeat" {
  count     = local.has_central_event_bus ? 1 : 0
  rule      = aws_cloudwatch_event_rule.heartbeat[0].name
  target_id = "central-bus"
  arn       = var.central_event_bus_arn
  role_arn  = aws_iam_role.heartbeat[0].arn
}
