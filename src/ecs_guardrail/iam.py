"""IAM permissions, declared on the unit of code that makes each AWS call, and walked per Lambda function.

Every adapter method (or module function) that calls AWS carries :func:`permissions`, naming the IAM
actions of the calls it makes itself, per resource kind (as Cloud Custodian declares ``permissions`` on
each action): the declaration sits beside the call, so a new call without its grant is visible in the
diff, and ``tests/infra/test_iam_calls.py`` finds it at run time (each recorded call is checked against
the innermost declared unit on the stack, then against the function's role in both templates with an
IAM policy evaluator). Each handler module lists the units it reaches in ``USES``;
:func:`handler_permissions` unions their declarations, and ``tests/infra/test_parity_iam.py`` checks that
template.yaml and terraform/ grant exactly that union.

Resource kinds (:data:`RESOURCE_KINDS`):

- ``history_table``: the DynamoDB history table (the table only, no index)
- ``history_index``: the table's indexes (the CLI's timeline reads; no function)
- ``ecs_service``: ECS services (long ARN format, ``service/CLUSTER/NAME``)
- ``ecs_service_deployment``: ECS service deployments (``service-deployment/CLUSTER/SERVICE/ID``, the
  resource of ecs:DescribeServiceDeployments; ecs:ListServiceDeployments takes the service)
- ``alert_topic``: the SNS alert topic
- ``default_bus``: the account's default EventBridge bus (the sampler's restart observations)
- ``webhook_secret``: the Secrets Manager secret holding the Slack webhook URL
- ``scalable_target``: Application Auto Scaling scalable targets of the account and region
  (``arn:PARTITION:application-autoscaling:REGION:ACCOUNT:scalable-target/*``; their ids are random,
  so no narrower ARN exists): application-autoscaling:RegisterScalableTarget
- ``crash_log_group``: the services' own ``awslogs`` log groups, whose last lines a decision's alert
  quotes (``arn:PARTITION:logs:REGION:ACCOUNT:log-group:PATTERN``; ``PATTERN`` is the stack parameter
  ``CrashLogGroupPattern`` / ``crash_log_group_pattern``, default ``/ecs/*``): logs:FilterLogEvents
- ``any``: actions without resource-level permissions (``Resource: "*"``; Service Authorization
  Reference: ecs:ListServices, ecs:ListClusters, elasticloadbalancing:DescribeTargetGroups,
  cloudwatch:GetMetricData, ecs:DescribeTaskDefinition, application-autoscaling:DescribeScalableTargets)
"""

from __future__ import annotations

import importlib
from types import MappingProxyType

from ecs_guardrail.core.permissions import (
    RESOURCE_KINDS,
    Permissions,
    declared_by_code,
    declared_functions,
    permissions,
    permissions_of,
)

__all__ = ["FUNCTIONS", "RESOURCE_KINDS", "Permissions", "permissions", "permissions_of", "declared_by_code",
           "declared_functions", "handler_permissions"]

FUNCTIONS = MappingProxyType(
    {
        "recorder": "ecs_guardrail.handlers.record.handler",
        "watchdog": "ecs_guardrail.handlers.watchdog.handler",
        "availability": "ecs_guardrail.handlers.availability.handler",
        # the crash path's own lane (issue 32 item 3): the schedule's sweep and the restart observations
        "sweep": "ecs_guardrail.handlers.lane.handler",
    }
)


def handler_permissions(name: str) -> dict[str, frozenset[str]]:
    """Resource kind -> IAM actions the code of function ``name`` calls: the union of
    :func:`permissions_of` over its module's ``USES`` (name -> class or function).

    Raises:
        KeyError: ``name`` is not one of :data:`FUNCTIONS`.
    """
    module = importlib.import_module(FUNCTIONS[name].rsplit(".", 1)[0])
    out: dict[str, set[str]] = {}
    for unit in module.USES.values():
        for kind, actions in permissions_of(unit).items():
            out.setdefault(kind, set()).update(actions)
    return {kind: frozenset(actions) for kind, actions in out.items() if actions}
