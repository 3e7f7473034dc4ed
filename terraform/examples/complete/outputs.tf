output "history_table_name" {
  description = "Set HISTORY_TABLE to this for the CLI (timeline, restore)."
  value       = module.ecs_guardrail.history_table_name
}

output "alert_topic_arn" {
  description = "SNS topic of alerts and alarms."
  value       = module.ecs_guardrail.alert_topic_arn
}

output "watchdog_role_arn" {
  description = "Role of the watchdog (carries the alert-only deny)."
  value       = module.ecs_guardrail.watchdog_role_arn
}

output "event_bus_arn" {
  description = "Give this to member accounts in cross-account mode."
  value       = module.ecs_guardrail.event_bus_arn
}
