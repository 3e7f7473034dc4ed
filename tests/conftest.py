"""Shared fixtures: event files under events/ (the same files serve ``sam local invoke``)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
EVENTS = ROOT / "events"
SCENARIOS = EVENTS / "scenarios"

# never reach real AWS from a test, whatever the developer's shell has
for _k in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE"):
    os.environ.pop(_k, None)
os.environ.update({"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                   "AWS_DEFAULT_REGION": "eu-west-1", "POWERTOOLS_DEV": "false"})


class ManualClock:
    """An invocation clock (Unix seconds) that moves only when a test says so: leases never depend on
    how fast the machine runs. Assign it to ``Runtime.clock``."""

    def __init__(self, start: float = 1_750_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def load_event(name: str) -> dict[str, Any]:
    """One event file from ``events/ecs/`` (``.json`` may be omitted)."""
    path = EVENTS / "ecs" / (name if name.endswith(".json") else f"{name}.json")
    return json.loads(path.read_text())


@pytest.fixture
def event():
    return load_event
