"""Fuzz the event parser and the recorder from the real samples in ``events/ecs/``.

- :func:`parse_event` raises nothing but :class:`EventRejectedError`, whatever the input;
- the recorder never raises on a malformed event and keeps it with its reason (``REJECTED#<day>``);
- a rejected event never counts as a crash (the watchdog reports it rejected and writes nothing);
- ARN forms (old ``task/ID``, new ``task/CLUSTER/ID``), partitions and 0-3 fractional digits parse.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.conftest import json_paths

from ecs_guardrail.core.errors import EventRejectedError, SettingsError
from ecs_guardrail.core.events import TaskStateChange, parse_event
from ecs_guardrail.settings import load_settings

SAMPLES = sorted((Path(__file__).resolve().parents[2] / "events" / "ecs").glob("*.json"))
RAW = [json.loads(p.read_text()) for p in SAMPLES]
ODD = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True),
    st.text(max_size=20), st.just("x" * 200_000), st.just("\udcff\x00"), st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
    st.sampled_from(["NewStopCode", "STOPPED", "2025-13-45T99:99:99Z", "arn:aws:ecs:::task/", "service:", "-1"]),
)


@st.composite
def mutated(draw):
    event = copy.deepcopy(draw(st.sampled_from(RAW)))
    for _ in range(draw(st.integers(1, 4))):
        paths = [p for p in json_paths(event) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = event
        for key in path[:-1]:
            parent = parent[key]
        if draw(st.booleans()) and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(ODD)
    return event


def _only_rejected(raw):
    try:
        return parse_event(raw)
    except EventRejectedError as exc:
        assert exc.reason and isinstance(exc.reason, str)
        return None


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mutated())
def test_parse_event_raises_only_event_rejected(raw):
    _only_rejected(raw)


@settings(max_examples=100, deadline=None)
@given(st.one_of(ODD, st.lists(ODD, max_size=3), st.dictionaries(st.text(max_size=12), ODD, max_size=6)))
def test_parse_event_on_arbitrary_json(raw):
    _only_rejected(raw)


TASK = next(r for r, p in zip(RAW, SAMPLES, strict=True) if "oom-exit137" in p.name)


@pytest.mark.parametrize("partition", ["aws", "aws-cn", "aws-us-gov"])
@pytest.mark.parametrize("old_form", [False, True])
@pytest.mark.parametrize("digits", [0, 1, 2, 3])
def test_arn_forms_partitions_and_fractional_seconds(partition, old_form, digits):
    raw = copy.deepcopy(TASK)
    d = raw["detail"]
    cluster = d["clusterArn"].rsplit("/", 1)[1]
    task_id = d["taskArn"].rsplit("/", 1)[1]
    d["clusterArn"] = d["clusterArn"].replace("arn:aws:", f"arn:{partition}:")
    d["taskArn"] = f"arn:{partition}:ecs:cn-north-1:111122223333:task/{'' if old_form else cluster + '/'}{task_id}"
    raw["time"] = "2022-08-08T05:07:23" + ("." + "123"[:digits] if digits else "") + "Z"
    event = parse_event(raw)
    assert isinstance(event, TaskStateChange)
    assert event.detail.cluster == cluster and event.detail.service
    assert event.time.tzinfo is not None and event.time.second == 23


@pytest.mark.parametrize("code", ["ContainerRuntimeFailure", "", "essentialcontainerexited ", None])
def test_unknown_stop_codes_parse_and_never_read_as_crash(code):
    from ecs_guardrail.core.classify import StopKind, classify_stop

    raw = copy.deepcopy(TASK)
    if code is None:
        raw["detail"].pop("stopCode")
    else:
        raw["detail"]["stopCode"] = code
    kind = classify_stop(parse_event(raw).detail).kind
    # with no stop code, the reason decides (ARCHITECTURE.md's crash row: events from before stopCode)
    by_reason = not code and str(raw["detail"].get("stoppedReason", "")).lower().startswith(
        ("essential container in task exited", "task failed to start"))
    assert kind is (StopKind.CRASH if code == "essentialcontainerexited " or by_reason else StopKind.UNKNOWN)
    raw["detail"]["stoppedReason"] = "Scaling activity initiated by (deployment ecs-svc/1)"
    if code != "essentialcontainerexited ":
        assert classify_stop(parse_event(raw).detail).kind is StopKind.UNKNOWN


# ---------------------------------------------------------------- recorder and watchdog on moto
@pytest.fixture(scope="module")
def moto_store():
    import boto3
    from moto import mock_aws

    from ecs_guardrail.adapters.history import HistoryStore
    from ecs_guardrail.replay.embedded import create_history_table

    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "eu-west-1"}
    with pytest.MonkeyPatch.context() as mp, mock_aws():
        for k, v in env.items():
            mp.setenv(k, v)
        ddb = boto3.client("dynamodb", region_name="eu-west-1")
        create_history_table(ddb, "fuzz-history")
        yield HistoryStore(ddb, "fuzz-history")

@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                              HealthCheck.function_scoped_fixture])
@given(raw=mutated())
def test_recorder_keeps_every_rejected_event_and_never_raises(moto_store, raw):
    from ecs_guardrail.handlers.record import record_event

    received = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    before = len(moto_store.rejected(received))
    out = record_event(raw, moto_store, received=received)
    assert out["status"] in ("recorded", "duplicate", "rejected")
    if out["status"] == "rejected":
        kept = moto_store.rejected(received)
        assert len(kept) >= before  # the same raw text twice is one item
        assert any(k["reason"] == out["reason"][:1000] for k in kept)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                              HealthCheck.function_scoped_fixture])
@given(raw=mutated())
def test_rejected_event_never_counts_as_a_crash(moto_store, raw):
    from ecs_guardrail.handlers.runtime import Clients, Runtime
    from ecs_guardrail.handlers.watchdog import process

    try:
        parse_event(raw)
        return  # valid mutations are the other tests' business
    except EventRejectedError:
        pass
    rt = Runtime(settings=load_settings({"HISTORY_TABLE": "fuzz-history"}), history=moto_store, clients=Clients())
    out, wd = process(raw, rt)
    assert out["status"] == "rejected" and wd.decisions == []


# ---------------------------------------------------------------- settings
BAD = {
    "CRASH_THRESHOLD": ["0", "-1", "five", "1.5", "1001", ""],
    "CRASH_WINDOW_MINUTES": ["0", "1441", "x"],
    "MAX_ACTION_FRACTION": ["1.5", "-0.1", "nan", "abc"],
    "MIN_ACTIONS_ALLOWED": ["-1", "one"],
    "FLEET_SIGNAL_MIN_FAILURES": ["0", "many"],
    "DRY_RUN": ["maybe", "2"],
    "HISTORY_TABLE": ["ab", "bad name!", "x" * 256],
    "HISTORY_TTL_DAYS": ["0", "3651"],
    "ALERT_TOPIC_ARN": ["not-an-arn", "arn:aws:sqs:eu-west-1:111122223333:q"],
    "SAMPLE_LOOKBACK_MINUTES": ["0", "181"],
}


@pytest.mark.parametrize("name,value", [(k, v) for k, vs in BAD.items() for v in vs])
def test_invalid_setting_names_the_variable(name, value):
    with pytest.raises(SettingsError) as info:
        load_settings({name: value})
    assert name in str(info.value)


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(sorted(BAD)), value=st.text(max_size=30))
def test_settings_fuzz_only_settings_error(name, value):
    try:
        load_settings({name: value})
    except SettingsError as exc:
        assert name in str(exc)
