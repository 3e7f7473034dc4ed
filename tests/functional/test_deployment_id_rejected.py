"""A deploymentId ECS never writes (empty, a right-to-left override, longer than 72 characters) is
rejected at the event model on moto: the recorder keeps the event in the table's rejected events with its
reason, both handlers count it (``EventsRejected``) and answer ``rejected``, no deployment alert is sent,
and nothing raises. Before, an empty one was logged but not counted, a right-to-left override reached the
alert text, and two ids over 200 characters with one prefix shared an alert id."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from ecs_guardrail.adapters.history import HistoryStore
from ecs_guardrail.handlers import record, runtime, watchdog
from ecs_guardrail.handlers.runtime import LambdaContextStub
from tests.conftest import dev_account

REGION = "eu-west-1"
ACCOUNT = "123456789012"
CTX = LambdaContextStub()


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Any:
    with dev_account(monkeypatch, REGION) as aws:
        yield aws


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the metrics the handlers add (Powertools still gets them)."""
    names: list[str] = []
    add = runtime.metrics.add_metric

    def spy(name: str, **kwargs: Any) -> None:
        names.append(name)
        add(name=name, **kwargs)

    monkeypatch.setattr(runtime.metrics, "add_metric", spy)
    return names


def published() -> list[Any]:
    """Every message moto's SNS took on the account's topics (the alert topic)."""
    from moto.sns.models import sns_backends

    return [n for t in sns_backends[ACCOUNT][REGION].topics.values() for n in t.sent_notifications]


def failed(did: Any, envelope: str = "e-1") -> dict[str, Any]:
    t = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"version": "0", "id": envelope, "detail-type": "ECS Deployment State Change", "source": "aws.ecs",
            "account": ACCOUNT, "time": t, "region": REGION,
            "resources": [f"arn:aws:ecs:{REGION}:{ACCOUNT}:service/dev/api"],
            "detail": {"eventType": "ERROR", "eventName": "SERVICE_DEPLOYMENT_FAILED", "deploymentId": did,
                       "updatedAt": t, "reason": "ECS deployment circuit breaker: task failed to start."}}


@pytest.mark.parametrize("did", ["", "ecs-svc/12\u202e34", "ecs-svc/" + "9" * 201, "ecs-svc/" + "9" * 5000])
def test_a_deployment_id_ecs_never_writes_is_rejected_counted_and_kept(aws: Any, counted: list[str],
                                                                       did: str) -> None:
    raw = failed(did)
    out = record.handler(copy.deepcopy(raw), CTX)
    assert out["status"] == "rejected" and "is not an ECS deployment id" in out["reason"]
    kept = HistoryStore(aws["ddb"], "history").rejected(datetime.now(UTC))
    assert len(kept) == 1 and kept[0]["reason"] == out["reason"] and "deploymentId" in kept[0]["raw"]
    seen = watchdog.handler(copy.deepcopy(raw), CTX)
    assert (seen["status"], seen["reason"], seen["decisions"]) == ("rejected", out["reason"], [])
    assert counted.count("EventsRejected") == 2
    assert published() == []
    assert "\u202e" not in out["reason"]


def test_two_long_ids_with_one_prefix_send_no_alert_at_all(aws: Any, counted: list[str]) -> None:
    prefix = "ecs-svc/" + "1" * 200
    for n, did in enumerate((prefix + "2", prefix + "3")):
        out = watchdog.handler(failed(did, envelope=f"e-{n}"), CTX)
        assert out["status"] == "rejected" and "deployment_alert" not in out
    assert published() == []
    assert counted.count("EventsRejected") == 2


def test_an_ecs_deployment_id_still_alerts(aws: Any, counted: list[str]) -> None:
    out = watchdog.handler(failed("ecs-svc/4406718823409915271"), CTX)
    assert out.get("deployment_alert") == "sent", out
    assert len(published()) == 1 and "ecs-svc/4406718823409915271" in str(published()[0])
    assert "EventsRejected" not in counted
