"""Round 10's put4 lane: MemoryTable.put packing a typed item of a known kind itself (its fallback for an
item its writer got wrong), and the replay clock's last (text -> time) pair."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from ecs_guardrail.adapters.store.memory import MemoryTable
from ecs_guardrail.adapters.store.table import Cond, ConditionFailedError, Item
from ecs_guardrail.replay.clock import event_time


class _Row(Item):
    pk: str
    sk: str
    gsi1pk: str | None
    gsi1sk: str | None
    n: int | None = None
    text: str | None = None


def test_typed_put_of_a_known_kind_stores_what_encode_stores() -> None:
    table = MemoryTable()
    table.put(_Row("p", "a", "g", "2", 1, "x"))  # the kind's first put: through _Rows.encode
    table.put(_Row("p", "b", "g", "1", 2 ** 70, "\ud800"))  # known kind, not packable: the dict path
    table.put(_Row("p", "c", None, None, 3))  # known kind, not in the index
    with pytest.raises(ConditionFailedError):
        table.put(_Row("p", "a", "g", "3", 4), Cond(absent=True))
    assert table.get("p", "b") == {"pk": "p", "sk": "b", "gsi1pk": "g", "gsi1sk": "1", "n": 2 ** 70,
                                   "text": "\ud800"}
    assert [i["sk"] for i in table.query("g", index=True)] == ["b", "a"]  # inserted before, by bisection
    assert [i["sk"] for i in table.query("p")] == ["a", "b", "c"]
    table.put(_Row("p", "a", "g", "0", 5))  # a replacement moves its index entry
    assert [i["sk"] for i in table.query("g", index=True)] == ["a", "b"]  # n: not in the index's projection
    assert table.get("p", "a") == {"pk": "p", "sk": "a", "gsi1pk": "g", "gsi1sk": "0", "n": 5}


def test_event_time_same_answer_from_its_last_pair() -> None:
    first = event_time({"time": "2026-01-02T03:04:05Z"})
    assert first == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert event_time({"time": "2026-01-02T03:04:05Z"}) is first
    assert event_time({"time": "2026-01-02T04:04:05+01:00"}) == first
    for _ in range(2):  # a bad time reads as none each time (its warning is the caller's, every time)
        assert event_time({"time": "not a time"}) is None
    assert event_time({"time": "0001-01-01T00:00:00+01:00"}) is None
    assert event_time({"time": 5}) is None and event_time([]) is None
    assert event_time({"time": "2026-01-02T03:04:05"}) == first  # no offset: UTC
