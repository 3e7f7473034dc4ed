"""Found by breaking it: the summary stays far below DynamoDB's 400 KB item limit even at the largest
CRASH_THRESHOLD the settings accept, and ALERT_ONLY_CLUSTERS fails safe on a capitalisation slip."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from ecs_guardrail.adapters.store.memory import MemoryTable
from ecs_guardrail.adapters.store.watchdog_state import WatchdogState, summary_to_doc
from ecs_guardrail.core.classify import StopKind
from ecs_guardrail.core.policy import PolicyConfig, is_alert_only_cluster
from ecs_guardrail.core.records import Failure
from ecs_guardrail.core.summary import add_failure

T0 = datetime(2025, 8, 21, 10, 0, tzinfo=UTC)
ARN = "arn:aws:ecs:eu-west-1:111122223333:task/development/"


def _failure(i: int, kind: StopKind) -> Failure:
    return Failure(service="api", time=T0 + timedelta(seconds=i), kind=kind, task_arn=f"{ARN}{i:032x}",
                   availability_zone="eu-west-1a", stop_code="EssentialContainerExited", reason="x" * 600,
                   cause="OutOfMemoryError", exit_codes=tuple((f"container-{n}", 137) for n in range(4)))


def test_summary_at_the_largest_threshold_stays_far_below_400_kb() -> None:
    config = PolicyConfig(crash_threshold=1000, window_minutes=1440)
    state = WatchdogState(MemoryTable())
    for i in range(1100):
        kind = StopKind.CRASH if i % 2 else StopKind.HEALTH_CHECK_KILL
        state.update("development", "api", lambda s, i=i, kind=kind: add_failure(s, _failure(i, kind), config.keep))
    s = state.load("development", "api", fresh=True)
    assert len(s.crashes) == len(s.kills) == 550
    item_bytes = len(json.dumps(summary_to_doc(s)))
    assert item_bytes < 150_000, item_bytes
    # the newest stops keep everything an alert shows; a redelivered old task is still known
    assert s.crashes[-1].reason == "x" * 200 and s.crashes[-1].exit_codes
    assert s.knows_task(f"{ARN}{1:032x}")
    assert add_failure(s, _failure(1, StopKind.CRASH), config.keep) is None


def test_alert_only_clusters_match_without_case() -> None:
    config = PolicyConfig(alert_only_clusters=("PRODUCTION", "Live-*"))
    assert is_alert_only_cluster(config, "production")
    assert is_alert_only_cluster(config, "live-eu", "arn:aws:ecs:eu-west-1:111122223333:cluster/live-eu")
    assert not is_alert_only_cluster(config, "development")
    assert is_alert_only_cluster(PolicyConfig(), "anything")  # unset: every cluster
