"""Issue 17 item 8: restore trusts the previous-desired-count tag only within a bound, and says what it
trusted (core/restore_count.py, pure)."""

from __future__ import annotations

import pytest

from ecs_guardrail.core.errors import RestoreError
from ecs_guardrail.core.restore_count import choose_restore_count

TAG = "ecs-guardrail:previous-desired-count"


def choose(**kw):
    base = dict(recorded=None, tag=None, count=None, max_capacity=None, history_max=None, tag_key=TAG)
    return choose_restore_count("prod/api", **{**base, **kw})


def test_the_table_is_trusted_as_the_watchdogs_own_record():
    assert choose(recorded=3, tag="5000").count == 3 and choose(recorded=3).source == "history table"


def test_a_tag_within_max_capacity_is_trusted_and_said_so():
    out = choose(tag="4", max_capacity=6)
    assert out.count == 4 and "MaxCapacity 6" in out.source and TAG in out.source


@pytest.mark.parametrize(("kw", "match"), [
    ({"tag": "5000", "max_capacity": 6}, "says 5000, above the scalable target's MaxCapacity 6: not trusted"),
    ({"tag": "5000", "history_max": 3}, "says 5000, but the service has no scalable target and the highest "
                                        "desired count recorded for it is 3"),
    ({"tag": "2"}, "the history table recorded no desired count for it"),  # nothing bounds it
    ({"tag": "many"}, "is not a count"),
    ({"tag": "-1", "max_capacity": 6}, "is negative"),
    ({}, "recorded no previous desired count"),
    ({"count": 7, "max_capacity": 6}, "--count 7 is above the scalable target's MaxCapacity 6"),
    ({"count": -2}, "--count -2 is negative"),
])
def test_anything_unbounded_needs_the_operators_count(kw, match):
    with pytest.raises(RestoreError, match=match):
        choose(**kw)


def test_a_tag_within_the_recorded_history_is_trusted_without_a_scalable_target():
    out = choose(tag="3", history_max=3)
    assert out.count == 3 and "highest desired count recorded for the service (3)" in out.source


def test_the_operators_count_is_trusted_and_names_what_the_others_said():
    out = choose(tag="5000", count=4)
    assert out.count == 4 and out.source == "--count (the operator's word; tag '5000')"
    assert choose(count=6, max_capacity=6).count == 6
