"""Thin modules, one per AWS service or sink. Clients are passed in; each unit that calls AWS
declares its IAM actions with :func:`ecs_guardrail.iam.permissions`."""

__all__ = [
    "alerts", "audit_facts", "autoscaling", "aws", "bus", "cloudwatch", "clusters", "decision_reads", "ecs", "elb",
    "heartbeats", "history", "logs", "placement", "restore_service", "serving", "store", "taskdef",
]
