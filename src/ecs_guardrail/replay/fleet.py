"""A scenario's ``fleet.json``: validation, and the fleet built in the embedded AWS (moto).

:func:`check_fleet` turns every value the embedded AWS could not build (or would build differently
from the real API) into a one-line :class:`~ecs_guardrail.core.errors.ScenarioError`;
:func:`fleet_warnings` names keys this tool does not read; :func:`build_fleet` creates the clusters,
services, task definitions, load balancers, target groups and scalable targets through the same API
calls an operator's infrastructure code would make, so every reader (the watchdog, the sampler,
``audit``) sees them through the ordinary read API. The keys are documented in SCENARIOS.md.
"""

from __future__ import annotations

import functools
import json
import re
import sys
from collections.abc import Callable, Collection, Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec
from botocore.exceptions import ClientError

from ecs_guardrail.adapters.elb import target_group_dimension
from ecs_guardrail.core.errors import ScenarioError
from ecs_guardrail.core.events import is_deployment_id
from ecs_guardrail.core.links import task_definition_parts
from ecs_guardrail.replay.lines import decode_line

__all__ = ["BuiltFleet", "build_fleet", "check_fleet", "fleet_families", "fleet_warnings", "task_definitions_in_events"]

_FLEET_KEYS = {"account", "region", "clusters"}
_CLUSTER_KEYS = {"name", "services"}
_SERVICE_KEYS = {
    "name", "desiredCount", "targetGroups", "tags",
    "schedulingStrategy", "deploymentCircuitBreaker", "autoScaling", "loadBalancerType", "healthCheck",
    "healthCheckGracePeriodSeconds", "containerHealthCheck", "containers",
    "deploymentStrategy", "deploymentController", "taskDefinitionFamily", "deployments", "logGroup",
}
#: CloudWatch Logs log group names (CreateLogGroup: 1 to 512 of these characters)
_LOG_GROUP = re.compile(r"[A-Za-z0-9_./#-]{1,512}")
#: the awslogs stream prefix of a fleet.json service's essential container (SCENARIOS.md, ``logGroup``)
LOG_STREAM_PREFIX = "ecs"
#: ListServiceDeployments ``status`` values (ECS API reference, ``ServiceDeployment``)
DEPLOYMENT_STATUSES = frozenset({"PENDING", "SUCCESSFUL", "STOPPED", "STOP_REQUESTED", "IN_PROGRESS",
                                 "ROLLBACK_REQUESTED", "ROLLBACK_IN_PROGRESS", "ROLLBACK_SUCCESSFUL",
                                 "ROLLBACK_FAILED"})
_DEPLOYMENT_KEYS = {"id", "status", "startedAt", "finishedAt", "statusReason"}
#: the attribute of a moto service object that holds its fleet.json ``deployments`` rows (the moto
#: engine's ListServiceDeployments patch answers from it, as the fast engine from its own copy)
LISTED = "guardrail_listed_deployments"

_NAME = re.compile(r"[A-Za-z0-9_-]{1,255}")  # ECS cluster, service, container and family names
_TARGET_GROUP = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,30}[A-Za-z0-9])?")  # ELB: 32, no hyphen at the ends
_MATCHER = re.compile(r"\d{3}(?:-\d{3})?(?:,\d{3}(?:-\d{3})?)*")  # ELB Matcher.HttpCode: "200", "200-299", "200,302"

#: fleet.json healthCheck key -> (CreateTargetGroup parameter, lowest, highest) (ELBv2 API reference)
_HEALTH_CHECK_INTS = {
    "intervalSeconds": ("HealthCheckIntervalSeconds", 5, 300),
    "timeoutSeconds": ("HealthCheckTimeoutSeconds", 2, 120),
    "healthyThresholdCount": ("HealthyThresholdCount", 2, 10),
    "unhealthyThresholdCount": ("UnhealthyThresholdCount", 2, 10),
}
_HEALTH_CHECK_KEYS = {"path", "matcher", *_HEALTH_CHECK_INTS}
#: containerHealthCheck key -> (lowest, highest) (ECS API reference, HealthCheck)
_CONTAINER_CHECK_INTS = {"interval": (5, 300), "timeout": (2, 60), "retries": (1, 10), "startPeriod": (0, 300)}
_CONTAINER_KEYS = {"name", "essential", "restartPolicy"}
#: ECS API reference, ContainerRestartPolicy: ``ignoredExitCodes`` at most 50, ``restartAttemptPeriod`` 60-1800 s
_RESTART_KEYS = {"enabled", "ignoredExitCodes", "restartAttemptPeriod"}
_MAX_IGNORED_EXIT_CODES = 50
_RESTART_PERIOD = (60, 1800)
#: ECS API reference: DeploymentConfiguration.strategy, DeploymentController.type, ThresholdConfiguration.type
_STRATEGIES = {"ROLLING", "BLUE_GREEN", "LINEAR", "CANARY"}
_CONTROLLERS = {"ECS", "CODE_DEPLOY", "EXTERNAL"}
_THRESHOLD_TYPES = {"COUNT", "BOUNDED_PERCENT", "UNBOUNDED_PERCENT"}
_MAX_BAKE_MINUTES = 1440  # ECS: bakeTimeInMinutes 0 to 1440
_SCHEDULING = {"REPLICA", "DAEMON"}
_LB_TYPES = {"application", "network"}
_MAX_GRACE_S = 2_147_483_647  # ECS: healthCheckGracePeriodSeconds is a 32-bit integer
_MAX_CAPACITY = 10_000
#: event task-definition revisions above this are not padded (each revision is one registration)
MAX_EVENT_REVISION = 5_000

_APP_PORT = 8080


def _meant(key: str, known: set[str] | frozenset[str]) -> str:
    """``; did you mean desiredCount?`` for ``desiredcount``: a key of another case, or a close spelling
    (a new user's ``desiredcount`` built the service with 1 task, named only among 17 known keys)."""
    import difflib

    same = [k for k in known if k.lower() == key.lower()]
    close = same or difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.8)
    return f"; did you mean {close[0]}?" if close else ""


def fleet_warnings(fleet: dict[str, Any]) -> list[str]:
    """Keys of ``fleet.json`` this tool does not read (a typo is otherwise silently ignored)."""
    out = [f"fleet.json: unknown key {k!r} ignored" for k in sorted(set(fleet) - _FLEET_KEYS)]
    for c in fleet.get("clusters", []):
        out += [f"fleet.json: {c['name']}: unknown key {k!r} ignored" for k in sorted(set(c) - _CLUSTER_KEYS)]
        for svc in c.get("services", []):
            out += [f"fleet.json: {c['name']}/{svc['name']}: unknown key {k!r} ignored{_meant(k, _SERVICE_KEYS)} "
                    f"(known: {', '.join(sorted(_SERVICE_KEYS))})" for k in sorted(set(svc) - _SERVICE_KEYS)]
            if svc.get("schedulingStrategy") == "DAEMON" and "desiredCount" in svc:
                out.append(f"fleet.json: {c['name']}/{svc['name']}: desiredCount ignored: a DAEMON service runs "
                           "one task per container instance")
    return out


@functools.cache
def _regions() -> frozenset[str]:
    """The regions ECS runs in, every partition: what ``boto3.session.Session().get_available_regions("ecs",
    partition)`` returns over ``get_available_partitions()`` (a test checks it), read straight from
    botocore's endpoint data (``botocore/data/endpoints.json``: a partition's ``services.ecs.endpoints``
    that are among its ``regions``), so checking ``fleet.json`` does not import boto3 (about 100 ms)."""
    from importlib.util import find_spec

    spec = find_spec("botocore")
    data_dir = Path(next(iter(spec.submodule_search_locations or []))) / "data" if spec else None
    if data_dir is None or not (data_dir / "endpoints.json").exists() and not (data_dir / "endpoints.json.gz").exists():
        import boto3  # an unusual botocore layout: ask it

        session = boto3.session.Session()
        return frozenset(r for p in session.get_available_partitions()
                         for r in session.get_available_regions("ecs", p))
    plain = data_dir / "endpoints.json"
    if plain.exists():
        blob = plain.read_bytes()
    else:  # a botocore that ships its data compressed
        import gzip

        blob = gzip.decompress((data_dir / "endpoints.json.gz").read_bytes())
    try:
        return _ecs_regions(blob)
    except msgspec.ValidationError:  # a layout this reading does not expect: the whole file, as json reads it
        pass
    data = json.loads(blob)
    return frozenset(name for partition in data["partitions"]
                     for name in partition.get("services", {}).get("ecs", {}).get("endpoints", {})
                     if name in partition.get("regions", {}))


class _Ecs(msgspec.Struct):
    endpoints: dict[str, Any] = {}


class _Services(msgspec.Struct):
    ecs: _Ecs = msgspec.field(default_factory=_Ecs)


class _Partition(msgspec.Struct):
    regions: dict[str, Any] = {}
    services: _Services = msgspec.field(default_factory=_Services)


class _Endpoints(msgspec.Struct):
    partitions: list[_Partition]


def _ecs_regions(blob: bytes) -> frozenset[str]:
    """:func:`_regions` of ``endpoints.json``'s bytes, decoding only the partitions' ``regions`` and
    ``services.ecs.endpoints`` (msgspec skips every other service: the file is 1.2 MB, read at each replay).

    Raises:
        msgspec.ValidationError: a layout other than the one read here (the caller reads it with json).
    """
    data = msgspec.json.decode(blob, type=_Endpoints)
    return frozenset(name for p in data.partitions for name in p.services.ecs.endpoints if name in p.regions)


def _is_int(value: Any, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def check_fleet(fleet: Any) -> None:
    """Validate a parsed ``fleet.json`` (SCENARIOS.md).

    Raises:
        ScenarioError: one line naming the cluster/service and the value that cannot be built.
    """
    if not isinstance(fleet, dict) or not isinstance(fleet.get("clusters"), list):
        raise ScenarioError("fleet.json: expected an object with a 'clusters' list")
    account, region = fleet.get("account"), fleet.get("region")
    if account is not None and (isinstance(account, bool) or not re.fullmatch(r"[0-9]{12}", str(account))):
        raise ScenarioError(f"fleet.json: account must be 12 digits, got {str(account)[:40]!r}")
    if region is not None and (not isinstance(region, str) or region not in _regions()):
        raise ScenarioError(f"fleet.json: region {str(region)[:40]!r} is not an AWS region ECS runs in")
    clusters: set[str] = set()
    # target group name -> (load balancer type, health check, first user): a target group is one resource
    groups: dict[str, tuple[str, Any, str]] = {}
    # task definition family -> (containers, first user): one family is registered with one shape
    families: dict[str, tuple[Any, str]] = {}
    for c in fleet["clusters"]:
        if not isinstance(c, dict) or not isinstance(c.get("name"), str) or not c["name"]:
            raise ScenarioError("fleet.json: every cluster needs a 'name'")
        if c["name"] in clusters:
            raise ScenarioError(f"fleet.json: cluster {c['name'][:80]!r} is listed twice: keep one entry and put "
                                "all its services in it")
        if not _NAME.fullmatch(c["name"]):
            raise ScenarioError(f"fleet.json: cluster {c['name'][:80]!r}: a name is unique, [A-Za-z0-9_-], "
                                "at most 255")
        clusters.add(c["name"])
        if not isinstance(c.get("services", []), list):
            raise ScenarioError(f"fleet.json: {c['name']}: services is a list")
        services: set[str] = set()
        for s in c.get("services", []):
            if not isinstance(s, dict) or not isinstance(s.get("name"), str) or not s["name"]:
                raise ScenarioError(f"fleet.json: a service of {c['name']} has no 'name'")
            if s["name"] in services:
                raise ScenarioError(f"fleet.json: {c['name']}: service {s['name'][:80]!r} is listed twice: keep one "
                                    "entry (merge the keys of both into it)")
            if not _NAME.fullmatch(s["name"]):
                raise ScenarioError(f"fleet.json: {c['name']}: service {s['name'][:80]!r}: a name is unique in "
                                    "its cluster, [A-Za-z0-9_-], at most 255")
            services.add(s["name"])
            _check_service(c["name"], s, groups)
            family = _family(s)
            seen = families.setdefault(family, (_container_shape(s), f"{c['name']}/{s['name']}"))
            if seen[0] != _container_shape(s):
                raise ScenarioError(f"fleet.json: {c['name']}/{s['name']} and {seen[1]} run task definition family "
                                    f"{family!r} with different containers; one family has one set of containers "
                                    "(give one of them its own taskDefinitionFamily)")


def _check_service(cluster: str, s: dict[str, Any], groups: dict[str, tuple[str, Any, str]]) -> None:
    where = f"fleet.json: {cluster}/{s['name']}"
    dc = s.get("desiredCount", 1)
    if isinstance(dc, str) and dc.strip().isdigit():
        raise ScenarioError(f"{where}: desiredCount is the string {dc!r}; write the number without quotes: "
                            f"\"desiredCount\": {int(dc)}")
    if not isinstance(dc, int) or isinstance(dc, bool) or not 0 <= dc <= _MAX_CAPACITY:
        # ECS: at most 5,000 tasks per service (service quota); DynamoDB refused 10**38 (moto's traceback)
        raise ScenarioError(f"{where}: desiredCount must be a count from 0 to {_MAX_CAPACITY}, "
                            f"got {json.dumps(dc)[:40]}")
    tgs, tags = s.get("targetGroups", []), s.get("tags", {})
    if not isinstance(tgs, list) or not isinstance(tags, dict):
        raise ScenarioError(f"{where}: targetGroups is a list, tags an object")
    for tg in tgs:
        if not isinstance(tg, str) or not _TARGET_GROUP.fullmatch(tg):
            raise ScenarioError(f"{where}: target group {str(tg)[:80]!r}: "
                                "at most 32 of [A-Za-z0-9-], no hyphen first or last")
    for k, v in tags.items():
        if not 1 <= len(k) <= 128 or len(str(v)) > 256:
            raise ScenarioError(f"{where}: tag {k[:80]!r}: keys are 1 to 128 characters, values at most 256")

    strategy = s.get("schedulingStrategy", "REPLICA")
    if not isinstance(strategy, str) or strategy not in _SCHEDULING:
        raise ScenarioError(f"{where}: schedulingStrategy must be REPLICA or DAEMON, got {str(strategy)[:40]!r}")
    if strategy == "DAEMON" and s.get("autoScaling") is not None:
        raise ScenarioError(f"{where}: a DAEMON service cannot have autoScaling (no desired count to scale)")

    cb = s.get("deploymentCircuitBreaker")
    if cb is not None:
        _check_breaker(where, cb)
    _check_deployment(where, s)
    _check_listed_deployments(where, s.get("deployments"))

    scaling = s.get("autoScaling")
    if scaling is not None and (
            not isinstance(scaling, dict) or set(scaling) != {"minCapacity", "maxCapacity"}
            or not _is_int(scaling["minCapacity"], 0, _MAX_CAPACITY)
            or not _is_int(scaling["maxCapacity"], 0, _MAX_CAPACITY)
            or scaling["minCapacity"] > scaling["maxCapacity"]):
        raise ScenarioError(f"{where}: autoScaling is {{\"minCapacity\": N, \"maxCapacity\": M}}, "
                            f"0 <= N <= M <= {_MAX_CAPACITY}")

    lb_type = s.get("loadBalancerType", "application")
    if not isinstance(lb_type, str) or lb_type not in _LB_TYPES:
        raise ScenarioError(f"{where}: loadBalancerType must be application or network, got {str(lb_type)[:40]!r}")
    if "loadBalancerType" in s and not tgs:
        raise ScenarioError(f"{where}: loadBalancerType needs targetGroups")

    check = s.get("healthCheck")
    if check is not None:
        _check_health_check(where, check, lb_type)
        if not tgs:
            raise ScenarioError(f"{where}: healthCheck needs targetGroups (it is the target groups' check)")
    for tg in tgs:
        seen = groups.setdefault(tg, (lb_type, check, f"{cluster}/{s['name']}"))
        if seen[0] != lb_type:
            raise ScenarioError(f"{where}: target group {tg!r} is behind a {seen[0]} load balancer for {seen[2]}; "
                                f"it cannot also be {lb_type}")
        if seen[1] != check:
            raise ScenarioError(f"{where}: target group {tg!r} has another healthCheck for {seen[2]}; "
                                "a target group has one health check")

    grace = s.get("healthCheckGracePeriodSeconds")
    if grace is not None and not _is_int(grace, 0, _MAX_GRACE_S):
        raise ScenarioError(f"{where}: healthCheckGracePeriodSeconds must be seconds >= 0")

    containers = s.get("containers")
    if containers is not None:
        _check_containers(where, containers)
    log_group = s.get("logGroup")
    if log_group is not None and (not isinstance(log_group, str) or not _LOG_GROUP.fullmatch(log_group)):
        raise ScenarioError(f"{where}: logGroup is a CloudWatch Logs log group name (1 to 512 of "
                            f"[A-Za-z0-9_./#-]), got {json.dumps(log_group)[:80]}")
    container_check = s.get("containerHealthCheck")
    if container_check is not None:
        _check_container_health_check(where, container_check)


def _check_breaker(where: str, cb: Any) -> None:
    """``{"enable": bool, "rollback": bool}`` and optionally ``resetOnHealthyTask`` (bool) and
    ``thresholdConfiguration`` (``{"type": COUNT | BOUNDED_PERCENT | UNBOUNDED_PERCENT, "value": int >= 1}``)."""
    shape = ('deploymentCircuitBreaker is {"enable": bool, "rollback": bool} with optional "resetOnHealthyTask": '
             'bool and "thresholdConfiguration": {"type": COUNT|BOUNDED_PERCENT|UNBOUNDED_PERCENT, "value": N}')
    if (not isinstance(cb, dict) or not {"enable", "rollback"} <= set(cb)
            or set(cb) - {"enable", "rollback", "resetOnHealthyTask", "thresholdConfiguration"}
            or not all(isinstance(cb[k], bool) for k in ("enable", "rollback"))
            or not isinstance(cb.get("resetOnHealthyTask", True), bool)):
        raise ScenarioError(f"{where}: {shape}")
    threshold = cb.get("thresholdConfiguration")
    if threshold is not None and (not isinstance(threshold, dict) or set(threshold) != {"type", "value"}
                                  or threshold["type"] not in _THRESHOLD_TYPES
                                  or not _is_int(threshold["value"], 1, 10_000)):
        raise ScenarioError(f"{where}: {shape}")


def _check_deployment(where: str, s: dict[str, Any]) -> None:
    """``deploymentStrategy``, ``deploymentController``, ``taskDefinitionFamily`` (SCENARIOS.md)."""
    strategy = s.get("deploymentStrategy")
    if strategy is not None:
        if (not isinstance(strategy, dict) or "strategy" not in strategy
                or set(strategy) - {"strategy", "bakeTimeInMinutes"} or strategy["strategy"] not in _STRATEGIES
                or ("bakeTimeInMinutes" in strategy
                    and not _is_int(strategy["bakeTimeInMinutes"], 0, _MAX_BAKE_MINUTES))):
            raise ScenarioError(f"{where}: deploymentStrategy is {{\"strategy\": {' | '.join(sorted(_STRATEGIES))}, "
                                f"\"bakeTimeInMinutes\": 0 to {_MAX_BAKE_MINUTES}}}")
        if strategy["strategy"] == "ROLLING" and "bakeTimeInMinutes" in strategy:
            raise ScenarioError(f"{where}: deploymentStrategy: bakeTimeInMinutes is for BLUE_GREEN, LINEAR and CANARY")
    controller = s.get("deploymentController", "ECS")
    if not isinstance(controller, str) or controller not in _CONTROLLERS:
        raise ScenarioError(f"{where}: deploymentController must be one of {', '.join(sorted(_CONTROLLERS))}, got "
                            f"{str(controller)[:40]!r}")
    if controller != "ECS" and strategy is not None:
        raise ScenarioError(f"{where}: deploymentStrategy is for the ECS deployment controller, not {controller}")
    if controller != "ECS" and s.get("schedulingStrategy") == "DAEMON":
        raise ScenarioError(f"{where}: a DAEMON service uses the ECS deployment controller")
    family = s.get("taskDefinitionFamily")
    if family is not None and (not isinstance(family, str) or not _NAME.fullmatch(family)):
        raise ScenarioError(f"{where}: taskDefinitionFamily {str(family)[:80]!r}: [A-Za-z0-9_-], at most 255")


def _check_listed_deployments(where: str, rows: Any) -> None:
    """``deployments`` (SCENARIOS.md): what ListServiceDeployments answers for the service, a list of
    ``{"id": "ecs-svc/ID", "status": STATUS, "startedAt": ISO, "finishedAt": ISO}`` (``statusReason``
    optional)."""
    if rows is None:
        return
    if not isinstance(rows, list):
        raise ScenarioError(f"{where}: deployments is a list of {{id, status, startedAt, finishedAt}}")
    for i, row in enumerate(rows):
        at = f"{where}: deployments[{i}]"
        if not isinstance(row, dict):
            raise ScenarioError(f"{at}: an object {{id, status, startedAt, finishedAt}}")
        unknown = set(row) - _DEPLOYMENT_KEYS
        if unknown:
            raise ScenarioError(f"{at}: unknown key {sorted(unknown)[0]!r} "
                                f"(known: {', '.join(sorted(_DEPLOYMENT_KEYS))})")
        did = row.get("id")
        if not is_deployment_id(did):  # as the event model takes detail.deploymentId, letters included
            raise ScenarioError(f"{at}: id {str(did)[:80]!r} is not a deployment id "
                                "(ecs-svc/ and at most 64 letters or digits)")
        if row.get("status") not in DEPLOYMENT_STATUSES:
            raise ScenarioError(f"{at}: status {str(row.get('status'))[:40]!r}: one of "
                                f"{', '.join(sorted(DEPLOYMENT_STATUSES))}")
        for key in ("startedAt", "finishedAt"):
            if row.get(key) is None:
                continue
            try:
                t = datetime.fromisoformat(str(row[key]).replace("Z", "+00:00")) if isinstance(row[key], str) else None
            except ValueError:
                t = None
            if t is None or t.tzinfo is None:
                raise ScenarioError(f"{at}: {key} {str(row[key])[:40]!r} is not an ISO 8601 UTC time (…Z)")


def _family(s: dict[str, Any]) -> str:
    """The task definition family a fleet.json service runs (``taskDefinitionFamily``, default its name)."""
    return str(s.get("taskDefinitionFamily") or s["name"])


def fleet_families(fleet: dict[str, Any]) -> set[str]:
    """The task definition families of every ``fleet.json`` service (:func:`build_fleet` registers
    each with the containers the fleet gives it)."""
    return {_family(s) for c in fleet["clusters"] for s in c.get("services", [])}


def _container_shape(s: dict[str, Any]) -> Any:
    """What one family's registration is made of: the containers (default one essential ``app``) and the
    container health check."""
    containers = s.get("containers") or [{"name": "app", "essential": True}]
    return json.dumps([containers, s.get("containerHealthCheck"), s.get("logGroup")], sort_keys=True)


def _check_restart_policy(where: str, name: str, policy: Any) -> None:
    """ECS API reference, ContainerRestartPolicy."""
    shape = (f"{where}: container {name!r}: restartPolicy is {{\"enabled\": bool, \"ignoredExitCodes\": [int, at "
             f"most {_MAX_IGNORED_EXIT_CODES}], \"restartAttemptPeriod\": {_RESTART_PERIOD[0]} to "
             f"{_RESTART_PERIOD[1]} seconds}}")
    if not isinstance(policy, dict) or "enabled" not in policy or set(policy) - _RESTART_KEYS \
            or not isinstance(policy["enabled"], bool):
        raise ScenarioError(shape)
    codes = policy.get("ignoredExitCodes", [])
    if not isinstance(codes, list) or len(codes) > _MAX_IGNORED_EXIT_CODES \
            or not all(_is_int(c, -(2**31), 2**32 - 1) for c in codes):
        raise ScenarioError(shape)
    if "restartAttemptPeriod" in policy and not _is_int(policy["restartAttemptPeriod"], *_RESTART_PERIOD):
        raise ScenarioError(shape)


def _check_health_check(where: str, check: Any, lb_type: str) -> None:
    if not isinstance(check, dict) or not check:
        raise ScenarioError(f"{where}: healthCheck is an object ({', '.join(sorted(_HEALTH_CHECK_KEYS))})")
    unknown = set(check) - _HEALTH_CHECK_KEYS
    if unknown:
        raise ScenarioError(f"{where}: healthCheck: unknown key {sorted(unknown)[0]!r} "
                            f"(known: {', '.join(sorted(_HEALTH_CHECK_KEYS))})")
    path = check.get("path")
    if path is not None and (not isinstance(path, str) or not path.startswith("/") or len(path) > 1024
                             or any(ch.isspace() for ch in path)):
        raise ScenarioError(f"{where}: healthCheck.path must start with '/', no spaces, at most 1024")
    matcher = check.get("matcher")
    if matcher is not None and (not isinstance(matcher, str) or not _MATCHER.fullmatch(matcher)):
        raise ScenarioError(f"{where}: healthCheck.matcher is HTTP codes like \"200\", \"200-299\" or \"200,302\"")
    for key, (_, low, high) in _HEALTH_CHECK_INTS.items():
        if key in check and not _is_int(check[key], low, high):
            raise ScenarioError(f"{where}: healthCheck.{key} must be an integer from {low} to {high}")
    if "timeoutSeconds" in check and "intervalSeconds" in check and check["timeoutSeconds"] >= check["intervalSeconds"]:
        raise ScenarioError(f"{where}: healthCheck.timeoutSeconds must be less than intervalSeconds")
    # one of the two given: the other is the API's default (interval 30; timeout 5 HTTP, 10 TCP)
    timeout = check.get("timeoutSeconds", 5 if lb_type == "application" else 10)
    interval = check.get("intervalSeconds", 30)
    if timeout > interval or (timeout == interval and lb_type == "application"):
        raise ScenarioError(f"{where}: healthCheck.timeoutSeconds ({timeout}) must be less than intervalSeconds "
                            f"({interval}; a key not given is the API's default)")
    if lb_type == "network" and matcher is not None and path is None:
        raise ScenarioError(f"{where}: healthCheck.matcher needs a path (an HTTP check) behind a network LB")


def _check_containers(where: str, containers: Any) -> None:
    if not isinstance(containers, list) or not containers:
        raise ScenarioError(f"{where}: containers is a non-empty list of {{\"name\", \"essential\"}}")
    names: set[str] = set()
    for ct in containers:
        if not isinstance(ct, dict) or not isinstance(ct.get("name"), str) or not _NAME.fullmatch(ct["name"]):
            raise ScenarioError(f"{where}: every container needs a 'name' of [A-Za-z0-9_-], at most 255")
        if ct["name"] in names:
            raise ScenarioError(f"{where}: container {ct['name'][:80]!r} appears twice")
        names.add(ct["name"])
        unknown = set(ct) - _CONTAINER_KEYS
        if unknown:
            raise ScenarioError(f"{where}: container {ct['name'][:80]!r}: unknown key {sorted(unknown)[0]!r} "
                                "(known: essential, name, restartPolicy)")
        if "restartPolicy" in ct:
            _check_restart_policy(where, ct["name"], ct["restartPolicy"])
        if not isinstance(ct.get("essential", True), bool):
            raise ScenarioError(f"{where}: container {ct['name'][:80]!r}: essential is true or false")
    if not any(ct.get("essential", True) for ct in containers):
        raise ScenarioError(f"{where}: at least one container must be essential (ECS requires it)")


def _check_container_health_check(where: str, check: Any) -> None:
    known = {"command", *_CONTAINER_CHECK_INTS}
    if not isinstance(check, dict) or "command" not in check:
        raise ScenarioError(f"{where}: containerHealthCheck is an object with a 'command'")
    unknown = set(check) - known
    if unknown:
        raise ScenarioError(f"{where}: containerHealthCheck: unknown key {sorted(unknown)[0]!r} "
                            f"(known: {', '.join(sorted(known))})")
    cmd = check["command"]
    if (not isinstance(cmd, list) or len(cmd) < 2 or not all(isinstance(p, str) for p in cmd)
            or cmd[0] not in ("CMD", "CMD-SHELL")):
        raise ScenarioError(f"{where}: containerHealthCheck.command is [\"CMD\" or \"CMD-SHELL\", ...strings]")
    for key, (low, high) in _CONTAINER_CHECK_INTS.items():
        if key in check and not _is_int(check[key], low, high):
            raise ScenarioError(f"{where}: containerHealthCheck.{key} must be an integer from {low} to {high}")


# --- what the events name ----------------------------------------------------------------------------

_TD_ARN = re.compile(rb'"taskDefinitionArn"\s*:\s*"(arn:aws[a-z-]*:ecs:([a-z0-9-]+):(\d{12}):task-definition/'
                     rb'([A-Za-z0-9_-]{1,255}):(\d{1,9}))"')


_NAME_VALUE = re.compile(rb'"name"\s*:\s*"([^"\\]*)"')


def _nothing_new(line: bytes, names: set[str]) -> bool:
    """True when decoding ``line`` cannot add a container name to ``names``: every ``"name": "..."``
    string in it is one of them already (or not a container name). A line with a backslash may spell a
    key or a name with escapes, so it is always decoded; the literal pairs are a superset of
    ``detail.containers[].name``, so the answer is never wrong, only sometimes cautious."""
    if b"\\" in line:
        return False
    return all(v in names or not _NAME.fullmatch(v)
               for v in (raw.decode("utf-8", "replace") for raw in _NAME_VALUE.findall(line)))


#: bytes read at a time by :func:`task_definitions_in_events` (whole lines: up to the block's last newline)
_BLOCK = 1 << 20
#: the stretch of whole lines :func:`task_definitions_in_events` looks at again within a block that adds something
_PIECE = 1 << 14
# what _TD_ARN and _NAME_VALUE find in a line, found over a block of whole lines at once: the value of any
# "taskDefinitionArn" and "name" key, neither ever matching a newline (what the two find in one line holds
# none: the line ends at it). Where every value of the first is an ARN _TD_ARN takes (_TD_ARN_VALUE), the two
# scans stop at the same places and find the same ARNs; with a backslash in the block, neither is used.
_TD_VALUE_IN_LINE = re.compile(rb'"taskDefinitionArn"[^\S\n]*:[^\S\n]*"([^"\n]*)"')
_TD_ARN_VALUE = re.compile(_TD_ARN.pattern.split(b'"(', 1)[1].rsplit(b')"', 1)[0])
_NAME_VALUE_IN_LINE = re.compile(rb'"name"[^\S\n]*:[^\S\n]*"([^"\\\n]*)"')


def task_definitions_in_events(path: Path, account: str, region: str,
                               fleet_families: Collection[str] = (), *, look_for: Collection[bytes] = (),
                               found: set[bytes] | None = None) -> dict[str, tuple[str, ...]]:
    """The task definition ARNs that ``events.jsonl`` carries in this account and region.

    Returns ``{taskDefinitionArn: (container name, ...)}``, the container names as the events list
    them (``detail.containers[].name``, empty when no event names one). ARNs of another account or
    region cannot be registered in this embedded AWS and are left out. A file that cannot be read
    gives ``{}`` (the replay reports it line by line).

    ``fleet_families``: families whose containers ``fleet.json`` defines (:func:`build_fleet` registers
    those, whatever the events name): their ARNs come with no container names, and their lines are
    never decoded. The file is read :data:`_BLOCK` bytes (whole lines) at a time (a fleet-day is 100 MB);
    a block that cannot add anything is passed over without splitting it into lines: every ARN in it
    met before, each of another account or region, of a fleet family, or with every container-like
    ``"name"`` of the block among its names already (and no backslash, which may spell a name escaped).

    ``look_for``: ASCII words (``SERVICE_DEPLOYMENT_IN_PROGRESS``); each one the file may hold as a JSON
    string's text is added to ``found``: written out, or anywhere the file has a backslash (a JSON escape may
    spell it); all of them when the file cannot be read.
    """
    wanted = [w for w in look_for if found is not None and w not in found]
    out: dict[str, set[str]] = {}
    own = set(fleet_families)
    settled: set[bytes] = set()  # ARNs no line adds to (another account or region, a fleet family)

    def lines_of(block: bytes) -> None:
        for line in _lines(block):
            if b"task-definition/" not in line:
                continue
            for m in _TD_ARN.finditer(line):
                if m.group(2).decode() != region or m.group(3).decode() != account:
                    settled.add(m.group(1))
                    continue
                names = out.setdefault(m.group(1).decode(), set())
                if m.group(4).decode() in own:
                    settled.add(m.group(1))
                    continue
                if _nothing_new(line, names):
                    continue
                try:
                    detail = json.loads(decode_line(line)[0]).get("detail") or {}
                    names.update(ct["name"] for ct in detail.get("containers") or []
                                 if isinstance(ct, dict) and isinstance(ct.get("name"), str)
                                 and _NAME.fullmatch(ct["name"]))
                except (ValueError, TypeError, AttributeError, RecursionError):  # the replay rejects it
                    pass

    def adds_nothing(block: bytes) -> bool:
        """Whether every line of ``block`` would leave ``out`` as it is (see the docstring above)."""
        if b"task-definition/" not in block:
            return True
        if b"\\" in block:
            return False
        arns = set(_TD_VALUE_IN_LINE.findall(block)) - settled
        if not arns:
            return True
        if any(not _TD_ARN_VALUE.fullmatch(a) or a.decode() not in out for a in arns):
            return False
        values = {v.decode("utf-8", "replace") for v in set(_NAME_VALUE_IN_LINE.findall(block))}
        return all(v in out[a.decode()] for v in values if _NAME.fullmatch(v) for a in arns)

    def take(block: bytes) -> None:
        """``lines_of(block)``, passing over each :data:`_PIECE` of it that adds nothing: a block that adds
        something (new ARNs near the file's start) mostly has stretches of lines that add nothing more."""
        if adds_nothing(block):
            return
        if len(block) <= _PIECE:
            lines_of(block)
            return
        start = 0
        while start < len(block):
            cut = block.rfind(b"\n", start, start + _PIECE) + 1  # whole lines; a longer line alone
            if cut <= start:
                cut = block.find(b"\n", start + _PIECE) + 1 or len(block)
            piece = block[start:cut]
            if not adds_nothing(piece):
                lines_of(piece)
            start = cut

    try:
        with path.open("rb") as fh:
            rest = b""
            while True:
                chunk = fh.read(_BLOCK)
                if not chunk:
                    break
                cut = chunk.rfind(b"\n") + 1
                if not cut:  # no line ends in it: a longer line, read on
                    rest += chunk
                    continue
                block, rest = rest + chunk[:cut], chunk[cut:]
                if wanted:
                    wanted = _note_words(block, wanted, found)
                take(block)
            if rest and wanted:
                _note_words(rest, wanted, found)
            if rest:
                take(rest)
    except OSError:
        if found is not None:
            found.update(look_for)
        return {}
    return {arn: tuple(sorted(names)) for arn, names in out.items()}


def _note_words(block: bytes, wanted: list[bytes], found: Any) -> list[bytes]:
    """Add to ``found`` each of ``wanted`` that ``block`` holds, or all of them when it holds a backslash;
    returns those still not found."""
    escaped = b"\\" in block
    for w in wanted:
        if escaped or w in block:
            found.add(w)
    return [w for w in wanted if w not in found]


def _lines(block: bytes) -> list[bytes]:
    """``block``'s lines as iterating over the file gives them (split after each ``\\n`` only)."""
    parts = block.split(b"\n")
    last = parts.pop()
    return [p + b"\n" for p in parts] + ([last] if last else [])


# --- building ----------------------------------------------------------------------------------------

class BuiltFleet(msgspec.Struct):
    """What :func:`build_fleet` created.

    ``target_groups``: target group name -> ``{"arn", "lb_arn", "dimension", "lb_dimension",
    "lb_type"}``: ``dimension``/``lb_dimension`` are the CloudWatch dimension values, the ARN suffixes
    (``targetgroup/NAME/ID``, ``app/NAME/ID``), ``lb_type`` is ``application`` or ``network``.
    A Network Load Balancer's ARN is ``loadbalancer/net/...`` on both engines, as in AWS (moto's own
    ``app/`` for every type is corrected by :func:`~ecs_guardrail.replay.embedded.moto_as_aws`);
    ``lb_dimension`` is derived from the ARN as moto returns it, so it matches what a reader of
    DescribeTargetGroups derives, and ``lb_type`` says which kind it really is.
    ``task_definitions``: ``(cluster, service)`` -> the task definition ARN the service runs.
    ``scalable_targets``: ``(cluster, service)`` -> Application Auto Scaling ResourceId.
    """

    target_groups: dict[str, dict[str, str]] = msgspec.field(default_factory=dict)
    task_definitions: dict[tuple[str, str], str] = msgspec.field(default_factory=dict)
    scalable_targets: dict[tuple[str, str], str] = msgspec.field(default_factory=dict)


def _container_definitions(service: dict[str, Any], region: str | None = None) -> list[dict[str, Any]]:
    """The task definition's containers: ``containers`` (default one essential ``app``); the first
    essential one gets the port the target groups forward to, ``containerHealthCheck`` and, with
    ``logGroup``, its ``awslogs`` log configuration (stream prefix :data:`LOG_STREAM_PREFIX`)."""
    containers = service.get("containers") or [{"name": "app", "essential": True}]
    lead = next(ct["name"] for ct in containers if ct.get("essential", True))
    out = []
    for ct in containers:
        d: dict[str, Any] = {"name": ct["name"], "image": f"example/{_family(service)}-{ct['name']}:latest",
                             "memory": 512, "essential": bool(ct.get("essential", True))}
        if ct.get("restartPolicy") is not None:
            d["restartPolicy"] = dict(ct["restartPolicy"])
        if ct["name"] == lead:
            d["portMappings"] = [{"containerPort": _APP_PORT}]
            if service.get("containerHealthCheck"):
                d["healthCheck"] = dict(service["containerHealthCheck"])
            if service.get("logGroup"):
                d["logConfiguration"] = {"logDriver": "awslogs", "options": {
                    "awslogs-group": service["logGroup"], "awslogs-stream-prefix": LOG_STREAM_PREFIX,
                    **({"awslogs-region": region} if region else {})}}
        out.append(d)
    return out


def _lead_container(service: dict[str, Any]) -> str:
    containers = service.get("containers") or [{"name": "app", "essential": True}]
    return next(ct["name"] for ct in containers if ct.get("essential", True))


def _is_botocore_client(client: Any) -> bool:
    """``client`` is a botocore client (moto's engine) rather than the fast engine's in-memory one. Reads
    ``botocore.client`` only if something imported it: no botocore client can exist otherwise, and the
    fast engine never pays botocore's client machinery."""
    module = sys.modules.get("botocore.client")
    return module is not None and isinstance(client, module.BaseClient)


def _moto_ecs_backend(ecs: Any, account: str, region: str) -> Any:
    """moto's ECS backend behind ``ecs`` when it is a botocore client on moto, else ``None`` (the fast
    engine's in-memory client, or moto not importable): the fleet build's one way past the API, for
    what the API cannot say or says slowly."""
    if not _is_botocore_client(ecs):
        return None
    try:
        from moto.ecs.models import ecs_backends

        return ecs_backends[account][region]
    except (ImportError, KeyError, AttributeError, TypeError):
        return None


def _pad_revisions(ecs: Any, family: str, upto: int, containers: list[dict[str, Any]], account: str,
                   region: str) -> None:
    """Register ``family`` until its newest revision is ``upto`` (earlier revisions of the same shape).

    Through moto's backend directly where it can be reached (a registration through the API costs
    about 8 ms; events name revisions in the fifties), else through RegisterTaskDefinition.
    """
    try:
        current = int(ecs.describe_task_definition(taskDefinition=family)["taskDefinition"]["revision"])
    except ClientError:  # ClientException: the family has no revision yet
        current = 0
    missing = upto - current
    if missing <= 0:
        return
    backend = _moto_ecs_backend(ecs, account, region)
    if backend is not None:
        for _ in range(missing):
            backend.register_task_definition(family, [dict(c) for c in containers])
        return
    for _ in range(missing):
        ecs.register_task_definition(family=family, containerDefinitions=containers)


def _settle_service(ecs: Any, account: str, region: str, cluster: str, service: str) -> None:
    """Bring a service just created to the state of one that has been running: its tasks all running
    (``runningCount`` = ``desiredCount``) and its PRIMARY deployment ``COMPLETED``, with the ID the fast
    engine gives it (:func:`~ecs_guardrail.replay.memory_aws.deployment_id`).

    A scenario's fleet is the fleet before the incident (SCENARIOS.md: built "as the real API would hold
    it"); CreateService alone leaves a deployment ``IN_PROGRESS`` with no task running, which made every
    circuit-breaker service look mid-deployment (``deployment_in_progress``) for the whole replay.
    Deployment events in the scenario still say otherwise where they exist. On moto through its backend
    (moto also draws the deployment ID at random, and a decision names it); on
    :class:`~ecs_guardrail.replay.memory_aws.MemoryAws` through its ``settle_service``.
    """
    from ecs_guardrail.replay.memory_aws import deployment_id, settled_deployment

    if not _is_botocore_client(ecs):
        settle = getattr(ecs, "settle_service", None)
        if settle is not None:
            settle(cluster, service)
        return
    backend = _moto_ecs_backend(ecs, account, region)
    found = getattr(backend, "services", {}).get(f"{cluster}:{service}") if backend is not None else None
    if found is None:
        return
    found.running_count = found.desired_count
    found.pending_count = 0
    for d in found.deployments:
        d.update(settled_deployment(deployment_id(cluster, service), found.desired_count))


def _list_deployments(ecs: Any, account: str, region: str, cluster: str, service: str,
                      rows: list[dict[str, Any]]) -> None:
    """Give the embedded ECS the service's ``deployments`` rows to answer ListServiceDeployments from: on
    moto as an attribute of its service object (:data:`LISTED`), on the fast engine through its
    ``list_deployments_from``."""
    if not _is_botocore_client(ecs):
        ecs.list_deployments_from(cluster, service, rows)
        return
    backend = _moto_ecs_backend(ecs, account, region)
    found = getattr(backend, "services", {}).get(f"{cluster}:{service}") if backend is not None else None
    if found is not None:
        setattr(found, LISTED, [dict(r) for r in rows])


def build_fleet(client_factory: Callable[[str], Any], fleet: dict[str, Any], account: str, region: str, *,
                event_task_definitions: Mapping[str, Iterable[str]] | None = None,
                container_insights: Iterable[str] = ()) -> BuiltFleet:
    """Create ``fleet`` (already checked by :func:`check_fleet`) in the embedded AWS.

    ``client_factory(service_name)`` returns a client of the embedded AWS: boto3 on moto, or the fast
    engine's :class:`~ecs_guardrail.replay.memory_aws.MemoryAws`. Built with the
    calls the real API takes: CreateCluster; RegisterTaskDefinition (family = ``taskDefinitionFamily``,
    default the service name; once per family, every service of the family runs that revision;
    containers with their ``restartPolicy``); ELBv2 CreateLoadBalancer
    (one ``application``, one ``network`` load balancer as needed), CreateTargetGroup with the service's
    ``healthCheck``, CreateListener; CreateService (``schedulingStrategy``, ``loadBalancers``, tags,
    ``deploymentController``); UpdateService for ``healthCheckGracePeriodSeconds`` and
    ``deploymentConfiguration`` (circuit breaker, ``strategy``, ``bakeTimeInMinutes``; moto's
    CreateService drops both); Application Auto Scaling RegisterScalableTarget for ``autoScaling``.

    ``event_task_definitions`` (from :func:`task_definitions_in_events`): every ``family:revision`` the
    events carry is made resolvable by DescribeTaskDefinition: a fleet service's family is registered
    up to that revision (the service runs the newest), another family (a standalone job's) with the
    containers the events name, all essential (ECS's default). Revisions above
    :data:`MAX_EVENT_REVISION` are left unresolvable.

    ``container_insights``: clusters created with the ``containerInsights`` setting ``enabled`` (SCENARIOS.md:
    a cluster with rows in ``container_restarts.csv`` has Container Insights).

    Raises:
        botocore.exceptions.ClientError: moto refused a value :func:`check_fleet` let through.
    """
    built = BuiltFleet()
    ecs = client_factory("ecs")
    services = [(c["name"], s) for c in fleet["clusters"] for s in c.get("services", [])]
    wanted, job_containers = _event_revisions(event_task_definitions or {})

    groups: dict[str, tuple[str, dict[str, Any] | None]] = {}
    for _, s in services:
        for tg in s.get("targetGroups", []):
            groups.setdefault(tg, (s.get("loadBalancerType", "application"), s.get("healthCheck")))
    if groups:
        built.target_groups = _build_target_groups(client_factory, groups)

    families_done: set[str] = set()
    td_arns: dict[str, str] = {}  # family -> the revision its services run (one registration per family)
    insights = set(container_insights)
    for c in fleet["clusters"]:
        if c["name"] in insights:
            ecs.create_cluster(clusterName=c["name"], settings=[{"name": "containerInsights", "value": "enabled"}])
        else:
            ecs.create_cluster(clusterName=c["name"])
        for s in c.get("services", []):
            family = _family(s)
            containers = _container_definitions(s, region)
            if family not in families_done:
                _pad_revisions(ecs, family, wanted.get(family, 0) - 1, containers, account, region)
                families_done.add(family)
                td = ecs.register_task_definition(family=family, containerDefinitions=containers)
                td_arns[family] = td["taskDefinition"]["taskDefinitionArn"]
            built.task_definitions[(c["name"], s["name"])] = td_arns[family]
            _build_service(client_factory, ecs, built, c["name"], s, account, region)

    for family, revision in sorted(wanted.items()):
        if family in families_done:
            continue
        names = sorted(job_containers.get(family) or ()) or ["app"]
        containers = [{"name": n, "image": f"example/{family}-{n}:latest", "memory": 512, "essential": True}
                      for n in names]
        _pad_revisions(ecs, family, revision, containers, account, region)
    return built


def _event_revisions(event_task_definitions: Mapping[str, Iterable[str]]
                     ) -> tuple[dict[str, int], dict[str, set[str]]]:
    """``(family -> the newest revision an event names, family -> the container names the events give
    it)``; revisions above :data:`MAX_EVENT_REVISION` are left out (unresolvable)."""
    wanted: dict[str, int] = {}
    job_containers: dict[str, set[str]] = {}
    for arn, names in event_task_definitions.items():
        family, rev = task_definition_parts(arn)
        if int(rev) > MAX_EVENT_REVISION:
            continue
        wanted[family] = max(wanted.get(family, 0), int(rev))
        job_containers.setdefault(family, set()).update(names)
    return wanted, job_containers


def _build_service(client_factory: Callable[[str], Any], ecs: Any, built: BuiltFleet, cluster: str,
                   s: dict[str, Any], account: str, region: str) -> None:
    """One fleet.json service on its registered revision (``built.task_definitions``): CreateService, its
    settled deployment and listed ``deployments``, UpdateService for what moto's CreateService drops, and
    RegisterScalableTarget for ``autoScaling`` (recorded in ``built.scalable_targets``)."""
    td_arn = built.task_definitions[(cluster, s["name"])]
    ecs.create_service(cluster=cluster, serviceName=s["name"], taskDefinition=td_arn, **_create_service_args(s, built))
    _settle_service(ecs, account, region, cluster, s["name"])
    if s.get("deployments"):
        _list_deployments(ecs, account, region, cluster, s["name"], s["deployments"])
    update = _update_service_args(s)
    if update:
        ecs.update_service(cluster=cluster, service=s["name"], **update)
    if s.get("autoScaling") is not None:
        resource = f"service/{cluster}/{s['name']}"
        client_factory("application-autoscaling").register_scalable_target(
            ServiceNamespace="ecs", ResourceId=resource, ScalableDimension="ecs:service:DesiredCount",
            MinCapacity=s["autoScaling"]["minCapacity"], MaxCapacity=s["autoScaling"]["maxCapacity"])
        built.scalable_targets[(cluster, s["name"])] = resource


def _create_service_args(s: dict[str, Any], built: BuiltFleet) -> dict[str, Any]:
    """CreateService's arguments beside cluster, name and task definition: ``loadBalancers`` (the lead
    container's port in each target group), ``tags``, ``schedulingStrategy`` or ``desiredCount``,
    ``deploymentController``."""
    kwargs: dict[str, Any] = {}
    lbs = [{"targetGroupArn": built.target_groups[tg]["arn"], "containerName": _lead_container(s),
            "containerPort": _APP_PORT} for tg in s.get("targetGroups", [])]
    if lbs:
        kwargs["loadBalancers"] = lbs
    if s.get("tags"):
        kwargs["tags"] = [{"key": k, "value": str(v)} for k, v in s["tags"].items()]
    if s.get("schedulingStrategy", "REPLICA") == "DAEMON":
        kwargs["schedulingStrategy"] = "DAEMON"
    else:
        kwargs["desiredCount"] = s.get("desiredCount", 1)
    if s.get("deploymentController", "ECS") != "ECS":
        kwargs["deploymentController"] = {"type": s["deploymentController"]}
    return kwargs


def _update_service_args(s: dict[str, Any]) -> dict[str, Any]:
    """UpdateService's arguments for what moto's CreateService drops: ``healthCheckGracePeriodSeconds`` and
    ``deploymentConfiguration`` (circuit breaker, ``strategy``, ``bakeTimeInMinutes``); ``{}`` for none.
    A key given as null is a key omitted (as check_fleet reads it)."""
    update: dict[str, Any] = {}
    if s.get("healthCheckGracePeriodSeconds") is not None:
        update["healthCheckGracePeriodSeconds"] = s["healthCheckGracePeriodSeconds"]
    config: dict[str, Any] = {}
    if s.get("deploymentCircuitBreaker") is not None:
        config["deploymentCircuitBreaker"] = dict(s["deploymentCircuitBreaker"])
    if s.get("deploymentStrategy") is not None:
        config["strategy"] = s["deploymentStrategy"]["strategy"]
        if "bakeTimeInMinutes" in s["deploymentStrategy"]:
            config["bakeTimeInMinutes"] = s["deploymentStrategy"]["bakeTimeInMinutes"]
    if config:
        update["deploymentConfiguration"] = {**config, "maximumPercent": 200, "minimumHealthyPercent": 100}
    return update


def _build_target_groups(client_factory: Callable[[str], Any],
                         groups: dict[str, tuple[str, dict[str, Any] | None]]) -> dict[str, dict[str, str]]:
    """One VPC, one target group and listener per name, each ALB target group behind its own load balancer
    and the NLB target groups behind one."""
    ec2, elb = client_factory("ec2"), client_factory("elbv2")
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    zones = [z["ZoneName"] for z in ec2.describe_availability_zones()["AvailabilityZones"]][:2]
    subnets = [ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.0.{i}.0/24", AvailabilityZone=z)["Subnet"]["SubnetId"]
               for i, z in enumerate(zones)]
    lbs: dict[str, str] = {}

    def load_balancer(lb_type: str, n: int) -> str:
        # one ALB per target group: the load balancer's own 5xx (HTTPCode_ELB_5XX_Count) is published per
        # load balancer only, so a target group's elb_5xx column is its own ALB's; the NLBs share one
        name = f"guardrail-replay-{n}" if lb_type == "application" else "guardrail-replay-net"
        if name not in lbs:
            lbs[name] = elb.create_load_balancer(Name=name, Subnets=subnets, Type=lb_type,
                                                 Scheme="internal")["LoadBalancers"][0]["LoadBalancerArn"]
        return lbs[name]

    out: dict[str, dict[str, str]] = {}
    for n, name in enumerate(sorted(groups)):
        lb_type, check = groups[name]
        lb_arn = load_balancer(lb_type, n)
        protocol = "HTTP" if lb_type == "application" else "TCP"
        kwargs: dict[str, Any] = {}
        if check:
            if "path" in check:
                kwargs["HealthCheckPath"] = check["path"]
            if "matcher" in check:
                kwargs["Matcher"] = {"HttpCode": check["matcher"]}
            if lb_type == "network":
                kwargs["HealthCheckProtocol"] = "HTTP" if "path" in check else "TCP"
            for key, (param, _, _) in _HEALTH_CHECK_INTS.items():
                if key in check:
                    kwargs[param] = check[key]
        tg = elb.create_target_group(Name=name, Protocol=protocol, Port=_APP_PORT, VpcId=vpc, TargetType="ip",
                                     **kwargs)["TargetGroups"][0]
        elb.create_listener(LoadBalancerArn=lb_arn, Protocol=protocol, Port=1024 + n,
                            DefaultActions=[{"Type": "forward", "TargetGroupArn": tg["TargetGroupArn"]}])
        out[name] = {
            "arn": tg["TargetGroupArn"],
            "lb_arn": lb_arn,
            # CloudWatch dimension values are the ARN suffixes (targetgroup/NAME/ID, app/NAME/ID)
            "dimension": target_group_dimension(tg["TargetGroupArn"]),
            "lb_dimension": lb_arn.split(":loadbalancer/", 1)[1],
            "lb_type": lb_type,
        }
    return out
