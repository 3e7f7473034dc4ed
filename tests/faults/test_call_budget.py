"""Smoke version of ``bench/run.py``: per-event AWS call budgets (deterministic, not timings).

Targets (issue 5): at most 1 AWS write for a non-stop task event; at most 4 AWS calls for a genuine
crash before any alert or action.
"""

from __future__ import annotations

import run as bench


def test_per_event_call_budgets():
    r = bench.measure(services=10, events=80)
    kinds = r["per_kind"]
    # the calls are counted at all: every event is recorded (a budget of zero calls passed vacuously when
    # the handlers' clients were not the counted ones, and `make bench` then divided by zero)
    assert r["calls_per_event"] > 0 and kinds["running"]["writes_max"] == 1
    assert kinds["crash (counted, no decision)"]["calls_max"] >= 1
    assert kinds["running"]["writes_max"] <= 1 and kinds["running"]["calls_max"] <= 1
    assert kinds["crash (counted, no decision)"]["calls_max"] <= 4
    for kind in ("spot", "deploy"):
        if kind in kinds:
            assert kinds[kind]["calls_max"] <= 4, (kind, kinds[kind])
