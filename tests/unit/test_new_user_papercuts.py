"""A new user's papercuts (issue 38, issue 30 item 10): hints, refusals, sweeps, widths, messages and
silent defaults; each item has a test here (reading files and calling functions; no replay unless needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ecs_guardrail.replay.scenario import alert_only_warnings, load_scenario

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = sorted(p for p in (ROOT / "events" / "scenarios").iterdir() if (p / "fleet.json").exists())


# -- item 5: the project's own data earns no "a typo?" warning ------------------------------------------

@pytest.mark.parametrize("folder", BUNDLED, ids=lambda p: p.name)
def test_bundled_settings_name_only_clusters_of_their_fleet(folder: Path) -> None:
    assert alert_only_warnings(load_scenario(folder)) == []


# -- item 4: a sweep's summary never calls "never act" the best ------------------------------------------

def _row(threshold: str, minutes: int | None, scaled: int, pulls: int | None = None) -> object:
    from ecs_guardrail.replay.sweep import SweepRow

    probing = pulls is not None
    return SweepRow(settings={"CRASH_THRESHOLD": threshold}, services_scaled=scaled, watchdog_service_minutes=minutes,
                    probes={"started": 1, "passed": 0, "failed": 1} if probing else None,
                    image_pulls={"unstopped": 30, "manual": 5, "probe": pulls} if probing else None)


def test_the_least_minutes_are_among_settings_that_act_and_never_act_is_named():
    from ecs_guardrail.replay.sweep import summary, trade_lines

    rows = [_row("1", 0, 0), _row("3", 40, 2), _row("5", 25, 2), _row("8", 10, 1)]
    s = summary(rows)  # type: ignore[arg-type]
    assert s["least_watchdog_service_minutes"] == {"CRASH_THRESHOLD": "8"}
    assert s["never_act"] == [{"CRASH_THRESHOLD": "1"}]
    # 3 is beaten by 5 (fewer minutes, as many services stopped); the rest is the trade
    assert [t["settings"]["CRASH_THRESHOLD"] for t in s["trade"]] == ["1", "8", "5"]
    lines = trade_lines(rows)  # type: ignore[arg-type]
    assert lines[0] == ("fewest watchdog service-minutes among settings that act: CRASH_THRESHOLD=8 (10 min, "
                        "1 service(s) stopped)")
    assert lines[1].startswith("never act: CRASH_THRESHOLD=1: 0 watchdog minutes because their crash loops run on")


def test_no_setting_acts_gives_no_best_and_pulls_join_the_trade():
    from ecs_guardrail.replay.sweep import summary

    assert summary([_row("8", 0, 0), _row("9", 0, 0)])["least_watchdog_service_minutes"] is None  # type: ignore[list-item]
    rows = [_row("3", 30, 1, pulls=9), _row("5", 20, 1, pulls=20)]
    trade = summary(rows)["trade"]  # type: ignore[arg-type]
    assert [(t["watchdog_service_minutes"], t["image_pulls"]) for t in trade] == [(20, 20), (30, 9)]
