output "org_alert_topic_arn" {
  description = "The organisation's alert topic (every member's alerts)."
  value       = aws_sns_topic.org_alerts.arn
}

output "central_event_bus_arn" {
  description = "The central default bus the members' heartbeats reach."
  value       = local.central_bus_arn
}

output "member_watchdog_function_arns" {
  description = "Each member's watchdog (in its own account)."
  value       = { member_a = module.member_a.watchdog_function_arn, member_b = module.member_b.watchdog_function_arn }
}

output "silence_alarm_names" {
  description = "One alarm per member account that went silent."
  value       = { for k, a in aws_cloudwatch_metric_alarm.silent : k => a.alarm_name }
}
