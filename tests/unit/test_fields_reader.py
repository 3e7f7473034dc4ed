"""The generated readers (``core/fields.py``, ``_reader_source``) read exactly as the generic loop they
replace on the hot path (``Checked.read_generic``, the reference): the same instances, the same extras,
the same problems in the same order, on every real sample and on malformed ones."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from ecs_guardrail.core import events as ev
from ecs_guardrail.core.fields import GENERIC_READS, Checked, Problem, Spec
from ecs_guardrail.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_FILES = sorted((ROOT / "events" / "ecs").glob("*.json")) + \
    sorted((ROOT.parent / "shared" / "samples" / "ecs-events").glob("*.json"))
SAMPLES = [json.loads(p.read_text()) for p in SAMPLE_FILES]
ENVELOPES = [ev.TaskStateChange, ev.ServiceAction, ev.DeploymentStateChange, ev.OtherEcsEvent]
DETAILS = [ev.TaskDetail, ev.ServiceActionDetail, ev.DeploymentDetail]
CLASSES: list[type[Checked]] = [*ENVELOPES, *DETAILS, ev.Container, Settings]


@pytest.fixture(autouse=True, scope="module")
def _generated() -> None:
    for cls in CLASSES:
        cls.build_reader()


def _shape(out: object) -> object:
    if isinstance(out, Checked):
        return (type(out), {k: _shape(v) for k, v in out.fields().items()}, out.model_extra)
    if isinstance(out, list):
        return [_shape(v) for v in out]
    return out


def _agree(cls: type[Checked], data: Any) -> object:
    """Read ``data`` both ways (each on its own copy) and check they agree; returns the reading."""
    own = copy.deepcopy if isinstance(data, dict | list) else (lambda x: x)
    theirs: list[Problem] = []
    mine: list[Problem] = []
    try:
        reference = cls.read_generic(own(data), (), theirs)
    except (TypeError, OverflowError) as exc:  # a check's own error (parse_event reports it): the same one
        with pytest.raises(type(exc)) as raised:
            cls.read(own(data), (), mine)
        assert str(raised.value) == str(exc)
        return None
    fast = cls.read(own(data), (), mine)
    assert [(loc, msg) for loc, msg, _ in mine] == [(loc, msg) for loc, msg, _ in theirs]
    assert [repr(x) for _, _, x in mine] == [repr(x) for _, _, x in theirs]
    assert _shape(fast) == _shape(reference)
    return fast


def _everywhere(event: Any) -> None:
    """Every class on the event, its detail and each of its containers."""
    for cls in ENVELOPES:
        _agree(cls, event)
    detail = event.get("detail") if isinstance(event, dict) else None
    for cls in DETAILS:
        _agree(cls, detail)
    containers = detail.get("containers") if isinstance(detail, dict) else None
    for c in containers if isinstance(containers, list) else []:
        _agree(ev.Container, c)


@pytest.mark.parametrize("index", range(len(SAMPLES)), ids=[p.name for p in SAMPLE_FILES])
def test_the_readers_agree_on_every_real_sample(index: int) -> None:
    _everywhere(SAMPLES[index])


def _task() -> dict[str, Any]:
    return copy.deepcopy(next(s for s in SAMPLES if s.get("detail-type") == ev.TASK_STATE_CHANGE
                              and s["detail"].get("containers")))


def _with(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    event = _task()
    parent = event
    for key in path[:-1]:
        parent = parent[key]
    if value is _DROP:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return event


_DROP = object()
C0 = ("detail", "containers", 0)
MALFORMED = [
    (("time",), _DROP), (("time",), "2025-08-21T10:00:00"), (("time",), "2025-02-30T10:00:00Z"),
    (("time",), 1700000000), (("time",), "1999-12-31T23:59:59Z"), (("time",), "2025-08-21T10:00:00.1234567+01:00"),
    (("id",), ""), (("id",), "x" * 257), (("source",), "aws.ec2"), (("resources",), "arn"),
    (("resources",), [1, "a", None]), (("resources",), ["a", "b"]), (("resources",), []), (("detail-type",), 3),
    (("detail",), None), (("detail",), []), (("detail", "clusterArn"), _DROP), (("detail", "clusterArn"), "prod"),
    (("detail", "clusterArn"), "arn:aws:ecs:eu-west-1:111122223333:cluster/prod\n"),
    (("detail", "taskArn"), 7), (("detail", "lastStatus"), ""), (("detail", "lastStatus"), "S" * 65),
    (("detail", "lastStatus"), None), (("detail", "version"), True), (("detail", "version"), "4"),
    (("detail", "version"), 4.0), (("detail", "version"), 4.5), (("detail", "version"), -1),
    (("detail", "version"), 10**10), (("detail", "group"), "service:a b"), (("detail", "group"), None),
    (("detail", "stoppedReason"), "r" * 5000), (("detail", "stoppedReason"), 3), (("detail", "stopCode"), "x" * 129),
    (("detail", "createdAt"), "yesterday"), (("detail", "createdAt"), None), (("detail", "cluster_arn"), "x"),
    (("detail", "containers"), None), (("detail", "containers"), "x"), (("detail", "containers"), [{}] * 101),
    (("detail", "containers"), [1, {"exitCode": "1"}, {"name": "n" * 256}]),
    ((*C0, "exitCode"), True), ((*C0, "exitCode"), "1"), ((*C0, "exitCode"), 1.0), ((*C0, "exitCode"), 2**32),
    ((*C0, "exitCode"), None), ((*C0, "name"), 5), ((*C0, "reason"), "r" * 5000), ((*C0, "exit_code"), 3),
    ((*C0, "last_status"), "RUNNING"), ((*C0, "lastStatus"), ["x"]),
]


@pytest.mark.parametrize(("path", "value"), MALFORMED, ids=[f"{'.'.join(map(str, p))}={str(v)[:20]!r}"
                                                            for p, v in MALFORMED])
def test_the_readers_agree_on_malformed_events(path: tuple[Any, ...], value: Any) -> None:
    _everywhere(_with(path, value))


@pytest.mark.parametrize("data", [None, 3, "x", [], MappingProxyType({"name": "n"}), {1: 2}],
                         ids=["none", "int", "str", "list", "mapping", "int-key"])
def test_the_readers_agree_on_what_is_not_a_dict(data: Any) -> None:
    for cls in CLASSES:
        _agree(cls, data)


def test_an_instance_reads_as_itself() -> None:
    container = ev.Container.validate({"name": "app"})
    assert ev.Container.read(container, (), []) is container


@pytest.mark.parametrize("env", [{}, {"CRASH_THRESHOLD": "7", "DRY_RUN": "yes", "MAX_ACTION_FRACTION": "0.5"},
                                 {"CRASH_THRESHOLD": "0", "DRY_RUN": "maybe", "SNS_FORMAT": "x", "HISTORY_TABLE": "a"},
                                 {"PROBE_DELAY_MINUTES": "20", "PROBE_MAX_DELAY_MINUTES": "10"},
                                 {"CLIENT_ERROR_RATIO": "nan", "ALERT_TOPIC_ARN": "", "RUNBOOK_URL": "http://x"}])
def test_the_readers_agree_on_settings(env: dict[str, str]) -> None:
    _agree(Settings, env)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(__import__("tests.fuzz.test_parser_differential", fromlist=["mutated"]).mutated())
def test_the_readers_agree_on_mutated_samples(raw: Any) -> None:
    _everywhere(raw)


def test_a_class_is_read_generically_then_by_its_generated_reader() -> None:
    class Probe(Checked):
        __slots__ = ("a", "b")
        FIELDS = (Spec("a", "str", alias="A"), Spec("b", "int", default=0, ge=0))

    assert "_READS" not in Probe.__dict__
    for n in range(GENERIC_READS):
        assert Probe.validate({"A": "x", "b": n}).b == n
    assert not isinstance(Probe.__dict__["read"], staticmethod)
    assert Probe.validate({"a": "y"}).fields() == {"a": "y", "b": 0}
    assert isinstance(Probe.__dict__["read"], staticmethod)
    assert "obj.a = v" in Probe.reader_source()

    class Sub(Probe):  # its own reader, of its own table (not the base's)
        __slots__ = ("c",)
        FIELDS = (*Probe.FIELDS, Spec("c", "bool", default=False))

    Sub.build_reader()
    assert Sub.validate({"A": "x", "c": "yes"}).fields() == {"a": "x", "b": 0, "c": True}
    assert type(Probe.validate({"A": "x"})) is Probe


def test_the_generated_reader_rejects_a_lone_surrogate_in_a_setting_as_the_generic_path_does():
    """After GENERIC_READS reads of Settings the generated reader took a bounded text inline and skipped
    the lone-surrogate check the generic path makes (os.environ decodes bytes that are not UTF-8 into
    them): both paths must give the same SettingsError."""
    from ecs_guardrail.settings import Settings

    for name, value in (("SLACK_WEBHOOK_SECRET_ARN", "x\udcff"), ("RUNBOOK_URL", "https://x\udcff")):
        generic: list = []
        Settings.read_generic({name: value}, (), generic, deep=False)
        built: list = []
        Settings.build_reader()({name: value}, (), built)
        assert generic and [p[:2] for p in built] == [p[:2] for p in generic], (built, generic)
