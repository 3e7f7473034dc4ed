"""Makes ``bench/ecsgen.py`` and this folder's scheduler and world importable from these tests."""

import sys
from pathlib import Path

for _p in (Path(__file__).resolve().parents[2] / "bench", Path(__file__).resolve().parent):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))


import pytest  # noqa: E402

from ecs_guardrail.handlers.runtime import logger, metrics  # noqa: E402


@pytest.fixture(autouse=True)
def _quiet_and_no_metrics():
    """Thousands of invocations: no log lines, and the metrics buffer (flushed by the Lambda decorator
    in production, never here) emptied after each test."""
    level = logger.log_level
    logger.setLevel("CRITICAL")
    yield
    logger.setLevel(level)
    metrics.clear_metrics()
