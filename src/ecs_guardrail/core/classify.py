"""Stop classification: what stopped a task, and does it count toward a crash loop?

The table is ARCHITECTURE.md's "Stop classification"; the facts behind it are in ECS-EVENTS.md and the
ECS API reference (``Task.stopCode``: TaskFailedToStart, EssentialContainerExited, UserInitiated,
ServiceSchedulerInitiated, SpotInterruption, TerminationNotice, and the newer InfrastructureHealth).
Reason strings are matched on case-insensitive prefixes; the raw text is kept, never parsed for ARNs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from enum import StrEnum
from operator import attrgetter
from typing import Any

from msgspec import Struct

from ecs_guardrail.core.enum_text import ascii_lower, ascii_strip
from ecs_guardrail.core.events import TaskDetail

__all__ = [
    "StopKind",
    "StopVerdict",
    "classify_stop",
    "container_cause",
    "is_stop_event",
    "is_stopped",
    "settle",
    "remembered_per_task",
    "kind_with_notice",
    "job_failed",
    "COUNTS_AS_FAILURE",
    "JobRun",
    "judge_job_stop",
    "job_exit_text",
]


class StopKind(StrEnum):
    CRASH = "crash"
    HEALTH_CHECK_KILL = "health_check_kill"
    SPOT = "spot"
    SCHEDULER = "scheduler"
    USER = "user"
    INFRASTRUCTURE = "infrastructure"
    UNKNOWN = "unknown"

    @property
    def counts_as_failure(self) -> bool:
        """Crashes and health-check kills: the stops the crash-loop window and the fleet test count
        (ARCHITECTURE.md, "Stop classification"). The one place this is decided."""
        return self in (StopKind.CRASH, StopKind.HEALTH_CHECK_KILL)


#: kinds the fleet test counts as a service "failing" (crashes and health-check kills)
COUNTS_AS_FAILURE = frozenset(k for k in StopKind if k.counts_as_failure)

_HEALTH_CHECK_PREFIXES = ("task failed elb health checks", "task failed container health checks")
_SPOT_PREFIXES = ("your spot task was interrupted",)
#: the reasons a STOPPED event without a stopCode is a crash by (ARCHITECTURE.md, "Stop classification")
_CRASH_PREFIXES = ("essential container in task exited", "task failed to start")
# ServiceSchedulerInitiated stops that are the platform's doing, not a deployment or scale-in
_INFRA_PREFIXES = (
    "ecs is performing maintenance",
    "task is being retired",
    "host ec2",
    "instance is being deregistered",
    "container instance",
)
# the platform taking a task away, whatever stop code it carries (ECS-EVENTS.md: which code each carries is
# not documented in one place): Fargate task maintenance, retirement, Managed Instances draining, AZ rebalancing
_PLATFORM_PREFIXES = (
    "ecs is performing maintenance",
    "task is being retired",
    "task stopped during instance draining",
    "availability zone rebalancing",
    "az rebalancing",
)
# causes found in containers[].reason or stoppedReason, most specific first
_CAUSES = (
    "CannotPullContainerError",
    "ResourceInitializationError",
    "CannotStartContainerError",
    "CannotCreateContainerError",
    "CannotInspectContainerError",
    "ContainerRuntimeTimeoutError",
    "ContainerRuntimeError",
    "OutOfMemoryError",
    "InternalError",
    "ResourceNotFoundException",
    "AccessDeniedException",
)
#: each of :data:`_CAUSES` with its lower case text and that text after a space, made once (issue 33 item 2)
_CAUSES_LOWER = tuple((cause, cause.lower(), f" {cause.lower()}") for cause in _CAUSES)
assert all(c.endswith(("Error", "Exception")) for c in _CAUSES)  # _cause_in's first test reads no other


class StopVerdict(Struct, frozen=True):
    """One task's classification.

    ``kind`` is the table row; ``cause`` the first recognised error name in the containers' or the
    task's reason (``"OutOfMemoryError"``...), or ``None``; ``exit_codes`` maps container name to its
    exit code (``None`` = unknown, never read as 0); ``final`` says the verdict may be remembered for
    the task ARN (a Spot notice, or any stop with a stop code).
    """

    kind: StopKind
    cause: str | None
    exit_codes: tuple[tuple[str, int | None], ...]
    final: bool

    @property
    def counts_as_crash(self) -> bool:
        return self.kind is StopKind.CRASH


def _starts_ascii(text: str | None, prefixes: tuple[str, ...]) -> bool:
    """Whether ``text`` starts with one of ``prefixes`` (lower-case ASCII) in ASCII case and padding only
    (core.enum_text): for a reason that makes a stop a failure (a health-check kill), so a look-alike (Kelvin
    sign: ``str.lower()`` gives ``k``) or a Unicode space never turns a scheduler stop into a failure
    (hostile10)."""
    return bool(text) and ascii_lower(ascii_strip(text)).startswith(prefixes)  # type: ignore[arg-type]


def container_cause(detail: TaskDetail) -> str | None:
    """The first known error name in ``containers[].reason`` then ``stoppedReason`` (case-insensitive)."""
    for c in detail.containers:
        if c.reason:
            cause = _cause_in(c.reason)
            if cause is not None:
                return cause
    return _cause_in(detail.stopped_reason) if detail.stopped_reason else None


def _cause_in(text: str) -> str | None:
    """The first of :data:`_CAUSES` that ``text`` (lower-cased, stripped) starts with or names after a space
    in its first 200 characters, or ``None``."""
    low = text.strip().lower()
    head = low[:200]
    if "error" not in head and "exception" not in head:  # each cause ends with one: none is in the text
        return None
    for cause, lowered, spaced in _CAUSES_LOWER:
        if low.startswith(lowered) or spaced in head:
            return cause
    return None


def is_stopped(status: str | None) -> bool:
    """True when a task's ``lastStatus`` or ``desiredStatus`` (``status``) is ``STOPPED``, in any ASCII case.
    ECS's statuses are ASCII upper case (ECS-EVENTS.md, "Lifecycle": PROVISIONING, PENDING, ACTIVATING,
    RUNNING, DEACTIVATING, STOPPING, DEPROVISIONING, STOPPED); ``str.upper`` alone would also read
    ``ſtopped`` (a long s) or ``ﬆopped`` (a ligature) as STOPPED: such a status is unknown, as any other
    (recorded, not a stop; a replay names the statuses of stopping tasks when none is STOPPED)."""
    # an ASCII upper-casing keeps the length and maps only s and S to S: only 7 characters starting with
    # one of them may read as STOPPED (cheap tests first: RUNNING and PENDING are 7 characters too)
    return status == "STOPPED" or (status is not None and status[:1] in _S and len(status) == 7
                                   and status.isascii() and status.upper() == "STOPPED")


#: the first characters a status that reads as STOPPED may have (:func:`is_stopped`)
_S = ("s", "S")


def is_stop_event(detail: TaskDetail) -> bool:
    """True for any event of a task that is stopping: desired STOPPED, or already STOPPED (:func:`is_stopped`)."""
    desired, last = detail.desired_status, detail.last_status
    if desired == "STOPPED" or last == "STOPPED":  # ECS's own text: no call (issue 33 item 2)
        return True
    if (desired is None or desired[:1] not in _S) and (last is None or last[:1] not in _S):
        return False  # neither starts with s or S: neither reads as STOPPED (is_stopped), no call
    return is_stopped(desired) or is_stopped(last)


def _is_spot(detail: TaskDetail, reason: str) -> bool:
    """``reason``: the stopped reason lower-cased and stripped (``""`` for none)."""
    # the stop code read as _classify reads it (ASCII padding and case only: core.enum_text); an untrimmed
    # " SpotInterruption" was no Spot marker while " EssentialContainerExited" was a crash (hostile10)
    code = ascii_lower(ascii_strip(detail.stop_code or ""))
    if code == "spotinterruption" or reason.startswith(_SPOT_PREFIXES):
        return True
    if code == "terminationnotice":
        # TerminationNotice was the name on Spot notices before SpotInterruption; off Spot it is the
        # platform retiring the host.
        return "spot" in (detail.capacity_provider_name or "").lower()
    return False


#: ``[key, its verdict]`` of the last :func:`classify_stop` call, the key being every value the verdict reads
#: (:func:`_reads`): the same detail asked again gets the same (immutable) verdict. The recorder asks twice
#: for a notice, and in a replay the watchdog asks of the detail the recorder parsed (``parsed_once``). The
#: event models are mutable Structs: a key of the values (strings, integers, ``None``; the containers' as a
#: tuple) cannot go stale when a caller changes the detail or one of its containers, as a key of the
#: detail's identity could (issue 33 item 2; round 8's note).
_LAST: list[Any] = [None, None]
#: a container's fields the verdict reads: its name and exit code (``exit_codes``), its reason (``cause``)
_CONTAINER_READS = attrgetter("name", "exit_code", "reason")


def _reads(detail: TaskDetail) -> tuple[Any, ...]:
    """The values :func:`_classify` reads of ``detail``, as one hashable tuple of immutable values."""
    return (detail.stop_code, detail.stopped_reason, detail.last_status, detail.capacity_provider_name,
            tuple(map(_CONTAINER_READS, detail.containers)))


def classify_stop(detail: TaskDetail) -> StopVerdict:
    """Classify a stopping or stopped task.

    Order matters: Spot markers win (a Spot task's later STOPPED event must never read as a crash),
    then health-check kills (stopCode ServiceSchedulerInitiated, told apart by the reason), then the
    stop code. ``final`` is False for a notice that carries neither a stop code nor a Spot marker:
    the verdict waits for a later event of the same task. A detail with the same values as the one
    classified last (the same detail asked again) is classified once (:data:`_LAST`).
    """
    key = _reads(detail)
    if _LAST[0] == key:
        return _LAST[1]  # type: ignore[no-any-return]
    verdict = _classify(detail)
    _LAST[0], _LAST[1] = key, verdict
    return verdict


def _classify(detail: TaskDetail) -> StopVerdict:
    exit_codes = tuple([(c.name or f"container-{i}", c.exit_code) for i, c in enumerate(detail.containers)])
    cause = container_cause(detail)
    # an ECS enum: a non-ASCII look-alike (or space: ascii_strip) is an unknown code
    code = ascii_lower(ascii_strip(detail.stop_code or ""))
    # the reason's prefixes are matched case-insensitively: the reason lower-cased and stripped once
    reason = detail.stopped_reason
    low = reason.strip().lower() if reason else ""

    if _is_spot(detail, low):
        return StopVerdict(StopKind.SPOT, cause, exit_codes, True)
    # an ASCII match implies the lower-cased one (``low``): the cheap test first, the ASCII-only one decides
    if low.startswith(_HEALTH_CHECK_PREFIXES) and _starts_ascii(detail.stopped_reason, _HEALTH_CHECK_PREFIXES):
        return StopVerdict(StopKind.HEALTH_CHECK_KILL, cause, exit_codes, True)
    if low.startswith(_PLATFORM_PREFIXES):
        return StopVerdict(StopKind.INFRASTRUCTURE, cause, exit_codes, True)
    if code in ("essentialcontainerexited", "taskfailedtostart"):
        return StopVerdict(StopKind.CRASH, cause, exit_codes, True)
    if code == "userinitiated":
        return StopVerdict(StopKind.USER, cause, exit_codes, True)
    if code in ("terminationnotice", "infrastructurehealth"):
        # TerminationNotice is never a crash: the host (Spot or not) is going away and the container exits
        # on SIGTERM; the task's later STOPPED event (EssentialContainerExited) keeps this verdict (settle)
        return StopVerdict(StopKind.INFRASTRUCTURE, cause, exit_codes, True)
    if code == "serviceschedulerinitiated":
        if low.startswith(_INFRA_PREFIXES):
            return StopVerdict(StopKind.INFRASTRUCTURE, cause, exit_codes, True)
        return StopVerdict(StopKind.SCHEDULER, cause, exit_codes, True)
    stopped = is_stopped(detail.last_status)
    if not code and stopped and ascii_lower(ascii_strip(detail.stopped_reason or "")).startswith(_CRASH_PREFIXES):
        # events from before ECS set stopCode (older agents and platform versions, 2018) carry the reason
        # only: "Essential container in task exited", "Task failed to start" (ARCHITECTURE.md's crash row)
        # ASCII case only (core.enum_text): a look-alike ("Tas\u212a failed to start", Kelvin sign) is no crash,
        # nor is a reason padded with Unicode space (ascii_strip; str.strip() dropped it: hostile10)
        return StopVerdict(StopKind.CRASH, cause, exit_codes, True)
    # no stop code (old events, notices) or one this version does not know: recorded, surfaced
    return StopVerdict(StopKind.UNKNOWN, cause, exit_codes, stopped)


def remembered_per_task(verdict: StopVerdict) -> bool:
    """Is ``verdict`` a notice the watchdog remembers per task ARN, so that the task's later STOPPED event
    (often EssentialContainerExited, exit 143 after SIGTERM) is never a crash? ARCHITECTURE.md, "Stop
    classification": every Spot verdict, and every infrastructure one (a TerminationNotice off Spot:
    Fargate task maintenance, instance retirement, Managed Instances draining; InfrastructureHealth;
    host maintenance; AZ rebalancing). Crashes and health-check kills are remembered as failures
    instead; scheduler, user and unknown stops are not remembered (a later STOPPED event decides)."""
    return verdict.final and verdict.kind in (StopKind.SPOT, StopKind.INFRASTRUCTURE)


def kind_with_notice(stop: StopKind, stop_time: datetime, notice: tuple[StopKind, datetime] | None, *,
                     notice_first: bool) -> StopKind:
    """The kind a stopped task counts as, given the Spot or termination notice remembered for it
    (``notice``: its kind and event time; ``None``: none). The watchdog's rules
    (:func:`ecs_guardrail.core.summary.add_spot`), so that a report classifies each stop exactly as the
    watchdog counted it (ARCHITECTURE.md, "Stop classification"):

    - a notice delivered before the STOPPED event (``notice_first``) marks it: the stop is of the
      notice's kind (:func:`settle`: the first final verdict stands);
    - a notice delivered after it takes back a crash or health-check kill stamped at or after the
      notice (the task was already going away when it exited); a failure stamped before the notice,
      or any other kind, stands.
    """
    if notice is None:
        return stop
    kind, at = notice
    if notice_first:
        return kind
    return kind if stop.counts_as_failure and stop_time >= at else stop


def settle(first: StopVerdict | None, new: StopVerdict) -> StopVerdict:
    """The verdict that stands for a task: its first *final* verdict, whatever later events say.

    ``first`` is what was remembered for the task ARN (``None``: nothing yet). A TerminationNotice or Spot
    notice (final) followed by a STOPPED event with EssentialContainerExited (the container exited on
    SIGTERM) stays a notice, never a crash. A non-final verdict (a notice without a stop code) is replaced
    by the next one. The newer event's exit codes are kept when it knows any (only STOPPED events do).
    """
    if first is None or not first.final:
        return new
    known = any(code is not None for _, code in new.exit_codes)
    return StopVerdict(first.kind, first.cause or new.cause, new.exit_codes if known else first.exit_codes, True)


def _exit_text(code: int | None) -> str:
    return "unknown" if code is None else str(code)


def job_failed(exit_codes: Iterable[tuple[str, int | None]] | Mapping[str, int | None],
               essential: frozenset[str] | None) -> tuple[bool, str]:
    """Did a standalone job (``group`` ``family:NAME``) fail? ARCHITECTURE.md, "Decision policy".

    ``exit_codes``: container name -> ``containers[].exitCode`` of the STOPPED event (``None``: unknown,
    never read as 0), as in :attr:`StopVerdict.exit_codes`. ``essential``: the essential container names
    from DescribeTaskDefinition (``containerDefinitions[].essential``), or ``None`` when the task
    definition could not be read (an empty set is read as ``None`` too: ECS requires one essential).

    Failed when an essential container exited non-zero or with an unknown code (or is missing from the
    event); a non-essential sidecar's exit (137 of a log router killed after the main container ended)
    never fails the job. With ``essential`` unknown, any non-zero or unknown exit fails it, and the text
    says "essential unknown" with every exit code.

    Returns:
        ``(failed, text)``: ``text`` is one line for the alert, e.g.
        ``"essential container app exited 1 (log-router=137)"``.
    """
    codes = list(exit_codes.items()) if isinstance(exit_codes, Mapping) else list(exit_codes)
    listing = ", ".join(f"{name}={_exit_text(code)}" for name, code in codes) or "no exit codes in the event"
    if not essential:
        bad = [name for name, code in codes if code != 0]
        failed = bad or not codes
        verdict = "failed" if failed else "finished"
        return bool(failed), (f"{verdict}: essential unknown (task definition not readable: grant the watchdog "
                              f"ecs:DescribeTaskDefinition on it, or it was deleted); exit codes {listing}")
    by_name = dict(codes)
    bad_essential = [(name, by_name.get(name)) for name in sorted(essential) if by_name.get(name) != 0]
    others = [f"{n}={_exit_text(c)}" for n, c in codes if n not in essential]
    rest = f" ({', '.join(others)} non-essential)" if others else ""
    if bad_essential:
        what = ", ".join(f"{n} exited {c}" if c is not None else
                         (f"{n} exit code unknown" if n in by_name else f"{n} missing from the event")
                         for n, c in bad_essential)
        return True, f"failed: essential container {what}{rest}"
    return False, f"finished: essential container {', '.join(sorted(essential))} exited 0{rest}"


class JobRun(Struct, frozen=True):
    """How a standalone job's stop is judged (:func:`judge_job_stop`): ``outcome`` is ``"wait"`` (not the
    STOPPED event yet), ``"ok"`` (finished normally), ``"ignored"`` (stopped by something else: Spot,
    a deployment, the platform) or ``"failed"``; ``why`` one line for the alert; ``exit_text`` the exit
    code a job summary reports."""

    outcome: str
    why: str
    exit_text: str = "unknown"


def job_exit_text(exit_codes: tuple[tuple[str, int | None], ...], essential: frozenset[str] | None) -> str:
    """The exit code a job summary reports: the first failing essential container's (any container's
    when the essential ones are unknown), ``"unknown"`` when the event has none."""
    codes = dict(exit_codes)
    names = sorted(essential) if essential else [n for n, _ in exit_codes]
    for name in names:
        code = codes.get(name)
        if code != 0:
            return "unknown" if code is None else str(code)
    return "unknown"


def judge_job_stop(last_status: str, kind: StopKind, exit_codes: tuple[tuple[str, int | None], ...],
                   essential: Callable[[], frozenset[str] | None]) -> JobRun:
    """Did this stop of a standalone job (``group`` ``family:NAME``) fail? ARCHITECTURE.md, "Decision policy".

    ``last_status``: ``detail.lastStatus`` (only ``STOPPED`` carries the final exit codes); ``kind``: the
    stop's classification; ``essential()``: the essential container names (DescribeTaskDefinition,
    called only when the exit codes need it; ``None`` when unreadable).
    """
    if not is_stopped(last_status):
        return JobRun("wait", "standalone task: waiting for the STOPPED event's exit codes")
    if exit_codes and all(c == 0 for _, c in exit_codes):
        return JobRun("ok", "standalone task finished normally")
    if kind is not StopKind.CRASH:
        return JobRun("ignored", f"standalone task stopped ({kind.value}): not a failed run")
    names = essential()
    failed, why = job_failed(exit_codes, names)
    if not failed:
        return JobRun("ok", f"standalone task finished normally ({why})")
    return JobRun("failed", why, job_exit_text(exit_codes, names))
