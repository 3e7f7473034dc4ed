"""Round 8's "noticed and left" defects, fixed in round 9 (each test failed before its fix)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from types import SimpleNamespace

import pytest

from ecs_guardrail.core.classify import StopKind, classify_stop, is_stop_event, judge_job_stop
from ecs_guardrail.core.events import TaskDetail

_BASE = {
    "clusterArn": "arn:aws:ecs:eu-west-1:111122223333:cluster/dev",
    "taskArn": "arn:aws:ecs:eu-west-1:111122223333:task/dev/0123456789abcdef0123456789abcdef",
    "group": "service:api",
    "version": 5,
}

# Python's str.upper() maps these to STOPPED: the long s (U+017F) and the "st" ligature (U+FB06)
_NOT_STOPPED = ["\u017ftopped", "\u017fTOPPED", "\ufb06opped"]


@pytest.mark.parametrize("status", _NOT_STOPPED)
def test_a_status_that_only_unicode_upper_cases_to_stopped_is_not_stopped(status: str) -> None:
    """ECS's lastStatus/desiredStatus values are ASCII (ECS API reference, Task: PROVISIONING ... STOPPED);
    the case-insensitive comparison is ASCII-only, so ``ſtopped`` is an unknown status like any other:
    recorded, not a stop, never a crash."""
    assert status.upper() == "STOPPED"
    d = TaskDetail.validate({**_BASE, "lastStatus": status, "desiredStatus": status,
                             "stoppedReason": "Essential container in task exited",
                             "containers": [{"name": "app", "exitCode": 1}]})
    assert not is_stop_event(d)
    verdict = classify_stop(d)
    assert verdict.kind is StopKind.UNKNOWN and not verdict.final
    assert judge_job_stop(status, StopKind.CRASH, (("app", 1),), lambda: None).outcome == "wait"


def test_ascii_case_of_stopped_still_reads_as_stopped() -> None:
    for status in ("STOPPED", "stopped", "Stopped"):
        d = TaskDetail.validate({**_BASE, "lastStatus": status, "stoppedReason": "Essential container in task exited"})
        assert is_stop_event(d) and classify_stop(d).kind is StopKind.CRASH


def test_the_recorder_reports_no_stop_kind_for_a_long_s_stopped() -> None:
    from ecs_guardrail.adapters.history import HistoryStore
    from ecs_guardrail.adapters.store.memory import MemoryTable
    from ecs_guardrail.handlers.record import record_event
    from tests.conftest import load_event

    store = HistoryStore.on(MemoryTable("t", "eu-west-1"), 90, cache={})
    raw = copy.deepcopy(load_event("task-fargate-stopped-essential-oom-exit137.derived"))
    raw["detail"]["lastStatus"] = "\u017ftopped"
    out = record_event(raw, store)
    assert out["status"] == "recorded" and out.get("stop_kind") is None, out
    raw = copy.deepcopy(load_event("task-fargate-stopped-essential-oom-exit137.derived"))
    raw["id"] = raw["id"][:-4] + "0000"
    raw["detail"]["version"] = 99
    raw["detail"]["lastStatus"] = "stopped"
    assert record_event(raw, store).get("stop_kind") == "crash"


@pytest.mark.parametrize("corrupt", ["api", 5, ["ab"], [["web", "b"]], True])
def test_an_index_item_whose_services_or_jobs_is_not_a_map_never_fails_the_write(corrupt: object, caplog) -> None:
    """The sweep's index of open work (``OPEN#work``): a hand-edited ``services`` or ``jobs`` value that is
    not a map raised out of ``_index_change`` (``dict("api")``: ValueError; ``dict(5)``: TypeError), so the
    event that held a service at zero failed (Lambda retries, then the dead-letter queue), or was silently
    read as a map (``dict(["ab"])`` is ``{"a": "b"}``). Now the corrupt value is logged (the readers skip it
    already: it named nothing the sweep could read) and replaced by the change's own entry, so the held
    service is in the index; a removal from it writes nothing; the other field is kept as it was."""
    import logging

    from ecs_guardrail.adapters.store import keys
    from ecs_guardrail.adapters.store.memory import MemoryTable
    from ecs_guardrail.adapters.store.watchdog_state import WatchdogState

    table = MemoryTable()
    pk, sk = keys.open_work("a")
    jobs = {"nightly": ["a", "2025-08-21T10:00:00Z"]}
    table.put({"pk": pk, "sk": sk, "services": corrupt, "jobs": jobs, "seq": 3})
    state = WatchdogState(table)
    with caplog.at_level(logging.ERROR):
        state.close_work("a", "api")  # nothing to drop: no write
        assert table.get(pk, sk)["services"] == corrupt
        state.open_work("a", "a", "api")
    assert state.open_work_items() == [("a", "a", "api")]
    item = table.get(pk, sk)
    assert item["jobs"] == jobs and item["seq"] == 4
    assert any("services" in r.getMessage() and "not a map" in r.getMessage() for r in caplog.records), caplog.text

    table.put({"pk": pk, "sk": sk, "services": {"api": "a"}, "jobs": corrupt, "seq": 7})
    state.close_job("a", "nightly", datetime(2025, 8, 21, 10, tzinfo=UTC))
    state.open_job("a", "a", "nightly", datetime(2025, 8, 21, 11, tzinfo=UTC))
    item = table.get(pk, sk)
    assert item["services"] == {"api": "a"} and item["jobs"] == {"nightly": ["a", "2025-08-21T11:00:00Z"]}


def test_a_corrupt_job_entry_never_fails_closing_its_window() -> None:
    """``close_job`` read ``list(jobs[family])``: an entry that is a number raised TypeError. A corrupt entry
    names no window, so closing a window leaves it as it is (the readers log and skip it)."""
    from ecs_guardrail.adapters.store import keys
    from ecs_guardrail.adapters.store.memory import MemoryTable
    from ecs_guardrail.adapters.store.watchdog_state import WatchdogState

    table = MemoryTable()
    pk, sk = keys.open_work("a")
    table.put({"pk": pk, "sk": sk, "jobs": {"nightly": 5, "other": ["a", "2025-08-21T10:00:00Z"]}, "seq": 1})
    state = WatchdogState(table)
    state.close_job("a", "nightly", datetime(2025, 8, 21, 10, tzinfo=UTC))
    state.close_job("a", "other", datetime(2025, 8, 21, 10, tzinfo=UTC))
    assert table.get(pk, sk)["jobs"] == {"nightly": 5}


@pytest.mark.parametrize("line", [
    "docker run -p 8080:80 app",
    "docker run -p 8080:80/tcp -p 53:53/udp dns",
    "docker run -p 127.0.0.1:8080:80 app",
    "docker run -p 8000-8010:8000-8010 app",
    "docker run -p 80 app",
    "ssh -p 2222 deploy@host",
    "exec: docker run -p 8080:80",
])
def test_a_port_mapping_after_dash_p_is_not_masked(line: str) -> None:
    """The masks' ``-p value`` rule (``mysql -p secret``) also masked ``docker run -p 8080:80``'s ports
    in quoted crash text. A value that is a port mapping (``[ip:]port[-port][:port[-port]][/proto]``) is
    not a secret."""
    from ecs_guardrail.core.crash_words import mask

    assert mask(line) == line


@pytest.mark.parametrize(("line", "masked"), [
    ("mysql -u root -p s3cr3t -h db", "mysql -u root -p **** -h db"),
    ("mysql -p 8080:80x", "mysql -p ****"),
    ("mysql -p 8080:secret", "mysql -p ****"),
    ("cmd -p '8080:80'", "cmd -p ****"),
    ("cmd -p 123456", "cmd -p ****"),
    ("cmd -p 80:80:80:80", "cmd -p ****"),
])
def test_a_value_after_dash_p_that_is_not_a_port_mapping_is_still_masked(line: str, masked: str) -> None:
    from ecs_guardrail.core.crash_words import mask

    assert mask(line) == masked


def test_a_value_of_non_ascii_digits_after_dash_p_is_masked() -> None:
    from ecs_guardrail.core.crash_words import mask

    assert mask("cmd -p \u0661\u0662\u0663\u0664 next") == "cmd -p **** next"


def test_the_sweeps_held_column_counts_services_a_hold_left_running() -> None:
    """``--sweep``'s "held" column (``services_held``) beside "services scaled": a service held by the
    blast-radius bound and scaled to 0 later (hold-by-kills-escalates-silently) was counted in both, and
    a service held twice is one service. It counts the services whose last hold was not followed by a
    scale-down, so a service held then stopped counts as stopped only."""
    from ecs_guardrail.replay.settings_sweep import row_of

    def d(service: str, action: str, minute: int) -> dict[str, str]:
        return {"cluster": "c", "service": service, "action": action, "time": f"2025-08-21T10:{minute:02d}:00Z"}

    decisions = [d("web", "hold", 1), d("api", "hold", 1), d("api", "hold", 3), d("web", "scale_to_zero", 5),
                 d("db", "scale_to_zero", 2), d("db", "hold", 6), d("q", "alert_only", 1)]
    result = SimpleNamespace(decisions=decisions, summary={"scaled_to_zero": ["c/db", "c/web"]})
    row = row_of({"CRASH_THRESHOLD": "5"}, result)
    assert row.decisions_by_action["hold"] == 4 and row.services_scaled == 2
    assert row.services_held == 2  # api (held twice) and db (held after its scale-down); not web


@pytest.mark.parametrize("cell", ["abc", "-", "n/a", "null", "1_000", "\u0661\u0662", "nan", "inf", "0x10", "5 req"])
@pytest.mark.parametrize("column", ["request_count", "target_2xx", "target_5xx", "elb_5xx", "healthy_host_count"])
def test_a_healthy_hosts_cell_that_is_not_a_number_is_an_error_with_its_row_and_column(tmp_path, cell, column) -> None:
    """An empty request cell is no datapoint, i.e. 0 requests (ALB publishes RequestCount only when nonzero),
    so its minute reads as idle; a cell that is not a number must never read so: it is an error naming the
    file's line and the column. ``float`` alone took ``1_000`` and Arabic-Indic digits as numbers."""
    from ecs_guardrail.core.errors import ScenarioError
    from ecs_guardrail.replay.healthy_hosts import read_healthy_hosts_csv

    cells = {"healthy_host_count": "2", "request_count": "10", "target_2xx": "4", "target_5xx": "1", "elb_5xx": "0"}
    cells[column] = cell
    path = tmp_path / "healthy_hosts.csv"
    path.write_text("time,target_group,healthy_host_count,request_count,target_2xx,target_5xx,elb_5xx\n"
                    "2025-08-21T10:00:00Z,web,2,10,4,1,0\n"
                    f"2025-08-21T10:01:00Z,web,{','.join(cells[k] for k in list(cells))}\n", encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        read_healthy_hosts_csv(path)
    assert f"healthy_hosts.csv:3: column {column}: " in str(info.value) and "is not a count" in str(info.value)


def test_an_empty_request_cell_is_no_datapoint_and_reads_as_idle(tmp_path) -> None:
    from ecs_guardrail.core.availability import ClientsState, clients_state
    from ecs_guardrail.replay.healthy_hosts import read_healthy_hosts_csv

    path = tmp_path / "healthy_hosts.csv"
    path.write_text("time,target_group,healthy_host_count,request_count,target_2xx,target_5xx,elb_5xx\n"
                    "2025-08-21T10:00:00Z,web,2,,,, \n", encoding="utf-8")
    [(_, _, hosts, requests)] = read_healthy_hosts_csv(path)
    assert hosts == 2 and requests == {}
    sample = SimpleNamespace(request_metrics=True, request_count=None, elb_5xx=None, target_5xx=None)
    assert clients_state([sample]) is ClientsState.IDLE  # type: ignore[list-item]


def test_capture_md_says_what_an_empty_request_cell_means(tmp_path) -> None:
    from ecs_guardrail.app.capture import CaptureReport, _write_notes

    report = CaptureReport(tmp_path, ["dev"], datetime(2025, 8, 21, 10, tzinfo=UTC),
                           datetime(2025, 8, 21, 11, tzinfo=UTC), "/aws/events/x/ecs", csv_rows=60)
    _write_notes(tmp_path / "CAPTURE.md", report)
    line = next(x for x in (tmp_path / "CAPTURE.md").read_text().splitlines() if x.startswith("- healthy_hosts.csv"))
    assert "empty request cell" in line and "only when nonzero" in line and "0 requests" in line, line


def test_capture_states_cloudwatchs_one_minute_retention_with_its_source() -> None:
    """CAPTURE.md's retention line guessed ("CloudWatch keeps 1-minute data 15 days") and said nothing when
    the period started so long ago that no row came back at all. The CloudWatch API Reference
    (GetMetricData, "Amazon CloudWatch retains metric data as follows") keeps 60-second datapoints 15 days,
    5-minute ones 63 days, 1-hour ones 455 days; the line now says so, names its source, and is written
    when the period starts more than 15 days before the capture and its rows do not, or none came back."""
    from datetime import timedelta

    from ecs_guardrail.app.capture import _retention_note

    now = datetime(2026, 12, 5, 12, tzinfo=UTC)
    recent = now - timedelta(days=14)
    assert _retention_note(recent, recent, now) is None
    assert _retention_note(recent, None, now) is None
    old = now - timedelta(days=20)
    assert _retention_note(old, old + timedelta(minutes=5), now) is None  # the rows begin with the period
    for first in (None, now - timedelta(days=15)):
        note = _retention_note(old, first, now)
        assert note is not None and "15 days" in note and "GetMetricData" in note and "63 days" in note, note
        assert "2026-11-20T12:00:00Z" in note and "missing, not down" in note, note
    assert "first row at 2026-11-20T12:00:00Z" in _retention_note(old, now - timedelta(days=15), now)
    assert "no row" in _retention_note(old, None, now)
