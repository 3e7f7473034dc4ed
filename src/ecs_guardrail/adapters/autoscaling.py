"""Application Auto Scaling: read, suspend and restore an ECS service's scalable target.

A service with a scalable target (``ecs:service:DesiredCount``) has its desired count owned by Application
Auto Scaling: after UpdateService sets 0, MinCapacity, the next scale-out alarm or a scheduled action puts
the tasks back and the loop resumes unseen. Before a scale to 0 the watchdog suspends dynamic scale-in,
dynamic scale-out and scheduled scaling, and ``restore`` puts the previous ``SuspendedState`` back.

API reference: DescribeScalableTargets, RegisterScalableTarget (on an existing target, "any parameters that
you don't specify are not changed": only ``SuspendedState`` is sent, MinCapacity/MaxCapacity stay).
ResourceId ``service/CLUSTER/SERVICE`` (cluster *name*), ServiceNamespace ``ecs``.

Alert-only clusters: RegisterScalableTarget can set MinCapacity/MaxCapacity (0 included), and IAM
cannot deny it per cluster (scalable-target ARNs carry a random id; the service's only condition keys
are ``application-autoscaling:service-namespace`` and ``scalable-dimension``: Service Authorization
Reference, "Actions, resources, and condition keys for AWS Application Auto Scaling"). So every write
here checks ``ALERT_ONLY_CLUSTERS`` first and refuses, before any call, for an alert-only cluster
(:class:`~ecs_guardrail.core.errors.AlertOnlyClusterError`). PutScalingPolicy and PutScheduledAction
are never called (not granted; denied outright where every cluster is alert-only).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from ecs_guardrail.core.clusters import AlertOnlyClusters
from ecs_guardrail.core.entitlement import ALL_SUSPENDED, ScalableTargetFacts, SuspendedState
from ecs_guardrail.core.errors import AlertOnlyClusterError, ScalingSuspendError
from ecs_guardrail.core.links import resource_id_cluster, resource_name
from ecs_guardrail.core.permissions import permissions

__all__ = ["ScalableTargets", "SCALABLE_DIMENSION", "SERVICE_NAMESPACE", "resource_id"]

SERVICE_NAMESPACE = "ecs"
SCALABLE_DIMENSION = "ecs:service:DesiredCount"
_DENIED = ("AccessDeniedException", "AccessDenied", "UnauthorizedOperation")


def resource_id(cluster: str, service: str) -> str:
    """``service/CLUSTER/SERVICE`` from cluster and service names (an ARN is cut to its name)."""
    return f"service/{resource_name(cluster)}/{resource_name(service)}"


def _why(exc: Exception) -> str:
    if isinstance(exc, ClientError):
        err = exc.response.get("Error", {})
        return f"{err.get('Code', 'ClientError')}: {err.get('Message', '')}".rstrip(": ")
    return f"{type(exc).__name__}: {exc}"


class ScalableTargets:
    """Scalable targets of ECS services through an Application Auto Scaling client passed in.

    Permissions: DescribeScalableTargets has no resource-level permission (``any``);
    RegisterScalableTarget is granted on the account's scalable targets (``scalable_target``:
    ``arn:PARTITION:application-autoscaling:REGION:ACCOUNT:scalable-target/*``).
    """

    def __init__(self, client: Any, *, alert_only: AlertOnlyClusters | None) -> None:
        """``alert_only``: the parsed ``ALERT_ONLY_CLUSTERS``; a write for a cluster it matches is refused
        before the call. ``None`` only where the setting is not known (``restore`` run without it: it
        only ever puts back a state the watchdog recorded)."""
        self._aas = client
        self._alert_only = alert_only

    @permissions(any=["application-autoscaling:DescribeScalableTargets"])
    def describe(self, cluster: str, service: str) -> ScalableTargetFacts | None:
        """The service's scalable target (DescribeScalableTargets), or ``None`` when it has none.

        Returns ``MinCapacity``/``MaxCapacity`` (task counts) and ``SuspendedState`` (a missing field is
        False, as the API documents).

        Raises:
            ScalingSuspendError: AccessDeniedException: the watchdog cannot know whether a scalable target
                would undo a scale to 0, so it must not scale.
            botocore.exceptions.ClientError: anything else (throttling is retried by the client first).
        """
        rid = resource_id(cluster, service)
        try:
            resp = self._aas.describe_scalable_targets(ServiceNamespace=SERVICE_NAMESPACE, ResourceIds=[rid],
                                                       ScalableDimension=SCALABLE_DIMENSION)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in _DENIED:
                raise ScalingSuspendError(f"{rid}: cannot read the scalable target ({_why(exc)})") from exc
            raise
        for t in resp.get("ScalableTargets") or []:
            if t.get("ResourceId") == rid and t.get("ScalableDimension", SCALABLE_DIMENSION) == SCALABLE_DIMENSION:
                return ScalableTargetFacts(resource_id=rid, min_capacity=int(t.get("MinCapacity", 0)),
                                           max_capacity=int(t.get("MaxCapacity", 0)),
                                           suspended=SuspendedState.from_api(t.get("SuspendedState")))
        return None

    @permissions(scalable_target=["application-autoscaling:RegisterScalableTarget"])
    def _register(self, rid: str, state: SuspendedState) -> None:
        """RegisterScalableTarget with ``SuspendedState`` only; refused for an alert-only cluster.

        Raises:
            AlertOnlyClusterError: the cluster of ``rid`` (``service/CLUSTER/SERVICE``) is alert-only;
                no call was made.
        """
        cluster = resource_id_cluster(rid)
        if self._alert_only is not None and self._alert_only.matches(cluster):
            raise AlertOnlyClusterError(f"{rid}: cluster {cluster} is alert-only (ALERT_ONLY_CLUSTERS="
                                        f"{self._alert_only.describe()}); RegisterScalableTarget refused, not "
                                        f"called")
        self._aas.register_scalable_target(ServiceNamespace=SERVICE_NAMESPACE, ResourceId=rid,
                                           ScalableDimension=SCALABLE_DIMENSION, SuspendedState=state.to_api())

    def suspend(self, facts: ScalableTargetFacts) -> SuspendedState:
        """Suspend dynamic scale-in, dynamic scale-out and scheduled scaling (RegisterScalableTarget).

        Idempotent: no call when ``facts.suspended`` is already all true. Record the returned state with
        the decision *before* calling (it is ``facts.suspended``) so ``restore`` can put it back.

        Returns:
            the previous ``SuspendedState`` (``facts.suspended``).

        Raises:
            AlertOnlyClusterError: the cluster is alert-only: refused before any call.
            ScalingSuspendError: RegisterScalableTarget failed (any AWS or connection error, after the
                client's retries); ``reason`` names the target and the error. Do not scale: alert.
        """
        previous = facts.suspended
        if previous.all_suspended:
            return previous
        try:
            self._register(facts.resource_id, ALL_SUSPENDED)
        except (ClientError, BotoCoreError) as exc:
            raise ScalingSuspendError(f"{facts.resource_id}: RegisterScalableTarget could not suspend scaling "
                                      f"({_why(exc)}); the service was not scaled to 0") from exc
        return previous

    def restore_suspended(self, cluster: str, service: str,
                          previous: SuspendedState | Mapping[str, Any]) -> bool:
        """Put the scalable target's previous ``SuspendedState`` back (the API shape is accepted too).

        Reads the target first and changes only what differs: no call when it is gone (deregistered since)
        or already in ``previous``. Returns True when RegisterScalableTarget ran.

        Raises:
            AlertOnlyClusterError: the cluster is alert-only and the state differs: refused, not called.
            botocore.exceptions.ClientError: DescribeScalableTargets or RegisterScalableTarget failed.
        """
        want = previous if isinstance(previous, SuspendedState) else SuspendedState.from_api(previous)
        current = self.describe(cluster, service)
        if current is None or current.suspended == want:
            return False
        self._register(current.resource_id, want)
        return True
