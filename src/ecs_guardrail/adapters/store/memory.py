"""The in-process implementation of the table port: ``replay``'s fast engine.

Plain dictionaries and sorted key lists; no network. An item is checked on the way in, as DynamoDB
checks our writes (a value that is not JSON or a map key that is not a string: ``TypeError``; a ``pk``
or ``sk`` that is not a string: ``ValueError``), and stored once, serialized, as a *row*: a caller can
never change a stored item by mutating what it wrote or read, every read gets fresh objects, and the
attribute names are kept once per shape of item (:class:`_Rows`), not in every row. Rows are bytes, which
the garbage collector never walks, so a fleet-day's 100,000 items cost it nothing.

- A typed item (:class:`~ecs_guardrail.adapters.store.table.Item`: the recorder's task events) is
  packed as it is by msgspec (MessagePack, its fields as an array), in C: its writer built it from
  checked values, so nothing of it is inspected in Python.
- A ``dict`` whose values are all JSON scalars (text, numbers, booleans, ``None``) and whose keys are
  text is checked by C loops (the types of its keys and values) and packed the same way.
- Any other item (a list or a map in it, an empty text, more than :attr:`_Rows.WIDE` attributes, a
  number MessagePack cannot hold) is copied and cleaned in Python (:func:`_json_safe`) and pickled.

A ``None`` kept in a packed row is left out of every read: DynamoDB stores no null attribute for us
(``table.clean``), and neither empty texts, lists nor maps, which a packed row never holds. Floats stay
floats, integers stay integers (DynamoDB's Decimal round trip gives the same values:
:mod:`ecs_guardrail.adapters.store.dynamodb`). A Query costs the logarithm of its partition's size and
the rows it returns (a prefix is a range of sort keys), never a walk of the whole partition.
"""

from __future__ import annotations

import bisect
import functools
import operator
import pickle
from collections.abc import Iterator
from typing import Any

import msgspec

from ecs_guardrail.adapters.store.table import INDEX, Cond, ConditionFailedError, Item

__all__ = ["MemoryTable"]


_SCALARS = (str, int, float, bool, type(None))
#: the value types a dict's packed row takes as they are (exact types: a subclass, a ``StrEnum``, is pickled)
_PACKABLE = frozenset(_SCALARS)
_TEXT = frozenset((str,))
#: the values DynamoDB does not store for us (``table.clean``)
_ABSENT: tuple[Any, ...] = (None, "", [], {})
_FIRST = operator.itemgetter(0)
_KEYS = operator.attrgetter("pk", "sk")  # a typed item's keys; with its index keys:
_INDEXED_KEYS = operator.attrgetter("pk", "sk", INDEX[1], INDEX[2])
_MAX_CHAR = chr(0x10FFFF)
_PACK_INTO = msgspec.msgpack.Encoder().encode_into
_UNPACK = msgspec.msgpack.Decoder().decode
_PACKED = 0x92  # the first byte of a packed row, a MessagePack array of two; a pickle's is 0x80

Row = bytes


#: the buffers :func:`_pack` encodes into, kept between calls (``list.pop`` and ``append`` are atomic: two
#: threads never share one)
_BUFFERS: list[bytearray] = []


def _pack(row: tuple[int, Any]) -> Row:
    """``row`` packed, at its exact size (the bytes an encoder returns keep their spare room: a fleet-day's
    rows would take half as much again). Encoded into a buffer kept from an earlier call, grown already
    to a task event's size, then copied out: not a new buffer grown step by step for each row."""
    try:
        buffer = _BUFFERS.pop()
    except IndexError:
        buffer = bytearray()
    try:
        _PACK_INTO(row, buffer)
        return bytes(buffer)
    finally:
        _BUFFERS.append(buffer)


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


class _Rows:
    """Items as rows (the module docstring): ``[shape number, [values]]`` packed by msgspec, or the pickled
    ``(shape number, values)`` of a cleaned item (``(-1, item)`` past :attr:`WIDE` attributes). A shape is
    an item's attribute names in their order, kept once (a table holds a few dozen: one per kind of item)."""

    #: items with more attributes than this are pickled with their names (a fleet minute has one attribute
    #: per failing service: each write of it would otherwise be a new shape, kept for ever). A recorded task
    #: event has at most 30 (a stopped task's)
    WIDE = 32

    def __init__(self) -> None:
        self._names: list[tuple[str, ...]] = []
        self._numbers: dict[tuple[str, ...], int] = {}
        self._typed: dict[type, tuple[int, bool]] = {}  # Item subclass -> (its shape, whether it has index keys)
        #: (shape number, wanted names) -> the (name, position) pairs :meth:`load_some` takes
        self._picks: dict[tuple[int, tuple[str, ...]], tuple[tuple[str, int], ...]] = {}
        #: (shape number, wanted names) -> what :meth:`load_some` reads a packed row of that shape with
        self._pickers: dict[tuple[int, tuple[str, ...]], tuple[tuple[str, ...], Any, Any]] = {}
        self._tuple_pickers: dict[tuple[int, tuple[str, ...]], tuple[Any, Any]] = {}  # the same, for :meth:`values`
        #: wanted names -> shape number -> ``(decode, values_of)`` of :attr:`_tuple_pickers`: what
        #: :meth:`values_of_rows` looks up once a row by its shape byte, not by a key holding ``wanted``
        self._tuple_pickers_by_wanted: dict[tuple[str, ...], dict[int, tuple[Any, Any]]] = {}

    def __getstate__(self) -> dict[str, Any]:
        """What pickling keeps (a table copied for the explorer's schedules, a ``--jobs`` worker): the shapes,
        not the readers built from them (msgspec decoders and per-shape Structs, which cannot be pickled and
        are made again on first use)."""
        return {**self.__dict__, "_pickers": {}, "_tuple_pickers": {}, "_tuple_pickers_by_wanted": {}}

    def _shape(self, names: tuple[str, ...]) -> int:
        n = self._numbers.get(names)
        if n is None:
            n = self._numbers[names] = len(self._names)
            self._names.append(names)
        return n

    def encode(self, item: dict[str, Any] | Item) -> tuple[Row, str, str, tuple[Any, Any] | None]:
        """``(row, pk, sk, (gsi1pk, gsi1sk) or None)`` of ``item`` (the module docstring; ``None``: the item
        is not in the index).

        Raises:
            ValueError: no text ``pk`` or ``sk``. TypeError: a value JSON cannot hold, a key not text.
        """
        if isinstance(item, Item):
            typed = self._typed.get(type(item))
            if typed is None:
                fields = item.__struct_fields__
                typed = self._typed[type(item)] = (self._shape(fields), INDEX[1] in fields and INDEX[2] in fields)
            try:
                row = _pack((typed[0], item))
            except (OverflowError, UnicodeEncodeError):  # not what its writer promised: checked as a dict
                item = dict(item.items())
            else:
                if typed[1]:
                    pk, sk, index_pk, index_sk = _INDEXED_KEYS(item)
                    if index_pk is not None and index_sk is not None:
                        return row, pk, sk, (index_pk, index_sk)
                    return row, pk, sk, None
                return (row, *_KEYS(item), None)
        return self.row(item), item["pk"], item["sk"], _index_of(item)

    def row(self, item: dict[str, Any]) -> Row:
        """The row of a ``dict`` item (:meth:`encode`).

        Raises:
            ValueError: no text ``pk`` or ``sk``. TypeError: a value JSON cannot hold, a key not text.
        """
        if not isinstance(item.get("pk"), str) or not isinstance(item.get("sk"), str):
            raise ValueError("an item needs string pk and sk")
        values = tuple(item.values())
        if len(values) <= self.WIDE and _PACKABLE.issuperset(map(type, values)) \
                and _TEXT.issuperset(map(type, item)) and "" not in values:
            try:
                return _pack((self._shape(tuple(item)), values))
            except (OverflowError, UnicodeEncodeError):  # an integer past 64 bits, a lone surrogate: pickled
                pass
        clean = _json_safe(item)
        if len(clean) > self.WIDE:
            return pickle.dumps((-1, clean), protocol=pickle.HIGHEST_PROTOCOL)
        return pickle.dumps((self._shape(tuple(clean)), tuple(clean.values())), protocol=pickle.HIGHEST_PROTOCOL)

    def clean_row(self, item: dict[str, Any]) -> Row:
        """:meth:`row` of an item already clean (text keys and ``pk``/``sk``; JSON values, none of them
        ``None`` or empty, lists and maps its own): a wide one pickled as :meth:`row` pickles it, not
        checked and copied again (a fleet minute's item, one attribute per failing service)."""
        if len(item) > self.WIDE:
            return pickle.dumps((-1, item), protocol=pickle.HIGHEST_PROTOCOL)
        values = tuple(item.values())
        if _PACKABLE.issuperset(map(type, values)):  # scalars only: packed, as :meth:`row` packs them
            return self.row(item)
        # a list in it (a string set): pickled as :meth:`row` pickles it, the item being its own clean copy
        return pickle.dumps((self._shape(tuple(item)), values), protocol=pickle.HIGHEST_PROTOCOL)

    def load(self, row: Row) -> dict[str, Any]:
        """A stored item, as fresh objects (its names are shared: text is immutable)."""
        if row[0] == _PACKED:
            n, values = _UNPACK(row)
            return {k: v for k, v in zip(self._names[n], values, strict=True) if v is not None}
        n, values = pickle.loads(row)  # noqa: S301 - bytes this table pickled itself, in process
        if n < 0:
            return values  # type: ignore[no-any-return]
        return dict(zip(self._names[n], values, strict=True))

    def load_some(self, row: Row, wanted: tuple[str, ...]) -> dict[str, Any]:
        """``{f: item[f] for f in wanted if f in item}`` of a stored item (the same dict, in ``wanted``'s
        order), without building the whole item: which of a shape's values ``wanted`` takes is worked
        out once per shape, and a packed row's values are decoded in C only up to the last of them, the
        rest skipped unread (:meth:`_picker`: a report's Query reads a fleet-day's task events for 9 of
        their 30 attributes, never their raw event text)."""
        if row[0] == _PACKED and row[1] < 0x80:  # the shape number, a positive fixint (a table has a few dozen)
            pick = self._pickers.get((row[1], wanted))
            if pick is None:
                pick = self._picker(row[1], wanted)
            names, decode, values_of = pick
            if not names:
                return {}
            return {f: v for f, v in zip(names, values_of(decode(row)[1]), strict=True) if v is not None}
        if row[0] == _PACKED:
            n, values = _UNPACK(row)
        else:
            n, values = pickle.loads(row)  # noqa: S301 - bytes this table pickled itself, in process
            if n < 0:
                return {f: values[f] for f in wanted if f in values}
        at = self._at(n, wanted)
        return {f: values[i] for f, i in at if values[i] is not None}

    def values(self, row: Row, wanted: tuple[str, ...]) -> tuple[Any, ...]:
        """``tuple(item.get(f) for f in wanted)`` of a stored item (``None``: the item has no such
        attribute), without building a dict: a packed row is decoded in C up to the last value wanted
        (:meth:`_picker`), the values picked in C."""
        if row[0] == _PACKED and row[1] < 0x80:
            pick = self._tuple_pickers.get((row[1], wanted))
            if pick is None:
                pick = self._tuple_picker(row[1], wanted)
            decode, values_of = pick
            return values_of(decode(row)[1])  # type: ignore[no-any-return]
        found = self.load_some(row, wanted)
        return tuple(map(found.get, wanted))

    def values_of_rows(self, rows: list[Row], wanted: tuple[str, ...]) -> list[tuple[Any, ...]]:
        """``[self.values(row, wanted) for row in rows]``, the readers of ``wanted`` looked up once for the
        rows and then by each packed row's shape byte: no method call and no lookup by a key holding
        ``wanted`` (hashed anew each time) a row (a report's Query of a cluster-hour returns thousands)."""
        by_shape = self._tuple_pickers_by_wanted.get(wanted)
        if by_shape is None:
            by_shape = self._tuple_pickers_by_wanted[wanted] = {}
        out: list[tuple[Any, ...]] = []
        append = out.append
        for row in rows:
            if row[0] == _PACKED and row[1] < 0x80:
                pick = by_shape.get(row[1])
                if pick is None:
                    pick = self._tuple_pickers.get((row[1], wanted)) or self._tuple_picker(row[1], wanted)
                    by_shape[row[1]] = pick
                append(pick[1](pick[0](row)[1]))
            else:
                append(self.values(row, wanted))
        return out

    def _tuple_picker(self, n: int, wanted: tuple[str, ...]) -> tuple[Any, Any]:
        """``(decode, values_of)`` as :meth:`_picker` makes them, ``values_of`` giving every one of
        ``wanted``, ``None`` for those shape ``n`` has not (a class attribute of the Struct)."""
        where = {name: i for i, name in enumerate(self._names[n])}
        positions = [where.get(f) for f in wanted]
        last = max((i for i in positions if i is not None), default=-1)
        # a value not wanted is kept as its undecoded bytes (msgspec.Raw: a view of the row, no text or number
        # built: a task event's keys, event id and detail type before its last wanted value)
        taken = set(positions)
        head = msgspec.defstruct(f"Values{n}", [(f"v{i}", Any if i in taken else msgspec.Raw) for i in range(last + 1)],
                                 array_like=True, gc=False, namespace={"absent": None})
        getter = operator.attrgetter(*("absent" if i is None else f"v{i}" for i in positions))
        values_of = getter if len(wanted) > 1 else (lambda values: (getter(values),))
        pick = self._tuple_pickers[(n, wanted)] = (msgspec.msgpack.Decoder(tuple[int, head]).decode,  # type: ignore[valid-type]
                                                  values_of)
        return pick

    def _at(self, n: int, wanted: tuple[str, ...]) -> tuple[tuple[str, int], ...]:
        """The ``(name, position)`` of each of ``wanted`` that shape ``n`` has, in ``wanted``'s order."""
        at = self._picks.get((n, wanted))
        if at is None:
            where = {name: i for i, name in enumerate(self._names[n])}
            at = self._picks[(n, wanted)] = tuple((f, where[f]) for f in wanted if f in where)
        return at

    def _picker(self, n: int, wanted: tuple[str, ...]) -> tuple[tuple[str, ...], Any, Any]:
        """``(names, decode, values_of)`` for the packed rows of shape ``n`` read for ``wanted``: ``decode``
        takes a row to ``(n, values)``, its values an array-like Struct of the shape's first values up to
        the last one wanted (msgspec skips an array-like Struct's trailing elements without building
        them); ``values_of`` gives the wanted ones' values, in ``names``' order."""
        at = self._at(n, wanted)
        if not at:
            pick: tuple[tuple[str, ...], Any, Any] = ((), None, None)
        else:
            last = max(i for _, i in at)
            head = msgspec.defstruct(f"Head{n}", [(f"v{i}", Any) for i in range(last + 1)], array_like=True,
                                     gc=False)
            getter = operator.attrgetter(*(f"v{i}" for _, i in at))
            values_of = getter if len(at) > 1 else (lambda values: (getter(values),))
            decoder = msgspec.msgpack.Decoder(tuple[int, head])  # type: ignore[valid-type]
            pick = (tuple(f for f, _ in at), decoder.decode, values_of)
        self._pickers[(n, wanted)] = pick
        return pick


def _index_of(item: dict[str, Any] | Item) -> tuple[Any, Any] | None:
    """``(gsi1pk, gsi1sk)`` of an item that is in the index (it has both), else ``None``."""
    if type(item) is dict:
        index_pk, index_sk = item.get(INDEX[1]), item.get(INDEX[2])
    else:
        index_pk, index_sk = getattr(item, INDEX[1], None), getattr(item, INDEX[2], None)
    if index_pk in _ABSENT or index_sk in _ABSENT:
        return None
    return index_pk, index_sk


def _span(keys: list[Any], lo: str | None, hi: str | None, prefix: str | None, key: Any = None) -> tuple[int, int]:
    """``(start, end)``: the positions in sorted ``keys`` of those with ``lo <= k <= hi``, or starting with
    ``prefix``, by bisection (the texts starting with ``prefix`` are those from ``prefix`` up to, not
    including, ``prefix`` with its last character's code point raised by one)."""
    if prefix:
        start = bisect.bisect_left(keys, prefix, key=key)
        if prefix[-1] == _MAX_CHAR:  # no code point above it: walk (no key of this project ends so)
            end = start
            while end < len(keys) and (keys[end] if key is None else key(keys[end])).startswith(prefix):
                end += 1
            return start, end
        return start, bisect.bisect_left(keys, prefix[:-1] + chr(ord(prefix[-1]) + 1), key=key)
    start = bisect.bisect_left(keys, lo, key=key) if lo is not None else 0
    end = bisect.bisect_right(keys, hi, key=key) if hi is not None else len(keys)
    return start, end


def _insert(entries: list[Any], entry: Any) -> None:
    """``entry`` into sorted ``entries``: appended when it sorts last (events come in time order), else
    by bisection."""
    if not entries or entries[-1] <= entry:
        entries.append(entry)
    else:
        bisect.insort(entries, entry)


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
        self._rows = _Rows()
        self._items: dict[str, dict[str, Row]] = {}  # pk -> sk -> row (_Rows.row)
        #: pk -> its sort keys in order, made when the partition is first queried (most task partitions never are)
        self._keys: dict[str, list[str]] = {}
        #: gsi1pk -> sorted (gsi1sk, pk, sk, row): the entry holds its item's row (replaced with it), so an
        #: index Query reads its rows in order without a lookup per item in :attr:`_items`
        self._index: dict[str, list[tuple[str, str, str, Row]]] = {}
        #: the keys of the pickled rows that are in the index (:meth:`_store` reads no other pickled row's keys)
        self._pickled_in_index: set[tuple[str, str]] = set()
        self.calls: dict[str, int] = {}

    def _count(self, op: str) -> None:
        self.calls[op] = self.calls.get(op, 0) + 1

    # ------------------------------------------------------------------ writes
    def _old(self, pk: str, sk: str) -> Row | None:
        part = self._items.get(pk)
        return part.get(sk) if part is not None else None

    def _store(self, pk: str, sk: str, row: Row, index: tuple[Any, Any] | None) -> None:
        """Store ``row`` at ``(pk, sk)``; ``index``: its ``(gsi1pk, gsi1sk)``, ``None`` when not in the index."""
        part = self._items.get(pk)
        if part is None:
            self._items[pk] = {sk: row}
        else:
            old = part.get(sk)
            part[sk] = row
            if old is None:
                keys = self._keys.get(pk)
                if keys is not None:
                    _insert(keys, sk)
            elif old[0] == _PACKED or (pk, sk) in self._pickled_in_index:
                # a packed row's index keys are decoded alone (:meth:`_Rows.load_some`); a pickled row is
                # read only when it is in the index (a fleet minute's wide item, rewritten each update, never is)
                was = self._rows.load_some(old, (INDEX[1], INDEX[2]))
                if len(was) == 2:
                    entries, entry = self._index[was[INDEX[1]]], (was[INDEX[2]], pk, sk)
                    at = bisect.bisect_left(entries, entry)  # a 3-tuple sorts just before its 4-tuple
                    if not (at < len(entries) and entries[at][:3] == entry):  # not sorted as it should be
                        at = next((i for i, e in enumerate(entries) if e[:3] == entry), -1)
                        if at < 0:
                            raise ValueError(f"{entry!r} is not in the index")
                    del entries[at]
        if row[0] != _PACKED:
            if index is not None:
                self._pickled_in_index.add((pk, sk))
            elif self._pickled_in_index:
                self._pickled_in_index.discard((pk, sk))
        elif self._pickled_in_index:
            self._pickled_in_index.discard((pk, sk))
        if index is not None:
            listed = self._index.get(index[0])
            if listed is None:
                self._index[index[0]] = [(index[1], pk, sk, row)]
            else:
                _insert(listed, (index[1], pk, sk, row))

    def _check(self, pk: str, sk: str, cond: Cond | None) -> None:
        if cond is None:
            return
        stored = self._old(pk, sk)
        if stored is None:  # Cond.holds(None): attribute_not_exists(pk) alone holds of an absent item
            if not cond.absent:
                raise ConditionFailedError(None)
            return
        # the condition reads only the attributes it names: those are decoded; the whole item only when the
        # error's ``old`` is read (the row is bytes: the item as it was now, whenever it is decoded)
        named = tuple(dict.fromkeys(k for conj in cond.any_of for k in conj))
        if not cond.holds(self._rows.load_some(stored, named)):
            raise ConditionFailedError(functools.partial(self._rows.load, stored))

    def put(self, item: dict[str, Any] | Item, cond: Cond | None = None) -> None:
        calls = self.calls
        calls["PutItem"] = calls.get("PutItem", 0) + 1
        # refused before any condition is evaluated, as DynamoDB validates an item first. A typed item of a
        # kind already written (a fleet-day's 100,000 task events) is packed here, as :meth:`_Rows.encode`
        # packs it, without its calls and the tuples they return (~a fifth of a task event's put)
        typed = self._rows._typed.get(type(item))
        if typed is None:
            row, pk, sk, index = self._rows.encode(item)
        else:
            try:
                buffer = _BUFFERS.pop()
            except IndexError:
                buffer = bytearray()
            try:
                _PACK_INTO((typed[0], item), buffer)
                row = bytes(buffer)
            except (OverflowError, UnicodeEncodeError):  # not what its writer promised: :meth:`_Rows.encode`
                row = b""
            finally:
                _BUFFERS.append(buffer)
            if not row:
                row, pk, sk, index = self._rows.encode(item)
            elif typed[1]:
                pk, sk, index_pk, index_sk = _INDEXED_KEYS(item)
                index = (index_pk, index_sk) if index_pk is not None and index_sk is not None else None
            else:
                pk, sk = _KEYS(item)
                index = None
        part = self._items.get(pk)
        if part is not None and sk in part:  # a replacement: :meth:`_check`, then :meth:`_store`
            self._check(pk, sk, cond)
            self._store(pk, sk, row, index)
            return
        # a new item (most puts: a task event written once): :meth:`_check` and :meth:`_store` of an absent one
        if cond is not None and not cond.absent:  # Cond.holds(None)
            raise ConditionFailedError(None)
        if part is None:
            self._items[pk] = {sk: row}
        else:
            part[sk] = row
            keys = self._keys.get(pk)
            if keys is not None:
                _insert(keys, sk)
        if index is not None:
            if row[0] != _PACKED:
                self._pickled_in_index.add((pk, sk))
            listed = self._index.get(index[0])
            entry = (index[1], pk, sk, row)
            if listed is None:
                self._index[index[0]] = [entry]
            elif listed and listed[-1] <= entry:  # :func:`_insert` inline: appended when it sorts last
                listed.append(entry)
            else:
                bisect.insort(listed, entry)

    def transact_put(self, writes: list[tuple[dict[str, Any] | Item, Cond | None]]) -> None:
        self._count("TransactWriteItems")
        encoded = [self._rows.encode(item) for item, _ in writes]
        failed = []
        for i, ((_, pk, sk, _), (_, cond)) in enumerate(zip(encoded, writes, strict=True)):
            try:
                self._check(pk, sk, cond)
            except ConditionFailedError:
                failed.append(i)
        if failed:
            raise ConditionFailedError(None, tuple(failed))
        for row, pk, sk, index in encoded:
            self._store(pk, sk, row, index)

    def _rewrite(self, item: dict[str, Any]) -> None:
        """Store ``item``, an item read back (clean: :meth:`_Rows.load`) with one attribute changed to a
        list of non-empty texts or removed and ``expires_at`` maybe set: what :meth:`_Rows.row` would
        make of it, without checking and copying it again, when ``pk``, ``sk`` and every name are text and
        ``expires_at`` an integer (else the full check: its error, as ever)."""
        pk, sk = item["pk"], item["sk"]
        if type(pk) is str and type(sk) is str and type(item.get("expires_at", 0)) is int \
                and _TEXT.issuperset(map(type, item)):
            row = self._rows.clean_row(item)
        else:
            row = self._rows.row(item)
        self._store(pk, sk, row, _index_of(item))

    def add_to_set(self, pk: str, sk: str, attribute: str, members: list[str], *, max_size: int | None = None,
                   expires_at: int | None = None) -> int | None:
        self._count("UpdateItem")
        _check_members(members)
        stored = self._old(pk, sk)
        item: dict[str, Any] = self._rows.load(stored) if stored is not None else {"pk": pk, "sk": sk}
        old = item.get(attribute)
        if old is not None and type(old) is not list:
            raise TypeError(f"{attribute} is not a string set")
        if max_size is not None and old is not None and len(old) >= max_size:
            return None
        merged = sorted(set(old or ()) | set(members))
        item[attribute] = merged
        if expires_at is not None:
            item["expires_at"] = expires_at
        self._rewrite(item)
        return len(merged)

    def delete_from_set(self, pk: str, sk: str, attribute: str, members: list[str]) -> None:
        self._count("UpdateItem")
        _check_members(members)
        stored = self._old(pk, sk)
        if stored is None:
            return
        item = self._rows.load(stored)
        old = item.get(attribute)
        if old is None:
            return
        left = sorted(set(old) - set(members))
        if left:
            item[attribute] = left
        else:
            del item[attribute]  # DynamoDB holds no empty set: the attribute goes
        self._rewrite(item)

    # ------------------------------------------------------------------ reads
    def scan(self) -> Iterator[dict[str, Any]]:
        """Every stored item, as fresh objects, in no promised order (DynamoDB's Scan; for tests and
        inspection: no handler scans). Not counted in :attr:`calls`."""
        return (self._rows.load(row) for part in self._items.values() for row in part.values())

    def get(self, pk: str, sk: str) -> dict[str, Any] | None:
        self._count("GetItem")
        row = self._old(pk, sk)
        return self._rows.load(row) if row is not None else None

    def _sorted_keys(self, pk: str) -> list[str]:
        keys = self._keys.get(pk)
        if keys is None:
            part = self._items.get(pk)
            if part is None:
                return []
            keys = self._keys[pk] = sorted(part)
        return keys

    def _found(self, pk: str, lo: str | None, hi: str | None, prefix: str | None, descending: bool,
               limit: int | None, index: bool) -> list[Row]:
        """The rows a Query returns, in its order (:meth:`query`)."""
        if prefix is not None and (lo is not None or hi is not None):
            raise ValueError("query: a prefix or a range, not both")
        if index:
            entries = self._index.get(pk, [])
            start, end = _span(entries, lo, hi, prefix, _FIRST)
            chosen = entries[start:end]
            if descending:
                chosen.reverse()
            if limit is not None:
                chosen = chosen[:limit]
            return [entry[3] for entry in chosen]
        # the partition's sorted keys: only the range is read
        keys = self._sorted_keys(pk)
        start, end = _span(keys, lo, hi, prefix)
        sks = keys[start:end]
        if descending:
            sks.reverse()
        if limit is not None:
            sks = sks[:limit]
        part = self._items.get(pk, {})
        return [part[sk] for sk in sks]

    def query(self, pk: str, *, lo: str | None = None, hi: str | None = None, prefix: str | None = None,
              descending: bool = False, limit: int | None = None, index: bool = False,
              fields: tuple[str, ...] | None = None) -> Iterator[dict[str, Any]]:
        self._count("Query")
        found = self._found(pk, lo, hi, prefix, descending, limit, index)
        rows = self._rows
        # what the index holds: its keys, the table's keys and the projected attributes; of those, ``fields``
        wanted = tuple(f for f in fields if not index or f in self._projected) if fields else None
        if wanted is not None:
            return iter([rows.load_some(row, wanted) for row in found])
        if not index:
            return iter([rows.load(row) for row in found])
        projected = self._projected
        return iter([{k: v for k, v in rows.load(row).items() if k in projected} for row in found])

    def query_values(self, pk: str, fields: tuple[str, ...], *, lo: str | None = None, hi: str | None = None,
                     prefix: str | None = None, descending: bool = False, limit: int | None = None,
                     index: bool = False) -> list[tuple[Any, ...]]:
        """:meth:`query` projected to ``fields``, each item as the tuple of its values of ``fields`` in
        that order (``None``: the item has no such attribute, or the index does not project it), not a
        dict: one Query, counted as one (a report reads a fleet-day's 100,000 task events so)."""
        self._count("Query")
        found = self._found(pk, lo, hi, prefix, descending, limit, index)
        got = self._rows.values_of_rows(found, fields)
        if index and not self._projected.issuperset(fields):  # what the index does not hold reads as absent
            shown = [f in self._projected for f in fields]
            return [tuple(v if held else None for held, v in zip(shown, values, strict=True)) for values in got]
        return got


def _check_members(members: list[str]) -> None:
    """DynamoDB refuses an empty set and an empty string in a set (ValidationException)."""
    if not members or any(type(m) is not str or not m for m in members):
        raise ValueError("a string set update needs at least one member, each a non-empty string")


def _json_safe(item: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``item`` to store, without the attributes DynamoDB would not store for us (``None``,
    ``""``, ``[]``, ``{}``: :func:`~ecs_guardrail.adapters.store.table.clean`), in one pass. Refuses what
    DynamoDB would refuse for our writes: non-JSON values and keys that are not text (``TypeError``)."""
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
