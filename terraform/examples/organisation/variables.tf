variable "region" {
  description = "Region of the ECS fleets to guard (one stack per member account in it)."
  type        = string
  default     = "eu-west-1"
}

variable "organization_id" {
  description = "The AWS Organizations id (o-...): its accounts may publish to the organisation's topic and send heartbeats."
  type        = string
  default     = "o-exampleorgid"
}

variable "member_a_account_id" {
  description = "First member account (its stack is applied through assume_role)."
  type        = string
  default     = "222222222222"
}

variable "member_b_account_id" {
  description = "Second member account."
  type        = string
  default     = "333333333333"
}

variable "member_role_name" {
  description = "Role the central account's credentials assume in each member (Organizations creates OrganizationAccountAccessRole in accounts it creates)."
  type        = string
  default     = "OrganizationAccountAccessRole"
}

variable "silent_minutes" {
  description = "Minutes without a member's heartbeat (one every 5 minutes) before its silence alarm fires: 10 to 1440 (deploy/central.yaml's SilentMinutes), so one lost heartbeat never alarms."
  type        = number
  default     = 15

  validation {
    condition     = var.silent_minutes >= 10 && var.silent_minutes <= 1440 && floor(var.silent_minutes) == var.silent_minutes
    error_message = "silent_minutes: an integer from 10 to 1440 (at least two heartbeats, so one lost heartbeat never alarms)."
  }
}
