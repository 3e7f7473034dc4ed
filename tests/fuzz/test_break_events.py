"""Malformed ECS events that made the Lambda handlers raise: each must be rejected, never counted."""

from __future__ import annotations

import pytest
from breakkit import crash, impaired, lambdas

from ecs_guardrail.core.errors import EventRejectedError
from ecs_guardrail.core.events import parse_event


def _set(event, path, value):
    obj = event
    for key in path[:-1]:
        obj = obj[key]
    obj[path[-1]] = value
    return event


def _rejected_everywhere(tmp_path, events):
    """Each event: the recorder keeps it rejected, the watchdog counts nothing, parse_event rejects it."""
    with lambdas(tmp_path) as deliver:
        for e in events:
            rec, wd = deliver(e)
            assert rec["status"] == "rejected", rec
            assert wd is None or (wd["status"] == "rejected" and wd["decisions"] == [])
    for e in events:
        with pytest.raises(EventRejectedError):
            parse_event(e)


@pytest.mark.parametrize("path", [("detail", "stoppedReason"), ("detail", "containers", 0, "reason"),
                                  ("detail", "containers", 0, "name"), ("detail", "taskDefinitionArn")])
def test_lone_surrogate_in_text_is_rejected(tmp_path, path):
    # JSON "\udcff" decodes to a lone surrogate, which no UTF-8 encoder (botocore's included) accepts
    events = [_set(crash(n, minute=n), path, "CannotPullContainerError \udcff") for n in range(1, 7)]
    _rejected_everywhere(tmp_path, events)


@pytest.mark.parametrize("when", ["9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z", "0001-01-01T00:10:00Z"])
def test_event_time_at_the_ends_of_the_calendar_is_rejected(tmp_path, when):
    # the TTL (time + HISTORY_TTL_DAYS) and the window (time - 2 windows) overflowed datetime
    events = [_set(crash(n, minute=n), ("time",), when) for n in range(1, 7)]
    events.append(_set(impaired(), ("time",), when))
    _rejected_everywhere(tmp_path, events)


@pytest.mark.parametrize("path,value", [
    (("detail", "version"), 10**40),                # a DynamoDB number holds 38 digits: decimal.Rounded
    (("detail", "version"), 10**10),                # V#<version:010d> would stop sorting by version
    (("detail", "containers", 0, "exitCode"), 10**40),
    (("detail", "containers", 0, "exitCode"), -(2**63)),
])
def test_numbers_beyond_what_ecs_sends_are_rejected(tmp_path, path, value):
    events = [_set(crash(n, minute=n), path, value) for n in range(1, 7)]
    _rejected_everywhere(tmp_path, events)


def test_largest_accepted_version_still_sorts(tmp_path):
    with lambdas(tmp_path) as deliver:
        rec, _ = deliver(_set(crash(1), ("detail", "version"), 9_999_999_999))
        assert rec["status"] == "recorded"


@pytest.mark.parametrize("group", ["service:" + "x" * 1016, "family:" + "x" * 1017, "service:" + "x" * 256,
                                   "service:api#W#", "service:a/b", "service:caf\u00e9", "service:a b"])
def test_group_naming_an_impossible_service_or_family_is_rejected(tmp_path, group):
    # ECS names are [A-Za-z0-9_-]{1,255}; a 1016-character one overflowed DynamoDB's 1024-byte key limit
    events = [_set(crash(n, minute=n), ("detail", "group"), group) for n in range(1, 7)]
    _rejected_everywhere(tmp_path, events)


@pytest.mark.parametrize("group", ["service:" + "x" * 255, "family:my_job-2", "ecs-svc/123", "", "service:"])
def test_other_groups_still_parse(group):
    raw = _set(crash(1), ("detail", "group"), group)
    assert parse_event(raw).detail.group == group


_HUGE = "x" * 350_000


@pytest.mark.parametrize("path,value", [
    (("detail", "containers", 0, "name"), _HUGE),
    (("detail", "taskDefinitionArn"), _HUGE),
    (("detail", "capacityProviderName"), _HUGE),
    (("detail", "launchType"), _HUGE),
    (("detail", "containers"), [{"name": f"c{i}-" + "n" * 1000, "exitCode": 1} for i in range(300)]),
])
def test_task_event_whose_item_would_exceed_400kb_is_rejected(tmp_path, path, value):
    # raw text is cut to 300 kB; these fields were stored beside it whole: "Item size has exceeded"
    events = [_set(crash(n, minute=n), path, value) for n in range(1, 7)]
    _rejected_everywhere(tmp_path, events)


def test_service_action_whose_item_would_exceed_400kb_is_rejected(tmp_path):
    _rejected_everywhere(tmp_path, [_set(impaired(), ("detail", "eventType"), _HUGE)])


@pytest.mark.parametrize("code", ["1", "137", 1.0, 137.0, " 1"])
def test_exit_code_that_is_not_a_json_integer_is_rejected_not_counted(tmp_path, code):
    """ECS sends ``exitCode`` as a JSON integer; ``"1"`` and ``1.0`` were coerced (pydantic's lax mode) and
    counted as crashes, while ``true`` was already rejected."""
    events = [_set(crash(n, minute=n), ("detail", "containers"), [{"name": "app", "exitCode": code}])
              for n in range(1, 7)]
    _rejected_everywhere(tmp_path, events)
