"""A service whose own stored summary cannot be read (:class:`~ecs_guardrail.core.errors.UnreadableSummaryError`):
what the watchdog and the sweep say about it (docs/runbook.md, "A corrupt service summary").

The watchdog decides nothing for that service while its summary is unreadable (never a decision on a
guess of its counts or of its episode): each of its events fails, naming the item and the operator's
repair, so Lambda retries it and then keeps it in the function failure queue (whose alarm notifies the
alert topic); the recorder has kept the event in the history table either way. Other services of the
cluster decide as before (the cluster's view skips the item; its held-at-zero slot still counts), and
the scheduled sweep logs the item and goes on with the rest of its index.
"""

from __future__ import annotations

from typing import Any

from ecs_guardrail.core.errors import UnreadableSummaryError
from ecs_guardrail.handlers.runtime import logger, metrics

__all__ = ["report_unreadable", "with_repair"]


def report_unreadable(rt: Any, exc: UnreadableSummaryError, by: str) -> str:
    """Log ``exc`` as an error with the item's key and its repair (:meth:`UnreadableSummaryError.repair`
    over ``rt``'s history table), count it (metric ``UnreadableSummaries``, a count) and return the repair.
    ``by``: who read it (``watchdog``, ``sweep``)."""
    repair = exc.repair(rt.history.table, rt.history.region)
    metrics.add_metric(name="UnreadableSummaries", unit="Count", value=1)
    logger.error("stored service summary unreadable: nothing is decided for this service until an operator "
                 "repairs the item", extra={"item": f"{exc.pk} {exc.sk}", "error": str(exc), "repair": repair,
                                             "by": by})
    return repair


def with_repair(exc: UnreadableSummaryError, repair: str) -> UnreadableSummaryError:
    """``exc`` again with its repair in its message (what the function failure queue's record keeps as
    the error message), the same item key."""
    return UnreadableSummaryError(f"{exc}; {repair}", exc.pk, exc.sk)
