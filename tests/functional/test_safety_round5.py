"""Issue 30 item 8 on moto: a watchdog event that is not a JSON object (None, a list, a string, a number)
is rejected with its reason, as the recorder does; it raised AttributeError (the scheduled sweep's check
read ``event.get`` before the type was checked)."""

from __future__ import annotations

import pytest

from ecs_guardrail.handlers import record, watchdog
from ecs_guardrail.handlers.runtime import LambdaContextStub
from tests.conftest import dev_account

REGION = "eu-west-1"
CTX = LambdaContextStub()


@pytest.fixture
def aws(monkeypatch):
    with dev_account(monkeypatch, REGION) as aws:
        yield aws


@pytest.mark.parametrize("event", [None, [], [{"source": "aws.events"}], "Scheduled Event", 3, 1.5, True])
def test_watchdog_rejects_an_event_that_is_not_an_object_as_the_recorder_does(aws, event):
    out = watchdog.handler(event, CTX)
    assert out["status"] == "rejected"
    assert "not a JSON object" in out["reason"] and type(event).__name__ in out["reason"]
    assert record.handler(event, CTX)["reason"] == out["reason"]
