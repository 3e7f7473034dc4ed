"""Typed models of the ECS events EventBridge delivers, and the one entry point that parses them.

Sources: "Amazon ECS events" in the ECS Developer Guide (task state change, service action and
deployment state change events) and the ECS API reference (``Task``, ``Container``, ``StopCode``).
Models are tolerant of unknown fields (AWS adds them; ignored: the recorder keeps the raw event) and of
missing optional ones, strict where the watchdog cannot work without a field (event ``time``,
``clusterArn``, ``taskArn``, ``lastStatus``).

Each model is a msgspec ``Struct`` (:mod:`ecs_guardrail.validation.fields`; issue 36), converted in strict
mode: a JSON document's types as they are (a number is no text, a text no number, ``true`` no integer),
``Meta`` bounds, and per-field checks. The pydantic models they replaced (issue 23: pydantic's import
and building these nine models were about 100 ms of each handler's cold start) are kept verbatim in
``tests/oracle/pydantic_events.py``, and a differential test checks this parser accepts what they
accepted, with the same values, and rejects with the same first error's location. The differences, all
stricter and on inputs ECS never sends (CHANGELOG, issues 23 and 36): a time is RFC 3339 text as
msgspec reads it (``2025-08-21T10:00:00.123Z``; no seconds since the epoch, no date alone; digits past
microseconds are rounded); ``version`` is a JSON integer (not ``"4"`` or ``4.0``); an attribute's Python
name (``last_status``) is not read for its JSON key (``lastStatus``); unknown keys are not kept.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

import msgspec
from msgspec import Meta, field

from ecs_guardrail.core.errors import EventRejectedError
from ecs_guardrail.core.links import parse_arn, task_definition_parts
from ecs_guardrail.validation.fields import Invalid, Model, clip, remembering

__all__ = [
    "canonical_json",
    "Container",
    "TaskDetail",
    "TaskStateChange",
    "ServiceActionDetail",
    "ServiceAction",
    "DeploymentDetail",
    "DeploymentStateChange",
    "OtherEcsEvent",
    "EcsEvent",
    "parse_event",
    "parse_event_text",
    "parsed_once",
    "is_deployment_id",
    "TASK_STATE_CHANGE",
    "SERVICE_ACTION",
    "DEPLOYMENT_STATE_CHANGE",
    "cluster_name",
    "service_ref",
]

TASK_STATE_CHANGE = "ECS Task State Change"
SERVICE_ACTION = "ECS Service Action"
DEPLOYMENT_STATE_CHANGE = "ECS Deployment State Change"

# arn:PARTITION:ecs:REGION:ACCOUNT:cluster/NAME ; partitions aws, aws-cn, aws-us-gov, ...
# \Z, not $: $ also matches before a trailing newline ("cluster/production\n" was accepted)
_CLUSTER_ARN = re.compile(r"^arn:aws[a-z-]*:ecs:[a-z0-9-]+:[0-9]{12}:cluster/(?P<name>[A-Za-z0-9_-]{1,255})\Z")
# service ARNs: new form service/CLUSTER/NAME, old form service/NAME (no cluster in it)
_SERVICE_ARN = re.compile(
    r"^arn:aws[a-z-]*:ecs:[a-z0-9-]+:[0-9]{12}:service/(?:(?P<cluster>[A-Za-z0-9_-]{1,255})/)?"
    r"(?P<name>[A-Za-z0-9_-]{1,255})\Z"
)
_TASK_ARN = re.compile(r"^arn:aws[a-z-]*:ecs:[a-z0-9-]+:[0-9]{12}:task/(?:[A-Za-z0-9_-]{1,255}/)?[A-Za-z0-9_-]{1,64}\Z")

_EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)  # event times outside are typos or corruption
_LATEST = datetime(2200, 1, 1, tzinfo=UTC)
_NAME = re.compile(r"[A-Za-z0-9_-]{1,255}")  # service and task definition family names
_MAX_TEXT = 4096  # characters kept of one reason string; Fargate truncates near 255 anyway


def cluster_name(cluster_arn: str) -> str:
    """``arn:aws:ecs:eu-west-1:111122223333:cluster/production`` -> ``production``.

    Raises:
        ValueError: not a cluster ARN.
    """
    name = _CLUSTER_NAMES.get(cluster_arn) if type(cluster_arn) is str else None
    if name is not None:
        return name
    m = _CLUSTER_ARN.match(cluster_arn)
    if not m:
        raise ValueError(f"not an ECS cluster ARN: {cluster_arn[:200]!r}")
    if len(_CLUSTER_NAMES) >= 1024:
        _CLUSTER_NAMES.clear()
    name = _CLUSTER_NAMES[cluster_arn] = m.group("name")
    return name


#: cluster ARN -> name, of the ARNs :func:`cluster_name` matched (a fleet has a few clusters; each event
#: asks about three times: its check, the recorder's item, the watchdog; issue 33 item 2)
_CLUSTER_NAMES: dict[str, str] = {}


def service_ref(service_arn: str) -> tuple[str | None, str]:
    """A service ARN -> ``(cluster or None for the old ARN form, service name)``.

    Raises:
        ValueError: not a service ARN.
    """
    m = _SERVICE_ARN.match(service_arn)
    if not m:
        raise ValueError(f"not an ECS service ARN: {service_arn[:200]!r}")
    return m.group("cluster"), m.group("name")


#: a reason or image text cut to :data:`_MAX_TEXT` characters (inline in the models' ``__post_init__``)
_clip = clip(_MAX_TEXT)


def _cluster_arn(value: str) -> str:
    cluster_name(value)
    return value


def _task_arn(value: str) -> str:
    if not _TASK_ARN.match(value):
        raise ValueError(f"not an ECS task ARN: {value[:200]!r}")
    return value


def _group(value: str | None) -> str | None:
    # the service or family name becomes part of DynamoDB keys: only what ECS allows gets there
    if value is None or value in _GROUPS:  # a fleet has a few thousand groups: each checked once
        return value
    for prefix in ("service:", "family:"):
        if value and value.startswith(prefix) and len(value) > len(prefix) \
                and not _NAME.fullmatch(value[len(prefix):]):
            raise ValueError(f"{prefix[:-1]} name {value[len(prefix):][:80]!r} is not an ECS name "
                             "([A-Za-z0-9_-], at most 255)")
    if type(value) is str:
        if len(_GROUPS) >= 4096:
            _GROUPS.clear()
        _GROUPS.add(value)
    return value


#: the task groups :func:`_group` accepted (at most 4,096 kept)
_GROUPS: set[str] = set()
remembering(_group, _GROUPS)  # TaskDetail's __post_init__ calls it only for a group not in the set
remembering(_cluster_arn, _CLUSTER_NAMES)  # and _cluster_arn only for an ARN cluster_name has not matched


# ECS writes a service deployment's id as "ecs-svc/" and 19 digits (the ECS events reference's samples,
# ECS-EVENTS.md; DescribeServices' deployments[].id). The id reaches alert text, an alert's id and a
# DynamoDB sort key, so only an id of that form, letters allowed, 64 characters after the slash at most,
# gets past the event model (issue 34 leftovers: a right-to-left override in alert text, two long ids
# sharing a cut alert id, an empty one).
_DEPLOYMENT_ID = re.compile(r"ecs-svc/[0-9A-Za-z]{1,64}\Z")


def is_deployment_id(value: object) -> bool:
    """Whether ``value`` is a deployment id as the event model accepts it (``ecs-svc/`` and at most 64 ASCII
    letters or digits): fleet.json's ``deployments`` rows are checked the same way."""
    return isinstance(value, str) and _DEPLOYMENT_ID.match(value) is not None


def _deployment_id(value: str | None) -> str | None:
    """``detail.deploymentId`` as ECS writes it (``ecs-svc/`` and digits; ASCII letters pass too), or
    ``None`` when the event has none.

    Raises:
        ValueError: any other text (empty, longer than 72 characters, another prefix, a character other
            than an ASCII letter or digit after it); the reason shows the value escaped and cut to 80.
    """
    if value is None or _DEPLOYMENT_ID.match(value):
        return value
    shown = ascii(value[:80]) + (f" ({len(value)} characters)" if len(value) > 80 else "")
    raise ValueError(f"{shown} is not an ECS deployment id (ecs-svc/ and at most 64 letters or digits)")


def _utc(value: datetime) -> datetime:
    if value.tzinfo is UTC and _EARLIEST <= value < _LATEST:  # an event's time as ECS writes it ("...Z")
        return value
    try:
        value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00:00+01:00 is before year 1 in UTC
        raise ValueError(f"time {value.isoformat()} is outside {_EARLIEST:%Y} to {_LATEST:%Y}") from None
    # the store and the policy add days to it (TTL, windows): the calendar's ends would overflow
    if not _EARLIEST <= value < _LATEST:
        raise ValueError(f"time {value:%Y-%m-%d} is outside {_EARLIEST:%Y} to {_LATEST:%Y}")
    return value


# texts of at most (or 1 to) N characters (msgspec counts code points, as pydantic did)
_Text64 = Annotated[str, Meta(max_length=64)]
_Text128 = Annotated[str, Meta(max_length=128)]
_Text255 = Annotated[str, Meta(max_length=255)]
_Text1024 = Annotated[str, Meta(max_length=1024)]
_Text2048 = Annotated[str, Meta(max_length=2048)]
_Some64 = Annotated[str, Meta(min_length=1, max_length=64)]
_Some128 = Annotated[str, Meta(min_length=1, max_length=128)]
_Some256 = Annotated[str, Meta(min_length=1, max_length=256)]


def _opt(name: str | None = None) -> Any:
    """An optional field (``None`` when absent or null), read from JSON key ``name``."""
    return field(default=None, name=name)


class Container(Model, kw_only=True):
    """One entry of ``detail.containers`` (the ECS API's ``Container``). ``exit_code`` ``None`` means
    unknown, never 0; ``reason`` and ``image`` are cut to 4,096 characters."""

    CHECKS: ClassVar[dict[str, Any]] = {"reason": _clip, "image": _clip}
    name: _Text255 | None = None  # ECS container names: at most 255 characters
    last_status: _Text64 | None = _opt("lastStatus")
    # an Integer in the ECS API (Windows codes are unsigned 32-bit); anything wider cannot be stored;
    # a JSON integer only (msgspec's strict mode): "1", 1.0 or true would be coerced, then counted as a crash
    exit_code: Annotated[int, Meta(ge=-(2**31), le=2**32 - 1)] | None = _opt("exitCode")
    reason: str | None = None
    image: str | None = None
    image_digest: str | None = _opt("imageDigest")


class TaskDetail(Model, kw_only=True):
    """``detail`` of an ``ECS Task State Change`` event (the ``Task`` shape of the ECS API).

    Required: ``clusterArn`` (a cluster ARN), ``taskArn`` (a task ARN, old ``task/ID`` or new
    ``task/CLUSTER/ID`` form), ``lastStatus`` (1-64 characters). ``version`` is the task's change
    counter (a JSON integer 0..9,999,999,999: stored as ``V#<version:010d>`` and sorted as text); times are
    ``datetime`` as delivered (RFC 3339; aware when the text has ``Z`` or an offset).
    """

    CHECKS: ClassVar[dict[str, Any]] = {"cluster_arn": _cluster_arn, "task_arn": _task_arn, "group": _group,
                                        "stopped_reason": _clip}
    cluster_arn: str = field(name="clusterArn")
    task_arn: str = field(name="taskArn")
    last_status: _Some64 = field(name="lastStatus")
    desired_status: _Text64 | None = _opt("desiredStatus")
    # stored as V#<version:010d>, sorted as text
    version: Annotated[int, Meta(ge=0, le=9_999_999_999)] | None = None
    group: _Text1024 | None = None
    stop_code: _Text128 | None = _opt("stopCode")
    stopped_reason: str | None = _opt("stoppedReason")
    launch_type: _Text64 | None = _opt("launchType")
    capacity_provider_name: _Text255 | None = _opt("capacityProviderName")
    availability_zone: _Text64 | None = _opt("availabilityZone")
    container_instance_arn: str | None = _opt("containerInstanceArn")
    task_definition_arn: _Text2048 | None = _opt("taskDefinitionArn")
    started_by: str | None = _opt("startedBy")
    # what is stored beside the raw text (cut to 300 kB) must keep the item under 400 kB
    containers: Annotated[list[Container], Meta(max_length=100)] = field(default_factory=list)
    created_at: datetime | None = _opt("createdAt")
    started_at: datetime | None = _opt("startedAt")
    stopping_at: datetime | None = _opt("stoppingAt")
    stopped_at: datetime | None = _opt("stoppedAt")
    execution_stopped_at: datetime | None = _opt("executionStoppedAt")

    @property
    def cluster(self) -> str:
        return cluster_name(self.cluster_arn)

    @property
    def service(self) -> str | None:
        """The service name when ``group`` is ``service:NAME``, else ``None``."""
        if self.group and self.group.startswith("service:") and len(self.group) > len("service:"):
            return self.group[len("service:"):]
        return None

    @property
    def family(self) -> str | None:
        """The job family of a standalone task: ``NAME`` of ``group`` ``family:NAME`` (RunTask's default
        group), else, for a task outside any service (a custom RunTask ``group``, or none), the family of
        its ``taskDefinitionArn`` (``.../task-definition/FAMILY:REVISION``), so such a job's failures are
        alerted per task definition like any other job's. ``None`` for a service's task, or when neither
        gives an ECS name (ECS API reference, RunTask ``group``)."""
        if self.group and self.group.startswith("family:") and len(self.group) > len("family:"):
            return self.group[len("family:"):]
        if self.group and self.group.startswith("service:"):
            return None
        family = task_definition_parts(self.task_definition_arn or "")[0]
        return family if family and "task-definition/" in (self.task_definition_arn or "") \
            and _NAME.fullmatch(family) else None


class _EcsEnvelope(Model, kw_only=True):
    """The EventBridge envelope, restricted to ``source`` ``aws.ecs``.

    The same fields as Powertools' ``EventBridgeModel`` (EventBridge User Guide, "Amazon EventBridge
    events"; ``tests/unit/test_events_envelope.py`` checks the two tables stay field-for-field the
    same). ``time`` is RFC 3339 text, aware and in UTC (a naive time is read as UTC), between 2000 and 2200.
    """

    CHECKS: ClassVar[dict[str, Any]] = {"time": _utc}
    version: str
    id: _Some256
    source: Literal["aws.ecs"]
    account: str
    time: datetime
    region: str
    resources: list[str]
    replay_name: str | None = _opt("replay-name")


class TaskStateChange(_EcsEnvelope, kw_only=True):
    """An ``ECS Task State Change`` event: :attr:`detail` is the task."""

    detail_type: Literal["ECS Task State Change"] = field(name="detail-type")
    detail: TaskDetail


class _ServiceDetail(Model, kw_only=True):
    """What service actions and deployment events share: key on ``eventName``, not ``eventType``."""

    CHECKS: ClassVar[dict[str, Any]] = {"reason": _clip}
    event_name: _Some128 = field(name="eventName")
    event_type: _Text64 | None = _opt("eventType")
    reason: str | None = None


class ServiceActionDetail(_ServiceDetail, kw_only=True):
    """``detail`` of an ``ECS Service Action`` event."""

    cluster_arn: str | None = _opt("clusterArn")


class _ServiceScoped(_EcsEnvelope, kw_only=True):
    """An event about one service: ``resources[0]`` is its ARN (new ``service/CLUSTER/NAME`` form, or
    the old ``service/NAME`` form with ``detail.clusterArn``)."""

    if TYPE_CHECKING:  # each subclass declares both fields (its own detail-type literal and detail model)
        detail_type: str
        detail: _ServiceDetail

    def _cluster_arn(self) -> str | None:
        return self.detail.cluster_arn if isinstance(self.detail, ServiceActionDetail) else None

    def check(self) -> None:
        if not self.resources:
            raise ValueError(f"{self.detail_type} names its service in resources[0]; resources is empty")
        cluster, _ = service_ref(self.resources[0])
        cluster_arn = self._cluster_arn()
        if cluster_arn:
            cluster_name(cluster_arn)
        elif cluster is None:
            raise ValueError("old-form service ARN and no detail.clusterArn: the cluster is unknown")

    @property
    def cluster(self) -> str:
        cluster_arn = self._cluster_arn()
        return cluster_name(cluster_arn) if cluster_arn else str(service_ref(self.resources[0])[0])

    @property
    def service(self) -> str:
        return service_ref(self.resources[0])[1]


class ServiceAction(_ServiceScoped, kw_only=True):
    """An ``ECS Service Action`` event (steady state, task start impaired, placement failures ...)."""

    detail_type: Literal["ECS Service Action"] = field(name="detail-type")
    detail: ServiceActionDetail


class DeploymentDetail(_ServiceDetail, kw_only=True):
    """``detail`` of an ``ECS Deployment State Change`` event (no clusterArn: read resources[0]).

    ``deployment_id``: ``detail.deploymentId``, ``ecs-svc/`` and digits as ECS writes it (letters pass
    too), or ``None`` when absent; any other value rejects the event (:func:`_deployment_id`)."""

    CHECKS: ClassVar[dict[str, Any]] = {**_ServiceDetail.CHECKS, "deployment_id": _deployment_id}
    deployment_id: str | None = _opt("deploymentId")


class DeploymentStateChange(_ServiceScoped, kw_only=True):
    """No ``clusterArn`` in ``detail``: the cluster comes from the service ARN in ``resources[0]``."""

    detail_type: Literal["ECS Deployment State Change"] = field(name="detail-type")
    detail: DeploymentDetail


class OtherEcsEvent(_EcsEnvelope, kw_only=True):
    """An ``aws.ecs`` event this tool does not read: a detail-type ECS added (ECS says it will add event
    types: lifecycle-hook state changes and others), or a deployment event about something other than a
    service (a daemon's deployment, ``resources[0]`` not a service ARN). Recorded and kept with
    :attr:`note`, never rejected as malformed and never acted on.

    ``detail_type``: the envelope's ``detail-type`` (1-256 characters); ``detail``: the detail object as
    delivered (a copy of it; ``{}`` when it was not an object); ``note``: why it is kept unread.
    """

    detail_type: _Some256 = field(name="detail-type")
    detail: dict[str, Any] = field(default_factory=dict)
    note: str = ""

    @property
    def cluster(self) -> str | None:
        """The cluster named by ``detail.clusterArn`` or a ``.../CLUSTER/NAME`` ARN in ``resources``, if any."""
        arn = self.detail.get("clusterArn")
        if isinstance(arn, str) and _CLUSTER_ARN.match(arn):
            return cluster_name(arn)
        for r in self.resources:
            m = _RESOURCE_ARN.match(r) if isinstance(r, str) else None
            if m:
                return m.group("cluster")
        return None

    @property
    def subject(self) -> str:
        """The resource the event is about: the name after the cluster in ``resources[0]``, else ``-``."""
        for r in self.resources:
            m = _RESOURCE_ARN.match(r) if isinstance(r, str) else None
            if m:
                return m.group("name")
        return "-"


# arn:PARTITION:ecs:REGION:ACCOUNT:KIND/CLUSTER/NAME (service, daemon, task-set ...)
_RESOURCE_ARN = re.compile(r"^arn:aws[a-z-]*:ecs:[a-z0-9-]+:[0-9]{12}:[a-z-]+/(?P<cluster>[A-Za-z0-9_-]{1,255})/"
                           r"(?P<name>[A-Za-z0-9_-]{1,255})(?:/.*)?\Z")

EcsEvent = TaskStateChange | ServiceAction | DeploymentStateChange | OtherEcsEvent

_MODELS: dict[str, type[_EcsEnvelope]] = {
    TASK_STATE_CHANGE: TaskStateChange,
    SERVICE_ACTION: ServiceAction,
    DEPLOYMENT_STATE_CHANGE: DeploymentStateChange,
}


def _other(raw: dict[str, Any], note: str) -> OtherEcsEvent:
    detail = raw.get("detail")
    try:
        return OtherEcsEvent.validate({**raw, "detail": detail if isinstance(detail, dict) else {},
                                       "note": note})
    except Invalid as exc:
        raise EventRejectedError(f"{str(raw.get('detail-type'))[:80]}: {exc}", raw) from None
    except (ValueError, TypeError, OverflowError) as exc:  # odd values inside checks, as parse_event's own
        # (a time of 0001-01-01T00:00:00+01:00 overflows on its way to UTC)
        raise EventRejectedError(f"{str(raw.get('detail-type'))[:80]}: {exc}", raw) from None


#: ``(object, its model, its canonical JSON)`` of the last event parsed while :func:`parsed_once` is active,
#: else ``None``
_last: list[tuple[Any, Any, str]] | None = None
_text: list[tuple[Any, str]] = []  # inside parsed_once: the last parsed object and its canonical JSON


@contextlib.contextmanager
def parsed_once() -> Iterator[None]:
    """Within the block, :func:`parse_event` of the *same object* as the call before returns that call's
    model instead of validating it again: ``replay`` hands each event to the recorder and then to the
    watchdog, as EventBridge delivers it to both functions, and validating it once is enough. The object
    must not change in between (the replay decodes every line into a fresh one); a rejected event is not
    remembered (it raises every time). Blocks nest; outside any block every call validates."""
    global _last
    before, _last = _last, []
    try:
        yield
    finally:
        _last = before
        _text.clear()


#: the history table's text of an event (:func:`canonical_json`): msgspec's encoder, keys sorted
_CANONICAL = msgspec.json.Encoder(order="sorted", enc_hook=str)


def _encode(raw: Any) -> str:
    """:func:`canonical_json`'s text, encoded anew.

    Raises:
        UnicodeEncodeError: a lone surrogate (no UTF-8 encoder takes it, DynamoDB's included).
        ValueError, RecursionError: an integer of more than 4,300 digits; nesting past the recursion limit.
    """
    try:
        return _CANONICAL.encode(raw).decode("utf-8")
    except TypeError:  # a key that is not text cannot be sorted among text (no JSON document has one)
        text = json.dumps(raw, ensure_ascii=False, default=str)
        text.encode("utf-8")  # a lone surrogate raises here too
        return text


def canonical_json(raw: Any) -> str:
    """``raw`` as the history table keeps it: compact JSON (no spaces) with its keys sorted (by code point,
    as Python sorts text), UTF-8 text as it is (not ``\\u`` escapes), a value JSON has no word for as
    ``str`` of it (``NaN`` and infinities as ``null``, as msgspec writes them).

    The text of ``json.dumps(raw, sort_keys=True)`` until round 8 (the same document, parsed): msgspec
    writes it in about 1.6 instead of 8.4 microseconds a fleet-day event, and DynamoDB stores about 5 %
    fewer bytes a recorded event (issue 33 item 2). Nothing in this project reads it back but people.

    Inside :func:`parsed_once`, the text :func:`parse_event` wrote of the same object is reused (a
    replay encodes each event once, not twice).

    Raises:
        ValueError, RecursionError, UnicodeEncodeError: as :func:`_encode` (``parse_event`` rejected such events).
    """
    if _text and _text[0][0] is raw:
        return _text[0][1]
    return _encode(raw)


#: ECS detail-types this tool knows and does not read (an instance's state decides nothing here: its
#: tasks' own events do), with why; AWS documents them ("Amazon ECS container instance state change
#: events", in the events reference since 2016)
KNOWN_UNREAD = {
    "ECS Container Instance State Change": "an EC2 container instance's state (its tasks' own events are read)",
}


def parse_event(raw: Any) -> EcsEvent:
    """Parse one EventBridge event (a decoded JSON object) into its typed model.

    Inside :func:`parsed_once`, the same object parsed twice in a row is validated once.

    Returns:
        :class:`TaskStateChange`, :class:`ServiceAction`, :class:`DeploymentStateChange`, or
        :class:`OtherEcsEvent` for a detail-type this tool does not read (ECS adds them) and a deployment
        event about something other than a service (a daemon).

    Raises:
        EventRejectedError: not an object, ``source`` is not ``aws.ecs``, no ``detail-type``, or a
            required field missing or malformed. ``reason`` names the field; ``raw`` is the input.
    """
    if _last and _last[0][0] is raw:
        return _last[0][1]  # type: ignore[no-any-return]
    return parse_event_text(raw)[0]


def parse_event_text(raw: Any) -> tuple[EcsEvent, str]:
    """:func:`parse_event` of ``raw`` and its :func:`canonical_json`, encoded once: the recorder stores the
    text beside the fields (the text is encoded anyway, to refuse what no UTF-8 encoder takes).

    Raises:
        EventRejectedError: as :func:`parse_event`.
    """
    if _last and _last[0][0] is raw:
        return _last[0][1], _last[0][2]
    if not isinstance(raw, dict):
        raise EventRejectedError(f"event is a {type(raw).__name__}, not a JSON object", raw)
    try:
        # a lone surrogate (JSON "\\udcff") passes str validation but no UTF-8 encoder, DynamoDB's included:
        # the canonical text's encoder refuses it
        text = _encode(raw)
        if _last is not None:
            _text[:] = [(raw, text)]
    except UnicodeEncodeError:
        raise EventRejectedError("event holds text that is not valid Unicode (a lone surrogate)", raw) from None
    except (RecursionError, ValueError):
        raise EventRejectedError("event is nested too deeply or holds a number too long to store", raw) from None
    except TypeError:  # sort_keys over a key that is not text (JSON gives none; a direct call may)
        raise EventRejectedError("event has a key that is not text", raw) from None
    detail_type = raw.get("detail-type")
    model = _MODELS.get(detail_type) if isinstance(detail_type, str) else None
    if model is None:
        if "detail-type" not in raw:
            raise EventRejectedError("no detail-type: not an EventBridge event (each line is one event, as "
                                     "EventBridge delivers it)", raw)
        if not isinstance(detail_type, str) or not detail_type.strip():
            shown = detail_type if isinstance(detail_type, str) else type(detail_type).__name__
            raise EventRejectedError(f"detail-type {str(shown)[:80]!r} is not an ECS event this tool reads", raw)
        if detail_type in KNOWN_UNREAD:
            return _other(raw, f"{detail_type}: {KNOWN_UNREAD[detail_type]}: recorded, not read"), text
        return _other(raw, f"detail-type {detail_type[:80]!r} is new to this tool: recorded, not read"), text
    if model is DeploymentStateChange and raw.get("resources") and isinstance(raw["resources"], list) \
            and isinstance(raw["resources"][0], str) and ":service/" not in raw["resources"][0] \
            and _RESOURCE_ARN.match(raw["resources"][0]):
        # a daemon's deployment (resources[0] arn:...:daemon/CLUSTER/NAME): kept, not a service's
        arn = parse_arn(raw["resources"][0])  # it matched _RESOURCE_ARN: an ARN
        kind = arn.resource_type if arn is not None else "resource"
        return _other(raw, f"{detail_type} of a {kind}, not a service: recorded, not read"), text
    try:
        event = model.validate(raw)
    except Invalid as exc:
        raise EventRejectedError(f"{detail_type}: {exc}", raw) from None
    except (ValueError, TypeError, OverflowError) as exc:  # odd values inside validators
        raise EventRejectedError(f"{detail_type}: {exc}", raw) from None
    if _last is not None:
        _last[:] = [(raw, event, text)]
    return event, text  # type: ignore[return-value]
