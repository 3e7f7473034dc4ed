"""healthy_hosts.csv errors name the row, the column and what is expected (never Python's own words)."""

from __future__ import annotations

import pytest

from ecs_guardrail.core.errors import ScenarioError
from ecs_guardrail.replay.healthy_hosts import read_healthy_hosts_csv


def read(tmp_path, text: str):
    p = tmp_path / "healthy_hosts.csv"
    p.write_text(text)
    return read_healthy_hosts_csv(p)


@pytest.mark.parametrize("row, column, expected", [
    ("2025-10-07T10:00:00Z,web,two", "healthy_host_count", "expected a number from 0 to 1000000"),
    ("2025-10-07T10:00:00Z,web,-1", "healthy_host_count", "expected a number from 0 to 1000000"),
    ("2025-10-07T10:00:00Z,web,nan", "healthy_host_count", "expected a number from 0 to 1000000"),
    ("07/10/2025 10:00,web,2", "time", "ISO 8601 UTC time"),
    ("2025-10-07T10:00:00Z,,2", "target_group", "expected a target group name"),
    ("2025-10-07T10:00:00Z,web,2,extra", "4 fields", "expected 3"),
])
def test_a_bad_row_names_its_line_column_and_what_is_expected(tmp_path, row, column, expected):
    with pytest.raises(ScenarioError) as err:
        read(tmp_path, f"time,target_group,healthy_host_count\n2025-10-07T09:59:00Z,web,2\n{row}\n")
    text = str(err.value)
    assert text.startswith("healthy_hosts.csv:3: ") and column in text and expected in text
    assert "could not convert" not in text and "Invalid isoformat" not in text


def test_a_header_typo_shows_the_header_found(tmp_path):
    with pytest.raises(ScenarioError) as err:
        read(tmp_path, "time,target_grup,healthy_host_count\n2025-10-07T10:00:00Z,web,2\n")
    assert "header is 'time,target_grup,healthy_host_count'" in str(err.value)
    assert "missing: target_group" in str(err.value)


def test_good_rows_parse(tmp_path):
    rows = read(tmp_path, "time,target_group,healthy_host_count\n2025-10-07T10:00:00Z, web ,2\n")
    assert [(r[0].isoformat(), r[1], r[2]) for r in rows] == [("2025-10-07T10:00:00+00:00", "web", 2.0)]


def test_duplicate_minutes_warning_names_a_minute_given_twice_only():
    """Rows of one target group in one minute (seconds apart) are named; the same minute of two target
    groups, or one target group's minutes each once, are not."""
    from datetime import UTC, datetime

    from ecs_guardrail.replay.healthy_hosts import duplicate_minutes_warning

    t0, t1 = datetime(2026, 1, 1, 10, 0, tzinfo=UTC), datetime(2026, 1, 1, 10, 1, tzinfo=UTC)
    once = [(t0, "web", 2.0, {}), (t0, "api", 1.0, {}), (t1, "web", 2.0, {})]
    assert duplicate_minutes_warning(once) is None
    twice = [*once, (t0.replace(second=30), "web", 0.0, {})]
    text = duplicate_minutes_warning(twice)
    assert text is not None and "1 target group minute(s)" in text and "web at 2026-01-01T10:00Z: 2, 0" in text
