"""The one port every history adapter writes through: a key-value table with sorted keys.

Two implementations: :class:`~ecs_guardrail.adapters.store.dynamodb.DynamoTable` (DynamoDB through a
boto3 client; production and ``replay --engine moto``) and
:class:`~ecs_guardrail.adapters.store.memory.MemoryTable` (in process; ``replay``'s fast engine).
``tests/contract`` runs the same suite against both, so the fast engine can never decide differently.

The port is deliberately small: DynamoDB's semantics for the seven operations the adapters need.

- items are plain JSON values (``str``, ``int``, ``float``, ``bool``, ``list``, ``dict``); ``None``
  and empty strings, lists and maps are not stored (DynamoDB's behaviour for our writes); an item
  written is a ``dict`` or a typed :class:`Item` (its fields are its attributes; read back as a ``dict``);
- keys: ``pk`` (partition) and ``sk`` (sort, compared as strings); index ``gsi1`` on
  ``gsi1pk``/``gsi1sk`` holds the items that carry both attributes;
- a :class:`Cond` is ``attribute_not_exists(pk)`` and/or equality on a few attributes, which is all
  the state layer's conditional writes need (DynamoDB Developer Guide, "Condition expressions");
- string sets (``add_to_set`` / ``delete_from_set``: UpdateItem's ``ADD`` and ``DELETE`` actions on a
  string set, DynamoDB Developer Guide, "Update expressions") are read back as sorted lists of
  strings; adding a member twice or deleting an absent one changes nothing, so a retried or
  concurrent write needs no read and no condition (the fleet test's per-minute items).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

from msgspec import Struct
from msgspec.structs import astuple

from ecs_guardrail.core.errors import ConditionFailedError

__all__ = ["Cond", "ConditionFailedError", "Table", "INDEX", "clean", "Item"]

#: the timeline index (name, partition attribute, sort attribute)
INDEX = ("gsi1", "gsi1pk", "gsi1sk")


class Cond(Struct, frozen=True):
    """``attribute_not_exists(pk)`` when ``absent`` is True, OR any of ``any_of`` (each a conjunction
    of ``attribute = value``). ``Cond(absent=True)`` alone is "write once"."""

    absent: bool = False
    any_of: tuple[dict[str, Any], ...] = ()

    def holds(self, old: dict[str, Any] | None) -> bool:
        """Evaluate against the current item (``None``: absent), as DynamoDB would."""
        if old is None:
            return self.absent
        return any(all(old.get(k) == v for k, v in conj.items()) for conj in self.any_of)


class Item(Struct, array_like=True, gc=False):
    """An item written from typed values: a subclass's fields are its attributes, in their order
    (``pk`` and ``sk`` among them), each ``None`` when the item has no such attribute. Its writer builds
    it from values already checked (a parsed event's fields), so a table need not inspect it: the values
    are JSON values, and an absent one is ``None``, never an empty text, list or map. A table reads it
    back as the ``dict`` of its attributes that are not ``None``, like any item
    (:class:`~ecs_guardrail.adapters.store.event_log.TaskEventItem`: the recorder's task events).

    ``items()`` gives ``(attribute, value)`` pairs, ``None`` ones included, as a ``dict`` does, so a
    table writes it as it writes a ``dict`` (:func:`clean` drops the ``None`` ones).
    """

    def items(self) -> Iterator[tuple[str, Any]]:
        return zip(self.__struct_fields__, astuple(self), strict=True)

    def __getitem__(self, name: str) -> Any:
        return getattr(self, name)


def clean(item: dict[str, Any] | Item) -> dict[str, Any]:
    """Drop the attributes DynamoDB would not store for us (``None``, ``""``, ``[]``, ``{}``)."""
    return {k: v for k, v in item.items() if v is not None and v != "" and v != [] and v != {}}


class Table(Protocol):
    """The port (see the module docstring). Errors other than :class:`ConditionFailedError`
    (throttling, access) propagate unchanged to the caller's retry and dead-letter path."""

    name: str
    region: str | None

    def put(self, item: dict[str, Any] | Item, cond: Cond | None = None) -> None:
        """Write ``item`` whole (a ``dict`` or a typed :class:`Item`). Raises :class:`ConditionFailedError`
        (with the old item) when ``cond`` fails."""

    def get(self, pk: str, sk: str) -> dict[str, Any] | None:
        """The item, read strongly consistent, or ``None``."""

    def query(self, pk: str, *, lo: str | None = None, hi: str | None = None, prefix: str | None = None,
              descending: bool = False, limit: int | None = None, index: bool = False,
              fields: tuple[str, ...] | None = None) -> Iterator[dict[str, Any]]:
        """Items of partition ``pk`` with ``lo <= sk <= hi`` and/or ``sk`` starting with ``prefix``, in
        sort-key order (``descending``: newest first), at most ``limit``; on the timeline index when
        ``index``; projected to ``fields`` when given. Strongly consistent on the table."""

    def transact_put(self, writes: list[tuple[dict[str, Any], Cond | None]]) -> None:
        """All the puts or none (TransactWriteItems). Raises :class:`ConditionFailedError` (``old``
        ``None``; ``failed``: the positions of the writes whose condition failed) when any condition fails."""

    def add_to_set(self, pk: str, sk: str, attribute: str, members: list[str], *, max_size: int | None = None,
                   expires_at: int | None = None) -> int | None:
        """Add ``members`` (non-empty strings) to the string-set ``attribute`` of the item, creating the
        item or the set as needed (UpdateItem ``ADD``), and set ``expires_at`` when given. With
        ``max_size``, only when the set holds fewer than ``max_size`` members before the write.

        Returns the set's size after the write (``ReturnValues=UPDATED_NEW``), or ``None`` (nothing
        written) when ``max_size`` refused it. Raises ``ValueError`` for an empty ``members`` or an
        empty member."""

    def delete_from_set(self, pk: str, sk: str, attribute: str, members: list[str]) -> None:
        """Remove ``members`` from the string-set ``attribute`` (UpdateItem ``DELETE``); absent members,
        attributes and items change nothing (an absent item is not created)."""
