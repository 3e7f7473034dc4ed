"""Recorder Lambda: every ECS event written to the history table as it arrives.

Idempotent on redelivery (a task version or an event id is written once); a malformed event is kept
in the table with its reason (``REJECTED#<day>``) and never fails the invocation.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec

from ecs_guardrail.adapters.history import HistoryStore, epoch, iso
from ecs_guardrail.adapters.store.event_log import EventLog, TaskEventItem
from ecs_guardrail.core.classify import StopVerdict, classify_stop, is_stop_event, is_stopped, remembered_per_task
from ecs_guardrail.core.delivery import check_delivery
from ecs_guardrail.core.errors import EventRejectedError
from ecs_guardrail.core.events import (
    DeploymentDetail,
    EcsEvent,
    OtherEcsEvent,
    TaskStateChange,
    canonical_json,
    parse_event_text,
)
from ecs_guardrail.core.links import arn_parts
from ecs_guardrail.handlers.runtime import lambda_runtime, logger, metrics

__all__ = ["handler", "record_event", "USES", "arn_place", "stored_raw", "RAW_MAX_BYTES"]

#: the units whose AWS calls this function makes: the event log's one write (never its reads);
#: ecs_guardrail.iam.handler_permissions unions their @permissions (tests/infra/test_iam_calls.py)
USES = {"event_log": EventLog._once}


#: the most UTF-8 bytes of an event's text kept in its history item: DynamoDB's item limit is 400 KB
#: (names and values, "Service, account, and table quotas in Amazon DynamoDB"); an EventBridge event is at
#: most 256 KB ("Amazon EventBridge quotas"), so a delivered event is never cut, only a replay's long line
RAW_MAX_BYTES = 300_000


def stored_raw(raw: Any) -> str:
    """The ``raw`` attribute of an event's history item: :func:`canonical_json` of it, cut to at most
    :data:`RAW_MAX_BYTES` bytes of UTF-8 (never inside a character).

    The text is UTF-8 as it is (round 8), so a character count no longer bounds the bytes: the cut is of
    the encoded text. Raises what :func:`canonical_json` raises (``parse_event`` rejected such events).
    """
    return _cut(canonical_json(raw))


def _cut(text: str, limit: int = RAW_MAX_BYTES) -> str:
    """:func:`stored_raw` of the event whose canonical JSON is ``text`` (at most ``limit`` bytes)."""
    if len(text) * 4 <= limit:  # at most 4 bytes a character: nothing to cut, nothing encoded
        return text
    data = text.encode("utf-8")
    return text if len(data) <= limit else data[:limit].decode("utf-8", "ignore")


#: DynamoDB's item limit (409,600 bytes of names and values), less a margin
ITEM_MAX_BYTES = 400_000


def _fit(item: TaskEventItem) -> None:
    """Cut a long event's ``raw`` further so the whole item fits :data:`ITEM_MAX_BYTES`: a stopped task's
    item repeats its container names and reason beside the text (measured as JSON, more than DynamoDB counts)."""
    if len(item.raw) > 60_000:  # shorter: at most 240 kB of text beside at most ~140 kB of other attributes
        others = len(msgspec.json.encode(item)) - len(msgspec.json.encode(item.raw)) + 1_000  # + names
        item.raw = _cut(item.raw, min(RAW_MAX_BYTES, ITEM_MAX_BYTES - others))


def arn_place(arn: str | None) -> tuple[str | None, str | None]:
    """``(account, region)`` of an ARN (``arn:PARTITION:SERVICE:REGION:ACCOUNT:...``), or ``(None, None)``."""
    place = _PLACES.get(arn) if type(arn) is str else None
    if place is None:
        _, region, account = arn_parts(arn)
        place = (account, region)
        if type(arn) is str:
            if len(_PLACES) >= 1024:
                _PLACES.clear()
            _PLACES[arn] = place
    return place


#: ARN -> ``(account, region)``: a task event's place is its cluster ARN's (a fleet has a few)
_PLACES: dict[str, tuple[str | None, str | None]] = {}
#: (cluster ARN, group) -> the task item's ``(account, region, cluster, group, service)`` (at most 4,096 kept)
_SERVICES: dict[tuple[str, str | None], tuple[str | None, str | None, str, str | None, str | None]] = {}


def _task_item(event: TaskStateChange, text: str, log: EventLog) -> tuple[TaskEventItem, StopVerdict | None]:
    """The history item of a task state change whose canonical JSON is ``text``, built from its parsed
    fields once, and the stop classification of a stopping task (``None`` for any other)."""
    d, t = event.detail, event.time
    where = (d.cluster_arn, d.group)
    place = _SERVICES.get(where)
    if place is None:  # account, region, cluster, group and service: the same for a service's every task
        account, region = arn_place(d.cluster_arn)
        place = (account, region, d.cluster, d.group or None, d.service)
        if len(_SERVICES) >= 4096:
            _SERVICES.clear()
        _SERVICES[where] = place
    account, region, cluster, group, service = place
    when, stamp = iso(t), t.timestamp()  # each once an event: the keys, the TTL, time and t read them
    pk, sk, index_pk, sort, expires_at = log.task_keys(d.task_arn, d.version, event.id, cluster, t, when, stamp)
    last, desired = d.last_status, d.desired_status
    # is_stop_event(d), ECS's own text first: no call
    verdict = classify_stop(d) if desired == "STOPPED" or last == "STOPPED" or is_stop_event(d) else None
    if len(text) > 60_000:  # _cut's and _fit's work: at most 240 kB of text beside at most ~140 kB of others
        text = _cut(text)
    # TaskEventItem's fields in their order (an empty text is no attribute: None, as TaskEventItem promises)
    item = TaskEventItem(
        pk, sk, index_pk, sort, expires_at, account or event.account or None, region or event.region or None,
        "task", event.id, event.detail_type, when, int(stamp), cluster, group, service, d.task_arn, last,
        desired or None, d.version, d.availability_zone or None, d.launch_type or None,
        d.capacity_provider_name or None, d.task_definition_arn or None, d.stop_code or None,
        d.stopped_reason or None, text)
    if verdict is not None:
        item.kind = verdict.kind.value
        item.cause = verdict.cause or None
        item.exit_codes = [{"name": n, "code": c} for n, c in verdict.exit_codes if c is not None] or None
        item.exit_unknown = [n for n, c in verdict.exit_codes if c is None] or None
    if len(text) > 60_000:
        _fit(item)
    return item, verdict


def record_event(raw: Any, store: HistoryStore, received: datetime | None = None, *,
                 delivered_at: datetime | None = None) -> dict[str, Any]:
    """Parse and write one event.

    ``received``: the day a rejected event is filed under (default now); ``delivered_at``: when the
    event was delivered (the invocation's clock in Lambda, ``delivered.csv`` in a replay; ``None``:
    unknown): an event stamped more than 15 minutes after it is rejected and kept, never recorded as
    a state change (:func:`~ecs_guardrail.core.delivery.check_delivery`).

    Returns ``{"status": "recorded" | "duplicate" | "rejected", ...}``; ``rejected`` carries
    ``reason``; a STOPPED task event carries ``stop_kind`` (crash, spot, scheduler, ...), a stopping
    task's Spot or termination notice ``notice_kind`` (spot, infrastructure: remembered per task,
    :func:`~ecs_guardrail.core.classify.remembered_per_task`).
    Raises botocore errors other than a failed condition (Lambda retries, then the on-failure
    destination keeps the event).
    """
    stop_kind = notice_kind = None
    try:
        event: EcsEvent
        event, text = parse_event_text(raw)
        check_delivery(event.time, delivered_at)
        if isinstance(event, TaskStateChange):
            item, verdict = _task_item(event, text, store.events)
            new = store.events.record_task(item)
            last = event.detail.last_status
            # ECS's own text first: no call; a status that reads as STOPPED made a stop event (verdict given)
            if new and (last == "STOPPED" or (verdict is not None and is_stopped(last))):
                stop_kind = item.kind
            elif new and verdict is not None and remembered_per_task(verdict):
                notice_kind = item.kind
        elif isinstance(event, OtherEcsEvent):
            # a detail-type ECS added, or a daemon's deployment: kept with its note, never rejected
            cluster, subject = event.cluster or "-", event.subject
            account, region = arn_place(event.resources[0] if event.resources else None)
            new = store.record_service_event(
                cluster=cluster, service=subject, event_id=event.id, time=event.time,
                attrs={"type": "other", "event_id": event.id, "detail_type": event.detail_type,
                       "time": iso(event.time), "t": epoch(event.time), "cluster": cluster,
                       # unchecked texts of any length (no ARN names them): cut, or the item may pass 400 KB
                       "account": (account or event.account)[:64], "region": (region or event.region)[:64],
                       "subject": subject, "note": event.note,
                       "event_name": str(event.detail.get("eventName") or "")[:128] or None,
                       "raw": _cut(text)})
            if new:
                logger.info("event of a kind this tool does not read: recorded", extra={"note": event.note})
        else:
            cluster, service = event.cluster, event.service
            account, region = arn_place(event.resources[0] if event.resources else None)
            # the typed field only: getattr would read a service action's extra key "deployment_id" (any JSON)
            deployment_id = event.detail.deployment_id if isinstance(event.detail, DeploymentDetail) else None
            new = store.record_service_event(
                cluster=cluster, service=service, event_id=event.id, time=event.time,
                attrs={"type": "service", "event_id": event.id, "detail_type": event.detail_type,
                       "time": iso(event.time), "t": epoch(event.time), "cluster": cluster,
                       "account": account or event.account, "region": region or event.region,
                       "service": service, "deployment_id": deployment_id,
                       "event_name": event.detail.event_name,
                       "event_type": event.detail.event_type, "reason": event.detail.reason,
                       "raw": _cut(text)})
    except (EventRejectedError, ValueError) as exc:
        reason = exc.reason if isinstance(exc, EventRejectedError) else str(exc)
        store.record_rejected(raw, reason, received or delivered_at or datetime.now(UTC))
        if metrics.enabled:  # off in a replay: no call, no keywords built
            metrics.add_metric(name="EventsRejected", unit="Count", value=1)
        logger.warning("event rejected", extra={"reason": reason})
        return {"status": "rejected", "reason": reason}
    if not new:
        if metrics.enabled:  # off in a replay: no call, no keywords built
            metrics.add_metric(name="DuplicatesIgnored", unit="Count", value=1)
        return {"status": "duplicate", "id": event.id}
    if metrics.enabled:  # off in a replay: no call, no keywords built
        metrics.add_metric(name="EventsRecorded", unit="Count", value=1)
    out = {"status": "recorded", "id": event.id}
    if stop_kind:
        out["stop_kind"] = stop_kind  # one per stopped task: the STOPPED event's classification
    if notice_kind:
        out["notice_kind"] = notice_kind  # a Spot or termination notice, remembered per task (not a crash)
    return out


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Lambda entry point (EventBridge rule target). Settings are read once per invocation; the
    delivery time is the invocation's clock."""
    metrics.add_metric(name="EventsReceived", unit="Count", value=1)
    rt = lambda_runtime("record")
    return record_event(event, rt.history, delivered_at=datetime.fromtimestamp(rt.clock(), UTC))
