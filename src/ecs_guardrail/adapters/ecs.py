"""Amazon ECS: read a service, count a cluster's services, scale to zero and back.

API reference: DescribeServices (``include=["TAGS"]``), ListServices, UpdateService, TagResource,
UntagResource, ListServiceDeployments, DescribeServiceDeployments. Remediation is minimal and
idempotent: read, compare, change only what differs. DescribeServices also gives what rule 4
("Entitlement") needs, in the same call: ``schedulingStrategy``, ``deploymentController.type``,
``deploymentConfiguration`` (``strategy``, ``bakeTimeInMinutes``, ``lifecycleHooks``,
``deploymentCircuitBreaker`` with ``thresholdConfiguration`` and ``resetOnHealthyTask``),
``deployments[]`` (``rolloutState``, ``updatedAt``), ``taskSets[]`` and ``loadBalancers[]``; the service
deployments (ListServiceDeployments, then DescribeServiceDeployments for the unfinished ones) say
where a deployment stands where no event did.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from msgspec import Struct, field

from ecs_guardrail.core.entitlement import CircuitBreaker, Deployment, ServiceDeployment, TaskSet
from ecs_guardrail.core.enum_text import ascii_upper
from ecs_guardrail.core.errors import (
    ActionRefusedError,
    ClusterNotFoundError,
    ServiceAccessDeniedError,
    ServiceNotFoundError,
)
from ecs_guardrail.core.links import resource_name, service_cluster
from ecs_guardrail.core.permissions import permissions
from ecs_guardrail.core.policy import read_opt_out

__all__ = ["EcsService", "ServiceFacts", "PREVIOUS_COUNT_TAG", "REFUSALS", "EcsFleet", "LoadBalancedService",
           "describe_services", "target_group_arns", "DESCRIBE_SERVICES_LIMIT", "restart_policy_enabled"]

#: DescribeServices takes at most 10 services per call (ECS API Reference, DescribeServices, ``services``)
DESCRIBE_SERVICES_LIMIT = 10

_DENIED = ("AccessDeniedException", "AccessDenied")
#: ECS error codes that refuse an action for good (retrying cannot help): the decision becomes an alert
REFUSALS = frozenset({*_DENIED, "ServiceNotFoundException", "ServiceNotActiveException", "ClusterNotFoundException",
                      "UnauthorizedOperation", "InvalidParameterException"})

def _refusal(exc: ClientError, operation: str) -> ActionRefusedError | None:
    """:class:`ActionRefusedError` for a failed action call that ECS refused for good (:data:`REFUSALS`;
    ``reason`` is ``OPERATION: CODE: message``), else ``None`` (the caller re-raises: it is retried)."""
    err = exc.response.get("Error", {})
    code = str(err.get("Code") or "")
    if code in REFUSALS:
        return ActionRefusedError(code, f"{operation}: {code}: {err.get('Message', '')}".rstrip(": "))
    return None


#: service tag that keeps the desired count the watchdog replaced, so ``restore`` works without the table
PREVIOUS_COUNT_TAG = "ecs-guardrail:previous-desired-count"


#: errors after which the service deployments are unread (``None``), not empty
_UNANSWERED = frozenset({"AccessDeniedException", "AccessDenied", "UnknownOperationException",
                         "InvalidAction", "ServiceNotFoundException", "ClusterNotFoundException",
                         "InvalidParameterException"})
#: ServiceDeploymentStatus values of a finished service deployment (ECS API reference)
_FINISHED = frozenset({"SUCCESSFUL", "STOPPED", "ROLLBACK_SUCCESSFUL", "ROLLBACK_FAILED"})


@permissions(ecs_service=["ecs:DescribeServices"])
def describe_services(ecs: Any, cluster: str, services: list[str], *, tags: bool = False) -> list[dict[str, Any]]:
    """Every service of ``services`` (names or ARNs) in ``cluster`` as DescribeServices returns it, in
    calls of :data:`DESCRIBE_SERVICES_LIMIT`, any ``status`` (the caller filters ``ACTIVE``); ``tags``:
    with ``include=["TAGS"]``. The one reader of a service and its ``loadBalancers[]`` for the watchdog,
    the sampler, ``audit`` and ``capture``.

    Raises:
        botocore.exceptions.ClientError: as DescribeServices raises it (the caller translates).
    """
    extra: dict[str, Any] = {"include": ["TAGS"]} if tags else {}
    out: list[dict[str, Any]] = []
    for i in range(0, len(services), DESCRIBE_SERVICES_LIMIT):
        chunk = services[i:i + DESCRIBE_SERVICES_LIMIT]
        out.extend(ecs.describe_services(cluster=cluster, services=chunk, **extra).get("services") or [])
    return out


def target_group_arns(service: dict[str, Any]) -> tuple[str, ...]:
    """``loadBalancers[].targetGroupArn`` of a DescribeServices service, deduplicated, in order (two
    container ports behind one target group list it twice)."""
    return tuple(dict.fromkeys(lb["targetGroupArn"] for lb in service.get("loadBalancers") or []
                               if lb.get("targetGroupArn")))


def _utc(value: Any) -> datetime | None:
    """A botocore timestamp (datetime, any zone) or an ISO 8601 string -> aware UTC; anything else None."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    if not isinstance(value, datetime):
        return None
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC)


class ServiceFacts(Struct, frozen=True):
    """What DescribeServices says of one service (``desired_count``/``running_count`` are task counts).

    ``scheduling_strategy``: ``schedulingStrategy`` (REPLICA / DAEMON); ``circuit_breaker_enabled`` /
    ``circuit_breaker_rollback``: ``deploymentConfiguration.deploymentCircuitBreaker.enable`` / ``.rollback``
    (False when absent); ``deployments``: ``deployments[]`` (id, status, rolloutState, rolloutStateReason);
    ``target_group_arns``: ``loadBalancers[].targetGroupArn`` (deduplicated, in order); the load balancer
    type (application / network) is not in this answer: ELB's DescribeTargetGroups gives it.
    ``task_definition_arn``: ``taskDefinition``; ``deployment_controller``: ``deploymentController.type``.
    ``deployment_strategy``: ``deploymentConfiguration.strategy`` (ROLLING when absent);
    ``bake_time_minutes``: ``deploymentConfiguration.bakeTimeInMinutes``; ``lifecycle_hooks``: how many
    ``deploymentConfiguration.lifecycleHooks``; ``circuit_breaker``: the whole
    ``deploymentCircuitBreaker`` (``thresholdConfiguration.type``/``.value``, ``resetOnHealthyTask``);
    ``task_sets``: ``taskSets[]`` (id, status, stabilityStatus).
    """

    arn: str
    cluster_arn: str
    name: str
    status: str
    desired_count: int
    running_count: int
    tags: dict[str, str] = field(default_factory=dict)
    target_group_arns: tuple[str, ...] = ()
    scheduling_strategy: str = "REPLICA"
    circuit_breaker_enabled: bool = False
    circuit_breaker_rollback: bool = False
    deployments: tuple[Deployment, ...] = ()
    task_definition_arn: str | None = None
    deployment_controller: str = "ECS"
    deployment_strategy: str = "ROLLING"
    bake_time_minutes: int | None = None
    lifecycle_hooks: int = 0
    circuit_breaker: CircuitBreaker = CircuitBreaker()
    task_sets: tuple[TaskSet, ...] = ()

    @property
    def opted_out(self) -> bool:
        """Rule 4's ``opted_out`` from the service's tags (:func:`ecs_guardrail.core.policy.read_opt_out`:
        ``ecs-guardrail:mode=alert-only``, and any mistyped ``ecs-guardrail:`` tag, fail safe)."""
        return read_opt_out(self.tags).opted_out

    def entitlement_fields(self) -> dict[str, Any]:
        """The fields of ``core.entitlement.EntitlementFacts`` this answer gives (``exists`` True), as
        keyword arguments: ``EntitlementFacts(cluster, service, **facts.entitlement_fields(), ...)``."""
        return {"exists": True, "access_denied": False, "scheduling_strategy": self.scheduling_strategy,
                "circuit_breaker_enabled": self.circuit_breaker_enabled,
                "circuit_breaker_rollback": self.circuit_breaker_rollback, "deployments": self.deployments,
                "opted_out": self.opted_out, "opt_out_mistyped": read_opt_out(self.tags).mistyped,
                "deployment_controller": self.deployment_controller,
                "deployment_strategy": self.deployment_strategy, "bake_time_minutes": self.bake_time_minutes,
                "lifecycle_hooks": self.lifecycle_hooks, "circuit_breaker": self.circuit_breaker,
                "desired_count": self.desired_count, "task_sets": self.task_sets}


class EcsService:
    """ECS calls through a client passed in (configure botocore ``adaptive`` retries for storms)."""

    #: ListServiceDeployments ``maxResults`` (the API's most; one page is the newest the watchdog needs)
    SERVICE_DEPLOYMENTS_PAGE = 100

    def __init__(self, client: Any) -> None:
        self._ecs = client

    @permissions(ecs_service=["ecs:DescribeServices"])
    def describe(self, cluster: str, service: str) -> ServiceFacts:
        """DescribeServices for one service, with its tags.

        Raises:
            ServiceNotFoundError: unknown cluster or service, or the service is not ACTIVE (INACTIVE,
                DRAINING, or listed in ``failures`` as MISSING).
            ServiceAccessDeniedError: ECS answered AccessDeniedException: this role may not read the service
                (another account's service in cross-account mode, or a missing grant). It may exist.
        """
        try:
            resp = self._ecs.describe_services(cluster=cluster, services=[service], include=["TAGS"])
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code")
            if code in ("ServiceNotFoundException", "ClusterNotFoundException"):
                raise ServiceNotFoundError(f"{cluster}/{service}: {code}") from exc
            if code in ("AccessDeniedException", "AccessDenied"):
                # a member account's service in cross-account mode (readable only there), or a missing grant
                raise ServiceAccessDeniedError(f"{cluster}/{service}: {code} (another account's service, or the "
                                               f"role lacks ecs:DescribeServices)") from exc
            raise
        services = resp.get("services") or []
        if not services or services[0].get("status") != "ACTIVE":
            failures = resp.get("failures") or []
            why = failures[0].get("reason") if failures else (services[0].get("status") if services else "MISSING")
            raise ServiceNotFoundError(f"{cluster}/{service}: {why}")
        s = services[0]
        config = s.get("deploymentConfiguration") or {}
        breaker = config.get("deploymentCircuitBreaker") or {}
        threshold = breaker.get("thresholdConfiguration") or {}
        bake = config.get("bakeTimeInMinutes")
        return ServiceFacts(
            arn=s["serviceArn"],
            cluster_arn=s.get("clusterArn", ""),
            name=s["serviceName"],
            status=s["status"],
            desired_count=int(s.get("desiredCount", 0)),
            running_count=int(s.get("runningCount", 0)),
            tags={t["key"]: t.get("value", "") for t in s.get("tags") or []},
            target_group_arns=target_group_arns(s),
            scheduling_strategy=ascii_upper(str(s.get("schedulingStrategy") or "REPLICA")),
            circuit_breaker_enabled=bool(breaker.get("enable", False)),
            circuit_breaker_rollback=bool(breaker.get("rollback", False)),
            deployments=tuple(Deployment(id=d.get("id", ""), status=d.get("status", ""),
                                         rollout_state=d.get("rolloutState"),
                                         rollout_state_reason=d.get("rolloutStateReason"),
                                         updated_at=_utc(d.get("updatedAt")))
                              for d in s.get("deployments") or []),
            task_definition_arn=s.get("taskDefinition"),
            deployment_controller=ascii_upper(str((s.get("deploymentController") or {}).get("type") or "ECS")),
            deployment_strategy=ascii_upper(str(config.get("strategy") or "ROLLING")),
            bake_time_minutes=int(bake) if isinstance(bake, int | float) and not isinstance(bake, bool) else None,
            lifecycle_hooks=len(config.get("lifecycleHooks") or []),
            circuit_breaker=CircuitBreaker(
                enabled=bool(breaker.get("enable", False)), rollback=bool(breaker.get("rollback", False)),
                threshold_type=threshold.get("type"),
                threshold_value=int(threshold["value"]) if isinstance(threshold.get("value"), int) else None,
                reset_on_healthy_task=breaker.get("resetOnHealthyTask")
                if isinstance(breaker.get("resetOnHealthyTask"), bool) else None),
            task_sets=tuple(TaskSet(id=str(t.get("id", "")), status=str(t.get("status", "")),
                                    stability_status=t.get("stabilityStatus")) for t in s.get("taskSets") or []),
        )

    @permissions(ecs_service=["ecs:ListServiceDeployments"],
                 ecs_service_deployment=["ecs:DescribeServiceDeployments"])
    def service_deployments(self, cluster: str, service: str, *,
                            since: datetime | None = None) -> tuple[ServiceDeployment, ...] | None:
        """The service's deployments as ECS lists them (ListServiceDeployments, one page, created after
        ``since`` when given), the unfinished ones completed by DescribeServiceDeployments
        (``lifecycleStage``, ``updatedAt``, ``stoppedAt``). Newest first.

        Returns ``None`` when ECS would not answer (AccessDeniedException, an operation this endpoint or
        SDK does not know, a missing service or cluster): the caller decides without the API, from the
        events and ``rolloutState``, never as "no deployment".

        Raises:
            botocore.exceptions.ClientError: any other error (throttling after the client's retries).
        """
        params: dict[str, Any] = {"cluster": cluster, "service": service, "maxResults": self.SERVICE_DEPLOYMENTS_PAGE}
        if since is not None:
            params["createdAt"] = {"after": since}
        try:
            listed = self._ecs.list_service_deployments(**params).get("serviceDeployments") or []
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in _UNANSWERED:
                return None
            raise
        except (AttributeError, NotImplementedError):  # an SDK (or embedded AWS) without the operation
            return None
        detail: dict[str, dict[str, Any]] = {}
        open_arns = [d["serviceDeploymentArn"] for d in listed if d.get("serviceDeploymentArn")
                     and ascii_upper(str(d.get("status", ""))) not in _FINISHED]
        for i in range(0, len(open_arns), 20):  # DescribeServiceDeployments: at most 20 ARNs a call
            try:
                resp = self._ecs.describe_service_deployments(serviceDeploymentArns=open_arns[i:i + 20])
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") in _UNANSWERED:
                    break
                raise
            detail.update({d["serviceDeploymentArn"]: d for d in resp.get("serviceDeployments") or []
                           if d.get("serviceDeploymentArn")})
        out = []
        for brief in listed:
            arn = brief.get("serviceDeploymentArn")
            if not arn:
                continue
            full = {**brief, **detail.get(arn, {})}
            out.append(ServiceDeployment(
                arn=arn, status=ascii_upper(str(full.get("status") or "")), created_at=_utc(full.get("createdAt")),
                started_at=_utc(full.get("startedAt")),
                finished_at=_utc(full.get("finishedAt")) or _utc(full.get("stoppedAt")),
                status_reason=full.get("statusReason"), lifecycle_stage=full.get("lifecycleStage"),
                stage_since=_utc(full.get("updatedAt")) if full.get("lifecycleStage") else None))
        epoch = datetime.min.replace(tzinfo=UTC)
        return tuple(sorted(out, key=lambda d: d.created_at or epoch, reverse=True))

    @permissions(any=["ecs:ListServices"])
    def count_services(self, cluster: str) -> int:
        """Number of services in the cluster (ListServices, all pages of 100: the API's default page is
        10 services, which made a 2,000-service cluster 200 calls per decision; ECS API Reference,
        ListServices ``maxResults``, 1 to 100).

        Raises:
            ClusterNotFoundError: ECS answered ``ClusterNotFoundException``.
            ServiceAccessDeniedError: ECS answered ``AccessDeniedException`` (the role may not list them).
            botocore.exceptions.ClientError: anything else (throttling after the client's retries).
        """
        paginator = self._ecs.get_paginator("list_services")
        try:
            return sum(len(page.get("serviceArns", []))
                       for page in paginator.paginate(cluster=cluster, PaginationConfig={"PageSize": 100}))
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code")
            if code == "ClusterNotFoundException":
                raise ClusterNotFoundError(f"{cluster}: {code}") from exc
            if code in _DENIED:
                raise ServiceAccessDeniedError(f"{cluster}: {code} on ListServices") from exc
            raise

    @permissions(ecs_service=["ecs:TagResource", "ecs:UpdateService"])
    def scale_to_zero(self, facts: ServiceFacts, previous_desired_count: int) -> bool:
        """Tag the service with its previous desired count, then set desiredCount 0.

        Idempotent: a service already at 0 is not updated again. Returns True when UpdateService ran.
        The tag is written first so that a crash between the two calls never loses the count.

        Raises:
            ActionRefusedError: ECS refused TagResource or UpdateService for good (:data:`REFUSALS`:
                AccessDenied from an explicit deny or an SCP, the service or cluster gone).
            botocore.exceptions.ClientError: anything else (throttling after the client's retries): retry.
        """
        try:
            if facts.tags.get(PREVIOUS_COUNT_TAG) != str(previous_desired_count):
                self._ecs.tag_resource(resourceArn=facts.arn,
                                       tags=[{"key": PREVIOUS_COUNT_TAG, "value": str(previous_desired_count)}])
            if facts.desired_count == 0:
                return False
            self._ecs.update_service(cluster=facts.cluster_arn or service_cluster(facts.arn),
                                     service=facts.name, desiredCount=0)
        except ClientError as exc:
            refused = _refusal(exc, exc.operation_name)
            if refused is None:
                raise
            raise refused from exc
        return True

    @permissions(ecs_service=["ecs:UpdateService"])
    def probe(self, facts: ServiceFacts) -> bool:
        """``RECOVERY=probe``: set desiredCount 1 on a service held at zero (the previous-count tag stays:
        the service is still held). Idempotent: a service already at 1 is not updated. Returns True
        when UpdateService ran.

        Raises:
            ActionRefusedError: ECS refused UpdateService for good (:data:`REFUSALS`).
            botocore.exceptions.ClientError: anything else (throttling after the client's retries): retry.
        """
        if facts.desired_count == 1:
            return False
        try:
            self._ecs.update_service(cluster=facts.cluster_arn or service_cluster(facts.arn),
                                     service=facts.name, desiredCount=1)
        except ClientError as exc:
            refused = _refusal(exc, "UpdateService")
            if refused is None:
                raise
            raise refused from exc
        return True

    @permissions(ecs_service=["ecs:UpdateService", "ecs:UntagResource"])
    def restore(self, facts: ServiceFacts, desired_count: int) -> bool:
        """Set desiredCount back and drop the watchdog's tag. Returns True when UpdateService ran."""
        changed = False
        if facts.desired_count != desired_count:
            self._ecs.update_service(cluster=facts.cluster_arn or service_cluster(facts.arn),
                                     service=facts.name, desiredCount=desired_count)
            changed = True
        if PREVIOUS_COUNT_TAG in facts.tags:
            self._ecs.untag_resource(resourceArn=facts.arn, tagKeys=[PREVIOUS_COUNT_TAG])
        return changed


class LoadBalancedService(Struct, frozen=True):
    """A service of the fleet with its target groups (DescribeServices ``loadBalancers``)."""

    cluster: str
    name: str
    desired_count: int
    running_count: int
    target_group_arns: tuple[str, ...]


class EcsFleet:
    """Read-only walk of every cluster's services (the availability sampler's view of ECS).

    API reference: ListClusters, ListServices (100 a page), DescribeServices (10 services a call).
    """

    def __init__(self, client: Any, restart_policies: dict[str, bool] | None = None) -> None:
        """``restart_policies``: task definition ARN -> restart policy enabled, a cache kept as long as the
        caller likes (the Lambda: its execution environment's ``Runtime.cache``; revisions are immutable)."""
        self._ecs = client
        self._restart_policies = {} if restart_policies is None else restart_policies
        # ListClusters / ListServices answers, kept for this instance's life (one sampler run): the
        # healthy-host walk and the restart-count reader share them instead of listing twice
        self._cluster_arns: list[str] | None = None
        self._service_arns: dict[str, list[str]] = {}

    @permissions(any=["ecs:ListClusters"])
    def _clusters(self) -> list[str]:
        if self._cluster_arns is None:
            paginator = self._ecs.get_paginator("list_clusters")
            self._cluster_arns = [arn for page in paginator.paginate() for arn in page.get("clusterArns", [])]
        return self._cluster_arns

    @permissions(any=["ecs:ListServices"])
    def _services(self, cluster: str) -> list[str]:
        if cluster not in self._service_arns:
            paginator = self._ecs.get_paginator("list_services")
            self._service_arns[cluster] = [a for page in paginator.paginate(cluster=cluster)
                                           for a in page.get("serviceArns", [])]
        return self._service_arns[cluster]

    def clusters(self) -> list[str]:
        """Cluster names (ListClusters, all pages; listed once per instance)."""
        return [resource_name(arn) for arn in self._clusters()]

    def cluster_services(self) -> dict[str, list[str]]:
        """``{cluster ARN: [service name, ...]}`` of every cluster (ListClusters, ListServices; all pages,
        no DescribeServices): what the restart-count reader queries."""
        return {arn: sorted(resource_name(a) for a in self._services(resource_name(arn)))
                for arn in self._clusters()}

    def _describe(self, cluster: str) -> list[dict[str, Any]]:
        """DescribeServices of every service of ``cluster``, asked each time (counts change; the calls are free)."""
        return describe_services(self._ecs, cluster, self._services(cluster))

    def load_balanced_services(self, cluster: str) -> list[LoadBalancedService]:
        """ACTIVE services of ``cluster`` that have at least one target group."""
        out: list[LoadBalancedService] = []
        for s in self._describe(cluster):
            tgs = target_group_arns(s)
            if s.get("status") == "ACTIVE" and tgs:
                out.append(LoadBalancedService(cluster, s["serviceName"], int(s.get("desiredCount", 0)),
                                               int(s.get("runningCount", 0)), tgs))
        return out

    @permissions(any=["ecs:DescribeClusters"])  # granted on every cluster: the sampler reads them all
    def container_insights(self) -> dict[str, bool | None]:
        """``{cluster ARN: has Container Insights}`` of every cluster: DescribeClusters with
        ``include=["SETTINGS"]``, 100 clusters a call (ECS API Reference, DescribeClusters ``clusters``),
        setting ``containerInsights`` ``enabled`` or ``enhanced`` (CloudWatch User Guide, "Container
        Insights"). ``None``: ECS would not say (AccessDeniedException, a cluster absent from the answer).

        Raises:
            botocore.exceptions.ClientError: any other error DescribeClusters answers.
        """
        arns = self._clusters()
        out: dict[str, bool | None] = dict.fromkeys(arns)
        for i in range(0, len(arns), DESCRIBE_CLUSTERS_LIMIT):
            try:
                found = self._ecs.describe_clusters(clusters=arns[i:i + DESCRIBE_CLUSTERS_LIMIT],
                                                    include=["SETTINGS"]).get("clusters") or []
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") in _DENIED:
                    continue
                raise
            for c in found:
                value = next((x.get("value") for x in c.get("settings") or [] if x.get("name") == "containerInsights"),
                             "disabled")
                if c.get("clusterArn") in out:
                    out[c["clusterArn"]] = str(value).lower() in ("enabled", "enhanced")
        return out

    def restart_policy_services(self) -> dict[str, list[str]]:
        """``{cluster ARN: [service name, ...]}`` whose container restart counts are worth reading
        (ARCHITECTURE.md, "Restart-policy loops"): ACTIVE services of clusters with Container Insights
        (:meth:`container_insights`) whose task definition enables a restart policy on a container
        (DescribeTaskDefinition ``containerDefinitions[].restartPolicy.enabled``). A read of any other
        service is billed and finds nothing (Container Insights publishes ``RestartCount`` only there).

        Where ECS would not say (DescribeClusters or DescribeTaskDefinition denied or failing), the
        service is kept: one metric too many costs $0.00001, a loop not read is a loop not seen.
        Task definition revisions are immutable, so each answer is cached by ARN in ``restart_policies``
        (:func:`restart_policy_enabled`). Sorted by service name.

        Raises:
            botocore.exceptions.ClientError: as ListClusters, ListServices and DescribeServices raise it.
        """
        out: dict[str, list[str]] = {}
        for arn, insights in self.container_insights().items():
            if insights is False:
                continue
            names = sorted(s["serviceName"] for s in self._describe(resource_name(arn))
                           if s.get("status") == "ACTIVE"
                           and restart_policy_enabled(self._ecs, s.get("taskDefinition"),
                                                         self._restart_policies) is not False)
            if names:
                out[arn] = names
        return out


#: DescribeClusters takes at most 100 clusters per call (ECS API Reference, DescribeClusters, ``clusters``)
DESCRIBE_CLUSTERS_LIMIT = 100
#: task definition ARNs a restart-policy cache holds before it is cleared (bounded memory in a warm Lambda)
RESTART_POLICY_CACHE_MAX = 10_000


@permissions(any=["ecs:DescribeTaskDefinition"])
def restart_policy_enabled(ecs: Any, task_definition: str | None, cache: dict[str, bool]) -> bool | None:
    """Does a container of ``task_definition`` (an ARN, DescribeServices ``taskDefinition``) enable a
    restart policy (DescribeTaskDefinition ``containerDefinitions[].restartPolicy.enabled``; ECS Developer
    Guide, "Restart individual containers in Amazon ECS tasks with container restart policies")?

    ``None``: unknown (no ARN, or DescribeTaskDefinition failed: the error is not cached, the next run
    asks again). Answers are kept in ``cache`` by ARN (cleared past :data:`RESTART_POLICY_CACHE_MAX`).
    Never raises.
    """
    if not task_definition:
        return None
    if task_definition in cache:
        return cache[task_definition]
    try:
        td = ecs.describe_task_definition(taskDefinition=task_definition).get("taskDefinition") or {}
    except (ClientError, BotoCoreError):
        return None
    enabled = any((c.get("restartPolicy") or {}).get("enabled") is True for c in td.get("containerDefinitions") or [])
    if len(cache) >= RESTART_POLICY_CACHE_MAX:
        cache.clear()
    cache[task_definition] = enabled
    return enabled
