"""Whether a redelivered stop must be counted in the fleet minutes again (issue 32, a storm with
throttled table writes).

The watchdog files a failure in the service's summary (one conditional write), then counts it in its
fleet minute (:meth:`~ecs_guardrail.adapters.store.watchdog_state.WatchdogState.count_failures`, a
set ADD: idempotent). When the count's write is throttled, Lambda delivers the event again; by then
the summary may no longer show the failure in its rings (they keep the ``CRASH_THRESHOLD`` newest of
each kind, and a storm's newer failures push it out), so the count would be lost for good. The
summary's ``recent`` (the newest :data:`~ecs_guardrail.core.summary.RECENT_TASKS_KEPT` filings) still
names it: a task the summary filed, and no Spot or termination notice took back, is counted again
(a member already in the set changes nothing).
"""

from __future__ import annotations

from ecs_guardrail.core.records import Failure
from ecs_guardrail.core.summary import ServiceSummary

__all__ = ["count_again"]


def count_again(summary: ServiceSummary, failure: Failure) -> bool:
    """Is ``failure`` (a redelivery: the summary write changed nothing) one the summary filed, so its
    fleet-minute member belongs in its minute? True when it is in a ring, or among the summary's
    recent filings (the last 8 characters of its task id, as the summary keeps them) and not taken
    back by a Spot or termination notice of the same task."""
    if failure in summary.crashes + summary.kills:
        return True
    tid = failure.task_arn.rsplit("/", 1)[-1]
    if any(t.rsplit("/", 1)[-1] == tid for t, _ in summary.spot):
        return False
    return tid[-8:] in summary.recent
