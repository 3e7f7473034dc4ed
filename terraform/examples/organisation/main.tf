# One stack per account for an organisation (docs/deploy.md, "An organisation"): the module applied in
# each member account through a provider alias that assumes a role there, and, in the central account,
# the organisation's alert topic and the member heartbeats with one silence alarm per member.
#
#   make package                       # builds ../../../dist/ecs-guardrail-lambda.zip
#   terraform init && terraform apply -var organization_id=o-... -var member_a_account_id=... ...
#
# A third account is a third provider alias and module block (Terraform cannot for_each providers);
# for many accounts, StackSets (deploy/stackset.yaml) deploy to every account of an OU as it joins.

provider "aws" { # the central account: your own credentials
  region = var.region
}

provider "aws" {
  alias  = "member_a"
  region = var.region
  assume_role {
    role_arn     = "arn:aws:iam::${var.member_a_account_id}:role/${var.member_role_name}"
    session_name = "ecs-guardrail-deploy"
  }
}

provider "aws" {
  alias  = "member_b"
  region = var.region
  assume_role {
    role_arn     = "arn:aws:iam::${var.member_b_account_id}:role/${var.member_role_name}"
    session_name = "ecs-guardrail-deploy"
  }
}

locals {
  name    = "ecs-guardrail"
  members = { member_a = var.member_a_account_id, member_b = var.member_b_account_id }
  # every member's module gets the same inputs but its own account name
  common = {
    alert_only_clusters = "production"
    dry_run             = true
  }
}

module "member_a" {
  source    = "../.."
  providers = { aws = aws.member_a }

  name                    = local.name
  lambda_zip_path         = "${path.module}/../../../dist/ecs-guardrail-lambda.zip"
  alert_only_clusters     = local.common.alert_only_clusters
  dry_run                 = local.common.dry_run
  central_alert_topic_arn = aws_sns_topic.org_alerts.arn
  central_event_bus_arn   = local.central_bus_arn
  account_name            = "member-a"
}

module "member_b" {
  source    = "../.."
  providers = { aws = aws.member_b }

  name                    = local.name
  lambda_zip_path         = "${path.module}/../../../dist/ecs-guardrail-lambda.zip"
  alert_only_clusters     = local.common.alert_only_clusters
  dry_run                 = local.common.dry_run
  central_alert_topic_arn = aws_sns_topic.org_alerts.arn
  central_event_bus_arn   = local.central_bus_arn
  account_name            = "member-b"
}
