variable "region" {
  description = "Region of this member account's ECS fleet (same region as the central account)."
  type        = string
  default     = "eu-west-1"
}

variable "central_event_bus_arn" {
  description = "event_bus_arn output of the central ecs-guardrail deployment."
  type        = string

  validation {
    condition     = can(regex("^arn:aws[a-z-]*:events:[a-z0-9-]+:[0-9]{12}:event-bus/default$", var.central_event_bus_arn))
    error_message = "central_event_bus_arn: the ARN of the central account's default event bus."
  }
}

# Required: the central deployment cannot see a dead forwarder (its per-account silence alarm is
# optional), so this account's dead-letter alarm must reach someone.
variable "alarm_topic_arn" {
  description = "SNS topic in this account for the forwarder's dead-letter alarm (required: a forwarder that cannot reach the central bus is otherwise noticed by nobody)."
  type        = string

  validation {
    condition     = can(regex("^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]+$", var.alarm_topic_arn))
    error_message = "alarm_topic_arn: the ARN of an SNS topic in this account that someone reads."
  }
}
