"""Issue 37: held at zero means no new decision (ARCHITECTURE.md rule 2): a service the watchdog scaled
to 0, that nothing restored or raised, gets no second decision, whatever the fleet test says, a
redelivery included. Its failures update the counts and nothing else."""

from __future__ import annotations

import copy
from datetime import timedelta

import ecsgen
from tests.faults.faultkit import embedded_fleet

from ecs_guardrail.handlers.watchdog import process


def _steady(service: str, minute: int) -> dict:
    e = ecsgen.impaired_event("development", service, ecsgen.T0 + timedelta(minutes=minute))
    e["id"] = f"steady-{service}-{minute}"
    e["detail"].update(eventName="SERVICE_STEADY_STATE", eventType="INFO")
    return e


def _decisions(fleet, service: str) -> list[tuple[str, str]]:
    return sorted((i["action"], i["time"]) for i in fleet.decision_items(service))


def test_the_redelivery_sequence_makes_no_second_scale_down():
    """The sequence of issue 37 item 2: a held service's late stops (the fleet test says hold, dropped);
    much later another service's crash pushes that service's old failures past the fleet horizon; then
    a redelivered copy of one of the held service's stops is evaluated again, and the fleet test now
    sees only that service. Before the fix: a second scale_to_zero and a second alert."""
    with embedded_fleet() as fleet:
        rt = fleet.runtime()
        for m in (0, 1, 2):
            process(fleet.crash("svc0", m), rt)
        assert [a for a, _ in _decisions(fleet, "svc0")] == ["scale_to_zero"]
        assert len(fleet.aws.alerts()) == 1  # the decision's (read back through SQS: each read drains)
        process(_steady("svc0", 3), rt)  # ends the episode; svc0 stays at 0 (held)
        for m in (4, 5):
            process(fleet.crash("svc1", m), rt)  # two failures: a fleet signal, no decision of its own
        late = [fleet.crash("svc0", m) for m in (6, 7, 8)]  # stops of tasks launched before the scale-down
        outs = [process(e, rt)[0] for e in late]
        assert all(o["status"] != "decided" for o in outs), outs
        process(fleet.crash("svc1", 200), rt)  # svc1's failures of minutes 4-5 fall past its horizon
        again = process(copy.deepcopy(late[-1]), rt)[0]  # a redelivered copy of the held service's stop
        assert again["status"] != "decided", again
        assert [a for a, _ in _decisions(fleet, "svc0")] == ["scale_to_zero"]
        assert fleet.aws.alerts() == []  # no second alert
        assert fleet.desired("svc0") == 0


def test_a_held_services_late_loop_opens_no_episode_and_counts_for_the_fleet():
    with embedded_fleet() as fleet:
        rt = fleet.runtime()
        for m in (0, 1, 2):
            process(fleet.crash("svc0", m), rt)
        process(_steady("svc0", 3), rt)
        assert len(fleet.aws.alerts()) == 1  # the decision's (read back through SQS: each read drains)
        outs = [process(fleet.crash("svc0", m), rt)[0] for m in (4, 5, 6, 7, 8)]
        assert [o["status"] for o in outs][-1] == "held_at_zero", outs
        assert [a for a, _ in _decisions(fleet, "svc0")] == ["scale_to_zero"]
        assert fleet.aws.alerts() == []  # no second alert
        # the late stops were counted: svc0 is failing for the fleet test of svc1's loop (cap: svc0 holds it)
        outs = [process(fleet.crash("svc1", m), rt)[0] for m in (9, 10, 11)]
        d = outs[-1]["decision"]
        assert d["action"] == "hold" and "svc0" in d["failing"], d


def test_an_operators_raise_ends_the_hold_and_a_new_loop_is_decided():
    """The rule holds until a raise: an operator set the held service back to 2 and it loops again."""
    with embedded_fleet() as fleet:
        rt = fleet.runtime()
        for m in (0, 1, 2):
            process(fleet.crash("svc0", m), rt)
        process(_steady("svc0", 3), rt)
        fleet.aws.client("ecs").update_service(cluster="development", service="svc0", desiredCount=2)
        outs = [process(fleet.crash("svc0", m), rt)[0] for m in (40, 41, 42)]
        assert outs[-1]["status"] == "decided" and outs[-1]["decision"]["action"] == "scale_to_zero", outs
        assert len(_decisions(fleet, "svc0")) == 2 and fleet.desired("svc0") == 0
