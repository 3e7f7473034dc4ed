"""The table port on DynamoDB, through a boto3 *client* passed in (low-level API, no resource layer).

Conditional writes ask for ``ReturnValuesOnConditionCheckFailure=ALL_OLD`` so the loser of a race
knows who won (DynamoDB API Reference, PutItem). Reads of state are strongly consistent
(``ConsistentRead``); the index can only be read eventually consistent (GSIs do not support
strongly consistent reads), which the timeline tolerates. Numbers come back as ``Decimal`` and are
turned into ``int`` or ``float``; floats go in as ``Decimal(str(x))`` so ``0.1`` stays ``0.1``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from botocore.exceptions import ClientError

from ecs_guardrail.adapters.store.table import INDEX, Cond, ConditionFailedError, Item, clean

__all__ = ["DynamoTable", "plain"]



@functools.cache
def _codec() -> tuple[Any, Any]:
    """boto3's ``(TypeSerializer(), TypeDeserializer())``, made on first use: importing ``boto3`` loads
    its session machinery (about 100 ms of CPU), which the fast replay engine, whose table is a
    :class:`~ecs_guardrail.adapters.store.memory.MemoryTable`, never needs."""
    from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

    return TypeSerializer(), TypeDeserializer()


def plain(value: Any) -> Any:
    """Deserialised DynamoDB values back to plain JSON types (Decimal -> int/float, sets -> sorted lists,
    as :class:`~ecs_guardrail.adapters.store.memory.MemoryTable` returns them)."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, set | frozenset):
        return sorted(plain(v) for v in value)
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def _num(value: Any) -> Any:
    if isinstance(value, float):
        return Decimal(str(value))
    if isinstance(value, dict):
        return {k: _num(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_num(v) for v in value]
    return value


def _to_item(attrs: dict[str, Any] | Item) -> dict[str, Any]:
    ser = _codec()[0]
    return {k: ser.serialize(_num(v)) for k, v in clean(attrs).items()}


def _from_item(item: dict[str, Any]) -> dict[str, Any]:
    de = _codec()[1]
    return {k: plain(de.deserialize(v)) for k, v in item.items()}


def _condition(cond: Cond) -> dict[str, Any]:
    """``attribute_not_exists(pk) OR (#c0 = :c0 AND ...) OR ...`` with named parts."""
    parts, names, values = [], {}, {}
    if cond.absent:
        parts.append("attribute_not_exists(pk)")
    n = 0
    for conj in cond.any_of:
        terms = []
        for k, v in conj.items():
            names[f"#c{n}"] = k
            values[f":c{n}"] = _codec()[0].serialize(_num(v))
            terms.append(f"#c{n} = :c{n}")
            n += 1
        parts.append("(" + " AND ".join(terms) + ")")
    out: dict[str, Any] = {"ConditionExpression": " OR ".join(parts) or "attribute_not_exists(pk)"}
    if names:
        out["ExpressionAttributeNames"] = names
        out["ExpressionAttributeValues"] = values
    return out


def _is_condition_failure(exc: ClientError) -> bool:
    return exc.response.get("Error", {}).get("Code") in ("ConditionalCheckFailedException",
                                                          "TransactionCanceledException")


class DynamoTable:
    """:class:`~ecs_guardrail.adapters.store.table.Table` on one DynamoDB table.

    Raises botocore ``ClientError`` for anything but a failed condition (throttling, access, item too
    large): those propagate to Lambda's retry and dead-letter path.
    """

    def __init__(self, client: Any, name: str) -> None:
        self._ddb = client
        self.name = name
        self.region: str | None = getattr(getattr(client, "meta", None), "region_name", None)

    def put(self, item: dict[str, Any] | Item, cond: Cond | None = None) -> None:
        kwargs: dict[str, Any] = {}
        if cond is not None:
            kwargs = {**_condition(cond), "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}
        try:
            self._ddb.put_item(TableName=self.name, Item=_to_item(item), **kwargs)
        except ClientError as exc:
            if not _is_condition_failure(exc):
                raise
            old = exc.response.get("Item")
            raise ConditionFailedError(_from_item(old) if old else None) from exc

    def transact_put(self, writes: list[tuple[dict[str, Any], Cond | None]]) -> None:
        items = []
        for item, cond in writes:
            put: dict[str, Any] = {"TableName": self.name, "Item": _to_item(item)}
            if cond is not None:
                put.update(_condition(cond))
            items.append({"Put": put})
        try:
            self._ddb.transact_write_items(TransactItems=items)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "TransactionCanceledException":
                raise
            reasons = exc.response.get("CancellationReasons") or []
            if reasons and not any(r.get("Code") == "ConditionalCheckFailed" for r in reasons):
                raise  # cancelled for another reason (a conflict, throttling): retried by the caller's path
            failed = tuple(i for i, r in enumerate(reasons) if r.get("Code") == "ConditionalCheckFailed")
            raise ConditionFailedError(None, failed or None) from exc

    def add_to_set(self, pk: str, sk: str, attribute: str, members: list[str], *, max_size: int | None = None,
                   expires_at: int | None = None) -> int | None:
        if not members or any(not isinstance(m, str) or not m for m in members):
            raise ValueError("a string set update needs at least one member, each a non-empty string")
        kwargs: dict[str, Any] = {
            "TableName": self.name, "Key": _to_item({"pk": pk, "sk": sk}),
            "UpdateExpression": "ADD #a :m" + (" SET #e = :e" if expires_at is not None else ""),
            "ExpressionAttributeNames": {"#a": attribute, **({"#e": "expires_at"} if expires_at is not None else {})},
            "ExpressionAttributeValues": {":m": {"SS": sorted(set(members))},
                                          **({":e": {"N": str(int(expires_at))}} if expires_at is not None else {})},
            "ReturnValues": "UPDATED_NEW",
        }
        if max_size is not None:
            kwargs["ConditionExpression"] = "attribute_not_exists(#a) OR size(#a) < :n"
            kwargs["ExpressionAttributeValues"][":n"] = {"N": str(int(max_size))}
        try:
            resp = self._ddb.update_item(**kwargs)
        except ClientError as exc:
            if not _is_condition_failure(exc):
                raise
            return None
        got = resp.get("Attributes", {}).get(attribute)
        if got is None:  # an ADD of members already there may return nothing (moto does): read the set
            got = {"SS": (self.get(pk, sk) or {}).get(attribute) or ()}
        return len(got.get("SS", ()))

    def delete_from_set(self, pk: str, sk: str, attribute: str, members: list[str]) -> None:
        if not members or any(not isinstance(m, str) or not m for m in members):
            raise ValueError("a string set update needs at least one member, each a non-empty string")
        try:  # attribute_exists(pk): UpdateItem would otherwise create the absent item with its keys
            self._ddb.update_item(TableName=self.name, Key=_to_item({"pk": pk, "sk": sk}),
                                  UpdateExpression="DELETE #a :m", ConditionExpression="attribute_exists(pk)",
                                  ExpressionAttributeNames={"#a": attribute},
                                  ExpressionAttributeValues={":m": {"SS": sorted(set(members))}})
        except ClientError as exc:
            if not _is_condition_failure(exc):
                raise

    def get(self, pk: str, sk: str) -> dict[str, Any] | None:
        resp = self._ddb.get_item(TableName=self.name, Key=_to_item({"pk": pk, "sk": sk}), ConsistentRead=True)
        item = resp.get("Item")
        return _from_item(item) if item else None

    def query(self, pk: str, *, lo: str | None = None, hi: str | None = None, prefix: str | None = None,
              descending: bool = False, limit: int | None = None, index: bool = False,
              fields: tuple[str, ...] | None = None) -> Iterator[dict[str, Any]]:
        if prefix is not None and (lo is not None or hi is not None):
            raise ValueError("query: a prefix or a range, not both")
        pk_name, sk_name = (INDEX[1], INDEX[2]) if index else ("pk", "sk")
        names = {"#p": pk_name}
        values: dict[str, Any] = {":p": {"S": pk}}
        key = "#p = :p"
        if lo is not None and hi is not None:
            key += " AND #s BETWEEN :lo AND :hi"
            values.update({":lo": {"S": lo}, ":hi": {"S": hi}})
        elif lo is not None:
            key += " AND #s >= :lo"
            values[":lo"] = {"S": lo}
        elif hi is not None:
            key += " AND #s <= :hi"
            values[":hi"] = {"S": hi}
        elif prefix is not None:
            key += " AND begins_with(#s, :pre)"
            values[":pre"] = {"S": prefix}
        kwargs: dict[str, Any] = {"TableName": self.name, "KeyConditionExpression": key,
                                  "ExpressionAttributeValues": values, "ScanIndexForward": not descending}
        if index:
            kwargs["IndexName"] = INDEX[0]
        else:
            kwargs["ConsistentRead"] = True
        if fields:
            proj = {f"#f{i}": f for i, f in enumerate(fields)}
            names.update(proj)
            kwargs["ProjectionExpression"] = ", ".join(proj)
        if "#s" in key:
            names["#s"] = sk_name
        kwargs["ExpressionAttributeNames"] = names
        remaining = limit
        while True:
            if remaining is not None:
                kwargs["Limit"] = remaining
            resp = self._ddb.query(**kwargs)
            for raw in resp.get("Items", []):
                yield _from_item(raw)
                if remaining is not None:
                    remaining -= 1
            last = resp.get("LastEvaluatedKey")
            if not last or (remaining is not None and remaining <= 0):
                return
            kwargs["ExclusiveStartKey"] = last
