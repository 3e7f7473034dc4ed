"""Thin modules, one per AWS service or sink. Clients are passed in; each declares ``IAM_ACTIONS``."""

__all__ = [
    "alerts", "audit_facts", "autoscaling", "aws", "bus", "cloudwatch", "clusters", "ecs", "elb", "history", "store",
    "taskdef",
]
