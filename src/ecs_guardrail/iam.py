"""IAM permissions each Lambda handler's code uses (stub from the deploy branch; replaced at merge).

``handler_permissions(name)`` maps a resource kind to the IAM actions the handler's adapters call:

- ``history_table``: the DynamoDB history table (and its indexes)
- ``ecs_service``: ECS services (long ARN format, ``service/CLUSTER/NAME``)
- ``alert_topic``: the SNS alert topic
- ``webhook_secret``: the Secrets Manager secret holding the Slack webhook URL
- ``any``: actions without resource-level permissions (``Resource: "*"``)

tests/infra/test_parity.py checks that template.yaml and terraform/ grant exactly these.
"""

from __future__ import annotations

from types import MappingProxyType

__all__ = ["FUNCTIONS", "handler_permissions"]

FUNCTIONS = MappingProxyType(
    {
        "recorder": "ecs_guardrail.handlers.record.handler",
        "watchdog": "ecs_guardrail.handlers.watchdog.handler",
        "availability": "ecs_guardrail.handlers.availability.handler",
    }
)

_PERMISSIONS: dict[str, dict[str, frozenset[str]]] = {
    "recorder": {
        "history_table": frozenset({"dynamodb:PutItem"}),
    },
    "watchdog": {
        "history_table": frozenset({"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"}),
        "ecs_service": frozenset({"ecs:DescribeServices", "ecs:UpdateService", "ecs:TagResource"}),
        "any": frozenset({"ecs:ListServices"}),
        "alert_topic": frozenset({"sns:Publish"}),
        "webhook_secret": frozenset({"secretsmanager:GetSecretValue"}),
    },
    "availability": {
        "history_table": frozenset({"dynamodb:PutItem"}),
        "ecs_service": frozenset({"ecs:DescribeServices"}),
        "any": frozenset(
            {
                "ecs:ListClusters",
                "ecs:ListServices",
                "elasticloadbalancing:DescribeTargetGroups",
                "cloudwatch:GetMetricData",
            }
        ),
    },
}


def handler_permissions(name: str) -> dict[str, frozenset[str]]:
    """Resource kind -> IAM actions the code of function ``name`` calls.

    Raises:
        KeyError: ``name`` is not one of :data:`FUNCTIONS`.
    """
    return dict(_PERMISSIONS[name])
