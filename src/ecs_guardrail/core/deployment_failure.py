"""A failed deployment is news on its own (issue 35 item 3; ARCHITECTURE.md, "What on-call reads").

``SERVICE_DEPLOYMENT_FAILED`` (an ``ECS Deployment State Change``, ``eventType`` ERROR) means the
deployment circuit breaker tripped for deployment ``detail.deploymentId`` (ECS Developer Guide,
"Amazon ECS deployment state change events" and "How the Amazon ECS deployment circuit breaker
detects failures"). It sends one alert per deployment, whether or not a loop crossed the threshold;
this module says what the alert says (pure: no I/O).

What the event carries: ``deploymentId`` (``ecs-svc/...``), ``reason`` (ECS's words: "ECS deployment
circuit breaker: task failed to start.") and the service ARN in ``resources[0]``; it does NOT say
whether ECS rolls back, nor to which deployment. Those come from:

- whether ECS rolls back: DescribeServices
  ``deploymentConfiguration.deploymentCircuitBreaker.rollback`` (the service's configuration now), or
  a ``BLUE_GREEN``, ``LINEAR`` or ``CANARY`` ``deploymentConfiguration.strategy`` (ECS keeps the previous
  revision's tasks until such a deployment succeeds and returns traffic to them when it fails:
  ECS-EVENTS.md, "Deployments"); ``None`` when DescribeServices did not answer;
- to which deployment, in this order: the ``SERVICE_DEPLOYMENT_IN_PROGRESS`` event ECS sends for the
  rollback, whose reason is "ECS deployment circuit breaker: rolling back to deploymentId ID." (when
  the watchdog already holds it: events can arrive out of order); else the newest deployment the
  service's summary noted as ``SERVICE_DEPLOYMENT_COMPLETED`` before the failure (the circuit breaker
  rolls back to the last deployment that completed); else DescribeServices ``deployments[]``, when
  it lists the failed deployment (an answer that does not is about another moment of the service):
  one other than the failed deployment whose ``rolloutState`` is COMPLETED; else unknown (said so:
  ECS names it in the rollback's own ``SERVICE_DEPLOYMENT_IN_PROGRESS`` event).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from msgspec import Struct

from ecs_guardrail.core import links as L
from ecs_guardrail.core.alert import Alert, Where, _cut, _make
from ecs_guardrail.core.enum_text import ascii_upper
from ecs_guardrail.core.events import is_deployment_id
from ecs_guardrail.core.lazy import lazy_callable, lazy_pattern
from ecs_guardrail.core.records import iso

if TYPE_CHECKING:
    from ecs_guardrail.core.crash_words import mask
else:  # loaded on the first failed deployment's alert (issue 33 item 7)
    mask = lazy_callable("ecs_guardrail.core.crash_words", "mask", globals())

__all__ = ["DEPLOYMENT_FAILED", "Rollback", "rollback_target", "deployment_failed_alert", "rolled_back_to"]

#: ``detail.eventName`` of the deployment state change the circuit breaker sends when it trips
DEPLOYMENT_FAILED = "SERVICE_DEPLOYMENT_FAILED"
#: ECS's reason on the rollback's ``SERVICE_DEPLOYMENT_IN_PROGRESS`` (ECS-EVENTS.md; sample
#: ``deployment-in-progress-circuit-breaker-rollback.docs.json``); the word after it is the id only when
#: it passes ``detail.deploymentId``'s own rule (:func:`ecs_guardrail.core.events.is_deployment_id`)
_ROLLING_BACK = lazy_pattern(r"rolling back to deploymentId\s+(?P<id>\S{1,80})")
#: the longest deployment failure reason quoted (ECS's reasons are one sentence; a longer one is cut)
REASON_MAX = 500


def rolled_back_to(reason: str | None) -> str | None:
    """The deployment id in ECS's "rolling back to deploymentId ID." reason (its closing full stop
    dropped), else ``None``: ``None`` too when the word there is not a deployment id as ``detail.deploymentId``
    must be (``ecs-svc/`` and at most 64 ASCII letters or digits, :func:`is_deployment_id`): the reason is
    free text, and the id reaches alert text, an alert's id and the ``Rollback to`` field."""
    if not reason:
        return None
    m = _ROLLING_BACK.search(reason)
    if m is None:
        return None
    target = m.group("id").rstrip(".")
    return target if is_deployment_id(target) else None


class Rollback(Struct, frozen=True):
    """What ECS does after a failed deployment.

    ``rolls_back``: DescribeServices ``deploymentCircuitBreaker.rollback`` (``None``: not known, the
    service could not be read); ``target``: the deployment id ECS rolls back to (``None``: not known
    yet); ``source``: where ``target`` came from (``event``, ``completed_event``, ``describe_services``)
    or ``None``.
    """

    rolls_back: bool | None
    target: str | None = None
    source: str | None = None
    #: DescribeServices ``deploymentConfiguration.strategy`` when it is not ROLLING (BLUE_GREEN, LINEAR,
    #: CANARY keep the previous revision's tasks and return traffic to them when the deployment fails)
    strategy: str | None = None


def rollback_target(failed_id: str | None, at: datetime, notes: Iterable[tuple[datetime, str, str | None, str | None]],
                    describe_deployments: Iterable[tuple[str, str | None]] = ()) -> tuple[str | None, str | None]:
    """The deployment ECS rolls back to, and where that came from (module docstring's order).

    ``notes``: the service's noted deployment events as ``(time, eventName, deploymentId, reason)``;
    ``describe_deployments``: DescribeServices ``deployments[]`` as ``(id, rolloutState)``. Returns
    ``(id, source)`` or ``(None, None)``.
    """
    notes = sorted(notes, key=lambda n: n[0])
    for _, name, _did, reason in notes:
        target = rolled_back_to(reason) if name == "SERVICE_DEPLOYMENT_IN_PROGRESS" else None
        if target is not None and target != failed_id:
            return target, "event"
    done = [did for t, name, did, _ in notes
            if name == "SERVICE_DEPLOYMENT_COMPLETED" and did and did != failed_id and t <= at]
    if done:
        return done[-1], "completed_event"
    listed = tuple(describe_deployments)
    if failed_id is not None and any(did == failed_id for did, _ in listed):  # an answer about this failure
        for did, state in listed:
            if did and did != failed_id and ascii_upper(state or "") == "COMPLETED":
                return did, "describe_services"
    return None, None


def deployment_failed_alert(where: Where, *, deployment_id: str, reason: str | None, at: datetime,
                            rollback: Rollback, links: tuple[L.Link, ...] = ()) -> Alert:
    """The alert for deployment ``deployment_id`` of ``where`` (cluster and service) that failed at
    event time ``at`` (kind ``deployment_failed``, alert id ``deployment_failed:<account/region/>
    cluster/service/deploymentId``, the same on every repeat). ``reason`` is ECS's text, quoted as
    every stop reason is (escaped for Slack mrkdwn by the renderers: no mention, no hidden link)."""
    at_s = f"{where.cluster}/{where.service}"
    deployment_id = _cut(deployment_id, 200)  # ECS's ids are ~30 characters; a forged one is cut
    # masked as a stop reason is (a credential ECS's words quote), before the cut
    why = _cut(mask(" ".join((reason or "no reason given").split())), REASON_MAX)
    if rollback.rolls_back is True:
        to = (f"to deployment {rollback.target}" if rollback.target
              else "to the last deployment that completed (ECS names it in its next deployment event)")
        why_back = (f"a {rollback.strategy} deployment keeps the previous revision's tasks and returns traffic to "
                    "them" if rollback.strategy else "the circuit breaker's rollback is on")
        what = f"ECS rolls back {to}: {why_back}."
        rolls = "yes"
    elif rollback.rolls_back is False:
        what = ("ECS does not roll back (the circuit breaker's rollback is off): the service stays on the failed "
                "deployment until someone deploys a fix or the previous revision.")
        rolls = "no"
    else:
        what = "Whether ECS rolls back is not known: DescribeServices did not answer."
        rolls = "unknown"
    title = f"deployment failed: {at_s}"
    header = f":rotating_light: DEPLOYMENT FAILED: {at_s}"
    summary = (f"The deployment circuit breaker stopped deployment {deployment_id} at {at:%Y-%m-%d %H:%M:%S}Z. "
               f"{what} The watchdog takes no action for this event.")
    fields = {"Cluster": where.cluster, "Service": where.service or "", "Deployment": deployment_id,
              "ECS reason": why, "Rolls back": rolls}
    if rollback.target:
        fields["Rollback to"] = rollback.target
    head = f"{where.account}/{where.region}/" if where.account and where.region else ""
    return _make("deployment_failed", title, header, summary, fields, [], links, where,
                 {"cluster": where.cluster, "service": where.service, "action": "alert_only",
                  "reason": "deployment_failed", "time": iso(at), "deployment_id": deployment_id,
                  "ecs_reason": why, "rolls_back": rollback.rolls_back, "rollback_to": rollback.target,
                  "rollback_source": rollback.source, "strategy": rollback.strategy},
                 at, ("deployment_failed",), subject_id=f"{head}{at_s}/{deployment_id}")
