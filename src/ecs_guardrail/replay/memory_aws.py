"""The fast engine's AWS: ECS, ELBv2, EC2, CloudWatch, Application Auto Scaling and SNS in memory.

A replay runs the handlers and adapters unchanged over clients that answer from Python dicts instead of
moto, which costs seconds to import (its EC2 models alone about 1.7 s), to load botocore's service
models and to build the fleet (one VPC, load balancers, target groups), and a few hundred microseconds
a call after that. Only the operations the fleet build (:func:`ecs_guardrail.replay.fleet.build_fleet`), the
handlers, the sampler and ``restore`` make are here, with the request parameters and response fields
of the API reference that the adapters send and read:

- ECS: CreateCluster, ListClusters, RegisterTaskDefinition, DescribeTaskDefinition, CreateService,
  UpdateService, DescribeServices (``include=["TAGS"]``), ListServices, TagResource, UntagResource,
  ListServiceDeployments, DescribeServiceDeployments (derived from the service's ``deployments[]`` by
  :func:`service_deployments_of`, which the moto engine's patch uses too: moto 5 has neither operation);
- ELBv2: CreateLoadBalancer, CreateTargetGroup, CreateListener, DescribeTargetGroups;
- EC2: CreateVpc, DescribeAvailabilityZones, CreateSubnet (the fleet build's VPC, nothing else);
- CloudWatch: PutMetricData, GetMetricData (``Minimum`` per period, ``TimestampAscending``);
- Application Auto Scaling: RegisterScalableTarget, DescribeScalableTargets;
- SNS: CreateTopic, Publish.

Where moto (the ``--engine moto`` reference) answers differently from AWS in a way a replay can see, this
follows moto, so both engines give the same output (``tests/e2e/test_engines.py``): a new service
reports ``runningCount`` 0 and one PRIMARY deployment ``IN_PROGRESS`` (``COMPLETED`` at desired count 0)
that no later call moves on, and an UpdateService with ``desiredCount`` sets ``runningCount`` to it at
once. The fleet build then settles every service it created (``settle_service`` here, moto's backend
there: :func:`ecs_guardrail.replay.fleet._settle_service`), so a replay starts from a fleet that has been
running: tasks all running, deployment ``COMPLETED``. The port is the boto3 client surface;
``tests/contract/test_aws_port.py`` runs the adapters against this and against moto and compares their answers.

Every call runs the handlers registered on ``client.meta.events`` for ``before-call.*.*`` (as botocore
does), so :class:`ecs_guardrail.replay.embedded.CallCounter` counts calls here too. Errors are
:class:`botocore.exceptions.ClientError` with the codes AWS (and moto) give: ``ClusterNotFoundException``,
``ServiceNotFoundException``, ``ClientException`` (an unknown task definition), ``TargetGroupNotFound``,
``ObjectNotFoundException``.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import json
import operator
from collections import defaultdict
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError
from msgspec import Struct

from ecs_guardrail.core.enum_text import ascii_upper
from ecs_guardrail.core.lazy import lazy_module
from ecs_guardrail.core.links import resource_name

if TYPE_CHECKING:
    import copy
else:  # only for what _clone does not rebuild itself (no answer so far): not imported by every replay
    copy = lazy_module("copy")

__all__ = ["MemoryAws", "MemoryClient", "UnsupportedOperationError", "deployment_id", "settled_deployment",
           "task_definition_revision", "service_deployments_of", "FLEET_EPOCH"]

#: when the deployments of a scenario's fleet were made and finished: before any history the scenario
#: holds (a fleet.json describes the fleet as it stood before the first event; SCENARIOS.md)
FLEET_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
#: DescribeServices ``rolloutState`` -> ListServiceDeployments ``status`` of the same deployment
_SHARED = (str, int, float, bool, type(None), datetime)


def _clone(value: Any) -> Any:
    """A deep copy of an answer's data (dicts, lists and tuples rebuilt; text, numbers and datetimes shared:
    they are immutable), as :func:`copy.deepcopy` gives it at a fraction of its cost (a replay copies every
    answer); anything else goes to :func:`copy.deepcopy`."""
    kind = type(value)
    if kind is dict:
        return {k: v if type(v) in _SHARED else _clone(v) for k, v in value.items()}
    if kind is list:
        return [v if type(v) in _SHARED else _clone(v) for v in value]
    if kind in _SHARED:
        return value
    if kind is tuple:
        return tuple(_clone(v) for v in value)
    return copy.deepcopy(value)


_ROLLOUT_TO_STATUS = {"COMPLETED": "SUCCESSFUL", "IN_PROGRESS": "IN_PROGRESS", "FAILED": "STOPPED"}


def task_definition_revision(text: str) -> int | None:
    """The revision a ``family:REVISION`` reference names: ASCII digits, at least 1; ``None`` for anything
    else (``0``, ``-1``, ``1.0``), which DescribeTaskDefinition answers with ClientException."""
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        return None
    return int(text)


def settled_deployment(did: str, desired: int) -> dict[str, Any]:
    """The fields of a PRIMARY deployment whose rollout completed with ``desired`` tasks running, made and
    finished at :data:`FLEET_EPOCH`."""
    return {"id": did, "rolloutState": "COMPLETED", "rolloutStateReason": f"ECS deployment {did} completed.",
            "desiredCount": desired, "runningCount": desired, "pendingCount": 0, "createdAt": FLEET_EPOCH,
            "updatedAt": FLEET_EPOCH}


def _listed_deployment(service_arn: str, row: dict[str, Any]) -> dict[str, Any]:
    """A ``ServiceDeployment`` from one row of a fleet.json service's ``deployments`` (SCENARIOS.md:
    ``{"id": "ecs-svc/123", "status": "SUCCESSFUL", "startedAt": "...Z", "finishedAt": "...Z"}``,
    as ``capture`` writes what ListServiceDeployments answered)."""
    did = str(row.get("id", ""))
    sd: dict[str, Any] = {
        "serviceDeploymentArn": f"{service_arn.replace(':service/', ':service-deployment/', 1)}/"
                                f"{resource_name(did)}",
        "serviceArn": service_arn, "clusterArn": service_arn.replace(":service/", ":cluster/", 1).rsplit("/", 1)[0],
        "status": ascii_upper(str(row.get("status") or "IN_PROGRESS")), "statusReason": row.get("statusReason"),
    }
    for key, field in (("startedAt", "startedAt"), ("startedAt", "createdAt"), ("finishedAt", "finishedAt")):
        if isinstance(row.get(key), str):
            sd[field] = datetime.fromisoformat(row[key].replace("Z", "+00:00"))
    return sd


def service_deployments_of(service_arn: str, deployments: list[dict[str, Any]],
                           listed: list[dict[str, Any]] | tuple[dict[str, Any], ...] = ()) -> list[dict[str, Any]]:
    """The service deployments (ECS API reference, ``ServiceDeployment``) an embedded ECS answers for a
    service whose DescribeServices ``deployments[]`` is ``deployments``: one per deployment,
    ``serviceDeploymentArn`` ``...:service-deployment/CLUSTER/SERVICE/ID`` (ID: the digits of
    ``ecs-svc/ID``), ``status`` from ``rolloutState`` (COMPLETED -> SUCCESSFUL, IN_PROGRESS ->
    IN_PROGRESS, FAILED -> STOPPED), ``createdAt``/``startedAt`` its ``createdAt`` and, once finished,
    ``finishedAt`` its ``updatedAt``; and one per row of the fleet.json service's ``deployments``
    (``listed``: what ListServiceDeployments answered when the scenario was captured; a row replaces a
    deployment of the same ID). Newest first (ListServiceDeployments' order). ``ACTIVE`` entries (the
    deployment a rolling deployment replaces, which the replay derives from the events:
    :mod:`ecs_guardrail.replay.deployments`) are left out, so that rule 4's reading of the service
    deployments is the same with or without them."""
    rows = {sd["serviceDeploymentArn"]: sd for sd in (_listed_deployment(service_arn, r) for r in listed)}
    out = list(rows.values())
    for d in deployments:
        if d.get("status") == "ACTIVE":  # the replay's deployment being replaced: DescribeServices' only
            continue
        did = str(d.get("id", ""))
        status = _ROLLOUT_TO_STATUS.get(ascii_upper(str(d.get("rolloutState") or "IN_PROGRESS")), "IN_PROGRESS")
        sd: dict[str, Any] = {
            "serviceDeploymentArn": f"{service_arn.replace(':service/', ':service-deployment/', 1)}/"
                                    f"{resource_name(did)}",
            "serviceArn": service_arn, "clusterArn": service_arn.replace(":service/", ":cluster/", 1).rsplit("/", 1)[0],
            "status": status, "statusReason": d.get("rolloutStateReason"),
        }
        if d.get("createdAt") is not None:
            sd["createdAt"] = sd["startedAt"] = d["createdAt"]
        if status != "IN_PROGRESS" and d.get("updatedAt") is not None:
            sd["finishedAt"] = d["updatedAt"]
        if sd["serviceDeploymentArn"] not in rows:
            out.append(sd)
    return sorted(out, key=lambda x: x.get("createdAt") or FLEET_EPOCH, reverse=True)


def deployment_id(cluster: str, service: str) -> str:
    """The ID of a new service's PRIMARY deployment: ``ecs-svc/`` and 19 digits (as AWS writes them), made
    from the cluster and service names so that it does not depend on creation order. The moto engine's
    fleet build pins moto's (drawn at random) to the same (:func:`ecs_guardrail.replay.fleet.build_fleet`): a
    decision's message and evidence name it."""
    digest = hashlib.sha256(f"{cluster}/{service}".encode()).digest()
    return f"ecs-svc/{int.from_bytes(digest[:8], 'big') % 10**19:019d}"


def _average(values: list[float]) -> float:
    return sum(values) / len(values)


#: GetMetricData's statistics over one period's values
_STATISTICS: dict[str, Callable[[list[float]], float]] = {
    "Minimum": min, "Maximum": max, "Sum": sum, "SampleCount": len, "Average": _average}


_TIME, _VALUE = operator.itemgetter(0), operator.itemgetter(1)
_SECOND_AND_MICRO = operator.attrgetter("second", "microsecond")


def _one_point_a_minute(points: list[tuple[datetime, float]], start: datetime, period: int, stat: str
                        ) -> tuple[list[datetime], list[float]] | None:
    """GetMetricData's ``(Timestamps, Values)`` ascending of ``points`` (a series' ``(time, value)``
    from ``start`` on, in time order) when each is a period of its own: a 60 s period from a whole
    minute, every point at a whole minute and no two at one, a ``Minimum`` or ``Maximum`` (of one
    value: the value itself), as a CSV's samples are (checked in C, not a step per point); ``None``
    otherwise (the periods are then worked out point by point)."""
    if period != 60 or stat not in ("Minimum", "Maximum") or start.second or start.microsecond or not points:
        return None
    stamps = list(map(_TIME, points))
    if len(set(stamps)) != len(stamps) or set(map(_SECOND_AND_MICRO, stamps)) != {(0, 0)}:
        return None
    return stamps, list(map(float, map(_VALUE, points)))


class UnsupportedOperationError(NotImplementedError):
    """An operation this in-memory AWS does not answer: the replay would need ``--engine moto``."""


def _error(operation: str, code: str, message: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message},
                        "ResponseMetadata": {"HTTPStatusCode": 400}}, operation)


class _Operation(Struct, frozen=True):
    """What a ``before-call`` handler receives as ``model`` (botocore's ``OperationModel.name``)."""

    name: str


class _Events:
    """The part of botocore's event system a client's users touch: ``register`` for ``before-call`` (every
    operation: call counting) and ``provide-client-params.SERVICE.Operation`` (the operation's parameters:
    the sampler's cost model counts the metrics each GetMetricData asks for; ``*`` for any service)."""

    def __init__(self) -> None:
        self.handlers: list[Callable[..., Any]] = []
        self.params_handlers: list[tuple[str, str, Callable[..., Any]]] = []

    def register(self, event_name: str, handler: Callable[..., Any], *_: Any, **__: Any) -> None:
        if event_name.startswith("before-call"):
            self.handlers.append(handler)
        elif event_name.startswith("provide-client-params."):
            parts = (event_name.split(".") + ["*", "*"])[1:3]
            service, operation = parts[0], parts[1]
            self.params_handlers.append((service, operation, handler))


class _ServiceModel(Struct, frozen=True):
    service_name: str


class _Meta:
    def __init__(self, service_name: str, region: str) -> None:
        self.service_model = _ServiceModel(service_name)
        self.region_name = region
        self.events = _Events()


class _Paginator:
    """One page holding every result (the fleets of a replay are small); ``paginate`` takes the
    operation's parameters."""

    def __init__(self, method: Callable[..., dict[str, Any]]) -> None:
        self._method = method

    def paginate(self, **kwargs: Any) -> Iterator[dict[str, Any]]:
        yield self._method(**kwargs)


class MemoryClient:
    """Base of the in-memory clients: ``meta`` (service name, region, events) and call accounting."""

    SERVICE = ""
    #: snake_case operation -> API operation name, for the ``before-call`` handlers
    OPERATIONS: dict[str, str] = {}

    def __init__(self, aws: MemoryAws) -> None:
        self._aws = aws
        self.meta = _Meta(self.SERVICE, aws.region)

    def _call(self, method: str, params: dict[str, Any] | None = None) -> None:
        op = _Operation(self.OPERATIONS[method])
        for service, operation, on_params in self.meta.events.params_handlers:
            if service in ("*", self.SERVICE) and operation in ("*", op.name):
                on_params(params=params or {}, model=op, context={})
        for handler in self.meta.events.handlers:
            handler(model=op, params={}, request_signer=None, context={})

    def get_paginator(self, name: str) -> _Paginator:
        if name not in self.OPERATIONS:
            raise UnsupportedOperationError(f"{self.SERVICE}: no paginator {name!r} in the fast engine")
        return _Paginator(getattr(self, name))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raise UnsupportedOperationError(f"{self.SERVICE}.{name} is not in the fast engine's AWS "
                                        "(replay with --engine moto)")


# ----------------------------------------------------------------------------------------------- ECS

class _Ecs(MemoryClient):
    SERVICE = "ecs"
    OPERATIONS = {"create_cluster": "CreateCluster", "list_clusters": "ListClusters",
                  "describe_clusters": "DescribeClusters",
                  "register_task_definition": "RegisterTaskDefinition",
                  "describe_task_definition": "DescribeTaskDefinition", "create_service": "CreateService",
                  "update_service": "UpdateService", "describe_services": "DescribeServices",
                  "list_services": "ListServices", "tag_resource": "TagResource",
                  "untag_resource": "UntagResource", "list_service_deployments": "ListServiceDeployments",
                  "describe_service_deployments": "DescribeServiceDeployments"}

    def _cluster(self, op: str, cluster: str) -> dict[str, Any]:
        found = self._aws.ecs_clusters.get(resource_name(cluster))
        if found is None:
            raise _error(op, "ClusterNotFoundException", "Cluster not found.")
        return found

    def create_cluster(self, clusterName: str = "default", settings: list[dict[str, str]] | None = None,
                       **_: Any) -> dict[str, Any]:
        self._call("create_cluster")
        arn = self._aws.arn("ecs", f"cluster/{clusterName}")
        cluster = self._aws.ecs_clusters.setdefault(clusterName, {
            "clusterArn": arn, "clusterName": clusterName, "status": "ACTIVE", "services": {},
            "settings": _clone(settings or [{"name": "containerInsights", "value": "disabled"}])})
        return {"cluster": {k: v for k, v in cluster.items() if k not in ("services", "settings")}}

    def describe_clusters(self, clusters: list[str] | None = None, include: list[str] | None = None,
                          **_: Any) -> dict[str, Any]:
        """The clusters named (names or ARNs; default ``default``), ``settings`` only with
        ``include=["SETTINGS"]``; unknown ones in ``failures`` (``MISSING``), as the API reference says."""
        self._call("describe_clusters")
        found, failures = [], []
        for name_or_arn in clusters or ["default"]:
            c = self._aws.ecs_clusters.get(resource_name(name_or_arn))
            if c is None:
                failures.append({"arn": name_or_arn, "reason": "MISSING"})
                continue
            out = {k: _clone(v) for k, v in c.items() if k not in ("services", "settings")}
            out["activeServicesCount"] = sum(s["status"] == "ACTIVE" for s in c["services"].values())
            if "SETTINGS" in (include or []):
                out["settings"] = _clone(c["settings"])
            found.append(out)
        return {"clusters": found, "failures": failures}

    def list_clusters(self, **_: Any) -> dict[str, Any]:
        self._call("list_clusters")
        return {"clusterArns": sorted(c["clusterArn"] for c in self._aws.ecs_clusters.values())}

    def register_task_definition(self, family: str, containerDefinitions: list[dict[str, Any]],
                                 **extra: Any) -> dict[str, Any]:
        self._call("register_task_definition")
        revisions = self._aws.task_definitions.setdefault(family, [])
        revision = len(revisions) + 1
        td = {"taskDefinitionArn": self._aws.arn("ecs", f"task-definition/{family}:{revision}"), "family": family,
              "revision": revision, "status": "ACTIVE", "containerDefinitions": _clone(containerDefinitions),
              **_clone(extra)}
        revisions.append(td)
        return {"taskDefinition": _clone(td)}

    def describe_task_definition(self, taskDefinition: str, **_: Any) -> dict[str, Any]:
        self._call("describe_task_definition")
        name = resource_name(taskDefinition)
        family, colon, rev = name.partition(":")
        revisions = self._aws.task_definitions.get(family) or []
        number = task_definition_revision(rev) if colon else len(revisions)
        td = revisions[number - 1] if number is not None and 1 <= number <= len(revisions) else None
        if td is None:
            raise _error("DescribeTaskDefinition", "ClientException", "Unable to describe task definition.")
        return {"taskDefinition": _clone(td), "tags": []}

    def create_service(self, cluster: str, serviceName: str, taskDefinition: str | None = None,
                       desiredCount: int | None = None, loadBalancers: list[dict[str, Any]] | None = None,
                       schedulingStrategy: str | None = None, tags: list[dict[str, str]] | None = None,
                       deploymentController: dict[str, str] | None = None,
                       deploymentConfiguration: dict[str, Any] | None = None, **_: Any) -> dict[str, Any]:
        self._call("create_service")
        c = self._cluster("CreateService", cluster)
        desired = int(desiredCount or 0)
        controller = deploymentController or {"type": "ECS"}
        service: dict[str, Any] = {
            "serviceArn": self._aws.arn("ecs", f"service/{c['clusterName']}/{serviceName}"),
            "serviceName": serviceName, "clusterArn": c["clusterArn"], "status": "ACTIVE",
            "desiredCount": desired, "runningCount": 0, "pendingCount": desired,
            "taskDefinition": taskDefinition, "loadBalancers": _clone(loadBalancers or []),
            "schedulingStrategy": schedulingStrategy or "REPLICA", "deploymentController": dict(controller),
            "tags": _clone(tags or []), "deployments": [],
        }
        if deploymentConfiguration is not None:
            service["deploymentConfiguration"] = _clone(deploymentConfiguration)
        if controller.get("type", "ECS") == "ECS":  # as moto: one PRIMARY deployment, its state fixed now
            did = deployment_id(c["clusterName"], serviceName)
            state = "COMPLETED" if desired <= 0 else "IN_PROGRESS"
            service["deployments"] = [{
                "id": did, "status": "PRIMARY", "taskDefinition": taskDefinition, "desiredCount": desired,
                "pendingCount": desired, "runningCount": 0, "failedTasks": 0, "rolloutState": state,
                "rolloutStateReason": f"ECS deployment {did} {'completed' if state == 'COMPLETED' else 'in progress'}.",
            }]
        c["services"][serviceName] = service
        self._aws.service_arns.pop(c["clusterName"], None)
        return {"service": self._public(service, tags=True)}

    def settle_service(self, cluster: str, service: str) -> None:
        """Not an AWS operation: the fleet build's step that makes a service just created look like one
        that has been running (:func:`ecs_guardrail.replay.fleet._settle_service` does the same on moto)."""
        s = self._cluster("CreateService", cluster)["services"][service]
        s["runningCount"], s["pendingCount"] = s["desiredCount"], 0
        for d in s["deployments"]:
            d.update(settled_deployment(d["id"], s["desiredCount"]))

    def list_deployments_from(self, cluster: str, service: str, rows: list[dict[str, Any]]) -> None:
        """Not an AWS operation: the fleet build's step that gives ListServiceDeployments and
        DescribeServiceDeployments the fleet.json service's ``deployments`` rows to answer from
        (:func:`service_deployments_of`; the moto engine's patch reads the same rows)."""
        self._cluster("CreateService", cluster)["services"][service]["listed"] = _clone(rows)

    @staticmethod
    def _public(service: dict[str, Any], *, tags: bool) -> dict[str, Any]:
        out = _clone(service)
        out.pop("listed", None)  # not a DescribeServices field: ListServiceDeployments' rows
        if not tags:
            out.pop("tags", None)
        return out

    def update_service(self, cluster: str = "default", service: str = "", desiredCount: int | None = None,
                       **changes: Any) -> dict[str, Any]:
        self._call("update_service")
        c = self._cluster("UpdateService", cluster)
        s = c["services"].get(resource_name(service))
        if s is None:
            raise _error("UpdateService", "ServiceNotFoundException", "Service not found.")
        if desiredCount is not None:  # as moto: the running count follows at once
            s["desiredCount"] = s["runningCount"] = int(desiredCount)
            s["pendingCount"] = 0
        for key in ("healthCheckGracePeriodSeconds", "deploymentConfiguration", "taskDefinition"):
            if changes.get(key) is not None:
                s[key] = _clone(changes[key])
        return {"service": self._public(s, tags=True)}

    def describe_services(self, cluster: str = "default", services: list[str] | None = None,
                          include: list[str] | None = None, **_: Any) -> dict[str, Any]:
        self._call("describe_services")
        c = self._cluster("DescribeServices", cluster)
        found, failures = [], []
        for name_or_arn in services or []:
            s = c["services"].get(resource_name(name_or_arn))
            if s is None:
                arn = name_or_arn if name_or_arn.startswith("arn:") else self._aws.arn("ecs", f"service/{name_or_arn}")
                failures.append({"arn": arn, "reason": "MISSING"})
            else:
                found.append(self._public(s, tags="TAGS" in (include or [])))
        return {"services": found, "failures": failures}

    def list_services(self, cluster: str = "default", **_: Any) -> dict[str, Any]:
        self._call("list_services")
        c = self._cluster("ListServices", cluster)
        services = c["services"]
        arns = self._aws.service_arns.get(c["clusterName"])
        if arns is None or len(arns) != len(services):  # built once per change of the fleet, not per call
            arns = self._aws.service_arns[c["clusterName"]] = sorted(s["serviceArn"] for s in services.values())
        return {"serviceArns": list(arns)}

    def list_service_deployments(self, service: str, cluster: str = "default", status: list[str] | None = None,
                                 createdAt: dict[str, datetime] | None = None, **_: Any) -> dict[str, Any]:
        """The service's deployments (:func:`service_deployments_of`), filtered by ``status`` and
        ``createdAt`` (``after``/``before``) as the API reference says."""
        self._call("list_service_deployments")
        c = self._cluster("ListServiceDeployments", cluster)
        s = c["services"].get(resource_name(service))
        if s is None:
            raise _error("ListServiceDeployments", "ServiceNotFoundException", "Service not found.")
        after, before = (createdAt or {}).get("after"), (createdAt or {}).get("before")
        out = []
        for sd in service_deployments_of(s["serviceArn"], s["deployments"], s.get("listed", ())):
            made = sd.get("createdAt")
            if status and sd["status"] not in status:
                continue
            if made is not None and ((after is not None and made < after) or (before is not None and made > before)):
                continue
            out.append({k: sd[k] for k in ("serviceDeploymentArn", "serviceArn", "clusterArn", "startedAt",
                                           "createdAt", "finishedAt", "status", "statusReason") if k in sd})
        return {"serviceDeployments": out}

    def describe_service_deployments(self, serviceDeploymentArns: list[str], **_: Any) -> dict[str, Any]:
        """Each ARN's service deployment; an unknown ARN is a ``failures`` entry (reason ``MISSING``)."""
        self._call("describe_service_deployments")
        known = {sd["serviceDeploymentArn"]: sd for c in self._aws.ecs_clusters.values()
                 for s in c["services"].values()
                 for sd in service_deployments_of(s["serviceArn"], s["deployments"], s.get("listed", ()))}
        found = [_clone(known[a]) for a in serviceDeploymentArns if a in known]
        failures = [{"arn": a, "reason": "MISSING"} for a in serviceDeploymentArns if a not in known]
        return {"serviceDeployments": found, "failures": failures}

    def _service_by_arn(self, op: str, arn: str) -> dict[str, Any]:
        for c in self._aws.ecs_clusters.values():
            for s in c["services"].values():
                if s["serviceArn"] == arn:
                    return s
        raise _error(op, "InvalidParameterException", f"The ARN {arn} is not a service here.")

    def tag_resource(self, resourceArn: str, tags: list[dict[str, str]], **_: Any) -> dict[str, Any]:
        self._call("tag_resource")
        s = self._service_by_arn("TagResource", resourceArn)
        merged = {t["key"]: t.get("value", "") for t in s["tags"]}
        merged.update({t["key"]: t.get("value", "") for t in tags})
        s["tags"] = [{"key": k, "value": v} for k, v in merged.items()]
        return {}

    def untag_resource(self, resourceArn: str, tagKeys: list[str], **_: Any) -> dict[str, Any]:
        self._call("untag_resource")
        s = self._service_by_arn("UntagResource", resourceArn)
        s["tags"] = [t for t in s["tags"] if t["key"] not in tagKeys]
        return {}


# ----------------------------------------------------------------------------------- ELBv2 and EC2

class _Elbv2(MemoryClient):
    SERVICE = "elbv2"
    OPERATIONS = {"create_load_balancer": "CreateLoadBalancer", "create_target_group": "CreateTargetGroup",
                  "create_listener": "CreateListener", "describe_target_groups": "DescribeTargetGroups"}

    def create_load_balancer(self, Name: str, Type: str = "application", **_: Any) -> dict[str, Any]:
        self._call("create_load_balancer")
        # as AWS: loadbalancer/net/... for a Network Load Balancer (its CloudWatch dimension net/NAME/ID is
        # read under AWS/NetworkELB), loadbalancer/app/... for an application one (the moto engine's patch,
        # embedded.moto_as_aws, names them the same way)
        kind = {"network": "net", "gateway": "gwy"}.get(Type, "app")
        arn = self._aws.arn("elasticloadbalancing", f"loadbalancer/{kind}/{Name}/{next(self._aws.ids):016x}")
        self._aws.load_balancers[arn] = {"LoadBalancerArn": arn, "LoadBalancerName": Name, "Type": Type}
        return {"LoadBalancers": [dict(self._aws.load_balancers[arn])]}

    def create_target_group(self, Name: str, Protocol: str = "HTTP", Port: int = 80, **params: Any
                            ) -> dict[str, Any]:
        self._call("create_target_group")
        arn = self._aws.arn("elasticloadbalancing", f"targetgroup/{Name}/{next(self._aws.ids):016x}")
        tg = {"TargetGroupArn": arn, "TargetGroupName": Name, "Protocol": Protocol, "Port": Port,
              "HealthCheckEnabled": True, "HealthCheckProtocol": params.get("HealthCheckProtocol", Protocol),
              "HealthCheckIntervalSeconds": params.get("HealthCheckIntervalSeconds", 30),
              "HealthCheckTimeoutSeconds": params.get("HealthCheckTimeoutSeconds", 5),
              "HealthyThresholdCount": params.get("HealthyThresholdCount", 5),
              "UnhealthyThresholdCount": params.get("UnhealthyThresholdCount", 2),
              "TargetType": params.get("TargetType", "instance"), "LoadBalancerArns": []}
        if Protocol in ("HTTP", "HTTPS") or "HealthCheckPath" in params:
            tg["HealthCheckPath"] = params.get("HealthCheckPath", "/")
            tg["Matcher"] = params.get("Matcher", {"HttpCode": "200"})
        self._aws.elb_target_groups[arn] = tg
        return {"TargetGroups": [_clone(tg)]}

    def create_listener(self, LoadBalancerArn: str, DefaultActions: list[dict[str, Any]], **_: Any
                        ) -> dict[str, Any]:
        self._call("create_listener")
        for action in DefaultActions:
            tg = self._aws.elb_target_groups.get(action.get("TargetGroupArn", ""))
            if tg is not None and LoadBalancerArn not in tg["LoadBalancerArns"]:
                tg["LoadBalancerArns"].append(LoadBalancerArn)
        return {"Listeners": [{"LoadBalancerArn": LoadBalancerArn, "DefaultActions": DefaultActions}]}

    def describe_target_groups(self, TargetGroupArns: list[str] | None = None, **_: Any) -> dict[str, Any]:
        self._call("describe_target_groups")
        groups = self._aws.elb_target_groups
        if TargetGroupArns is None:
            return {"TargetGroups": [_clone(tg) for tg in groups.values()]}
        missing = [a for a in TargetGroupArns if a not in groups]
        if missing:
            raise _error("DescribeTargetGroups", "TargetGroupNotFound", "One or more target groups not found")
        return {"TargetGroups": [_clone(groups[a]) for a in TargetGroupArns]}


class _Ec2(MemoryClient):
    SERVICE = "ec2"
    OPERATIONS = {"create_vpc": "CreateVpc", "describe_availability_zones": "DescribeAvailabilityZones",
                  "create_subnet": "CreateSubnet"}

    def create_vpc(self, CidrBlock: str, **_: Any) -> dict[str, Any]:
        self._call("create_vpc")
        return {"Vpc": {"VpcId": f"vpc-{next(self._aws.ids):017x}", "CidrBlock": CidrBlock}}

    def describe_availability_zones(self, **_: Any) -> dict[str, Any]:
        self._call("describe_availability_zones")
        return {"AvailabilityZones": [{"ZoneName": f"{self._aws.region}{z}", "State": "available"} for z in "abc"]}

    def create_subnet(self, VpcId: str, CidrBlock: str, AvailabilityZone: str | None = None, **_: Any
                      ) -> dict[str, Any]:
        self._call("create_subnet")
        return {"Subnet": {"SubnetId": f"subnet-{next(self._aws.ids):017x}", "VpcId": VpcId, "CidrBlock": CidrBlock,
                           "AvailabilityZone": AvailabilityZone}}


# ---------------------------------------------------------------------------------------- CloudWatch

class _CloudWatch(MemoryClient):
    SERVICE = "cloudwatch"
    OPERATIONS = {"put_metric_data": "PutMetricData", "get_metric_data": "GetMetricData"}
    #: GetMetricData's limit on queries a call (API reference)
    MAX_QUERIES = 500

    @staticmethod
    def _key(namespace: str, name: str, dimensions: Any) -> tuple[Any, ...]:
        return namespace, name, tuple(sorted((d["Name"], d["Value"]) for d in dimensions))

    def put_metric_data(self, Namespace: str, MetricData: list[dict[str, Any]], **_: Any) -> dict[str, Any]:
        self._call("put_metric_data")
        # a series is looked up once per metric name and dimensions list of the call (a CSV's datapoints of
        # one target group share one list: their dimensions are sorted once, not per datapoint); every list
        # of the request is alive until it returns, so no two of them share an id
        metrics = self._aws.metrics
        of: dict[tuple[str, int], list[tuple[datetime, float]]] = {}
        for d in MetricData:
            dimensions = d.get("Dimensions") or ()
            memo = (d["MetricName"], id(dimensions))
            series = of.get(memo)
            if series is None:
                series = of[memo] = metrics[self._key(Namespace, d["MetricName"], dimensions)]
            t = d["Timestamp"]
            t = t if t.tzinfo else t.replace(tzinfo=UTC)
            bisect.insort(series, (t.astimezone(UTC), float(d["Value"])))
        return {}

    def get_metric_data(self, MetricDataQueries: list[dict[str, Any]], StartTime: datetime, EndTime: datetime,
                        ScanBy: str = "TimestampDescending", **_: Any) -> dict[str, Any]:
        """``Minimum``, ``Maximum``, ``Sum``, ``Average`` or ``SampleCount`` per ``Period`` from ``StartTime``;
        periods without a datapoint are absent."""
        self._call("get_metric_data", {"MetricDataQueries": MetricDataQueries, "StartTime": StartTime,
                                       "EndTime": EndTime, "ScanBy": ScanBy})
        if len(MetricDataQueries) > self.MAX_QUERIES:
            raise _error("GetMetricData", "ValidationError", "too many MetricDataQueries")
        start, end = StartTime.astimezone(UTC), EndTime.astimezone(UTC)
        results = []
        for q in MetricDataQueries:
            stat = q["MetricStat"]
            metric, period = stat["Metric"], int(stat["Period"])
            points = self._aws.metrics.get(self._key(metric["Namespace"], metric["MetricName"],
                                                     metric.get("Dimensions") or []), [])
            lo = bisect.bisect_left(points, (start, float("-inf")))
            hi = bisect.bisect_left(points, (end, float("-inf")))
            one_each = _one_point_a_minute(points[lo:hi], start, period, stat["Stat"])
            if one_each is not None:
                stamps, values = one_each
                if ScanBy != "TimestampAscending":
                    stamps.reverse()
                    values.reverse()
                results.append({"Id": q["Id"], "Label": metric["MetricName"], "StatusCode": "Complete",
                                "Timestamps": stamps, "Values": values})
                continue
            buckets: dict[datetime, list[float]] = {}
            step = timedelta(seconds=period)
            # the points are in time order (from ``start`` on): a period's bucket is worked out once, at its
            # first point, and [bucket, top) holds the points that follow until one reaches ``top``
            bucket = top = start
            got: list[float] = []
            for t, v in points[lo:hi]:
                if t >= top or t < bucket:
                    if top <= t < top + step:  # the next period (a metric published every period)
                        bucket = top
                    else:
                        bucket = start + timedelta(seconds=period * ((t - start).total_seconds() // period))
                    top = bucket + step
                    got = buckets.setdefault(bucket, [])
                got.append(v)
            reduce = _STATISTICS[stat["Stat"]]
            stamps = sorted(buckets, reverse=ScanBy != "TimestampAscending")
            results.append({"Id": q["Id"], "Label": metric["MetricName"], "StatusCode": "Complete",
                            "Timestamps": stamps, "Values": [float(reduce(buckets[t])) for t in stamps]})
        return {"MetricDataResults": results, "Messages": []}


# --------------------------------------------------------------------- Application Auto Scaling, SNS

class _ApplicationAutoScaling(MemoryClient):
    SERVICE = "application-autoscaling"
    OPERATIONS = {"register_scalable_target": "RegisterScalableTarget",
                  "describe_scalable_targets": "DescribeScalableTargets"}

    def register_scalable_target(self, ServiceNamespace: str, ResourceId: str, ScalableDimension: str,
                                 MinCapacity: int | None = None, MaxCapacity: int | None = None,
                                 SuspendedState: dict[str, bool] | None = None, **_: Any) -> dict[str, Any]:
        self._call("register_scalable_target")
        key = (ServiceNamespace, ResourceId, ScalableDimension)
        target = self._aws.scalable_targets.get(key)
        if target is None:
            if MinCapacity is None or MaxCapacity is None:
                raise _error("RegisterScalableTarget", "ValidationException",
                             "MinCapacity and MaxCapacity are required to register a new scalable target")
            target = self._aws.scalable_targets[key] = {
                "ServiceNamespace": ServiceNamespace, "ResourceId": ResourceId,
                "ScalableDimension": ScalableDimension, "MinCapacity": MinCapacity, "MaxCapacity": MaxCapacity,
                "SuspendedState": {"DynamicScalingInSuspended": False, "DynamicScalingOutSuspended": False,
                                   "ScheduledScalingSuspended": False}}
        if MinCapacity is not None:
            target["MinCapacity"] = MinCapacity
        if MaxCapacity is not None:
            target["MaxCapacity"] = MaxCapacity
        if SuspendedState is not None:
            target["SuspendedState"].update(SuspendedState)
        return {"ScalableTargetARN": self._aws.arn("application-autoscaling", f"scalable-target/{ResourceId}")}

    def describe_scalable_targets(self, ServiceNamespace: str, ResourceIds: list[str] | None = None,
                                  ScalableDimension: str | None = None, **_: Any) -> dict[str, Any]:
        self._call("describe_scalable_targets")
        out = [_clone(t) for (ns, rid, dim), t in sorted(self._aws.scalable_targets.items())
               if ns == ServiceNamespace and (ResourceIds is None or rid in ResourceIds)
               and (ScalableDimension is None or dim == ScalableDimension)]
        return {"ScalableTargets": out}


class _Sns(MemoryClient):
    SERVICE = "sns"
    OPERATIONS = {"create_topic": "CreateTopic", "publish": "Publish"}

    def create_topic(self, Name: str, **_: Any) -> dict[str, Any]:
        self._call("create_topic")
        arn = self._aws.arn("sns", Name)
        self._aws.topics.setdefault(arn, [])
        return {"TopicArn": arn}

    def publish(self, TopicArn: str, Message: str, Subject: str | None = None, MessageStructure: str | None = None,
                **_: Any) -> dict[str, Any]:
        self._call("publish")
        if TopicArn not in self._aws.topics:
            raise _error("Publish", "NotFound", "Topic does not exist")
        if MessageStructure is not None:  # one body per protocol: the read-back is a subscriber's, "default"
            try:
                bodies = json.loads(Message) if MessageStructure == "json" else None
            except ValueError:
                bodies = None
            if not isinstance(bodies, dict) or not isinstance(bodies.get("default"), str):
                raise _error("Publish", "InvalidParameter", "Invalid parameter: Message Structure - JSON "
                             "message body failed to parse, or has no default string")
            Message = bodies["default"]
        self._aws.topics[TopicArn].append({"subject": Subject, "message": Message})
        return {"MessageId": f"{next(self._aws.ids):032x}"}


class _Logs(MemoryClient):
    """CloudWatch Logs as far as the crash's words need it: groups and streams made, events put (any age:
    a scenario's lines are as old as its events) and FilterLogEvents on named streams, oldest first."""

    SERVICE = "logs"
    OPERATIONS = {"create_log_group": "CreateLogGroup", "create_log_stream": "CreateLogStream",
                  "put_log_events": "PutLogEvents", "filter_log_events": "FilterLogEvents"}

    def create_log_group(self, logGroupName: str, **_: Any) -> dict[str, Any]:
        self._call("create_log_group")
        if logGroupName in self._aws.log_groups:
            raise _error("CreateLogGroup", "ResourceAlreadyExistsException", "The specified log group already exists")
        self._aws.log_groups[logGroupName] = {}
        return {}

    def create_log_stream(self, logGroupName: str, logStreamName: str, **_: Any) -> dict[str, Any]:
        self._call("create_log_stream")
        group = self._aws.log_groups.get(logGroupName)
        if group is None:
            raise _error("CreateLogStream", "ResourceNotFoundException", "The specified log group does not exist.")
        group.setdefault(logStreamName, [])
        return {}

    def put_log_events(self, logGroupName: str, logStreamName: str, logEvents: list[dict[str, Any]],
                       **_: Any) -> dict[str, Any]:
        self._call("put_log_events")
        stream = self._aws.log_groups.get(logGroupName, {}).get(logStreamName)
        if stream is None:
            raise _error("PutLogEvents", "ResourceNotFoundException", "The specified log stream does not exist.")
        stream.extend((int(e["timestamp"]), str(e["message"])) for e in logEvents)
        stream.sort(key=lambda e: e[0])
        return {}

    def filter_log_events(self, logGroupName: str, logStreamNames: list[str] | None = None,
                          startTime: int | None = None, endTime: int | None = None, **_: Any) -> dict[str, Any]:
        """Every event of the named streams (all when none) with ``startTime <= timestamp <= endTime``
        (epoch milliseconds), oldest first, in one page."""
        self._call("filter_log_events", {"logGroupName": logGroupName})
        group = self._aws.log_groups.get(logGroupName)
        if group is None:
            raise _error("FilterLogEvents", "ResourceNotFoundException", "The specified log group does not exist.")
        events = [{"logStreamName": name, "timestamp": t, "message": m, "ingestionTime": t}
                  for name, stream in group.items() if not logStreamNames or name in logStreamNames
                  for t, m in stream
                  if (startTime is None or t >= startTime) and (endTime is None or t <= endTime)]
        return {"events": sorted(events, key=lambda e: e["timestamp"]), "searchedLogStreams": []}


_CLIENTS: dict[str, type[MemoryClient]] = {c.SERVICE: c for c in (_Ecs, _Elbv2, _Ec2, _CloudWatch,
                                                                   _ApplicationAutoScaling, _Sns, _Logs)}


class MemoryAws:
    """One replay's in-memory AWS account in one region: the state every client of it shares.

    ``client(service)`` returns a client for ``ecs``, ``elbv2``, ``ec2``, ``cloudwatch``,
    ``application-autoscaling``, ``sns`` or ``logs``.

    Raises:
        UnsupportedOperationError: another service, or an operation not listed in the module docstring.
    """

    def __init__(self, account: str, region: str) -> None:
        self.account = account
        self.region = region
        self.partition = "aws-cn" if region.startswith("cn-") else "aws-us-gov" if region.startswith("us-gov-") \
            else "aws"
        self.ids = itertools.count(1)
        self.ecs_clusters: dict[str, dict[str, Any]] = {}
        #: cluster name -> its services' ARNs, sorted (ListServices' one page, built once per fleet change)
        self.service_arns: dict[str, list[str]] = {}
        self.task_definitions: dict[str, list[dict[str, Any]]] = {}
        self.load_balancers: dict[str, dict[str, Any]] = {}
        self.elb_target_groups: dict[str, dict[str, Any]] = {}
        self.metrics: defaultdict[tuple[Any, ...], list[tuple[datetime, float]]] = defaultdict(list)
        self.scalable_targets: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.topics: dict[str, list[dict[str, Any]]] = {}
        #: log group -> stream -> [(timestamp ms, message)], oldest first
        self.log_groups: dict[str, dict[str, list[tuple[int, str]]]] = {}

    def arn(self, service: str, resource: str) -> str:
        """``arn:PARTITION:SERVICE:REGION:ACCOUNT:RESOURCE``."""
        return f"arn:{self.partition}:{service}:{self.region}:{self.account}:{resource}"

    def client(self, service: str) -> MemoryClient:
        cls = _CLIENTS.get(service)
        if cls is None:
            raise UnsupportedOperationError(f"{service} is not in the fast engine's AWS (replay with --engine moto)")
        return cls(self)
