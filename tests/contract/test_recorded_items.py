"""The recorder's task event item (``TaskEventItem``, built once from the parsed event and stored as it is)
reads back exactly as the dict item it replaced (round 9, issue 33 item 2): the same attributes and values,
in the same order, for every task event of the bundled scenarios and for events with empty texts, no
version, a stop, a notice; on the memory engine and on DynamoDB (moto)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from ecs_guardrail.adapters.history import HistoryStore, epoch, iso
from ecs_guardrail.adapters.store.memory import MemoryTable
from ecs_guardrail.core.classify import classify_stop, is_stop_event
from ecs_guardrail.core.events import TaskStateChange, parse_event
from ecs_guardrail.handlers.record import arn_place, record_event, stored_raw

SCENARIOS = Path(__file__).resolve().parents[2] / "events" / "scenarios"
T0 = "2030-01-02T03:00:00Z"  # in the future: the TTL (max(event time, now) + 90 days) is deterministic


def _old_attrs(event: TaskStateChange, raw: dict[str, Any]) -> dict[str, Any]:
    """The recorder's attributes as round 8 built them (the oracle)."""
    d = event.detail
    account, region = arn_place(d.cluster_arn)
    attrs: dict[str, Any] = {
        "account": account or event.account, "region": region or event.region, "type": "task",
        "event_id": event.id, "detail_type": event.detail_type, "time": iso(event.time), "t": epoch(event.time),
        "cluster": d.cluster, "group": d.group, "service": d.service, "task_arn": d.task_arn,
        "last_status": d.last_status, "desired_status": d.desired_status, "version": d.version,
        "az": d.availability_zone, "launch_type": d.launch_type, "capacity_provider": d.capacity_provider_name,
        "task_definition": d.task_definition_arn, "stop_code": d.stop_code, "stopped_reason": d.stopped_reason,
        "raw": stored_raw(raw),
    }
    if is_stop_event(d):
        verdict = classify_stop(d)
        attrs["kind"] = verdict.kind.value
        attrs["cause"] = verdict.cause
        attrs["exit_codes"] = [{"name": n, "code": c} for n, c in verdict.exit_codes if c is not None]
        attrs["exit_unknown"] = [n for n, c in verdict.exit_codes if c is None]
    return attrs


def _old_item(store: HistoryStore, raw: dict[str, Any]) -> dict[str, Any]:
    """What round 8's recorder stored for ``raw`` (written through the dict path of the same table)."""
    event = parse_event(raw)
    assert isinstance(event, TaskStateChange)
    d = event.detail
    reference = HistoryStore.on(MemoryTable(store.table, store.region))
    assert reference.record_task_event(task_arn=d.task_arn, version=d.version, event_id=event.id, cluster=d.cluster,
                                       time=event.time, attrs=_old_attrs(event, raw))
    [item] = reference.port.scan()
    return item


def _task_lines() -> list[dict[str, Any]]:
    out = []
    for path in sorted(SCENARIOS.glob("*/events.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                raw = json.loads(line)
            except ValueError:  # the scenarios' malformed lines (rejected, not recorded)
                continue
            if isinstance(raw, dict) and raw.get("detail-type") == "ECS Task State Change":
                raw["time"] = T0  # keeps the TTL deterministic; the rest as the scenario has it
                out.append(raw)
    return out


def _base(**detail: Any) -> dict[str, Any]:
    arn = "arn:aws:ecs:eu-west-1:111122223333:task/dev/0123456789abcdef"
    return {"version": "0", "id": "e-1", "detail-type": "ECS Task State Change", "source": "aws.ecs",
            "account": "111122223333", "time": T0, "region": "eu-west-1", "resources": [arn],
            "detail": {"clusterArn": "arn:aws:ecs:eu-west-1:111122223333:cluster/dev", "taskArn": arn,
                       "lastStatus": "STOPPED", "version": 3, **detail}}


ODD = [
    # every text attribute empty: none of them is stored
    _base(group="", desiredStatus="", availabilityZone="", launchType="", capacityProviderName="",
          taskDefinitionArn="", stopCode="", stoppedReason=""),
    # no version: the event id keys the item; a stop with exit codes known and unknown, a cause
    {**_base(group="service:web", stopCode="EssentialContainerExited",
             stoppedReason="Essential container in task exited",
             containers=[{"name": "app", "exitCode": 137, "reason": "OutOfMemoryError: killed"}, {"name": "side"}]),
     "id": "e-2"},
    # a Spot notice (remembered per task), not yet stopped
    _base(lastStatus="RUNNING", desiredStatus="STOPPED", stopCode="SpotInterruption", group="family:job",
          capacityProviderName="FARGATE_SPOT"),
    # a running task: no stop attributes at all; envelope account and region empty, the cluster ARN's kept
    {**_base(lastStatus="RUNNING", desiredStatus="RUNNING"), "account": "", "region": ""},
]
del ODD[1]["detail"]["version"]


def test_every_scenario_task_event_is_stored_as_before() -> None:
    lines = _task_lines()
    assert len(lines) > 100
    store = HistoryStore.on(MemoryTable())
    for raw in lines:
        out = record_event(raw, store)
        if out["status"] != "recorded":
            continue
        expected = _old_item(store, raw)
        got = store.port.get(expected["pk"], expected["sk"])
        assert got == expected and list(got) == list(expected), raw["id"]


@pytest.mark.parametrize("raw", ODD, ids=["empty-texts", "no-version-stop", "spot-notice", "running"])
def test_odd_task_events_are_stored_as_before_on_both_engines(both: Any, raw: dict[str, Any]) -> None:
    memory, dynamo = both
    expected = _old_item(HistoryStore.on(memory), raw)
    for table in (memory, dynamo):
        assert record_event(raw, HistoryStore.on(table))["status"] == "recorded"
        got = table.get(expected["pk"], expected["sk"])
        assert got == expected, type(table).__name__
    assert list(memory.get(expected["pk"], expected["sk"])) == list(expected)  # the attributes' order too
    assert record_event(raw, HistoryStore.on(memory))["status"] == "duplicate"


def test_a_typed_item_is_read_back_without_its_absent_attributes() -> None:
    table = MemoryTable()
    store = HistoryStore.on(table)
    assert record_event(ODD[0], store)["status"] == "recorded"
    [item] = table.scan()
    for name in ("group", "desired_status", "az", "launch_type", "capacity_provider", "task_definition",
                 "stop_code", "stopped_reason", "service", "exit_codes", "exit_unknown", "cause"):
        assert name not in item
    assert item["kind"] == "unknown" and item["t"] == epoch(datetime(2030, 1, 2, 3, tzinfo=UTC))
