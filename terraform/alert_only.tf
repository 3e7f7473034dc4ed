# Production unreachable by construction. Pure expressions of var.alert_only_clusters (no provider, no
# resource) so tests/infra evaluates them with `terraform console` offline; template.yaml builds the same
# list with Fn::Split/Fn::Join. Partition, region and account are wildcards: broader is safer for a Deny.
locals {
  alert_only_clusters = compact([for c in split(",", var.alert_only_clusters) : trimspace(c)])

  # Empty means every cluster is alert-only, so the deny covers every service.
  alert_only_service_arns = (
    length(local.alert_only_clusters) == 0
    ? ["arn:*:ecs:*:*:service/*"]
    : formatlist("arn:*:ecs:*:*:service/%s/*", local.alert_only_clusters)
  )
}
