#!/usr/bin/env python3
"""Writes events/scenarios/alerts-tour: one of each alert kind the README shows, from real code
(``ecs-guardrail replay events/scenarios/alerts-tour --alerts-out alerts.jsonl``). Deterministic.

- ``api`` (tagged alert-only) crash-loops: an ``alert_only`` alert; ECS later reports
  ``SERVICE_STEADY_STATE`` for it: a ``recovery`` alert with the episode's length;
- ``worker`` crash-loops: a ``scale_down`` alert with the undo command;
- ``worker`` runs ``worker:14``, deployed at 09:19 (``SERVICE_DEPLOYMENT_IN_PROGRESS``), and logs to
  ``/ecs/worker`` (``logGroup``): its alert quotes the crashed container's last lines from
  ``logs.jsonl`` (a password, an access key id and a URL's credentials masked, a ``<!channel>`` made
  inert) and names the change that started the loop (issue 35);
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


WORKER_TASK_DEFINITION = f"arn:aws:ecs:{REGION}:{ACCOUNT}:task-definition/worker:14"


def deployment_started(t: datetime, service: str, did: str) -> dict:
    """An ``ECS Deployment State Change`` SERVICE_DEPLOYMENT_IN_PROGRESS of ``service``."""
    return {"version": "0", "id": f"19190000-0000-4000-9000-{int(t.timestamp()):012d}",
            "detail-type": "ECS Deployment State Change", "source": "aws.ecs", "account": ACCOUNT,
            "time": base.stamp(t), "region": REGION,
            "resources": [f"arn:aws:ecs:{REGION}:{ACCOUNT}:service/{CLUSTER}/{service}"],
            "detail": {"eventType": "INFO", "eventName": "SERVICE_DEPLOYMENT_IN_PROGRESS", "deploymentId": did,
                       "updatedAt": base.stamp(t), "reason": f"ECS deployment {did} in progress."}}


def worker_task(events: list[dict]) -> list[dict]:
    """The worker's task events as ``worker:14`` writes them: its own task definition, container ``app``."""
    for e in events:
        e["detail"]["taskDefinitionArn"] = WORKER_TASK_DEFINITION
        for c in e["detail"].get("containers") or []:
            c["name"] = "app"
    return events


def worker_logs(n: int, stopped: datetime) -> list[dict]:
    """What the crashed worker task ``n`` wrote before it stopped at ``stopped`` (its STOPPED event)."""
    stream = f"ecs/app/{n:032x}"
    lines = [
        (80, "INFO starting worker 2026.6.2 (build 8f3c2e1)"),
        (79, "INFO config: queue=orders db_password=hunter2 AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE"),
        (78, "INFO connecting to postgres://orders:s3cr3t@db.internal:5432/orders"),
        (77, "WARN <!channel> payments schema v14 expected, found v13 (see <https://evil.example|the fix>)"),
        (76, "ERROR migration check failed: column orders.currency_code does not exist"),
        (75, "Traceback (most recent call last):"),
        (75, '  File "/app/worker/main.py", line 42, in <module>'),
        (75, "psycopg.errors.UndefinedColumn: column orders.currency_code does not exist"),
        (74, "INFO worker exiting with status 1"),
    ]
    return [{"time": base.stamp(stopped - timedelta(seconds=back)), "logStream": stream, "message": text}
            for back, text in lines]


def write(folder: Path, events: list[dict], services: list[str], settings: str, expected: dict,
          tags: dict[str, dict[str, str]] | None = None, log_groups: dict[str, str] | None = None,
          logs: list[dict] | None = None) -> None:
    events.sort(key=lambda e: e["time"])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "events.jsonl").write_text("".join(json.dumps(e, separators=(",", ":")) + "\n" for e in events))
    fleet = {"account": ACCOUNT, "region": REGION, "clusters": [{"name": CLUSTER, "services": [
        {"name": s, "desiredCount": 2, "targetGroups": [], "tags": (tags or {}).get(s, {}),
         **({"logGroup": log_groups[s]} if s in (log_groups or {}) else {})} for s in services]}]}
    (folder / "fleet.json").write_text(json.dumps(fleet, indent=2) + "\n")
    if logs:
        (folder / "logs.jsonl").write_text("".join(json.dumps(x, separators=(",", ":")) + "\n"
                                                   for x in sorted(logs, key=lambda x: (x["logStream"], x["time"]))))
    (folder / "settings.env").write_text(settings)
    (folder / "expected.json").write_text(json.dumps(expected, indent=2) + "\n")


def main() -> None:
    events: list[dict] = []
    n = 0
    for i in range(5):  # api (opted out by tag): 5 crashes 3 minutes apart, then steady at 09:45
        n += 1
        events += base.lifecycle(n, T0 + timedelta(minutes=3 * i), "service:api", CRASH, 90)
    events.append(service_action(1, T0 + timedelta(minutes=45), "api", "SERVICE_STEADY_STATE"))
    events.append(deployment_started(T0 + timedelta(minutes=19), "worker", "ecs-svc/1419000000000000014"))
    logs: list[dict] = []
    for i in range(5):  # worker: 5 crashes 2 minutes apart from 09:20, each with its last lines in logs.jsonl
        n += 1
        events += worker_task(base.lifecycle(n, T0 + timedelta(minutes=20 + 2 * i), "service:worker", CRASH, 60))
        logs += worker_logs(n, T0 + timedelta(minutes=20 + 2 * i, seconds=90))
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
    write(OUT, events, SERVICES, SETTINGS, expected, {"api": {"ecs-guardrail:mode": "alert-only"}},
          {"worker": "/ecs/worker"}, logs)


if __name__ == "__main__":
    main()
