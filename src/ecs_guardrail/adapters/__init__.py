"""Thin modules, one per AWS service or sink. Clients are passed in; each declares ``IAM_ACTIONS``."""

__all__ = ["history", "ecs", "autoscaling", "taskdef", "alerts", "aws", "elb", "cloudwatch"]
