#!/usr/bin/env python3
"""Writes events/scenarios/dev-opt-out-impaired: an opted-out service looping, ECS reporting
SERVICE_TASK_START_IMPAIRED for a slow loop, and a failed standalone job. Deterministic."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "events" / "scenarios" / "dev-opt-out-impaired"
ACCOUNT, REGION, CLUSTER = "111122223333", "eu-west-1", "development"
SAMPLE = json.loads((ROOT / "events/ecs/task-fargate-stopped-essential-oom-exit137.derived.json").read_text())
T0 = datetime(2025, 9, 2, 9, 0, tzinfo=UTC)
SERVICES = ["api", "worker", "web", "auth", "mail", "search", "cart", "media", "feeds", "admin", "billing", "maps"]


def stamp(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def task_event(n: int, t: datetime, group: str, status: str, version: int, stop: dict | None) -> dict:
    e = copy.deepcopy(SAMPLE)
    task = f"arn:aws:ecs:{REGION}:{ACCOUNT}:task/{CLUSTER}/{n:032x}"
    e.update(id=f"5c0e0000-0000-4000-8000-{n:08d}{version:04d}", time=stamp(t), region=REGION, account=ACCOUNT,
             resources=[task])
    d = e["detail"]
    d.update(clusterArn=f"arn:aws:ecs:{REGION}:{ACCOUNT}:cluster/{CLUSTER}", taskArn=task, group=group,
             lastStatus=status, desiredStatus="STOPPED" if stop else "RUNNING", version=version,
             availabilityZone=f"{REGION}{'abc'[n % 3]}")
    for key in ("stopCode", "stoppedReason", "stoppingAt", "stoppedAt", "executionStoppedAt"):
        d.pop(key, None)
    for c in d["containers"]:
        c.update(taskArn=task, lastStatus=status)
        c.pop("exitCode", None)
        c.pop("reason", None)
    if stop:
        d.update(stopCode=stop["code"], stoppedReason=stop["reason"], stoppedAt=stamp(t))
        for c in d["containers"]:
            c["exitCode"] = stop["exit"]
            if stop.get("container_reason"):
                c["reason"] = stop["container_reason"]
    return e


def lifecycle(n: int, start: datetime, group: str, stop: dict, runtime_s: int) -> list[dict]:
    end = start + timedelta(seconds=runtime_s)
    return [task_event(n, start, group, "PENDING", 2, None),
            task_event(n, start + timedelta(seconds=20), group, "RUNNING", 3, None),
            task_event(n, end, group, "DEPROVISIONING", 4, stop),
            task_event(n, end + timedelta(seconds=30), group, "STOPPED", 5, stop)]


def main() -> None:
    events: list[dict] = []
    crash = {"code": "EssentialContainerExited", "reason": "Essential container in task exited", "exit": 1}
    n = 0
    # api (opted out by tag) crash-loops: 6 crashes 3 minutes apart
    for i in range(6):
        n += 1
        events += lifecycle(n, T0 + timedelta(minutes=3 * i), "service:api", crash, 90)
    # worker fails to start twice, then ECS throttles and reports SERVICE_TASK_START_IMPAIRED
    pull = {"code": "TaskFailedToStart",
            "reason": "ResourceInitializationError: unable to pull secrets or registry auth",
            "exit": None}
    for i in range(2):
        n += 1
        events += lifecycle(n, T0 + timedelta(minutes=40 + 12 * i), "service:worker", pull, 10)
    impaired_at = T0 + timedelta(minutes=66)
    events.append({
        "version": "0", "id": "7d1c0000-0000-4000-8000-000000000001", "detail-type": "ECS Service Action",
        "source": "aws.ecs", "account": ACCOUNT, "time": stamp(impaired_at), "region": REGION,
        "resources": [f"arn:aws:ecs:{REGION}:{ACCOUNT}:service/{CLUSTER}/worker"],
        "detail": {"clusterArn": f"arn:aws:ecs:{REGION}:{ACCOUNT}:cluster/{CLUSTER}",
                   "createdAt": stamp(impaired_at), "eventName": "SERVICE_TASK_START_IMPAIRED", "eventType": "WARN"}})
    # a nightly standalone job fails (never acted on), another finishes normally
    n += 1
    events += lifecycle(n, T0 + timedelta(minutes=70), "family:nightly-report", crash, 300)
    n += 1
    events += lifecycle(n, T0 + timedelta(minutes=72), "family:nightly-export",
                        {"code": "EssentialContainerExited", "reason": "Essential container in task exited", "exit": 0},
                        200)
    events.sort(key=lambda e: e["time"])
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "events.jsonl").write_text("".join(json.dumps(e, separators=(",", ":")) + "\n" for e in events))
    fleet = {"account": ACCOUNT, "region": REGION, "clusters": [{"name": CLUSTER, "services": [
        {"name": s, "desiredCount": 2, "targetGroups": [],
         "tags": {"ecs-guardrail:mode": "alert-only"} if s == "api" else {}} for s in SERVICES]}]}
    (OUT / "fleet.json").write_text(json.dumps(fleet, indent=2) + "\n")
    (OUT / "settings.env").write_text("ALERT_ONLY_CLUSTERS=none\nCRASH_THRESHOLD=5\nCRASH_WINDOW_MINUTES=30\n"
                                      "MAX_ACTION_FRACTION=0.2\nMIN_ACTIONS_ALLOWED=1\nFLEET_SIGNAL_MIN_FAILURES=2\n")
    expected = {
        "why": "an opted-out service only alerts; ECS's own SERVICE_TASK_START_IMPAIRED stops a slow start-up loop; "
               "standalone jobs are never acted on",
        "scaled_to_zero": [f"{CLUSTER}/worker"],
        "desired_counts": {f"{CLUSTER}/{s}": (0 if s == "worker" else 2) for s in SERVICES},
        "decisions": [
            {"cluster": CLUSTER, "service": "api", "action": "alert_only", "reason": "opted_out"},
            {"cluster": CLUSTER, "service": "worker", "action": "scale_to_zero", "reason": "crash_loop"},
        ],
    }
    (OUT / "expected.json").write_text(json.dumps(expected, indent=2) + "\n")


if __name__ == "__main__":
    main()
