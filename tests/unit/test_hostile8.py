"""Round 8's hostile tester: inputs that broke this round's changes (each test failed before its fix)."""

from __future__ import annotations

from typing import Any

import pytest

from ecs_guardrail.adapters.store.watchdog_state import UnreadableSummaryError, _summary_from_item

_ITEM = {"pk": "WD#dev", "sk": "S#api", "service": "api", "seq": 3}


@pytest.mark.parametrize("doc", [
    '{"m":{"b":"2025-01-01T00:00:00Z","n":[[Infinity,1]]}}',  # int(inf): OverflowError
    '{"m":{"b":"2025-01-01T00:00:00Z","n":[[1e15,1]]}}',  # timedelta past its range
    '{"m":{"b":"9999-12-31T23:59:00Z","n":[[5,1]]}}',  # a minute past year 9999
    '{"e":{"dt":"2025-01-01T00:00:00Z","lf":"2025-01-01T00:00:00Z","ac":"alert_only","re":"crash_loop",'
    '"tr":"crash_loop","as":"none","al":"sent","pn":Infinity}}',
    "[" * 100_000 + "]" * 100_000,  # nested past the decoder's depth: RecursionError
])
def test_a_corrupt_summary_that_overflows_is_unreadable_not_a_crash(doc: str) -> None:
    """A hand-edited doc whose numbers overflow (Infinity, 1e15 minutes) or whose nesting is too deep
    raised OverflowError or RecursionError: not UnreadableSummaryError, so the sweep stopped at it (every
    probe, quiet window and recovery after it skipped) and the service's events failed without the repair."""
    item: dict[str, Any] = _ITEM | {"doc": doc}
    with pytest.raises(UnreadableSummaryError, match="S#api is unreadable"):
        _summary_from_item(item)


@pytest.mark.parametrize("token", ["ghp_" + "a" * 35, "AKIA" + "B" * 16, "xoxb-" + "1" * 30])
def test_a_url_password_cut_by_the_read_is_not_shown_beside_a_masked_token(token: str) -> None:
    """``https://user:PASSWORD-<token>`` with its ``@`` just past what is read, after a long masked value
    that shortens the line: the token (whole inside the read) was masked, so the read's tail was no
    longer "unchanged" and nothing was dropped: the URL's user and password were quoted in the alert."""
    from ecs_guardrail.core.crash_words import _READ_MAX, _READ_TAIL, masked, quote

    for short in range(0, 30, 3):
        url = "https://deploy:hunter2-" + token
        pad = _READ_MAX + _READ_TAIL - len(url) - 8 + short
        line = "token=" + "x" * pad + " " + url + "b" * (47 - short) + "@db.example/x"
        for message in (line, line.encode()):
            for shown in (masked([message])[0], quote([message])[0]):
                assert "hunter2" not in shown and "deploy" not in shown, (short, shown)


def test_a_secret_in_a_stop_reason_is_masked_in_the_alert() -> None:
    """ECS's stop reasons are quoted in every decision's "Last stops"; a reason that carries a credential
    (an image pulled from ``https://user:pass@registry``, ``password=`` in a container's command line) was
    quoted as it was, where the crash's log lines are masked."""
    from datetime import UTC, datetime

    from ecs_guardrail.core.alert import _stops
    from ecs_guardrail.core.classify import StopKind
    from ecs_guardrail.core.records import Failure

    f = Failure(service="api", time=datetime(2025, 8, 21, 10, tzinfo=UTC), kind=StopKind.CRASH,
                task_arn="arn:aws:ecs:eu-west-1:111122223333:task/dev/0123456789abcdef0123456789abcdef",
                stop_code="TaskFailedToStart",
                reason="CannotPullContainerError: pull https://deploy:Hunter2url@registry.example/x password=Hunter2pw")
    (line,) = _stops((f,))
    assert "Hunter2" not in line and "deploy:" not in line and "CannotPullContainerError" in line, line


def test_a_secret_in_a_deployment_failure_reason_is_masked_in_the_alert_and_its_data() -> None:
    """The failed deployment's alert quotes ECS's reason "as every stop reason is": masked too."""
    from datetime import UTC, datetime

    from ecs_guardrail.core.alert import Where
    from ecs_guardrail.core.deployment_failure import Rollback, deployment_failed_alert

    where = Where(cluster="prod", service="api", account="111122223333", region="eu-west-1")
    reason = "tasks failed to start: pull https://deploy:Hunter2url@registry.example/x token=Hunter2tok"
    alert = deployment_failed_alert(where, deployment_id="ecs-svc/2", reason=reason,
                                    at=datetime(2025, 8, 21, 10, tzinfo=UTC), rollback=Rollback(None))
    assert "Hunter2" not in alert.text and "Hunter2" not in str(alert.data), alert.text


@pytest.mark.parametrize("slot", [{"service": "api"}, {"time": "2025-08-21T10:00:00Z"},
                                  {"service": "api", "time": "yesterday"}])
def test_a_corrupt_slot_item_counts_as_held_and_never_stops_the_clusters_decisions(slot: dict[str, Any]) -> None:
    """A hand-edited held-at-zero slot (``H#0000`` without its time or service) raised KeyError/ValueError
    from every read of the cluster's view: every decision of the cluster failed (no alert either). It now
    counts as held (fail safe: the bound never widens on a guess) and the rest of the view is read."""
    from ecs_guardrail.adapters.store import keys
    from ecs_guardrail.adapters.store.memory import MemoryTable
    from ecs_guardrail.adapters.store.watchdog_state import WatchdogState

    table = MemoryTable()
    pk, sk = keys.slot("dev", 0)
    table.put({"pk": pk, "sk": sk, "released": False, **slot})
    table.put({"pk": pk, "sk": "M#mass", "last": "not a time"})
    view = WatchdogState(table).cluster("dev")
    assert len(view.held()) == 1 and [s.n for s in view.slots] == [0]
    if "service" in slot:
        assert view.held() == ("api",)


def test_a_corrupt_index_entry_is_skipped_and_the_rest_of_the_index_read() -> None:
    """The sweep's index of open work (``OPEN#work``): one hand-edited entry (a job's entry that is not
    ``[cluster, due]``, a due that is not a time, a services map that is not a map) raised out of
    ``open_job_items``/``open_work_items``, so the sweep swept nothing at all, every cluster's included."""
    from datetime import UTC, datetime

    from ecs_guardrail.adapters.store import keys
    from ecs_guardrail.adapters.store.memory import MemoryTable
    from ecs_guardrail.adapters.store.watchdog_state import WatchdogState

    table = MemoryTable()
    pk, _ = keys.open_work("a")
    table.put({"pk": pk, "sk": "a", "services": "api", "jobs": {"x": "garbage", "y": ["a", "not a time"]}})
    table.put({"pk": pk, "sk": "b", "services": {"web": "b"}, "jobs": {"z": ["b", "2025-08-21T10:00:00Z"]}})
    state = WatchdogState(table)
    assert state.open_work_items() == [("b", "b", "web")]
    assert state.open_job_items() == [("b", "b", "z", datetime(2025, 8, 21, 10, tzinfo=UTC))]


def test_a_dangling_secret_key_past_the_line_cut_still_hides_the_next_line() -> None:
    """A long log line (a config dump) that ends with ``"db_password":`` and its value on the next line:
    the multi-line check read the line cut to LINE_MAX (ending in an ellipsis), so it never saw the key
    and the next line, the password, was quoted."""
    from ecs_guardrail.core.crash_words import masked, quote

    messages = ["ERROR config dump " + "k=v " * 80 + ' "db_password":', '  "Hunter2pw"', "exiting"]
    for shown in (quote(messages), tuple(masked(messages))):
        assert "Hunter2" not in str(shown) and shown[-1] == "exiting", shown


def test_a_summary_item_whose_service_is_not_its_keys_is_unreadable() -> None:
    """An item copied to another service's key (``S#web``) keeping ``service: api`` was read as api's summary
    and cached under api by the cluster's view: api's next decision read web's failures and episode."""
    item: dict[str, Any] = {"pk": "WD#dev", "sk": "S#web", "service": "api", "seq": 3, "doc": "{}"}
    with pytest.raises(UnreadableSummaryError, match="S#web is unreadable"):
        _summary_from_item(item)
    assert _summary_from_item(item | {"service": "web"}).service == "web"


def test_a_secret_in_the_deciding_rules_evidence_is_masked_in_the_alert() -> None:
    """``deployment_in_progress``'s evidence quotes ECS's deployment reason (the event's ``reason`` or
    DescribeServices' ``rolloutStateReason``): shown in the alert's Evidence field as it was."""
    from datetime import UTC, datetime

    from ecs_guardrail.core.alert import decision_alert
    from ecs_guardrail.core.records import Action, Decision, Reason

    d = Decision(cluster="dev", service="api", time=datetime(2025, 8, 21, 10, tzinfo=UTC), action=Action.ALERT_ONLY,
                 reason=Reason.DEPLOYMENT_IN_PROGRESS, crashes_in_window=5, health_check_kills_in_window=0,
                 message="a deployment is in progress",
                 evidence={"deployment_id": "ecs-svc/1", "state": "in_progress", "source": "event",
                           "reason": "pull https://deploy:Hunter2url@registry.example/x failed; api_key=Hunter2key"})
    alert = decision_alert(d)
    assert "Hunter2" not in alert.text and "ecs-svc/1" in alert.text, alert.text
