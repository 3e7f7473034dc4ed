"""What a hand-written ``events.jsonl`` earns a warning for, seen while it is replayed (issue 38): the
genuine failures per service (the shifted-samples check of ``healthy_hosts.csv``,
:func:`ecs_guardrail.replay.healthy_hosts.shifted_samples_warning`) and the times carried by events
the recorder ignored as duplicates (one ``taskArn`` reused for every task).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ecs_guardrail.core.links import resource_name

__all__ = ["EventChecks", "FAILURE_KINDS"]

#: the stop kinds that are genuine failures (a crash, a health-check kill), as the watchdog counts them
FAILURE_KINDS = ("crash", "health_check_kill")
#: at most this many (task, version) pairs of duplicates are remembered (a bound on memory)
_MAX_DUPLICATE_TASKS = 10_000


def _service_of(raw: Any) -> tuple[str, str] | None:
    """``(cluster, service)`` of a service's task event, else None."""
    detail = raw.get("detail") if isinstance(raw, dict) else None
    if not isinstance(detail, dict) or not isinstance(detail.get("clusterArn"), str):
        return None
    group = detail.get("group")
    if not isinstance(group, str) or not group.startswith("service:"):
        return None
    return resource_name(detail["clusterArn"]), group[len("service:"):]


class EventChecks:
    """Fed by the replay: :meth:`stop` for each classified STOPPED event, :meth:`duplicate` for each event
    the recorder ignored as a duplicate. ``failures``: (cluster, service) -> times (UTC) of its genuine
    failures."""

    def __init__(self) -> None:
        self.failures: dict[tuple[str, str], list[datetime]] = {}
        self._duplicate_times: dict[tuple[str, str], set[str]] = {}  # (task ARN, version) -> the times seen

    def stop(self, raw: Any, kind: str) -> None:
        """A STOPPED task event the recorder classified as ``kind``."""
        from ecs_guardrail.replay.clock import event_time

        if kind not in FAILURE_KINDS:
            return
        t, key = event_time(raw), _service_of(raw)
        if t is not None and key is not None:
            self.failures.setdefault(key, []).append(t)

    def duplicate(self, raw: Any) -> None:
        """A task event ignored as a duplicate (the same ``taskArn`` and ``detail.version`` as one recorded):
        its ``time`` is kept per (task, version). EventBridge's redeliveries repeat the first event's
        time; a hand-written file reusing one ``taskArn`` for every task does not."""
        detail = raw.get("detail") if isinstance(raw, dict) else None
        t = raw.get("time") if isinstance(raw, dict) else None
        if not isinstance(detail, dict) or not isinstance(t, str) or not isinstance(detail.get("taskArn"), str):
            return
        key = (detail["taskArn"], str(detail.get("version")))
        if key in self._duplicate_times or len(self._duplicate_times) < _MAX_DUPLICATE_TASKS:
            self._duplicate_times.setdefault(key, set()).add(t)

    def shared_task_warning(self) -> str | None:
        """One line when the duplicates of one task and version carry several times (they are other
        tasks' events under one ``taskArn``), naming the task with the most; else None."""
        if not self._duplicate_times:
            return None
        (arn, _), times = max(self._duplicate_times.items(), key=lambda kv: len(kv[1]))
        if len(times) < 2:
            return None
        return (f"task {arn}: events stamped at {len(times)} different times were ignored as duplicates of its "
                "first (same taskArn and detail.version): ECS gives every task its own taskArn and raises "
                "detail.version with each change (a hand-written file reusing one taskArn?)")
