"""The in-process implementation of the table port: ``replay``'s fast engine.

Plain dictionaries and sorted key lists; no network. An item is checked and cleaned on the way in
(:func:`_json_safe`: it refuses what DynamoDB would refuse of our writes, a value that is not JSON or a
map key that is not a string, and turns tuples into lists as DynamoDB does) and stored serialized
(:mod:`pickle`, its values only: the attribute names are kept once per shape, :class:`_Shapes`), as
DynamoDB stores it: a caller can never change a stored item by mutating what it wrote or read, every
read gets fresh objects, and a fleet-day's 100,000 items take less than half the memory of live
dictionaries (``make bench``). Floats stay floats, integers stay integers (DynamoDB's
Decimal round trip gives the same values: :mod:`ecs_guardrail.adapters.store.dynamodb`).
"""

from __future__ import annotations

import bisect
import pickle
from collections.abc import Iterator
from typing import Any

from ecs_guardrail.adapters.store.table import INDEX, Cond, ConditionFailedError

__all__ = ["MemoryTable"]


_SCALARS = (str, int, float, bool, type(None))


def _copy(value: Any) -> Any:
    """A copy of a JSON value: dicts and lists rebuilt, scalars shared (they are immutable).

    Raises:
        TypeError: a value JSON cannot hold, or a map key that is not a string.
    """
    kind = type(value)
    if kind is dict:
        out = {}
        for k, v in value.items():
            if type(k) is not str:
                raise TypeError(f"map key {k!r} is not a string")
            out[k] = v if type(v) in _SCALARS else _copy(v)
        return out
    if kind is list or kind is tuple:
        return [v if type(v) in _SCALARS else _copy(v) for v in value]
    if isinstance(value, _SCALARS):
        return value
    raise TypeError(f"{kind.__name__} is not a JSON value")


class _Shapes:
    """Items stored as ``(shape number, values)``: an item's attribute names, in their order, are kept once
    per distinct list of names (a table holds a few dozen: one per kind of item), not in every item's
    bytes. The names were about a fifth of a pickled task event (some 330 of 1,800 bytes)."""

    def __init__(self) -> None:
        self._names: list[tuple[str, ...]] = []
        self._numbers: dict[tuple[str, ...], int] = {}
        #: (shape number, wanted names) -> the (name, position) pairs :meth:`load_some` takes
        self._picks: dict[tuple[int, tuple[str, ...]], tuple[tuple[str, int], ...]] = {}

    #: items with more attributes than this are stored with their names (a fleet minute has one attribute
    #: per failing service: each write of it would otherwise be a new shape, kept for ever). A recorded task
    #: event has at most 30 (a stopped task's 27 on the fleet-day: at 24 they were pickled with their names)
    WIDE = 32

    def dump(self, item: dict[str, Any]) -> bytes:
        if len(item) > self.WIDE:
            return pickle.dumps((-1, item), protocol=pickle.HIGHEST_PROTOCOL)
        names = tuple(item)
        n = self._numbers.get(names)
        if n is None:
            n = self._numbers[names] = len(self._names)
            self._names.append(names)
        return pickle.dumps((n, tuple(item.values())), protocol=pickle.HIGHEST_PROTOCOL)

    def load(self, stored: bytes) -> dict[str, Any]:
        """A stored item, as fresh objects (the names are shared: text is immutable)."""
        n, values = pickle.loads(stored)  # noqa: S301 - bytes this table pickled itself, in process
        if n < 0:
            return values  # type: ignore[no-any-return]
        return dict(zip(self._names[n], values, strict=True))

    def load_some(self, stored: bytes, wanted: tuple[str, ...]) -> dict[str, Any]:
        """``{f: item[f] for f in wanted if f in item}`` of a stored item (the same dict, in ``wanted``'s
        order), without building the whole item: which of a shape's values ``wanted`` takes is worked
        out once per shape (a report's Query reads a fleet-day's items for a few of their ~27 attributes)."""
        n, values = pickle.loads(stored)  # noqa: S301 - bytes this table pickled itself, in process
        if n < 0:
            return {f: values[f] for f in wanted if f in values}
        at = self._picks.get((n, wanted))
        if at is None:
            where = {name: i for i, name in enumerate(self._names[n])}
            at = self._picks[(n, wanted)] = tuple((f, where[f]) for f in wanted if f in where)
        return {f: values[i] for f, i in at}


class MemoryTable:
    """:class:`~ecs_guardrail.adapters.store.table.Table` in memory. ``calls`` counts operations by
    DynamoDB's name for them (the benchmark compares it with the DynamoDB engine's calls)."""

    def __init__(self, name: str = "ecs-guardrail-history", region: str | None = None,
                 index_fields: tuple[str, ...] | None = None) -> None:
        self.name = name
        self.region = region
        #: the index's projection (DynamoDB ``INCLUDE``): keys plus these; ``None`` = the timeline fields
        if index_fields is None:
            from ecs_guardrail.adapters.store.timeline_reads import TIMELINE_FIELDS

            index_fields = TIMELINE_FIELDS
        self._projected = frozenset(("pk", "sk", INDEX[1], INDEX[2], *index_fields))
        self._shapes = _Shapes()
        self._items: dict[str, dict[str, bytes]] = {}  # pk -> sk -> the pickled item (_Shapes.dump)
        self._keys: dict[str, list[str]] = {}
        self._index: dict[str, list[tuple[str, str, str]]] = {}  # gsi1pk -> sorted (gsi1sk, pk, sk)
        self.calls: dict[str, int] = {}

    def _count(self, op: str) -> None:
        self.calls[op] = self.calls.get(op, 0) + 1

    # ------------------------------------------------------------------ writes
    def _store(self, item: dict[str, Any]) -> None:
        """Store ``item``, already copied and cleaned by :func:`_json_safe`."""
        pk, sk = item["pk"], item["sk"]
        part = self._items.setdefault(pk, {})
        stored = part.get(sk)
        old = self._shapes.load(stored) if stored is not None else None
        if old is not None and INDEX[1] in old and INDEX[2] in old:
            entries = self._index[old[INDEX[1]]]
            entries.remove((old[INDEX[2]], pk, sk))
        if sk not in part:
            bisect.insort(self._keys.setdefault(pk, []), sk)
        part[sk] = self._shapes.dump(item)
        if INDEX[1] in item and INDEX[2] in item:
            bisect.insort(self._index.setdefault(item[INDEX[1]], []), (item[INDEX[2]], pk, sk))

    def _check(self, item: dict[str, Any], cond: Cond | None) -> None:
        if cond is None:
            return
        stored = self._items.get(item["pk"], {}).get(item["sk"])
        old = self._shapes.load(stored) if stored is not None else None
        if not cond.holds(old):
            raise ConditionFailedError(old)

    def put(self, item: dict[str, Any], cond: Cond | None = None) -> None:
        self._count("PutItem")
        item = _json_safe(item)
        self._check(item, cond)
        self._store(item)

    def transact_put(self, writes: list[tuple[dict[str, Any], Cond | None]]) -> None:
        self._count("TransactWriteItems")
        copies = [_json_safe(item) for item, _ in writes]
        failed = []
        for i, (item, (_, cond)) in enumerate(zip(copies, writes, strict=True)):
            try:
                self._check(item, cond)
            except ConditionFailedError:
                failed.append(i)
        if failed:
            raise ConditionFailedError(None, tuple(failed))
        for item in copies:
            self._store(item)

    def add_to_set(self, pk: str, sk: str, attribute: str, members: list[str], *, max_size: int | None = None,
                   expires_at: int | None = None) -> int | None:
        self._count("UpdateItem")
        _check_members(members)
        stored = self._items.get(pk, {}).get(sk)
        item: dict[str, Any] = self._shapes.load(stored) if stored is not None else {"pk": pk, "sk": sk}
        old = item.get(attribute)
        if old is not None and type(old) is not list:
            raise TypeError(f"{attribute} is not a string set")
        if max_size is not None and old is not None and len(old) >= max_size:
            return None
        merged = sorted(set(old or ()) | set(members))
        item[attribute] = merged
        if expires_at is not None:
            item["expires_at"] = expires_at
        self._store(_json_safe(item))
        return len(merged)

    def delete_from_set(self, pk: str, sk: str, attribute: str, members: list[str]) -> None:
        self._count("UpdateItem")
        _check_members(members)
        stored = self._items.get(pk, {}).get(sk)
        if stored is None:
            return
        item = self._shapes.load(stored)
        old = item.get(attribute)
        if old is None:
            return
        left = sorted(set(old) - set(members))
        if left:
            item[attribute] = left
        else:
            del item[attribute]  # DynamoDB holds no empty set: the attribute goes
        self._store(_json_safe(item))

    # ------------------------------------------------------------------ reads
    def scan(self) -> Iterator[dict[str, Any]]:
        """Every stored item, as fresh objects, in no promised order (DynamoDB's Scan; for tests and
        inspection: no handler scans). Not counted in :attr:`calls`."""
        return (self._shapes.load(stored) for part in self._items.values() for stored in part.values())

    def get(self, pk: str, sk: str) -> dict[str, Any] | None:
        self._count("GetItem")
        stored = self._items.get(pk, {}).get(sk)
        return self._shapes.load(stored) if stored is not None else None

    def query(self, pk: str, *, lo: str | None = None, hi: str | None = None, prefix: str | None = None,
              descending: bool = False, limit: int | None = None, index: bool = False,
              fields: tuple[str, ...] | None = None) -> Iterator[dict[str, Any]]:
        self._count("Query")
        if prefix is not None and (lo is not None or hi is not None):
            raise ValueError("query: a prefix or a range, not both")
        if index:
            entries = self._index.get(pk, [])
            keys = [e[0] for e in entries]
            start = bisect.bisect_left(keys, lo) if lo is not None else 0
            end = bisect.bisect_right(keys, hi) if hi is not None else len(keys)
            selected = [(e[0], (e[1], e[2])) for e in entries[start:end] if prefix is None or e[0].startswith(prefix)]
        else:  # the partition's sorted keys, sliced before anything is built (a Query reads its range only)
            keys = self._keys.get(pk, [])
            start = bisect.bisect_left(keys, lo) if lo is not None else 0
            end = bisect.bisect_right(keys, hi) if hi is not None else len(keys)
            selected = [(k, (pk, k)) for k in keys[start:end] if prefix is None or k.startswith(prefix)]
        if descending:
            selected.reverse()
        if limit is not None:
            selected = selected[:limit]
        # what the index holds: its keys, the table's keys and the projected attributes; of those, ``fields``
        wanted = tuple(f for f in fields if not index or f in self._projected) if fields else None
        out = []
        for _, (p, s) in selected:
            if wanted is not None:
                out.append(self._shapes.load_some(self._items[p][s], wanted))
                continue
            item = self._shapes.load(self._items[p][s])
            if index:
                item = {k: v for k, v in item.items() if k in self._projected}
            out.append(item)
        return iter(out)


def _check_members(members: list[str]) -> None:
    """DynamoDB refuses an empty set and an empty string in a set (ValidationException)."""
    if not members or any(type(m) is not str or not m for m in members):
        raise ValueError("a string set update needs at least one member, each a non-empty string")


def _json_safe(item: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``item`` to store, without the attributes DynamoDB would not store for us (``None``,
    ``""``, ``[]``, ``{}``: :func:`~ecs_guardrail.adapters.store.table.clean`), in one pass. Refuses what
    DynamoDB would refuse for our writes: keys missing (``ValueError``), non-JSON values (``TypeError``)."""
    if not isinstance(item.get("pk"), str) or not isinstance(item.get("sk"), str):
        raise ValueError("an item needs string pk and sk")
    out = {}
    for k, v in item.items():
        if type(k) is not str:
            raise TypeError(f"map key {k!r} is not a string")
        if type(v) not in _SCALARS:
            v = _copy(v)
            if (type(v) is list or type(v) is dict) and not v:  # an empty list (or tuple) or map
                continue
        elif v is None or v == "":
            continue
        out[k] = v
    return out
