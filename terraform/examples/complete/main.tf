# Complete example: every input of the module set explicitly, with the defaults a first production
# rollout should keep (alert-only production, dry run on for the first week).
#
#   make package                       # builds ../../../dist/ecs-guardrail-lambda.zip
#   terraform init && terraform apply -var slack_webhook_secret_arn=arn:aws:secretsmanager:...

provider "aws" {
  region = var.region
}

module "ecs_guardrail" {
  source = "../.."

  name            = "ecs-guardrail"
  lambda_zip_path = "${path.module}/../../../dist/ecs-guardrail-lambda.zip"

  # policy (ARCHITECTURE.md, "Decision policy")
  alert_only_clusters       = "production,prod-*"
  crash_threshold           = 5
  crash_window_minutes      = 30
  max_action_fraction       = 0.2
  min_actions_allowed       = 1
  fleet_signal_min_failures = 2
  client_error_ratio        = 0.05
  dry_run                   = true
  # recovery of a service held at zero: manual (restore or an operator) or probe
  recovery                = "manual"
  probe_delay_minutes     = 15
  probe_max_delay_minutes = 240
  probe_pass_minutes      = 10

  # alerts: a runbook link in every alert ({cluster} and {service} replaced), SNS body format
  runbook_url = ""
  sns_format  = "chatbot"
  # the services' awslogs groups whose last lines a decision's alert quotes (logs:FilterLogEvents there only)
  crash_log_group_pattern = "/ecs/*"

  # plumbing
  log_level               = "INFO"
  tracing_mode            = "PassThrough"
  log_retention_days      = 30
  archive_retention_days  = 30
  sample_schedule         = "rate(1 minute)"
  sample_lookback_minutes = 5
  history_ttl_days        = 90
  heartbeat_minutes       = 60
  # capped so an event storm cannot take the account's concurrency (the sampler has 1)
  watchdog_reserved_concurrency = 5
  # optional: one alarm per listed account that sends no ECS event for silence_alarm_minutes
  silence_alarm_account_ids = var.source_account_ids
  silence_alarm_minutes     = 60
  slack_webhook_secret_arn  = var.slack_webhook_secret_arn
  # optional routes: prod-*=oncall sends prod-* clusters' alerts to the topic or Slack secret named oncall
  alert_routes              = ""
  alert_channel_topic_arns  = ""
  alert_channel_secret_arns = ""
  alert_email               = var.alert_email
  source_account_ids        = var.source_account_ids
  # empty creates NAME-history; a table name takes over the table an earlier deployment kept
  existing_history_table_name = ""
  # the table cannot be destroyed by accident (lift it on purpose before a destroy: docs/deploy.md)
  deletion_protection = true
  # one stack per account of an organisation (examples/organisation): the organisation's topic, this
  # account's name in every alert, the heartbeat to the central bus; empty here (a single account)
  central_alert_topic_arn = ""
  account_name            = ""
  central_event_bus_arn   = ""

  tags = {
    Project = "ecs-guardrail"
  }
}
