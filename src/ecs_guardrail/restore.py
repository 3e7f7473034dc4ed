"""``ecs-guardrail restore``: put back the desired count the watchdog replaced with 0.

The previous count comes from the service's episode in the history table, or, if the table has lost
it, from the service tag ``ecs-guardrail:previous-desired-count``. Restoring frees the service's
held-at-zero slot (the blast-radius cap counts services held at zero) and ends its episode.
Idempotent: a second run changes nothing and says so. Needs ``dynamodb:GetItem``/``Query``/``PutItem``
on the table and ``ecs:DescribeServices``/``ecs:UpdateService``/``ecs:UntagResource`` on the service
(operator's role).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from ecs_guardrail.adapters.ecs import PREVIOUS_COUNT_TAG, EcsService
from ecs_guardrail.adapters.history import HistoryStore
from ecs_guardrail.core.episode import ActionStatus, EpisodeEnd, ServiceSummary, close_episode
from ecs_guardrail.core.errors import RestoreError
from ecs_guardrail.core.records import Action

__all__ = ["RestoreOutcome", "restore", "restore_service"]


@dataclass(frozen=True, slots=True)
class RestoreOutcome:
    """``changed``: UpdateService ran; ``desired_count``: the count now asked for; ``message``: one line."""

    changed: bool
    desired_count: int
    message: str


def restore(history: HistoryStore, ecs: EcsService, cluster: str, service: str) -> RestoreOutcome:
    """Restore one service from its recorded previous desired count.

    Raises:
        RestoreError: no previous count recorded (table or tag), or it is not a count.
        ServiceNotFoundError: the service does not exist or is not ACTIVE.
    """
    summary = history.state.load(cluster, service, fresh=True)
    episode = summary.episode
    facts = ecs.describe(cluster, service)
    previous: Any = None
    source = ""
    if episode is not None and episode.previous_desired_count is not None and episode.action is Action.SCALE_TO_ZERO:
        previous, source = episode.previous_desired_count, "history table"
    elif PREVIOUS_COUNT_TAG in facts.tags:
        previous, source = facts.tags[PREVIOUS_COUNT_TAG], f"tag {PREVIOUS_COUNT_TAG}"
    if previous is None:
        raise RestoreError(f"{cluster}/{service}: the watchdog recorded no previous desired count; "
                           f"nothing to restore (desired count is {facts.desired_count})")
    try:
        count = int(previous)
    except (TypeError, ValueError):
        raise RestoreError(f"{cluster}/{service}: previous desired count {previous!r} from {source} "
                           f"is not a count") from None
    if count < 0:
        raise RestoreError(f"{cluster}/{service}: previous desired count {count} is negative")
    changed = ecs.restore(facts, count)
    history.state.release_slot(cluster, service)

    def restored(s: ServiceSummary) -> ServiceSummary | None:
        ep = s.episode
        if ep is None or ep.action_status is ActionStatus.RESTORED:
            return None
        ended = close_episode(s, EpisodeEnd.RESTORED, max(ep.last_failure, datetime.now(UTC))) or s
        return replace(ended, episode=replace(ep, action_status=ActionStatus.RESTORED if ep.action is
                                              Action.SCALE_TO_ZERO else ep.action_status,
                                              lease_owner=None, lease_until=0.0))

    history.state.update(cluster, service, restored)
    if changed:
        msg = f"restored {cluster}/{service}: desired count {facts.desired_count} -> {count} (from {source})"
    else:
        msg = f"{cluster}/{service} already has desired count {count}; nothing changed"
    return RestoreOutcome(changed, count, msg)


def restore_service(cluster: str, service: str, *, table: str, region: str | None = None) -> RestoreOutcome:
    """:func:`restore` with boto3 clients (standard retries) for the operator's credentials."""
    from ecs_guardrail.adapters.aws import make_client

    return restore(HistoryStore(make_client("dynamodb", region), table),
                   EcsService(make_client("ecs", region, retry_mode="adaptive")), cluster, service)
