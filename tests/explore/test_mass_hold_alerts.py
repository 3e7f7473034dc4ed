"""A mass hold's alerts (issue 21, issue 24 item 15): the one cluster alert has one line per failing
service (its crash count and last stop), and the hold's recovery names every service it held."""

from __future__ import annotations

import json
from datetime import timedelta

import ecsgen
from world import CONTEXT, T0, World, crash

from ecs_guardrail.handlers import watchdog


def _mass() -> World:
    w = World.new()
    w.settle([crash("dev", s, i, i + k / 10) for i in (1, 2, 3) for k, s in enumerate(("svc0", "svc1", "svc2"))])
    return w


def _steady(service: str, minute: float) -> dict:
    event = ecsgen.impaired_event("dev", service, T0 + timedelta(minutes=minute))
    event["detail"]["eventName"] = "SERVICE_STEADY_STATE"
    event["id"] = f"steady-{service}-{minute}"
    return event


def test_the_cluster_alert_has_one_line_per_failing_service():
    w = _mass()
    (alert,) = w.alerts()
    text = str(alert.get("message"))
    # the counts at the decision (svc0's third crash triggered it; svc1 and svc2 had two each then)
    for s, n in (("svc0", 3), ("svc1", 2), ("svc2", 2)):
        assert f"\\n{s}: {n} crashes, 0 health-check kills in 30 min; last " in text, text


def test_the_mass_holds_recovery_names_every_service_it_held():
    w = _mass()
    out = watchdog.invoke(_steady("svc0", 40), w.runtime(), CONTEXT)
    assert out["recovered"] is True
    recovery = w.alerts()[-1]
    assert "recovered: dev/svc0" in str(recovery.get("subject"))
    text = str(recovery.get("message"))
    assert "The mass hold covered 3 services: svc0, svc1, svc2" in text, text
    assert "still in their own episode: svc1, svc2" in text
    assert "Services held: svc0, svc1, svc2" in json.loads(text)["content"]["description"]
