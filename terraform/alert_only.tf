# Production unreachable by construction. Pure expressions of var.alert_only_clusters (no provider, no
# resource) so tests/infra evaluates them with `terraform console` offline; template.yaml builds the same
# list with Fn::Split/Fn::Join. A name or glob denies in every partition, region and account (broader is
# safer for a Deny); a cluster ARN denies the services of that cluster in its own region and account.
locals {
  alert_only_clusters = compact([for c in split(",", var.alert_only_clusters) : trimspace(c)])

  # Empty means every cluster is alert-only: the deny covers every service, and Application Auto
  # Scaling's writes can be denied too (its ARNs carry no cluster name: otherwise the code refuses them).
  every_cluster_alert_only = length(local.alert_only_clusters) == 0

  alert_only_service_arns = (
    local.every_cluster_alert_only
    ? ["arn:*:ecs:*:*:service/*"]
    : [for c in local.alert_only_clusters :
      startswith(c, "arn:") ? "${replace(c, ":cluster/", ":service/")}/*" : "arn:*:ecs:*:*:service/${c}/*"
    ]
  )
}
