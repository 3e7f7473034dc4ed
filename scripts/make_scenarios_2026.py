#!/usr/bin/env python3
"""Writes the bundled scenarios of issue 19 (the ECS of 2026) under events/scenarios/. Deterministic.

Every event is built from a real event shape in events/ecs/ (the task, deployment and service-action
examples), with the fields ECS-EVENTS.md describes; expected outcomes are reasoned from ARCHITECTURE.md:

- ``blue-green-bake-failing-green``: a BLUE_GREEN service's green revision crash-loops during its bake:
  ``deployment_in_progress`` (a scale to 0 would kill the blue tasks the rollback needs); a rolling
  service without a circuit breaker that loops later in the same cluster is scaled to 0 (nothing else
  will stop it).
- ``codedeploy-controlled``: a CODE_DEPLOY service crash-loops: its deployments are CodeDeploy's, the
  watchdog cannot see their state (no ECS deployment events, task sets it cannot read here), so it only
  alerts; an ECS-controlled service looping later is scaled to 0.
- ``restart-policy-loop``: a container restart policy restarts a container in a loop inside running
  tasks: no task event at all, Container Insights' RestartCount rises; one ``restart_loop`` decision,
  alert-only, never acted on.
- ``fargate-maintenance-wave``: Fargate task maintenance, AZ rebalancing and ECS Managed Instances
  draining retire tasks across two clusters (some STOPPED events delivered before their notice): never
  crashes, no decision.
"""

from __future__ import annotations

import copy
import csv
import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "events" / "scenarios"
ACCOUNT, REGION = "111122223333", "eu-west-1"
TASK = json.loads((ROOT / "events/ecs/task-fargate-stopped-essential-oom-exit137.derived.json").read_text())
DEPLOYMENT = json.loads((ROOT / "events/ecs/deployment-in-progress.docs.json").read_text())
STEADY = json.loads((ROOT / "events/ecs/service-action-steady-state.docs.json").read_text())
SETTINGS = ("ALERT_ONLY_CLUSTERS=none\nCRASH_THRESHOLD=5\nCRASH_WINDOW_MINUTES=30\nMAX_ACTION_FRACTION=0.2\n"
            "MIN_ACTIONS_ALLOWED=1\nFLEET_SIGNAL_MIN_FAILURES=2\n")
CRASH = {"code": "EssentialContainerExited", "reason": "Essential container in task exited", "exit": 1}
_ids = iter(range(1, 1_000_000))


def stamp(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def arn(kind: str, rest: str) -> str:
    return f"arn:aws:ecs:{REGION}:{ACCOUNT}:{kind}/{rest}"


def task_event(cluster: str, n: int, t: datetime, service: str, status: str, version: int, *,
               family: str | None = None, revision: int = 1, started_by: str | None = None,
               stop: dict[str, Any] | None = None, desired: str | None = None, launch: str = "FARGATE",
               capacity: str | None = "FARGATE", az: str | None = None) -> dict[str, Any]:
    """One ``ECS Task State Change`` of task ``n`` (the real event's shape, fields replaced)."""
    e = copy.deepcopy(TASK)
    task = arn("task", f"{cluster}/{n:032x}")
    e.update(id=f"19190000-0000-4000-8000-{next(_ids):012d}", time=stamp(t), region=REGION, account=ACCOUNT,
             resources=[task])
    d = e["detail"]
    d.update(clusterArn=arn("cluster", cluster), taskArn=task, group=f"service:{service}", lastStatus=status,
             desiredStatus=desired or ("STOPPED" if stop else "RUNNING"), version=version, launchType=launch,
             availabilityZone=az or f"{REGION}{'abc'[n % 3]}",
             taskDefinitionArn=arn("task-definition", f"{family or service}:{revision}"),
             startedBy=started_by or "ecs-svc/1919191919191919191")
    if capacity:
        d["capacityProviderName"] = capacity
    else:
        d.pop("capacityProviderName", None)
    for key in ("stopCode", "stoppedReason", "stoppingAt", "stoppedAt", "executionStoppedAt"):
        d.pop(key, None)
    for c in d["containers"]:
        c.update(taskArn=task, lastStatus=status, name="app",
                 image=f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/{family or service}:r{revision}")
        c.pop("exitCode", None)
        c.pop("reason", None)
    d["overrides"] = {"containerOverrides": [{"name": "app"}]}
    if stop:
        d.update(stopCode=stop["code"], stoppedReason=stop["reason"], stoppingAt=stamp(t))
        if status == "STOPPED":
            d["stoppedAt"] = stamp(t)
            for c in d["containers"]:
                c["exitCode"] = stop["exit"]
    return e


def crash_lifecycle(cluster: str, n: int, start: datetime, service: str, runtime_s: int = 60,
                    **kw: Any) -> list[dict[str, Any]]:
    end = start + timedelta(seconds=runtime_s)
    return [task_event(cluster, n, start, service, "PENDING", 2, **kw),
            task_event(cluster, n, start + timedelta(seconds=20), service, "RUNNING", 3, **kw),
            task_event(cluster, n, end, service, "DEPROVISIONING", 4, stop=CRASH, **kw),
            task_event(cluster, n, end + timedelta(seconds=30), service, "STOPPED", 5, stop=CRASH, **kw)]


def deployment_event(cluster: str, service: str, t: datetime, name: str, deployment: str, reason: str,
                     event_type: str = "INFO") -> dict[str, Any]:
    e = copy.deepcopy(DEPLOYMENT)
    e.update(id=f"19190000-0000-4000-9000-{next(_ids):012d}", time=stamp(t), region=REGION, account=ACCOUNT,
             resources=[arn("service", f"{cluster}/{service}")])
    e["detail"].update(eventType=event_type, eventName=f"SERVICE_DEPLOYMENT_{name}", deploymentId=deployment,
                       updatedAt=stamp(t), reason=reason)
    return e


def steady_event(cluster: str, service: str, t: datetime) -> dict[str, Any]:
    e = copy.deepcopy(STEADY)
    e.update(id=f"19190000-0000-4000-a000-{next(_ids):012d}", time=stamp(t), region=REGION, account=ACCOUNT,
             resources=[arn("service", f"{cluster}/{service}")])
    e["detail"].update(clusterArn=arn("cluster", cluster), createdAt=stamp(t))
    return e


def write(name: str, events: list[dict[str, Any]], fleet: dict[str, Any], expected: dict[str, Any],
          extra: dict[str, str] | None = None) -> None:
    folder = OUT / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "events.jsonl").write_text("".join(json.dumps(e, separators=(",", ":")) + "\n" for e in events))
    (folder / "fleet.json").write_text(json.dumps(fleet, indent=2) + "\n")
    (folder / "settings.env").write_text(SETTINGS)
    (folder / "expected.json").write_text(json.dumps(expected, indent=2) + "\n")
    for file, text in (extra or {}).items():
        (folder / file).write_text(text)


def counts(fleet: dict[str, Any], zero: set[str] = frozenset()) -> dict[str, int]:  # type: ignore[assignment]
    return {f"{c['name']}/{s['name']}": (0 if f"{c['name']}/{s['name']}" in zero else s.get("desiredCount", 1))
            for c in fleet["clusters"] for s in c["services"]}


PLAIN = ["cart", "search", "catalog", "payments", "profile", "reviews", "media", "mail", "admin"]


def blue_green() -> None:
    cluster, t0 = "shop", datetime(2026, 3, 4, 10, 0, tzinfo=UTC)
    blue, green = "ecs-svc/4401000000000000001", "ecs-svc/4401000000000000002"
    fleet = {"account": ACCOUNT, "region": REGION, "clusters": [{"name": cluster, "services": [
        {"name": "checkout", "desiredCount": 4, "taskDefinitionFamily": "checkout-api",
         "deploymentStrategy": {"strategy": "BLUE_GREEN", "bakeTimeInMinutes": 15}},
        *({"name": s, "desiredCount": 2} for s in PLAIN)]}]}
    events = [deployment_event(cluster, "checkout", t0, "IN_PROGRESS", green, f"ECS deployment {green} in progress.")]
    # the green revision (checkout-api:8) crash-loops while ECS bakes it: the blue tasks (rev 7) keep serving
    for i in range(6):
        events += crash_lifecycle(cluster, 100 + i, t0 + timedelta(minutes=2 + 2.5 * i), "checkout",
                                  family="checkout-api", revision=8, started_by=green)
    failed = t0 + timedelta(minutes=19)
    events += [
        deployment_event(cluster, "checkout", failed, "FAILED", green,
                         "ECS deployment circuit breaker: tasks failed to start.", "ERROR"),
        deployment_event(cluster, "checkout", failed + timedelta(seconds=5), "IN_PROGRESS", blue,
                         f"ECS deployment circuit breaker: rolling back to deploymentId {blue}."),
        deployment_event(cluster, "checkout", failed + timedelta(minutes=4), "COMPLETED", blue,
                         f"ECS deployment {blue} completed."),
    ]
    # an hour later a rolling service without a circuit breaker loops: nothing else will stop it
    for i in range(6):
        events += crash_lifecycle(cluster, 200 + i, t0 + timedelta(minutes=70 + 3 * i), "search", revision=3)
    events.sort(key=lambda e: e["time"])
    expected = {
        "why": "a BLUE_GREEN deployment whose green revision crash-loops during its bake is ECS's to roll back: "
               "deployment_in_progress, never a scale to 0 (it would kill the blue tasks the rollback needs); "
               "a rolling service without a circuit breaker that loops later is the watchdog's to stop",
        "scaled_to_zero": [f"{cluster}/search"],
        "desired_counts": counts(fleet, {f"{cluster}/search"}),
        "decisions": [
            {"cluster": cluster, "service": "checkout", "action": "alert_only", "reason": "deployment_in_progress"},
            {"cluster": cluster, "service": "search", "action": "scale_to_zero", "reason": "crash_loop"},
        ],
        "decision_count": 2,
    }
    write("blue-green-bake-failing-green", events, fleet, expected)


def code_deploy() -> None:
    cluster, t0 = "storefront", datetime(2026, 3, 5, 14, 0, tzinfo=UTC)
    fleet = {"account": ACCOUNT, "region": REGION, "clusters": [{"name": cluster, "services": [
        {"name": "web", "desiredCount": 3, "deploymentController": "CODE_DEPLOY"},
        *({"name": s, "desiredCount": 2} for s in PLAIN)]}]}
    events: list[dict[str, Any]] = []
    # CodeDeploy shifts traffic to a replacement task set whose tasks crash; ECS sends no deployment events
    for i in range(6):
        events += crash_lifecycle(cluster, 300 + i, t0 + timedelta(minutes=2 * i), "web", revision=12,
                                  started_by="ecs-svc/5501000000000000001")
    for i in range(6):
        events += crash_lifecycle(cluster, 400 + i, t0 + timedelta(minutes=60 + 3 * i), "mail", revision=4)
    events.sort(key=lambda e: e["time"])
    expected = {
        "why": "a CODE_DEPLOY service's deployments are CodeDeploy's to finish or roll back (its task sets, which "
               "the watchdog cannot read here, say where one stands): deployment_in_progress, alert only; an "
               "ECS-controlled rolling service looping later is scaled to 0",
        "scaled_to_zero": [f"{cluster}/mail"],
        "desired_counts": counts(fleet, {f"{cluster}/mail"}),
        "decisions": [
            {"cluster": cluster, "service": "web", "action": "alert_only", "reason": "deployment_in_progress"},
            {"cluster": cluster, "service": "mail", "action": "scale_to_zero", "reason": "crash_loop"},
        ],
        "decision_count": 2,
    }
    write("codedeploy-controlled", events, fleet, expected)


def restart_loop() -> None:
    cluster, t0 = "platform", datetime(2026, 3, 6, 9, 0, tzinfo=UTC)
    fleet = {"account": ACCOUNT, "region": REGION, "clusters": [{"name": cluster, "services": [
        {"name": "api", "desiredCount": 3, "containers": [
            {"name": "app", "essential": True,
             "restartPolicy": {"enabled": True, "ignoredExitCodes": [0], "restartAttemptPeriod": 60}},
            {"name": "log-router", "essential": False}]},
        *({"name": s, "desiredCount": 2} for s in PLAIN)]}]}
    # nothing reaches EventBridge from the loop: only ordinary service actions of the morning
    events = [steady_event(cluster, s, t0 + timedelta(minutes=i)) for i, s in enumerate(["cart", "search"])]
    events.append(steady_event(cluster, "catalog", t0 + timedelta(minutes=59)))
    # Container Insights: api's restart total climbs by one every 2 minutes from 09:05 (8 restarts by 09:19);
    # the other services have a restart policy-less count of 0 all along (the cluster has Container Insights)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["time", "cluster", "service", "restart_count"])
    for m in range(0, 40):
        minute = t0 + timedelta(minutes=m)
        total = 0 if m < 5 else min(8, (m - 5) // 2 + 1)
        w.writerow([stamp(minute), cluster, "api", total])
        for s in ("cart", "search"):
            w.writerow([stamp(minute), cluster, s, 0])
    expected = {
        "why": "a restart-policy loop restarts a container inside its running tasks: no task event, Container "
               "Insights' RestartCount rises; CRASH_THRESHOLD restarts in the window are one restart_loop "
               "decision, always alert-only (a restart pulls no image and keeps the task's place)",
        "scaled_to_zero": [],
        "desired_counts": counts(fleet),
        "decisions": [{"cluster": cluster, "service": "api", "action": "alert_only", "reason": "restart_loop",
                       "time": stamp(t0 + timedelta(minutes=13))}],
        "decision_count": 1,
        "allowed_actions": ["alert_only"],
    }
    write("restart-policy-loop", events, fleet, expected, {"container_restarts.csv": buf.getvalue()})


def maintenance_wave() -> None:
    t0 = datetime(2026, 3, 7, 2, 0, tzinfo=UTC)
    web, mi = "web-prod", "batch-mi"
    web_services = ["frontend", "api", "auth", "search", "images", "graphql"]
    fleet = {"account": ACCOUNT, "region": REGION, "clusters": [
        {"name": web, "services": [{"name": s, "desiredCount": 6} for s in web_services]},
        {"name": mi, "services": [{"name": s, "desiredCount": 6} for s in ("ingest", "transcode")]}]}
    maintenance = "ECS is performing maintenance on the underlying infrastructure hosting the task"
    events: list[dict[str, Any]] = []
    n = 500
    for si, service in enumerate(web_services):
        for k in range(6):
            n += 1
            t = t0 + timedelta(minutes=si * 2 + k, seconds=7 * k)
            notice = {"code": "TerminationNotice", "reason": maintenance, "exit": None}
            # the task's container exits on SIGTERM: its STOPPED event says EssentialContainerExited, exit 143
            stopped = {"code": "EssentialContainerExited", "reason": maintenance, "exit": 143}
            pair = [task_event(web, n, t, service, "RUNNING", 4, stop=notice, desired="STOPPED"),
                    task_event(web, n, t + timedelta(seconds=40), service, "STOPPED", 6, stop=stopped)]
            if service == "images":  # delivered out of order: the STOPPED event before its notice
                pair.reverse()
            events += pair
            n += 1  # the replacement task ECS starts
            events += [task_event(web, n, t + timedelta(seconds=5), service, "PENDING", 2),
                       task_event(web, n, t + timedelta(seconds=35), service, "RUNNING", 3)]
    rebalance = {"code": "ServiceSchedulerInitiated",
                 "reason": "AZ Rebalancing: task stopped to rebalance the service across Availability Zones",
                 "exit": 143}
    for k in range(4):
        n += 1
        t = t0 + timedelta(minutes=20 + k)
        events.append(task_event(web, n, t, "frontend", "STOPPED", 5, stop=rebalance, az=f"{REGION}a"))
    draining = "Task stopped during instance draining"
    for si, service in enumerate(("ingest", "transcode")):
        for k in range(6):
            n += 1
            t = t0 + timedelta(minutes=30 + si * 3 + k)
            kw = {"launch": "MANAGED_INSTANCES", "capacity": "managed-instances-default"}
            events += [
                task_event(mi, n, t, service, "RUNNING", 4, desired="STOPPED",
                           stop={"code": "ServiceSchedulerInitiated", "reason": draining, "exit": None}, **kw),
                task_event(mi, n, t + timedelta(seconds=30), service, "STOPPED", 6,
                           stop={"code": "EssentialContainerExited", "reason": draining, "exit": 143}, **kw)]
    expected = {
        "why": "Fargate task maintenance, AZ rebalancing and ECS Managed Instances draining retire tasks across "
               "the fleet; a container that exits 143 on SIGTERM is never a crash, whatever order the notice and "
               "the STOPPED event arrive in: no decision, nothing changed",
        "scaled_to_zero": [],
        "desired_counts": counts(fleet),
        "decisions": [],
        "decision_count": 0,
        "no_decision_clusters": [web, mi],
    }
    write("fargate-maintenance-wave", events, fleet, expected)


def main() -> None:
    blue_green()
    code_deploy()
    restart_loop()
    maintenance_wave()


if __name__ == "__main__":
    main()
