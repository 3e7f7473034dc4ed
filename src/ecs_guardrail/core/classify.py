"""Stop classification: what stopped a task, and does it count toward a crash loop?

The table is ARCHITECTURE.md's "Stop classification"; the facts behind it are in ECS-EVENTS.md and the
ECS API reference (``Task.stopCode``: TaskFailedToStart, EssentialContainerExited, UserInitiated,
ServiceSchedulerInitiated, SpotInterruption, TerminationNotice, and the newer InfrastructureHealth).
Reason strings are matched on case-insensitive prefixes; the raw text is kept, never parsed for ARNs.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from ecs_guardrail.core.events import TaskDetail

__all__ = ["StopKind", "StopVerdict", "classify_stop", "container_cause", "is_stop_event", "COUNTS_AS_FAILURE"]


class StopKind(StrEnum):
    CRASH = "crash"
    HEALTH_CHECK_KILL = "health_check_kill"
    SPOT = "spot"
    SCHEDULER = "scheduler"
    USER = "user"
    INFRASTRUCTURE = "infrastructure"
    UNKNOWN = "unknown"

    @property
    def counts_as_failure(self) -> bool:
        """Crashes and health-check kills: the stops the crash-loop window and the fleet test count
        (ARCHITECTURE.md, "Stop classification"). The one place this is decided."""
        return self in (StopKind.CRASH, StopKind.HEALTH_CHECK_KILL)


#: kinds the fleet test counts as a service "failing" (crashes and health-check kills)
COUNTS_AS_FAILURE = frozenset(k for k in StopKind if k.counts_as_failure)

_HEALTH_CHECK_PREFIXES = ("task failed elb health checks", "task failed container health checks")
_SPOT_PREFIXES = ("your spot task was interrupted",)
# ServiceSchedulerInitiated stops that are the platform's doing, not a deployment or scale-in
_INFRA_PREFIXES = (
    "ecs is performing maintenance",
    "task is being retired",
    "host ec2",
    "instance is being deregistered",
    "container instance",
)
# causes found in containers[].reason or stoppedReason, most specific first
_CAUSES = (
    "CannotPullContainerError",
    "ResourceInitializationError",
    "CannotStartContainerError",
    "CannotCreateContainerError",
    "CannotInspectContainerError",
    "ContainerRuntimeTimeoutError",
    "ContainerRuntimeError",
    "OutOfMemoryError",
    "InternalError",
    "ResourceNotFoundException",
    "AccessDeniedException",
)


@dataclass(frozen=True, slots=True)
class StopVerdict:
    """One task's classification.

    ``kind`` is the table row; ``cause`` the first recognised error name in the containers' or the
    task's reason (``"OutOfMemoryError"``...), or ``None``; ``exit_codes`` maps container name to its
    exit code (``None`` = unknown, never read as 0); ``final`` says the verdict may be remembered for
    the task ARN (a Spot notice, or any stop with a stop code).
    """

    kind: StopKind
    cause: str | None
    exit_codes: tuple[tuple[str, int | None], ...]
    final: bool

    @property
    def counts_as_crash(self) -> bool:
        return self.kind is StopKind.CRASH


def _starts(text: str | None, prefixes: tuple[str, ...]) -> bool:
    return bool(text) and text.strip().lower().startswith(prefixes)  # type: ignore[union-attr]


def container_cause(detail: TaskDetail) -> str | None:
    """The first known error name in ``containers[].reason`` then ``stoppedReason`` (case-insensitive)."""
    texts = [c.reason for c in detail.containers if c.reason] + [detail.stopped_reason or ""]
    for text in texts:
        low = text.strip().lower()
        for cause in _CAUSES:
            if low.startswith(cause.lower()) or f" {cause.lower()}" in low[:200]:
                return cause
    return None


def is_stop_event(detail: TaskDetail) -> bool:
    """True for any event of a task that is stopping: desired STOPPED, or already STOPPED."""
    return (detail.desired_status or "").upper() == "STOPPED" or detail.last_status.upper() == "STOPPED"


def _is_spot(detail: TaskDetail) -> bool:
    code = (detail.stop_code or "").lower()
    if code == "spotinterruption" or _starts(detail.stopped_reason, _SPOT_PREFIXES):
        return True
    if code == "terminationnotice":
        # TerminationNotice was the name on Spot notices before SpotInterruption; off Spot it is the
        # platform retiring the host.
        return "spot" in (detail.capacity_provider_name or "").lower()
    return False


def classify_stop(detail: TaskDetail) -> StopVerdict:
    """Classify a stopping or stopped task.

    Order matters: Spot markers win (a Spot task's later STOPPED event must never read as a crash),
    then health-check kills (stopCode ServiceSchedulerInitiated, told apart by the reason), then the
    stop code. ``final`` is False for a notice that carries neither a stop code nor a Spot marker:
    the verdict waits for a later event of the same task.
    """
    exit_codes = tuple((c.name or f"container-{i}", c.exit_code) for i, c in enumerate(detail.containers))
    cause = container_cause(detail)
    code = (detail.stop_code or "").strip().lower()
    stopped = detail.last_status.upper() == "STOPPED"

    if _is_spot(detail):
        return StopVerdict(StopKind.SPOT, cause, exit_codes, True)
    if _starts(detail.stopped_reason, _HEALTH_CHECK_PREFIXES):
        return StopVerdict(StopKind.HEALTH_CHECK_KILL, cause, exit_codes, True)
    if code in ("essentialcontainerexited", "taskfailedtostart"):
        return StopVerdict(StopKind.CRASH, cause, exit_codes, True)
    if code == "userinitiated":
        return StopVerdict(StopKind.USER, cause, exit_codes, True)
    if code in ("terminationnotice", "infrastructurehealth"):
        return StopVerdict(StopKind.INFRASTRUCTURE, cause, exit_codes, True)
    if code == "serviceschedulerinitiated":
        if _starts(detail.stopped_reason, _INFRA_PREFIXES):
            return StopVerdict(StopKind.INFRASTRUCTURE, cause, exit_codes, True)
        return StopVerdict(StopKind.SCHEDULER, cause, exit_codes, True)
    # no stop code (old events, notices) or one this version does not know: recorded, surfaced
    return StopVerdict(StopKind.UNKNOWN, cause, exit_codes, stopped)
