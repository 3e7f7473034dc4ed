"""The sweep function: the crash path's own lane (issue 32 item 3; ARCHITECTURE.md, "Scale").

The watchdog's code in a second Lambda function (``NAME-sweep``) that takes only:

- the one-minute schedule (``AvailabilityScheduleRule``'s ``sweep`` target): due probes, owed
  recoveries, quiet windows ending on time, job summaries (:mod:`ecs_guardrail.handlers.sweep`);
- the sampler's container-restart observations (``SweepRule``: ``source`` ``ecs-guardrail``,
  ``detail-type`` ``Container Restarts``, this account only; ``routing.PATTERNS["sweep"]``).

Why a function and not a second queue in front of the watchdog: EventBridge invokes Lambda
asynchronously, and each function has its own asynchronous event queue and its own reserved
concurrency. A storm's thousands of task events wait in the *watchdog's* queue for its reserved slots;
the sweep and the restart observations sit in this function's queue and take this function's slots
(:data:`RESERVED_CONCURRENCY`), so they are never behind that backlog. No SQS queue, no event source
mapping, no new call: the same code, the same calls, a role granting the same actions (its own log
group), the same on-failure destination and alarms as the other functions.

Both functions write the same table through the same leases and conditional writes, so a sweep
racing the watchdog on one service decides nothing twice (ARCHITECTURE.md, "Watchdog state"). The
watchdog still runs a scheduled event it is given (a stack updated from a version whose schedule
targeted the watchdog), so nothing is lost while the update rolls out.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ecs_guardrail.handlers import watchdog
from ecs_guardrail.handlers.runtime import Runtime, lambda_runtime, logger, metrics, report_unmatched_alert_only

__all__ = ["handler", "invoke", "is_scheduled", "USES", "RESERVED_CONCURRENCY"]

#: the units whose AWS calls this function makes: the watchdog's (the sweep and a restart observation's
#: decision run the watchdog's code); ecs_guardrail.iam.handler_permissions unions their @permissions
USES = dict(watchdog.USES)

#: reserved concurrency of the sweep function (template.yaml SweepFunction, terraform functions.sweep):
#: one slot for the sweep (one run a minute, its timeout 60 s) and one for restart observations, so the
#: two never wait for each other either; 0 reserved anywhere when WatchdogReservedConcurrency is 0
RESERVED_CONCURRENCY = 2


def is_scheduled(event: Any) -> bool:
    """Is ``event`` EventBridge's scheduled event (``source`` ``aws.events``, ``detail-type``
    ``Scheduled Event``; EventBridge User Guide, "Scheduled events")?"""
    return isinstance(event, dict) and event.get("detail-type") == "Scheduled Event" \
        and event.get("source") == "aws.events"


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: Any, context: Any) -> dict[str, Any]:
    """Lambda entry point of the sweep function: a scheduled event runs the sweep
    (:func:`~ecs_guardrail.handlers.sweep.run_sweep` at the schedule's time); anything else goes through
    :func:`~ecs_guardrail.handlers.watchdog.invoke` as the watchdog would take it (a restart
    observation is filed and evaluated; malformed input is rejected with its reason and kept).

    Raises:
        SettingsError: an invalid setting; nothing is decided (the event goes to the retry / DLQ path).
        AlertDeliveryError, DecisionInProgressError, LeaseLostError: see
            :func:`~ecs_guardrail.handlers.watchdog.invoke` (retried by Lambda).
    """
    rt = lambda_runtime("watchdog", watchdog.home_of(context))
    report_unmatched_alert_only(rt)
    return invoke(event, rt, context)


def invoke(event: Any, rt: Runtime, context: Any = None) -> dict[str, Any]:
    """What :func:`handler` does with one event over ``rt`` (tests and the lane model call it): the
    sweep at the schedule's time, or :func:`~ecs_guardrail.handlers.watchdog.invoke` delivered at
    ``rt.clock()``. Raises as :func:`handler`."""
    if is_scheduled(event):
        from ecs_guardrail.handlers.sweep import run_sweep, scheduled_now

        return run_sweep(rt, scheduled_now(event, rt.clock), context)
    metrics.add_metric(name="RestartObservationsReceived", unit="Count", value=1)
    return watchdog.invoke(event, rt, context, delivered_at=datetime.fromtimestamp(rt.clock(), UTC))
