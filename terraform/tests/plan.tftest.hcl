# `terraform test` of the module with a mocked AWS provider (terraform >= 1.7): a plan for the defaults
# and for an empty alert_only_clusters (every cluster alert-only). Run by tests/infra/test_terraform_plan.py
# with the local provider mirror; nothing reaches AWS.

mock_provider "aws" {
  mock_data "aws_caller_identity" {
    defaults = { account_id = "111122223333" }
  }
  mock_data "aws_partition" {
    defaults = { partition = "aws" }
  }
  mock_data "aws_region" {
    defaults = { name = "eu-west-1" }
  }
  mock_data "aws_iam_policy_document" {
    defaults = { json = "{\"Version\":\"2012-10-17\",\"Statement\":[]}" }
  }
}

variables {
  lambda_zip_path = "./tests/fixtures/lambda.zip"
}

run "defaults" {
  command = plan

  assert {
    condition     = length(aws_lambda_function.this) == 4
    error_message = "four functions (the sweep's own lane: issue 32)"
  }
  assert {
    condition     = aws_lambda_function.this["watchdog"].reserved_concurrent_executions == 5 && aws_lambda_function.this["availability"].reserved_concurrent_executions == 1 && aws_lambda_function.this["sweep"].reserved_concurrent_executions == 2 && aws_lambda_function.this["recorder"].reserved_concurrent_executions == -1
    error_message = "reserved concurrency: watchdog 5, sampler 1, sweep 2, recorder unreserved"
  }
  assert {
    condition     = jsonencode(local.alert_only_service_arns) == jsonencode(["arn:*:ecs:*:*:service/production/*"])
    error_message = "the default deny covers the production cluster"
  }
  assert {
    condition     = alltrue([for r in aws_iam_role.function : r.name_prefix != null && length(r.name_prefix) <= 38])
    error_message = "role names are generated from a prefix of at most 38 characters"
  }
  assert {
    condition     = aws_dynamodb_table.history[0].global_secondary_index != null && alltrue([for g in aws_dynamodb_table.history[0].global_secondary_index : g.projection_type == "INCLUDE"])
    error_message = "gsi1 projects INCLUDE"
  }
  assert {
    condition     = length(aws_cloudwatch_metric_alarm.function) == 16 && length(aws_cloudwatch_metric_alarm.rule) == 10 && length(aws_cloudwatch_metric_alarm.queue) == 2
    error_message = "4 alarms per function, 2 per rule, 2 queue alarms"
  }
  assert {
    condition     = length(aws_cloudwatch_metric_alarm.account_silence) == 0 && length(aws_cloudwatch_log_metric_filter.ecs_events_by_account) == 0
    error_message = "per-account silence is off by default"
  }
  assert {
    condition     = length(aws_cloudwatch_event_target.this) == 6
    error_message = "six event targets (the schedule's second and the restarts rule's are the sweep function)"
  }
}

run "every_cluster_alert_only" {
  command = plan

  variables {
    alert_only_clusters       = ""
    silence_alarm_account_ids = "111122223333,444455556666"
  }

  assert {
    condition     = jsonencode(local.alert_only_service_arns) == jsonencode(["arn:*:ecs:*:*:service/*"])
    error_message = "empty alert_only_clusters denies every service"
  }
  assert {
    condition     = aws_lambda_function.this["watchdog"].environment[0].variables["ALERT_ONLY_CLUSTERS"] == ""
    error_message = "the watchdog reads the empty list"
  }
  assert {
    condition     = length(aws_cloudwatch_metric_alarm.account_silence) == 2 && length(aws_cloudwatch_log_metric_filter.ecs_events_by_account) == 1
    error_message = "one silence alarm per listed account"
  }
}

# issue 24 item 18: accounts whose Lambda concurrency quota is still 10 refuse any reservation
run "no_reserved_concurrency" {
  command = plan

  variables {
    watchdog_reserved_concurrency = 0
  }

  assert {
    condition     = alltrue([for f in aws_lambda_function.this : f.reserved_concurrent_executions == -1])
    error_message = "watchdog_reserved_concurrency = 0: no function reserves concurrency"
  }
}
