# org (issue 32 item 4): one stack per account of an organisation, alerts central (docs/deploy.md,
# "An organisation"). template.yaml's "org" blocks are the same: CentralAlertTopicArn, AccountName,
# CentralEventBusArn, the watchdog's grant on the central topic, the heartbeat rule and its role.

variable "central_alert_topic_arn" {
  description = "The organisation's alert topic (in the central account): this stack's alerts go there instead of its own topic, naming this account. Empty: the stack's own topic. Its own alarms stay on its own topic."
  type        = string
  default     = ""

  validation {
    condition     = can(regex("^(arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256})?$", var.central_alert_topic_arn))
    error_message = "central_alert_topic_arn: an SNS topic ARN, or empty."
  }
}

variable "account_name" {
  description = "Optional name of this account (an alias such as payments-prod), shown beside its id in every alert."
  type        = string
  default     = ""

  validation {
    condition     = can(regex("^([A-Za-z0-9][A-Za-z0-9._-]{0,49})?$", var.account_name))
    error_message = "account_name: 1-50 letters, digits, '.', '_' or '-' (starting with a letter or digit), or empty."
  }
}

variable "central_event_bus_arn" {
  description = "The central account's default bus: a rule of this stack sends it a heartbeat every 5 minutes, so the central alarms name an account whose stack was deleted. Empty: none."
  type        = string
  default     = ""

  validation {
    condition     = can(regex("^(arn:aws[a-z-]*:events:[a-z0-9-]+:[0-9]{12}:event-bus/[A-Za-z0-9._-]{1,256})?$", var.central_event_bus_arn))
    error_message = "central_event_bus_arn: an EventBridge event bus ARN, or empty."
  }
}

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
