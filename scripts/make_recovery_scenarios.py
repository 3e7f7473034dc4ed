"""Write the three RECOVERY=probe scenarios of issue 21 under events/scenarios/ (events, fleet, CSV, settings).

Run from the repository root: ``python scripts/make_recovery_scenarios.py``. Deterministic (no clock,
no randomness): task ids are derived from the time. expected.json is written by hand from the spec.

- ``probe-bad-image-fixed``: a bad image crash-loops dev/checkout from 10:00; the operator's new
  revision (SERVICE_DEPLOYMENT_IN_PROGRESS) lands 40 minutes after the scale-down; no crash after it;
- ``probe-dependency-outage``: a dependency is down 10:00-12:00; every task crashes until it is back;
- ``probe-never-recovers``: the service crashes for 4 hours, whatever the probes find (a short probe
  schedule: 5 minutes doubling to 40).
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

ACCOUNT, REGION, CLUSTER = "111122223333", "eu-west-1", "dev"
SERVICES = ["checkout", "catalog", "search", "mailer", "billing", "reports"]
ROOT = Path(__file__).resolve().parent.parent / "events" / "scenarios"


def _id(*parts: str) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:32]


def iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def crash(service: str, t: datetime, revision: int) -> dict:
    tid = _id(service, iso(t))
    task = f"arn:aws:ecs:{REGION}:{ACCOUNT}:task/{CLUSTER}/{tid}"
    return {"version": "0", "id": _id("event", service, iso(t)), "detail-type": "ECS Task State Change",
            "source": "aws.ecs", "account": ACCOUNT, "time": iso(t), "region": REGION, "resources": [task],
            "detail": {"clusterArn": f"arn:aws:ecs:{REGION}:{ACCOUNT}:cluster/{CLUSTER}",
                       "taskArn": task, "group": f"service:{service}", "lastStatus": "STOPPED",
                       "desiredStatus": "STOPPED", "availabilityZone": f"{REGION}a", "launchType": "FARGATE",
                       "taskDefinitionArn": f"arn:aws:ecs:{REGION}:{ACCOUNT}:task-definition/{service}:{revision}",
                       "containers": [{"name": "app", "lastStatus": "STOPPED", "exitCode": 1,
                                       "taskArn": task}],
                       "stopCode": "EssentialContainerExited",
                       "stoppedReason": "Essential container in task exited",
                       "createdAt": iso(t - timedelta(seconds=50)), "startedAt": iso(t - timedelta(seconds=30)),
                       "stoppedAt": iso(t), "updatedAt": iso(t), "version": 5}}


def deployment(service: str, t: datetime, name: str) -> dict:
    return {"version": "0", "id": _id("deploy", service, iso(t), name), "detail-type": "ECS Deployment State Change",
            "source": "aws.ecs", "account": ACCOUNT, "time": iso(t), "region": REGION,
            "resources": [f"arn:aws:ecs:{REGION}:{ACCOUNT}:service/{CLUSTER}/{service}"],
            "detail": {"eventType": "INFO", "eventName": name,
                       "deploymentId": f"ecs-svc/{_id(service, 'fix')[:19]}",
                       "updatedAt": iso(t),
                       "reason": f"ECS deployment ecs-svc/{_id(service, 'fix')[:19]} in progress."}}


def write(name: str, events: list[dict], start: datetime, end: datetime, down: list[tuple[datetime, datetime]],
          settings: dict[str, str]) -> None:
    folder = ROOT / name
    folder.mkdir(parents=True, exist_ok=True)
    events.sort(key=lambda e: e["time"])
    (folder / "events.jsonl").write_text("".join(json.dumps(e, separators=(",", ":")) + "\n" for e in events))
    fleet = {"account": ACCOUNT, "region": REGION, "clusters": [
        {"name": CLUSTER, "services": [{"name": s, "desiredCount": 2, "tags": {},
                                        "targetGroups": [f"{s}-dev"] if s == "checkout" else []}
                                       for s in SERVICES]},
        {"name": "production", "services": [{"name": "checkout", "desiredCount": 3, "targetGroups": [], "tags": {}}]}]}
    (folder / "fleet.json").write_text(json.dumps(fleet, indent=2) + "\n")
    rows = ["time,target_group,healthy_host_count"]
    t = start
    while t <= end:
        bad = any(a <= t < b for a, b in down)
        rows.append(f"{iso(t)},checkout-dev,{0 if bad else 2}")
        t += timedelta(minutes=1)
    (folder / "healthy_hosts.csv").write_text("\n".join(rows) + "\n")
    base = {"ALERT_ONLY_CLUSTERS": "production", "CRASH_THRESHOLD": "5", "CRASH_WINDOW_MINUTES": "30",
            "MAX_ACTION_FRACTION": "0.2", "MIN_ACTIONS_ALLOWED": "1", "FLEET_SIGNAL_MIN_FAILURES": "2"}
    (folder / "settings.env").write_text("".join(f"{k}={v}\n" for k, v in {**base, **settings}.items()))


def main() -> None:
    day = datetime(2026, 3, 4, tzinfo=UTC)
    t0 = day.replace(hour=10)
    # 1. bad image, fixed by revision 8 at 10:48 (40 minutes after the 10:08 scale-down)
    fix = t0 + timedelta(minutes=48)
    ev = [crash("checkout", t0 + timedelta(minutes=m), 7) for m in range(0, 48, 2)]
    ev.append(deployment("checkout", fix, "SERVICE_DEPLOYMENT_IN_PROGRESS"))
    write("probe-bad-image-fixed", ev, t0 - timedelta(minutes=5), t0 + timedelta(minutes=90),
          [(t0, fix + timedelta(minutes=2))], {"RECOVERY": "probe"})
    # 2. a dependency down for two hours: every task crashes 10:00-11:59
    back = t0 + timedelta(hours=2)
    ev = [crash("checkout", t0 + timedelta(minutes=m), 7) for m in range(0, 120, 2)]
    write("probe-dependency-outage", ev, t0 - timedelta(minutes=5), t0 + timedelta(hours=4, minutes=30),
          [(t0, back)], {"RECOVERY": "probe"})
    # 3. never recovers: crashes every 3 minutes for 4 hours (a short schedule: 5, 10, 20, then 40 min)
    ev = [crash("checkout", t0 + timedelta(minutes=m), 7) for m in range(0, 4 * 60, 3)]
    write("probe-never-recovers", ev, t0 - timedelta(minutes=5), t0 + timedelta(hours=4),
          [(t0, t0 + timedelta(hours=5))], {"RECOVERY": "probe", "PROBE_DELAY_MINUTES": "5",
                                            "PROBE_MAX_DELAY_MINUTES": "40", "PROBE_PASS_MINUTES": "5"})


if __name__ == "__main__":
    main()
