"""The replay's embedded ECS during a rolling deployment (issue 35 item 2): what DescribeServices'
``deployments[]`` holds beside the PRIMARY while a scenario's deployment runs.

In AWS, a rolling deployment (``deploymentController`` ``ECS``) keeps the deployment it replaces in
``deployments[]`` with ``status`` ``ACTIVE`` (ECS API reference, ``Deployment.status``: a deployment that
still has running tasks, in the process of being replaced with a new PRIMARY deployment) until the new
PRIMARY's rollout completes; with the circuit breaker's ``rollback``, a failed deployment is rolled back
"to the last deployment that completed successfully" (ECS API reference, ``DeploymentCircuitBreaker``),
the one that was ACTIVE. A scenario holds no DescribeServices answers, so
:class:`DeploymentsFromEvents` derives the ACTIVE entry from the events the replay feeds:

- ``SERVICE_DEPLOYMENT_IN_PROGRESS`` (ECS Deployment State Change) for a service: an ACTIVE deployment
  whose ``taskDefinition`` is the last ``taskDefinitionArn`` seen in that service's task events (ECS
  Task State Change, ``group`` ``service:NAME``) before the event, ``rolloutState`` ``COMPLETED``;
  none when no task of the service was seen yet;
- ``SERVICE_DEPLOYMENT_COMPLETED``: the ACTIVE entry goes (only the PRIMARY stays);
- ``SERVICE_DEPLOYMENT_FAILED``: the ACTIVE entry stays (with rollback it is the deployment ECS rolls
  back to; without, the old tasks keep running beside the failed ones).

Deliberately narrow, so that everything else the replay prints stays as it was: the PRIMARY entry is
left as the fleet build made it (the watchdog's rule 4 reads its ``rolloutState``), the ACTIVE entry is
``createdAt``/``updatedAt`` :data:`~ecs_guardrail.replay.memory_aws.FLEET_EPOCH` (made before the scenario's
history) and ListServiceDeployments does not list it (:func:`~ecs_guardrail.replay.memory_aws.
service_deployments_of` leaves ACTIVE entries out). What reads it is the decision alert's ``Change:``
line (:mod:`ecs_guardrail.handlers.crash_context`), which names the revision before.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ecs_guardrail.core.links import resource_name

__all__ = ["DeploymentsFromEvents", "active_deployment", "replace_active", "ACTIVE"]

#: DescribeServices ``deployments[].status`` of the deployment being replaced
ACTIVE = "ACTIVE"
_OPENS = "SERVICE_DEPLOYMENT_IN_PROGRESS"
_CLOSES = "SERVICE_DEPLOYMENT_COMPLETED"
_UNSEEN: Any = object()


def active_deployment(cluster: str, service: str, task_definition: str) -> dict[str, Any]:
    """The ACTIVE ``deployments[]`` entry for ``task_definition`` (a task definition ARN): an ID
    ``ecs-svc/`` and 19 digits made from the names and the ARN (never the PRIMARY's), task counts 0 (a
    scenario does not say how many old tasks still run; nothing reads them), rollout ``COMPLETED`` at
    :data:`~ecs_guardrail.replay.memory_aws.FLEET_EPOCH`."""
    from ecs_guardrail.replay.memory_aws import FLEET_EPOCH

    digest = hashlib.sha256(f"{cluster}/{service}/{task_definition}".encode()).digest()
    did = f"ecs-svc/{int.from_bytes(digest[:8], 'big') % 10**19:019d}"
    return {"id": did, "status": ACTIVE, "taskDefinition": task_definition, "desiredCount": 0,
            "pendingCount": 0, "runningCount": 0, "failedTasks": 0, "rolloutState": "COMPLETED",
            "rolloutStateReason": f"ECS deployment {did} completed.", "createdAt": FLEET_EPOCH,
            "updatedAt": FLEET_EPOCH}


class DeploymentsFromEvents:
    """Follows the events a replay feeds, one at a time (:meth:`saw`), for one account and region.

    ``saw(raw)`` returns ``(cluster, service, entry)`` when the service's ACTIVE deployment changes:
    ``entry`` the new ACTIVE ``deployments[]`` entry (:func:`active_deployment`) or ``None`` (removed);
    ``None`` when nothing changes. Events of another account or region, and anything not shaped as an
    ECS event, change nothing (the replay rejects or warns about them elsewhere).
    """

    def __init__(self, account: str, region: str) -> None:
        self.account = account
        self.region = region
        self._last: dict[tuple[str, str], str] = {}  # (cluster, service) -> newest taskDefinitionArn seen
        self._active: dict[tuple[str, str], str | None] = {}
        #: (detail.clusterArn, detail.group) of a service's task event -> its (cluster, service), worked out once
        self._service_of: dict[tuple[str, str], tuple[str, str] | None] = {}

    def saw(self, raw: Any) -> tuple[str, str, dict[str, Any] | None] | None:
        if not isinstance(raw, dict) or raw.get("account") != self.account or raw.get("region") != self.region:
            return None
        detail = raw.get("detail")
        if not isinstance(detail, dict):
            return None
        kind = raw.get("detail-type")
        if kind == "ECS Task State Change":
            group, cluster, td = detail.get("group"), detail.get("clusterArn"), detail.get("taskDefinitionArn")
            if not isinstance(td, str) or not td or type(cluster) is not str or type(group) is not str:
                if isinstance(group, str) and group.startswith("service:") and isinstance(cluster, str) \
                        and isinstance(td, str) and td:  # str subclasses: not kept in _service_of
                    self._last[(resource_name(cluster), group.split(":", 1)[1])] = td
                return None
            key = self._service_of.get((cluster, group), _UNSEEN)
            if key is _UNSEEN:
                key = self._service_of[(cluster, group)] = (
                    (resource_name(cluster), group.split(":", 1)[1]) if group.startswith("service:") else None)
            if key is None:  # a standalone task (group family:...)
                return None
            self._last[key] = td
            return None
        if kind != "ECS Deployment State Change":
            return None
        resources = raw.get("resources")
        if not isinstance(resources, list) or not resources or not isinstance(resources[0], str) \
                or ":service/" not in resources[0]:
            return None
        parts = resources[0].split(":service/", 1)[1].split("/")
        if len(parts) < 2:
            return None
        key = (parts[0], parts[-1])
        name = detail.get("eventName")
        if name == _OPENS:
            before = self._last.get(key)
            if before is None or self._active.get(key) == before:
                return None
            self._active[key] = before
            return key[0], key[1], active_deployment(key[0], key[1], before)
        if name == _CLOSES and self._active.get(key) is not None:
            self._active[key] = None
            return key[0], key[1], None
        return None


def replace_active(deployments: list[dict[str, Any]], entry: dict[str, Any] | None) -> list[dict[str, Any]]:
    """``deployments`` without its ACTIVE entries, then ``entry`` (when given) after the PRIMARY."""
    kept = [d for d in deployments if d.get("status") != ACTIVE]
    return kept + ([entry] if entry is not None else [])
