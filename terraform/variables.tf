# Names and defaults match template.yaml's Parameters (PascalCase there, snake_case here);
# tests/infra/test_parity_*.py prove it, and proves both sides accept and reject the same values.

variable "name" {
  description = "Prefix of every resource name (template.yaml's Name parameter), at most 40 characters so that every name fits its limit (NAME-availability 64, NAME-ecs archive 48). Two deployments in one account and region need two names."
  type        = string
  default     = "ecs-guardrail"

  validation {
    condition     = can(regex("^[A-Za-z][A-Za-z0-9-]{0,39}$", var.name))
    error_message = "name: a letter, then up to 39 letters, digits or hyphens."
  }
}

variable "lambda_zip_path" {
  description = "Path of the code artifact built by `make package` (the SAM template's CodeUri)."
  type        = string
  default     = "../dist/ecs-guardrail-lambda.zip"
}

variable "tags" {
  description = "Tags for every resource that takes them."
  type        = map(string)
  default     = {}
}

variable "alert_only_clusters" {
  description = "Comma-separated ECS cluster names, globs (* and ?) or cluster ARNs that only ever get alerts. Empty means EVERY cluster is alert-only; \"none\" means no cluster is. The watchdog's role denies ecs:UpdateService/TagResource/UntagResource on every service of these clusters (a name or glob: in every region and account; an ARN: its own). Application Auto Scaling's writes are denied by IAM only when every cluster is alert-only (its ARNs carry no cluster name); otherwise the code refuses them for an alert-only cluster."
  type        = string
  default     = "production"

  validation {
    condition     = can(regex("^(([A-Za-z0-9_*?-]{1,255}|arn:aws[a-z-]*:ecs:[a-z0-9-]+:[0-9]{12}:cluster/[A-Za-z0-9_-]{1,255})(,([A-Za-z0-9_*?-]{1,255}|arn:aws[a-z-]*:ecs:[a-z0-9-]+:[0-9]{12}:cluster/[A-Za-z0-9_-]{1,255}))*)?$", var.alert_only_clusters))
    error_message = "alert_only_clusters: cluster names or globs (letters, digits, - _ * ?) or cluster ARNs (arn:aws:ecs:REGION:ACCOUNT:cluster/NAME), comma-separated, no spaces; or \"none\" alone."
  }
  validation {
    condition     = lower(var.alert_only_clusters) == "none" || !contains(split(",", lower(var.alert_only_clusters)), "none")
    error_message = "alert_only_clusters: \"none\" means no alert-only cluster and cannot be combined with entries."
  }
}

variable "crash_threshold" {
  description = "Genuine crashes within crash_window_minutes that make a crash loop."
  type        = number
  default     = 5

  validation {
    condition     = var.crash_threshold >= 1 && var.crash_threshold <= 1000 && floor(var.crash_threshold) == var.crash_threshold
    error_message = "crash_threshold: an integer from 1 to 1000."
  }
}

variable "crash_window_minutes" {
  description = "Crash-loop window in minutes of event time."
  type        = number
  default     = 30

  validation {
    condition     = var.crash_window_minutes >= 1 && var.crash_window_minutes <= 1440 && floor(var.crash_window_minutes) == var.crash_window_minutes
    error_message = "crash_window_minutes: an integer from 1 to 1440."
  }
}

variable "max_action_fraction" {
  description = "Blast radius: max(min_actions_allowed, floor(max_action_fraction x services in the cluster))."
  type        = number
  default     = 0.2

  validation {
    condition     = var.max_action_fraction >= 0 && var.max_action_fraction <= 1
    error_message = "max_action_fraction: a number from 0 to 1."
  }
}

variable "min_actions_allowed" {
  description = "Lower bound of the blast radius, in services per window."
  type        = number
  default     = 1

  validation {
    condition     = var.min_actions_allowed >= 0 && var.min_actions_allowed <= 1000 && floor(var.min_actions_allowed) == var.min_actions_allowed
    error_message = "min_actions_allowed: an integer from 0 to 1000."
  }
}

variable "client_error_ratio" {
  description = "Share of 5xx (targets' and the load balancer's) at or above which a minute's clients failed; targets answering 2xx under it are still_serving."
  type        = number
  default     = 0.05

  validation {
    condition     = var.client_error_ratio > 0 && var.client_error_ratio <= 1
    error_message = "client_error_ratio: a number above 0 and at most 1."
  }
}

variable "fleet_signal_min_failures" {
  description = "Failures in the window that make a service count as failing in the fleet test."
  type        = number
  default     = 2

  validation {
    condition     = var.fleet_signal_min_failures >= 1 && var.fleet_signal_min_failures <= 1000 && floor(var.fleet_signal_min_failures) == var.fleet_signal_min_failures
    error_message = "fleet_signal_min_failures: an integer from 1 to 1000."
  }
}

variable "dry_run" {
  description = "true decides and alerts but changes nothing."
  type        = bool
  default     = false
}

variable "runbook_url" {
  description = "Optional runbook URL template linked from every alert; {cluster} and {service} are replaced."
  type        = string
  default     = ""

  validation {
    condition     = length(var.runbook_url) <= 1024 && can(regex("^(https://[^\\s]+)?$", var.runbook_url))
    error_message = "runbook_url: an https URL (at most 1024 characters) with optional {cluster} and {service}, or empty."
  }
}

variable "sns_format" {
  description = "SNS message body; chatbot is AWS Chatbot's custom-notification JSON (plain text as its description), text is plain text."
  type        = string
  default     = "chatbot"

  validation {
    condition     = contains(["chatbot", "text"], var.sns_format)
    error_message = "sns_format: chatbot or text."
  }
}

variable "log_level" {
  description = "POWERTOOLS_LOG_LEVEL of the four functions."
  type        = string
  default     = "INFO"

  validation {
    condition     = contains(["DEBUG", "INFO", "WARNING", "ERROR"], var.log_level)
    error_message = "log_level: DEBUG, INFO, WARNING or ERROR."
  }
}

variable "tracing_mode" {
  description = "X-Ray tracing of the four functions. PassThrough (default): no trace of their own. Active traces sampled invocations (up to $6.75 per million events, docs/deploy.md), but only the invocation: the code does not patch boto3 (no Powertools Tracer), so no DynamoDB or ECS call shows in a trace."
  type        = string
  default     = "PassThrough"

  validation {
    condition     = contains(["Active", "PassThrough"], var.tracing_mode)
    error_message = "tracing_mode: Active or PassThrough."
  }
}

variable "log_retention_days" {
  description = "Retention of the function log groups and of the raw ECS event log group."
  type        = number
  default     = 30

  validation {
    condition     = contains([1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653], var.log_retention_days)
    error_message = "log_retention_days: one of the CloudWatch Logs retention values (1, 3, 5, 7, 14, 30, 60, 90, ... 3653)."
  }
}

variable "archive_retention_days" {
  description = "Retention of the EventBridge archive of ECS events (0 keeps them indefinitely)."
  type        = number
  default     = 30

  validation {
    condition     = var.archive_retention_days >= 0 && var.archive_retention_days <= 3650 && floor(var.archive_retention_days) == var.archive_retention_days
    error_message = "archive_retention_days: an integer from 0 to 3650."
  }
}

variable "sample_schedule" {
  description = "Schedule of the availability sampler (EventBridge rate() or cron() expression)."
  type        = string
  default     = "rate(1 minute)"

  validation {
    condition     = can(regex("^(rate\\((1 minute|([2-9]|[1-9][0-9]+) minutes|1 hour|([2-9]|[1-9][0-9]+) hours)\\)|cron\\([0-9A-Za-z*?/,# -]+\\))$", var.sample_schedule))
    error_message = "sample_schedule: rate(1 minute), rate(N minutes), rate(1 hour), rate(N hours) or cron(...)."
  }
}

variable "sample_lookback_minutes" {
  description = "Minutes of ALB metrics the sampler reads back (CloudWatch publishes with a delay)."
  type        = number
  default     = 5

  validation {
    condition     = var.sample_lookback_minutes >= 1 && var.sample_lookback_minutes <= 180 && floor(var.sample_lookback_minutes) == var.sample_lookback_minutes
    error_message = "sample_lookback_minutes: an integer from 1 to 180."
  }
}

variable "history_ttl_days" {
  description = "Days a history item lives before DynamoDB TTL removes it."
  type        = number
  default     = 90

  validation {
    condition     = var.history_ttl_days >= 1 && var.history_ttl_days <= 3650 && floor(var.history_ttl_days) == var.history_ttl_days
    error_message = "history_ttl_days: an integer from 1 to 3650."
  }
}

variable "heartbeat_minutes" {
  description = "Liveness: alarm when the scheduled availability sampler was not invoked for this many minutes (who watches the watchdog). Must exceed the sample_schedule interval."
  type        = number
  default     = 60

  validation {
    condition     = var.heartbeat_minutes >= 5 && var.heartbeat_minutes <= 1440 && floor(var.heartbeat_minutes) == var.heartbeat_minutes
    error_message = "heartbeat_minutes: an integer from 5 to 1440 (CloudWatch evaluates at most one day of 1-minute periods)."
  }
}

variable "watchdog_reserved_concurrency" {
  description = "Reserved concurrency of the watchdog (the sampler has 1, the sweep function 2): an event storm cannot take the account's concurrency or hammer ECS; throttled async events are retried for up to 6 hours. Size it from the account's services (docs/deploy.md, \"Sizing the watchdog's reserved concurrency\"; scripts/recommend_concurrency.py prints it): max(5, ceil(services x stopped tasks a minute per crash-looping service / 60 x 0.086 s / 0.7)), 0.086 s being a watchdog invocation's mean (bench/storm.py): 5 up to about 2,400 services, 21 at 10,000. 0: no function reserves any (neither the watchdog, the sampler nor the sweep function), for new or sandbox accounts whose Lambda concurrency quota is still 10, where Lambda refuses any reservation (it keeps 100 unreserved)."
  type        = number
  default     = 5

  validation {
    condition     = var.watchdog_reserved_concurrency >= 0 && var.watchdog_reserved_concurrency <= 100 && floor(var.watchdog_reserved_concurrency) == var.watchdog_reserved_concurrency
    error_message = "watchdog_reserved_concurrency: an integer from 0 to 100."
  }
}

variable "silence_alarm_account_ids" {
  description = "Optional per-account silence alarms: one alarm per listed account (this one and/or member accounts) when none of its ECS events reached the raw event log for silence_alarm_minutes. Empty (default): off."
  type        = string
  default     = ""

  validation {
    condition     = can(regex("^([0-9]{12}(,[0-9]{12}){0,19})?$", var.silence_alarm_account_ids))
    error_message = "silence_alarm_account_ids: up to 20 comma-separated 12-digit account ids (each once), or empty."
  }
}

variable "silence_alarm_minutes" {
  description = "Minutes without an ECS event from a listed account before its silence alarm fires."
  type        = number
  default     = 60

  validation {
    condition     = var.silence_alarm_minutes >= 5 && var.silence_alarm_minutes <= 1440 && floor(var.silence_alarm_minutes) == var.silence_alarm_minutes
    error_message = "silence_alarm_minutes: an integer from 5 to 1440."
  }
}

variable "slack_webhook_secret_arn" {
  description = "Full ARN of an existing Secrets Manager secret whose SecretString is the Slack incoming-webhook URL. Empty disables Slack. The URL itself is never a variable."
  type        = string
  default     = ""

  validation {
    # the full ARN ends in "-" and 6 random characters; a partial ARN matches no IAM Resource
    condition     = can(regex("^(arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:[A-Za-z0-9/_+=.@-]+-[A-Za-z0-9]{6})?$", var.slack_webhook_secret_arn))
    error_message = "slack_webhook_secret_arn: the full ARN of a Secrets Manager secret (with its -XXXXXX suffix), or empty."
  }
}

# BEGIN alert routes (issue 35 item 4): ALERT_ROUTES and its named channels
variable "alert_routes" {
  description = "Routes: comma-separated GLOB=NAME (prod-*=oncall,dev-*=dev-alerts); the first cluster glob that matches sends that cluster's alerts to channel NAME, an alert_channel_topic_arns topic or an alert_channel_secret_arns secret of that name; a cluster matching none uses the default channel (the alert topic and slack_webhook_secret_arn). Empty: every alert goes to the default channel."
  type        = string
  default     = ""

  validation {
    condition     = can(regex("^([A-Za-z0-9_*?-]{1,255}=[A-Za-z0-9/_+=.@-]{1,512}(,[A-Za-z0-9_*?-]{1,255}=[A-Za-z0-9/_+=.@-]{1,512})*)?$", var.alert_routes))
    error_message = "alert_routes: comma-separated GLOB=NAME entries (a cluster glob, a channel name), or empty."
  }
}

variable "alert_channel_topic_arns" {
  description = "Named channels for alert_routes: existing SNS topics, each channel named by its topic name. The watchdog may publish to exactly these (and the alert topic)."
  type        = string
  default     = ""

  validation {
    condition     = can(regex("^(arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}(,arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256})*)?$", var.alert_channel_topic_arns))
    error_message = "alert_channel_topic_arns: comma-separated SNS topic ARNs, or empty."
  }
}

variable "alert_channel_secret_arns" {
  description = "Named channels for alert_routes: full ARNs of existing secrets whose SecretString is a Slack incoming-webhook URL, each channel named by its secret name (without the -XXXXXX suffix). The watchdog may read exactly these (and slack_webhook_secret_arn)."
  type        = string
  default     = ""

  validation {
    condition     = can(regex("^(arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:[A-Za-z0-9/_+=.@-]+-[A-Za-z0-9]{6}(,arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:[A-Za-z0-9/_+=.@-]+-[A-Za-z0-9]{6})*)?$", var.alert_channel_secret_arns))
    error_message = "alert_channel_secret_arns: comma-separated full Secrets Manager secret ARNs (with their -XXXXXX suffix), or empty."
  }
}
# END alert routes

variable "alert_email" {
  description = "Optional e-mail subscription to the alert topic (alerts and alarms)."
  type        = string
  default     = ""

  validation {
    condition     = can(regex("^([^@\\s,]+@[^@\\s,]+\\.[^@\\s,]+)?$", var.alert_email))
    error_message = "alert_email: one e-mail address, or empty."
  }
}

variable "source_account_ids" {
  description = "Cross-account mode: comma-separated accounts allowed to put events on this account's default bus (see examples/member-account). Empty disables it."
  type        = string
  default     = ""

  validation {
    condition     = can(regex("^([0-9]{12}(,[0-9]{12})*)?$", var.source_account_ids))
    error_message = "source_account_ids: comma-separated 12-digit account ids, or empty."
  }
}

variable "existing_history_table_name" {
  description = "Empty creates the history table (NAME-history). A table name uses that existing table instead and creates none: a table kept from an earlier deployment (deletion protection, or a SAM stack's retained table), whose history restore needs. It must have the history table's keys and gsi1 index (template.yaml's ExistingHistoryTableName)."
  type        = string
  default     = ""

  validation {
    condition     = can(regex("^([A-Za-z0-9_.-]{3,255})?$", var.existing_history_table_name))
    error_message = "existing_history_table_name: a DynamoDB table name (3-255 letters, digits, _ . -), or empty."
  }
}

variable "deletion_protection" {
  description = "DynamoDB deletion protection of the history table (restore needs its records). Turn it off only to destroy the table on purpose; after a partial destroy, import the kept table instead (terraform/README.md, \"Rebuilding after a partial destroy\")."
  type        = bool
  default     = true
}

variable "recovery" {
  description = "manual waits for restore or an operator; probe probes a service held at zero (desired count 1, scaling still suspended) and restores it when a probe passes."
  type        = string
  default     = "manual"

  validation {
    condition     = contains(["manual", "probe"], var.recovery)
    error_message = "recovery: manual or probe."
  }
}

variable "probe_delay_minutes" {
  description = "Minutes from the scale-down to the first probe (RECOVERY=probe); doubles per failed probe."
  type        = number
  default     = 15

  validation {
    condition     = var.probe_delay_minutes >= 1 && var.probe_delay_minutes <= 1440 && floor(var.probe_delay_minutes) == var.probe_delay_minutes
    error_message = "probe_delay_minutes: an integer from 1 to 1440."
  }
}

variable "probe_max_delay_minutes" {
  description = "Cap of the delay between probes (minutes); one still-failing alert when it is reached."
  type        = number
  default     = 240

  validation {
    condition     = var.probe_max_delay_minutes >= 1 && var.probe_max_delay_minutes <= 1440 && floor(var.probe_max_delay_minutes) == var.probe_max_delay_minutes
    error_message = "probe_max_delay_minutes: an integer from 1 to 1440."
  }
}

variable "probe_pass_minutes" {
  description = "Minutes a probe must stay free of failures to pass (RECOVERY=probe)."
  type        = number
  default     = 10

  validation {
    condition     = var.probe_pass_minutes >= 1 && var.probe_pass_minutes <= 240 && floor(var.probe_pass_minutes) == var.probe_pass_minutes
    error_message = "probe_pass_minutes: an integer from 1 to 240."
  }
}

# BEGIN issue 35 (logs): the crash's own words
variable "crash_log_group_pattern" {
  description = "The services' awslogs log groups (a name or an IAM pattern) whose last lines a decision's alert quotes: the watchdog may call logs:FilterLogEvents on these groups only."
  type        = string
  default     = "/ecs/*"

  validation {
    condition     = can(regex("^[A-Za-z0-9_./#*?-]{1,512}$", var.crash_log_group_pattern))
    error_message = "crash_log_group_pattern: a CloudWatch Logs log group name, IAM wildcards * and ? allowed."
  }
}
# END issue 35 (logs)
# ---- org (issue 32 item 4): one stack per account of an organisation (org.tf)
variable "central_alert_topic_arn" {
  description = "The organisation's alert topic (in the central account): this stack's alerts go there instead of its own topic, naming this account. Empty: the stack's own topic. Its own alarms stay on its own topic."
  type        = string
  default     = ""

  validation {
    condition     = can(regex("^(arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256})?$", var.central_alert_topic_arn))
    error_message = "central_alert_topic_arn: an SNS topic ARN, or empty."
  }
}

variable "account_name" {
  description = "Optional name of this account (an alias such as payments-prod), shown beside its id in every alert."
  type        = string
  default     = ""

  validation {
    condition     = can(regex("^([A-Za-z0-9][A-Za-z0-9._-]{0,49})?$", var.account_name))
    error_message = "account_name: 1-50 letters, digits, '.', '_' or '-' (starting with a letter or digit), or empty."
  }
}

variable "central_event_bus_arn" {
  description = "The central account's default bus: a rule of this stack sends it a heartbeat every 5 minutes, so the central alarms name an account whose stack was deleted. Empty: none."
  type        = string
  default     = ""

  validation {
    condition     = can(regex("^(arn:aws[a-z-]*:events:[a-z0-9-]+:[0-9]{12}:event-bus/[A-Za-z0-9._-]{1,256})?$", var.central_event_bus_arn))
    error_message = "central_event_bus_arn: an EventBridge event bus ARN, or empty."
  }
}
# ---- end org
