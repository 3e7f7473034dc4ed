# Exactly the calls each handler makes (ecs_guardrail.iam.handler_permissions), on the narrowest
# resources; the rest is the Lambda platform (one base document per function: its own log group, X-Ray
# segments, the on-failure destination Lambda sends to with the function's role), merged in with
# source_policy_documents. tests/infra walks both sides.

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

# IAM names are unique per account and a second region is a second apply: Terraform generates the
# name from this prefix (at most 38 characters).
resource "aws_iam_role" "function" {
  for_each = local.functions

  name_prefix        = "${substr("${var.name}-${each.key}", 0, 37)}-"
  assume_role_policy = data.aws_iam_policy_document.assume_lambda.json
  tags               = var.tags
}

data "aws_iam_policy_document" "platform" {
  for_each = local.functions

  statement {
    sid       = "OwnLogGroup"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.function[each.key].arn}:*"]
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

data "aws_iam_policy_document" "recorder" {
  source_policy_documents = [data.aws_iam_policy_document.platform["recorder"].json]

  statement {
    sid       = "HistoryTable"
    actions   = ["dynamodb:PutItem"]
    resources = [local.history_table_arn]
  }
}

# The crash path's statements, written once: the watchdog and the sweep function (which runs the
# watchdog's code, ecs_guardrail.handlers.lane.USES) both source this document after their own platform
# one (tests/infra/test_parity_iam.py holds both to handler_permissions).
data "aws_iam_policy_document" "crash_path" {
  # the table only: the watchdog queries no index
  statement {
    sid       = "HistoryTable"
    actions   = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"]
    resources = [local.history_table_arn]
  }
  statement {
    sid       = "EcsServices"
    actions   = ["ecs:DescribeServices", "ecs:ListServiceDeployments", "ecs:UpdateService"]
    resources = [local.ecs_service_arns]
  }
  # where a deployment stands (rule 4, deployment_in_progress): the service deployments' own ARNs
  statement {
    sid       = "EcsServiceDeployments"
    actions   = ["ecs:DescribeServiceDeployments"]
    resources = [local.ecs_service_deployment_arns]
  }
  # only the tag the watchdog writes (ecs_guardrail.adapters.ecs.PREVIOUS_COUNT_TAG), never the opt-out tag;
  # UntagResource: a probe's pass restores (EcsService.restore)
  statement {
    sid       = "EcsTagPreviousDesiredCount"
    actions   = ["ecs:TagResource", "ecs:UntagResource"]
    resources = [local.ecs_service_arns]
    condition {
      test     = "ForAllValues:StringEquals"
      variable = "aws:TagKeys"
      values   = ["ecs-guardrail:previous-desired-count"]
    }
    condition {
      test     = "Null"
      variable = "aws:TagKeys"
      values   = ["false"]
    }
  }
  # Scalable-target ARNs carry a random id, not the service: this account and region is the narrowest
  # resource Application Auto Scaling supports.
  statement {
    sid       = "EcsScalableTargets"
    actions   = ["application-autoscaling:RegisterScalableTarget"]
    resources = [local.scalable_target_arns]
  }
  statement {
    sid = "NoResourceLevelPermissions"
    actions = [
      "application-autoscaling:DescribeScalableTargets",
      "cloudwatch:GetMetricData",
      "ecs:DescribeTaskDefinition",
      "ecs:ListClusters",
      "ecs:ListServices",
      "elasticloadbalancing:DescribeTargetGroups",
    ]
    resources = ["*"]
  }
  statement {
    sid       = "AlertTopic"
    actions   = ["sns:Publish"]
    resources = [aws_sns_topic.alerts.arn]
  }
  # BEGIN issue 35 (logs): the last lines of a crashed container, its service's own log group only
  statement {
    sid       = "CrashLogLines"
    actions   = ["logs:FilterLogEvents"]
    resources = ["arn:${local.partition}:logs:${local.region}:${local.account_id}:log-group:${var.crash_log_group_pattern}"]
  }
  # END issue 35 (logs)
  dynamic "statement" {
    for_each = local.has_slack_webhook ? [var.slack_webhook_secret_arn] : []
    content {
      sid       = "SlackWebhookSecret"
      actions   = ["secretsmanager:GetSecretValue"]
      resources = [statement.value]
    }
  }
  # BEGIN alert routes (issue 35 item 4): exactly the named channels' topics and secrets
  dynamic "statement" {
    for_each = length(local.alert_channel_topic_arns) > 0 ? ["sns"] : []
    content {
      sid       = "AlertChannelTopics"
      actions   = ["sns:Publish"]
      resources = local.alert_channel_topic_arns
    }
  }
  dynamic "statement" {
    for_each = length(local.alert_channel_secret_arns) > 0 ? ["secretsmanager"] : []
    content {
      sid       = "AlertChannelSecrets"
      actions   = ["secretsmanager:GetSecretValue"]
      resources = local.alert_channel_secret_arns
    }
  }
  # END alert routes
  dynamic "statement" { # org (issue 32 item 4): the organisation's topic in the central account (org.tf)
    for_each = local.has_central_alert_topic ? [var.central_alert_topic_arn] : []
    content {
      sid       = "CentralAlertTopic"
      actions   = ["sns:Publish"]
      resources = [var.central_alert_topic_arn]
    }
  }
}

data "aws_iam_policy_document" "watchdog" {
  source_policy_documents = [
    data.aws_iam_policy_document.platform["watchdog"].json,
    data.aws_iam_policy_document.crash_path.json,
  ]
}

# Production unreachable by construction: an explicit Deny beats any Allow, so even a bug in the policy
# code cannot scale or tag a service of an alert-only cluster (any region, any account). The functions
# and the event targets depend on its attachment: never live without it, never left without it.
data "aws_iam_policy_document" "watchdog_deny_alert_only" {
  statement {
    sid       = "DenyActingOnAlertOnlyClusters"
    effect    = "Deny"
    actions   = ["ecs:TagResource", "ecs:UntagResource", "ecs:UpdateService"]
    resources = local.alert_only_service_arns
  }
  # Application Auto Scaling can scale a service too, but its ARNs carry a random id and its only
  # condition keys are the namespace and dimension: IAM can deny it per cluster only when every cluster
  # is alert-only. Otherwise the code refuses the call for an alert-only cluster before making it.
  dynamic "statement" {
    for_each = local.every_cluster_alert_only ? ["ecs"] : []
    content {
      sid    = "DenyEcsScalingOnEveryCluster"
      effect = "Deny"
      actions = [
        "application-autoscaling:PutScalingPolicy",
        "application-autoscaling:PutScheduledAction",
        "application-autoscaling:RegisterScalableTarget",
      ]
      resources = ["*"]
      condition {
        test     = "StringEquals"
        variable = "application-autoscaling:service-namespace"
        values   = [statement.value]
      }
    }
  }
}

data "aws_iam_policy_document" "availability" {
  #checkov:skip=CKV_AWS_356:Read-only list and describe calls (ecs:ListClusters, ecs:DescribeClusters, ecs:DescribeTaskDefinition, GetMetricData) that the sampler makes over every cluster; they take no narrower resource here.
  source_policy_documents = [data.aws_iam_policy_document.platform["availability"].json]

  statement {
    sid       = "HistoryTable"
    actions   = ["dynamodb:PutItem"]
    resources = [local.history_table_arn]
  }
  statement {
    sid       = "EcsServices"
    actions   = ["ecs:DescribeServices"]
    resources = [local.ecs_service_arns]
  }
  statement {
    sid       = "NoResourceLevelPermissions"
    actions   = ["cloudwatch:GetMetricData", "ecs:DescribeClusters", "ecs:DescribeTaskDefinition", "ecs:ListClusters", "ecs:ListServices", "elasticloadbalancing:DescribeTargetGroups"]
    resources = ["*"]
  }
  # container-restart observations to the watchdog (restart-policy loops emit no ECS event)
  statement {
    sid       = "RestartObservations"
    actions   = ["events:PutEvents"]
    resources = [local.default_bus_arn]
  }
}

# BEGIN lane (issue 32 item 3): the sweep function runs the watchdog's code (ecs_guardrail.handlers.lane.USES):
# the crash path's statements (above), its own platform statements (its log group), and the alert-only deny
data "aws_iam_policy_document" "sweep" {
  source_policy_documents = [
    data.aws_iam_policy_document.platform["sweep"].json,
    data.aws_iam_policy_document.crash_path.json,
  ]
}

resource "aws_iam_role_policy" "sweep_deny_alert_only" {
  name   = "deny-alert-only-clusters"
  role   = aws_iam_role.function["sweep"].id
  policy = data.aws_iam_policy_document.watchdog_deny_alert_only.json
}
# END lane

resource "aws_iam_role_policy" "function" {
  for_each = {
    recorder     = data.aws_iam_policy_document.recorder.json
    watchdog     = data.aws_iam_policy_document.watchdog.json
    availability = data.aws_iam_policy_document.availability.json
    sweep        = data.aws_iam_policy_document.sweep.json
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
