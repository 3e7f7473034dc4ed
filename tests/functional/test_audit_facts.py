"""The audit adapter against moto: what a half-deleted or bare fleet reads as."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from ecs_guardrail.adapters.audit_facts import AuditFacts
from ecs_guardrail.core.errors import ClusterNotFoundError
from ecs_guardrail.replay.fleet import build_fleet

REGION = "eu-west-1"


def _client(service: str):
    return boto3.client(service, region_name=REGION)


def _reader() -> AuditFacts:
    return AuditFacts(_client("ecs"), _client("elbv2"), _client("application-autoscaling"))


def test_a_deleted_target_group_does_not_hide_the_others():
    fleet = {"clusters": [{"name": "qa", "services": [
        {"name": "web", "desiredCount": 2, "targetGroups": ["web-a", "web-b"], "healthCheck": {"path": "/health"}}]}]}
    with mock_aws():
        built = build_fleet(_client, fleet, "123456789012", REGION)
        elb = _client("elbv2")
        gone = built.target_groups["web-a"]["arn"]
        for listener in elb.describe_listeners(LoadBalancerArn=built.target_groups["web-a"]["lb_arn"])["Listeners"]:
            if listener["DefaultActions"][0]["TargetGroupArn"] == gone:
                elb.delete_listener(ListenerArn=listener["ListenerArn"])
        elb.delete_target_group(TargetGroupArn=gone)
        facts = _reader().cluster("qa")
    assert [tg.name for tg in facts.services[0].target_groups] == ["web-b"]
    assert facts.services[0].target_groups[0].path == "/health"


def test_a_bare_service_reads_as_defaults_and_an_unknown_cluster_is_named():
    fleet = {"clusters": [{"name": "qa", "services": [{"name": "worker", "desiredCount": 1}]}, {"name": "empty"}]}
    with mock_aws():
        build_fleet(_client, fleet, "123456789012", REGION)
        reader = _reader()
        (worker,) = reader.cluster("qa").services
        assert reader.cluster("empty").services == ()
        with pytest.raises(ClusterNotFoundError, match="'nope'"):
            reader.cluster("nope")
    assert worker.target_groups == () and worker.container_health_check is None
    assert worker.essential_containers == ("app",) and worker.scalable_min_capacity is None
    assert worker.circuit_breaker is None and worker.health_check_grace_period_seconds is None
    assert worker.scheduling_strategy == "REPLICA" and worker.desired_count == 1


def test_the_unhealthy_state_routing_floor_is_read_from_the_target_group_attributes():
    fleet = {"clusters": [{"name": "qa", "services": [
        {"name": "web", "desiredCount": 2, "targetGroups": ["web-a", "web-b"]}]}]}
    floor = "target_group_health.unhealthy_state_routing.minimum_healthy_targets."
    with mock_aws():
        built = build_fleet(_client, fleet, "123456789012", REGION)
        _client("elbv2").modify_target_group_attributes(
            TargetGroupArn=built.target_groups["web-a"]["arn"],
            Attributes=[{"Key": floor + "percentage", "Value": "50"}, {"Key": floor + "count", "Value": "1"}])
        groups = {tg.name: tg for tg in _reader().cluster("qa").services[0].target_groups}
    assert groups["web-a"].routing_floor_percentage == 50 and groups["web-a"].routing_floor_count == 1
    assert groups["web-b"].routing_floor_percentage is None and groups["web-b"].routing_floor_count == 1  # defaults
