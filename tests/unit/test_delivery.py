"""Events stamped in the future (issue 17 item 5): rejected with their reason, kept, never counted."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ecs_guardrail.adapters.history import HistoryStore
from ecs_guardrail.adapters.store.memory import MemoryTable
from ecs_guardrail.core.delivery import MAX_FUTURE_SKEW, check_delivery
from ecs_guardrail.core.errors import EventFromTheFutureError, EventRejectedError, ScenarioError
from ecs_guardrail.handlers.record import record_event
from ecs_guardrail.replay.delivered import read_delivered
from tests.conftest import load_event

T = datetime(2025, 8, 21, 12, 0, tzinfo=UTC)


def test_check_delivery_allows_skew_and_rejects_a_wrong_clock():
    check_delivery(T + MAX_FUTURE_SKEW, T)
    check_delivery(T - timedelta(hours=6), T)  # late is normal (asynchronous retries up to 6 h)
    check_delivery(datetime(2199, 1, 1, tzinfo=UTC), None)  # unknown delivery: not checked
    with pytest.raises(EventFromTheFutureError) as info:
        check_delivery(T + MAX_FUTURE_SKEW + timedelta(seconds=1), T)
    assert isinstance(info.value, EventRejectedError) and "after its delivery" in info.value.reason
    assert "days" not in info.value.reason


def test_a_stamp_years_ahead_says_its_distance_in_days():
    with pytest.raises(EventFromTheFutureError) as info:
        check_delivery(datetime(2199, 1, 1, tzinfo=UTC), T)
    assert " min after its delivery at 2025-08-21T12:00:00+00:00 (63,319 days; more than 15 min)" in info.value.reason


def test_recorder_keeps_a_future_stamped_event_as_rejected():
    store = HistoryStore.on(MemoryTable("t", "eu-west-1"), 90, cache={})
    raw = load_event("task-fargate-stopped-essential-oom-exit137.derived")
    delivered = datetime.fromisoformat(raw["time"].replace("Z", "+00:00")) - timedelta(hours=1)
    out = record_event(raw, store, delivered_at=delivered)
    assert out["status"] == "rejected" and "after its delivery" in out["reason"]
    [kept] = store.rejected(delivered)
    assert kept["reason"] == out["reason"] and json.loads(kept["raw"])["id"] == raw["id"]
    # the same event delivered on time is recorded
    assert record_event(raw, store, delivered_at=delivered + timedelta(hours=1))["status"] == "recorded"


def test_delivered_csv_is_read_with_bom_and_bad_rows_are_named(tmp_path: Path):
    p = tmp_path / "delivered.csv"
    p.write_text("\ufeffline,delivered_at\n1,2025-08-21T12:00:05Z\n3,2025-08-21T12:01:00Z\n", encoding="utf-8")
    assert read_delivered(p) == {1: T + timedelta(seconds=5), 3: T + timedelta(minutes=1)}
    assert read_delivered(None) == {}
    for body, words in (("line,when\n1,x\n", "header"), ("line,delivered_at\nx,2025-08-21T12:00:00Z\n", "line 'x'"),
                        ("line,delivered_at\n0,2025-08-21T12:00:00Z\n", "start at 1"),
                        ("line,delivered_at\n1,yesterday\n", "ISO 8601"),
                        ("line,delivered_at\n1,2025-08-21T12:00:00Z\n1,2025-08-21T12:00:00Z\n", "twice")):
        p.write_text(body, encoding="utf-8")
        with pytest.raises(ScenarioError, match=words):
            read_delivered(p)


def test_a_delivered_row_past_the_last_line_is_a_warning(tmp_path: Path):
    """break-it: rows for lines events.jsonl does not have (another capture's delivered.csv) were silently
    unused, so the future-stamp check the operator asked for checked nothing."""
    import shutil

    from ecs_guardrail.replay.run import replay
    from ecs_guardrail.replay.scenario import load_scenario

    src = Path(__file__).resolve().parents[2] / "events" / "scenarios" / "future-stamp-rejected"
    folder = tmp_path / "s"
    shutil.copytree(src, folder)
    lines = len((folder / "events.jsonl").read_bytes().splitlines())
    with (folder / "delivered.csv").open("a", encoding="utf-8") as fh:
        fh.write(f"{lines + 1},2025-08-21T04:14:48Z\n{lines + 500},2025-08-21T04:14:48Z\n")
    warnings: list[str] = []
    replay(load_scenario(folder), on_warning=warnings.append)
    assert any(f"2 row(s) name lines past the last line ({lines})" in w and f"line {lines + 1}" in w
               for w in warnings), warnings


def test_recovery_probe_replay_of_a_future_stamp_finishes(tmp_path: Path):
    """break-it: with RECOVERY=probe the sweep ran every minute from the first event to the last one's
    time, 2199 included: the replay never finished. A line delivered.csv rejects moves no clock now, and
    without delivered.csv the sweep skips the minutes in which nothing can fall due (issue 31: it runs
    whatever RECOVERY says) and the line is warned about."""
    import shutil

    from ecs_guardrail.replay.run import replay
    from ecs_guardrail.replay.scenario import load_scenario

    src = Path(__file__).resolve().parents[2] / "events" / "scenarios" / "future-stamp-rejected"
    folder = tmp_path / "s"
    shutil.copytree(src, folder)
    res = replay(load_scenario(folder, {"RECOVERY": "probe"}))
    assert res.summary["events_rejected"] == 1 and res.summary["scaled_to_zero"] == ["development/thumbnailer"]
    (folder / "delivered.csv").unlink()
    warnings: list[str] = []
    res = replay(load_scenario(folder, {"RECOVERY": "probe"}), on_warning=warnings.append)
    assert res.summary["events_rejected"] == 0
    assert any("stamped 2199-01-01T00:00:00Z" in w and "delivered.csv" in w for w in warnings), warnings


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 10**40, {"x": 1}])
def test_a_service_actions_extra_deployment_id_is_not_stored_as_its_deployment(value):
    """breakit: the recorder read ``deployment_id`` of any service event with getattr, so a service
    action's extra key ``deployment_id`` (kept in model_extra, read as an attribute) went into the item:
    NaN, Infinity or a 40-digit number cannot be written to DynamoDB (the recorder raised)."""
    from ecs_guardrail.adapters.store.dynamodb import _to_item

    store = HistoryStore.on(MemoryTable("t", "eu-west-1"), 90, cache={})
    written: list[dict] = []
    real = store.record_service_event

    def spy(**kw):
        written.append(kw["attrs"])
        return real(**kw)

    store.record_service_event = spy  # type: ignore[method-assign]
    raw = load_event("service-action-steady-state.docs")
    raw["detail"]["deployment_id"] = value
    assert record_event(raw, store)["status"] == "recorded"
    assert written[0]["deployment_id"] is None
    _to_item({k: v for k, v in written[0].items() if k != "raw"})  # what DynamoDB is sent: no TypeError
