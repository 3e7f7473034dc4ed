"""Issue 35 item 3: the failed deployment's alert is claimed by one conditional write, on both tables
(DynamoDB on moto, and the fast engine's in-memory table): redelivered, concurrent and retried
``SERVICE_DEPLOYMENT_FAILED`` events send one alert, an invocation that died after claiming loses
nothing (its lease expires and the next delivery sends), and a send no sink took is retried."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest

from ecs_guardrail.adapters.store.deployment_alerts import DeploymentAlerts
from ecs_guardrail.adapters.store.memory import MemoryTable
from ecs_guardrail.core.lifecycle import LEASE_MARGIN_S
from ecs_guardrail.handlers import watchdog
from tests.conftest import ManualClock
from tests.functional.test_watchdog_state import (  # noqa: F401 - fixtures
    ACCOUNT,
    REGION,
    T0,
    TABLE,
    Aws,
    aws,
    deliver,
    moto_env,
)


def failed(cluster: str = "dev", service: str = "api", did: str = "ecs-svc/2222", envelope: str = "e-1",
           minutes: int = 5) -> dict[str, Any]:
    t = (T0 + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"version": "0", "id": envelope, "detail-type": "ECS Deployment State Change", "source": "aws.ecs",
            "account": ACCOUNT, "time": t, "region": REGION,
            "resources": [f"arn:aws:ecs:{REGION}:{ACCOUNT}:service/{cluster}/{service}"],
            "detail": {"eventType": "ERROR", "eventName": "SERVICE_DEPLOYMENT_FAILED", "deploymentId": did,
                       "updatedAt": t, "reason": "ECS deployment circuit breaker: task failed to start."}}


def _deployment_alerts(aws: Aws) -> list[dict[str, Any]]:  # noqa: F811 - the fixture
    return [a for a in aws.alerts() if "deployment_failed:" in str(a)]


@pytest.fixture(params=["moto", "fast"])
def table(request: pytest.FixtureRequest, aws: Aws) -> Any:  # noqa: F811 - the fixture
    """The history table: DynamoDB on moto, or the fast engine's in-memory table (shared by every runtime)."""
    return None if request.param == "moto" else MemoryTable(TABLE, REGION)


def test_redelivered_and_repeated_events_send_one_alert(aws: Aws, table: Any) -> None:  # noqa: F811 - the fixture
    rt = aws.runtime(table)
    first = deliver(failed(), rt)
    assert first["deployment_alert"] == "sent"
    assert deliver(failed(), rt)["deployment_alert"] == "already_sent"  # the same envelope again
    other = aws.runtime(table)  # another execution environment, another envelope id
    assert deliver(failed(envelope="e-2"), other)["deployment_alert"] == "already_sent"
    assert len(_deployment_alerts(aws)) == 1
    # another deployment of the same service is news again
    assert deliver(failed(did="ecs-svc/3333", envelope="e-3", minutes=40), rt)["deployment_alert"] == "sent"
    assert len(_deployment_alerts(aws)) == 1


def test_an_invocation_that_died_after_claiming_loses_nothing(aws: Aws, table: Any) -> None:  # noqa: F811 - the fixture
    rt = aws.runtime(table)
    rt.clock = clock = ManualClock()
    claims = DeploymentAlerts(rt.history.port)
    assert claims.claim("dev", "api", "ecs-svc/2222", owner="dead", now=clock(), lease_until=clock() + 60,
                        at=T0) == "claimed"
    with pytest.raises(watchdog.DecisionInProgressError):  # its lease runs: Lambda retries the event later
        deliver(failed(), rt)
    assert _deployment_alerts(aws) == []
    clock.advance(61 + LEASE_MARGIN_S)
    assert deliver(failed(), rt)["deployment_alert"] == "sent"  # taken over from the dead owner
    assert deliver(failed(), rt)["deployment_alert"] == "already_sent"
    assert len(_deployment_alerts(aws)) == 1
    # the dead owner cannot mark it (its claim was taken over)
    assert claims.finish("dev", "api", "ecs-svc/2222", owner="dead", at=T0, sent=True) is False


def test_a_send_no_sink_took_is_retried_and_sent_once(aws: Aws, table: Any) -> None:  # noqa: F811 - the fixture
    broken = aws.runtime(table, ALERT_TOPIC_ARN=f"arn:aws:sns:{REGION}:{ACCOUNT}:no-such-topic")
    with pytest.raises(watchdog.AlertDeliveryError):
        deliver(failed(), broken)
    rt = aws.runtime(table)  # Lambda's retry, SNS answering again
    assert deliver(failed(), rt)["deployment_alert"] == "sent"
    assert deliver(failed(), rt)["deployment_alert"] == "already_sent"
    assert len(_deployment_alerts(aws)) == 1


def test_two_concurrent_invocations_send_one_alert(aws: Aws) -> None:  # noqa: F811 - the fixture
    """On DynamoDB (moto): both invocations reach the claim at once; one writes it, the other finds it
    claimed (DecisionInProgressError: Lambda retries, then finds it sent) or sent."""
    barrier = threading.Barrier(2, timeout=600)  # a hang guard only
    real = DeploymentAlerts.claim

    def claim(self: DeploymentAlerts, *args: Any, **kwargs: Any) -> Any:
        barrier.wait()
        return real(self, *args, **kwargs)

    rt_a, rt_b = aws.runtime(), aws.runtime()
    outcomes: dict[str, Any] = {}

    def run(name: str, rt: Any, event: dict[str, Any]) -> None:
        try:
            outcomes[name] = deliver(event, rt)
        except Exception as exc:  # noqa: BLE001 - the loser may raise DecisionInProgressError
            outcomes[name] = exc

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(DeploymentAlerts, "claim", claim)
        threads = [threading.Thread(target=run, args=("a", rt_a, failed(envelope="e-a"))),
                   threading.Thread(target=run, args=("b", rt_b, failed(envelope="e-b")))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    assert not barrier.broken
    sent = [o for o in outcomes.values() if isinstance(o, dict) and o.get("deployment_alert") == "sent"]
    others = [o for o in outcomes.values() if o not in sent]
    assert len(sent) == 1, outcomes
    assert isinstance(others[0], watchdog.DecisionInProgressError) or \
        others[0].get("deployment_alert") == "already_sent", outcomes
    assert deliver(failed(envelope="e-retry"), rt_b)["deployment_alert"] == "already_sent"  # the loser's retry
    assert len(_deployment_alerts(aws)) == 1


def test_a_deployment_id_longer_than_ecs_gives_is_rejected_not_alerted(aws: Aws, table: Any) -> None:  # noqa: F811
    """An id cut to 200 characters made two long ids with one prefix one alert; the event model now
    rejects any id past ``ecs-svc/`` and 64 letters or digits (tests/functional/test_deployment_id_rejected.py)."""
    rt = aws.runtime(table)
    forged = "ecs-svc/" + "9" * 5000  # a DynamoDB sort key holds 1,024 bytes at most
    out = deliver(failed(did=forged), rt)
    assert out["status"] == "rejected" and "is not an ECS deployment id" in out["reason"]
    assert _deployment_alerts(aws) == []
    longest = "ecs-svc/" + "9" * 64
    assert deliver(failed(did=longest), rt)["deployment_alert"] == "sent"
    assert deliver(failed(did=longest, envelope="e-2"), rt)["deployment_alert"] == "already_sent"
    assert len(_deployment_alerts(aws)) == 1
