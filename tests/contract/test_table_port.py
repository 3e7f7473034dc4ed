"""One suite, two engines: the table port (adapters/store/table.py) on ``MemoryTable`` and on
``DynamoTable`` over moto must behave the same, or the fast replay engine could decide differently
from production. Then the adapters on top (event log, watchdog state, slots, jobs) through both.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ecs_guardrail.adapters.history import HistoryStore
from ecs_guardrail.adapters.store import keys
from ecs_guardrail.adapters.store.table import Cond, ConditionFailedError
from ecs_guardrail.adapters.store.timeline_reads import TIMELINE_FIELDS
from ecs_guardrail.adapters.store.watchdog_state import ClusterView, summary_from_doc, summary_to_doc
from ecs_guardrail.core.classify import StopKind
from ecs_guardrail.core.records import Action, Failure, Reason, iso
from ecs_guardrail.core.structs import replace
from ecs_guardrail.core.summary import ActionStatus, AlertStatus, Episode, MinuteCount, ServiceSummary, add_failure

# event times in the future: the TTL attribute (max(event time, now) + ttl) is then deterministic
T0 = datetime(2030, 1, 2, 3, 0, tzinfo=UTC)
W = timedelta(minutes=30)


# ---------------------------------------------------------------- put / get
RICH = {"pk": "P", "sk": "S", "i": 3, "zero": 0, "neg": -7, "big": 10**15, "f": 0.1, "f2": 2.5, "nf": -0.001,
        "b": True, "nb": False, "s": "text é ✓", "l": [1, 0.1, "x", {"a": [1, 2.25]}, [True]],
        "m": {"a": 1, "b": {"c": 0.3, "d": "y"}}}


def test_put_get_round_trip(table):
    table.put(dict(RICH))
    got = table.get("P", "S")
    assert got == RICH
    assert isinstance(got["i"], int) and isinstance(got["f"], float) and got["f"] == 0.1
    assert isinstance(got["big"], int) and got["l"][1] == 0.1 and got["m"]["b"]["c"] == 0.3
    assert table.get("P", "nope") is None and table.get("nope", "S") is None


def test_empty_values_are_dropped(table):
    table.put({"pk": "P", "sk": "E", "keep": 1, "none": None, "empty": "", "list": [], "map": {}})
    assert table.get("P", "E") == {"pk": "P", "sk": "E", "keep": 1}


def test_put_overwrites_whole_item(table):
    table.put({"pk": "P", "sk": "S", "a": 1, "b": 2})
    table.put({"pk": "P", "sk": "S", "a": 3})
    assert table.get("P", "S") == {"pk": "P", "sk": "S", "a": 3}


def test_read_values_are_copies(table):
    item = {"pk": "P", "sk": "S", "l": [1, 2]}
    table.put(item)
    item["l"].append(3)
    got = table.get("P", "S")
    got["l"].append(4)
    assert table.get("P", "S")["l"] == [1, 2]


# ---------------------------------------------------------------- conditions
def test_cond_absent_is_write_once(table):
    first = {"pk": "P", "sk": "ONCE", "v": 1}
    table.put(first, Cond(absent=True))
    with pytest.raises(ConditionFailedError) as info:
        table.put({"pk": "P", "sk": "ONCE", "v": 2}, Cond(absent=True))
    assert info.value.old == first
    assert table.get("P", "ONCE") == first


def test_cond_any_of_returns_all_old_on_failure(table):
    table.put({"pk": "P", "sk": "V", "seq": 1, "owner": "a", "f": 0.1, "m": {"x": [1]}})
    with pytest.raises(ConditionFailedError) as info:
        table.put({"pk": "P", "sk": "V", "seq": 2}, Cond(any_of=({"seq": 5},)))
    assert info.value.old == {"pk": "P", "sk": "V", "seq": 1, "owner": "a", "f": 0.1, "m": {"x": [1]}}
    # a conjunction must hold whole; any one of the alternatives is enough
    with pytest.raises(ConditionFailedError):
        table.put({"pk": "P", "sk": "V", "seq": 2}, Cond(any_of=({"seq": 1, "owner": "b"},)))
    table.put({"pk": "P", "sk": "V", "seq": 2, "owner": "b"}, Cond(any_of=({"seq": 9}, {"seq": 1, "owner": "a"})))
    assert table.get("P", "V")["seq"] == 2


def test_cond_any_of_fails_on_an_absent_item_or_a_missing_attribute(table):
    with pytest.raises(ConditionFailedError) as info:
        table.put({"pk": "P", "sk": "NEW", "seq": 1}, Cond(any_of=({"seq": 0},)))
    assert info.value.old is None
    assert table.get("P", "NEW") is None
    table.put({"pk": "P", "sk": "NEW", "a": 1})
    with pytest.raises(ConditionFailedError):
        table.put({"pk": "P", "sk": "NEW", "a": 2}, Cond(any_of=({"released": True},)))


def test_cond_absent_or_any_of(table):
    slot = Cond(absent=True, any_of=({"released": True}, {"service": "a"}))
    table.put({"pk": "P", "sk": "H#0000", "service": "a", "released": False}, slot)  # absent
    table.put({"pk": "P", "sk": "H#0000", "service": "a", "released": False}, slot)  # own
    with pytest.raises(ConditionFailedError):
        table.put({"pk": "P", "sk": "H#0000", "service": "b", "released": False},
                  Cond(absent=True, any_of=({"released": True}, {"service": "b"})))
    table.put({"pk": "P", "sk": "H#0000", "service": "a", "released": True})
    table.put({"pk": "P", "sk": "H#0000", "service": "b", "released": False},
              Cond(absent=True, any_of=({"released": True}, {"service": "b"})))
    assert table.get("P", "H#0000")["service"] == "b"


def test_cond_on_a_float_attribute(table):
    table.put({"pk": "P", "sk": "F", "v": 0.1})
    table.put({"pk": "P", "sk": "F", "v": 0.2}, Cond(any_of=({"v": 0.1},)))
    assert table.get("P", "F")["v"] == 0.2


def test_condition_failure_old_item_is_the_same_on_both_engines(both):
    mem, ddb = both
    olds = []
    for t in (mem, ddb):
        t.put(dict(RICH))
        with pytest.raises(ConditionFailedError) as info:
            t.put({"pk": "P", "sk": "S", "x": 1}, Cond(any_of=({"i": 4},)))
        olds.append(info.value.old)
    assert olds[0] == olds[1] == RICH
    assert json.dumps(olds[0], sort_keys=True) == json.dumps(olds[1], sort_keys=True)


# ---------------------------------------------------------------- query
def _fill(table) -> None:
    for i in range(1, 13):
        table.put({"pk": "Q", "sk": f"A#{i:02d}", "n": i, "other": "x" * i})
    table.put({"pk": "Q", "sk": "B#01", "n": 100})
    table.put({"pk": "OTHER", "sk": "A#01", "n": -1})


def sks(items) -> list[str]:
    return [i["sk"] for i in items]


def test_query_whole_partition_in_sort_order(table):
    _fill(table)
    assert sks(table.query("Q")) == [f"A#{i:02d}" for i in range(1, 13)] + ["B#01"]
    assert list(table.query("missing")) == []


def test_query_range_is_inclusive(table):
    _fill(table)
    assert sks(table.query("Q", lo="A#03", hi="A#05")) == ["A#03", "A#04", "A#05"]
    assert sks(table.query("Q", lo="A#11")) == ["A#11", "A#12", "B#01"]
    assert sks(table.query("Q", hi="A#02")) == ["A#01", "A#02"]
    assert sks(table.query("Q", lo="A#03", hi="A#03")) == ["A#03"]


def test_query_prefix_descending_limit_fields(table):
    _fill(table)
    assert sks(table.query("Q", prefix="A#1")) == ["A#10", "A#11", "A#12"]
    assert sks(table.query("Q", prefix="A#", descending=True, limit=2)) == ["A#12", "A#11"]
    assert sks(table.query("Q", descending=True)) == ["B#01"] + [f"A#{i:02d}" for i in range(12, 0, -1)]
    assert sks(table.query("Q", limit=3)) == ["A#01", "A#02", "A#03"]
    assert sks(table.query("Q", lo="A#02", hi="A#09", descending=True, limit=3)) == ["A#09", "A#08", "A#07"]
    assert list(table.query("Q", prefix="A#0", fields=("n",), limit=2)) == [{"n": 1}, {"n": 2}]
    assert list(table.query("Q", prefix="B#", fields=("sk", "n", "absent"))) == [{"sk": "B#01", "n": 100}]


def test_query_fields_of_items_of_each_shape_and_width(table):
    """``fields`` picks the same attributes in ``fields``' order from items of two shapes, one shape written
    again with other values, and an item wider than the memory table's shapes (stored with its names)."""
    table.put({"pk": "W", "sk": "1", "a": 1, "b": "x"})
    table.put({"pk": "W", "sk": "2", "b": "y", "a": 2, "c": [1]})
    table.put({"pk": "W", "sk": "3", "a": 3, "b": "z"})
    table.put({"pk": "W", "sk": "4", "a": 4, **{f"f{i:02d}": i for i in range(40)}})
    assert list(table.query("W", fields=("c", "a", "absent"))) == [{"a": 1}, {"c": [1], "a": 2}, {"a": 3}, {"a": 4}]
    assert [list(i) for i in table.query("W", fields=("b", "sk", "f39"))] == [
        ["b", "sk"], ["b", "sk"], ["b", "sk"], ["sk", "f39"]]
    got = list(table.query("W", fields=("c",)))
    got[1]["c"].append(2)  # a read's objects are fresh: the stored item is unchanged
    assert list(table.query("W", fields=("c",)))[1] == {"c": [1]}


def test_query_prefix_and_range_together_is_refused(table):
    with pytest.raises(ValueError):
        list(table.query("Q", prefix="A#", lo="A#01"))


def test_query_limit_across_pages(table):
    # items big enough that DynamoDB (and moto) page the Query (1 MB per page)
    blob = "z" * 300_000
    for i in range(6):
        table.put({"pk": "BIG", "sk": f"{i:02d}", "blob": blob})
    assert sks(table.query("BIG", fields=("sk",))) == [f"{i:02d}" for i in range(6)]
    assert sks(table.query("BIG", limit=5)) == [f"{i:02d}" for i in range(5)]


# ---------------------------------------------------------------- the timeline index
# the index projects TIMELINE_FIELDS (template.yaml INCLUDE projection, local.create_history_table): these
# tests read projected attributes ("service", "type") and the keys
def test_index_query_holds_only_items_with_both_index_attributes(table):
    table.put({"pk": "T#1", "sk": "V#1", "gsi1pk": "TL#c#h", "gsi1sk": "2030-01-02T03:00:01Z#task#1", "service": "1"})
    table.put({"pk": "T#2", "sk": "V#1", "gsi1pk": "TL#c#h", "gsi1sk": "2030-01-02T03:00:00Z#task#2", "service": "2"})
    table.put({"pk": "T#3", "sk": "V#1", "gsi1pk": "TL#c#h", "service": "3"})  # no sort attribute: not indexed
    table.put({"pk": "T#4", "sk": "V#1", "service": "4"})
    table.put({"pk": "T#5", "sk": "V#1", "gsi1pk": "TL#c#other", "gsi1sk": "2030-01-02T03:00:00Z#x", "service": "5"})
    assert [i["service"] for i in table.query("TL#c#h", index=True)] == ["2", "1"]
    assert [i["service"] for i in table.query("TL#c#h", index=True, descending=True)] == ["1", "2"]
    assert [i["service"] for i in table.query("TL#c#h", index=True, lo="2030-01-02T03:00:01Z",
                                              hi="2030-01-02T03:00:01Z~")] == ["1"]
    assert list(table.query("TL#c#h", index=True, fields=("service",), limit=1)) == [{"service": "2"}]
    assert [i["pk"] for i in table.query("TL#c#h", index=True, prefix="2030-01-02T03:00:00Z")] == ["T#2"]


def test_index_follows_an_overwritten_item(table):
    table.put({"pk": "T#1", "sk": "V#1", "gsi1pk": "TL#a", "gsi1sk": "1", "type": "one"})
    table.put({"pk": "T#1", "sk": "V#1", "gsi1pk": "TL#b", "gsi1sk": "2", "type": "two"})
    assert list(table.query("TL#a", index=True)) == []
    assert [i["type"] for i in table.query("TL#b", index=True)] == ["two"]
    table.put({"pk": "T#1", "sk": "V#1", "type": "three"})  # index attributes gone: out of the index
    assert list(table.query("TL#b", index=True)) == []


def test_index_query_returns_the_same_attributes_on_both_engines(both):
    got = []
    for t in both:
        t.put({"pk": "T#1", "sk": "V#1", "gsi1pk": "TL#c", "gsi1sk": "1", "type": "task", "raw": "{...}"})
        got.append(list(t.query("TL#c", index=True)))
    assert got[0] == got[1]


# ---------------------------------------------------------------- transactions
def test_transact_put_all_or_nothing(table):
    table.put({"pk": "X", "sk": "seq", "seq": 1})
    with pytest.raises(ConditionFailedError) as info:
        table.transact_put([({"pk": "X", "sk": "new", "v": 1}, Cond(absent=True)),
                            ({"pk": "X", "sk": "seq", "seq": 3}, Cond(any_of=({"seq": 2},)))])
    assert info.value.old is None and info.value.failed == (1,)  # which write's condition failed, on both engines
    assert table.get("X", "new") is None and table.get("X", "seq") == {"pk": "X", "sk": "seq", "seq": 1}
    table.transact_put([({"pk": "X", "sk": "new", "v": 1}, Cond(absent=True)),
                        ({"pk": "X", "sk": "seq", "seq": 2}, Cond(any_of=({"seq": 1},))),
                        ({"pk": "X", "sk": "free", "f": 0.1}, None)])
    assert table.get("X", "new")["v"] == 1 and table.get("X", "seq")["seq"] == 2
    assert table.get("X", "free")["f"] == 0.1
    # the write-once item of the pair now exists: the same transaction again fails whole
    with pytest.raises(ConditionFailedError):
        table.transact_put([({"pk": "X", "sk": "seq", "seq": 3}, Cond(any_of=({"seq": 2},))),
                            ({"pk": "X", "sk": "new", "v": 2}, Cond(absent=True))])
    assert table.get("X", "seq")["seq"] == 2 and table.get("X", "new")["v"] == 1


def test_transact_put_index_attributes(table):
    table.transact_put([({"pk": "D", "sk": "DEC#1", "gsi1pk": "TL#c", "gsi1sk": "1#decision", "type": "decision"},
                         Cond(absent=True))])
    assert sks(table.query("TL#c", index=True)) == ["DEC#1"]


# ---------------------------------------------------------------- string sets (UpdateItem ADD / DELETE)
def test_add_to_set_creates_merges_and_is_idempotent(table):
    assert table.add_to_set("F", "m1", "f#api", ["2|aaaa", "1|bbbb"], expires_at=1_900_000_000) == 2
    assert table.add_to_set("F", "m1", "f#api", ["1|bbbb", "3|cccc"]) == 3  # a member again: nothing new
    assert table.add_to_set("F", "m1", "f#api", ["3|cccc"]) == 3
    assert table.add_to_set("F", "m1", "f#web service", ["9|dddd"]) == 1  # any name: placeholders, not text
    assert table.get("F", "m1") == {"pk": "F", "sk": "m1", "expires_at": 1_900_000_000,
                                    "f#api": ["1|bbbb", "2|aaaa", "3|cccc"], "f#web service": ["9|dddd"]}
    assert [i["sk"] for i in table.query("F", lo="m0", hi="m1")] == ["m1"]


def test_add_to_set_max_size_refuses_a_full_set_and_writes_nothing(table):
    assert table.add_to_set("F", "m", "f#a", ["1", "2"], max_size=2) == 2  # fewer than 2 before: written
    assert table.add_to_set("F", "m", "f#a", ["3"], max_size=2) is None
    assert table.add_to_set("F", "m", "f#b", ["1"], max_size=2) == 1  # an absent set is never full
    assert table.get("F", "m")["f#a"] == ["1", "2"] and table.get("F", "m")["f#b"] == ["1"]


def test_delete_from_set_removes_members_and_drops_an_empty_set(table):
    table.add_to_set("F", "m", "f#a", ["1", "2"])
    table.add_to_set("F", "m", "o#a", ["1"])
    table.delete_from_set("F", "m", "f#a", ["1", "7"])  # an absent member changes nothing
    assert table.get("F", "m")["f#a"] == ["2"]
    table.delete_from_set("F", "m", "f#a", ["2"])
    assert table.get("F", "m") == {"pk": "F", "sk": "m", "o#a": ["1"]}  # DynamoDB keeps no empty set
    table.delete_from_set("F", "absent", "f#a", ["1"])
    assert table.get("F", "absent") is None  # never created by a delete


def test_set_updates_refuse_empty_members(table):
    with pytest.raises(ValueError):
        table.add_to_set("F", "m", "f#a", [])
    with pytest.raises(ValueError):
        table.add_to_set("F", "m", "f#a", [""])
    with pytest.raises(ValueError):
        table.delete_from_set("F", "m", "f#a", [])


# ================================================================ the adapters through both engines
def store_on(table) -> HistoryStore:
    return HistoryStore.on(table, cache={})


def _failure(n: int, minutes: float, service: str = "api") -> Failure:
    return Failure(service, T0 + timedelta(minutes=minutes), StopKind.CRASH, task_arn=f"arn:task/{n}",
                   availability_zone="eu-west-1a", stop_code="EssentialContainerExited",
                   reason="Essential container in task exited", cause="OutOfMemoryError",
                   exit_codes=(("app", 137), ("side", None)))


def test_event_log_is_write_once(table):
    ev = store_on(table).events
    arn = "arn:aws:ecs:eu-west-1:1:task/c/abc"
    attrs = {"type": "task", "version": 5, "last_status": "STOPPED", "exit_codes": {"app": 1}}
    assert ev.record_task_event(task_arn=arn, version=5, event_id="e1", cluster="c", time=T0, attrs=attrs)
    assert not ev.record_task_event(task_arn=arn, version=5, event_id="e1-again", cluster="c", time=T0,
                                    attrs={**attrs, "last_status": "CHANGED"})
    assert ev.record_task_event(task_arn=arn, version=3, event_id="e0", cluster="c", time=T0,
                                attrs={**attrs, "version": 3, "last_status": "RUNNING"})
    assert ev.task_state(arn)["version"] == 5 and ev.task_state(arn)["last_status"] == "STOPPED"
    assert [v["version"] for v in ev.task_history(arn)] == [3, 5]
    assert ev.record_service_event(cluster="c", service="api", event_id="s1", time=T0, attrs={"type": "service"})
    assert not ev.record_service_event(cluster="c", service="api", event_id="s1", time=T0, attrs={"type": "x"})
    assert ev.record_rejected({"bad": 1}, "why", T0)
    assert not ev.record_rejected({"bad": 1}, "why", T0)
    assert [r["reason"] for r in ev.rejected(T0)] == ["why"]


def test_summary_codec_round_trip_keeps_every_field():
    ep = Episode(decision_time=T0 + timedelta(seconds=1.25), last_failure=T0 + timedelta(minutes=3),
                 action=Action.SCALE_TO_ZERO, reason=Reason.CRASH_LOOP, trigger="crash_loop",
                 action_status=ActionStatus.DONE, alert_status=AlertStatus.SENT, previous_desired_count=3,
                 previous_suspended={"DynamicScalingInSuspended": False}, lease_owner="me", lease_until=1.5e9 + 0.25,
                 escalated=True, cluster_alert_owner=True, evaluated_at=T0 + timedelta(minutes=2))
    s = ServiceSummary("api", seq=4, crashes=(_failure(1, 0), _failure(2, 1.5)),
                       kills=(replace(_failure(3, 2), kind=StopKind.HEALTH_CHECK_KILL),),
                       spot=(("arn:task/9", T0),), episode=ep, counted_after=T0,
                       minutes=(MinuteCount(T0, 3, (0.0, 1.5, 59.0)),
                                MinuteCount(T0 + timedelta(minutes=2), 1, (0.0,))),
                       recent=("0000abcd", "task-9"), scaled=(T0 - timedelta(minutes=40),),
                       steady_at=T0 + timedelta(minutes=5))
    back = summary_from_doc("api", 4, json.loads(json.dumps(summary_to_doc(s))))
    assert back == s
    # a summary with no failure counted keeps that (no counts made up from its rings)
    empty = replace(s, minutes=())
    assert summary_from_doc("api", 4, json.loads(json.dumps(summary_to_doc(empty)))) == empty
    # an item written before the per-minute counts existed gets them from its rings
    legacy = summary_to_doc(s)
    del legacy["m"]
    old = summary_from_doc("api", 4, legacy)
    assert [(m.minute, m.count) for m in old.minutes] == [(T0, 1), (T0 + timedelta(minutes=1), 1),
                                                          (T0 + timedelta(minutes=2), 1)]


def test_summary_save_conflict_second_raises_and_cache_holds_the_winner(table):
    a, b = store_on(table).state, store_on(table).state  # two runtimes, two caches, one table
    current = a.load("c", "api")
    assert current.seq == 0 and b.load("c", "api").seq == 0
    won = a.save("c", current, add_failure(current, _failure(1, 0), 5))
    assert won.seq == 1
    with pytest.raises(ConditionFailedError) as info:
        b.save("c", current, add_failure(current, _failure(2, 1), 5))
    assert info.value.old is not None and info.value.old["seq"] == 1
    cached = b.load("c", "api")  # from the cache: the winner's summary (ALL_OLD)
    assert cached.seq == 1 and [f.task_arn for f in cached.crashes] == ["arn:task/1"]
    assert b.load("c", "api", fresh=True) == cached
    # update() retries on the winner's state: both failures end up filed
    s, changed = b.update("c", "api", lambda x: add_failure(x, _failure(2, 1), 5))
    assert changed and s.seq == 2 and [f.task_arn for f in s.crashes] == ["arn:task/1", "arn:task/2"]
    with pytest.raises(ConditionFailedError):
        a.save("c", won, add_failure(won, _failure(3, 2), 5))  # a's cached seq 1 is stale now
    assert a.load("c", "api").seq == 2


def test_second_save_after_a_conflict_on_an_existing_summary(table):
    a, b = store_on(table).state, store_on(table).state
    base = a.save("c", a.load("c", "api"), add_failure(ServiceSummary("api"), _failure(1, 0), 5))
    cur = b.load("c", "api")
    assert cur == base
    a.save("c", base, add_failure(base, _failure(2, 1), 5))
    with pytest.raises(ConditionFailedError):
        b.save("c", cur, add_failure(cur, _failure(3, 2), 5))
    assert b.load("c", "api").seq == 2


def _record(t: datetime, service: str = "api", action: str = "scale_to_zero") -> dict[str, Any]:
    return {"type": "decision", "time": iso(t), "cluster": "c", "service": service, "action": action,
            "reason": "crash_loop", "message": "scaled", "previous_desired_count": 2, "crashes_in_window": 5,
            "health_check_kills_in_window": 0, "bound": 1, "last_stops": []}


def _episode(t: datetime, owner: str) -> Episode:
    return Episode(decision_time=t, last_failure=t, action=Action.SCALE_TO_ZERO, reason=Reason.CRASH_LOOP,
                   trigger="crash_loop", action_status=ActionStatus.PENDING, alert_status=AlertStatus.PENDING,
                   previous_desired_count=2, lease_owner=owner, lease_until=2e9)


def test_claim_is_one_transaction_and_only_one_wins(table):
    a, b = store_on(table).state, store_on(table).state
    s = a.update("c", "api", lambda x: add_failure(x, _failure(1, 0), 5))[0]
    cur_b = b.load("c", "api")
    t = T0 + timedelta(seconds=12.345)  # fractional seconds kept in the key and the record
    claimed = a.claim("c", s, replace(s, episode=_episode(t, "a")), _record(t))
    assert claimed.seq == s.seq + 1 and claimed.episode.lease_owner == "a"
    with pytest.raises(ConditionFailedError):
        b.claim("c", cur_b, replace(cur_b, episode=_episode(t, "b")), _record(t))
    decisions = list(table.query("SVC#c#api", prefix="DEC#"))
    assert len(decisions) == 1 and decisions[0]["sk"] == "DEC#2030-01-02T03:00:12.345Z"
    assert a.decision("c", "api", t)["time"] == "2030-01-02T03:00:12.345Z"
    assert b.load("c", "api", fresh=True).episode.lease_owner == "a"
    # the record is also on the timeline index
    assert [i["type"] for pk in keys.timeline_partitions("c", t) for i in table.query(pk, index=True)] == ["decision"]


def test_claim_fails_whole_when_the_record_exists(table):
    st = store_on(table).state
    t = T0
    s = st.load("c", "api")
    st.claim("c", s, replace(s, episode=_episode(t, "a")), _record(t))
    # a summary write that would succeed, paired with a record that already exists: nothing written
    cur = st.load("c", "api", fresh=True)
    with pytest.raises(ConditionFailedError):
        st.claim("c", cur, replace(cur, episode=_episode(t, "again")), _record(t))
    assert st.load("c", "api", fresh=True).episode.lease_owner == "a"


def test_claim_with_slot_takes_the_slot_in_the_same_transaction(table):
    """Issue 33 item 6: the claim and the slot in one TransactWriteItems; a slot another service took under
    a stale view falls back to the claim alone (the caller then takes or is denied a slot, as before)."""
    st = store_on(table).state
    before = dict(getattr(table, "calls", {}))
    s = st.load("c", "api")
    stored, n = st.claim_with_slot("c", s, replace(s, episode=_episode(T0, "a")), _record(T0), at=T0, bound=1,
                                   view=st.slots_view("c"))
    assert n == 0 and stored.episode.lease_owner == "a" and st.cluster("c").held() == ("api",)
    if hasattr(table, "calls"):  # the memory engine counts its calls: one transaction, no PutItem
        after = {k: v - before.get(k, 0) for k, v in table.calls.items() if v != before.get(k, 0)}
        assert after.get("TransactWriteItems") == 1 and "PutItem" not in after
    # its own slot is reused without a write: take_slot over the view that holds it writes nothing
    assert st.take_slot("c", "api", T0, 1, st.slots_view("c").with_slot(0, "api", T0)) == 0
    # another service, with a stale (empty) view: the slot's condition fails, the claim alone is made
    web = st.load("c", "web")
    stale = ClusterView((), (), None)
    stored, n = st.claim_with_slot("c", web, replace(web, episode=_episode(T0, "b")), _record(T0, "web"), at=T0,
                                   bound=1, view=stale)
    assert n is None and stored.episode.lease_owner == "b" and st.cluster("c").held() == ("api",)
    assert st.decision("c", "web", T0) is not None
    # the claim's own condition still fails whole
    with pytest.raises(ConditionFailedError):
        st.claim_with_slot("c", web, replace(web, episode=_episode(T0, "c")), _record(T0, "web"), at=T0, bound=2,
                           view=st.slots_view("c"))
    assert st.load("c", "web", fresh=True).episode.lease_owner == "b" and st.cluster("c").held() == ("api",)


def test_the_folds_keep_every_step(table):
    """handlers/folds.py (issue 33 item 6), on both engines: the claim stores the episode with its slot and
    facts (the next effect is the scale-down), and the alert's outcome releases the lease only when nothing
    else is owed."""
    from ecs_guardrail.core import lifecycle as lc
    from ecs_guardrail.handlers.episode import Known
    from ecs_guardrail.handlers.folds import claim_taking_slot, release_after_alert

    st = store_on(table).state
    s = st.load("c", "api")
    known = Known(facts=object(), scalable=None, view=st.slots_view("c"))  # type: ignore[arg-type]
    stored, known2 = claim_taking_slot(st, "c", s, replace(s, episode=_episode(T0, "a")), _record(T0), known)
    assert stored.episode.action_status is ActionStatus.RECORDED and st.cluster("c").held() == ("api",)
    assert known2 is not None and known2.view.held() == ("api",)
    assert isinstance(lc.next_effect(stored.episode, "a"), lc.ScaleToZero)
    # unread facts: the claim and the slot only; the facts step stays the interpreter's
    web = st.load("c", "web")
    unread = Known(facts=None, scalable=None, view=st.slots_view("c"), scalable_error="denied")
    stored, _ = claim_taking_slot(st, "c", web, replace(web, episode=_episode(T0, "w")), _record(T0, "web"), unread)
    assert stored.episode.action_status is ActionStatus.PENDING and st.cluster("c").held() == ("api",)  # bound 1
    # the alert's outcome: the lease released in the same step when nothing else is owed
    ep = replace(stored.episode, action_status=ActionStatus.DONE)
    done = replace(stored, episode=ep)
    tr = release_after_alert(lc.transition(done, lc.AlertDelivered()), lc.AlertDelivered(), "w")
    assert tr.summary is not None and tr.summary.episode.lease_owner is None
    assert tr.summary.episode.alert_status is AlertStatus.SENT
    failed = release_after_alert(lc.transition(done, lc.AlertFailed()), lc.AlertFailed(), "w")
    assert failed.summary is not None and failed.summary.episode.lease_owner == "w"


def test_take_and_release_slots(table):
    st = store_on(table).state
    got = [st.take_slot("c", s, T0, 2, st.cluster("c")) for s in ("s0", "s1", "s2")]
    assert got == [0, 1, None]
    assert st.take_slot("c", "s0", T0, 2, st.cluster("c")) == 0  # its own slot, never a second one
    # a stale view (taken before s1's slot) still cannot give a third slot
    stale = st.cluster("c")
    assert st.cluster("c").held() == ("s0", "s1")
    assert st.release_slot("c", "s0")
    assert not st.release_slot("c", "s0")  # idempotent
    assert st.cluster("c").held() == ("s1",)
    assert st.take_slot("c", "s2", T0, 2, stale) == 0
    assert st.take_slot("c", "s3", T0, 2, st.cluster("c")) is None
    assert st.cluster("c").held() == ("s1", "s2")


def test_slot_race_with_one_view_gives_the_bound_exactly(table):
    st = store_on(table).state
    view = st.cluster("c")  # every contender saw the same (empty) view
    got = [st.take_slot("c", s, T0, 2, view) for s in ("s0", "s1", "s2", "s3")]
    assert sorted(g for g in got if g is not None) == [0, 1] and got.count(None) == 2


def test_job_failure_alerts_once_per_window(table):
    st = store_on(table).state
    def filed(family: str, task: str, at: Any, exit_text: str = "1") -> tuple[bool, bool, int, Any]:
        f = st.job_failure("c", family, task, at, W, exit_text)
        if f is None:
            return (False, False, 0, None)
        return (True, f.opened, f.job.failures_since_alert, f.closed)

    assert filed("nightly", "t1", T0) == (True, True, 1, None)
    assert filed("nightly", "t1", T0) == (False, False, 0, None)  # redelivery
    assert filed("nightly", "t2", T0 + timedelta(minutes=10)) == (True, False, 2, None)
    assert filed("nightly", "t3", T0 + W, "137") == (True, False, 3, None)  # exactly a window: still in
    # the next failure closes the window: its summary (start, 3 failures, last exit 137, last time) is due
    assert filed("nightly", "t4", T0 + W + timedelta(seconds=1)) == (True, True, 1, (T0, 3, "137", T0 + W))
    assert filed("other", "t5", T0) == (True, True, 1, None)
    # jobs never appear among the cluster's service summaries
    assert st.cluster("c").summaries == ()


def test_mass_event_opens_once_per_burst(table):
    st = store_on(table).state
    assert st.open_mass_event("c", T0, W)
    assert not st.open_mass_event("c", T0 + timedelta(minutes=10), W)
    assert not st.open_mass_event("c", T0 + timedelta(minutes=40), W)  # holds keep coming: same event
    assert st.open_mass_event("c", T0 + timedelta(minutes=71), W)


def _script(table) -> list[Any]:
    """A mixed sequence of adapter calls; returns every result in order."""
    store = store_on(table)
    st, out = store.state, []
    out.append(store.events.record_task_event(task_arn="arn:t/1", version=1, event_id="e", cluster="c", time=T0,
                                              attrs={"type": "task", "f": 0.5}))
    out.append(store.events.record_task_event(task_arn="arn:t/1", version=1, event_id="e", cluster="c", time=T0,
                                              attrs={"type": "task"}))
    for i in range(8):
        out.append(st.update("c", "api", lambda x, i=i: add_failure(x, _failure(i, i), 5))[0].seq)
    s = st.load("c", "api")
    t = T0 + timedelta(minutes=7, seconds=0.5)
    out.append(st.claim("c", s, replace(s, episode=_episode(t, "o")), _record(t)).seq)
    try:
        st.claim("c", s, replace(s, episode=_episode(t, "p")), _record(t))
    except ConditionFailedError as exc:
        out.append(("lost", exc.old))
    out.append(st.take_slot("c", "api", t, 1, st.cluster("c")))
    out.append(st.take_slot("c", "web", t, 1, st.cluster("c")))
    out.append(st.release_slot("c", "api"))
    out.append(st.take_slot("c", "web", t, 1, st.cluster("c")))
    out.append(st.job_failure("c", "nightly", "j1", T0, W))
    out.append(st.job_failure("c", "nightly", "j2", T0, W))
    out.append(st.open_mass_event("c", T0, W))
    view = st.cluster("c")
    out.append((view.held(), [x.service for x in view.summaries], view.mass_last))
    out.append(st.load("c", "api", fresh=True))
    out.append(st.decision("c", "api", t))
    # every item the script wrote, as stored
    for pk in ("WD#c", "SVC#c#api", "JOB#c", "TASK#arn:t/1"):
        out.append(list(table.query(pk)))
    fields = ("pk", "sk", *TIMELINE_FIELDS)
    out.append([i for pk in keys.timeline_partitions("c", T0) for i in table.query(pk, index=True, fields=fields)])
    return out


def test_adapters_give_identical_results_on_both_engines(both):
    mem, ddb = both
    on_mem, on_ddb = _script(mem), _script(ddb)
    assert len(on_mem) == len(on_ddb)
    for i, (m, d) in enumerate(zip(on_mem, on_ddb, strict=True)):
        assert m == d, f"step {i}"


# ---------------------------------------------------------------- the fleet minutes (core/fleet_minutes.py)
def test_fleet_minutes_count_uncount_overflow_and_scale_downs(table):
    state = store_on(table).state
    at = T0 + timedelta(minutes=10)
    state.count_failures("c", "a", [_failure(1, 1, "a")])
    state.count_failures("c", "a", [_failure(1, 1, "a")])  # a redelivery: the same member
    state.count_failures("c", "b", [_failure(2, 2, "b"), _failure(3, 2.5, "b")])  # twice in one minute
    state.count_failures("c", "d", [_failure(4, 3, "d"), _failure(5, 40, "d")])  # the second after the window
    got = state.fleet("c", at - W, at, 2)
    assert got.failing == {"b"} and got.uncertain == frozenset()
    state.count_failures("c", "a", [_failure(6, 9.5, "a")])
    assert state.fleet("c", at - W, at, 2).failing == {"a", "b"}
    # a notice delivered after b's STOPPED takes one of its failures back: b no longer has two
    state.uncount_failures("c", "b", [_failure(3, 2.5, "b")])
    assert state.fleet("c", at - W, at, 2).failing == {"a"}
    # a service past MEMBERS_KEPT in one minute: whole, it fails; cut by the window, it is uncertain
    many = [_failure(100 + i, 5 + i / 100, "e") for i in range(70)]  # 0.6 s apart from 03:05:00
    state.count_failures("c", "e", many[:64])
    state.count_failures("c", "e", many[64:])  # refused: the minute is marked overflowed instead
    assert "e" in state.fleet("c", at - W, at, 2).failing
    cut = T0 + timedelta(minutes=5, seconds=0.5)  # one known member before the cut: the rest unknown
    assert "e" in state.fleet("c", cut - W, cut, 2).uncertain
    # a scale-down written with a summary is marked in its minute, and unmarked when a write drops it
    ep = Episode(decision_time=T0 + timedelta(minutes=4), last_failure=T0 + timedelta(minutes=4),
                 action=Action.SCALE_TO_ZERO, reason=Reason.CRASH_LOOP, trigger="crash_loop",
                 action_status=ActionStatus.PENDING, alert_status=AlertStatus.PENDING)
    s = state.save("c", ServiceSummary("f"), ServiceSummary("f", episode=ep))
    assert state.fleet("c", at - W, at, 2).scaled_down == {"f"}
    state.save("c", s, replace(s, episode=replace(ep, action=Action.HOLD, reason=Reason.BLAST_RADIUS_CAP,
                                                   action_status=ActionStatus.NONE)))
    assert state.fleet("c", at - W, at, 2).scaled_down == frozenset()


def _old_count(table, f: Failure) -> None:
    """A failure counted as the release before counted it: its member in the minute's own item (``f#<service>``)
    and the service in ``#2`` once it has two there (core/fleet_minutes.py, the layout before round 10)."""
    from ecs_guardrail.core.fleet_minutes import member, minute_of, shard_of

    pk, sk = keys.fleet_minute("c", shard_of(f.service), minute_of(f.time))
    if table.add_to_set(pk, sk, f"f#{f.service}", [member(f.time, f.task_arn)]) >= 2:
        table.add_to_set(pk, f"{sk}#2", f"f#{f.service}", ["1"])


def test_fleet_minutes_read_the_items_the_release_before_wrote(table):
    """After a deploy the window still holds the minutes the release before wrote (members in the minute's
    item, the twice-failed in ``#2``), and minutes both releases wrote: a decision counts them all."""
    state = store_on(table).state
    at = T0 + timedelta(minutes=10, seconds=30)
    _old_count(table, _failure(1, 1, "a"))
    _old_count(table, _failure(2, 1.5, "a"))  # twice in one old minute
    _old_count(table, _failure(3, 2, "b"))
    _old_count(table, _failure(4, 3, "b"))  # once in each of two old minutes
    _old_count(table, _failure(5, 4.2, "c"))
    state.count_failures("c", "c", [_failure(6, 4.7, "c")])  # one minute, half by each release
    _old_count(table, _failure(7, 5, "d"))
    state.count_failures("c", "d", [_failure(8, 10.2, "d")])  # the cut minute: before the cut
    _old_count(table, _failure(9, 6, "e"))
    _old_count(table, _failure(10, 10.8, "e"))  # the cut minute of the release before: after the cut
    _old_count(table, _failure(11, 7, "g"))  # one failure only
    got = state.fleet("c", at - W, at, 2)
    assert got.failing == {"a", "b", "c", "d"} and got.uncertain == frozenset()
    assert state.fleet("c", at - W, at, 3).failing == frozenset()
    later = at + timedelta(seconds=20)  # now e's second failure is inside the window
    assert state.fleet("c", later - W, later, 2).failing == {"a", "b", "c", "d", "e"}
    # a notice taking back the old half of c's minute: c keeps one failure, so it no longer counts
    state.uncount_failures("c", "c", [_failure(5, 4.2, "c")])
    assert state.fleet("c", at - W, at, 2).failing == {"a", "b", "d"}


def test_fleet_minutes_read_members_only_where_the_window_cuts(table):
    """A decision's Queries of the window read names, never a member item, while every failing service is
    decided by whole minutes; a cut minute's members are read for its undecided services only."""
    state = store_on(table).state
    for i, svc in enumerate(("a", "b", "c")):
        state.count_failures("c", svc, [_failure(10 * i + 1, 1, svc), _failure(10 * i + 2, 2, svc)])
    state.count_failures("c", "z", [_failure(99, 5.5, "z")])
    at = T0 + timedelta(minutes=5, seconds=40)
    seen: list[str] = []
    query = table.query

    def counted(pk, **kw):
        rows = list(query(pk, **kw))
        seen.extend(r["sk"] for r in rows if "sk" in r)
        return iter(rows)

    table.query = counted
    try:
        assert state.fleet("c", at - W, at, 2).failing == {"a", "b", "c"}
    finally:
        table.query = query
    assert seen and not any(sk.startswith("m#") for sk in seen[:-1]) and seen[-1].startswith("m#")
