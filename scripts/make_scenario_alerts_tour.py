#!/usr/bin/env python3
"""Writes events/scenarios/alerts-tour: one of each alert kind the README shows, from real code
(``ecs-guardrail replay events/scenarios/alerts-tour --alerts-out alerts.jsonl``). Deterministic.

- ``api`` (tagged alert-only) crash-loops: an ``alert_only`` alert; ECS later reports
  ``SERVICE_STEADY_STATE`` for it: a ``recovery`` alert with the episode's length;
- ``worker`` crash-loops: a ``scale_down`` alert with the undo command;
- the standalone job ``nightly-report`` fails every 5 minutes for an hour: one ``job_failure``
  alert, then one ``job_summary`` when its window closes (never one per task).

:func:`job_every` is also used by the test that replays a day of a job failing every 5 minutes.
"""

from __future__ import annotations

import importlib.util
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "events" / "scenarios" / "alerts-tour"
_spec = importlib.util.spec_from_file_location("opt_out", ROOT / "scripts" / "make_scenario_opt_out.py")
assert _spec is not None and _spec.loader is not None
base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(base)
ACCOUNT, REGION, CLUSTER = base.ACCOUNT, base.REGION, base.CLUSTER
T0 = datetime(2025, 9, 2, 9, 0, tzinfo=UTC)
SERVICES = ["api", "worker", "web", "auth", "mail", "search", "cart", "media", "feeds", "admin", "billing", "maps"]
CRASH = {"code": "EssentialContainerExited", "reason": "Essential container in task exited", "exit": 1}
SETTINGS = ("ALERT_ONLY_CLUSTERS=none\nCRASH_THRESHOLD=5\nCRASH_WINDOW_MINUTES=30\nMAX_ACTION_FRACTION=0.2\n"
            "MIN_ACTIONS_ALLOWED=1\nFLEET_SIGNAL_MIN_FAILURES=2\n"
            "RUNBOOK_URL=https://wiki.example.com/runbooks/ecs/{cluster}/{service}\n")


def service_action(n: int, t: datetime, service: str, name: str) -> dict:
    return {"version": "0", "id": f"7d1c0000-0000-4000-8000-{n:012d}", "detail-type": "ECS Service Action",
            "source": "aws.ecs", "account": ACCOUNT, "time": base.stamp(t), "region": REGION,
            "resources": [f"arn:aws:ecs:{REGION}:{ACCOUNT}:service/{CLUSTER}/{service}"],
            "detail": {"clusterArn": f"arn:aws:ecs:{REGION}:{ACCOUNT}:cluster/{CLUSTER}", "createdAt": base.stamp(t),
                       "eventName": name, "eventType": "INFO"}}


def job_every(start: datetime, every: timedelta, count: int, family: str = "nightly-report",
              first_task: int = 1000) -> list[dict]:
    """``count`` failed runs of standalone job ``family``, one STOPPED event each (exit 1), ``every`` apart."""
    return [base.task_event(first_task + i, start + every * i + timedelta(seconds=30), f"family:{family}", "STOPPED",
                            5, CRASH) for i in range(count)]


def write(folder: Path, events: list[dict], services: list[str], settings: str, expected: dict,
          tags: dict[str, dict[str, str]] | None = None) -> None:
    events.sort(key=lambda e: e["time"])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "events.jsonl").write_text("".join(json.dumps(e, separators=(",", ":")) + "\n" for e in events))
    fleet = {"account": ACCOUNT, "region": REGION, "clusters": [{"name": CLUSTER, "services": [
        {"name": s, "desiredCount": 2, "targetGroups": [], "tags": (tags or {}).get(s, {})} for s in services]}]}
    (folder / "fleet.json").write_text(json.dumps(fleet, indent=2) + "\n")
    (folder / "settings.env").write_text(settings)
    (folder / "expected.json").write_text(json.dumps(expected, indent=2) + "\n")


def main() -> None:
    events: list[dict] = []
    n = 0
    for i in range(5):  # api (opted out by tag): 5 crashes 3 minutes apart, then steady at 09:45
        n += 1
        events += base.lifecycle(n, T0 + timedelta(minutes=3 * i), "service:api", CRASH, 90)
    events.append(service_action(1, T0 + timedelta(minutes=45), "api", "SERVICE_STEADY_STATE"))
    for i in range(5):  # worker: 5 crashes 2 minutes apart from 09:20
        n += 1
        events += base.lifecycle(n, T0 + timedelta(minutes=20 + 2 * i), "service:worker", CRASH, 60)
    events += job_every(T0 + timedelta(minutes=60), timedelta(minutes=5), 13)  # 10:00 to 11:00
    expected = {
        "why": "one alert of each kind: alert-only then its recovery (SERVICE_STEADY_STATE), a scale-down, and a "
               "standalone job failing every 5 minutes that alerts once and sends one summary per window",
        "scaled_to_zero": [f"{CLUSTER}/worker"],
        "desired_counts": {f"{CLUSTER}/{s}": (0 if s == "worker" else 2) for s in SERVICES},
        "decisions": [
            {"cluster": CLUSTER, "service": "api", "action": "alert_only", "reason": "opted_out"},
            {"cluster": CLUSTER, "service": "worker", "action": "scale_to_zero", "reason": "crash_loop"},
        ],
        "decision_count": 2,
    }
    write(OUT, events, SERVICES, SETTINGS, expected, {"api": {"ecs-guardrail:mode": "alert-only"}})


if __name__ == "__main__":
    main()
