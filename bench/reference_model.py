"""The smallest replay path, sharing no code with the project: what a replay's speed is measured against (issues
23 and 33).

What any replay of ``events.jsonl`` must at least do, and nothing else, in plain Python (the standard
library's ``json`` and ``datetime``, nothing imported from ``ecs_guardrail``): decode each line, keep the ECS
task state changes the watchdog's rule routes (``source`` ``aws.ecs``, ``detail-type`` ``ECS Task State
Change``), check the fields a crash count reads (``id``, ``time``, ``detail.clusterArn``,
``detail.lastStatus``, ``detail.taskArn``, ``detail.group``), drop redeliveries (the event ``id``), classify
each stopped service task by the table of ARCHITECTURE.md, "Stop classification" (a Spot marker, a
health-check kill, the platform taking the task, then the stop code: ``EssentialContainerExited`` and
``TaskFailedToStart`` are crashes), and count each service's crashes in a sliding window of event time (rule 1
of "Decision policy": ``CRASH_THRESHOLD`` crashes within ``CRASH_WINDOW_MINUTES``, read from the scenario's
``settings.env``).

No store, no AWS, no sampler, no fleet, no alert, no project model: so ``replay / this`` is everything the
product's own machinery costs on top of the policy's arithmetic. Prints one JSON line: events read, rejected,
stops, crash loops found (services that reached the threshold at least once).

Usage: ``python bench/reference_model.py SCENARIO_DIR``

"""

from __future__ import annotations

import json
import sys
from collections import deque
from datetime import datetime, timedelta
from pathlib import Path

#: stoppedReason prefixes (lower case) of ARCHITECTURE.md's stop classification table
SPOT = ("your spot task was interrupted",)
HEALTH_CHECK = ("task failed elb health checks", "task failed container health checks")
PLATFORM = ("ecs is performing maintenance", "task is being retired", "task stopped during instance draining",
            "availability zone rebalancing", "az rebalancing")
CRASH_CODES = ("essentialcontainerexited", "taskfailedtostart")


def settings(folder: Path) -> tuple[int, int]:
    """``(CRASH_THRESHOLD, CRASH_WINDOW_MINUTES)`` of ``settings.env`` (defaults 5 and 30)."""
    values = {"CRASH_THRESHOLD": "5", "CRASH_WINDOW_MINUTES": "30"}
    env = folder / "settings.env"
    if env.exists():
        for line in env.read_text().splitlines():
            key, sep, value = line.partition("=")
            if sep and key.strip() in values:
                values[key.strip()] = value.strip().strip("'\"")
    return int(values["CRASH_THRESHOLD"]), int(values["CRASH_WINDOW_MINUTES"])


def is_crash(detail: dict) -> bool:
    """A stopped task's stop is a crash (the table's order: Spot, health-check kill, platform, stop code)."""
    code = str(detail.get("stopCode") or "").strip().lower()
    reason = str(detail.get("stoppedReason") or "").strip().lower()
    if code == "spotinterruption" or reason.startswith(SPOT):
        return False
    if code == "terminationnotice" and "spot" in str(detail.get("capacityProviderName") or "").lower():
        return False
    if reason.startswith(HEALTH_CHECK) or reason.startswith(PLATFORM):
        return False
    return code in CRASH_CODES


def model(folder: Path) -> dict[str, int]:
    """Run the reference over ``folder/events.jsonl``; the counts it found."""
    threshold, window_minutes = settings(folder)
    window = timedelta(minutes=window_minutes)
    seen: set[str] = set()
    crashes: dict[tuple[str, str], deque] = {}
    loops: set[tuple[str, str]] = set()
    read = stops = rejected = 0
    with (folder / "events.jsonl").open("rb") as fh:
        for line in fh:
            if not line.strip():
                continue
            read += 1
            try:
                raw = json.loads(line)
                if raw.get("source") != "aws.ecs" or raw.get("detail-type") != "ECS Task State Change":
                    continue
                event_id, detail = raw["id"], raw["detail"]
                t = datetime.fromisoformat(raw["time"].replace("Z", "+00:00"))
                cluster, status, task = detail["clusterArn"], detail["lastStatus"], detail["taskArn"]
                group = detail.get("group") or ""
            except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
                rejected += 1
                continue
            if event_id in seen or not isinstance(task, str):
                continue
            seen.add(event_id)
            if status != "STOPPED" or not group.startswith("service:"):
                continue
            stops += 1
            if not is_crash(detail):
                continue
            key = (cluster.rsplit("/", 1)[-1], group[8:])
            times = crashes.get(key)
            if times is None:
                times = crashes[key] = deque()
            times.append(t)
            while times and times[0] <= t - window:
                times.popleft()
            if len(times) >= threshold:
                loops.add(key)
    return {"events_read": read, "rejected": rejected, "stops": stops, "crash_loops": len(loops)}


if __name__ == "__main__":
    print(json.dumps(model(Path(sys.argv[1]))))
