"""Elastic Load Balancing v2: which load balancers each target group sits behind.

API reference: DescribeTargetGroups (``PageSize`` at most 400; ``TargetGroup.LoadBalancerArns``).
CloudWatch names ALB series by the ARN suffixes ``targetgroup/NAME/ID`` and ``app/NAME/ID``
(ECS-EVENTS.md, "ALB HealthyHostCount"); one target group can sit behind several load balancers.
"""

from __future__ import annotations

from typing import Any

from ecs_guardrail.core.links import parse_arn
from ecs_guardrail.core.permissions import permissions

__all__ = ["TargetGroups", "target_group_dimension", "load_balancer_dimension", "target_group_name"]


def target_group_dimension(arn: str) -> str:
    """``arn:...:targetgroup/NAME/ID`` -> ``targetgroup/NAME/ID`` (the CloudWatch dimension value)."""
    parsed = parse_arn(arn)
    if parsed is None:
        raise ValueError(f"not a target group ARN: {arn!r}")
    return parsed.resource


def load_balancer_dimension(arn: str) -> str:
    """``arn:...:loadbalancer/app/NAME/ID`` -> ``app/NAME/ID`` (the CloudWatch dimension value; a Network
    Load Balancer gives ``net/NAME/ID``, read under ``AWS/NetworkELB``)."""
    return arn.split(":loadbalancer/", 1)[1]


def target_group_name(arn: str) -> str:
    """``arn:...:targetgroup/NAME/ID`` -> ``NAME`` (as the console and fleet.json name it).

    Raises:
        ValueError: ``arn`` is not an ARN.
    """
    return target_group_dimension(arn).split("/")[1]


class TargetGroups:
    """DescribeTargetGroups through a client passed in."""

    PAGE_SIZE = 400

    def __init__(self, client: Any) -> None:
        self._elb = client

    @permissions(any=["elasticloadbalancing:DescribeTargetGroups"])
    def load_balancers(self, target_group_arns: set[str] | list[str]) -> dict[str, tuple[str, ...]]:
        """``{target group ARN: (load balancer ARN, ...)}`` for the ARNs asked (others are dropped).

        Lists the region's target groups 400 a page, so N target groups cost ``ceil(N / 400)`` calls
        whatever the number of services. A target group absent from the answer maps to ``()``.
        """
        wanted = set(target_group_arns)
        out: dict[str, tuple[str, ...]] = {arn: () for arn in wanted}
        if not wanted:
            return out
        paginator = self._elb.get_paginator("describe_target_groups")
        for page in paginator.paginate(PaginationConfig={"PageSize": self.PAGE_SIZE}):
            for tg in page.get("TargetGroups", []):
                if tg["TargetGroupArn"] in wanted:
                    out[tg["TargetGroupArn"]] = tuple(tg.get("LoadBalancerArns") or ())
        return out
