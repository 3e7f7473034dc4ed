"""Restart-policy loops (ARCHITECTURE.md, "Restart-policy loops"): container restarts as failures.

A container restart policy restarts an exited container inside its RUNNING task and the ECS agent
reports no state change (amazon-ecs-agent, ``agent/engine/task_manager.go``, ``handleContainerChange``),
so no event shows such a loop. Container Insights publishes the service's container restart count
(``ECS/ContainerInsights`` ``RestartCount``, dimensions ``ClusterName`` + ``ServiceName``, a running
total; a drop is a task replaced). The sampler reads it each minute; each restart becomes one
:class:`~ecs_guardrail.core.records.Failure` of kind ``CRASH`` marked :data:`RESTART_CAUSE`, so the
crash-loop window and the fleet test count it (a cluster-wide restart storm is one hold), and
:func:`ecs_guardrail.core.policy.detect` gives a ``restart_loop`` trigger (never a ``crash_loop``)
when restarts make up the threshold: always ``alert_only`` (a restart pulls no image, and the task
keeps its place and its other containers, so a scale to 0 would only remove capacity).

Pure functions: no I/O, no clock.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from msgspec import Struct

from ecs_guardrail.core.classify import StopKind
from ecs_guardrail.core.links import resource_name
from ecs_guardrail.core.records import Failure

__all__ = ["RESTART_CAUSE", "RESTART_STOP_CODE", "is_restart", "restart_increments", "restart_failures",
           "RestartObservation", "OBSERVATION_SOURCE", "OBSERVATION_TYPE"]

#: ``Failure.cause`` of a container restart (no ECS stop code or error name is ever this)
RESTART_CAUSE = "ContainerRestart"
#: ``Failure.stop_code`` of a container restart: the task did not stop
RESTART_STOP_CODE = "RestartPolicy"


def is_restart(failure: Failure) -> bool:
    """A container restart filed by :func:`restart_failures`, not a stopped task."""
    return failure.cause == RESTART_CAUSE and failure.stop_code == RESTART_STOP_CODE


def restart_increments(totals: Iterable[tuple[datetime, float]],
                       before: float | None = None) -> list[tuple[datetime, int]]:
    """Restarts per minute from a running total (Container Insights ``RestartCount``, one value a minute).

    ``totals``: ``(minute, total)`` in any order; ``before``: the total just before the first minute, if
    known. A rise is that many restarts; a drop is a task replaced (its count left the total) and counts
    nothing, the next rise counting from the lower total. The first minute without ``before`` counts
    nothing (its total may be hours old). Returns ``(minute, restarts)`` for the minutes with restarts,
    oldest first.
    """
    out: list[tuple[datetime, int]] = []
    prev = before
    for minute, total in sorted(totals):
        if prev is not None and total > prev:
            out.append((minute, int(round(total - prev))))
        prev = total
    return out


def restart_failures(cluster: str, service: str, minute: datetime, restarts: int) -> tuple[Failure, ...]:
    """``restarts`` container restarts of ``cluster``/``service`` in ``minute`` as failures, one each.

    Each gets a synthetic, stable task ARN (``restart/SERVICE-YYYYMMDDHHMM-N``), so a re-read of the
    same minute files nothing new (a task is filed once) and restarts of different minutes never collide.
    """
    stamp = minute.astimezone(UTC).strftime("%Y%m%d%H%M")
    return tuple(Failure(service=service, time=minute, kind=StopKind.CRASH,
                         task_arn=f"restart/{cluster}/{service}-{stamp}-{i}", stop_code=RESTART_STOP_CODE,
                         reason=f"container restarted in its running task by its restart policy ({cluster})",
                         cause=RESTART_CAUSE)
                 for i in range(1, max(0, min(restarts, MAX_RESTARTS_PER_MINUTE)) + 1))


#: restarts of one service in one minute an observation may carry: ECS restarts a container at most once
#: per ``restartAttemptPeriod`` (60 s at least; ECS Developer Guide, "Restart individual containers in
#: Amazon ECS tasks with container restart policies"), so this is 10,000 containers restarting at once.
#: More is a malformed observation (one failure is filed per restart: an unbounded count is unbounded memory)
MAX_RESTARTS_PER_MINUTE = 10_000

#: the observation the sampler hands the watchdog (``source`` and ``detail-type`` of its event)
OBSERVATION_SOURCE = "ecs-guardrail"
OBSERVATION_TYPE = "Container Restarts"


#: the names ECS allows (ECS API Reference: CreateCluster ``clusterName``, CreateService ``serviceName``: up to
#: 255 letters, numbers, hyphens and underscores), as core/events.py checks them on task events; patterns,
#: compiled (and cached by :mod:`re`) on the first restart observation, not at import: most first invocations
#: of the watchdog read task events only (issue 33 item 7)
_CLUSTER_ARN = r"arn:aws[a-z-]*:ecs:[a-z0-9-]+:\d{12}:cluster/[A-Za-z0-9_-]{1,255}"
_SERVICE_NAME = r"[A-Za-z0-9_-]{1,255}"

class RestartObservation(Struct, frozen=True):
    """Container restarts of one service in one minute, as the sampler saw them in Container Insights.

    ``cluster_arn``: the cluster's ARN; ``service``: the service name; ``minute``: start of the minute
    (UTC); ``restarts``: restarts in it (>= 1); ``total``: the ``RestartCount`` total that minute.
    """

    cluster_arn: str
    service: str
    minute: datetime
    restarts: int
    total: float

    @property
    def cluster(self) -> str:
        return resource_name(self.cluster_arn)

    def to_event(self, account: str, region: str | None) -> dict[str, Any]:
        """The observation as an EventBridge-shaped event (``source`` :data:`OBSERVATION_SOURCE`).

        ``region`` ``None``: the history table's client named none (PutEvents never sends it: EventBridge
        stamps the region itself)."""
        stamp = self.minute.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        service_arn = self.cluster_arn.replace(":cluster/", ":service/", 1) + f"/{self.service}"
        return {"version": "0", "id": f"restarts-{self.cluster}-{self.service}-{stamp}",
                "detail-type": OBSERVATION_TYPE, "source": OBSERVATION_SOURCE, "account": account,
                "time": stamp, "region": region, "resources": [service_arn],
                "detail": {"clusterArn": self.cluster_arn, "serviceName": self.service, "minute": stamp,
                           "restarts": self.restarts, "restartCount": self.total}}

    @classmethod
    def from_event(cls, raw: Any, *, account: str | None = None) -> RestartObservation | None:
        """The observation in ``raw``, or ``None`` when ``raw`` is not one (its ``detail-type`` is not
        :data:`OBSERVATION_TYPE`).

        ``account``: the stack's own account. Only the stack's sampler puts observations, on its own
        account's default bus with ``source`` :data:`OBSERVATION_SOURCE`, and EventBridge stamps the
        envelope's ``account`` with the account that called PutEvents (EventBridge User Guide, "Amazon
        EventBridge events": ``account``; a member account allowed to put events on the bus in
        cross-account mode gets its own account stamped). So an observation whose ``account`` is not
        ``account``, or whose ``source`` is another, was forged. ``None``: unknown, not checked.

        Raises:
            ValueError: an observation with a missing or malformed field, another ``source``, or another
                account's (named).
        """
        if not isinstance(raw, dict) or raw.get("detail-type") != OBSERVATION_TYPE:
            return None
        if raw.get("source") != OBSERVATION_SOURCE:
            if raw.get("source") == "aws.ecs":
                return None  # not the sampler's: an ECS event type the watchdog does not read
            raise ValueError(f"{OBSERVATION_TYPE}: source {str(raw.get('source'))[:100]!r} is not the sampler's "
                             f"({OBSERVATION_SOURCE}): a forged observation")
        if account is not None and raw.get("account") != account:
            raise ValueError(f"{OBSERVATION_TYPE}: from account {str(raw.get('account'))[:100]!r}, not the stack's "
                             f"own ({account}): only the stack's sampler observes restarts")
        d = raw.get("detail")
        if not isinstance(d, dict):
            raise ValueError(f"{OBSERVATION_TYPE}: detail is not an object")
        try:
            minute = datetime.fromisoformat(str(d["minute"]).replace("Z", "+00:00"))
            restarts, total = d["restarts"], d["restartCount"]
            arn, service = d["clusterArn"], d["serviceName"]
        except KeyError as exc:
            raise ValueError(f"{OBSERVATION_TYPE}: no {exc}") from None
        except ValueError as exc:
            raise ValueError(f"{OBSERVATION_TYPE}: minute: {exc}") from None
        minute = minute if minute.tzinfo else minute.replace(tzinfo=UTC)
        try:  # the window reaches back and the TTL forward from it: both must stay in the calendar
            minute - timedelta(days=400), minute + timedelta(days=400)
        except OverflowError:
            raise ValueError(f"{OBSERVATION_TYPE}: minute {d['minute']!r} is out of range") from None
        if not isinstance(restarts, int) or isinstance(restarts, bool) or not 1 <= restarts <= MAX_RESTARTS_PER_MINUTE:
            raise ValueError(f"{OBSERVATION_TYPE}: restarts must be a count from 1 to {MAX_RESTARTS_PER_MINUTE} "
                             "(restarts of one service in one minute)")
        try:  # an integer past a float's range (10**400) is not a count the sampler writes
            finite = isinstance(total, int | float) and not isinstance(total, bool) and math.isfinite(total)
        except OverflowError:
            finite = False
        if not finite or total < 0:
            raise ValueError(f"{OBSERVATION_TYPE}: restartCount must be a number >= 0")
        if not isinstance(arn, str) or not isinstance(service, str) or not re.fullmatch(_CLUSTER_ARN, arn, re.ASCII) \
                or not re.fullmatch(_SERVICE_NAME, service, re.ASCII):
            raise ValueError(f"{OBSERVATION_TYPE}: clusterArn must be an ECS cluster ARN and serviceName a service "
                             "name (1-255 of A-Za-z0-9_-, ECS API Reference, CreateService serviceName)")
        return cls(arn, service, minute, restarts, float(total))
