"""The watchdog's inputs to a decision, composed from what the adapters read (pure).

- :func:`failure_of`: a stopped task as the :class:`~ecs_guardrail.core.records.Failure` its summary files;
- :func:`file_restarts`: a sampler's restart observation filed one restart at a time, as stops are;
- :func:`open_episode_key`: which open episode a summary holds, to tell another invocation's claim from a
  write that claimed nothing;
- :func:`entitle`: rule 4 over the facts gathered once per decision (DescribeServices' fields, the
  scalable target, serving evidence, ListServiceDeployments), as the typed
  :class:`~ecs_guardrail.core.policy.Entitlement` :func:`~ecs_guardrail.core.policy.decide` takes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from ecs_guardrail.core.classify import StopKind
from ecs_guardrail.core.entitlement import DeploymentEvent, EntitlementFacts, ScalableTargetFacts, entitlement
from ecs_guardrail.core.events import TaskStateChange
from ecs_guardrail.core.policy import Entitlement, Reason
from ecs_guardrail.core.records import Failure, TriggerKind
from ecs_guardrail.core.summary import ServiceSummary, file_service_failure

__all__ = ["failure_of", "file_restarts", "entitle", "open_episode_key"]


def failure_of(event: TaskStateChange, kind: StopKind, cause: str | None,
               exit_codes: tuple[tuple[str, int | None], ...], service: str) -> Failure:
    """The failure an ``ECS Task State Change`` (STOPPED) files for ``service`` (a service name, or
    ``family:NAME`` for a standalone job): its event time, task ARN, Availability Zone, stop code,
    ``stoppedReason``, classified ``kind`` and ``cause``, and the containers' exit codes."""
    d = event.detail
    return Failure(service=service, time=event.time, kind=kind, task_arn=d.task_arn,
                   availability_zone=d.availability_zone, stop_code=d.stop_code, reason=d.stopped_reason,
                   cause=cause, exit_codes=exit_codes, task_definition_arn=d.task_definition_arn)


def file_restarts(s: ServiceSummary, failures: Iterable[Failure], keep: int, window: timedelta, *, edge: int,
                  horizon: timedelta, filed: list[Failure]) -> ServiceSummary | None:
    """File each restart of ``failures`` in summary ``s`` as a stop is filed
    (:func:`~ecs_guardrail.core.summary.file_service_failure`); ``filed`` is set to those it took.
    Returns the new summary, or ``None`` when it took none (all already filed)."""
    out = None
    filed.clear()
    for f in failures:
        step = file_service_failure(out or s, f, keep, window, edge=edge, horizon=horizon)
        if step is not None:
            out = step
            filed.append(f)
    return out


def entitle(kind: TriggerKind, at: datetime, *, cluster: str, s: ServiceSummary, fields: Mapping[str, Any] | None,
            why: str | None, denied: bool, serving: tuple[Any, ...], service_deployments: Any,
            alert_only_cluster: bool, alert_only_patterns: tuple[str, ...], elsewhere: str | None, dry_run: bool,
            scalable: ScalableTargetFacts | None) -> Entitlement:
    """Rule 4 (:func:`~ecs_guardrail.core.entitlement.entitlement`) for a trigger of ``kind`` at ``at``.

    ``fields``: DescribeServices' answer as ``EntitlementFacts`` keywords (``None``: not read; ``why``
    says why, ``denied`` whether ECS refused it); ``serving``: serving samples; ``service_deployments``:
    ListServiceDeployments' answer (``None``: not read); ``elsewhere``: "account A, region R" of a
    cluster not at home. An entitlement that is refused carries the rule's reason, message and
    evidence (with ``ecs``: why the service was unreadable, when it was)."""
    base = dict(fields) if fields is not None else {"exists": False, "access_denied": denied}
    ef = EntitlementFacts(
        cluster=cluster, service=s.service, **base,
        deployment_events=tuple(DeploymentEvent(n.time, n.event_name, n.deployment_id, n.reason)
                                for n in s.deployments),
        serving=serving, service_deployments=service_deployments, alert_only_cluster=alert_only_cluster,
        alert_only_patterns=alert_only_patterns, elsewhere=elsewhere, dry_run=dry_run, scalable_target=scalable,
    )
    v = entitlement(kind, ef, at)
    if v.entitled:
        return Entitlement()
    evidence = dict(v.evidence)
    if why and fields is None:
        evidence.setdefault("ecs", why)
    return Entitlement(Reason(v.reason.value), v.message, evidence)


def open_episode_key(s: ServiceSummary) -> tuple[Any, ...] | None:
    """The identity of the episode ``s`` holds open (decision time, last evaluation, action, reason,
    escalated), or ``None`` when none is open (no episode, or it ended). Two reads of one service with
    different keys mean another invocation decided between them."""
    e = s.episode
    return None if e is None or s.episode_end is not None else (
        e.decision_time, e.last_evaluation, e.action, e.reason, e.escalated)
