data "aws_caller_identity" "current" {}
data "aws_partition" "current" {}
data "aws_region" "current" {}

locals {
  account_id       = data.aws_caller_identity.current.account_id
  partition        = data.aws_partition.current.partition
  region           = data.aws_region.current.name # provider 5.x (versions.tf); v6 renames it to .region
  default_bus_arn  = "arn:${local.partition}:events:${local.region}:${local.account_id}:event-bus/default"
  ecs_service_arns = "arn:${local.partition}:ecs:${local.region}:${local.account_id}:service/*/*"
  # ListServiceDeployments names its answers service-deployment/CLUSTER/SERVICE/ID
  ecs_service_deployment_arns = "arn:${local.partition}:ecs:${local.region}:${local.account_id}:service-deployment/*/*/*"
  # scalable-target ids are random: this account and region is as narrow as it gets
  scalable_target_arns = "arn:${local.partition}:application-autoscaling:${local.region}:${local.account_id}:scalable-target/*"

  has_slack_webhook = var.slack_webhook_secret_arn != ""
  # alert routes (issue 35 item 4): the named channels' topics and secrets, exactly what IAM grants
  alert_channel_topic_arns  = compact(split(",", var.alert_channel_topic_arns))
  alert_channel_secret_arns = compact(split(",", var.alert_channel_secret_arns))
  has_any_slack_secret      = local.has_slack_webhook || length(local.alert_channel_secret_arns) > 0

  # the history table: this module's, or an existing one (var.existing_history_table_name), by name and ARN
  create_history_table = var.existing_history_table_name == ""
  history_table_name   = local.create_history_table ? aws_dynamodb_table.history[0].name : var.existing_history_table_name
  history_table_arn = (local.create_history_table ? aws_dynamodb_table.history[0].arn
  : "arn:${local.partition}:dynamodb:${local.region}:${local.account_id}:table/${var.existing_history_table_name}")
  source_account_ids = compact(split(",", var.source_account_ids))

  # What every function reads (template.yaml's Globals.Function.Environment): Powertools' names and level,
  # the history table and its items' time to live. Each function's environment merges its own onto it.
  common_environment = {
    POWERTOOLS_SERVICE_NAME      = "ecs-guardrail"
    POWERTOOLS_METRICS_NAMESPACE = "EcsGuardrail"
    POWERTOOLS_LOG_LEVEL         = var.log_level
    HISTORY_TABLE                = local.history_table_name
    HISTORY_TTL_DAYS             = tostring(var.history_ttl_days)
  }

  # The crash path's environment, written once: the watchdog and the sweep function (which runs the
  # watchdog's code) read the same settings.
  crash_path_environment = merge(local.common_environment, {
    ALERT_ONLY_CLUSTERS       = var.alert_only_clusters
    CRASH_THRESHOLD           = tostring(var.crash_threshold)
    CRASH_WINDOW_MINUTES      = tostring(var.crash_window_minutes)
    MAX_ACTION_FRACTION       = tostring(var.max_action_fraction)
    MIN_ACTIONS_ALLOWED       = tostring(var.min_actions_allowed)
    FLEET_SIGNAL_MIN_FAILURES = tostring(var.fleet_signal_min_failures)
    CLIENT_ERROR_RATIO        = tostring(var.client_error_ratio)
    DRY_RUN                   = tostring(var.dry_run)
    ALERT_TOPIC_ARN           = aws_sns_topic.alerts.arn
    SLACK_WEBHOOK_SECRET_ARN  = var.slack_webhook_secret_arn
    ALERT_ROUTES              = var.alert_routes
    ALERT_CHANNEL_TOPIC_ARNS  = var.alert_channel_topic_arns
    ALERT_CHANNEL_SECRET_ARNS = var.alert_channel_secret_arns
    RUNBOOK_URL               = var.runbook_url
    SNS_FORMAT                = var.sns_format
    RECOVERY                  = var.recovery
    PROBE_DELAY_MINUTES       = tostring(var.probe_delay_minutes)
    PROBE_MAX_DELAY_MINUTES   = tostring(var.probe_max_delay_minutes)
    PROBE_PASS_MINUTES        = tostring(var.probe_pass_minutes)
    CENTRAL_ALERT_TOPIC_ARN   = var.central_alert_topic_arn # org (issue 32 item 4; org.tf)
    ACCOUNT_NAME              = var.account_name
  })

  # One code artifact, four handlers (ecs_guardrail.iam.FUNCTIONS). Environment per function as in
  # template.yaml (Globals.Function.Environment merged with the function's own).
  functions = {
    recorder = {
      description       = "Records every ECS task, service-action and deployment event in the history table."
      handler           = "ecs_guardrail.handlers.record.handler"
      timeout           = 30
      max_event_age     = 21600
      max_retry_attempt = 2
      # unreserved on purpose: it only writes DynamoDB and must keep up with ECS event bursts
      reserved_concurrency = -1
      environment          = local.common_environment
    }
    watchdog = {
      description       = "Decides on stopped tasks and ECS service actions; scales crash loops to zero where allowed, alerts otherwise."
      handler           = "ecs_guardrail.handlers.watchdog.handler"
      timeout           = 60
      max_event_age     = 21600
      max_retry_attempt = 2
      # an event storm cannot take the account's concurrency or hammer ECS (0: unreserved, see the variable)
      reserved_concurrency = var.watchdog_reserved_concurrency == 0 ? -1 : var.watchdog_reserved_concurrency
      environment          = local.crash_path_environment
    }
    # BEGIN lane (issue 32 item 3): the crash path's own lane - the one-minute sweep and the sampler's
    # restart observations run the watchdog's code here, with this function's own asynchronous event
    # queue and reserved concurrency, never behind a storm's backlog of task events in the watchdog's
    sweep = {
      description       = "The crash path's own lane - the one-minute sweep (probes, owed recoveries) and container-restart observations, never behind the watchdog's backlog."
      handler           = "ecs_guardrail.handlers.lane.handler"
      timeout           = 60
      max_event_age     = 900
      max_retry_attempt = 2
      # two slots (ecs_guardrail.handlers.lane.RESERVED_CONCURRENCY): the sweep's, and the restart observations'
      reserved_concurrency = var.watchdog_reserved_concurrency == 0 ? -1 : 2
      environment          = local.crash_path_environment
    }
    # END lane
    availability = {
      description       = "Samples healthy hosts and request metrics of every ECS service behind a load balancer."
      handler           = "ecs_guardrail.handlers.availability.handler"
      timeout           = 120
      max_event_age     = 900
      max_retry_attempt = 2
      # one run at a time: its timeout overlaps its schedule (unless watchdog_reserved_concurrency is 0)
      reserved_concurrency = var.watchdog_reserved_concurrency == 0 ? -1 : 1
      environment = merge(local.common_environment, {
        SAMPLE_LOOKBACK_MINUTES = tostring(var.sample_lookback_minutes)
      })
    }
  }
}

# ------------------------------------------------------------------ state and sinks

resource "aws_dynamodb_table" "history" {
  #checkov:skip=CKV_AWS_119:SSE with the AWS owned/managed key; a customer managed key adds $1/month and key-policy upkeep for operational metadata only.
  # A failed apply keeps the table in state and the next apply goes on from there (no rollback, so
  # no name collision on retry); the name is regional, so a second region is fine too. None is created
  # when existing_history_table_name names a table kept from an earlier deployment.
  count                       = local.create_history_table ? 1 : 0
  name                        = "${var.name}-history"
  billing_mode                = "PAY_PER_REQUEST"
  hash_key                    = "pk"
  range_key                   = "sk"
  deletion_protection_enabled = var.deletion_protection

  attribute {
    name = "pk"
    type = "S"
  }
  attribute {
    name = "sk"
    type = "S"
  }
  attribute {
    name = "gsi1pk"
    type = "S"
  }
  attribute {
    name = "gsi1sk"
    type = "S"
  }

  global_secondary_index {
    name      = "gsi1"
    hash_key  = "gsi1pk"
    range_key = "gsi1sk"
    # exactly what timeline reads project (HistoryStore.TIMELINE_FIELDS), never the raw event text
    projection_type    = "INCLUDE"
    non_key_attributes = ["type", "time", "cluster", "service", "group", "task_arn", "last_status", "desired_status", "kind", "cause", "stop_code", "stopped_reason", "exit_codes", "az", "event_name", "detail_type", "action", "reason", "message", "decision", "services_in_cluster", "target_group", "healthy_host_count", "no_data", "desired_count", "running_count", "sampled_at", "account", "region", "per_minute"]
  }

  ttl {
    attribute_name = "expires_at"
    enabled        = true
  }

  point_in_time_recovery {
    enabled = true
  }

  server_side_encryption {
    enabled = true
  }

  tags = var.tags
}

# the table became conditional (existing_history_table_name): existing deployments keep theirs
moved {
  from = aws_dynamodb_table.history
  to   = aws_dynamodb_table.history[0]
}

resource "aws_sns_topic" "alerts" {
  #checkov:skip=CKV_AWS_26:Alert text only, no secrets. SSE with the AWS managed key would stop CloudWatch alarm actions from publishing; a CMK needs a key policy for cloudwatch.amazonaws.com and kms grants beyond the calls the code declares.
  name = "${var.name}-alerts"
  tags = var.tags
}

resource "aws_sns_topic_subscription" "alert_email" {
  count     = var.alert_email == "" ? 0 : 1
  topic_arn = aws_sns_topic.alerts.arn
  protocol  = "email"
  endpoint  = var.alert_email
}

# Delivery failures of every EventBridge rule target (rule DLQ), kept 14 days.
resource "aws_sqs_queue" "events_dlq" {
  name                      = "${var.name}-events-dlq"
  message_retention_seconds = 1209600
  sqs_managed_sse_enabled   = true
  tags                      = var.tags
}

resource "aws_sqs_queue_policy" "events_dlq" {
  queue_url = aws_sqs_queue.events_dlq.id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Sid       = "EventBridgeRuleDeadLetters"
      Effect    = "Allow"
      Principal = { Service = "events.amazonaws.com" }
      Action    = "sqs:SendMessage"
      Resource  = aws_sqs_queue.events_dlq.arn
      Condition = {
        ArnEquals = {
          "aws:SourceArn" = [
            aws_cloudwatch_event_rule.recorder.arn,
            aws_cloudwatch_event_rule.watchdog.arn,
            aws_cloudwatch_event_rule.ecs_events_log.arn,
            aws_cloudwatch_event_rule.availability.arn,
            aws_cloudwatch_event_rule.sweep.arn,
          ]
        }
      }
    }]
  })
}

# Invocations that failed after Lambda's own retries (on-failure destination of the four functions).
resource "aws_sqs_queue" "function_failures" {
  name                      = "${var.name}-function-failures"
  message_retention_seconds = 1209600
  sqs_managed_sse_enabled   = true
  tags                      = var.tags
}

# ------------------------------------------------------------------ log groups

resource "aws_cloudwatch_log_group" "function" {
  #checkov:skip=CKV_AWS_158:CloudWatch Logs encrypts at rest by default; a KMS CMK adds cost and key-policy upkeep, logs hold no secrets.
  #checkov:skip=CKV_AWS_338:Retention is the log_retention_days variable (default 30 days, cost); decisions live in the history table for history_ttl_days.
  for_each          = local.functions
  name              = "/aws/lambda/${var.name}-${each.key}"
  retention_in_days = var.log_retention_days
  tags              = var.tags
}

# Raw copy of every ECS event (EventBridge log targets must live under /aws/events/).
resource "aws_cloudwatch_log_group" "ecs_events" {
  #checkov:skip=CKV_AWS_158:CloudWatch Logs encrypts at rest by default; a KMS CMK adds cost and key-policy upkeep, logs hold no secrets.
  #checkov:skip=CKV_AWS_338:Retention is the log_retention_days variable (default 30 days, cost); the EventBridge archive keeps replays.
  name              = "/aws/events/${var.name}/ecs"
  retention_in_days = var.log_retention_days
  tags              = var.tags
}

resource "aws_cloudwatch_log_resource_policy" "ecs_events" {
  policy_name = "${var.name}-ecs-events-to-logs"
  policy_document = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Sid       = "EventBridgeToLogs"
      Effect    = "Allow"
      Principal = { Service = ["events.amazonaws.com", "delivery.logs.amazonaws.com"] }
      Action    = ["logs:CreateLogStream", "logs:PutLogEvents"]
      Resource  = "${aws_cloudwatch_log_group.ecs_events.arn}:*"
    }]
  })
}

# ------------------------------------------------------------------ functions

resource "aws_lambda_function" "this" {
  #checkov:skip=CKV_AWS_116:Failed async invocations go to the on-failure destination (function_failures queue), the successor of a function DLQ that also keeps the error and the response.
  #checkov:skip=CKV_AWS_117:The functions call public AWS APIs only; a VPC would add NAT cost and a failure mode without protecting any private resource.
  #checkov:skip=CKV_AWS_115:Only the recorder is unreserved (reserved_concurrency -1), on purpose - it only writes DynamoDB and must keep up with ECS event bursts; the watchdog (watchdog_reserved_concurrency), the sampler (1) and the sweep function (2) are capped.
  #checkov:skip=CKV_AWS_173:Environment holds names, numbers and ARNs only; the Slack webhook URL stays in Secrets Manager.
  #checkov:skip=CKV_AWS_272:The artifact is built reproducibly by `make package` and its sha256 is printed; code signing needs a signing profile outside this module.
  for_each = local.functions

  function_name = "${var.name}-${each.key}"
  description   = each.value.description
  role          = aws_iam_role.function[each.key].arn
  handler       = each.value.handler
  runtime       = "python3.12"
  architectures = ["arm64"]
  memory_size   = 256
  timeout       = each.value.timeout

  reserved_concurrent_executions = each.value.reserved_concurrency
  filename                       = var.lambda_zip_path
  source_code_hash               = filebase64sha256(var.lambda_zip_path)

  tracing_config {
    mode = var.tracing_mode
  }

  logging_config {
    log_format = "Text"
    log_group  = aws_cloudwatch_log_group.function[each.key].name
  }

  environment {
    variables = each.value.environment
  }

  tags = var.tags
  # the watchdog never runs without its alert-only deny (and on destroy goes before it)
  depends_on = [aws_iam_role_policy.function, aws_iam_role_policy.watchdog_deny_alert_only,
  aws_iam_role_policy.sweep_deny_alert_only]
}

resource "aws_lambda_function_event_invoke_config" "this" {
  for_each = local.functions

  function_name                = aws_lambda_function.this[each.key].function_name
  maximum_retry_attempts       = each.value.max_retry_attempt
  maximum_event_age_in_seconds = each.value.max_event_age

  destination_config {
    on_failure {
      destination = aws_sqs_queue.function_failures.arn
    }
  }
}
