"""Typed records the policy, the state layer and the alerts share: actions, reasons, failures and
decisions, and the decision's public JSON shape (SCENARIOS.md: field names are a contract).

Times are timezone-aware UTC datetimes and keep their fractional seconds through a round trip
(:func:`iso` writes milliseconds when there are any, :func:`parse_time` reads 0 to 6 digits).
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from msgspec import Struct, field
from msgspec import json as msgspec_json

from ecs_guardrail.core.classify import StopKind
from ecs_guardrail.core.links import resource_name

__all__ = ["Action", "Reason", "TriggerKind", "Failure", "Decision", "iso", "parse_time", "decision_record",
           "decision_from_record"]


class Action(StrEnum):
    """What a decision does (public contract)."""

    SCALE_TO_ZERO = "scale_to_zero"
    ALERT_ONLY = "alert_only"
    HOLD = "hold"


class Reason(StrEnum):
    """Why (public contract; ARCHITECTURE.md lists them)."""

    CRASH_LOOP = "crash_loop"
    ALERT_ONLY_CLUSTER = "alert_only_cluster"
    OPTED_OUT = "opted_out"
    SERVICE_NOT_FOUND = "service_not_found"
    DAEMON_SERVICE = "daemon_service"
    DEPLOYMENT_IN_PROGRESS = "deployment_in_progress"
    STILL_SERVING = "still_serving"
    DRY_RUN = "dry_run"
    HEALTH_CHECK_KILLS = "health_check_kills"
    MASS_UNHEALTHY = "mass_unhealthy"
    BLAST_RADIUS_CAP = "blast_radius_cap"
    SCALING_SUSPEND_FAILED = "scaling_suspend_failed"
    ACTION_FAILED = "action_failed"
    JOB_FAILED = "job_failed"
    RESTART_LOOP = "restart_loop"


class TriggerKind(StrEnum):
    """Why a service needs a decision (:class:`ecs_guardrail.core.policy.Trigger`; a decision's ``trigger``):
    ``crash_loop`` (crashes reach ``CRASH_THRESHOLD`` in the window), ``impaired`` (ECS's
    SERVICE_TASK_START_IMPAIRED service event), ``health_check_kills`` (health-check kills reach the
    threshold) or ``restart_loop`` (container restarts make up the threshold: core/restarts.py)."""

    CRASH_LOOP = "crash_loop"
    IMPAIRED = "impaired"
    HEALTH_CHECK_KILLS = "health_check_kills"
    RESTART_LOOP = "restart_loop"


def iso(t: datetime) -> str:
    """``2025-08-21T12:25:03Z`` (UTC; ``.123`` milliseconds only when the time has a fraction)."""
    if t.tzinfo is UTC and not t.microsecond and t.year >= 1000:  # an event's time: msgspec writes the same
        return _RFC3339(t)[1:-1].decode()  # text in C, in a tenth of the time (issue 33.2)
    if t.tzinfo is None:  # local time: never cached (the zone may change)
        return _iso(t)
    text = _ISO.get(t)  # speed (issue 33.2): a replay writes each event's time 3 times, a failure's at every save
    if text is None:
        text = _iso(t)
        if len(_ISO) >= 65_536:
            _ISO.clear()
        _ISO[t] = text  # equal aware times are one instant: one text
    return text


_ISO: dict[datetime, str] = {}
_RFC3339 = msgspec_json.Encoder().encode  # a UTC datetime as "YYYY-MM-DDTHH:MM:SS[.ffffff]Z", quoted


def _iso(t: datetime) -> str:
    t = t.astimezone(UTC)
    if t.year < 1000:  # strftime's %Y writes such a year without leading zeros (isoformat pads it): as ever
        return t.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z" if t.microsecond else t.strftime("%Y-%m-%dT%H:%M:%SZ")
    # the same text as strftime (milliseconds cut, not rounded), at about half its cost: a replay writes
    # three times an event ("+00:00" is the 6 characters replaced by "Z")
    return t.isoformat(timespec="milliseconds" if t.microsecond else "seconds")[:-6] + "Z"


def parse_time(text: str) -> datetime:
    """Read :func:`iso`'s output (or any ISO 8601 time; naive means UTC).

    Raises:
        ValueError: not an ISO 8601 time.
    """
    t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return t if t.tzinfo else t.replace(tzinfo=UTC)


#: speed (issue 33.2): the stored failures are read again at every sweep minute; their times and kinds by text
_KINDS = {k.value: k for k in StopKind}
_TIMES: dict[str, datetime] = {}


def _doc_time(text: str) -> datetime:
    """:func:`parse_time` of a stored failure's ``t``, each text parsed once (at most 65,536 kept)."""
    t = _TIMES.get(text) if type(text) is str else None
    if t is None:
        t = parse_time(text)
        if len(_TIMES) >= 65_536:
            _TIMES.clear()
        if type(text) is str:
            _TIMES[text] = t
    return t


class Failure(Struct, frozen=True):
    """One classified failure of one task (counted once per task ARN).

    ``service`` is the service name (``family:NAME`` for a standalone job); ``time`` the event time
    of its STOPPED event; ``kind`` CRASH or HEALTH_CHECK_KILL; ``exit_codes`` ``(container, code)``
    with ``None`` for unknown (never read as 0); ``task_definition_arn`` the event's
    ``taskDefinitionArn`` (the alert's log links read its ``awslogs`` options; not part of the
    decision's public JSON).
    """

    service: str
    time: datetime
    kind: StopKind
    task_arn: str = ""
    availability_zone: str | None = None
    stop_code: str | None = None
    reason: str | None = None
    cause: str | None = None
    exit_codes: tuple[tuple[str, int | None], ...] = ()
    task_definition_arn: str | None = None

    def to_doc(self) -> dict[str, Any]:
        """Compact JSON-safe form (empty fields left out)."""
        doc = {"t": iso(self.time), "k": self.kind.value, "a": self.task_arn, "z": self.availability_zone,
               "c": self.stop_code, "r": (self.reason or "")[:200] or None, "x": self.cause,
               "e": [[n, c] for n, c in self.exit_codes] or None, "d": self.task_definition_arn}
        return {k: v for k, v in doc.items() if v is not None}

    @classmethod
    def from_doc(cls, service: str, doc: dict[str, Any]) -> Failure:
        return cls(service=service, time=_doc_time(doc["t"]), kind=_KINDS.get(doc["k"]) or StopKind(doc["k"]),
                   task_arn=doc.get("a", ""),
                   availability_zone=doc.get("z"), stop_code=doc.get("c"), reason=doc.get("r"), cause=doc.get("x"),
                   exit_codes=tuple((n, c) for n, c in doc.get("e") or ()), task_definition_arn=doc.get("d"))


class Decision(Struct, frozen=True):
    """What the watchdog decided for one service, and why, in words an on-call engineer can use.

    ``evidence`` is the deciding rule's facts (JSON-safe): the target group and healthy host count
    for ``still_serving``, the deployment and what ECS said for ``deployment_in_progress``, the held
    services for ``blast_radius_cap``...
    """

    cluster: str
    service: str
    time: datetime
    action: Action
    reason: Reason
    crashes_in_window: int
    health_check_kills_in_window: int
    message: str
    trigger: str = "crash_loop"
    failing_services: int = 0
    services_in_cluster: int = 0
    bound: int = 0
    last_failures: tuple[Failure, ...] = field(default=())
    evidence: dict[str, Any] = field(default_factory=dict)
    failing: tuple[str, ...] = ()

    @property
    def acts(self) -> bool:
        return self.action is Action.SCALE_TO_ZERO


def decision_record(d: Decision, *, previous_desired_count: int | None = None, dry_run: bool = False,
                    escalation: bool = False) -> dict[str, Any]:
    """The public JSON shape of a decision (SCENARIOS.md): field names are a contract."""
    out: dict[str, Any] = {
        "type": "decision",
        "time": iso(d.time),
        "cluster": d.cluster,
        "service": d.service,
        "action": d.action.value,
        "reason": d.reason.value,
        "crashes_in_window": d.crashes_in_window,
        "health_check_kills_in_window": d.health_check_kills_in_window,
        "trigger": d.trigger,
        "failing_services": d.failing_services,
        "services_in_cluster": d.services_in_cluster,
        "bound": d.bound,
        "previous_desired_count": previous_desired_count,
        "dry_run": dry_run,
        "escalation": escalation,
        "message": d.message,
        "evidence": d.evidence,
        "last_stops": [
            {"task": resource_name(f.task_arn), "task_arn": f.task_arn, "time": iso(f.time), "kind": f.kind.value,
             "stop_code": f.stop_code, "reason": f.reason, "cause": f.cause,
             "exit_codes": {n: c for n, c in f.exit_codes}, "availability_zone": f.availability_zone}
            for f in d.last_failures
        ],
    }
    if d.failing:
        out["failing"] = list(d.failing)
    return out


def decision_from_record(record: dict[str, Any]) -> Decision:
    """Rebuild a :class:`Decision` from :func:`decision_record`'s output (fractional seconds kept).

    Raises:
        KeyError, ValueError: not a decision record.
    """
    last = tuple(
        Failure(service=record["service"], time=parse_time(s["time"]), kind=StopKind(s["kind"]),
                task_arn=s.get("task_arn") or s["task"], availability_zone=s.get("availability_zone"),
                stop_code=s.get("stop_code"), reason=s.get("reason"), cause=s.get("cause"),
                exit_codes=tuple((k, v) for k, v in (s.get("exit_codes") or {}).items()))
        for s in record.get("last_stops", [])
    )
    return Decision(
        cluster=record["cluster"], service=record["service"], time=parse_time(record["time"]),
        action=Action(record["action"]), reason=Reason(record["reason"]),
        crashes_in_window=record["crashes_in_window"],
        health_check_kills_in_window=record["health_check_kills_in_window"], message=record["message"],
        trigger=record.get("trigger", "crash_loop"), failing_services=record.get("failing_services", 0),
        services_in_cluster=record.get("services_in_cluster", 0), bound=record.get("bound", 0), last_failures=last,
        evidence=dict(record.get("evidence") or {}), failing=tuple(record.get("failing") or ()),
    )
