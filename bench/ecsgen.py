"""Synthetic ECS fleets and EventBridge event streams, shaped like the real samples in ``events/ecs/``.

Shared by the property/fault tests (``tests/``) and the benchmark (``bench/run.py``). Pure data: no AWS.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ACCOUNT = "111122223333"
REGION = "eu-west-1"
OPT_OUT = {"ecs-guardrail:mode": "alert-only"}
T0 = datetime(2025, 8, 21, 12, 0, 0, tzinfo=UTC)

#: stop kinds the generator knows; ``counts`` says whether the watchdog may count it as a crash
KINDS = ("crash_exit", "crash_start", "spot", "deploy", "elb", "user")
CRASH_KINDS = frozenset({"crash_exit", "crash_start"})


def iso(t: datetime, frac_digits: int = 0) -> str:
    base = t.strftime("%Y-%m-%dT%H:%M:%S")
    if frac_digits:
        base += "." + f"{t.microsecond:06d}"[:frac_digits]
    return base + "Z"


def fleet(clusters: dict[str, list[tuple[str, int, dict[str, str]]]]) -> dict[str, Any]:
    """``{"cluster": [(service, desired, tags), ...]}`` -> a ``fleet.json`` object."""
    return {
        "account": ACCOUNT,
        "region": REGION,
        "clusters": [
            {"name": c, "services": [{"name": s, "desiredCount": d, "targetGroups": [], "tags": dict(tags)}
                                     for s, d, tags in svcs]}
            for c, svcs in clusters.items()
        ],
    }


def task_arn(cluster: str, task_id: str, *, old_form: bool = False, partition: str = "aws") -> str:
    middle = "" if old_form else f"{cluster}/"
    return f"arn:{partition}:ecs:{REGION}:{ACCOUNT}:task/{middle}{task_id}"


def task_event(cluster: str, service: str | None, task_id: str, kind: str, t: datetime, *,
               version: int = 6, last_status: str = "STOPPED", desired_status: str = "STOPPED",
               event_id: str | None = None, group: str | None = None) -> dict[str, Any]:
    """One ``ECS Task State Change``. ``kind`` is one of :data:`KINDS` or ``"running"`` (no stop)."""
    arn = task_arn(cluster, task_id)
    container: dict[str, Any] = {"name": "app", "lastStatus": last_status,
                                 "image": f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/{service}:1",
                                 "taskArn": arn}
    detail: dict[str, Any] = {
        "clusterArn": f"arn:aws:ecs:{REGION}:{ACCOUNT}:cluster/{cluster}",
        "taskArn": arn,
        "group": group if group is not None else f"service:{service}",
        "lastStatus": last_status,
        "desiredStatus": desired_status,
        "version": version,
        "launchType": "FARGATE",
        "availabilityZone": f"{REGION}{'abc'[int(task_id[-1], 16) % 3]}",
        "taskDefinitionArn": f"arn:aws:ecs:{REGION}:{ACCOUNT}:task-definition/{cluster}-{service}:1",
        "createdAt": iso(t - timedelta(minutes=2), 3),
        "containers": [container],
    }
    if kind == "crash_exit":
        detail.update(stopCode="EssentialContainerExited", stoppedReason="Essential container in task exited")
        container.update(exitCode=1)
    elif kind == "crash_start":
        detail.update(stopCode="TaskFailedToStart",
                      stoppedReason="CannotPullContainerError: pull image manifest has been retried 1 time(s)")
    elif kind == "spot":
        detail.update(stopCode="SpotInterruption", stoppedReason="Your Spot Task was interrupted.",
                      capacityProviderName="FARGATE_SPOT", launchType=None)
        detail.pop("launchType")
        container.update(exitCode=143)
    elif kind == "deploy":
        detail.update(stopCode="ServiceSchedulerInitiated",
                      stoppedReason="Scaling activity initiated by (deployment ecs-svc/8646900195280463695)")
        container.update(exitCode=137)
    elif kind == "elb":
        detail.update(stopCode="ServiceSchedulerInitiated",
                      stoppedReason=f"Task failed ELB health checks in (target-group arn:aws:elasticloadbalancing:"
                                    f"{REGION}:{ACCOUNT}:targetgroup/{service}/ccb1c7ee670051a0)")
        container.update(exitCode=143)
    elif kind == "user":
        detail.update(stopCode="UserInitiated", stoppedReason="Task stopped by user")
        container.update(exitCode=0)
    elif kind == "running":
        detail.update(lastStatus="RUNNING", desiredStatus="RUNNING", startedAt=iso(t, 3))
        container.update(lastStatus="RUNNING")
    else:
        raise ValueError(kind)
    if kind != "running":
        detail["stoppedAt"] = iso(t, 3)
    return {
        "version": "0",
        "id": event_id or str(uuid.uuid5(uuid.NAMESPACE_URL, f"{arn}#{version}#{last_status}")),
        "detail-type": "ECS Task State Change",
        "source": "aws.ecs",
        "account": ACCOUNT,
        "time": iso(t),
        "region": REGION,
        "resources": [arn],
        "detail": detail,
    }


def task_stop_events(cluster: str, service: str, task_id: str, kind: str, t: datetime,
                     *, with_notice: bool = True) -> list[dict[str, Any]]:
    """A stopping task as ECS reports it: the notice (desired STOPPED, version 5) then STOPPED (version 6)."""
    out = []
    if with_notice:
        out.append(task_event(cluster, service, task_id, kind, t - timedelta(seconds=5), version=5,
                              last_status="RUNNING" if kind != "crash_start" else "PENDING"))
    out.append(task_event(cluster, service, task_id, kind, t, version=6))
    return out


def impaired_event(cluster: str, service: str, t: datetime) -> dict[str, Any]:
    return {
        "version": "0",
        "id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"impaired#{cluster}#{service}#{t.isoformat()}")),
        "detail-type": "ECS Service Action",
        "source": "aws.ecs",
        "account": ACCOUNT,
        "time": iso(t),
        "region": REGION,
        "resources": [f"arn:aws:ecs:{REGION}:{ACCOUNT}:service/{cluster}/{service}"],
        "detail": {"clusterArn": f"arn:aws:ecs:{REGION}:{ACCOUNT}:cluster/{cluster}",
                   "createdAt": iso(t, 3), "eventName": "SERVICE_TASK_START_IMPAIRED", "eventType": "WARN"},
    }


def write_scenario(folder: Path, fleet_obj: dict[str, Any], events: list[dict[str, Any]],
                   settings: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "fleet.json").write_text(json.dumps(fleet_obj))
    (folder / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    (folder / "settings.env").write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
    return folder


def fleet_day(folder: Path, events: int = 100_000, services: int = 200, clusters: int = 4, seed: int = 11,
              target_groups: int = 20, hours: int = 24) -> Path:
    """A generated fleet-day scenario: ``events`` task events over ``hours`` (default 24) across
    ``clusters`` clusters of ``services`` services in all (lifecycle noise, Spot, deployments, ELB kills
    and a few crash loops, 3% redelivered), and a ``healthy_hosts.csv`` minute by minute for the first
    ``target_groups`` services (2 healthy hosts, 0 while their service crash-loops). Returns the folder."""
    import random

    rnd = random.Random(seed)
    names = [(f"c{i % clusters}", f"svc{i:04d}") for i in range(services)]
    with_tg = set(names[:target_groups])
    loopers = set(names[: max(1, services // 50)])
    fleet_obj = fleet({c: [(s, 2, {}) for cc, s in names if cc == c] for c in sorted({c for c, _ in names})})
    for c in fleet_obj["clusters"]:
        for s in c["services"]:
            if (c["name"], s["name"]) in with_tg:
                s["targetGroups"] = [f"tg-{s['name']}"]
    out: list[dict[str, Any]] = []
    minutes = hours * 60
    loop_at = {k: T0 + timedelta(minutes=rnd.randrange(minutes // 24, minutes * 23 // 24)) for k in loopers}
    step = timedelta(hours=hours) / events
    n = 0
    while len(out) < events:
        n += 1
        t = T0 + step * len(out)
        cluster, svc = rnd.choice(names)
        tid = f"{n:032x}"
        if (cluster, svc) in loopers and loop_at[(cluster, svc)] <= t < loop_at[(cluster, svc)] + timedelta(minutes=20):
            kind = "crash_exit"
        else:
            r = rnd.random()
            kind = "running" if r < 0.8 else rnd.choice(["spot", "deploy", "elb", "user"])
        out.append(task_event(cluster, svc, tid, kind, t, **({"version": 3} if kind == "running" else {})))
        if rnd.random() < 0.03:
            out.append(out[-1])
    write_scenario(folder, fleet_obj, out[:events], {"ALERT_ONLY_CLUSTERS": "c0"})
    rows = ["time,target_group,healthy_host_count"]
    for m in range(minutes):
        t = T0 + timedelta(minutes=m)
        for cluster, svc in sorted(with_tg):
            start = loop_at.get((cluster, svc))
            down = start is not None and start <= t
            rows.append(f"{iso(t)},tg-{svc},{0 if down else 2}")
    (folder / "healthy_hosts.csv").write_text("\n".join(rows) + "\n")
    return folder
