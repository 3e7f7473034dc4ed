"""Issue 17 item 7: whatever the policy code decides, the watchdog never changes an alert-only cluster's
scalable target. IAM cannot deny RegisterScalableTarget per cluster (scalable-target ARNs carry a random
id), so the adapter refuses it before calling; a bug that entitles production is simulated here by
replacing the entitlement rules with "always entitled"."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import boto3
import pytest

from ecs_guardrail.adapters.autoscaling import SCALABLE_DIMENSION
from ecs_guardrail.core import decision_facts
from ecs_guardrail.core.entitlement import EntitlementReason, Verdict
from tests.functional.test_watchdog_state import REGION, T0, Aws, crash, deliver, make_aws, moto_env  # noqa: F401

RID = "service/production/orders"
PARTIAL = {"DynamicScalingInSuspended": False, "DynamicScalingOutSuspended": True, "ScheduledScalingSuspended": False}


@pytest.fixture
def prod(moto_env: None) -> Aws:  # noqa: F811 - the fixture is imported for this one
    aws = make_aws({"production": ["orders", "web", "api", "auth", "mail"]})
    boto3.client("application-autoscaling", region_name=REGION).register_scalable_target(
        ServiceNamespace="ecs", ResourceId=RID, ScalableDimension=SCALABLE_DIMENSION, MinCapacity=2, MaxCapacity=8,
        SuspendedState=PARTIAL)
    return aws


def _target() -> dict[str, Any]:
    aas = boto3.client("application-autoscaling", region_name=REGION)
    (t,) = aas.describe_scalable_targets(ServiceNamespace="ecs", ResourceIds=[RID])["ScalableTargets"]
    return t


@pytest.mark.parametrize("alert_only", ["production", "prod*", "arn:aws:ecs:eu-west-1:123456789012:cluster/production"])
def test_a_policy_bug_cannot_touch_an_alert_only_clusters_scalable_target(prod: Aws, monkeypatch, alert_only):
    monkeypatch.setattr(decision_facts, "entitlement",  # rule 4's verdict, as core/decision_facts.py asks it
                        lambda *_a, **_k: Verdict(True, EntitlementReason.CRASH_LOOP, "a bug: entitled"))
    registered: list[str] = []

    def watch(client: Any) -> None:
        if client.meta.service_model.service_name == "application-autoscaling":
            client.meta.events.register("before-call.application-autoscaling.RegisterScalableTarget",
                                        lambda **kw: registered.append(kw["params"]["ResourceId"]))

    prod.hooks.append(watch)
    rt = prod.runtime(ALERT_ONLY_CLUSTERS=alert_only)
    for n in range(3):
        deliver(crash(n, T0 + timedelta(minutes=n), service="orders", cluster="production"), rt)
    assert registered == []  # refused before the call, not denied by AWS after it
    assert _target()["SuspendedState"] == PARTIAL and _target()["MinCapacity"] == 2
    assert prod.desired("orders", "production") == 2
    (decision,) = prod.decisions("orders", "production")
    assert decision["action"] == "alert_only" and decision["reason"] == "scaling_suspend_failed"
    assert "cluster production is alert-only" in decision["message"]
    assert any("production/orders" in a.get("Message", "") or "orders" in a.get("Subject", "") for a in prod.alerts())


def test_the_same_bug_on_a_cluster_that_may_act_suspends_then_scales(prod: Aws, monkeypatch):
    """The control: the refusal is the alert-only check, not a broken suspend path."""
    rt = prod.runtime(ALERT_ONLY_CLUSTERS="staging")
    for n in range(3):
        deliver(crash(n, T0 + timedelta(minutes=n), service="orders", cluster="production"), rt)
    assert prod.desired("orders", "production") == 0
    assert _target()["SuspendedState"] == {k: True for k in PARTIAL}
