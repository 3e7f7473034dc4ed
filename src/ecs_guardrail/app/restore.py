"""``ecs-guardrail restore``: put back the desired count the watchdog replaced with 0.

The previous count comes from the service's episode in the history table, or, if the table has lost
it, from the service tag ``ecs-guardrail:previous-desired-count``, trusted only within a bound (the
scalable target's MaxCapacity, else the highest desired count the table recorded; above it, the
operator's ``--count``: :mod:`ecs_guardrail.core.restore_count`). The message says what was trusted.
Restoring frees the service's held-at-zero slot (the blast-radius cap counts services held at zero)
and ends its episode; the episode's recovery message becomes owed in the same conditional write, and
the watchdog sends it with the service's next event (its ``SERVICE_STEADY_STATE`` once the tasks run
again): the operator's credentials need no SNS or Slack access, and the message goes out exactly once.
Idempotent: a second run changes nothing and says so. Needs ``dynamodb:GetItem``/``Query``/``PutItem``
on the table and ``ecs:DescribeServices``/``ecs:UpdateService``/``ecs:UntagResource`` on the service
(operator's role). Where the decision suspended the service's Application Auto Scaling scalable
target, the recorded previous ``SuspendedState`` is put back after the count
(``application-autoscaling:DescribeScalableTargets`` and ``RegisterScalableTarget``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ecs_guardrail.adapters.autoscaling import ScalableTargets
from ecs_guardrail.adapters.ecs import PREVIOUS_COUNT_TAG, EcsService, ServiceFacts
from ecs_guardrail.adapters.history import HistoryStore
from ecs_guardrail.adapters.restore_service import perform_restore
from ecs_guardrail.adapters.store import keys
from ecs_guardrail.core import lifecycle as lc
from ecs_guardrail.core.errors import NothingToRestoreError, RestoreError, ScalingSuspendError, UnreadableSummaryError
from ecs_guardrail.core.records import Action
from ecs_guardrail.core.restore_count import choose_restore_count
from ecs_guardrail.core.summary import Episode, ServiceSummary

__all__ = ["RestoreOutcome", "restore", "restore_service"]


@dataclass(frozen=True, slots=True)
class RestoreOutcome:
    """``changed``: UpdateService ran; ``desired_count``: the count now asked for; ``message``: one line;
    ``scaling_restored``: RegisterScalableTarget put the scalable target's previous SuspendedState back."""

    changed: bool
    desired_count: int
    message: str
    scaling_restored: bool = False


def _history_max(history: HistoryStore, cluster: str, service: str) -> int | None:
    """The highest ``previous_desired_count`` of the service's decision records (one Query), or ``None``."""
    pk = keys.decision(cluster, service, datetime(1970, 1, 1, tzinfo=UTC))[0]
    counts = []
    for item in history.port.query(pk, prefix="DEC#"):
        try:
            value = json.loads(item.get("decision") or "{}").get("previous_desired_count")
        except ValueError:
            continue
        if isinstance(value, int) and not isinstance(value, bool):
            counts.append(value)
    return max(counts) if counts else None


def restore(history: HistoryStore, ecs: EcsService, cluster: str, service: str, *,
            scaling: ScalableTargets | None = None,
            previous_suspended: Mapping[str, Any] | None = None, now: datetime | None = None,
            count: int | None = None, clock: Callable[[], float] = time.time) -> RestoreOutcome:
    """Restore one service from its recorded previous desired count, then its scalable target.

    In this order, so that a slot of the blast-radius cap is freed only by a *finished* restore
    (ARCHITECTURE.md, "Safe by construction"): refuse while a scale-down or a probe step of the service
    is in flight (another invocation holds its lease: checked before any change, and again at the
    final write, which also refuses when a probe step ran meanwhile), put the desired count back
    (UpdateService), put the scalable target's previous ``SuspendedState`` back, then end the episode
    ``RESTORED`` in one conditional write, and only then free its held-at-zero slot. A failure at any
    step leaves the episode held; running ``restore`` again finishes it.

    ``previous_suspended``: the scalable target's ``SuspendedState`` (API shape,
    ``{"DynamicScalingInSuspended": bool, ...}``) the decision recorded before suspending it, or ``None``
    to use the episode's; put back through ``scaling`` (required for it to happen). ``count``: the
    operator's ``--count``; needed when the table lost the episode and the service tag is above its
    bound (:func:`~ecs_guardrail.core.restore_count.choose_restore_count`: the scalable target's
    MaxCapacity, else the highest desired count the table recorded). The message says what was trusted.
    ``now``: the time the recovery message gives (default: now); ``clock``: Unix seconds, for the
    lease check.

    Raises:
        NothingToRestoreError: no previous count recorded (table or tag); ``desired_count`` says whether the
            service runs already (``restore`` twice: the second finds nothing to undo).
        RestoreError: the recorded count is not a count, or the tag is above its bound without ``--count``;
            a scale-down in flight; or the count was restored but Application Auto Scaling refused to put
            the suspended state back (the episode stays held: run restore again).
        ServiceNotFoundError: the service does not exist or is not ACTIVE.
    """
    try:
        summary = history.state.load(cluster, service, fresh=True)
    except UnreadableSummaryError as exc:  # nothing changed: the message says how to repair the item first
        raise UnreadableSummaryError(f"{exc}; {exc.repair(history.table, history.region)}", exc.pk, exc.sk) from exc
    episode = summary.episode
    at = now or datetime.now(UTC)
    if episode is not None:
        try:
            lc.transition(summary, lc.Restored(at, clock()))  # refuses an in-flight scale-down before any change
        except lc.IllegalTransitionError as exc:
            raise RestoreError(str(exc)) from None
    facts = ecs.describe(cluster, service)
    recorded = (episode.previous_desired_count if episode is not None and episode.action is Action.SCALE_TO_ZERO
                else None)
    count, source = _trusted_count(history, scaling, cluster, service, facts, recorded, count)
    if previous_suspended is None and episode is not None:
        previous_suspended = episode.previous_suspended
    done = perform_restore(ecs, scaling, cluster, service, facts, count, previous_suspended)  # the one performer
    if done.changed:
        msg = f"restored {cluster}/{service}: desired count {facts.desired_count} -> {count} (from {source})"
    else:
        msg = f"{cluster}/{service} already has desired count {count}; nothing changed"
    done.check(msg)
    if done.scaling_restored:
        msg += "; scalable target's previous suspended state put back"
    _end_episode(history, cluster, service, _probe_step(episode), at, clock, msg)
    return RestoreOutcome(done.changed, count, msg, done.scaling_restored)


def _trusted_count(history: HistoryStore, scaling: ScalableTargets | None, cluster: str, service: str,
                   facts: ServiceFacts, recorded: int | None, count: int | None) -> tuple[int, str]:
    """The count to restore and where it came from (:func:`~ecs_guardrail.core.restore_count.choose_restore_count`).

    Raises:
        NothingToRestoreError: nothing recorded and no ``--count``, or only the tag speaks and the service runs.
        RestoreError: as :func:`~ecs_guardrail.core.restore_count.choose_restore_count`.
    """
    if recorded is None and count is None and PREVIOUS_COUNT_TAG not in facts.tags:
        raise NothingToRestoreError(f"{cluster}/{service}: the watchdog recorded no previous desired count (no "
                                    f"episode in the history table, no tag {PREVIOUS_COUNT_TAG}); nothing to "
                                    f"restore (desired count is {facts.desired_count}; give --count N to set one)",
                                    facts.desired_count)
    if recorded is None and count is None and facts.desired_count > 0:
        # only the tag speaks, and the service runs: the watchdog's scale-downs leave it at 0, so there is
        # no scale-down to undo (a stale or forged tag must never move a running service, down or up)
        raise NothingToRestoreError(f"{cluster}/{service}: runs with desired count {facts.desired_count} and the "
                                    f"history table has no scale-down of the watchdog for it; the tag "
                                    f"{PREVIOUS_COUNT_TAG}={facts.tags.get(PREVIOUS_COUNT_TAG)!r} is not applied "
                                    f"to a running service (give --count N to set one)", facts.desired_count)
    max_capacity = history_max = None
    if recorded is None or count is not None:  # the tag (the table lost the episode) or --count: bounded
        try:
            target = scaling.describe(cluster, service) if scaling is not None else None
        except ScalingSuspendError:
            target = None  # unreadable: bounded by the recorded history instead
        max_capacity = target.max_capacity if target is not None else None
        history_max = _history_max(history, cluster, service) if max_capacity is None else None
    trusted = choose_restore_count(f"{cluster}/{service}", recorded=recorded, count=count,
                                   tag=facts.tags.get(PREVIOUS_COUNT_TAG), max_capacity=max_capacity,
                                   history_max=history_max, tag_key=PREVIOUS_COUNT_TAG)
    return trusted.count, trusted.source


def _end_episode(history: HistoryStore, cluster: str, service: str, seen: tuple[object, ...] | None,
                 at: datetime, clock: Callable[[], float], msg: str) -> None:
    """End the episode ``RESTORED`` in one conditional write (the machine's
    :class:`~ecs_guardrail.core.lifecycle.Restored`), then free its held-at-zero slot (idempotent): only once
    the episode says restored.

    Raises:
        RestoreError: a scale-down or a probe step ran meanwhile (it owns the slot, or the service may be back at 0).
    """
    def restored(s: ServiceSummary) -> ServiceSummary | None:
        # the episode ends at its last failure, in event time (never the wall clock: rule 1); a failure
        # after it, even one delivered late, belongs to a new episode. The recovery message says when
        # the restore happened (``at``).
        if s.episode is None:
            return None
        if _probe_step(s.episode) != seen:  # RECOVERY=probe: a probe step (back to 0) ran after our count
            raise lc.IllegalTransitionError("a probe step changed the service while it was being restored "
                                            "(it may be back at 0)")
        return lc.transition(s, lc.Restored(at, clock())).summary

    try:
        history.state.update(cluster, service, restored)
    except lc.IllegalTransitionError as exc:  # a new scale-down started meanwhile: it owns the slot now
        raise RestoreError(f"{msg}; but {exc}") from None
    history.state.release_slot(cluster, service)


def _probe_step(ep: Episode | None) -> tuple[object, ...] | None:
    """What a probe step changes (``RECOVERY=probe``): restore ends the episode only if none ran
    between its first read and its final write, so a probe's "back to 0" after the restored count is
    never hidden behind a RESTORED episode."""
    if ep is None:
        return None
    return (ep.phase, ep.probes, ep.probe_at, ep.probe_live)


def restore_service(cluster: str, service: str, *, table: str, region: str | None = None,
                    count: int | None = None) -> RestoreOutcome:
    """:func:`restore` with boto3 clients (standard retries) for the operator's credentials.

    ``ALERT_ONLY_CLUSTERS`` of the environment, when set (the deploy's value, as ``audit`` reads it),
    makes RegisterScalableTarget refused for an alert-only cluster before it is called; unset, nothing
    is refused (restore only puts back a suspended state the watchdog recorded).

    Raises:
        SettingsError: ``ALERT_ONLY_CLUSTERS`` is set and has an invalid entry.
    """
    import os

    from ecs_guardrail.adapters.aws import make_client
    from ecs_guardrail.settings import load_settings

    scope = None
    if os.environ.get("ALERT_ONLY_CLUSTERS", "").strip():
        scope = load_settings({"ALERT_ONLY_CLUSTERS": os.environ["ALERT_ONLY_CLUSTERS"]}).policy().alert_only

    return restore(HistoryStore(make_client("dynamodb", region), table),
                   EcsService(make_client("ecs", region, retry_mode="adaptive")), cluster, service,
                   scaling=ScalableTargets(make_client("application-autoscaling", region, retry_mode="adaptive"),
                                           alert_only=scope), count=count)
