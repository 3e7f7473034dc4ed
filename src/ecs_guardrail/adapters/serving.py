"""Serving evidence of a service behind a load balancer: the newest minute of both observers per target
group (Elastic Load Balancing ``HealthyHostCount`` minimum, and an ALB's request metrics), for rule 4's
``still_serving`` and a probe's pass.

Reads: one DescribeTargetGroups (:class:`~ecs_guardrail.adapters.elb.TargetGroups`, the target groups'
``LoadBalancerArns``) and one GetMetricData (:class:`~ecs_guardrail.adapters.cloudwatch.HealthyHostCount`).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from msgspec.structs import replace

from ecs_guardrail.adapters.cloudwatch import HealthyHostCount, Series
from ecs_guardrail.adapters.ecs import ServiceFacts
from ecs_guardrail.adapters.elb import TargetGroups, load_balancer_dimension, target_group_dimension
from ecs_guardrail.core.entitlement import ServingSample
from ecs_guardrail.core.links import metric_target_group_name

__all__ = ["newest_serving"]


def newest_serving(clients: Callable[[str], Any], cache: dict[str, Any], facts: ServiceFacts, at: datetime,
                   max_age_minutes: int = 3, requests: bool = True) -> tuple[ServingSample, ...]:
    """The newest minute of both observers per target group of ``facts`` (DescribeServices'
    ``loadBalancers[].targetGroupArn``) within ``max_age_minutes`` of ``at``; ``()`` for a service behind
    no load balancer (no call). ``clients``: the runtime's client factory; ``cache["metrics"]``, when set,
    replaces the CloudWatch reader (a replay's recorded metrics). Target groups are named as operators
    know them (``targetgroup/NAME/ID`` -> ``NAME``).

    Raises:
        botocore.exceptions.ClientError: a transient error after the client's retries.
    """
    if not facts.target_group_arns:
        return ()
    tgs = list(facts.target_group_arns)
    lbs = TargetGroups(clients("elbv2")).load_balancers(tgs)
    series = [Series(target_group_dimension(arn), load_balancer_dimension(lb))
              for arn in tgs for lb in lbs.get(arn, ())]
    if not series:
        return ()
    source = cache.get("metrics") or HealthyHostCount(clients("cloudwatch"))
    return tuple(replace(x, target_group=metric_target_group_name(x.target_group))
                 for x in source.newest_healthy(series, at, max_age_minutes, requests=requests))
