output "history_table_name" {
  description = "DynamoDB history table (HISTORY_TABLE / --table for the CLI)."
  value       = local.history_table_name
}

output "alert_topic_arn" {
  description = "SNS topic of alerts and alarms."
  value       = aws_sns_topic.alerts.arn
}

output "recorder_function_arn" {
  description = "ARN of the recorder function."
  value       = aws_lambda_function.this["recorder"].arn
}

output "watchdog_function_arn" {
  description = "ARN of the watchdog function."
  value       = aws_lambda_function.this["watchdog"].arn
}

output "availability_function_arn" {
  description = "ARN of the availability sampler function."
  value       = aws_lambda_function.this["availability"].arn
}

output "watchdog_role_arn" {
  description = "Role of the watchdog (carries the alert-only deny)."
  value       = aws_iam_role.function["watchdog"].arn
}

output "watchdog_rule_name" {
  description = "EventBridge rule of the watchdog (`aws events disable-rule --name` stops its scale-downs at once; with RECOVERY=probe the sweep's probes go on, see docs/deploy.md Rollback)."
  value       = aws_cloudwatch_event_rule.watchdog.name
}

output "events_dead_letter_queue_url" {
  description = "Dead-letter queue of every EventBridge rule target."
  value       = aws_sqs_queue.events_dlq.id
}

output "function_failure_queue_url" {
  description = "On-failure destination of the four functions."
  value       = aws_sqs_queue.function_failures.id
}

output "ecs_events_archive_arn" {
  description = "EventBridge archive of every ECS event."
  value       = aws_cloudwatch_event_archive.ecs.arn
}

output "ecs_events_log_group_name" {
  description = "Log group with the raw copy of every ECS event."
  value       = aws_cloudwatch_log_group.ecs_events.name
}

output "event_bus_arn" {
  description = "Target of the member-account forwarding rule in cross-account mode."
  value       = local.default_bus_arn
}
