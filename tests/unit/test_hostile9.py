"""Round 9's hostile finds (the recorder's fast path, the replay's reading of events.jsonl, routing)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ecs_guardrail.replay.scenario import check_events_file
from ecs_guardrail.routing import PATTERNS, compile_pattern, matches, targets


def test_events_after_64_kib_of_blank_lines_are_events_not_an_empty_file(tmp_path: Path) -> None:
    """An events.jsonl whose first 64 KiB are blank lines (a generator's padding, a file built by appending to
    a log full of empty lines) was refused "no events" before anything was read, though the replay reads blank
    lines as nothing and every event after them: the check only looked at the first 64 KiB."""
    path = tmp_path / "events.jsonl"
    event = '{"version": "0", "id": "e-1", "detail-type": "ECS Task State Change", "source": "aws.ecs"}\n'
    path.write_text("\n" * 70_000 + " " * 70_000 + "\r\n" + event, encoding="utf-8")
    check_events_file(path, has_samples=False)  # raised ScenarioError: no events
    path.write_text("\n" * 70_000 + "{\n" + event, encoding="utf-8")  # still named: a pretty-printed object
    try:
        check_events_file(path, has_samples=False)
    except Exception as exc:  # noqa: BLE001 - the message is what is checked
        assert "pretty-printed" in str(exc)
    else:
        raise AssertionError("a pretty-printed object after blank lines passed the check")


@pytest.mark.parametrize("value", [[None], [], ["x", None], ["x"], None, "x"])
def test_compiled_routing_answers_exists_on_a_list_as_matches_does(value: Any) -> None:
    """``"replay-name": [null]`` (a forged envelope: EventBridge writes a text there) reached the watchdog by
    :func:`routing.matches` (a list matches when one element does: ``null`` is absent) and not by the compiled
    :func:`routing.targets` the replay routes with (any list "existed"); ``{"exists": true}`` took ``[]`` too."""
    event = {"source": "aws.ecs", "detail-type": "ECS Task State Change", "detail": {"lastStatus": "STOPPED"},
             "replay-name": value}
    assert targets(event) == {name for name, p in PATTERNS.items() if matches(p, event)}
    present = {"source": ["aws.ecs"], "replay-name": [{"exists": True}]}
    assert compile_pattern(present)(event) is matches(present, event)


def test_a_long_task_event_fits_dynamodbs_item_limit_and_is_recorded_on_both_engines(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A replay line (no 256 KB bus limit) of a stopped task with 100 containers named in 4-byte characters,
    a 4,096-character reason and more: its text is cut to 300,000 bytes, but the item also holds the names
    (exit_codes) and the reason again, over DynamoDB's 400 KB. The fast engine recorded it; DynamoDB (moto)
    refused the PutItem and ``replay --engine moto`` stopped: "AWS refused: ... Item size has exceeded the
    maximum allowed size". The text is now cut to what leaves the item under the limit."""
    import boto3
    from moto import mock_aws

    from ecs_guardrail.adapters.history import HistoryStore
    from ecs_guardrail.adapters.store.dynamodb import DynamoTable
    from ecs_guardrail.adapters.store.memory import MemoryTable
    from ecs_guardrail.handlers.record import RAW_MAX_BYTES, record_event
    from ecs_guardrail.replay.embedded import create_history_table

    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(k, "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    arn = "arn:aws:ecs:eu-west-1:111122223333:task/dev/0123456789abcdef"
    wide = "\U0001f600"
    raw = {"version": "0", "id": "e-big", "detail-type": "ECS Task State Change", "source": "aws.ecs",
           "account": "111122223333", "time": "2030-01-02T03:00:00Z", "region": "eu-west-1", "resources": [arn],
           "pad": "x" * 200_000,
           "detail": {"clusterArn": "arn:aws:ecs:eu-west-1:111122223333:cluster/dev", "taskArn": arn,
                      "lastStatus": "STOPPED", "version": 3, "group": "service:web",
                      "stopCode": "EssentialContainerExited", "stoppedReason": wide * 4096,
                      "containers": [{"name": wide * 254 + str(i % 10), "exitCode": 1} for i in range(100)]}}
    with mock_aws():
        ddb = boto3.client("dynamodb", region_name="eu-west-1")
        create_history_table(ddb, "h")
        items = []
        for table in (MemoryTable("h", "eu-west-1"), DynamoTable(ddb, "h")):
            assert record_event(raw, HistoryStore.on(table))["status"] == "recorded"  # moto: ClientError
            [item] = table.query(f"TASK#{arn}")
            items.append(item)
    assert items[0] == items[1]
    assert len(items[0]["exit_codes"]) == 100 and items[0]["stopped_reason"] == wide * 4096
    assert 200_000 < len(items[0]["raw"].encode()) < RAW_MAX_BYTES


def test_an_unread_event_with_a_long_account_fits_dynamodbs_item_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """An event of a detail-type this tool does not read, with no resource ARN, keeps the envelope's
    ``account`` and ``region`` beside its text: a replay line with 30,000 4-byte characters in each (no
    check bounds them) made an item of 540 kB, which DynamoDB (moto) refused ("Item size has exceeded the
    maximum allowed size"): ``replay --engine moto`` stopped, the fast engine recorded it."""
    import boto3
    from moto import mock_aws

    from ecs_guardrail.adapters.history import HistoryStore
    from ecs_guardrail.adapters.store.dynamodb import DynamoTable
    from ecs_guardrail.handlers.record import record_event
    from ecs_guardrail.replay.embedded import create_history_table

    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(k, "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    wide = "\U0001f600" * 30_000
    raw = {"version": "0", "id": "o-1", "detail-type": "ECS Lifecycle Hook Action", "source": "aws.ecs",
           "account": wide, "time": "2030-01-02T03:00:00Z", "region": wide, "resources": [],
           "detail": {"eventName": "X", "pad": "x" * 300_000}}
    with mock_aws():
        ddb = boto3.client("dynamodb", region_name="eu-west-1")
        create_history_table(ddb, "h")
        assert record_event(raw, HistoryStore.on(DynamoTable(ddb, "h")))["status"] == "recorded"  # ClientError


def test_an_accepted_wrong_clock_does_not_stretch_the_timeline_past_35_days(tmp_path: Path) -> None:
    """The timeline's window is the accepted events' span, and an event stamped in the future is accepted
    when the folder has no delivered.csv (the replay warns "a wrong clock?", and records it). One line of
    bad-image-dev stamped 2190 made ``replay --timeline`` read one Query per shard of every cluster-hour to
    2190 (killed after a minute); a year later, as here, a timeline "to 2026-08-21". An event stamped long
    before the rest is accepted even with delivered.csv. The window is now at most 35 days (what a replay
    samples), from the first accepted event, and a warning says so."""
    import json
    import shutil

    from tests.conftest import SCENARIOS, cli_in_process

    folder = tmp_path / "wrong-clock"
    shutil.copytree(SCENARIOS / "bad-image-dev", folder)
    events = folder / "events.jsonl"
    lines = events.read_text(encoding="utf-8").splitlines()
    late = json.loads(lines[-1])
    late["id"], late["time"] = "wrong-clock-1", "2026-08-21T00:00:00Z"
    events.write_text("\n".join([*lines, json.dumps(late)]) + "\n", encoding="utf-8")
    proc = cli_in_process("replay", str(folder), "--json", "--timeline")
    assert proc.returncode == 0, proc.stderr[-2000:]
    timelines = [o for o in map(json.loads, proc.stdout.splitlines()) if o["type"] == "timeline"]
    assert timelines and not any("2026-" in json.dumps(t) for t in timelines)
    assert "--timeline shows" in proc.stderr


def _quoted(text: str) -> str:
    return "".join(",".join(f'"{c}"' for c in line.split(",")) + "\n" for line in text.splitlines())


def _reordered(text: str) -> str:
    """The first two columns swapped (the reader takes the columns by their header's names)."""
    return "".join(",".join([c[1], c[0], *c[2:]]) + "\n" for c in (line.split(",") for line in text.splitlines()))


@pytest.mark.parametrize("rewrite", [_quoted, _reordered], ids=["quoted-cells", "time-not-first"])
def test_the_timeline_window_reads_healthy_hosts_csv_as_the_replay_does(tmp_path: Path, rewrite: Any) -> None:
    """healthy_hosts.csv with every cell quoted (what a spreadsheet's CSV export may write), or its columns in
    another order, is read by the replay as the same samples; the timeline's window took each row's time as the
    text before its first comma, so neither file gave it a time: the window shrank to the events' two seconds
    (10:01:00-10:01:02) and gray-failure-5xx's timeline lost its 20 service-minutes of clients failing."""
    import json
    import shutil

    from tests.conftest import SCENARIOS, cli_in_process

    def timeline(folder: Path) -> list[Any]:
        proc = cli_in_process("replay", str(folder), "--json", "--timeline")
        assert proc.returncode == 0, proc.stderr[-2000:]
        return [o for o in map(json.loads, proc.stdout.splitlines()) if o["type"] == "timeline"]

    folder = tmp_path / "gray-failure-5xx"
    shutil.copytree(SCENARIOS / "gray-failure-5xx", folder)
    before = timeline(folder)
    csv_path = folder / "healthy_hosts.csv"
    csv_path.write_text(rewrite(csv_path.read_text(encoding="utf-8")), encoding="utf-8")
    assert timeline(folder) == before


def test_a_deployment_event_is_partitioned_under_the_cluster_it_is_recorded_under(tmp_path: Path) -> None:
    """``replay --jobs N`` replays each cluster's lines in its own process, keyed by ``detail.clusterArn``
    first. A deployment event has no such field (its model reads the cluster from ``resources[0]``, the
    service ARN), so an extra ``detail.clusterArn`` naming another cluster put the event in that cluster's
    partition: the service's own cluster never saw its deployment (no deployment protection there), while the
    serial replay records and reads it under the service's cluster."""
    import json

    from ecs_guardrail.core.events import parse_event
    from ecs_guardrail.replay.parallel import partition_lines

    deployment = {"version": "0", "id": "d-1", "detail-type": "ECS Deployment State Change", "source": "aws.ecs",
                  "account": "111122223333", "time": "2025-09-02T09:19:00Z", "region": "eu-west-1",
                  "resources": ["arn:aws:ecs:eu-west-1:111122223333:service/development/worker"],
                  "detail": {"eventType": "INFO", "eventName": "SERVICE_DEPLOYMENT_IN_PROGRESS",
                             "deploymentId": "ecs-svc/1419000000000000014",
                             "clusterArn": "arn:aws:ecs:eu-west-1:111122223333:cluster/production"}}
    task = {"detail": {"clusterArn": "arn:aws:ecs:eu-west-1:111122223333:cluster/production"}}
    assert parse_event(deployment).cluster == "development"
    events = tmp_path / "events.jsonl"
    events.write_text(json.dumps(task) + "\n" + json.dumps(deployment) + "\n", encoding="utf-8")
    parts, _ = partition_lines(events)
    assert parts[("111122223333", "development")] == [2]  # was under production: {production: [1, 2]}
