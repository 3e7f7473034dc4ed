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
