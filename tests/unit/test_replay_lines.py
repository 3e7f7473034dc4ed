"""replay's line decoder (``replay.lines.loads``): msgspec's speed, :func:`json.loads`'s answers."""

from __future__ import annotations

import json
import math

import pytest

from ecs_guardrail.replay.lines import loads

SAME = [
    '{"a": 1, "b": [1.5, -0.0, 1E2, true, null], "c": {"d": "\\u00e9"}}',
    '{"a": 1, "a": 2}',                              # the last of a repeated key, as json.loads
    '{"a": 123456789012345678901234567890}',         # past 64 bits: still an int
    '{"a": 123456789012345678901234567890.5}',
    '  {"a": "x"}  \n',
    '{"b": 1, "a": 2}',                              # the document's key order
]
FALLBACK = [
    '{"a": NaN, "b": Infinity}',                     # json.loads reads them; msgspec refuses
    '{"a": 1e400}',                                  # inf for json.loads, out of range for msgspec
    '"\\ud800"',                                     # a lone surrogate escape
]


@pytest.mark.parametrize("text", SAME + FALLBACK)
def test_loads_gives_what_json_loads_gives(text):
    got, want = loads(text), json.loads(text)
    assert repr(got) == repr(want) and type(got) is type(want)
    if isinstance(want, dict):
        assert list(got) == list(want)
        assert all(type(got[k]) is type(want[k]) for k in want)


def test_nan_is_a_float_nan():
    assert math.isnan(loads('{"a": NaN}')["a"])


@pytest.mark.parametrize("text", ['{"a": 1}x', '{"a": 1', 'a\x01', '{"a": 1' + "0" * 5000 + "}", "[" * 100_000])
def test_loads_fails_as_json_loads_fails(text):
    with pytest.raises((ValueError, RecursionError)) as want:
        json.loads(text)
    with pytest.raises(type(want.value)) as got:
        loads(text)
    assert str(got.value) == str(want.value)
