"""``ecs-guardrail capture``: a scenario folder (SCENARIOS.md) written from a real account.

- ``fleet.json`` from ECS (ListServices, DescribeServices with tags), the services' target groups and
  their health checks (DescribeTargetGroups), the load balancers' type (DescribeLoadBalancers) and the
  Application Auto Scaling range (DescribeScalableTargets), each optional key only where readable;
- ``events.jsonl`` from the raw-event log group the stack writes (rule C in ARCHITECTURE.md;
  ``/aws/events/<stack>/ecs``): FilterLogEvents over the period, each message one raw event, kept for
  the clusters asked, in the log's order (time order: the log does not keep the bus's delivery order);
- ``healthy_hosts.csv`` from GetMetricData: HealthyHostCount, Minimum, 60 s, per target group + load
  balancer (``AWS/ApplicationELB`` or ``AWS/NetworkELB``), the lowest over a target group's load balancers;
- ``container_restarts.csv`` from GetMetricData: Container Insights ``RestartCount`` (``ECS/ContainerInsights``,
  ClusterName + ServiceName, Maximum, 60 s) of every service, where there are datapoints;
- in ``fleet.json`` also the deployment keys (``deploymentController``, ``deploymentStrategy`` with its bake
  time, the circuit breaker's ``thresholdConfiguration`` and ``resetOnHealthyTask``) from DescribeServices,
  ``deployments`` (where something other than the watchdog finishes them) from ListServiceDeployments,
  and the task definition's family and containers (``essential``, ``restartPolicy``) from
  DescribeTaskDefinition;
- ``healthy_hosts.csv`` from GetMetricData through the sampler's adapter: HealthyHostCount, Minimum, 60 s,
  per target group + load balancer (``AWS/ApplicationELB`` or ``AWS/NetworkELB``), the lowest over a
  target group's load balancers, and the clients' view of ALB target groups (``request_count``,
  ``target_2xx``, ``target_5xx``, ``elb_5xx``: Sum, summed over its load balancers; empty behind an NLB);
- ``logs.jsonl`` and each service's ``logGroup`` from the essential container's ``awslogs`` log
  configuration (DescribeTaskDefinition ``logConfiguration.options``): for each task of the captured events
  that stopped, the lines a decision's alert would quote (FilterLogEvents on its stream, with the crash-log
  reader's window, page limit and budget: :meth:`ecs_guardrail.adapters.logs.CrashLogs.around_stop`),
  masked as alerts mask them (:func:`ecs_guardrail.core.crash_words.masked`), at most
  :data:`MAX_LOG_STREAMS` streams; a stream prefix other than ``ecs`` is written as ``ecs`` (a replay's
  task definitions use that prefix);
- ``CAPTURE.md``: what was read, and what could not be (a missing permission, a retention gap), one line
  each. It is a separate file so that ``fleet.json`` keeps only the keys a replay reads.

Clients come from a factory passed in (``make_client(service)``), so tests run it on moto.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from ecs_guardrail.adapters.ecs import describe_services, target_group_arns
from ecs_guardrail.adapters.elb import target_group_dimension, target_group_name
from ecs_guardrail.core.errors import ScenarioError
from ecs_guardrail.core.links import resource_name, service_resource_id_parts
from ecs_guardrail.replay.fleet import LOG_STREAM_PREFIX

#: CloudWatch Logs log group names a fleet.json ``logGroup`` may hold (CreateLogGroup: 1 to 512 of these)
_LOG_GROUP = re.compile(r"[A-Za-z0-9_./#-]{1,512}")

__all__ = ["capture", "CaptureReport", "DENIED_CODES", "MAX_LOG_STREAMS"]

#: task streams read for ``logs.jsonl`` at most (one FilterLogEvents call of up to 3 pages each)
MAX_LOG_STREAMS = 200

#: error codes that mean "this identity may not call that"
DENIED_CODES = frozenset({"AccessDenied", "AccessDeniedException", "UnauthorizedOperation",
                          "UnauthorizedException", "AuthorizationError", "AuthorizationErrorException"})


@dataclass
class CaptureReport:
    """What a capture wrote and what it could not read (``problems``: one line each;
    ``missing_clusters``: the clusters asked that ECS answered ``ClusterNotFoundException`` for, which
    ``capture`` on the command line turns into exit status 2)."""

    out_dir: Path
    clusters: list[str]
    since: datetime
    until: datetime
    log_group: str
    services: int = 0
    target_groups: int = 0
    events: int = 0
    events_skipped: int = 0
    csv_rows: int = 0
    restart_rows: int = 0
    log_lines: int = 0
    log_streams: int = 0
    log_notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    missing_clusters: list[str] = field(default_factory=list)

    def summary_line(self) -> str:
        return (f"wrote {self.out_dir}: {self.services} services, {self.target_groups} target groups, "
                f"{self.events} events, {self.csv_rows} healthy-host rows"
                + (f"; {len(self.problems)} thing(s) missing, see CAPTURE.md" if self.problems else ""))


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _denied(exc: ClientError) -> bool:
    return exc.response.get("Error", {}).get("Code", "") in DENIED_CODES


def _op(exc: ClientError) -> str:
    return str(getattr(exc, "operation_name", "") or "?")


def _chunks(xs: list[Any], n: int) -> Iterator[list[Any]]:
    for i in range(0, len(xs), n):
        yield xs[i:i + n]


# ------------------------------------------------------------------------------------------------ fleet
def _health_check(tg: dict[str, Any]) -> dict[str, Any]:
    """DescribeTargetGroups' health check as fleet.json's ``healthCheck`` (SCENARIOS.md)."""
    hc: dict[str, Any] = {}
    for key, src in (("path", "HealthCheckPath"), ("intervalSeconds", "HealthCheckIntervalSeconds"),
                     ("unhealthyThresholdCount", "UnhealthyThresholdCount"),
                     ("timeoutSeconds", "HealthCheckTimeoutSeconds"),
                     ("healthyThresholdCount", "HealthyThresholdCount")):
        if tg.get(src) is not None:
            hc[key] = tg[src]
    matcher = (tg.get("Matcher") or {}).get("HttpCode")
    if matcher:
        hc["matcher"] = matcher
    return hc


@dataclass(frozen=True)
class _LogSource:
    """Where a service's essential container logs (its ``awslogs`` options): ``group``, stream ``prefix``,
    ``container`` (its name), ``region`` (``awslogs-region``, or ``None`` for the task's own)."""

    group: str
    prefix: str
    container: str
    region: str | None


def _read_fleet(client: Callable[[str], Any], clusters: list[str], report: CaptureReport,
                sources: dict[tuple[str, str], _LogSource] | None = None
                ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """fleet.json's content and ``{target group name: {"arn", "lbs": [(lb dimension, namespace)]}}``;
    ``sources`` gets each service's log source, ``(cluster, service)`` -> :class:`_LogSource`."""
    sources = {} if sources is None else sources
    ecs = client("ecs")
    services: dict[str, list[dict[str, Any]]] = {}
    for cluster in clusters:
        try:
            arns = [a for page in ecs.get_paginator("list_services").paginate(cluster=cluster)
                    for a in page.get("serviceArns", [])]
            described = describe_services(ecs, cluster, arns, tags=True)
        except ClientError as exc:
            if _denied(exc):
                report.problems.append(f"no permission for ecs:{_op(exc)} on cluster {cluster}: fleet.json has "
                                       "no services for it")
                services[cluster] = []
                continue
            if exc.response.get("Error", {}).get("Code") in ("ClusterNotFoundException", "ClusterNotFound"):
                report.problems.append(f"cluster {cluster} not found in this account and region")
                report.missing_clusters.append(cluster)
                services[cluster] = []
                continue
            raise
        services[cluster] = [s for s in described if s.get("status", "ACTIVE") != "INACTIVE"]
    tg_arns = sorted({a for ss in services.values() for s in ss for a in target_group_arns(s)})
    tgs = _read_target_groups(client, tg_arns, report)
    scaling = _read_scaling(client, [(c, s["serviceName"]) for c, ss in services.items() for s in ss], report)
    fleet_clusters = []
    families: dict[str, tuple[Any, str]] = {}  # family -> (containers written, first service)
    for cluster in clusters:
        out = []
        for s in sorted(services[cluster], key=lambda s: s["serviceName"]):
            names = list(dict.fromkeys(target_group_name(a) for a in target_group_arns(s)))
            svc: dict[str, Any] = {"name": s["serviceName"], "desiredCount": int(s.get("desiredCount", 0)),
                                   "targetGroups": names,
                                   "tags": {t["key"]: t.get("value", "") for t in s.get("tags") or []}}
            if s.get("schedulingStrategy") and s["schedulingStrategy"] != "REPLICA":
                svc["schedulingStrategy"] = s["schedulingStrategy"]
            config = s.get("deploymentConfiguration") or {}
            breaker = config.get("deploymentCircuitBreaker")
            if breaker:
                svc["deploymentCircuitBreaker"] = {"enable": bool(breaker.get("enable")),
                                                   "rollback": bool(breaker.get("rollback"))}
                if isinstance(breaker.get("resetOnHealthyTask"), bool):
                    svc["deploymentCircuitBreaker"]["resetOnHealthyTask"] = breaker["resetOnHealthyTask"]
                threshold = breaker.get("thresholdConfiguration") or {}
                if threshold.get("type") and isinstance(threshold.get("value"), int):
                    svc["deploymentCircuitBreaker"]["thresholdConfiguration"] = {"type": threshold["type"],
                                                                                 "value": threshold["value"]}
            controller = str((s.get("deploymentController") or {}).get("type") or "ECS")
            if controller != "ECS":
                svc["deploymentController"] = controller
            elif str(config.get("strategy") or "ROLLING") != "ROLLING":
                svc["deploymentStrategy"] = {"strategy": config["strategy"]}
                if isinstance(config.get("bakeTimeInMinutes"), int):
                    svc["deploymentStrategy"]["bakeTimeInMinutes"] = config["bakeTimeInMinutes"]
            svc.update(_task_definition_keys(ecs, s, families, (cluster, s["serviceName"]), report, sources))
            if (breaker or {}).get("enable") or "deploymentController" in svc or "deploymentStrategy" in svc:
                listed = _read_deployments(ecs, cluster, s["serviceName"], report)
                if listed:
                    svc["deployments"] = listed
            if (cluster, s["serviceName"]) in scaling:
                svc["autoScaling"] = scaling[(cluster, s["serviceName"])]
            types = {tgs[a]["type"] for a in arns if a in tgs and tgs[a]["type"]}
            if types == {"network"}:
                svc["loadBalancerType"] = "network"
            if arns and arns[0] in tgs and tgs[arns[0]]["healthCheck"]:
                svc["healthCheck"] = tgs[arns[0]]["healthCheck"]
            if s.get("healthCheckGracePeriodSeconds"):
                svc["healthCheckGracePeriodSeconds"] = int(s["healthCheckGracePeriodSeconds"])
            out.append(svc)
        report.services += len(out)
        fleet_clusters.append({"name": cluster, "services": out})
    by_name = {target_group_name(a): {"arn": a, **tgs.get(a, {"lbs": [], "type": None})}
               for a in tg_arns}
    report.target_groups = len(by_name)
    return {"clusters": fleet_clusters}, by_name


def _read_deployments(ecs: Any, cluster: str, service: str, report: CaptureReport) -> list[dict[str, Any]]:
    """fleet.json's ``deployments`` of a service whose deployments something other than the watchdog
    finishes (circuit breaker, another controller or strategy): what ListServiceDeployments (one page,
    DescribeServiceDeployments for the unfinished) answers, one ``{"id": "ecs-svc/ID", "status",
    "startedAt", "finishedAt"}`` each, so that a replay knows a deployment finished whose closing event
    the raw-event log lost (SCENARIOS.md). ``[]`` when ECS would not answer (named in CAPTURE.md)."""
    from ecs_guardrail.adapters.ecs import EcsService

    found = EcsService(ecs).service_deployments(cluster, service)
    if found is None:
        report.problems.append(f"ListServiceDeployments not answered for {cluster}/{service} (a missing "
                               "ecs:ListServiceDeployments permission?): fleet.json lists none of its deployments")
        return []
    rows = []
    for d in found:
        row: dict[str, Any] = {"id": f"ecs-svc/{resource_name(d.arn)}", "status": d.status}
        started = d.started_at or d.created_at
        if started is not None:
            row["startedAt"] = _iso(started)
        if d.finished_at is not None:
            row["finishedAt"] = _iso(d.finished_at)
        rows.append(row)
    return rows


def _task_definition_keys(ecs: Any, s: dict[str, Any], families: dict[str, tuple[Any, str]],
                          key: tuple[str, str], report: CaptureReport,
                          sources: dict[tuple[str, str], _LogSource]) -> dict[str, Any]:
    """``taskDefinitionFamily`` (when not the service name), ``containers`` (name, essential, restartPolicy)
    and ``logGroup`` (the essential container's ``awslogs-group``; its source goes into ``sources[key]``)
    of the task definition the service runs (DescribeTaskDefinition). A family already written with other
    containers or another log group (two services on different revisions) keeps the first; the later
    service is noted and left without these keys (fleet.json allows one shape per family)."""
    where = "/".join(key)
    arn = s.get("taskDefinition")
    if not arn:
        return {}
    try:
        td = ecs.describe_task_definition(taskDefinition=arn)["taskDefinition"]
    except ClientError as exc:
        if _denied(exc) or exc.response.get("Error", {}).get("Code") == "ClientException":
            code = exc.response.get("Error", {}).get("Code")
            report.problems.append(f"{where}: task definition {resource_name(arn)} not readable ({code}): "
                                   "its containers are not in fleet.json")
            return {}
        raise
    containers = []
    for c in td.get("containerDefinitions") or []:
        ct: dict[str, Any] = {"name": c["name"], "essential": bool(c.get("essential", True))}
        policy = c.get("restartPolicy")
        if isinstance(policy, dict) and "enabled" in policy:
            ct["restartPolicy"] = {k: policy[k] for k in ("enabled", "ignoredExitCodes", "restartAttemptPeriod")
                                   if k in policy}
        containers.append(ct)
    source = _log_source(td)
    family = str(td.get("family") or s["serviceName"])
    seen = families.setdefault(family, ((containers, source and source.group), where))
    if seen[0] != (containers, source and source.group):
        report.problems.append(f"{where}: runs task definition family {family} with other containers or log "
                               f"group than {seen[1]}; fleet.json keeps {seen[1]}'s and gives {where} the default")
        return {}
    out: dict[str, Any] = {"containers": containers} if containers else {}
    if family != s["serviceName"]:
        out["taskDefinitionFamily"] = family
    if source is not None:
        out["logGroup"] = source.group
        sources[key] = source
    return out


def _log_source(td: dict[str, Any]) -> _LogSource | None:
    """The essential container's ``awslogs`` destination (the first essential container's, as a replay
    builds it: fleet.json's ``logGroup``), when it names a group and a stream prefix (without a prefix
    the stream is not named after the task: ECS Developer Guide, "Using the awslogs log driver")."""
    lead: dict[str, Any] = next((c for c in td.get("containerDefinitions") or [] if c.get("essential", True)), {})
    config = lead.get("logConfiguration") or {}
    options = config.get("options") or {}
    group, prefix = options.get("awslogs-group"), options.get("awslogs-stream-prefix")
    if config.get("logDriver") != "awslogs" or not isinstance(group, str) or not _LOG_GROUP.fullmatch(group) \
            or not isinstance(prefix, str) or not prefix:
        return None
    region = options.get("awslogs-region")
    return _LogSource(group, prefix, str(lead["name"]), region if isinstance(region, str) else None)


def _read_restarts(client: Callable[[str], Any], fleet: dict[str, Any], since: datetime, until: datetime,
                   report: CaptureReport) -> list[tuple[str, str, str, float]]:
    """container_restarts.csv rows (time, cluster, service, restart total) from Container Insights."""
    from ecs_guardrail.adapters.cloudwatch import ContainerRestarts

    services = [(c["name"], svc["name"]) for c in fleet["clusters"] for svc in c["services"]]
    if not services:
        return []
    start = since.astimezone(UTC).replace(second=0, microsecond=0)
    end = until.astimezone(UTC).replace(second=0, microsecond=0) + timedelta(minutes=1)
    try:
        totals = ContainerRestarts(client("cloudwatch")).totals(services, start, end)
    except ClientError as exc:
        if not _denied(exc):
            raise
        line = "no permission for cloudwatch:GetMetricData: container_restarts.csv not written"
        for i, seen in enumerate(report.problems):  # one missing permission, one line
            if seen.startswith("no permission for cloudwatch:GetMetricData"):
                report.problems[i] = f"{seen}; container_restarts.csv not written either"
                break
        else:
            report.problems.append(line)
        return []
    return sorted((_iso(m), c, svc, v) for (c, svc), points in totals.items() for m, v in points.items())


def _read_target_groups(client: Callable[[str], Any], arns: list[str], report: CaptureReport
                        ) -> dict[str, dict[str, Any]]:
    """``{arn: {"lbs": [(lb dimension, namespace)], "type": "application"|"network"|None, "healthCheck"}}``."""
    if not arns:
        return {}
    elb = client("elbv2")
    out: dict[str, dict[str, Any]] = {}
    try:
        groups = [g for chunk in _chunks(arns, 20)
                  for g in elb.describe_target_groups(TargetGroupArns=chunk)["TargetGroups"]]
        lb_arns = sorted({a for g in groups for a in g.get("LoadBalancerArns") or []})
        lb_types = {lb["LoadBalancerArn"]: lb.get("Type", "application") for chunk in _chunks(lb_arns, 20)
                    for lb in elb.describe_load_balancers(LoadBalancerArns=chunk)["LoadBalancers"]}
    except ClientError as exc:
        if not _denied(exc):
            raise
        report.problems.append(f"no permission for elasticloadbalancing:{_op(exc)}: target groups have no "
                               "health check or load balancer, healthy_hosts.csv has no rows")
        return {}
    for g in groups:
        lbs = []
        for lb in g.get("LoadBalancerArns") or []:
            dim = lb.split(":loadbalancer/", 1)[1]
            lbs.append((dim, "AWS/NetworkELB" if dim.startswith("net/") else "AWS/ApplicationELB"))
        types = {lb_types.get(a) for a in g.get("LoadBalancerArns") or []}
        out[g["TargetGroupArn"]] = {"lbs": lbs, "type": types.pop() if len(types) == 1 else None,
                                    "healthCheck": _health_check(g)}
    return out


def _read_scaling(client: Callable[[str], Any], services: list[tuple[str, str]], report: CaptureReport
                  ) -> dict[tuple[str, str], dict[str, int]]:
    if not services:
        return {}
    out: dict[tuple[str, str], dict[str, int]] = {}
    try:
        aas = client("application-autoscaling")
        for chunk in _chunks([f"service/{c}/{s}" for c, s in services], 50):
            resp = aas.describe_scalable_targets(ServiceNamespace="ecs", ResourceIds=chunk,
                                                 ScalableDimension="ecs:service:DesiredCount")
            for t in resp.get("ScalableTargets", []):
                c, s = service_resource_id_parts(t["ResourceId"])
                out[(c, s)] = {"minCapacity": int(t["MinCapacity"]), "maxCapacity": int(t["MaxCapacity"])}
    except ClientError as exc:
        if not _denied(exc):
            raise
        report.problems.append(f"no permission for application-autoscaling:{_op(exc)}: fleet.json has no "
                               "autoScaling keys")
    return out


# ----------------------------------------------------------------------------------------------- events
def _cluster_of(raw: Any) -> str | None:
    detail = raw.get("detail") if isinstance(raw, dict) else None
    arn = detail.get("clusterArn") if isinstance(detail, dict) else None
    return resource_name(arn) if isinstance(arn, str) else None


def _read_events(client: Callable[[str], Any], clusters: list[str], since: datetime, until: datetime,
                 log_group: str, report: CaptureReport) -> list[tuple[str, int | None]]:
    """The raw events of ``clusters`` in the log group, one JSON line each, with the log event's
    ``ingestionTime`` (Unix milliseconds: when the rule delivered it, FilterLogEvents), oldest first."""
    logs = client("logs")
    try:
        groups = logs.describe_log_groups(logGroupNamePrefix=log_group).get("logGroups", [])
        found = [g for g in groups if g["logGroupName"] == log_group]
        if not found:
            report.problems.append(f"log group {log_group} not found: events.jsonl is empty (pass --log-group; "
                                   "the stack's output EcsEventsLogGroupName names it)")
            return []
        days = found[0].get("retentionInDays")
        if days and since < datetime.now(UTC) - timedelta(days=int(days)):
            kept = datetime.now(UTC) - timedelta(days=int(days))
            report.problems.append(f"retention gap: {log_group} keeps {days} days, so events before "
                                   f"{_iso(kept)} are gone (asked from {_iso(since)})")
        wanted = set(clusters)
        lines: list[tuple[str, int | None]] = []
        paginator = logs.get_paginator("filter_log_events")
        for page in paginator.paginate(logGroupName=log_group, startTime=int(since.timestamp() * 1000),
                                       endTime=int(until.timestamp() * 1000)):
            for e in page.get("events", []):
                try:
                    raw = json.loads(e["message"])
                except ValueError:
                    report.events_skipped += 1
                    continue
                if not isinstance(raw, dict) or raw.get("source") != "aws.ecs" or _cluster_of(raw) not in wanted:
                    report.events_skipped += 1
                    continue
                ingested = e.get("ingestionTime")
                lines.append((json.dumps(raw, separators=(",", ":")), int(ingested) if ingested else None))
    except ClientError as exc:
        if not _denied(exc):
            raise
        report.problems.append(f"no permission for logs:{_op(exc)} on {log_group}: events.jsonl is empty")
        return []
    report.events = len(lines)
    return lines


# ------------------------------------------------------------------------------------------------- logs
#: a stop time outside these is corruption (the event models' bounds): no stream is read for it
_EARLIEST, _LATEST = datetime(2000, 1, 1, tzinfo=UTC), datetime(2200, 1, 1, tzinfo=UTC)


def _stopped_tasks(events: list[tuple[str, int | None]], sources: dict[tuple[str, str], _LogSource]
                   ) -> list[tuple[datetime, str, _LogSource]]:
    """``(stopped at, task id, its service's log source)`` of each task of a service with a log source
    that the captured events show STOPPED (``detail.stoppedAt``, else the event's ``time``), once each,
    oldest first."""
    seen: dict[str, tuple[datetime, str, _LogSource]] = {}
    for line, _ in events:
        raw = json.loads(line)
        detail = raw.get("detail") or {}
        if raw.get("detail-type") != "ECS Task State Change" or detail.get("lastStatus") != "STOPPED":
            continue
        group, arn, cluster = detail.get("group"), detail.get("taskArn"), _cluster_of(raw)
        service = group[len("service:"):] if isinstance(group, str) and group.startswith("service:") else None
        source = sources.get((cluster or "", service or ""))
        when = detail.get("stoppedAt") or raw.get("time")
        if source is None or not isinstance(arn, str) or not isinstance(when, str):
            continue
        try:
            stopped = datetime.fromisoformat(when.replace("Z", "+00:00"))
            stopped = stopped.astimezone(UTC) if stopped.tzinfo else stopped.replace(tzinfo=UTC)
        except (ValueError, OverflowError):
            continue
        if not _EARLIEST <= stopped < _LATEST:  # year 1 or 9999: its log window would overflow the calendar
            continue
        task_id = arn.rsplit("/", 1)[-1]
        seen.setdefault(task_id, (stopped, task_id, source))
    return sorted(seen.values(), key=lambda x: (x[0], x[1]))


def _read_log_lines(client: Callable[[str], Any], events: list[tuple[str, int | None]],
                    sources: dict[tuple[str, str], _LogSource], region: str | None, report: CaptureReport
                    ) -> list[tuple[int, str, str]]:
    """``logs.jsonl`` rows ``(timestamp ms, logStream, message)``: what a decision's alert would quote of
    each stopped task's stream (:func:`_stopped_tasks`; the crash-log reader's window, pages and budget),
    masked, at most :data:`MAX_LOG_STREAMS` streams. A denied group is one problem line; a stream that is
    gone (ResourceNotFoundException) has no rows; any other AWS error propagates."""
    from ecs_guardrail.adapters.logs import CrashLogs
    from ecs_guardrail.core.crash_words import masked

    tasks = _stopped_tasks(events, sources)
    if not tasks:
        return []
    if len(tasks) > MAX_LOG_STREAMS:
        report.log_notes.append(f"{len(tasks) - MAX_LOG_STREAMS} later stopped tasks' streams not read "
                                f"(at most {MAX_LOG_STREAMS})")
        tasks = tasks[:MAX_LOG_STREAMS]
    reader = CrashLogs(client("logs"))
    rows: list[tuple[int, str, str]] = []
    skipped: set[str] = set()
    renamed: set[str] = set()
    for stopped, task_id, source in tasks:
        if source.group in skipped:
            continue
        if source.region and region and source.region != region:
            skipped.add(source.group)
            report.log_notes.append(f"log group {source.group} is in region {source.region}: not read")
            continue
        try:
            found = reader.around_stop(source.group, f"{source.prefix}/{source.container}/{task_id}", stopped)
        except ClientError as exc:
            if _denied(exc):
                skipped.add(source.group)
                report.problems.append(f"no permission for logs:FilterLogEvents on {source.group}: logs.jsonl "
                                       "has none of its lines")
                continue
            if exc.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
                continue
            raise
        report.log_streams += 1
        stream = f"{LOG_STREAM_PREFIX}/{source.container}/{task_id}"
        rows += [(ms, stream, text) for (ms, _), text in zip(found, masked(m for _, m in found), strict=True)
                 if text]
        if source.prefix != LOG_STREAM_PREFIX and source.group not in renamed:
            renamed.add(source.group)
            report.log_notes.append(f"{source.group}: stream prefix {source.prefix} written as {LOG_STREAM_PREFIX} "
                                    "(a replay's task definitions use that prefix)")
    report.log_lines = len(rows)
    return rows


def _ms_iso(ms: int) -> str:
    t = datetime.fromtimestamp(ms // 1000, UTC)
    return _iso(t) if ms % 1000 == 0 else f"{t:%Y-%m-%dT%H:%M:%S}.{ms % 1000:03d}Z"


# ------------------------------------------------------------------------------------------ healthy hosts
def _read_healthy_hosts(client: Callable[[str], Any], target_groups: dict[str, dict[str, Any]], since: datetime,
                        until: datetime, report: CaptureReport) -> list[tuple[Any, ...]]:
    """``healthy_hosts.csv`` rows ``(time, name, healthy_host_count, request_count, target_2xx, target_5xx,
    elb_5xx)`` through the sampler's adapter (both observers; request cells ``None`` behind an NLB or
    where nothing was published). A minute without a HealthyHostCount datapoint has no row."""
    from ecs_guardrail.adapters.cloudwatch import REQUEST_METRICS, HealthyHostCount, Series

    names: dict[Series, str] = {Series(target_group_dimension(tg["arn"]), lb): name
                                for name, tg in sorted(target_groups.items()) for lb, _ns in tg.get("lbs", [])}
    if not names:
        return []
    start = since.astimezone(UTC).replace(second=0, microsecond=0)
    end = until.astimezone(UTC).replace(second=0, microsecond=0) + timedelta(minutes=1)
    try:
        readings = HealthyHostCount(client("cloudwatch")).read(list(names), start, end)
    except ClientError as exc:
        if not _denied(exc):
            raise
        report.problems.append("no permission for cloudwatch:GetMetricData: healthy_hosts.csv not written "
                               "(no availability figures)")
        return []
    per: dict[tuple[str, datetime], list[Any]] = {}
    for series, points in readings.items():
        for m, r in points.items():
            per.setdefault((names[series], m), []).append(r)
    rows = []
    for (name, m), rs in sorted(per.items(), key=lambda x: (x[0][1], x[0][0])):
        hosts = [r.healthy_host_count for r in rs if r.healthy_host_count is not None]
        if not hosts:
            continue
        clients = [r for r in rs if r.request_metrics]

        def total(field: str, clients: list[Any] = clients) -> float | None:
            got = [getattr(r, field) for r in clients if getattr(r, field) is not None]
            return float(sum(got)) if got else None
        rows.append((_iso(m), name, min(hosts), *(total(k) for k in (*REQUEST_METRICS, "elb_5xx"))))
    note = _retention_note(start, datetime.fromisoformat(rows[0][0].replace("Z", "+00:00")) if rows else None,
                           datetime.now(UTC))
    if note:
        report.problems.append(note)
    report.csv_rows = len(rows)
    return rows


#: how long CloudWatch keeps 60-second datapoints (CloudWatch API Reference, GetMetricData: "Amazon CloudWatch
#: retains metric data as follows": 1-minute datapoints 15 days, 5-minute 63 days, 1-hour 455 days)
ONE_MINUTE_RETENTION = timedelta(days=15)


def _retention_note(start: datetime, first: datetime | None, now: datetime) -> str | None:
    """CAPTURE.md's line when the period (from ``start``) began more than :data:`ONE_MINUTE_RETENTION` before
    ``now`` and its 1-minute rows (the first at ``first``; ``None``: no row came back) begin more than
    5 minutes after it; ``None`` otherwise. A GetMetricData query with a 60 s period whose StartTime is
    more than 15 days ago may return no datapoints at all (MetricStat, Period)."""
    cutoff = now - ONE_MINUTE_RETENTION
    if start >= cutoff or (first is not None and first - start <= timedelta(minutes=5)):
        return None
    got = f"first row at {_iso(first)}" if first is not None else "no row came back"
    return (f"retention gap: the period starts at {_iso(start)}, more than 15 days ago; CloudWatch keeps 1-minute "
            "datapoints 15 days, then 5-minute ones 63 days and 1-hour ones 455 days (CloudWatch API Reference, "
            f"GetMetricData), so healthy_hosts.csv's and container_restarts.csv's minutes before {_iso(cutoff)} "
            f"are missing, not down ({got})")


# ------------------------------------------------------------------------------------------------ capture
def capture(client: Callable[[str], Any], clusters: list[str], since: datetime, until: datetime, out_dir: Path,
            *, log_group: str) -> CaptureReport:
    """Write ``fleet.json``, ``events.jsonl``, ``delivered.csv`` (each line's ingestion time),
    ``healthy_hosts.csv``, ``container_restarts.csv`` and ``logs.jsonl`` (each when there are rows) and
    ``CAPTURE.md`` to ``out_dir`` (created). Returns the
    :class:`CaptureReport`.

    Permission errors and a retention gap become ``report.problems`` (and lines of CAPTURE.md); any other
    AWS error propagates (botocore ``ClientError``).
    """
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise ScenarioError(f"{out_dir}: exists and is not a folder")
    _check_creatable(out_dir)
    report = CaptureReport(out_dir, list(clusters), since, until, log_group)
    sources: dict[tuple[str, str], _LogSource] = {}
    fleet, target_groups = _read_fleet(client, list(dict.fromkeys(clusters)), report, sources)
    region = getattr(getattr(client("ecs"), "meta", None), "region_name", None)
    try:
        account = client("sts").get_caller_identity()["Account"]
    except ClientError as exc:
        if not _denied(exc):
            raise
        account = None
        report.problems.append("no permission for sts:GetCallerIdentity: fleet.json has no account")
    head: dict[str, Any] = {}
    if account:
        head["account"] = account
    if region:
        head["region"] = region
    events = _read_events(client, list(clusters), since, until, log_group, report)
    rows = _read_healthy_hosts(client, target_groups, since, until, report)
    restarts = _read_restarts(client, fleet, since, until, report)
    log_lines = _read_log_lines(client, events, sources, region, report)
    # everything read before anything is written: an AWS error part way leaves an earlier capture whole
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ScenarioError(f"{out_dir}: cannot be created ({exc.strerror})") from None
    (out_dir / "fleet.json").write_text(json.dumps({**head, **fleet}, indent=2) + "\n", encoding="utf-8")
    (out_dir / "events.jsonl").write_text("".join(line + "\n" for line, _ in events), encoding="utf-8")
    # delivered.csv lets a replay reject events stamped in the future (SCENARIOS.md)
    _write_csv(out_dir / "delivered.csv", ("line", "delivered_at"),
               [(n, _iso(datetime.fromtimestamp(ms / 1000, UTC))) for n, (_, ms) in enumerate(events, 1)
                if ms is not None])
    _write_csv(out_dir / "healthy_hosts.csv", ("time", "target_group", "healthy_host_count", "request_count",
                                               "target_2xx", "target_5xx", "elb_5xx"),
               [(t, name, *("" if v is None else _number(v) for v in values)) for t, name, *values in rows])
    _write_csv(out_dir / "container_restarts.csv", ("time", "cluster", "service", "restart_count"),
               [(t, c, svc, _number(v)) for t, c, svc, v in restarts])
    report.restart_rows = len(restarts)
    logs_path = out_dir / "logs.jsonl"
    if log_lines:
        logs_path.write_text("".join(json.dumps({"time": _ms_iso(ms), "logStream": stream, "message": text},
                                                separators=(",", ":"), ensure_ascii=False) + "\n"
                                     for ms, stream, text in log_lines), encoding="utf-8")
    elif logs_path.exists():
        logs_path.unlink()
    _write_notes(out_dir / "CAPTURE.md", report)
    return report


def _check_creatable(out_dir: Path) -> None:
    """Before any AWS call: the folder, or the nearest folder above it that exists, must be one the user can
    write in. The folder is created only once everything is read (an AWS error leaves nothing half
    written), so a path under a file or a read-only folder failed only after a whole capture's reads."""
    import os
    import tempfile

    here = out_dir.absolute()
    while not here.exists() and here != here.parent:
        here = here.parent
    if not here.is_dir():
        raise ScenarioError(f"{out_dir}: cannot be created ({here} is not a folder)")
    if not os.access(here, os.W_OK | os.X_OK):
        raise ScenarioError(f"{out_dir}: cannot be created ({here}: permission denied)")
    # os.access answers yes to root for any folder (a container's operator runs as root), where /proc, /sys or
    # an NFS export squashing root still refuse: try the folder's creation itself, and take it back at once
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".ecs-guardrail-capture-", dir=here))
    except OSError as exc:
        raise ScenarioError(f"{out_dir}: cannot be created ({here}: {exc.strerror})") from None


def _number(v: float) -> float | int:
    """A CSV cell's number: whole numbers without ``.0``."""
    return int(v) if float(v).is_integer() else v


def _write_csv(path: Path, header: tuple[str, ...], rows: list[tuple[Any, ...]]) -> None:
    """``path`` with ``header`` and ``rows`` (``\\n`` line ends); with no rows, no file (an earlier
    capture's is removed)."""
    if not rows:
        path.unlink(missing_ok=True)
        return
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)


def _write_notes(path: Path, r: CaptureReport) -> None:
    lines = [
        "# Captured scenario",
        "",
        f"- clusters: {', '.join(r.clusters)}",
        f"- period: {_iso(r.since)} to {_iso(r.until)}",
        f"- fleet.json: {r.services} services, {r.target_groups} target groups (desired counts as they are "
        "now: a service the watchdog scaled to 0 and nobody restored shows 0; set it back to replay the "
        "incident from its start)",
        f"- events.jsonl: {r.events} events from {r.log_group} ({r.events_skipped} of other clusters or "
        "not ECS skipped), in the log's time order",
        f"- healthy_hosts.csv: {r.csv_rows} rows (an empty request cell is a minute without that datapoint: ALB "
        "publishes its request metrics only when nonzero, so it is 0 requests, idle; behind an NLB every "
        "request cell is empty)" if r.csv_rows else "- healthy_hosts.csv: not written (no rows)",
        f"- container_restarts.csv: {r.restart_rows} rows" if r.restart_rows
        else "- container_restarts.csv: not written (no Container Insights RestartCount datapoints)",
        (f"- logs.jsonl: {r.log_lines} lines of {r.log_streams} stopped tasks' streams, masked as alerts mask "
         "them" if r.log_lines else "- logs.jsonl: not written (no log lines of a stopped task in a service "
         "with an awslogs log group)") + "".join(f"; {n}" for n in r.log_notes),
        "- settings.env: kept as it was (yours)" if (path.parent / "settings.env").exists() else
        "- settings.env: not written (the settings are yours to add, e.g. ALERT_ONLY_CLUSTERS=production as the "
        "stack has it; without it the replay treats every cluster as alert-only)",
        "",
        "## Missing",
        "",
    ]
    lines += [f"- {p}" for p in r.problems] or ["- nothing"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
