"""Differential test (issue 23): the plain event models and Settings against the pydantic ones they replaced.

The oracles (``tests/oracle/``) are the pydantic models verbatim. For every drawn input, the new parser
must accept exactly what the oracle accepts, with the same values (fields, kept extra fields and the
properties callers read), and reject with the same reason text: the same problems, locations and
messages, in the same order and count, since the recorder stores that text and operators read it.

One documented difference (CHANGELOG, issue 23): a timestamp given as a number, or as a string of one,
is no longer read as seconds since the epoch; pydantic's wording for an unreadable timestamp differed
per cause and is compared only as "some datetime message". Inputs are JSON-shaped (what EventBridge
delivers): dicts, lists, strings, numbers, booleans and null.
"""

from __future__ import annotations

import copy
import json
import math
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from tests.conftest import json_paths
from tests.oracle import pydantic_events as old
from tests.oracle import pydantic_settings as old_settings

from ecs_guardrail.core import events as new
from ecs_guardrail.core.errors import EventRejectedError, SettingsError
from ecs_guardrail.core.fields import Checked
from ecs_guardrail.settings import SETTING_NAMES, load_settings

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_FILES = sorted((ROOT / "events" / "ecs").glob("*.json")) + \
    sorted((ROOT.parent / "shared" / "samples" / "ecs-events").glob("*.json"))
SAMPLES = [json.loads(p.read_text()) for p in SAMPLE_FILES]
DATETIME_KEYS = {"time", "createdAt", "startedAt", "stoppingAt", "stoppedAt", "executionStoppedAt"}
_DT_MESSAGE = re.compile(r"Input should be a valid datetime[^;]*?(?=; [\w.\-\[\]]+: |$| \(\+\d+ more\)$)")
_EPOCH = re.compile(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*")

stamps = st.builds(
    lambda y, mo, d, sep, h, mi, s, frac, tz: f"{y:04d}-{mo:02d}-{d:02d}{sep}{h:02d}:{mi:02d}{s}{frac}{tz}",
    st.integers(1, 9999), st.integers(0, 13), st.integers(0, 32), st.sampled_from(["T", "t", " ", "_", "X"]),
    st.integers(0, 25), st.integers(0, 61), st.sampled_from(["", ":00", ":59", ":60", ":7"]),
    st.sampled_from(["", ".", ".1", ".12", ".123", ".123456", ".1234567", ",5", ".123456789012"]),
    st.sampled_from(["", "Z", "z", "+01:00", "+0100", "-00:00", "+23:59", "+24:00", "+01", "-12:30", " Z", "UTC"]),
)
TIMES = st.one_of(
    stamps, st.sampled_from(["2025-08-21", "2025-02-30", "1700000000", "1700000000.5", " 1700000000", "yesterday",
                             "2025-08-21T10:00:00Z\n", "9999-12-31T23:59:59Z", "1999-12-31T23:59:59Z",
                             "2199-12-31T23:59:59.999Z", "2200-01-01T00:00:00Z", "0001-01-01T00:00:00+01:00"]),
    st.integers(-10**12, 10**13), st.floats(-1e12, 1e13, allow_nan=False),
)
ARNS = st.one_of(
    st.sampled_from([
        "arn:aws:ecs:eu-west-1:111122223333:cluster/prod", "arn:aws:ecs:eu-west-1:111122223333:cluster/prod\n",
        "arn:aws-cn:ecs:cn-north-1:111122223333:cluster/x", "arn:aws:ecs:eu-west-1:11112222333:cluster/prod",
        "arn:aws:ecs:eu-west-1:111122223333:service/prod/api", "arn:aws:ecs:eu-west-1:111122223333:service/api",
        "arn:aws:ecs:eu-west-1:111122223333:service/prod/a b", "arn:aws:ecs:eu-west-1:111122223333:daemon/prod/d",
        "arn:aws:ecs:eu-west-1:111122223333:task/prod/0123456789abcdef", "arn:aws:ecs:eu-west-1:111122223333:task/x",
        "arn:aws:ecs:eu-west-1:111122223333:task/prod/" + "a" * 65, "arn:aws:sns:eu-west-1:111122223333:t",
        "arn:aws:ecs:eu-west-1:111122223333:task-definition/web:3", "service:web", "family:job", "service:a/b",
        "arn:aws:ecs:eu-west-1:111122223333:task-set/prod/api/ecs-svc/123",
    ]),
    st.text(alphabet="arn:aws-ecs/0123456789", max_size=40),
)
ODD = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70), st.sampled_from([0, 1, -1, 2**31, 2**32, -(2**31) - 1]),
    st.floats(allow_nan=True), st.sampled_from([1.0, 137.0, 4.5, 1e10]), st.text(max_size=20),
    st.sampled_from(["x" * 5000, "x" * 300, "1", " 4", "4.0", "1_0", "true", "", "\n", "STOPPED"]),
    st.just("\udcff"), st.lists(st.integers(), max_size=3), st.lists(st.text(max_size=3), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3), TIMES, ARNS,
)
#: python attribute names (read when the alias is absent; extra when it is there too)
NAMES = ["last_status", "cluster_arn", "task_arn", "exit_code", "detail_type", "replay_name", "event_name",
         "stop_code", "replay-name", "note"]


@st.composite
def mutated(draw):
    event = copy.deepcopy(draw(st.sampled_from(SAMPLES)))
    for _ in range(draw(st.integers(0, 4))):
        paths = [p for p in json_paths(event) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = event
        for key in path[:-1]:
            parent = parent[key]
        action = draw(st.sampled_from(["drop", "set", "set", "time", "add"]))
        if action == "drop" and isinstance(parent, dict):
            del parent[path[-1]]
        elif action == "time" or (action == "set" and path[-1] in DATETIME_KEYS):
            parent[path[-1]] = draw(TIMES)
        elif action == "add" and isinstance(parent, dict):
            parent[draw(st.sampled_from(NAMES))] = draw(ODD)
        else:
            parent[path[-1]] = draw(ODD)
    return event


def _norm(x: Any) -> Any:
    """A comparable form of either parser's output."""
    if isinstance(x, BaseModel):
        return (type(x).__name__, {k: _norm(getattr(x, k)) for k in type(x).model_fields}, _norm(x.model_extra))
    if isinstance(x, Checked):
        return (type(x).__name__, {k: _norm(v) for k, v in x.fields().items()}, _norm(x.model_extra))
    if isinstance(x, datetime):
        return ("datetime", x.isoformat(), x.utcoffset())
    if isinstance(x, float) and math.isnan(x):
        return "nan"
    if isinstance(x, list | tuple):
        return [_norm(v) for v in x]
    if isinstance(x, dict):
        return {k: _norm(v) for k, v in x.items()}
    return x


def _properties(event: Any) -> dict[str, Any]:
    out = {}
    for obj, names in ((event, ("cluster", "service", "subject")), (getattr(event, "detail", None),
                                                                     ("cluster", "service", "family"))):
        for name in names:
            if isinstance(getattr(type(obj), name, None), property):
                out[f"{type(obj).__name__}.{name}"] = getattr(obj, name)
    return out


def _outcome(parse, raw):
    try:
        event = parse(raw)
    except EventRejectedError as exc:
        return None, _DT_MESSAGE.sub("<datetime>", exc.reason)
    return event, None


def _epoch_time(raw: Any) -> bool:
    """Whether a timestamp field holds what pydantic read as seconds since the epoch (the stricter case)."""
    if not isinstance(raw, dict):
        return False
    spots = [raw.get("time")]
    detail = raw.get("detail")
    if isinstance(detail, dict):
        spots += [detail.get(k) for k in DATETIME_KEYS]
    return any((isinstance(v, int | float) and not isinstance(v, bool)) or (isinstance(v, str) and _EPOCH.fullmatch(v))
               for v in spots)


def _same(raw: Any) -> None:
    mine, my_reason = _outcome(new.parse_event, copy.deepcopy(raw))
    theirs, their_reason = _outcome(old.parse_event, copy.deepcopy(raw))
    if theirs is not None and mine is None:
        assert _epoch_time(raw) and "<datetime>" in my_reason, (my_reason, raw)
        return
    assert (mine is None) == (theirs is None), (my_reason, their_reason)
    if mine is None:
        if _epoch_time(raw):  # pydantic read the number and may have found another problem first
            return
        assert my_reason == their_reason
        return
    assert _norm(mine) == _norm(theirs)
    assert _properties(mine) == _properties(theirs)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mutated())
def test_parse_event_agrees_with_the_pydantic_models(raw):
    _same(raw)


@pytest.mark.parametrize("index", range(len(SAMPLES)), ids=[p.name for p in SAMPLE_FILES])
def test_every_real_sample_agrees(index):
    _same(SAMPLES[index])
    if not any(x in SAMPLE_FILES[index].name for x in ("spot-notice-running-spotinterruption.docs-current",
                                                         "spot-notice-running-terminationnotice.docs2023")):
        new.parse_event(SAMPLES[index])  # every complete real event parses


@settings(max_examples=200, deadline=None)
@given(st.one_of(ODD, st.lists(ODD, max_size=3), st.dictionaries(
    st.sampled_from(["detail-type", "source", "detail", "time", "resources", "id", "version", "x"]), ODD, max_size=8)))
def test_arbitrary_json_agrees(raw):
    _same(raw)


# ---------------------------------------------------------------- settings
NUMBERS = st.one_of(
    st.from_regex(r"\A[ \t]?[+-]?[0-9_]{0,5}(\.[0-9_]{0,3})?([eE][+-]?[0-9]{0,3})?[ \t\n]?\Z"),
    st.sampled_from(["nan", "NaN", "inf", "-inf", "infinity", "1_0", "1__0", "_1", "1.0_0", "0x10", "\u0661",
                     "\xa01", "\x1c1", "1\u3000", "true", "False", "YES", "on", "Off", " true", "2", "manual",
                     "probe", "chatbot", "TEXT", "prod, prod-*", "none", "a b", "/health,/", "health",
                     "https://x/{cluster}", "http://x", "https://x\n", "arn:aws:sns:eu-west-1:111122223333:t",
                     "arn:aws:sns:eu-west-1:111122223333:t\n", "ab", "bad name!", "x" * 256, "  ", ""]),
    st.text(max_size=12),
)


def _settings_outcome(load, env):
    try:
        s = load(env)
    except SettingsError as exc:
        return None, str(exc)
    return {name: _norm(getattr(s, name)) for name in sorted(SETTING_NAMES)}, None


@settings(max_examples=600, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(SETTING_NAMES)), NUMBERS, max_size=4))
@example({"PROBE_DELAY_MINUTES": "20", "PROBE_MAX_DELAY_MINUTES": "10"})
@example({"CRASH_THRESHOLD": "0", "DRY_RUN": "maybe", "SNS_FORMAT": "x", "HISTORY_TABLE": "a"})
@example({"SLACK_WEBHOOK_SECRET_ARN": "x\udcff", "RUNBOOK_URL": "https://x\udcff", "CRASH_THRESHOLD": "1\udcff"})
@example({"CRASH_THRESHOLD": "9" * 4301})
def test_settings_agree_with_the_pydantic_model(env):
    assert _settings_outcome(load_settings, env) == _settings_outcome(old_settings.load_settings, env)


def test_settings_field_table_is_the_old_models():
    from ecs_guardrail.settings import Settings

    assert [s.name for s in Settings.FIELDS] == list(old_settings.Settings.model_fields)
    assert _norm(Settings()) [1] == {k: _norm(getattr(old_settings.Settings(), k))
                                     for k in old_settings.Settings.model_fields}
