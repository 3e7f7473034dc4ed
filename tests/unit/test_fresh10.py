"""What the tenth fresh user hit, each pinned by a test."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from msgspec.structs import replace

from ecs_guardrail.app.capture import capture
from ecs_guardrail.core.alert import job_failure_alert, job_summary_alert
from ecs_guardrail.core.errors import ScenarioError
from tests.unit.test_alerts import T0, failure

START = T0 + timedelta(seconds=30)  # a job's first failure at 03:00:30, as alerts-tour's at 10:00:30


def test_job_failure_alert_names_the_window_end_to_the_second_and_says_the_summary_comes_when_it_closes() -> None:
    """alerts-tour's job alert said "until 10:30Z ... one summary follows with the first failure after
    that": the window ran to 10:30:30 (a failure at 10:30:30 was counted in it, not alerted), and the
    summary came from the sweep when the window closed, with no further failure at all."""
    first = replace(failure(0), time=START)
    a = job_failure_alert("dev", "nightly", first, window_minutes=30, window_end=START + timedelta(minutes=30))
    assert "until 03:30:30Z (30 min)" in a.text
    assert "their summary follows when that window closes" in a.text
    assert "with the first failure after that" not in a.text


def test_job_summary_window_contains_its_last_failure_as_printed() -> None:
    """The summary read "window 10:00Z to 10:30Z; last failure 10:30:30Z": the last failure printed
    outside the window it was counted in. The window's bounds are now to the second."""
    a = job_summary_alert("dev", "nightly", failures=7, window_minutes=30, window_start=START, last_exit="1",
                          last_time=START + timedelta(minutes=30), closed_at=START + timedelta(minutes=30))
    assert "(window 03:00:30Z to 03:30:30Z; last failure 03:30:30Z)" in a.text
    assert "the window closed at 03:30:30Z" in a.text
    assert "Window: 2025-09-02 03:00:30Z + 30 min" in a.text
    again = job_summary_alert("dev", "nightly", failures=7, window_minutes=30, window_start=START, last_exit="1",
                              last_time=START + timedelta(minutes=30),
                              next_failure=replace(failure(0), time=START + timedelta(minutes=35)))
    assert "a new window runs to 04:05:30Z" in again.text


@pytest.mark.skipif(not Path("/sys/kernel").is_dir(), reason="needs Linux sysfs")
def test_capture_refuses_a_folder_root_cannot_create_before_any_aws_call(tmp_path: Path) -> None:
    """Run as root (a container), ``capture ... /sys/cap`` passed the "checked before any AWS call" test
    (os.access says yes to root) and went on to AWS: the folder could only fail after a whole capture's
    reads. Now the creation itself is tried first, exit 2, and no client is ever asked for."""

    def no_aws(service: str) -> object:
        raise AssertionError(f"an AWS client ({service}) was made before the folder was checked")

    since = datetime(2025, 8, 21, 14, tzinfo=UTC)
    with pytest.raises(ScenarioError, match="cannot be created"):
        capture(no_aws, ["dev"], since, since + timedelta(hours=1), Path("/sys/ecs-guardrail-capture"),
                log_group="/aws/events/ecs-guardrail/ecs")
    with pytest.raises(AssertionError, match="AWS client"):  # a writable folder passes the check, then reads AWS
        capture(no_aws, ["dev"], since, since + timedelta(hours=1), tmp_path / "out",
                log_group="/aws/events/ecs-guardrail/ecs")
    assert not (tmp_path / "out").exists() and list(tmp_path.iterdir()) == []
