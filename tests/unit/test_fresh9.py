"""What the ninth fresh user hit, each pinned by a test."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime

import pytest
from rich.console import Console

from ecs_guardrail.replay.settings_sweep import SweepRow, render_rows


def _narrow(rows: list[SweepRow], width: int) -> str:
    out = io.StringIO()
    render_rows(rows, Console(file=out, width=width, color_system=None, force_terminal=False))
    return out.getvalue()


def test_sweep_table_on_a_narrow_terminal_folds_headers_instead_of_cutting_them() -> None:
    """On an 80-column terminal two swept settings of one prefix both read ``PROBE_…``: the user could
    not tell which column was which. Headers now wrap; every letter of each name is printed."""
    rows = [SweepRow(settings={"PROBE_DELAY_MINUTES": d, "PROBE_PASS_MINUTES": p},
                     decisions_by_action={"scale_to_zero": 1}, services_scaled=1, watchdog_service_minutes=40,
                     unavailable_service_minutes=50, decisions=1,
                     probes={"started": 2, "passed": 1, "failed": 1},
                     image_pulls={"unstopped": 24, "manual": 5, "probe": 7})
            for d in ("5", "15") for p in ("5", "10")]
    text = _narrow(rows, 80)
    assert "…" not in text  # before: "PROBE_…" twice, "alert_o…", "(unsto…"
    assert "24/5/7" in text and "2 (1/1)" in text  # a value is never cut
    # at the default width of a pipe (200) nothing folds: the bundled reports keep their bytes
    wide = _narrow(rows, 200)
    assert "PROBE_DELAY_MINUTES" in wide and "pulls (unstopped/manual/probe)" in wide


def test_a_restart_loop_row_says_restarts_not_crashed_tasks() -> None:
    """restart-policy-loop's row read "5/0" under crash/hc: five crashed tasks, where no task stopped (its
    five are container restarts inside running tasks). The cell now says so; --json keeps its fields."""
    from tests.conftest import SCENARIOS, cli_in_process

    proc = cli_in_process("replay", str(SCENARIOS / "restart-policy-loop"), env={"COLUMNS": "160"})
    row = next(line for line in proc.stdout.splitlines() if "platform/api" in line and "restart_loop" in line)
    assert row.rstrip().endswith("5 restarts") and "5/0" not in row
    proc = cli_in_process("replay", str(SCENARIOS / "restart-policy-loop"), "--json")
    decision = json.loads(proc.stdout.splitlines()[0])
    assert decision["crashes_in_window"] == 5 and decision["health_check_kills_in_window"] == 0


def test_the_alerts_sent_line_names_each_kind() -> None:
    """oom-loop-production's report said "decisions 1; alerts sent 2" (the README: "alert only"): which two?
    The line now names them, so the second is seen to be the episode's recovery."""
    from tests.conftest import SCENARIOS, cli_in_process

    proc = cli_in_process("replay", str(SCENARIOS / "oom-loop-production"), env={"COLUMNS": "200"})
    assert "decisions 1; alerts sent 2 (alert_only 1, recovery 1)" in proc.stdout
    proc = cli_in_process("replay", str(SCENARIOS / "spot-and-deploy-churn"), env={"COLUMNS": "200"})
    assert "alerts sent 0\n" in proc.stdout  # nothing added without alerts


def test_capture_refuses_an_out_dir_under_a_file_before_any_aws_call(tmp_path) -> None:
    """capture read every cluster, log group and metric, then failed to create OUT_DIR (a path under a file,
    a read-only folder): the whole capture's reads lost. The folder is checked first now."""


    from ecs_guardrail.app.capture import capture
    from ecs_guardrail.core.errors import ScenarioError

    (tmp_path / "afile").write_text("x")
    called: list[str] = []

    def client(service: str) -> object:
        called.append(service)
        raise AssertionError("no AWS call before the folder is checked")

    with pytest.raises(ScenarioError, match="is not a folder"):
        capture(client, ["dev"], datetime(2025, 8, 21, 14, tzinfo=UTC), datetime(2025, 8, 21, 16, tzinfo=UTC),
                tmp_path / "afile" / "sub", log_group="/aws/events/ecs-guardrail/ecs")
    assert called == []


def test_a_mass_hold_line_says_1_crash_not_1_crashes() -> None:
    """shared-cache-brownout's hold alert listed "account: 1 crashes, 4 health-check kills"."""
    from ecs_guardrail.core.alert import mass_lines

    lines = mass_lines([("account", 1, 4, None), ("basket", 2, 1, None), ("cart", 0, 0, None)], 30)
    assert lines == ["account: 1 crash, 4 health-check kills in 30 min",
                     "basket: 2 crashes, 1 health-check kill in 30 min",
                     "cart: 0 crashes, 0 health-check kills in 30 min"]


@pytest.mark.parametrize(("typo", "meant"), [
    ("CRASH_TRESHOLD", "CRASH_THRESHOLD"), ("alert_only_clusters", "ALERT_ONLY_CLUSTERS"),
    ("MAX_ACTIONS_FRACTION", "MAX_ACTION_FRACTION"), ("ALERT_ONLY_CLUSTER", "ALERT_ONLY_CLUSTERS")])
def test_an_unknown_setting_names_the_one_it_is_close_to(typo: str, meant: str) -> None:
    """settings.env's CRASH_TRESHOLD=3 was refused with the list of 27 names and no pointer to the typo."""
    from ecs_guardrail.settings import unknown_setting

    assert f"unknown setting {typo!r} (did you mean {meant}?); known: " in unknown_setting(typo)
    assert "did you mean" not in unknown_setting("FOO")


def test_coverage_below_100_says_which_minutes_had_no_datapoint() -> None:
    """watchdog-made-zero: "coverage 90.5%; minutes lost: ... 0 with no datapoint" read as a contradiction.
    The 19 minutes are checkout's at 0 by the watchdog (an empty target group reports nothing): said now."""
    from tests.conftest import SCENARIOS, cli_in_process

    proc = cli_in_process("replay", str(SCENARIOS / "watchdog-made-zero"), env={"COLUMNS": "300"})
    assert ("coverage 90.5% (19 service-minutes at 0 by the watchdog had no datapoint); minutes lost: "
            "10 with no healthy host, 0 with no datapoint, 20 scaled to 0 by the watchdog") in proc.stdout
    proc = cli_in_process("replay", str(SCENARIOS / "shared-cache-brownout"), env={"COLUMNS": "300"})
    assert "coverage 100.0%; minutes lost" in proc.stdout


def test_a_misspelt_fleet_key_names_the_one_meant() -> None:
    """fleet.json's "desiredcount": 2 was ignored (the service built with 1) with 17 keys listed; the warning
    now points at desiredCount."""
    from ecs_guardrail.replay.fleet import fleet_warnings

    fleet = {"clusters": [{"name": "dev", "services": [
        {"name": "web", "desiredcount": 2, "targetGroup": ["tg"], "colour": "blue"}]}]}
    warnings = fleet_warnings(fleet)
    assert any("unknown key 'desiredcount' ignored; did you mean desiredCount? (known: " in w for w in warnings)
    assert any("unknown key 'targetGroup' ignored; did you mean targetGroups? (known: " in w for w in warnings)
    assert any("unknown key 'colour' ignored (known: " in w for w in warnings)


def test_a_service_verdict_with_two_failing_names_both() -> None:
    """alerts-tour's timeline: "SERVICE - api: 5 of 5 tasks failed (100%); 2 service(s) failing, within the
    bound 2": the other one was not named. Now "(api, worker)"."""
    from datetime import timedelta

    from ecs_guardrail.core.attribution import Verdict, attribute
    from ecs_guardrail.core.classify import StopKind
    from ecs_guardrail.core.policy import Failure, PolicyConfig

    t0 = datetime(2025, 9, 2, 9, tzinfo=UTC)
    failures = [Failure(s, t0 + timedelta(minutes=i), StopKind.CRASH, f"{s}-{i}", "a")
                for s, n in (("api", 5), ("worker", 4)) for i in range(n)]
    a = attribute(PolicyConfig(), failures, {}, ("a",), 12, t0, t0 + timedelta(hours=1))
    assert a.verdict is Verdict.SERVICE
    assert a.why == "api: 5 of 5 tasks failed (100%); 2 service(s) failing (api, worker), within the bound 2"
    one = attribute(PolicyConfig(), failures[:5], {}, ("a",), 12, t0, t0 + timedelta(hours=1))
    assert one.why == "api: 5 of 5 tasks failed (100%); 1 service(s) failing, within the bound 2"


def test_image_pulls_without_a_scale_down_say_there_is_nothing_to_compare() -> None:
    """quiet-window-recovery-sent (RECOVERY=probe, an alert-only loop of 7 crashes) read "image pulls: 0 if
    the loop were left alone": the loop was left alone. The figures count only loops the watchdog stopped."""
    from ecs_guardrail.app.report import _more_lines

    none = {"probes": {"started": 0, "passed": 0, "failed": 0}, "image_pulls": {"unstopped": 0, "manual": 0,
                                                                                  "probe": 0}, "scaled_to_zero": []}
    assert _more_lines(none)[-1].startswith("image pulls: no service was scaled to 0, nothing to compare")
    some = dict(none, image_pulls={"unstopped": 24, "manual": 5, "probe": 7}, scaled_to_zero=["dev/checkout"])
    assert _more_lines(some)[-1] == ("image pulls: 24 if the loop were left alone, 5 with RECOVERY=manual, "
                                     "7 with the probes")
