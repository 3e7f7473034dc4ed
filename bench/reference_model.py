"""The smallest replay path: the reference a replay's speed is measured against (issue 23).

What any replay of ``events.jsonl`` must at least do, and nothing else: decode each line, route it as
the EventBridge rules do (:func:`ecs_guardrail.routing.targets`), validate it into the project's typed
model (:func:`ecs_guardrail.core.events.parse_event`), drop redeliveries (the event ``id``), classify
each stopped task (:func:`ecs_guardrail.core.classify.classify_stop`) and count the genuine crashes of
each service in a sliding window of event time (rule 1 of ARCHITECTURE.md, "Decision policy":
``CRASH_THRESHOLD`` crashes within ``CRASH_WINDOW_MINUTES``, read from the scenario's ``settings.env``).

No store, no AWS, no sampler, no fleet, no alert: so ``replay / this`` is what the product's own
machinery costs on top of the policy's arithmetic. Prints one JSON line: events read, stops, crash
loops found (services that reached the threshold at least once).

Usage: ``python bench/reference_model.py SCENARIO_DIR``
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict, deque
from datetime import timedelta
from pathlib import Path

from ecs_guardrail.core.classify import classify_stop, is_stop_event
from ecs_guardrail.core.errors import EventRejectedError
from ecs_guardrail.core.events import TaskStateChange, parse_event
from ecs_guardrail.routing import targets


def _settings(folder: Path) -> tuple[int, int]:
    """``(CRASH_THRESHOLD, CRASH_WINDOW_MINUTES)`` of ``settings.env`` (defaults 5 and 30)."""
    values = {"CRASH_THRESHOLD": "5", "CRASH_WINDOW_MINUTES": "30"}
    env = folder / "settings.env"
    if env.exists():
        for line in env.read_text().splitlines():
            key, sep, value = line.partition("=")
            if sep and key.strip() in values:
                values[key.strip()] = value.strip().strip("'\"")
    return int(values["CRASH_THRESHOLD"]), int(values["CRASH_WINDOW_MINUTES"])


def model(folder: Path) -> dict[str, int]:
    """Run the reference over ``folder/events.jsonl``; the counts it found."""
    threshold, window_minutes = _settings(folder)
    window = timedelta(minutes=window_minutes)
    seen: set[str] = set()
    crashes: dict[tuple[str, str], deque] = defaultdict(deque)
    loops: set[tuple[str, str]] = set()
    read = stops = rejected = 0
    with (folder / "events.jsonl").open("rb") as fh:
        for line in fh:
            if not line.strip():
                continue
            read += 1
            try:
                raw = json.loads(line)
                routes = targets(raw)
                event = parse_event(raw)
            except (ValueError, EventRejectedError, RecursionError):
                rejected += 1
                continue
            if event.id in seen or "watchdog" not in routes or not isinstance(event, TaskStateChange):
                seen.add(event.id)
                continue
            seen.add(event.id)
            detail = event.detail
            if not is_stop_event(detail) or detail.last_status != "STOPPED" or detail.service is None:
                continue
            stops += 1
            if not classify_stop(detail).counts_as_crash:
                continue
            key = (detail.cluster, detail.service)
            times = crashes[key]
            times.append(event.time)
            while times and times[0] <= event.time - window:
                times.popleft()
            if len(times) >= threshold:
                loops.add(key)
    return {"events_read": read, "rejected": rejected, "stops": stops, "crash_loops": len(loops)}


if __name__ == "__main__":
    print(json.dumps(model(Path(sys.argv[1]))))
