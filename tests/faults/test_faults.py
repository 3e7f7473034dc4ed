"""Fault injection: races, throttling, ECS errors, alert sinks down, a Lambda killed mid-action.

Rule under test (ARCHITECTURE.md "Data flow"): every decision is written to the history table before
any alert or action; an AWS error the code does not understand propagates to the retry / DLQ path;
a redelivered event finishes unfinished work exactly once.
"""

from __future__ import annotations

import functools

import pytest
from botocore.exceptions import ClientError
from faultkit import ManualClock, SlackStandIn, client_error, embedded_fleet

from ecs_guardrail.adapters import alerts
from ecs_guardrail.adapters.history import HistoryStore
from ecs_guardrail.adapters.store.dynamodb import DynamoTable
from ecs_guardrail.adapters.store.watchdog_state import WatchdogState
from ecs_guardrail.core.lifecycle import LEASE_MARGIN_S
from ecs_guardrail.core.records import Action, Reason
from ecs_guardrail.core.summary import ActionStatus, AlertStatus
from ecs_guardrail.handlers.runtime import LambdaContextStub
from ecs_guardrail.handlers.watchdog import AlertDeliveryError, process

#: a Lambda context with 5 s left: the lease then lasts 5 s + LEASE_MARGIN_S (it outlives the invocation)
SHORT = LambdaContextStub(remaining_ms=5_000)
#: a redelivery that follows a killed invocation arrives after its lease expired (on the injected clock)
AFTER_LEASE_S = 5 + LEASE_MARGIN_S + 1


def _loop(fleet, rt, service="svc0", crashes=3, start=0, context=None):
    """Deliver ``crashes`` crash events; returns the outcome of the last one and the events."""
    events = [fleet.crash(service, start + i) for i in range(crashes)]
    out = None
    for e in events:
        out, _ = process(e, rt, context)
    return out, events


# ------------------------------------------------------------------ races
def test_two_invocations_race_on_one_service_exactly_one_acts(monkeypatch):
    with embedded_fleet() as fleet:
        rt_a, rt_b = fleet.runtime(), fleet.runtime()
        _loop(fleet, rt_a, crashes=2)
        ev_a, ev_b = fleet.crash("svc0", 3), fleet.crash("svc0", 4)
        real_claim = WatchdogState.claim
        outcomes = {}

        def interleaved(self, *args, **kwargs):
            # A has loaded the same state and is about to claim: B runs all the way first
            if "b" not in outcomes:
                outcomes["b"] = None
                outcomes["b"] = process(ev_b, rt_b)[0]
            return real_claim(self, *args, **kwargs)

        monkeypatch.setattr(WatchdogState, "claim", interleaved)
        outcomes["a"] = process(ev_a, rt_a)[0]
        assert outcomes["b"]["status"] == "decided"
        assert outcomes["b"]["decision"]["action"] == "scale_to_zero"
        assert outcomes["a"]["status"] == "lost_race"
        assert len(fleet.aws.alerts()) == 1
        assert fleet.ecs.ok_calls["update_service"] == 1
        assert fleet.desired("svc0") == 0
        assert len(fleet.decision_items("svc0")) == 1


def _slot_race(fleet, monkeypatch):
    rt = fleet.runtime()
    real_take = WatchdogState.take_slot
    taken = {}

    def interleaved(self, ck, service, at, bound, view):
        if not taken:  # another invocation, same view, takes the last slot first
            taken["other"] = real_take(self, ck, "svc1", at, bound, view)
        return real_take(self, ck, service, at, bound, view)

    real_claim = WatchdogState.claim_with_slot

    def claim_interleaved(self, ck, current, new, record, *, at, bound, view, slotted=None):
        # the claim that takes the slot in its own transaction (handlers/folds.py): the other one comes first
        if not taken:
            taken["other"] = real_take(self, ck, "svc1", at, bound, view)
        return real_claim(self, ck, current, new, record, at=at, bound=bound, view=view, slotted=slotted)

    monkeypatch.setattr(WatchdogState, "take_slot", interleaved)
    monkeypatch.setattr(WatchdogState, "claim_with_slot", claim_interleaved)
    out, _ = _loop(fleet, rt, "svc0")
    assert taken["other"] == 0
    return out


def test_two_services_race_for_the_clusters_last_action_slot(monkeypatch):
    """Both saw a free slot (same pre-loaded cluster state); the loser holds and records why."""
    with embedded_fleet(FLEET_SIGNAL_MIN_FAILURES="3") as fleet:
        out = _slot_race(fleet, monkeypatch)
        assert out["decision"]["action"] == "hold"
        assert out["decision"]["reason"] == "blast_radius_cap"
        assert fleet.desired("svc0") == 2
        assert fleet.ecs.calls["update_service"] == 0
        ep = fleet.episode("svc0")
        assert (ep.action, ep.reason, ep.action_status) == (Action.HOLD, Reason.BLAST_RADIUS_CAP, ActionStatus.NONE)
        [item] = fleet.decision_items("svc0")
        assert (item["action"], item["reason"]) == ("hold", "blast_radius_cap")
        assert "took the last held-at-zero slot" in item["message"]
        assert len(fleet.aws.alerts()) == 1


def test_slot_race_loser_names_the_service_that_took_the_slot(monkeypatch):
    with embedded_fleet(FLEET_SIGNAL_MIN_FAILURES="3") as fleet:
        out = _slot_race(fleet, monkeypatch)
        assert out["decision"]["evidence"]["held_at_zero"] == ["svc1"]
        [item] = fleet.decision_items("svc0")
        assert "svc1 took the last held-at-zero slot" in item["message"]


def test_store_level_slot_race_gives_the_bound_exactly():
    with embedded_fleet() as fleet:
        from datetime import timedelta

        import ecsgen

        state = WatchdogState(DynamoTable(fleet.aws.client("dynamodb"), "ecs-guardrail-history"))
        view = state.cluster("development")  # every contender read the same (empty) view
        got = [state.take_slot("development", s, ecsgen.T0, 2, view) for s in ("svc0", "svc1", "svc2", "svc3")]
        assert sorted(g for g in got if g is not None) == [0, 1]
        assert got.count(None) == 2
        # the winner's redelivery reuses its slot, never takes a second one
        fresh = state.cluster("development")
        assert state.take_slot("development", "svc0", ecsgen.T0 + timedelta(minutes=1), 2, fresh) == got[0]
        assert fresh.held() == ("svc0", "svc1")


# ------------------------------------------------------------------ DynamoDB throttling
@pytest.mark.parametrize("op", ["put_item", "transact_write_items", "query"])
def test_dynamodb_throttling_propagates_and_nothing_is_acted(op):
    with embedded_fleet() as fleet:
        rt = fleet.runtime()
        _loop(fleet, rt, crashes=2)
        event = fleet.crash("svc0", 5)
        fleet.ddb.fail(op, client_error("ProvisionedThroughputExceededException", op), times=1)
        with pytest.raises(ClientError) as info:
            process(event, rt)
        assert info.value.response["Error"]["Code"] == "ProvisionedThroughputExceededException"
        assert fleet.ecs.calls["update_service"] == 0
        assert fleet.desired("svc0") == 2
        # Lambda's retry delivers the same event again: it decides and acts once
        out, _ = process(event, rt)
        assert fleet.desired("svc0") == 0
        assert fleet.ecs.ok_calls["update_service"] == 1
        process(event, rt)
        assert fleet.ecs.ok_calls["update_service"] == 1
        assert len(fleet.decision_items("svc0")) == 1


def test_recorder_throttled_by_stubber_raises_for_retry():
    from botocore.stub import Stubber

    from ecs_guardrail.handlers.record import record_event

    with embedded_fleet() as fleet:
        ddb = fleet.aws.client("dynamodb")
        with Stubber(ddb) as stub:
            stub.add_client_error("put_item", "ProvisionedThroughputExceededException", http_status_code=400)
            with pytest.raises(ClientError):
                record_event(fleet.crash("svc0", 0), HistoryStore(ddb, "ecs-guardrail-history"))
            stub.assert_no_pending_responses()


# ------------------------------------------------------------------ ECS errors and a killed Lambda
@pytest.mark.parametrize("code", ["ThrottlingException", "InternalFailure"])
def test_update_service_transient_error_keeps_the_decision_and_propagates(code):
    with embedded_fleet() as fleet:
        rt = fleet.runtime()
        fleet.ecs.fail("update_service", client_error(code, "UpdateService", 500 if code == "InternalFailure" else 400))
        with pytest.raises(ClientError) as info:
            _loop(fleet, rt)
        assert info.value.response["Error"]["Code"] == code
        [item] = fleet.decision_items("svc0")
        assert item["action"] == "scale_to_zero"
        ep = fleet.episode("svc0")
        # what restore needs was recorded before the call that failed (previous count, scaling state)
        assert ep.action_status is ActionStatus.RECORDED and ep.previous_desired_count == 2
        assert fleet.desired("svc0") == 2


@pytest.mark.parametrize("code", ["ServiceNotFoundException", "AccessDeniedException", "ClusterNotFoundException"])
@pytest.mark.parametrize("op", ["update_service", "tag_resource"])
def test_refused_action_becomes_an_alert_and_never_swallows_it(code, op):
    """Issue 17 item 4: a refused UpdateService (an IAM deny, an SCP, a deleted service) used to fail every
    retry before the alert: the episode stayed pending, the events went to the DLQ, nobody was told."""
    with embedded_fleet() as fleet:
        rt = fleet.runtime()
        fleet.ecs.fail(op, client_error(code, "UpdateService" if op == "update_service" else "TagResource"), times=5)
        out, _ = _loop(fleet, rt)
        assert out["status"] == "decided"
        d = out["decision"]
        assert (d["action"], d["reason"]) == ("alert_only", "action_failed")
        assert code in d["evidence"]["action_error"] and "NOT scaled to 0" in d["message"]
        [item] = fleet.decision_items("svc0")
        assert (item["action"], item["reason"]) == ("alert_only", "action_failed")
        ep = fleet.episode("svc0")
        assert ep.action_status is ActionStatus.NONE and ep.alert_status is AlertStatus.SENT and ep.lease_owner is None
        assert fleet.desired("svc0") == 2
        [alert] = fleet.aws.alerts()
        assert "action_failed" in alert["message"] or "refused" in alert["message"]
        # the slot was given back: the cap does not count a service that was never scaled
        assert WatchdogState(DynamoTable(fleet.aws.client("dynamodb"), "ecs-guardrail-history")).cluster(
            "development").held() == ()


def test_lambda_killed_between_decision_and_action_completes_once_on_redelivery():
    with embedded_fleet() as fleet:
        rt = fleet.runtime()
        rt.clock = clock = ManualClock()
        fleet.ecs.fail("update_service", RuntimeError("Lambda killed (timeout) mid-invocation"))
        with pytest.raises(RuntimeError):
            _loop(fleet, rt, context=SHORT)
        assert fleet.desired("svc0") == 2
        redelivered = {**_event_of(fleet, "svc0")}
        # while the killed invocation's lease runs, a redelivery waits (the Lambda entry point raises for a retry)
        out, _ = process(redelivered, rt)
        assert out["status"] == "in_progress" and fleet.ecs.ok_calls["update_service"] == 0
        clock.advance(AFTER_LEASE_S)
        # EventBridge redelivers the killed invocation's event
        out, _ = process(redelivered, rt)
        assert out["status"] == "resumed"
        assert fleet.desired("svc0") == 0
        assert fleet.ecs.ok_calls["update_service"] == 1
        assert fleet.episode("svc0").action_status is ActionStatus.DONE
        assert len(fleet.aws.alerts()) == 1
        # a second redelivery changes nothing and alerts no more
        process(redelivered, rt)
        assert fleet.ecs.ok_calls["update_service"] == 1
        assert fleet.aws.alerts() == []


def _event_of(fleet, service):
    """The last crash event generated for ``service`` (the one whose invocation was killed)."""
    import ecsgen

    from ecs_guardrail.core.events import parse_event

    n = fleet.n
    event = ecsgen.task_event("development", service, f"{n:032x}", "crash_exit",
                              ecsgen.T0 + _minutes(2))
    assert parse_event(event).detail.task_arn.endswith(f"{n:032x}")
    return event


def _minutes(m):
    from datetime import timedelta

    return timedelta(minutes=m)


# ------------------------------------------------------------------ alert sinks down
def test_sns_failing_records_then_raises_and_redelivery_sends_once():
    with embedded_fleet() as fleet:
        rt = fleet.runtime()
        fleet.sns.fail("publish", client_error("InternalError", "Publish", 500))
        events = [fleet.crash("svc0", i) for i in range(3)]
        for e in events[:2]:
            process(e, rt)
        out, wd = process(events[2], rt)
        assert wd.alerts_failed == ["development/svc0"]  # the handler raises AlertDeliveryError on this
        assert fleet.decision_items("svc0") and fleet.episode("svc0").alert_status is AlertStatus.FAILED
        assert fleet.desired("svc0") == 0  # the action does not wait for the alert
        assert fleet.aws.alerts() == []
        out, _ = process(events[2], rt)
        assert out["status"] == "resumed"
        assert len(fleet.aws.alerts()) == 1
        assert fleet.episode("svc0").alert_status is AlertStatus.SENT
        out, wd = process(events[2], rt)
        assert out["status"] in ("duplicate", "in_episode") and wd.decisions == []
        assert fleet.aws.alerts() == []
        assert fleet.ecs.ok_calls["update_service"] == 1


def test_handler_raises_alert_delivery_error_after_recording(monkeypatch):
    with embedded_fleet() as fleet:
        rt = fleet.runtime()
        fleet.sns.fail("publish", client_error("InternalError", "Publish", 500))
        from ecs_guardrail.handlers import watchdog

        monkeypatch.setattr(watchdog, "lambda_runtime", lambda kind, home=None: rt)
        events = [fleet.crash("svc0", i) for i in range(3)]
        for e in events[:2]:
            watchdog.handler(e, LambdaContextStub())
        with pytest.raises(AlertDeliveryError) as info:
            watchdog.handler(events[2], LambdaContextStub())
        assert info.value.outcome["decisions"][0]["action"] == "scale_to_zero"
        assert len(fleet.decision_items("svc0")) == 1


@pytest.fixture
def fast_slack(monkeypatch):
    """SlackWebhook with a 1 s timeout and quick backoff, so hangs and retries stay bounded in tests; the
    waits slack_sdk's retry handlers ask for (``time.sleep(duration)`` between attempts) are recorded in
    the returned list, in seconds, and not slept: no assertion here reads the wall clock."""
    from types import SimpleNamespace

    from slack_sdk.http_retry import builtin_handlers, handler

    # Runtime.send reads SlackWebhook from adapters.alerts when it sends (the recorder never imports it)
    monkeypatch.setattr(alerts, "SlackWebhook",
                        functools.partial(alerts.SlackWebhook, timeout_s=1, max_retries=1, backoff_factor_s=0.01))
    waits: list[float] = []
    for module in (builtin_handlers, handler):
        monkeypatch.setattr(module, "time", SimpleNamespace(sleep=waits.append))
    # slack_sdk adds a random jitter in [0, 1) s to every wait (jitter.RandomJitter, and builtin_handlers'
    # Retry-After): a 5xx's quick backoff of 0.01 s waited up to 1.01 s and crossed the test's 1 s bound
    # about once in a hundred runs. Half a second each: the 5xx waits 0.51 s, the 429 1.5 s, every run.
    from slack_sdk.http_retry import jitter

    for module in (builtin_handlers, jitter):
        monkeypatch.setattr(module, "random", SimpleNamespace(random=lambda: 0.5))
    return waits


def _secret(fleet, url):
    return fleet.aws.client("secretsmanager").create_secret(Name="slack", SecretString=url)["ARN"]


@pytest.mark.parametrize("script,ok,requests", [
    ([(500, {}, 0.0), (500, {}, 0.0)], False, 2),          # 5xx, retried once, still down
    ([(429, {"Retry-After": "1"}, 0.0)], True, 2),          # rate limited: waits Retry-After, then 200
    ([(200, {}, 2.5)], False, 1),                          # hanging: times out after 1 s (no retry on a timeout)
])
def test_slack_failures(fast_slack, script, ok, requests):
    with embedded_fleet() as fleet, SlackStandIn(script) as slack:
        rt = fleet.runtime(sns=False, slack_secret=_secret(fleet, slack.url))
        out, wd = _loop_wd(fleet, rt)
        assert fleet.decision_items("svc0")
        assert (wd.alerts_failed == []) is ok
        assert len(slack.requests) == requests
        assert fleet.episode("svc0").alert_status is (AlertStatus.SENT if ok else AlertStatus.FAILED)
        # one wait per retry: Retry-After's 1 s after the 429, the quick backoff after a 5xx; none after a
        # timeout (a hung webhook is not retried, so one hang costs one timeout)
        assert len(fast_slack) == requests - 1
        if script[0][0] == 429:
            # Retry-After honoured: its 1 s plus slack_sdk's jitter of under a second (builtin_handlers)
            assert len(fast_slack) == 1 and 1.0 <= fast_slack[0] < 2.0, fast_slack
        else:
            assert all(w < 1.0 for w in fast_slack), fast_slack
        if not ok:  # redelivery re-sends exactly once (the stand-in answers 200 now)
            slack.script.clear()
            before = len(slack.requests)
            out, wd = process(_last(fleet), rt)
            assert out["status"] == "resumed" and wd.alerts_failed == []
            assert len(slack.requests) == before + 1


def _loop_wd(fleet, rt):
    events = [fleet.crash("svc0", i) for i in range(3)]
    fleet.last_event = events[-1]
    for e in events:
        out, wd = process(e, rt)
    return out, wd


def _last(fleet):
    return fleet.last_event


def test_secrets_manager_unavailable_records_and_resends_on_redelivery():
    with embedded_fleet() as fleet:
        arn = _secret(fleet, "http://127.0.0.1:9/never-called")
        rt = fleet.runtime(sns=True, slack_secret=arn)
        fleet.secrets.fail("get_secret_value", client_error("InternalServiceError", "GetSecretValue", 500))
        fleet.sns.fail("publish", client_error("InternalError", "Publish", 500))
        out, wd = _loop_wd(fleet, rt)
        assert wd.alerts_failed == ["development/svc0"]
        assert fleet.decision_items("svc0")
        rt2 = fleet.runtime(sns=True)  # next invocation: SNS is back
        out, _ = process(_last(fleet), rt2)
        assert out["status"] == "resumed"
        assert len(fleet.aws.alerts()) == 1


# ------------------------------------------------------------------ a mass hold's one cluster alert
def _mass_hold(fleet, rt):
    """svc0 fails twice, then svc1 loops: two failing services over a bound of 1, a mass hold."""
    for i in range(2):
        process(fleet.crash("svc0", i), rt)
    events = [fleet.crash("svc1", 2 + i) for i in range(3)]
    out = wd = None
    for e in events:
        out, wd = process(e, rt)
    assert out["decision"]["reason"] == "mass_unhealthy"
    return events, wd


def test_mass_hold_sends_one_cluster_alert():
    with embedded_fleet() as fleet:
        rt = fleet.runtime()
        _mass_hold(fleet, rt)
        assert len(fleet.aws.alerts()) == 1
        assert fleet.ecs.calls["update_service"] == 0


def test_mass_hold_alert_that_failed_is_resent_on_redelivery():
    with embedded_fleet() as fleet:
        rt = fleet.runtime()
        fleet.sns.fail("publish", client_error("InternalError", "Publish", 500))
        events, wd = _mass_hold(fleet, rt)
        assert wd.alerts_sent == 0 and fleet.aws.alerts() == []
        assert fleet.episode("svc1").alert_status is AlertStatus.FAILED
        out, _ = process(events[-1], rt)  # Lambda's retry (AlertDeliveryError) redelivers the event
        assert out["status"] == "resumed"
        assert len(fleet.aws.alerts()) == 1
