"""The watchdog's reserved concurrency from the account's service count (core/concurrency.py, issue 32)."""

from __future__ import annotations

import math

import pytest

from ecs_guardrail.core import concurrency as c
from ecs_guardrail.handlers import lane


@pytest.mark.parametrize(("services", "reserved"), [(0, 5), (50, 5), (2000, 5), (2500, 6), (5000, 11),
                                                    (10_000, 21), (40_000, 82), (60_000, 100)])
def test_the_formula_at_account_sizes(services: int, reserved: int) -> None:
    s = c.recommended_reserved_concurrency(services)
    mean = 0.8 * c.FILING_S + 0.2 * c.DECISION_S
    assert s.mean_service_s == pytest.approx(mean)
    assert s.reserved == reserved == min(100, max(5, math.ceil(services / 60 * mean / c.UTILISATION)))


def test_small_accounts_reserve_nothing_and_the_default_is_the_floor() -> None:
    assert c.recommended_reserved_concurrency(100, quota=10).reserved == 0  # Lambda keeps 100 unreserved
    assert c.recommended_reserved_concurrency(100, quota=107).reserved == 0
    assert c.recommended_reserved_concurrency(100, quota=108).reserved == 5
    assert c.recommended_reserved_concurrency(10_000, quota=120).reserved == 17  # the room left, with why
    assert c.OTHERS == 1 + lane.RESERVED_CONCURRENCY  # the sampler's and the sweep function's


def test_the_rate_and_the_threshold_move_it() -> None:
    base = c.recommended_reserved_concurrency(10_000).reserved
    assert c.recommended_reserved_concurrency(10_000, stopped_per_service_minute=2).reserved > base
    assert c.recommended_reserved_concurrency(10_000, crash_threshold=3).reserved > base


@pytest.mark.parametrize("kw", [{"services": -1}, {"services": 1, "crash_threshold": 0},
                                {"services": 1, "utilisation": 0}, {"services": 1, "stopped_per_service_minute": -1},
                                {"services": 1, "stopped_per_service_minute": math.nan},
                                {"services": 1, "stopped_per_service_minute": math.inf},
                                {"services": 10, "stopped_per_service_minute": 1e308},  # the storm overflows
                                {"services": 1, "quota": -1}, {"services": 10**400}])
def test_bad_input_is_refused_with_its_reason(kw: dict) -> None:
    with pytest.raises(ValueError, match="not negative|at least 1|a share|a finite number|at most 1,000,000,000"):
        c.recommended_reserved_concurrency(**kw)


def test_the_helper_prints_the_value(capsys: pytest.CaptureFixture[str]) -> None:
    import runpy
    import sys

    argv = sys.argv
    sys.argv = ["recommend_concurrency.py", "10000"]
    try:
        with pytest.raises(SystemExit) as done:
            runpy.run_path("scripts/recommend_concurrency.py", run_name="__main__")
    finally:
        sys.argv = argv
    assert done.value.code == 0
    assert "watchdog_reserved_concurrency: 21" in capsys.readouterr().out
