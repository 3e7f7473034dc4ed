"""Scenario files as a new user writes them (issue 24 items 4, 5, 6, 9, 11, 12): a byte order mark,
a Latin-1 byte, a numeric account, samples on the wrong UTC offset, repeated STOPPED events, and the
fleet.json mistakes that got generic messages."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from ecs_guardrail import cli
from ecs_guardrail.core.errors import ScenarioError
from ecs_guardrail.replay.lines import decode_line
from ecs_guardrail.replay.run import replay
from ecs_guardrail.replay.scenario import load_scenario, samples_overlap_warning
from tests.conftest import load_event

ACCOUNT, REGION = "123456789012", "eu-west-1"


def _crash(n: int, minute: int, *, version: int = 5, service: str = "api") -> dict:
    e = copy.deepcopy(load_event("task-fargate-stopped-essential-oom-exit137.derived"))
    task = f"arn:aws:ecs:{REGION}:{ACCOUNT}:task/dev/{n:032x}"
    e.update(id=f"00000000-0000-0000-0000-{n:08d}{version:04d}", time=f"2025-08-21T10:{minute:02d}:00Z",
             region=REGION, account=ACCOUNT)
    e["detail"].update(clusterArn=f"arn:aws:ecs:{REGION}:{ACCOUNT}:cluster/dev", taskArn=task,
                       group=f"service:{service}", lastStatus="STOPPED", version=version)
    for c in e["detail"]["containers"]:
        c["taskArn"] = task
    return e


def _scenario(tmp_path: Path, events: list[dict] | bytes, *, desired: int = 2, csv: str | None = None,
              fleet_prefix: bytes = b"") -> Path:
    folder = tmp_path / "mine"
    folder.mkdir(exist_ok=True)
    fleet = {"account": ACCOUNT, "region": REGION, "clusters": [{"name": "dev", "services": [
        {"name": "api", "desiredCount": desired, "targetGroups": ["api-tg"] if csv else []},
        {"name": "web", "desiredCount": 2}]}]}
    (folder / "fleet.json").write_bytes(fleet_prefix + json.dumps(fleet).encode())
    data = events if isinstance(events, bytes) else b"".join(json.dumps(e).encode() + b"\n" for e in events)
    (folder / "events.jsonl").write_bytes(data)
    if csv is not None:
        (folder / "healthy_hosts.csv").write_bytes(csv.encode())
    return folder


def _replay(folder: Path) -> tuple[dict, list[str], list[tuple[int, str]]]:
    warnings: list[str] = []
    result = replay(load_scenario(folder), on_warning=warnings.append)
    return result.summary, warnings, result.rejected


def test_a_byte_order_mark_is_accepted_in_fleet_json_and_healthy_hosts_csv(tmp_path):
    csv = "\ufefftime,target_group,healthy_host_count\n2025-08-21T10:00:00Z,api-tg,2\n2025-08-21T10:05:00Z,api-tg,1\n"
    folder = _scenario(tmp_path, [_crash(1, 1)], csv=csv, fleet_prefix=b"\xef\xbb\xbf")
    (folder / "events.jsonl").write_bytes(b"\xef\xbb\xbf" + (folder / "events.jsonl").read_bytes())
    summary, warnings, rejected = _replay(folder)
    assert rejected == [] and summary["events_read"] == 1 and summary["stops_by_kind"] == {"crash": 1}
    assert summary["unavailable_service_minutes"] is not None


def test_a_latin1_byte_in_one_field_keeps_the_event_and_says_so(tmp_path):
    line = json.dumps(_crash(1, 1)).replace("Essential container in task exited", "Caf\\u00e9 exited")
    raw = line.encode().replace(b"Caf\\u00e9", b"Caf\xe9") + b"\n"
    assert decode_line(raw) == (line.replace("Caf\\u00e9", "Caf\ufffd") + "\n", True)
    summary, warnings, rejected = _replay(_scenario(tmp_path, raw))
    assert rejected == [] and summary["stops_by_kind"] == {"crash": 1}
    assert any(w.startswith("events.jsonl:1: bytes that are not UTF-8 replaced") for w in warnings)


def test_a_numeric_account_gets_the_recorders_rejection_not_a_contradiction(tmp_path):
    event = _crash(1, 1)
    event["account"] = int(ACCOUNT)
    summary, warnings, rejected = _replay(_scenario(tmp_path, [event, _crash(2, 2)]))
    assert [n for n, _ in rejected] == [1] and "account" in rejected[0][1]
    assert not any("events of account" in w for w in warnings)


def test_another_accounts_events_are_warned_once_with_the_first_line(tmp_path):
    other = _crash(2, 2)
    other["account"] = "999999999999"
    _, warnings, _ = _replay(_scenario(tmp_path, [_crash(1, 1), other, other | {"id": "x"}]))
    [w] = [w for w in warnings if "events of account" in w]
    assert w.startswith("events.jsonl:2: ")


def test_samples_that_do_not_overlap_the_events_are_flagged(tmp_path):
    rows = "".join(f"2025-08-21T08:{m:02d}:00Z,api-tg,2\n" for m in range(10))  # written two hours early
    _, warnings, _ = _replay(_scenario(tmp_path, [_crash(1, 1), _crash(2, 9)],
                                       csv="time,target_group,healthy_host_count\n" + rows))
    [w] = [w for w in warnings if "no overlap" in w]
    assert "2025-08-21T08:00Z to 2025-08-21T08:09Z" in w and "1.9 h apart" in w and "UTC" in w


def test_samples_overlap_boundaries():
    from datetime import UTC, datetime

    t = lambda m: datetime(2025, 8, 21, 10, m, tzinfo=UTC)  # noqa: E731
    assert samples_overlap_warning((t(5), t(9)), (t(0), t(5))) is None  # the sample minute holds the event
    assert samples_overlap_warning((t(5), t(9)), (t(9), t(20))) is None
    assert samples_overlap_warning((t(5), t(9)), (t(0), t(3))) is not None
    assert samples_overlap_warning((t(5), t(9)), (t(10), t(20))) is not None
    assert samples_overlap_warning(None, (t(0), t(3))) is None


def test_stops_are_counted_by_task_and_repeats_reported(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # the report's text lines wrap at COLUMNS (issue 38): pin it
    # four crashes, each STOPPED event delivered again with a higher version (ECS sends more than one)
    events = [e for i in range(4) for e in (_crash(i, i), _crash(i, i, version=6))]
    folder = _scenario(tmp_path, events)
    summary, _, _ = _replay(folder)
    assert summary["stops_by_kind"] == {"crash": 4} and summary["stop_repeats"] == 4
    assert summary["stopped_tasks_to_watchdog"] == 4
    assert cli.main(["replay", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "crash 4; 4 more events repeated a task already counted" in out


def test_crashes_of_a_service_at_desired_0_are_flagged(tmp_path):
    _, warnings, _ = _replay(_scenario(tmp_path, [_crash(1, 1), _crash(2, 2)], desired=0))
    [w] = [w for w in warnings if "desiredCount 0" in w]
    assert w.startswith("events.jsonl:1: dev/api has desiredCount 0 in fleet.json, yet its tasks crash")


@pytest.mark.parametrize(("edit", "expected"), [
    (lambda f: f["clusters"][0]["services"].append({"name": "api", "desiredCount": 1}),
     "dev: service 'api' is listed twice: keep one entry"),
    (lambda f: f["clusters"].append({"name": "dev", "services": []}), "cluster 'dev' is listed twice"),
    (lambda f: f["clusters"][0]["services"][0].update(desiredCount="2"),
     "dev/api: desiredCount is the string '2'; write the number without quotes: \"desiredCount\": 2"),
    (lambda f: f["clusters"][0]["services"][0].update(desiredCount=-1),
     "desiredCount must be a count from 0 to 10000, got -1"),
    (lambda f: f["clusters"][0]["services"][0].update(desiredCount=10**38), "desiredCount must be a count from 0 to"),
])
def test_fleet_mistakes_name_the_service_and_the_fix(tmp_path, edit, expected):
    folder = _scenario(tmp_path, [_crash(1, 1)])
    fleet = json.loads((folder / "fleet.json").read_text())
    edit(fleet)
    (folder / "fleet.json").write_text(json.dumps(fleet))
    with pytest.raises(ScenarioError) as info:
        load_scenario(folder)
    assert expected in str(info.value)
