"""The performer of :class:`~ecs_guardrail.core.lifecycle.RestoreService`: put a held service back, the desired
count and then the scalable target's previous ``SuspendedState``.

One performer for both restores: the operator's ``restore`` (:mod:`ecs_guardrail.app.restore`) and a probe
that passed (:mod:`ecs_guardrail.handlers.probe`). It declares the AWS actions it needs (``@performs``:
ecs:UpdateService and ecs:UntagResource on the service, application-autoscaling:DescribeScalableTargets and
RegisterScalableTarget), and turns Application Auto Scaling's refusal into a result that names the error code,
so the caller says what is left instead of failing on an unexplained ``ClientError``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from botocore.exceptions import ClientError
from msgspec import Struct

from ecs_guardrail.adapters.autoscaling import ScalableTargets
from ecs_guardrail.adapters.ecs import EcsService, ServiceFacts
from ecs_guardrail.core.errors import RestoreError, ScalingSuspendError
from ecs_guardrail.core.permissions import performs

__all__ = ["Restoration", "perform_restore"]


class Restoration(Struct, frozen=True):
    """What :func:`perform_restore` did: ``changed``, UpdateService ran (the count differed);
    ``scaling_restored``, RegisterScalableTarget put the previous ``SuspendedState`` back; ``scaling_error``,
    why it could not (the AWS error code, or the adapter's reason), else ``None``."""

    changed: bool
    scaling_restored: bool = False
    scaling_error: str | None = None

    def check(self, done: str) -> None:
        """Raise when the scalable target's scaling could not be resumed; ``done`` says what was restored.

        Raises:
            RestoreError: the count is back, the scaling is not (the episode stays held: restore again).
        """
        if self.scaling_error is not None:
            raise RestoreError(f"{done}; but its scalable target's scaling could not be resumed "
                               f"({self.scaling_error}): run restore again or set SuspendedState by hand")


@performs(EcsService.restore, ScalableTargets.describe, ScalableTargets._register)
def perform_restore(ecs: EcsService, scaling: ScalableTargets | None, cluster: str, service: str,
                    facts: ServiceFacts, desired_count: int,
                    previous_suspended: Mapping[str, Any] | None) -> Restoration:
    """Set ``service`` of ``cluster`` (``facts``: its DescribeServices answer) back to ``desired_count``
    tasks (UpdateService, and drop the watchdog's tag), then, with ``scaling`` and a recorded
    ``previous_suspended`` (API shape, ``{"DynamicScalingInSuspended": bool, ...}``), put the scalable
    target's previous ``SuspendedState`` back. Idempotent: a count or a state already in place is not set
    again.

    Raises:
        ServiceNotFoundError: the service is gone (from UpdateService).
    """
    changed = ecs.restore(facts, desired_count)
    if scaling is None or previous_suspended is None:
        return Restoration(changed)
    try:
        return Restoration(changed, scaling.restore_suspended(cluster, service, previous_suspended))
    except (ClientError, ScalingSuspendError) as exc:
        code = exc.response.get("Error", {}).get("Code") if isinstance(exc, ClientError) else exc.reason
        return Restoration(changed, scaling_error=str(code))
