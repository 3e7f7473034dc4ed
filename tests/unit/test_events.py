"""Event models: every real sample parses, documentation snippets are rejected with a reason."""

from __future__ import annotations

import json

import pytest

from ecs_guardrail.core.errors import EventRejectedError
from ecs_guardrail.core.events import (
    DeploymentStateChange,
    ServiceAction,
    TaskStateChange,
    cluster_name,
    parse_event,
    service_ref,
)
from tests.conftest import EVENTS, load_event

SAMPLES = sorted(p.name for p in (EVENTS / "ecs").glob("*.json"))
PARTIAL = {  # AWS documentation snippets without the envelope's time and region
    "task-fargate-spot-notice-running-spotinterruption.docs-current.json",
    "task-fargate-spot-notice-running-terminationnotice.docs2023.json",
}


@pytest.mark.parametrize("name", SAMPLES)
def test_every_sample_parses_or_is_rejected_with_a_reason(name):
    raw = load_event(name)
    if name in PARTIAL:
        with pytest.raises(EventRejectedError) as err:
            parse_event(raw)
        assert "time: field required" in err.value.reason
        assert err.value.raw is raw
        return
    event = parse_event(raw)
    kind = {"task": TaskStateChange, "service": ServiceAction, "deployment": DeploymentStateChange}
    assert isinstance(event, kind[name.split("-")[0]])
    assert event.time.tzinfo is not None


def test_unknown_fields_are_ignored_and_missing_optional_ones_tolerated():
    """Unknown keys are ignored by the models (issue 36; the recorder stores the raw event with them)."""
    raw = load_event("task-fargate-stopped-essential-oom-exit137.derived")
    raw["detail"]["someFieldAwsAddsNextYear"] = {"x": 1}
    del raw["detail"]["availabilityZone"]
    e = parse_event(raw)
    assert e.detail.availability_zone is None
    assert not hasattr(e.detail, "someFieldAwsAddsNextYear")
    assert raw["detail"]["someFieldAwsAddsNextYear"] == {"x": 1}


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda r: r["detail"].pop("taskArn"), "detail.taskArn: field required"),
        (lambda r: r["detail"].update(clusterArn="not-an-arn"), "not an ECS cluster ARN"),
        (lambda r: r.update(source="aws.ec2"), "source"),
        (lambda r: r.update({"detail-type": ""}), "is not an ECS event"),
        (lambda r: r["detail"].update(version=True), "version"),
        (lambda r: r["detail"]["containers"][0].update(exitCode="137x"), "exitCode"),
        (lambda r: r.update(time="yesterday"), "time"),
    ],
)
def test_bad_input_is_rejected_with_its_reason(mutate, reason):
    raw = load_event("task-fargate-stopped-essential-oom-exit137.derived")
    mutate(raw)
    with pytest.raises(EventRejectedError) as err:
        parse_event(raw)
    assert reason in err.value.reason


@pytest.mark.parametrize("raw", [None, [], "text", 3, {"detail-type": ["x"]}])
def test_non_objects_are_rejected(raw):
    with pytest.raises(EventRejectedError):
        parse_event(raw)


@pytest.mark.parametrize("stamp", ["2025-08-21T10:00:00Z", "2025-08-21T10:00:00.1Z", "2025-08-21T10:00:00.12Z",
                                   "2025-08-21T10:00:00.123Z"])
def test_timestamps_with_zero_to_three_fractional_digits(stamp):
    raw = load_event("task-fargate-stopped-essential-oom-exit137.derived")
    raw["time"] = stamp
    raw["detail"]["stoppedAt"] = stamp
    assert parse_event(raw).time.year == 2025


@pytest.mark.parametrize("partition", ["aws", "aws-cn", "aws-us-gov"])
def test_partitions_and_both_task_arn_forms(partition):
    raw = json.loads(json.dumps(load_event("task-fargate-stopped-essential-oom-exit137.derived")).replace(
        "arn:aws:", f"arn:{partition}:"))
    assert parse_event(raw).detail.cluster == "example-web_cluster-dev"
    raw["detail"]["taskArn"] = f"arn:{partition}:ecs:us-east-1:111122223333:task/0123456789abcdef"
    assert parse_event(raw).detail.task_arn.endswith("/0123456789abcdef")


def test_arn_helpers():
    assert cluster_name("arn:aws:ecs:eu-west-1:111122223333:cluster/prod") == "prod"
    assert service_ref("arn:aws:ecs:eu-west-1:111122223333:service/prod/api") == ("prod", "api")
    assert service_ref("arn:aws:ecs:eu-west-1:111122223333:service/api") == (None, "api")
    with pytest.raises(ValueError):
        cluster_name("arn:aws:ecs:eu-west-1:111122223333:service/prod/api")


def test_service_action_names_its_service_and_cluster():
    e = parse_event(load_event("service-action-task-start-impaired"))
    assert (e.cluster, e.service, e.detail.event_name) == ("example-cluster", "example-service",
                                                          "SERVICE_TASK_START_IMPAIRED")


def test_huge_reason_is_clipped_not_rejected():
    raw = load_event("task-fargate-stopped-essential-oom-exit137.derived")
    raw["detail"]["stoppedReason"] = "x" * 1_000_000
    assert len(parse_event(raw).detail.stopped_reason) == 4096


@pytest.mark.parametrize(("group", "service", "family"), [
    ("service:web", "web", None),
    ("family:nightly-report", None, "nightly-report"),
    ("nightly-reports", None, "TD"),  # a custom RunTask group: the task definition's family
    (None, None, "TD"),
    ("service:", None, None),  # a service group without a name: neither
])
def test_a_task_is_a_services_or_a_jobs(group, service, family):
    raw = load_event("task-fargate-stopped-essential-oom-exit137.derived")
    td = raw["detail"]["taskDefinitionArn"]
    expected_family = td.rsplit("/", 1)[-1].rpartition(":")[0] if family == "TD" else family
    if group is None:
        raw["detail"].pop("group", None)
    else:
        raw["detail"]["group"] = group
    d = parse_event(raw).detail
    assert (d.service, d.family) == (service, expected_family)


def test_a_task_without_a_usable_task_definition_is_no_job():
    raw = load_event("task-fargate-stopped-essential-oom-exit137.derived")
    raw["detail"]["group"] = "custom"
    raw["detail"]["taskDefinitionArn"] = "arn:aws:ecs:eu-west-1:123456789012:something/else"
    assert parse_event(raw).detail.family is None


def test_parsed_once_validates_the_same_object_once_and_nothing_else():
    import copy

    from ecs_guardrail.core import events as events_module
    from ecs_guardrail.core.events import parse_event, parsed_once

    raw = load_event("task-fargate-stopped-essential-oom-exit137.derived")
    calls = []
    real = events_module.TaskStateChange.validate

    def counting(value, *args, **kwargs):
        calls.append(value)
        return real(value, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(events_module.TaskStateChange, "validate", counting)
        with parsed_once():
            first = parse_event(raw)
            assert parse_event(raw) is first and len(calls) == 1  # the recorder, then the watchdog
            other = copy.deepcopy(raw)
            assert parse_event(other) == first and len(calls) == 2  # an equal but other object: validated
        assert parse_event(raw) is not first and len(calls) == 3  # outside the block: every call validates
        with parsed_once():
            bad = {**raw, "time": "not a time"}
            for _ in range(2):
                with pytest.raises(EventRejectedError):
                    parse_event(bad)  # a rejection is never remembered


@pytest.mark.parametrize("inside", [False, True])
def test_canonical_json_is_written_once_in_a_replay_and_is_the_same_text_everywhere(inside):
    """The recorder's raw text: compact JSON, keys sorted, UTF-8 as it is: the same document as
    ``json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)`` writes. A replay (inside
    ``parsed_once``) reuses the text ``parse_event`` wrote; a lone surrogate is still rejected there, a
    real emoji is not."""
    import contextlib

    from ecs_guardrail.core.events import canonical_json, parsed_once

    def dumps(doc):
        return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    raw = load_event("task-fargate-stopped-essential-oom-exit137.derived")
    emoji = {**raw, "detail": {**raw["detail"], "stoppedReason": "Essential container exited \U0001f525"}}
    lone = {**raw, "detail": {**raw["detail"], "stoppedReason": "CannotPullContainerError \udcff"}}
    with parsed_once() if inside else contextlib.nullcontext():
        parse_event(emoji)
        assert canonical_json(emoji) == dumps(emoji) and json.loads(canonical_json(emoji)) == emoji
        assert "\U0001f525" in canonical_json(emoji)
        with pytest.raises(EventRejectedError, match="lone surrogate"):
            parse_event(lone)
        assert canonical_json(raw) == dumps(raw)  # another object: written anew


def test_canonical_json_sorts_keys_by_code_point_and_writes_no_nan():
    """Keys sorted as Python sorts text (UTF-8's byte order is code point order), nested ones too; a
    number JSON has no word for is ``null`` (DynamoDB would store no NaN either); a key that is not text
    (no JSON document has one) is written unsorted."""
    from ecs_guardrail.core.events import canonical_json

    doc = {"\U0001f600": 1, "\uffff": 2, "é": 3, "e": {"b": [1, {"z": 0, "y": 1.5}], "a": None}}
    assert canonical_json(doc) == json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert canonical_json({"a": float("nan"), "b": float("inf")}) == '{"a":null,"b":null}'
    assert json.loads(canonical_json({1: "x", "a": 2})) == {"1": "x", "a": 2}


@pytest.mark.parametrize("field", ["clusterArn", "taskArn"])
def test_an_arn_with_a_trailing_newline_is_rejected(field):
    """``$`` matches before a trailing newline: "cluster/production\\n" was accepted (warned as a cluster
    not in fleet.json) and a task ARN with one would be a second task (break-it finding 8)."""
    raw = load_event("task-fargate-stopped-essential-oom-exit137.derived")
    raw["detail"][field] += "\n"
    with pytest.raises(EventRejectedError):
        parse_event(raw)


@pytest.mark.parametrize("stamp", [1755770400, 1755770400.5, "1755770400", " 1755770400.5 "])
def test_a_time_given_as_seconds_since_the_epoch_is_rejected(stamp):
    """Stricter than pydantic was (CHANGELOG, issue 23): ECS sends ISO 8601 text; pydantic read a number,
    or a string of one, as seconds since the epoch, so a corrupted field became a plausible time."""
    raw = load_event("task-fargate-stopped-essential-oom-exit137.derived")
    raw["time"] = stamp
    with pytest.raises(EventRejectedError, match=r"time: (Expected `datetime`, got|Invalid RFC3339)"):
        parse_event(raw)
    raw["time"] = "2025-08-21T10:00:00Z"
    raw["detail"]["stoppedAt"] = stamp
    with pytest.raises(EventRejectedError,
                       match=r"detail.stoppedAt: (Expected `datetime \| null`, got|Invalid RFC3339)"):
        parse_event(raw)


@pytest.mark.parametrize(("stamp", "expected"), [
    ("2025-08-21T10:00:00", "2025-08-21T10:00:00+00:00"),  # naive: UTC
    ("2025-08-21T12:00:00+02:00", "2025-08-21T10:00:00+00:00"),
    ("2025-08-21T10:00:00.1234567Z", "2025-08-21T10:00:00.123457+00:00"),  # past microseconds: rounded
    ("2025-08-21 10:00:00z", "2025-08-21T10:00:00+00:00"),
])
def test_event_time_forms_and_utc(stamp, expected):
    raw = load_event("task-fargate-stopped-essential-oom-exit137.derived")
    raw["time"] = stamp
    assert parse_event(raw).time.isoformat() == expected


@pytest.mark.parametrize("stamp", ["2025-08-21", "2025-08-21 10:00Z", "2025-08-21_10:00:00Z", "2025-08-21T10:00:00,5Z"])
def test_a_time_outside_rfc3339_is_rejected(stamp):
    """Stricter than pydantic was (CHANGELOG, issue 36): ECS sends RFC 3339 text; msgspec reads that only."""
    raw = load_event("task-fargate-stopped-essential-oom-exit137.derived")
    raw["time"] = stamp
    with pytest.raises(EventRejectedError, match="time: Invalid RFC3339 encoded datetime"):
        parse_event(raw)


@pytest.mark.parametrize("detail_type", ["ECS Task State Change", "ECS Lifecycle Hook Invocation Change"])
def test_a_time_that_overflows_on_its_way_to_utc_is_rejected_never_raised(detail_type):
    """0001-01-01T00:00:00+01:00 is a valid ISO 8601 time whose UTC is before year 1: converting it raised
    OverflowError out of parse_event for a detail-type this tool does not read (the recorder's Lambda
    would have crashed on it); a known detail-type already rejected it."""
    raw = load_event("task-fargate-stopped-essential-oom-exit137.derived")
    raw.update({"detail-type": detail_type, "time": "0001-01-01T00:00:00+01:00"})
    with pytest.raises(EventRejectedError) as err:
        parse_event(raw)
    assert err.value.reason.startswith(detail_type) and err.value.raw is raw


def test_an_extra_named_like_a_dunder_is_not_read_as_an_attribute():
    """breakit: ``copy.deepcopy`` looks ``__deepcopy__`` up on the instance; an extra of that name (any
    JSON key) was returned by ``__getattr__`` and called, a TypeError. Unknown keys are now ignored."""
    import copy
    import pickle

    raw = load_event("task-fargate-stopped-essential-oom-exit137.derived")
    raw["__deepcopy__"] = 1
    raw["detail"]["__deepcopy__"] = 1
    raw["detail"]["containers"][0]["__deepcopy__"] = 1
    raw["detail"]["someField"] = 2
    e = parse_event(raw)
    assert copy.deepcopy(e) == e == pickle.loads(pickle.dumps(e))
    assert not hasattr(e.detail, "someField")
    assert "__deepcopy__" not in type(e.detail).__dict__


@pytest.mark.parametrize("version", ["9" * 4301, "4", 4.0, True])
def test_a_version_that_is_not_a_json_integer_is_rejected(version):
    """breakit: more digits than int() reads (sys.get_int_max_str_digits) raised out of the parser;
    issue 36: ``version`` is a JSON integer, as ECS's ``Task.version`` (a Long) is sent."""
    raw = load_event("task-fargate-stopped-essential-oom-exit137.derived")
    raw["detail"]["version"] = version
    with pytest.raises(EventRejectedError, match=r"detail.version: Expected `int \| null`, got `(str|float|bool)`"):
        parse_event(raw)


@pytest.mark.parametrize("field", ["clusterArn", "taskArn"])
def test_an_arn_whose_account_is_not_ascii_digits_is_rejected(field):
    """``\\d`` in a str pattern matches any Unicode digit: an account '١١١١٢٢٢٢٣٣٣٣' (Arabic-Indic) was a
    valid ARN, a second spelling of a cluster or task no AWS ARN ever has."""
    raw = load_event("task-fargate-stopped-essential-oom-exit137.derived")
    account = raw["detail"][field].split(":")[4]
    raw["detail"][field] = raw["detail"][field].replace(account, "".join(chr(0x0660 + int(c)) for c in account))
    with pytest.raises(EventRejectedError):
        parse_event(raw)


@pytest.mark.parametrize("did", ["ecs-svc/4406718823409915271", "ecs-svc/123", "ecs-svc/86127fceec8419bd1e7",
                                 "ecs-svc/" + "9" * 64])
def test_an_ecs_deployment_id_is_kept(did):
    raw = load_event("deployment-failed-circuit-breaker.docs")
    raw["detail"]["deploymentId"] = did
    assert parse_event(raw).detail.deployment_id == did


def test_an_event_without_a_deployment_id_keeps_none():
    raw = load_event("deployment-failed-circuit-breaker.docs")
    del raw["detail"]["deploymentId"]
    assert parse_event(raw).detail.deployment_id is None


@pytest.mark.parametrize("did, shown", [
    ("", "''"),
    ("ecs-svc/12\u202e34", r"'ecs-svc/12\u202e34'"),  # a right-to-left override: escaped, never shown
    ("ecs-svc/" + "9" * 65, "'ecs-svc/" + "9" * 65 + "'"),
    ("ecs-svc/" + "9" * 300, "(308 characters)"),  # two such ids with one prefix shared an alert id
    ("ecs-svc/123\n", r"'ecs-svc/123\n'"),
    ("ecs-svc/", "'ecs-svc/'"),
    ("d-1", "'d-1'"),
    ("ecs-svc/12 34", "'ecs-svc/12 34'"),
    ("ecs-svc/١٢٣", r"'ecs-svc/\u0661\u0662\u0663'"),  # Unicode digits are no ECS id's
])
def test_a_deployment_id_ecs_never_writes_is_rejected_with_its_reason(did, shown):
    raw = load_event("deployment-failed-circuit-breaker.docs")
    raw["detail"]["deploymentId"] = did
    with pytest.raises(EventRejectedError) as info:
        parse_event(raw)
    assert "detail.deploymentId: " in info.value.reason and shown in info.value.reason
    assert "is not an ECS deployment id" in info.value.reason and "\u202e" not in info.value.reason
    assert info.value.raw is raw  # kept whole for the log and the table's rejected events


def test_cluster_name_remembers_what_it_matched_and_still_refuses_the_rest():
    from ecs_guardrail.core.events import cluster_name

    arn = "arn:aws:ecs:eu-west-1:111122223333:cluster/prod"
    assert cluster_name(arn) == "prod" and cluster_name(arn) == "prod"
    for bad in ("arn:aws:ecs:eu-west-1:111122223333:cluster/prod\n", "cluster/prod", ""):
        with pytest.raises(ValueError, match="not an ECS cluster ARN"):
            cluster_name(bad)
