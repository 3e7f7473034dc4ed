"""A scenario's ``delivered.csv``: when each line of ``events.jsonl`` was delivered (SCENARIOS.md).

Header ``line,delivered_at``: the 1-based line number and an ISO 8601 UTC time (``capture`` writes the
raw-event log's ``ingestionTime``). With it a replay applies the production check of events stamped
in the future (:func:`ecs_guardrail.core.delivery.check_delivery`) to those lines; lines without a row
are not checked, because a replay cannot tell a future stamp from a quiet gap in a recording.
"""

from __future__ import annotations

import csv
from datetime import datetime
from pathlib import Path

from ecs_guardrail.core.errors import ScenarioError
from ecs_guardrail.core.records import parse_time

__all__ = ["read_delivered"]


def read_delivered(path: Path | None) -> dict[int, datetime]:
    """``{line number: delivery time (UTC)}`` from ``delivered.csv`` (``{}`` when ``path`` is ``None``).

    A UTF-8 byte order mark is accepted (spreadsheets write one).

    Raises:
        ScenarioError: a missing column, a line number that is not a positive integer, a time that is
            not ISO 8601, or a line listed twice; the message names the row.
    """
    if path is None:
        return {}
    out: dict[int, datetime] = {}
    try:
        with path.open(newline="", encoding="utf-8-sig") as fh:
            reader = csv.DictReader(fh)
            if not reader.fieldnames or not {"line", "delivered_at"} <= set(reader.fieldnames):
                raise ScenarioError(f"{path.name}: header must be line,delivered_at (got {reader.fieldnames})")
            for row in reader:
                where = f"{path.name}:{reader.line_num}"
                try:
                    n = int(str(row["line"]).strip())
                except ValueError:
                    raise ScenarioError(f"{where}: line {row['line']!r} is not a line number") from None
                if n < 1:
                    raise ScenarioError(f"{where}: line {n} is not a line number (they start at 1)")
                try:
                    t = parse_time(str(row["delivered_at"]).strip())
                except ValueError:
                    raise ScenarioError(f"{where}: delivered_at {row['delivered_at']!r} is not an ISO 8601 "
                                        "time") from None
                if n in out:
                    raise ScenarioError(f"{where}: line {n} is listed twice")
                out[n] = t
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError(f"{path.name}: cannot be read ({exc})") from None
    return out
