"""Availability sampler Lambda (scheduled): ALB HealthyHostCount per target group per minute.

Being built under issue 3; until then the replay reports ``unavailable_service_minutes`` as null.
"""

from __future__ import annotations

from typing import Any

__all__ = ["replay_availability", "USES"]

#: replaced by the sampler's adapters' declarations (issue 3)
USES = {
    "history": {"history_table": frozenset({"dynamodb:PutItem"})},
    "ecs": {"ecs_service": frozenset({"ecs:DescribeServices"}),
            "any": frozenset({"ecs:ListClusters", "ecs:ListServices"})},
    "metrics": {"any": frozenset({"elasticloadbalancing:DescribeTargetGroups", "cloudwatch:GetMetricData"})},
}


def replay_availability(aws: Any, scenario: Any, result: Any) -> None:
    return None
