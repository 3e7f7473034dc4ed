"""The watchdog's step for ``SERVICE_DEPLOYMENT_FAILED``: one alert per failed deployment (issue 35 item 3).

Called by :meth:`ecs_guardrail.handlers.watchdog.Watchdog.on_deployment` after it noted the event in
the service's summary, for every cluster (alert-only clusters too: alerting is all this step does;
it never changes a service). The recipe:

1. claim the deployment's alert (:class:`~ecs_guardrail.adapters.store.deployment_alerts.DeploymentAlerts`,
   one conditional write): a redelivery or a concurrent invocation finds it ``sent`` and stops, or
   ``busy`` (another invocation's lease runs) and raises :class:`DecisionInProgressError` so Lambda
   retries it later (then it is sent, or taken over from a dead owner);
2. read whether ECS rolls back and to which deployment (DescribeServices, already granted to the
   watchdog on every service; :mod:`ecs_guardrail.core.deployment_failure`); an unreadable service
   says so in the alert and never stops it;
3. send, and mark the claim sent; when no sink took it, give the claim back and count the alert as
   failed (the invocation raises :class:`AlertDeliveryError`: Lambda retries, nothing is lost).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ecs_guardrail.adapters.store.deployment_alerts import DeploymentAlerts
from ecs_guardrail.core.deployment_failure import Rollback, deployment_failed_alert, rollback_target
from ecs_guardrail.core.errors import DecisionInProgressError
from ecs_guardrail.core.lazy import lazy_module
from ecs_guardrail.handlers.runtime import logger, metrics

if TYPE_CHECKING:
    from ecs_guardrail.core import lifecycle as lc
else:  # the episode machine: loaded on first use, not at the watchdog's import (issue 33 item 7)
    lc = lazy_module("ecs_guardrail.core.lifecycle")

if TYPE_CHECKING:
    from ecs_guardrail.core.events import DeploymentStateChange
    from ecs_guardrail.core.summary import ServiceSummary
    from ecs_guardrail.handlers.episode import Episodes

__all__ = ["alert_failed_deployment", "SHIFTING_STRATEGIES"]

#: ``deploymentConfiguration.strategy`` values whose failed deployment returns traffic to the previous revision
SHIFTING_STRATEGIES = frozenset({"BLUE_GREEN", "LINEAR", "CANARY"})


def alert_failed_deployment(episodes: Episodes, event: DeploymentStateChange, ck: str,
                            s: ServiceSummary) -> dict[str, Any]:
    """Send the one alert for the failed deployment of ``event`` (cluster key ``ck``; ``s``: the service's
    summary with the event noted). Returns ``{"deployment_alert": "sent" | "already_sent" | "failed" |
    "no_deployment_id"}`` (the event has no ``deploymentId``) to merge into the handler's outcome.

    Raises:
        DecisionInProgressError: another invocation claimed this deployment's alert and its lease runs
            (Lambda retries the event; the alert is sent once either way).
    """
    rt = episodes.rt
    d = event.detail
    did = getattr(d, "deployment_id", None)
    # ECS always names it; an empty or malformed one was rejected by the event model (core.events), so only
    # an absent one gets here, and it cannot be deduplicated: logged, no alert
    if not did:
        logger.warning("SERVICE_DEPLOYMENT_FAILED without deploymentId: no deployment alert",
                       extra={"cluster": ck, "service": event.service})
        return {"deployment_alert": "no_deployment_id"}
    store = DeploymentAlerts(rt.history.port, rt.settings.HISTORY_TTL_DAYS)
    now = rt.clock()
    got = store.claim(ck, event.service, did, owner=episodes.owner, now=now,
                      lease_until=lc.lease_until(now, episodes.remaining_s), at=event.time)
    if got == "sent":
        return {"deployment_alert": "already_sent"}
    if got == "busy":
        raise DecisionInProgressError(f"{ck}/{event.service}: the alert of failed deployment {did} is being sent "
                                      "by another invocation; retry later")
    rolls_back: bool | None = None
    strategy: str | None = None
    described: tuple[tuple[str, str | None], ...] = ()
    try:
        assert rt.ecs is not None  # the watchdog's runtime always has ECS
        facts = rt.ecs.describe(event.cluster, event.service)
        strategy = facts.deployment_strategy if facts.deployment_strategy in SHIFTING_STRATEGIES else None
        rolls_back = facts.circuit_breaker_rollback or strategy is not None
        described = tuple((x.id, x.rollout_state) for x in facts.deployments)
    except Exception as exc:  # noqa: BLE001 - not found, access denied, throttled: said in the alert, never lost
        logger.warning("DescribeServices unanswered for a failed deployment's alert",
                       extra={"cluster": ck, "service": event.service, "error": str(exc)[:300]})
    target, source = rollback_target(
        did, event.time, ((n.time, n.event_name, n.deployment_id, n.reason) for n in s.deployments), described)
    rollback = Rollback(rolls_back, target if rolls_back is not False else None,
                        source if rolls_back is not False else None, strategy)
    where = episodes.out.place(ck, event.cluster, service=event.service)
    alert = deployment_failed_alert(where, deployment_id=did, reason=d.reason, at=event.time, rollback=rollback,
                                    links=episodes.out.links(where, ()))
    sent = episodes.out.deliver(alert)
    store.finish(ck, event.service, did, owner=episodes.owner, at=event.time, sent=sent)
    metrics.add_metric(name="DeploymentFailedAlerts", unit="Count", value=1)
    if not sent:
        episodes.alerts_failed.append(alert.alert_id)
        return {"deployment_alert": "failed"}
    return {"deployment_alert": "sent"}
