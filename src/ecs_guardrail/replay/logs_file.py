"""A scenario's ``logs.jsonl`` (SCENARIOS.md): the containers' log lines as CloudWatch Logs holds them,
put into the replay's embedded CloudWatch Logs so that a decision's alert quotes them through the same
adapter as in AWS (:mod:`ecs_guardrail.adapters.logs`).

One JSON object a line: ``{"time": "...Z", "logStream": "ecs/app/TASK_ID", "message": "..."}``. The
group of a stream is the ``logGroup`` of the service whose task it is (the task id's ``group`` in
``events.jsonl``; the only ``logGroup`` of the fleet when just one service has one).
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ecs_guardrail.core.errors import ScenarioError
from ecs_guardrail.replay.lines import decode_line

__all__ = ["LogLine", "read_logs_jsonl", "load_logs"]

LogLine = tuple[datetime, str, str]  # (time, logStream, message)


def _time(value: Any, where: str) -> datetime:
    if not isinstance(value, str):
        raise ScenarioError(f"{where}: time is an ISO 8601 UTC string, got {json.dumps(value)[:40]}")
    try:
        t = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise ScenarioError(f"{where}: time {value[:40]!r} is not ISO 8601") from exc
    return (t if t.tzinfo else t.replace(tzinfo=UTC)).astimezone(UTC)


def read_logs_jsonl(path: Path) -> list[LogLine]:
    """Every line of ``path`` as ``(time, logStream, message)``; bytes that are not UTF-8 are replaced
    (the line is kept: the alert shows U+FFFD where they were).

    Raises:
        ScenarioError: a line that is not a JSON object with a ``time``, a ``logStream`` of the form
            ``PREFIX/CONTAINER/TASK_ID`` and a string ``message`` (its number and why).
    """
    out: list[LogLine] = []
    with path.open("rb") as fh:
        for n, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            where = f"logs.jsonl line {n}"
            text, _ = decode_line(raw)
            try:
                doc = json.loads(text)
            except ValueError as exc:
                raise ScenarioError(f"{where}: not JSON ({str(exc)[:80]})") from exc
            if not isinstance(doc, dict):
                raise ScenarioError(f"{where}: a JSON object is expected")
            stream, message = doc.get("logStream"), doc.get("message")
            if not isinstance(stream, str) or stream.count("/") < 2 or not all(stream.split("/")):
                raise ScenarioError(f"{where}: logStream is PREFIX/CONTAINER/TASK_ID, got {json.dumps(stream)[:80]}")
            if not isinstance(message, str):
                raise ScenarioError(f"{where}: message is a string, got {json.dumps(message)[:40]}")
            out.append((_time(doc.get("time"), where), stream, message))
    return out


def _task_groups(events_path: Path) -> dict[str, str]:
    """Task id -> ``group`` (``service:NAME``) of every task event in ``events.jsonl``."""
    out: dict[str, str] = {}
    if not events_path.is_file():
        return out
    with events_path.open("rb") as fh:
        for raw in fh:
            if b'"taskArn"' not in raw:
                continue
            try:
                detail = json.loads(decode_line(raw)[0]).get("detail") or {}
            except (ValueError, AttributeError):
                continue
            arn, group = detail.get("taskArn"), detail.get("group")
            if isinstance(arn, str) and isinstance(group, str):
                out[arn.rsplit("/", 1)[-1]] = group
    return out


def load_logs(client_factory: Any, fleet: dict[str, Any], account: str, region: str, folder: Path,
              events_path: Path) -> list[str]:
    """Put ``folder/logs.jsonl`` (when there is one) into the embedded CloudWatch Logs; returns warnings
    (lines whose task no service with a ``logGroup`` runs: left out, each stream named once).

    Raises:
        ScenarioError: see :func:`read_logs_jsonl`.
    """
    path = folder / "logs.jsonl"
    if not path.is_file():
        return []
    lines = read_logs_jsonl(path)
    groups = {s["name"]: s["logGroup"] for c in fleet["clusters"] for s in c.get("services", []) if s.get("logGroup")}
    only = next(iter(groups.values())) if len(set(groups.values())) == 1 else None
    tasks = _task_groups(events_path)
    by_stream: dict[tuple[str, str], list[tuple[int, str]]] = defaultdict(list)
    warnings: list[str] = []
    for t, stream, message in lines:
        owner = tasks.get(stream.rsplit("/", 1)[-1], "")
        group = groups.get(owner.removeprefix("service:")) if owner.startswith("service:") else None
        group = group or only
        if group is None:
            warning = f"logs.jsonl: stream {stream}: no service with a logGroup runs its task; its lines are left out"
            if warning not in warnings:
                warnings.append(warning)
            continue
        by_stream[(group, stream)].append((int(t.timestamp() * 1000), message))
    logs = client_factory("logs")
    made: set[str] = set()
    backend = _moto_logs_backend(logs, account, region)
    for (group, stream), events in sorted(by_stream.items()):
        if group not in made:
            logs.create_log_group(logGroupName=group)
            made.add(group)
        logs.create_log_stream(logGroupName=group, logStreamName=stream)
        events.sort(key=lambda e: e[0])
        batch = [{"timestamp": ts, "message": m} for ts, m in events]
        if backend is not None:  # moto's PutLogEvents drops events older than 14 days, as AWS does
            backend.groups[group].streams[stream].put_log_events(batch)
        else:
            logs.put_log_events(logGroupName=group, logStreamName=stream, logEvents=batch)
    return warnings


def _moto_logs_backend(logs: Any, account: str, region: str) -> Any:
    """moto's CloudWatch Logs backend behind a botocore client, else ``None`` (the fast engine)."""
    module = sys.modules.get("botocore.client")
    if module is None or not isinstance(logs, module.BaseClient):
        return None
    from moto.logs.models import logs_backends

    return logs_backends[account][region]
