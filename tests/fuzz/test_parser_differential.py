"""Differential test (issues 23 and 36): the msgspec event models and Settings against the pydantic ones
they replaced.

The oracles (``tests/oracle/``) are the pydantic models verbatim. For every drawn input, the new parser
must accept what the oracle accepts, with the same values (fields and the properties callers read), and
reject what it rejects, at the same first problem's location (the reason's words are msgspec's).

The documented differences (CHANGELOG, issues 23 and 36), all stricter, on inputs ECS never sends:

- a timestamp is RFC 3339 text as msgspec reads it: no seconds since the epoch (a number, or a string of
  one), no ISO 8601 form outside RFC 3339 (a date alone, no seconds, ``_`` or ``,``); digits past
  microseconds are rounded, not cut (values compared to the microsecond);
- ``detail.version`` is a JSON integer (pydantic read ``"4"`` and ``4.0``);
- a Python attribute name (``last_status``) is not read for its JSON key, and unknown keys are ignored:
  the oracle is run with ``populate_by_name=False`` and ``extra="ignore"`` (below);
- where pydantic raised an ``OverflowError`` out of a validator (a time of year 1 moved to UTC), the new
  parser rejects the event at that field;
- a deployment event's ``detail.deploymentId`` text is ``ecs-svc/`` and 1 to 64 ASCII letters or digits
  (issue 34 leftovers: the oracle read any text, a right-to-left override or an empty one included).

Settings: msgspec's lax mode reads numbers and booleans from text by its own rules (JSON's number
grammar: no whitespace, ``_`` or leading zero; ``true``/``false``/``1``/``0``); where a value is outside the text both
read alike (:func:`_plain`), either outcome is allowed, but a value accepted is the number the text
says. The settings' own rules (lone surrogates, over-long integers, names that are not settings) agree
with the oracle exactly. Inputs are JSON-shaped (what EventBridge delivers).
"""

from __future__ import annotations

import copy
import json
import math
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError
from tests.conftest import json_paths
from tests.oracle import pydantic_events as old
from tests.oracle import pydantic_settings as old_settings

from ecs_guardrail.core import events as new
from ecs_guardrail.core.errors import EventRejectedError, SettingsError
from ecs_guardrail.settings import SETTING_NAMES, load_settings
from ecs_guardrail.validation.fields import Invalid, Model

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


# the oracle without the two documented differences of reading keys (nested models first: a model's
# schema holds its fields' schemas as they were built)
for _cls in (old.Container, old.TaskDetail, old._ServiceDetail, old.ServiceActionDetail, old.DeploymentDetail,
             old._EcsEnvelope, old.TaskStateChange, old._ServiceScoped, old.ServiceAction,
             old.DeploymentStateChange, old.OtherEcsEvent):
    _cls.model_config.update(populate_by_name=False, validate_by_name=False, validate_by_alias=True, extra="ignore")
    _cls.model_rebuild(force=True)


def _norm(x: Any) -> Any:
    """A comparable form of either parser's output (datetimes to the microsecond: see the module)."""
    if isinstance(x, BaseModel):
        return (type(x).__name__, {k: _norm(getattr(x, k)) for k in type(x).model_fields})
    if isinstance(x, Model):
        return (type(x).__name__, {k: _norm(getattr(x, k)) for k in x.__struct_fields__})
    if isinstance(x, datetime):
        return ("datetime", x.timestamp() if x.tzinfo else x.replace(tzinfo=UTC).timestamp(), x.utcoffset())
    if isinstance(x, float) and math.isnan(x):
        return "nan"
    if isinstance(x, list | tuple):
        return [_norm(v) for v in x]
    if isinstance(x, dict):
        return {k: _norm(v) for k, v in x.items()}
    return x


def _close(a: Any, b: Any) -> bool:
    """``a == b``, but timestamps within a microsecond (msgspec rounds what pydantic cut)."""
    if isinstance(a, tuple) and len(a) == 3 and a[0] == "datetime" and isinstance(b, tuple) and b[0] == "datetime":
        return abs(a[1] - b[1]) <= 1.5e-6 and a[2] == b[2]
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    return a == b


def _properties(event: Any) -> dict[str, Any]:
    out = {}
    for obj, names in ((event, ("cluster", "service", "subject")), (getattr(event, "detail", None),
                                                                     ("cluster", "service", "family"))):
        for name in names:
            if isinstance(getattr(type(obj), name, None), property):
                out[f"{type(obj).__name__}.{name}"] = getattr(obj, name)
    return out


def _outcome(parse, raw):
    """``(event, None)``, or ``(None, ("loc", first problem's location))`` for a rejection by the models,
    ``(None, ("overflow", reason))`` for an OverflowError out of them (or out of the parser),
    ``(None, ("reason", text))`` else."""
    try:
        event = parse(raw)
    except EventRejectedError as exc:
        cause = exc.__context__
        if isinstance(cause, Invalid):
            return None, ("loc", cause.loc)
        if isinstance(cause, ValidationError):
            return None, ("loc", tuple(cause.errors()[0]["loc"]))
        if isinstance(cause, OverflowError):
            return None, ("overflow", exc.reason)
        return None, ("reason", exc.reason)
    except OverflowError as exc:  # the oracle's path for a detail-type it does not read let it out
        return None, ("overflow", str(exc))
    return event, None


def _refused(value: Any, tp: Any) -> bool:
    try:
        msgspec.convert(value, tp, strict=True)
    except (msgspec.ValidationError, UnicodeEncodeError):  # parse_event refuses a lone surrogate before
        return True
    return False


def _stricter(raw: Any) -> bool:
    """Whether ``raw`` holds a value of a documented difference: a time msgspec does not read as RFC
    3339, a ``detail.version`` that is not a JSON integer, or a deployment id ECS never writes."""
    if not isinstance(raw, dict):
        return False
    spots = [raw["time"]] if "time" in raw else []
    detail = raw.get("detail")
    if isinstance(detail, dict):
        spots += [detail[k] for k in DATETIME_KEYS if k in detail]
        if "version" in detail and _refused(detail["version"], int | None):
            return True
        did = detail.get("deploymentId")
        if raw.get("detail-type") == new.DEPLOYMENT_STATE_CHANGE and isinstance(did, str) \
                and not re.fullmatch(r"ecs-svc/[0-9A-Za-z]{1,64}", did):
            return True
    return any(_refused(v, datetime | None) for v in spots)


def _same(raw: Any) -> None:
    mine, my_reason = _outcome(new.parse_event, copy.deepcopy(raw))
    theirs, their_reason = _outcome(old.parse_event, copy.deepcopy(raw))
    if their_reason and their_reason[0] == "overflow":
        assert mine is None, raw
        return
    if _stricter(raw):
        assert mine is None or theirs is not None, (my_reason, raw)  # never more permissive
        if mine is None:
            return
    assert (mine is None) == (theirs is None), (my_reason, their_reason, raw)
    if mine is None:
        assert my_reason == their_reason, raw
        return
    assert _close(_norm(mine), _norm(theirs)), raw
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


_KINDS = {f.name: f.type for f in msgspec.structs.fields(__import__("ecs_guardrail.settings").settings.Settings)}
_NUMBER_TEXT = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?")  # JSON's number grammar, no exponent


def _kind(name: str) -> Any:
    tp = _KINDS[name]
    return tp.__origin__ if hasattr(tp, "__metadata__") else tp


def _plain(name: str, value: str) -> bool:
    """Whether msgspec's lax mode and pydantic's read ``value`` of setting ``name`` alike (a number's
    digits, a boolean's true/false/1/0): elsewhere their rules differ (module docstring)."""
    kind = _kind(name)
    if kind is bool:
        return value.lower() in ("true", "false", "1", "0")
    if kind is int:
        return re.fullmatch(r"-?(0|[1-9][0-9]*)", value) is not None
    if kind is float:
        return _NUMBER_TEXT.fullmatch(value) is not None
    return True


def _settings_outcome(load, env):
    """``(values, None)``, or ``(None, the first invalid setting's name)``."""
    try:
        s = load(env)
    except SettingsError as exc:
        return None, str(exc).removeprefix("invalid setting: ").split("=", 1)[0]
    return {name: _norm(getattr(s, name)) for name in sorted(SETTING_NAMES)}, None


@settings(max_examples=600, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(SETTING_NAMES)), NUMBERS, max_size=4))
@example({"PROBE_DELAY_MINUTES": "20", "PROBE_MAX_DELAY_MINUTES": "10"})
@example({"CRASH_THRESHOLD": "0", "DRY_RUN": "maybe", "SNS_FORMAT": "x", "HISTORY_TABLE": "a"})
@example({"SLACK_WEBHOOK_SECRET_ARN": "x\udcff", "RUNBOOK_URL": "https://x\udcff", "CRASH_THRESHOLD": "1\udcff"})
@example({"RUNBOOK_URL": "https://x\udcff", "CRASH_THRESHOLD": "0"})
@example({"HISTORY_TABLE": "abc\udcff", "AUDIT_PRODUCTION_PATTERNS": "pro\udcff"})
@example({"CRASH_THRESHOLD": "9" * 4301})
@example({"__deepcopy__": "1", "CRASH_THRESHOLD": "3"})
def test_settings_agree_with_the_pydantic_model(env):
    mine, my_first = _settings_outcome(load_settings, env)
    theirs, their_first = _settings_outcome(old_settings.load_settings, env)
    odd = [k for k, v in env.items() if k in SETTING_NAMES and not _plain(k, v)]
    if odd:
        if mine is not None:  # what was read is the number or boolean the text says
            for k in odd:
                assert float(mine[k]) == float(env[k].strip().replace("_", "")) if _kind(k) is not bool else True
        return
    assert (mine is None) == (theirs is None), (my_first, their_first)
    assert my_first == their_first
    if mine is not None:
        assert _close(mine, theirs)


def test_settings_field_table_is_the_old_models():
    from ecs_guardrail.settings import Settings

    assert list(Settings.__struct_fields__) == list(old_settings.Settings.model_fields)
    assert _norm(Settings())[1] == {k: _norm(getattr(old_settings.Settings(), k))
                                    for k in old_settings.Settings.model_fields}
