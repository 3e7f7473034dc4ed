variable "region" {
  description = "Region of the ECS fleet to guard."
  type        = string
  default     = "eu-west-1"
}

variable "slack_webhook_secret_arn" {
  description = "Full ARN of the Secrets Manager secret holding the Slack webhook URL (empty: no Slack)."
  type        = string
  default     = ""
}

variable "alert_email" {
  description = "E-mail address subscribed to alerts and alarms (empty: none)."
  type        = string
  default     = ""
}

variable "source_account_ids" {
  description = "Member accounts that forward their ECS events here (empty: single account)."
  type        = string
  default     = ""
}
