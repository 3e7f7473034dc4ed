"""The history table (DynamoDB): every ECS event as it arrived, the watchdog's state and decisions.

Layout (single table, ``pk``/``sk`` strings, GSI ``gsi1`` on ``gsi1pk``/``gsi1sk``, TTL ``expires_at``):

| item | pk | sk | notes |
| --- | --- | --- | --- |
| task event | ``TASK#<taskArn>`` | ``V#<version:010d>`` | one per task version: the newest state is the highest |
| service/deployment event | ``SVC#<cluster>#<service>`` | ``EV#<time>#<event id>`` | |
| decision | ``SVC#<cluster>#<service>`` | ``DEC#<time>`` | written before any alert or action |
| rejected event | ``REJECTED#<day>`` | ``<received>#<sha256/16>`` | raw text and reason kept |
| task verdict | ``WD#<cluster>`` | ``F#<taskArn>`` | once per task ARN; the fleet test reads these |
| service window | ``WD#<cluster>#<service>`` | ``W#`` | recent failures (``f_<task id>``: JSON) and the episode |
| action slot | ``WD#<cluster>`` | ``S#<n>`` | ``n < bound``: the blast-radius cap as conditional writes |
| mass event | ``WD#<cluster>`` | ``M#mass`` | one cluster alert per mass event |

The service window is one item so that counting a failure and reading the window is one UpdateItem
(``ReturnValues=ALL_NEW``): atomic under concurrent invocations, and O(1) for DynamoDB and for moto.

A late older version of a task can never overwrite its newer state: each version is its own item.

Timeline items (events, decisions, availability samples) carry ``gsi1pk`` = ``TL#<cluster>#<YYYY-MM-DD>``
and ``gsi1sk`` = ``<ISO time>#<kind>#<id>``, so one day of one cluster is one Query.
Conditional writes ask for ``ReturnValuesOnConditionCheckFailure=ALL_OLD`` so the loser of a race
knows who won (DynamoDB API reference, PutItem / TransactWriteItems).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any, ClassVar

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import ClientError

from ecs_guardrail.core.availability import Sample
from ecs_guardrail.core.classify import StopKind
from ecs_guardrail.core.policy import Decision, Failure

__all__ = ["HistoryStore", "ClusterState", "ServiceState", "Episode", "iso", "epoch", "timeline_key"]

_SER = TypeSerializer()
_DE = TypeDeserializer()
_MAX_RAW_BYTES = 300_000  # DynamoDB items are at most 400 KB


def iso(t: datetime) -> str:
    """``2025-08-21T12:25:03Z`` (UTC, seconds; a fraction only when the event had one)."""
    t = t.astimezone(UTC)
    if t.microsecond:
        return t.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def epoch(t: datetime) -> int:
    """Unix time in whole seconds."""
    return int(t.timestamp())


def from_epoch(seconds: int | float | Decimal) -> datetime:
    return datetime.fromtimestamp(float(seconds), tz=UTC)


def timeline_key(cluster: str, t: datetime) -> str:
    return f"TL#{cluster}#{t.astimezone(UTC):%Y-%m-%d}"


def _plain(value: Any) -> Any:
    """Deserialised DynamoDB values back to plain JSON types (Decimal -> int/float)."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | set | tuple):
        return [_plain(v) for v in value]
    return value


def _to_item(attrs: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in attrs.items():
        if v is None or v == "" or v == [] or v == {}:
            continue
        if isinstance(v, float):
            v = Decimal(str(v))
        out[k] = _SER.serialize(v)
    return out


def _from_item(item: dict[str, Any]) -> dict[str, Any]:
    return {k: _plain(_DE.deserialize(v)) for k, v in item.items()}


def _failure_attr(task_arn: str) -> str:
    """``f_<task id>``: a top-level attribute name per task in the service window."""
    return "f_" + task_arn.rsplit("/", 1)[-1]


def _unescape(task_id: str) -> str:
    return task_id


def _compact(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if v not in (None, "", [], {})}


def _is_condition_failure(exc: ClientError) -> bool:
    return exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"


@dataclass(slots=True)
class Episode:
    """A service's current episode (``E#<service>``): its decision and progress.

    ``status``: ``decided`` (no action due), ``acting`` (scale-down recorded, not confirmed),
    ``done`` (scaled and confirmed) or ``restored``; ``alert_status``: ``pending``/``sent``/``failed``.
    """

    service: str
    decision_time: datetime
    last_failure: datetime
    action: str
    reason: str
    status: str
    closed: bool = False
    previous_desired_count: int | None = None
    alert_status: str = "pending"
    decision: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class ServiceState:
    """One Query of ``WD#<cluster>#<service>``: the service's failures near a time, and its episode."""

    failures: list[Failure]
    episode: Episode | None


@dataclass(slots=True)
class ClusterState:
    """One Query of ``WD#<cluster>``: every service's failures near a time, action slots, mass event."""

    failures: list[Failure]
    slots: dict[int, tuple[str, datetime]]
    mass_last: datetime | None = None

    def scaled_down(self) -> list[tuple[str, datetime]]:
        return [(svc, t) for svc, t in self.slots.values()]


class HistoryStore:
    """Reads and writes the history table through a DynamoDB *client* (passed in).

    Raises botocore ``ClientError`` for anything but a failed condition, which each method turns into
    its own answer (duplicate, lost race): throttling and access errors propagate to Lambda's retry and
    dead-letter path.
    """

    IAM_ACTIONS: ClassVar[dict[str, frozenset[str]]] = {
        "history_table": frozenset({"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"}),
    }
    #: the calls the recorder makes (a subset)
    RECORDER_ACTIONS: ClassVar[dict[str, frozenset[str]]] = {"history_table": frozenset({"dynamodb:PutItem"})}
    #: the calls the availability sampler makes (a subset)
    SAMPLER_ACTIONS: ClassVar[dict[str, frozenset[str]]] = {"history_table": frozenset({"dynamodb:PutItem"})}

    def __init__(self, client: Any, table_name: str, ttl_days: int = 90) -> None:
        self._ddb = client
        self.table = table_name
        self.region: str | None = getattr(getattr(client, "meta", None), "region_name", None)
        self.ttl = timedelta(days=ttl_days)

    # ------------------------------------------------------------------ recorder
    def _expires(self, t: datetime) -> int:
        return epoch(max(t, datetime.now(UTC)) + self.ttl)

    def _put_new(self, attrs: dict[str, Any]) -> bool:
        """PutItem unless the key exists. Returns False for a duplicate."""
        try:
            self._ddb.put_item(
                TableName=self.table,
                Item=_to_item(attrs),
                ConditionExpression="attribute_not_exists(pk)",
            )
            return True
        except ClientError as exc:
            if _is_condition_failure(exc):
                return False
            raise

    def record_task_event(self, *, task_arn: str, version: int | None, event_id: str, cluster: str,
                          time: datetime, attrs: dict[str, Any]) -> bool:
        """Write one task state change; ``False`` when this task version was already recorded.

        Without ``detail.version`` (old or documentation events) the envelope id keys the item.
        """
        sk = f"V#{version:010d}" if version is not None else f"E#{event_id}"
        item = {
            "pk": f"TASK#{task_arn}",
            "sk": sk,
            "gsi1pk": timeline_key(cluster, time),
            "gsi1sk": f"{iso(time)}#task#{task_arn.rsplit('/', 1)[-1]}#{sk}",
            "expires_at": self._expires(time),
            **attrs,
        }
        return self._put_new(item)

    def record_service_event(self, *, cluster: str, service: str, event_id: str, time: datetime,
                             attrs: dict[str, Any]) -> bool:
        """Write one service action or deployment event; ``False`` for a redelivery (same id)."""
        item = {
            "pk": f"SVC#{cluster}#{service}",
            "sk": f"EV#{iso(time)}#{event_id}",
            "gsi1pk": timeline_key(cluster, time),
            "gsi1sk": f"{iso(time)}#service#{service}#{event_id}",
            "expires_at": self._expires(time),
            **attrs,
        }
        return self._put_new(item)

    def record_rejected(self, raw: Any, reason: str, received: datetime) -> bool:
        """Keep a rejected event with its reason (raw text truncated to 300 KB). False if kept already."""
        text = raw if isinstance(raw, str) else json.dumps(raw, default=str, sort_keys=True)
        digest = hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]
        encoded = text.encode("utf-8", "replace")
        item = {
            "pk": f"REJECTED#{received:%Y-%m-%d}",
            "sk": f"{iso(received)}#{digest}",
            "type": "rejected",
            "reason": reason[:1000],
            "raw": encoded[:_MAX_RAW_BYTES].decode("utf-8", "ignore"),
            "raw_truncated": len(encoded) > _MAX_RAW_BYTES,
            "expires_at": self._expires(received),
        }
        return self._put_new(item)

    def task_history(self, task_arn: str) -> list[dict[str, Any]]:
        """Every recorded version of a task, oldest first (``Query`` on ``TASK#<arn>``)."""
        return list(self._query(KeyConditionExpression="pk = :pk",
                                ExpressionAttributeValues={":pk": {"S": f"TASK#{task_arn}"}}))

    def task_state(self, task_arn: str) -> dict[str, Any] | None:
        """The task's newest recorded state (highest ``detail.version``), or ``None``."""
        resp = self._ddb.query(
            TableName=self.table,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :v)",
            ExpressionAttributeValues={":pk": {"S": f"TASK#{task_arn}"}, ":v": {"S": "V#"}},
            ScanIndexForward=False,
            Limit=1,
        )
        items = resp.get("Items", [])
        return _from_item(items[0]) if items else None

    # ------------------------------------------------------------------ watchdog
    def record_failure(self, cluster: str, failure: Failure, *, spot: bool = False,
                       prune_before: datetime | None = None) -> tuple[bool, dict | None, ServiceState | None]:
        """Remember one task's verdict once per task ARN and file a failure in its service's window.

        1. PutItem ``WD#<cluster>`` / ``F#<taskArn>`` only if absent: the verdict, counted once (a Spot
           verdict stops here, so the task's later STOPPED event never counts);
        2. for a crash or health-check kill (the first time or a redelivery), UpdateItem the service
           window ``SET f_<task id> = entry`` with ``ReturnValues=ALL_NEW``: idempotent, and the answer
           is the window and episode the decision needs. Entries older than ``prune_before`` are
           removed in the same call once the window holds more than 64 of them.

        Returns ``(new, old_verdict, service_state)``; ``service_state`` is ``None`` when nothing counts.
        """
        attrs = {
            "kind": "spot" if spot else failure.kind.value,
            "service": failure.service,
            "t": epoch(failure.time),
            "time": iso(failure.time),
            "az": failure.availability_zone,
            "stop_code": failure.stop_code,
            "reason": (failure.reason or "")[:300],
            "cause": failure.cause,
            "exit_codes": [{"name": n, "code": c} for n, c in failure.exit_codes if c is not None],
            "expires_at": epoch(max(failure.time, datetime.now(UTC)) + timedelta(days=2)),
        }
        verdict = {"pk": f"WD#{cluster}", "sk": f"F#{failure.task_arn}", **attrs}
        try:
            self._ddb.put_item(TableName=self.table, Item=_to_item(verdict),
                               ConditionExpression="attribute_not_exists(pk)",
                               ReturnValuesOnConditionCheckFailure="ALL_OLD")
            new, old = True, None
        except ClientError as exc:
            if not _is_condition_failure(exc):
                raise
            item = exc.response.get("Item")
            new, old = False, (_from_item(item) if item else None)
        source = old or attrs
        if source.get("kind") not in (StopKind.CRASH.value, StopKind.HEALTH_CHECK_KILL.value):
            return new, old, None
        entry = {k: source.get(k) for k in ("kind", "t", "az", "stop_code", "reason", "cause", "exit_codes")}
        # one compact JSON string per failure: a map would cost DynamoDB (and moto) an attribute each
        state = self._update_window(cluster, failure.service, "SET #f = :e",
                                    {"#f": _failure_attr(failure.task_arn)},
                                    {":e": {"S": json.dumps(_compact(entry), separators=(",", ":"), default=str)}})
        if prune_before is not None and len(state.failures) > 64:
            stale = [f.task_arn for f in state.failures if f.time < prune_before]
            if stale:
                names = {f"#r{i}": _failure_attr(arn) for i, arn in enumerate(stale[:100])}
                self._update_window(cluster, failure.service, "REMOVE " + ", ".join(names), names, None)
        return new, old, state

    def _update_window(self, cluster: str, service: str, expression: str, names: dict[str, str],
                       values: dict[str, Any] | None) -> ServiceState:
        kwargs: dict[str, Any] = {"ExpressionAttributeNames": names}
        if values:
            kwargs["ExpressionAttributeValues"] = values
        resp = self._ddb.update_item(
            TableName=self.table,
            Key=_to_item({"pk": f"WD#{cluster}#{service}", "sk": "W#"}),
            UpdateExpression=expression,
            ReturnValues="ALL_NEW",
            **kwargs,
        )
        return self._service_state(service, _from_item(resp.get("Attributes", {})))

    def _service_state(self, service: str, item: dict[str, Any]) -> ServiceState:
        failures = []
        for key, value in item.items():
            if key.startswith("f_") and isinstance(value, str):
                entry = json.loads(value)
                failures.append(Failure(
                    service=service,
                    time=from_epoch(entry["t"]),
                    kind=StopKind(entry["kind"]),
                    task_arn=_unescape(key[2:]),
                    availability_zone=entry.get("az"),
                    stop_code=entry.get("stop_code"),
                    reason=entry.get("reason"),
                    cause=entry.get("cause"),
                    exit_codes=tuple((e["name"], e.get("code")) for e in entry.get("exit_codes", [])),
                ))
        failures.sort(key=lambda f: (f.time, f.task_arn))
        episode = self._episode_from(service, item) if "decision_t" in item else None
        return ServiceState(failures, episode)

    @staticmethod
    def _episode_from(service: str, item: dict[str, Any]) -> Episode:
        return Episode(
            service=service,
            decision_time=from_epoch(item["decision_t"]),
            last_failure=from_epoch(item["last_t"]),
            action=item["action"],
            reason=item["reason"],
            status=item["status"],
            closed=bool(item.get("closed", False)),
            previous_desired_count=item.get("previous_desired_count"),
            alert_status=item.get("alert_status", "pending"),
            decision=json.loads(item.get("decision", "{}")),
        )

    def load_service(self, cluster: str, service: str) -> ServiceState:
        """The service window and episode (a Query on its key, strongly consistent)."""
        resp = self._ddb.query(
            TableName=self.table,
            KeyConditionExpression="pk = :pk AND sk = :sk",
            ExpressionAttributeValues={":pk": {"S": f"WD#{cluster}#{service}"}, ":sk": {"S": "W#"}},
            ConsistentRead=True,
        )
        items = resp.get("Items", [])
        return self._service_state(service, _from_item(items[0]) if items else {})

    def load_cluster(self, cluster: str, around: datetime, window: timedelta) -> ClusterState:
        """One Query of ``WD#<cluster>``: failures within ``around ± window``, action slots, mass state."""
        lo, hi = epoch(around - window), epoch(around + window)
        failures: list[Failure] = []
        slots: dict[int, tuple[str, datetime]] = {}
        mass_last = None
        for item in self._query(
            KeyConditionExpression="pk = :pk",
            FilterExpression="NOT begins_with(sk, :f) OR ((t BETWEEN :lo AND :hi) AND #k IN (:crash, :hck))",
            ProjectionExpression="sk, #k, service, t, last_t",
            ExpressionAttributeNames={"#k": "kind"},
            ExpressionAttributeValues={
                ":pk": {"S": f"WD#{cluster}"}, ":f": {"S": "F#"},
                ":lo": {"N": str(lo)}, ":hi": {"N": str(hi)},
                ":crash": {"S": StopKind.CRASH.value}, ":hck": {"S": StopKind.HEALTH_CHECK_KILL.value},
            },
            ConsistentRead=True,
        ):
            sk = item["sk"]
            if sk.startswith("F#"):
                failures.append(Failure(service=item["service"], time=from_epoch(item["t"]),
                                        kind=StopKind(item["kind"]), task_arn=sk[2:]))
            elif sk.startswith("S#"):
                slots[int(sk[2:])] = (item["service"], from_epoch(item["t"]))
            elif sk == "M#mass":
                mass_last = from_epoch(item["last_t"])
        return ClusterState(failures, slots, mass_last)

    def touch_episode(self, cluster: str, service: str, at: datetime) -> None:
        """Move an open episode's ``last_t`` forward to ``at`` (a no-op when it is already later)."""
        try:
            self._ddb.update_item(
                TableName=self.table,
                Key=_to_item({"pk": f"WD#{cluster}#{service}", "sk": "W#"}),
                UpdateExpression="SET last_t = :t",
                ConditionExpression="attribute_exists(pk) AND last_t < :t",
                ExpressionAttributeValues={":t": {"N": str(epoch(at))}},
            )
        except ClientError as exc:
            if not _is_condition_failure(exc):
                raise

    def claim_episode(self, decision: Decision, record: dict[str, Any], *, status: str,
                      previous_desired_count: int | None, open_after: datetime) -> tuple[bool, dict | None]:
        """Open the service's episode (a conditional UpdateItem), then write the decision's timeline copy.

        The episode is claimed only if none is open: none yet, a closed one, or one whose last failure
        is before ``open_after`` (decision time minus the window). Returns ``(won, winner_item)``; the
        loser gets the winner's item (``ReturnValuesOnConditionCheckFailure=ALL_OLD``).
        """
        cluster, service, t = decision.cluster, decision.service, decision.time
        episode = {
            "decision_t": epoch(t),
            "last_t": max([epoch(t)] + [epoch(f.time) for f in decision.last_failures]),
            "action": decision.action.value,
            "reason": decision.reason.value,
            "status": status,
            "closed": False,
            "previous_desired_count": previous_desired_count,
            "alert_status": "pending",
            "decision": json.dumps(record, sort_keys=True),
            "expires_at": self._expires(t),
        }
        if previous_desired_count is None:
            episode.pop("previous_desired_count")
        names = {f"#a{i}": k for i, k in enumerate(episode)}
        values = {f":v{i}": _SER.serialize(v) for i, v in enumerate(episode.values())}
        values.update({":true": {"BOOL": True}, ":after": {"N": str(epoch(open_after))}})
        try:
            self._ddb.update_item(
                TableName=self.table,
                Key=_to_item({"pk": f"WD#{cluster}#{service}", "sk": "W#"}),
                UpdateExpression="SET " + ", ".join(f"#a{i} = :v{i}" for i in range(len(episode)))
                + (" REMOVE previous_desired_count" if previous_desired_count is None else ""),
                ConditionExpression="attribute_not_exists(decision_t) OR closed = :true OR last_t < :after",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if not _is_condition_failure(exc):
                raise
            winner = exc.response.get("Item")
            return False, _from_item(winner) if winner else None
        history = {
            "pk": f"SVC#{cluster}#{service}",
            "sk": f"DEC#{iso(t)}",
            "gsi1pk": timeline_key(cluster, t),
            "gsi1sk": f"{iso(t)}#decision#{service}",
            "type": "decision",
            "cluster": cluster,
            "service": service,
            "time": iso(t),
            "action": decision.action.value,
            "reason": decision.reason.value,
            "message": decision.message,
            "previous_desired_count": previous_desired_count,
            "decision": json.dumps(record, sort_keys=True),
            "expires_at": self._expires(t),
        }
        self._ddb.put_item(TableName=self.table, Item=_to_item(history))
        return True, None

    def update_episode(self, cluster: str, service: str, **changes: Any) -> None:
        """SET the given attributes on the service's episode (status, alert_status, decision...)."""
        names = {f"#a{i}": k for i, k in enumerate(changes)}
        values = {f":v{i}": _SER.serialize(v if not isinstance(v, float) else Decimal(str(v)))
                  for i, v in enumerate(changes.values())}
        self._ddb.update_item(
            TableName=self.table,
            Key=_to_item({"pk": f"WD#{cluster}#{service}", "sk": "W#"}),
            UpdateExpression="SET " + ", ".join(f"#a{i} = :v{i}" for i in range(len(changes))),
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )

    def update_decision_record(self, cluster: str, service: str, at: datetime, **changes: Any) -> None:
        """SET attributes on the timeline copy of a decision (``DEC#<time>``)."""
        names = {f"#a{i}": k for i, k in enumerate(changes)}
        values = {f":v{i}": _SER.serialize(v) for i, v in enumerate(changes.values())}
        self._ddb.update_item(
            TableName=self.table,
            Key=_to_item({"pk": f"SVC#{cluster}#{service}", "sk": f"DEC#{iso(at)}"}),
            UpdateExpression="SET " + ", ".join(f"#a{i} = :v{i}" for i in range(len(changes))),
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )

    def acquire_slot(self, cluster: str, service: str, at: datetime, bound: int,
                     window: timedelta, state: ClusterState) -> int | None:
        """Take one of the cluster's ``bound`` action slots for ``service`` at event time ``at``.

        A slot is free when unused or last used before ``at - window``; the service's own slot is
        reused (a redelivered event resumes, never takes two). Returns the slot number or ``None``
        (blast-radius cap reached, or another invocation won the last slot).
        """
        for n, (svc, t) in state.slots.items():
            if n < bound and svc == service and t >= at - window:
                return n
        order = sorted(range(bound), key=lambda n: (n in state.slots, n))
        for n in order:
            try:
                self._ddb.put_item(
                    TableName=self.table,
                    Item=_to_item({"pk": f"WD#{cluster}", "sk": f"S#{n}", "service": service,
                                   "t": epoch(at), "expires_at": self._expires(at)}),
                    ConditionExpression="attribute_not_exists(pk) OR t < :start OR service = :svc",
                    ExpressionAttributeValues={":start": {"N": str(epoch(at - window))},
                                               ":svc": {"S": service}},
                )
                return n
            except ClientError as exc:
                if not _is_condition_failure(exc):
                    raise
        return None

    def open_mass_event(self, cluster: str, at: datetime, window: timedelta) -> bool:
        """True for the first hold of a mass event in this cluster (send the one cluster alert).

        The event stays open while holds keep coming less than a window apart.
        """
        try:
            self._ddb.put_item(
                TableName=self.table,
                Item=_to_item({"pk": f"WD#{cluster}", "sk": "M#mass", "last_t": epoch(at),
                               "opened_t": epoch(at), "expires_at": self._expires(at)}),
                ConditionExpression="attribute_not_exists(pk) OR last_t < :start",
                ExpressionAttributeValues={":start": {"N": str(epoch(at - window))}},
            )
            return True
        except ClientError as exc:
            if not _is_condition_failure(exc):
                raise
        try:
            self._ddb.update_item(
                TableName=self.table,
                Key=_to_item({"pk": f"WD#{cluster}", "sk": "M#mass"}),
                UpdateExpression="SET last_t = :t",
                ConditionExpression="last_t < :t",
                ExpressionAttributeValues={":t": {"N": str(epoch(at))}},
            )
        except ClientError as exc:
            if not _is_condition_failure(exc):
                raise
        return False

    def close_episode(self, cluster: str, service: str) -> None:
        """Mark the service's episode closed (``restore`` does this): the next loop decides anew."""
        try:
            self._ddb.update_item(
                TableName=self.table,
                Key=_to_item({"pk": f"WD#{cluster}#{service}", "sk": "W#"}),
                UpdateExpression="SET closed = :true, #s = :restored",
                ConditionExpression="attribute_exists(pk)",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={":true": {"BOOL": True}, ":restored": {"S": "restored"}},
            )
        except ClientError as exc:
            if not _is_condition_failure(exc):
                raise

    def latest_episode(self, cluster: str, service: str) -> Episode | None:
        """The service's episode, read strongly consistent (``restore`` uses it)."""
        return self.load_service(cluster, service).episode

    # ------------------------------------------------------------------ reading back
    def _query(self, **kwargs: Any) -> Iterator[dict[str, Any]]:
        paginator = self._ddb.get_paginator("query")
        for page in paginator.paginate(TableName=self.table, **kwargs):
            for item in page.get("Items", []):
                yield _from_item(item)

    def timeline_items(self, cluster: str, since: datetime, until: datetime,
                       fields: tuple[str, ...] | None = None) -> Iterator[dict[str, Any]]:
        """Every timeline item of ``cluster`` with ``since <= time <= until``, in time order: one Query per
        cluster-day on GSI ``gsi1``. ``fields`` projects the items (``ProjectionExpression``); ``None``
        returns them whole, raw event text included."""
        projection: dict[str, Any] = {}
        if fields:
            names = {f"#f{i}": f for i, f in enumerate(fields)}
            projection = {"ProjectionExpression": ", ".join(names), "ExpressionAttributeNames": names}
        day = since.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        while day <= until:
            yield from self._query(
                IndexName="gsi1",
                KeyConditionExpression="gsi1pk = :pk AND gsi1sk BETWEEN :lo AND :hi",
                ExpressionAttributeValues={
                    ":pk": {"S": timeline_key(cluster, day)},
                    ":lo": {"S": iso(since)}, ":hi": {"S": iso(until) + "~"},
                },
                **projection,
            )
            day += timedelta(days=1)

    def rejected(self, day: datetime) -> list[dict[str, Any]]:
        """Rejected events received on ``day`` (UTC), oldest first."""
        return list(self._query(KeyConditionExpression="pk = :pk",
                                ExpressionAttributeValues={":pk": {"S": f"REJECTED#{day:%Y-%m-%d}"}}))

    # ------------------------------------------------------------------ availability samples
    def record_sample(self, sample: Sample, *, target_group_dimension: str, load_balancers: int) -> bool:
        """Write one target group's healthy hosts for one minute, once (conditional PutItem).

        Item ``HH#<cluster>#<service>#<targetgroup/NAME/ID>`` / ``<minute ISO>``, ``type`` ``healthy_hosts``,
        on the timeline index (``gsi1sk`` ``<minute>#healthy_hosts#<service>#<target group>``).
        ``no_data`` is True when the minute had no datapoint. Returns False when the minute was
        written before (a re-run or a retried schedule writes nothing new).
        """
        t = sample.minute
        item = {
            "pk": f"HH#{sample.cluster}#{sample.service}#{target_group_dimension}",
            "sk": iso(t),
            "gsi1pk": timeline_key(sample.cluster, t),
            "gsi1sk": f"{iso(t)}#healthy_hosts#{sample.service}#{sample.target_group}",
            "type": "healthy_hosts",
            "time": iso(t),
            "t": epoch(t),
            "cluster": sample.cluster,
            "service": sample.service,
            "target_group": sample.target_group,
            "target_group_dimension": target_group_dimension,
            "load_balancers": load_balancers,
            "healthy_host_count": (int(sample.healthy_host_count) if sample.healthy_host_count is not None
                                   and float(sample.healthy_host_count).is_integer() else sample.healthy_host_count),
            "no_data": sample.healthy_host_count is None,
            "desired_count": sample.desired_count,
            "running_count": sample.running_count,
            "sampled_at": iso(sample.sampled_at) if sample.sampled_at else None,
            "expires_at": self._expires(t),
        }
        return self._put_new(item)

    #: what timelines and availability read of each timeline item (everything but the raw event)
    TIMELINE_FIELDS: ClassVar[tuple[str, ...]] = (
        "type", "time", "cluster", "service", "group", "task_arn", "last_status", "desired_status", "kind",
        "cause", "stop_code", "stopped_reason", "exit_codes", "az", "event_name", "detail_type", "action",
        "reason", "message", "decision", "services_in_cluster", "target_group", "healthy_host_count",
        "no_data", "desired_count", "running_count", "sampled_at",
    )

    def timeline_brief(self, cluster: str, since: datetime, until: datetime,
                       fields: tuple[str, ...] | None = None) -> Iterator[dict[str, Any]]:
        """:meth:`timeline_items` without the raw event text (``fields``, default :attr:`TIMELINE_FIELDS`)."""
        return self.timeline_items(cluster, since, until, fields or self.TIMELINE_FIELDS)
