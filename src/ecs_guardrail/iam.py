"""IAM permissions each Lambda function's code uses, walked from the adapters' declarations.

Each adapter class declares ``IAM_ACTIONS`` (resource kind -> actions) and each handler module lists
what it uses in ``USES``; :func:`handler_permissions` unions them. Resource kinds:

- ``history_table``: the DynamoDB history table (and its indexes)
- ``ecs_service``: ECS services (long ARN format, ``service/CLUSTER/NAME``)
- ``ecs_service_deployment``: ECS service deployments (``service-deployment/CLUSTER/SERVICE/ID``, the
  resource of ecs:DescribeServiceDeployments; ecs:ListServiceDeployments takes the service)
- ``alert_topic``: the SNS alert topic
- ``default_bus``: the account's default EventBridge bus (the sampler's restart observations)
- ``webhook_secret``: the Secrets Manager secret holding the Slack webhook URL
- ``scalable_target``: Application Auto Scaling scalable targets of the account and region
  (``arn:PARTITION:application-autoscaling:REGION:ACCOUNT:scalable-target/*``; their ids are random,
  so no narrower ARN exists): application-autoscaling:RegisterScalableTarget
- ``any``: actions without resource-level permissions (``Resource: "*"``; Service Authorization
  Reference: ecs:ListServices, ecs:ListClusters, elasticloadbalancing:DescribeTargetGroups,
  cloudwatch:GetMetricData, ecs:DescribeTaskDefinition, application-autoscaling:DescribeScalableTargets)

tests/infra/test_parity_*.py checks that template.yaml and terraform/ grant exactly these.
"""

from __future__ import annotations

import importlib
from types import MappingProxyType

__all__ = ["FUNCTIONS", "handler_permissions"]

FUNCTIONS = MappingProxyType(
    {
        "recorder": "ecs_guardrail.handlers.record.handler",
        "watchdog": "ecs_guardrail.handlers.watchdog.handler",
        "availability": "ecs_guardrail.handlers.availability.handler",
    }
)


def handler_permissions(name: str) -> dict[str, frozenset[str]]:
    """Resource kind -> IAM actions the code of function ``name`` calls (union of its ``USES``).

    Raises:
        KeyError: ``name`` is not one of :data:`FUNCTIONS`.
    """
    module = importlib.import_module(FUNCTIONS[name].rsplit(".", 1)[0])
    out: dict[str, set[str]] = {}
    for declared in module.USES.values():
        for kind, actions in declared.items():
            out.setdefault(kind, set()).update(actions)
    return {kind: frozenset(actions) for kind, actions in out.items() if actions}
