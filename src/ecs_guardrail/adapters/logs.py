"""CloudWatch Logs: the last lines a crashed container wrote, for a decision's alert (ARCHITECTURE.md,
"What on-call reads"; selection and masking in :mod:`ecs_guardrail.core.crash_words`).

One ``logs:FilterLogEvents`` (CloudWatch Logs API reference, FilterLogEvents: ``logGroupName``,
``logStreamNames``, ``startTime``/``endTime`` in epoch milliseconds; ``events[]`` oldest first with
``timestamp`` and ``message``) on the container's own ``awslogs`` group and the task's stream
(``prefix/container/task-id``, ECS Developer Guide, "Using the awslogs log driver"), the group and
prefix read from the task definition (``containerDefinitions[].logConfiguration.options``). IAM grants
the call on the services' log groups only (the stack parameter ``CrashLogGroupPattern``, default
``/ecs/*``: the task definitions' groups are not known when the stack is deployed).

**Budget** (the alert never waits longer): the client tries each call twice at most (botocore
``standard`` retries, ``max_attempts`` 2) with a 1 s connect and a 2 s read timeout, so one call takes
at most about 7 s; no call starts once :data:`BUDGET_S` (4 s) have passed since the first; at most
:data:`MAX_CALLS` streams and :data:`MAX_PAGES` pages of each per alert. Worst case about 11 s,
typically one call of tens of milliseconds. Whatever goes wrong (no permission, no group or stream,
another account or region, throttling, a timeout) is one line in the alert, never an exception.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from ecs_guardrail.core.crash_words import MAX_LINES, CrashWords, quote
from ecs_guardrail.core.permissions import permissions

__all__ = ["CrashLogs", "Wanted", "logs_client", "BUDGET_S", "MAX_CALLS", "LOOK_BACK", "CONNECT_TIMEOUT_S",
           "READ_TIMEOUT_S", "MAX_ATTEMPTS", "MAX_PAGES"]

#: seconds after the first call past which no further call starts
BUDGET_S = 4.0
#: FilterLogEvents calls per alert at most (the newest crashed task's stream, then the one before)
MAX_CALLS = 2
#: FilterLogEvents pages read per stream at most (a page is oldest first: a busy stream's newest lines
#: are on its last page)
MAX_PAGES = 3
#: how far before the task's stop the lines are looked for
LOOK_BACK = timedelta(minutes=5)
#: after the stop event (the driver's timestamps can trail the container's exit by its flush interval)
_LOOK_AFTER = timedelta(seconds=30)
CONNECT_TIMEOUT_S = 1.0
READ_TIMEOUT_S = 2.0
MAX_ATTEMPTS = 2

_WHY = {
    "AccessDeniedException": "no permission for logs:FilterLogEvents on {group} (the stack grants it on "
                             "CrashLogGroupPattern, default /ecs/*)",
    "ResourceNotFoundException": "log group {group} or stream {stream} not found",
    "ThrottlingException": "CloudWatch Logs throttled the read of {group}",
}


def logs_client(region: str | None = None) -> Any:
    """A CloudWatch Logs client within the reading budget (module docstring): ``standard`` retries with
    :data:`MAX_ATTEMPTS` attempts, :data:`CONNECT_TIMEOUT_S` / :data:`READ_TIMEOUT_S` timeouts."""
    import boto3
    from botocore.config import Config

    return boto3.client("logs", region_name=region, config=Config(
        retries={"mode": "standard", "max_attempts": MAX_ATTEMPTS}, connect_timeout=CONNECT_TIMEOUT_S,
        read_timeout=READ_TIMEOUT_S, user_agent_extra="ecs-guardrail"))


class Wanted:
    """One stream to read: ``group``, ``stream``, ``region`` (the ``awslogs-region``), ``container``,
    ``task_id`` and ``stopped`` (the task's STOPPED event time, UTC)."""

    __slots__ = ("group", "stream", "region", "container", "task_id", "stopped")

    def __init__(self, group: str, stream: str, region: str, container: str, task_id: str,
                 stopped: datetime) -> None:
        self.group, self.stream, self.region = group, stream, region
        self.container, self.task_id, self.stopped = container, task_id, stopped


class CrashLogs:
    """The last lines of crashed containers through a CloudWatch Logs client passed in (one of the home
    account and region: ``home``, ``(account, region)``, ``None`` unchecked). ``clock``: monotonic
    seconds (tests inject one)."""

    def __init__(self, client: Any, home: tuple[str, str] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._logs = client
        self._home = home
        self._clock = clock

    def last_words(self, wanted: Sequence[Wanted], account: str | None) -> CrashWords:
        """The quoted lines of the first stream of ``wanted`` (newest crashed task first) that has any,
        within the budget; ``account``: the account of the cluster (its log groups are there).

        Never raises: an unreadable stream is a :class:`CrashWords` with a one-line ``note``; no stream
        wanted (no ``awslogs`` destination with a stream prefix) is an empty one.
        """
        if not wanted:
            return CrashWords()
        first = wanted[0]
        if self._home is not None and account and account != self._home[0]:
            return CrashWords(group=first.group, note=f"log group {first.group} is in account {account}: "
                                                      "not readable from this account")
        if self._home is not None and first.region != self._home[1]:
            return CrashWords(group=first.group, note=f"log group {first.group} is in region {first.region}: "
                                                      "not read from this region")
        started = self._clock()
        note = None
        for n, w in enumerate(wanted[:MAX_CALLS]):
            if n and self._clock() - started > BUDGET_S:
                break
            try:
                messages = [m for _, m in self._filter(w.group, w.stream, w.stopped - LOOK_BACK,
                                                       w.stopped + _LOOK_AFTER, started)]
            except ClientError as exc:
                code = str(exc.response.get("Error", {}).get("Code") or "ClientError")
                note = _WHY.get(code, "{group}: " + code).format(group=w.group, stream=w.stream)
                if code != "ResourceNotFoundException":
                    break  # the next stream is in the same group: the same answer
                continue
            except BotoCoreError as exc:
                note = f"{w.group} not read within the budget ({type(exc).__name__})"
                break
            except Exception as exc:  # noqa: BLE001 - the alert goes out whatever the read does
                note = f"{w.group} not read ({type(exc).__name__})"
                break
            lines = quote(messages)
            if lines:
                return CrashWords(lines, w.container, w.task_id, w.group)
            note = f"no log lines in {w.group} {w.stream} in the {int(LOOK_BACK.total_seconds() // 60)} min " \
                   "before the stop"
        return CrashWords(group=first.group, note=note)

    def around_stop(self, group: str, stream: str, stopped: datetime) -> list[tuple[int, object]]:
        """The events an alert would quote from one task's stream: ``(timestamp in epoch milliseconds,
        message)``, oldest first, from :data:`LOOK_BACK` before ``stopped`` to 30 s after, within the same
        budget as :meth:`last_words` (:data:`MAX_PAGES` pages, :data:`BUDGET_S` from this call, the last
        :data:`~ecs_guardrail.core.crash_words.MAX_LINES` x 5 kept). Unmasked: mask before writing them anywhere
        (:func:`~ecs_guardrail.core.crash_words.masked`). Used by ``capture`` (``logs.jsonl``).

        Raises:
            botocore ``ClientError`` / ``BotoCoreError``: as FilterLogEvents does (no permission, no group
                or stream, throttling after the client's retries, a timeout).
        """
        return self._filter(group, stream, stopped - LOOK_BACK, stopped + _LOOK_AFTER, self._clock())

    @permissions(crash_log_group=["logs:FilterLogEvents"])
    def _filter(self, group: str, stream: str, start: datetime, end: datetime,
                started: float) -> list[tuple[int, object]]:
        """The newest events of one stream between ``start`` and ``end``, oldest first, as ``(timestamp,
        message)``: the pages FilterLogEvents gives (oldest first) while the budget lasts, at most
        :data:`MAX_PAGES`, the last :data:`~ecs_guardrail.core.crash_words.MAX_LINES` x 5 kept (empty lines
        are dropped later)."""
        kept: list[tuple[int, object]] = []
        token: str | None = None
        for n in range(MAX_PAGES):
            if n and self._clock() - started > BUDGET_S:
                break
            resp = self._logs.filter_log_events(logGroupName=group, logStreamNames=[stream],
                                                startTime=int(start.timestamp() * 1000),
                                                endTime=int(end.timestamp() * 1000),
                                                **({"nextToken": token} if token else {}))
            kept = (kept + [(int(e.get("timestamp") or 0), e.get("message", ""))
                            for e in resp.get("events") or []])[-5 * MAX_LINES:]
            token = resp.get("nextToken")
            if not token:
                break
        return kept
