"""RECOVERY=probe in a replay (issue 21): the recorded stream stands in for the probe; manual vs probe
on the bundled recovery scenarios, and ``--sweep RECOVERY=manual,probe``."""

from __future__ import annotations

import json

from ecs_guardrail.cli import main
from ecs_guardrail.replay.run import replay
from ecs_guardrail.replay.scenario import load_scenario
from tests.conftest import SCENARIOS

FIXED = SCENARIOS / "probe-bad-image-fixed"


def test_manual_keeps_the_summary_shape_and_probe_restores_with_fewer_watchdog_minutes():
    manual = replay(load_scenario(FIXED, {"RECOVERY": "manual"})).summary
    probe = replay(load_scenario(FIXED, {"RECOVERY": "probe"})).summary
    assert "probes" not in manual and "image_pulls" not in manual  # RECOVERY=manual: today's output
    assert manual["desired_counts"]["dev/checkout"] == 0
    assert probe["desired_counts"]["dev/checkout"] == 2 and probe["restored_by_probe"] == ["dev/checkout"]
    assert probe["probes"] == {"started": 2, "passed": 1, "failed": 1}
    assert probe["watchdog_service_minutes"] < manual["watchdog_service_minutes"]
    pulls = probe["image_pulls"]
    assert pulls["manual"] < pulls["probe"] < pulls["unstopped"]
    assert pulls["probe"] == pulls["manual"] + probe["probes"]["started"]


def test_sweep_over_recovery_prints_both_rows(capsys):
    assert main(["replay", str(FIXED), "--sweep", "RECOVERY=manual,probe", "--json"]) in (0, None)
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.strip()]
    manual, probe = (r for r in rows if r["type"] == "sweep_row")
    assert manual["settings"] == {"RECOVERY": "manual"} and "probes" not in manual
    assert probe["probes"]["passed"] == 1 and probe["image_pulls"]["unstopped"] == 24
    assert probe["watchdog_service_minutes"] < manual["watchdog_service_minutes"]
    assert rows[-1]["least_watchdog_service_minutes"] == {"RECOVERY": "probe"}
