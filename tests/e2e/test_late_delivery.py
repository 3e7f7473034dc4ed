"""Issue 18 end to end: what the late, repeated and reordered deliveries of the bundled and shared scenarios
decide, say and cost (replayed in process on the fast engine; ``test_engines`` checks moto agrees).

Each of the four defects is pinned here by the scenario that showed it, beside its unit test:

1. a late failure completes a loop and the fleet test misses failures inside its window:
   ``late-failure-fleet-test`` (tests/unit/test_policy.py ``test_fleet_counts_failures_the_rings_no_longer_hold``);
2. an IMPAIRED decision takes the wrong time: ``impaired-decision-time``
   (``test_impaired_older_than_the_newest_failure_decides_at_its_own_time``);
3. a failure stamped after the episode ended, delivered before the steady state, is filed in the old
   episode: ``failure-after-steady-state`` (tests/unit/test_summary.py
   ``test_close_episode_records_why_and_what_no_longer_counts``);
4. a scale-down decided on a late-delivered event is counted as an operator's zero:
   ``late-decision-watchdog-minutes`` (tests/unit/test_availability.py
   ``test_a_late_decision_owns_its_minutes_from_t``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ecs_guardrail.replay.run import replay
from ecs_guardrail.replay.scenario import load_scenario
from tests.conftest import ROOT, SCENARIOS

SHARED = ROOT.parent / "shared" / "scenarios"


def _replay(folder: Path) -> Any:
    if not folder.is_dir():
        pytest.skip(f"{folder} is not beside this checkout")
    return replay(load_scenario(folder))


def _sns(res: Any) -> list[tuple[str, str]]:
    return [(a["kind"], a["message"]) for a in res.alerts if a["channel"] == "sns"]


def test_defect_1_late_failure_holds_with_the_neighbours_failures_of_its_window() -> None:
    res = _replay(SHARED / "late-failure-fleet-test")
    reports = [d for d in res.decisions if d["service"] == "reports"]
    assert [(d["action"], d["reason"], d["time"]) for d in reports] == [
        ("hold", "mass_unhealthy", "2025-10-14T14:09:00Z")]
    assert reports[0]["failing_services"] == 2 and reports[0]["evidence"]["failing"] == ["mailer", "reports"]
    assert res.summary["desired_counts"]["sandbox/reports"] == 2


def test_defect_2_impaired_decides_at_its_own_time_on_that_times_sample() -> None:
    res = _replay(SHARED / "impaired-decision-time")
    (d,) = res.decisions
    assert (d["time"], d["action"], d["trigger"]) == ("2025-10-14T14:20:00Z", "scale_to_zero", "impaired")
    assert d["crashes_in_window"] == 1  # the 14:27 failure is after T: not in its window


def test_defect_3_a_failure_after_the_steady_state_opens_the_next_episode() -> None:
    res = _replay(SHARED / "failure-after-steady-state")
    second = res.decisions[1]
    assert second["time"] == "2025-10-14T14:34:00Z" and second["crashes_in_window"] == 5
    assert [f["time"][11:16] for f in second["last_stops"]] == ["14:25", "14:27", "14:29", "14:31", "14:34"]


def test_defect_4_a_late_decision_owns_its_minutes() -> None:
    res = _replay(SHARED / "late-decision-watchdog-minutes")
    assert res.summary["watchdog_service_minutes"] == 26 and res.summary["unavailable_service_minutes"] == 32
    assert res.availability.to_dict()["zero_by_operator"] == 0


def test_a_silent_re_evaluation_records_and_sends_nothing() -> None:
    # a hold whose trigger was health-check kills escalates with the same outcome (silent, the escalation
    # used up), then the provisional hold changes to a scale-down: two decisions, two alerts
    res = _replay(SCENARIOS / "hold-by-kills-escalates-silently")
    assert [(d["action"], d["escalation"]) for d in res.decisions] == [("hold", False), ("scale_to_zero", False)]
    kinds = [k for k, _ in _sns(res)]
    assert kinds == ["mass_hold", "scale_down"] and res.summary["alerts_sent"] == 2
    assert "the rest of the cluster recovered; web still crash-loops" in _sns(res)[1][1]


def test_a_storm_over_one_service_still_looping_gets_its_next_decision_and_alert() -> None:
    res = _replay(SHARED / "storm-over-one-still-loops")
    orders = [d for d in res.decisions if d["service"] == "orders"]
    assert [(d["action"], d["time"]) for d in orders] == [("hold", "2025-10-14T14:12:20Z"),
                                                          ("scale_to_zero", "2025-10-14T14:42:20Z")]
    assert "the rest of the cluster recovered; orders still crash-loops" in orders[1]["message"]
    # the silent re-evaluation at 14:27:20 sent nothing: one cluster alert, one recovery, one scale-down
    assert [k for k, _ in _sns(res)] == ["mass_hold", "recovery", "scale_down"]


def test_maintenance_notices_make_no_crash_loop_in_either_delivery_order() -> None:
    # the recorder's history classifies each STOPPED event by itself (stops_by_kind shows six "crash"); the
    # watchdog remembers the notice per task and counts none of them
    res = _replay(SHARED / "maintenance-notice-not-crash")
    assert res.decisions == []
    # each STOPPED delivered before its notice: the watchdog takes each crash back when the notice comes
    res = _replay(SCENARIOS / "notice-after-its-stop")
    assert res.decisions == []


def test_a_daemon_services_desired_count_is_ecss_on_both_engines(tmp_path: Path) -> None:
    # issue 18 reading: a DAEMON service's desired count is ECS's (one task per container instance; a fleet
    # without container instances has 0), never fleet.json's; checkers leave it out. Both engines agree.
    import json
    import shutil

    folder = tmp_path / "daemon"
    shutil.copytree(SCENARIOS / "notice-after-its-stop", folder)
    fleet = json.loads((folder / "fleet.json").read_text())
    fleet["clusters"][0]["services"][1] = {"name": "ledger", "schedulingStrategy": "DAEMON", "targetGroups": [],
                                           "tags": {}}
    (folder / "fleet.json").write_text(json.dumps(fleet))
    fast, moto = (replay(load_scenario(folder), engine=e) for e in ("fast", "moto"))
    assert fast.summary["desired_counts"] == moto.summary["desired_counts"]
    assert fast.summary["desired_counts"]["uat/ledger"] == 0 and fast.summary["desired_counts"]["uat/gateway"] == 2
