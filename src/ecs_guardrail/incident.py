"""Glue for ``ecs-guardrail timeline`` and ``replay --timeline``: read the history table, build, render.

The decisions about what a timeline says are in :mod:`ecs_guardrail.core.timeline`; this module only
reads (``HistoryStore.timeline_brief``: one Query per cluster-day on the ``gsi1`` index) and writes.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ecs_guardrail.adapters.history import HistoryStore
from ecs_guardrail.core.availability import CLIENT_ERROR_RATIO
from ecs_guardrail.core.policy import PolicyConfig
from ecs_guardrail.core.timeline import LOOKBEHIND, Timeline, build_timeline, build_timelines
from ecs_guardrail.replay.lines import decode_line

__all__ = ["load_timeline", "load_timelines", "parse_time", "scenario_span"]


def parse_time(text: str) -> datetime:
    """``2025-08-21T15:00:00Z``, ``2025-08-21T15:00`` or ``2025-08-21`` (UTC when no offset is given).

    Raises:
        ValueError: not an ISO 8601 date or time.
    """
    t = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    return t.astimezone(UTC) if t.tzinfo else t.replace(tzinfo=UTC)


def load_timeline(store: HistoryStore, cluster: str, since: datetime, until: datetime, *,
                  service: str | None = None, config: PolicyConfig | None = None,
                  client_error_ratio: float = CLIENT_ERROR_RATIO) -> Timeline:
    """Read the cluster's timeline items for ``[since, until]`` and build its :class:`Timeline`."""
    items = list(store.timeline_brief(cluster, since - LOOKBEHIND, until))  # blocks reaching into the window
    return build_timeline(items, cluster, since, until, service=service, config=config,
                          client_error_ratio=client_error_ratio)


def load_timelines(store: HistoryStore, cluster: str, since: datetime, until: datetime, *,
                   account: str | None = None, region: str | None = None, service: str | None = None,
                   config: PolicyConfig | None = None,
                   client_error_ratio: float = CLIENT_ERROR_RATIO) -> list[Timeline]:
    """One :class:`Timeline` per (account, region) that holds a cluster named ``cluster`` (the own one,
    ``account``/``region``, first): two accounts' clusters of one name never mix."""
    fields = tuple(dict.fromkeys((*HistoryStore.TIMELINE_FIELDS, "account", "region")))
    items = list(store.timeline_brief(cluster, since - LOOKBEHIND, until, fields=fields))
    return build_timelines(items, cluster, since, until, account=account, region=region, service=service,
                           config=config, client_error_ratio=client_error_ratio)


def scenario_span(scenario: Any) -> tuple[datetime, datetime] | None:
    """First and last event time of a scenario (``events.jsonl`` and ``healthy_hosts.csv``), or ``None``."""
    times: list[datetime] = []
    with scenario.events_path.open("rb") as fh:
        for line in fh:
            try:
                t = json.loads(decode_line(line)[0]).get("time")
                if t:
                    times.append(parse_time(str(t)))
            except (ValueError, AttributeError, UnicodeDecodeError):
                continue
    csv_path: Path | None = scenario.healthy_hosts_path
    if csv_path is not None:
        for row in csv_path.read_text(encoding="utf-8-sig", errors="replace").splitlines()[1:]:
            try:
                times.append(parse_time(row.split(",", 1)[0]))
            except ValueError:
                continue
    return (min(times), max(times)) if times else None
