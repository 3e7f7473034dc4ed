"""The embedded AWS of a replay: moto in process (:class:`EmbeddedAws`) or the in-memory fake
(:class:`InMemoryAws`), with the scenario's fleet, history table and alert topic built in it.

No credentials and no network: every client made inside one talks to it, never to a real account.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections import Counter
from collections.abc import Iterator
from typing import Any

from ecs_guardrail.core.links import resource_name
from ecs_guardrail.replay.deployments import DeploymentsFromEvents, replace_active
from ecs_guardrail.replay.fleet import build_fleet, fleet_families, task_definitions_in_events
from ecs_guardrail.replay.scenario import TABLE, TOPIC, Scenario

__all__ = ["EmbeddedAws", "InMemoryAws", "CallCounter", "create_history_table", "moto_as_aws", "scoped_environ"]

_FAKE_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SECURITY_TOKEN": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "POWERTOOLS_TRACE_DISABLED": "true",
    "POWERTOOLS_SERVICE_NAME": "ecs-guardrail",
    "POWERTOOLS_METRICS_NAMESPACE": "EcsGuardrail",
}


# what in the operator's shell would send the embedded AWS's clients elsewhere: a profile (one that does
# not exist fails every client; one that does brings its endpoint_url and region) and the SDK's
# endpoint overrides (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_<SERVICE>, as LocalStack users set them: moto
# intercepts only AWS's own endpoints, so a replay or `audit --scenario` went to that URL and exited 3)
_SHELL_AWS = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE")
#: the eventName that opens a deployment (DeploymentsFromEvents): looked for in events.jsonl while the fleet is built
_OPENS_WORD = b"SERVICE_DEPLOYMENT_IN_PROGRESS"


def _shell_aws_names() -> list[str]:
    return [k for k in os.environ if k in _SHELL_AWS or k.startswith("AWS_ENDPOINT_URL")]


@contextlib.contextmanager
def scoped_environ(values: dict[str, str]) -> Iterator[None]:
    """``values`` set, and the shell's profile and endpoint overrides unset, until the block ends."""
    values = {**values, "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true"}
    removed = _shell_aws_names()
    saved = {k: os.environ.get(k) for k in (*values, *removed)}
    for k in removed:
        os.environ.pop(k)
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.contextmanager
def moto_as_aws() -> Iterator[None]:
    """moto corrected where it answers unlike AWS and a replay would show it (the fast engine answers as
    AWS does): ListServices lists the services of that cluster only. moto keeps services under
    ``CLUSTER:SERVICE`` and tests ``"prod:" in key``, so ``prod`` also listed ``preprod``'s services (and
    ``ig`` those of ``big``): every decision in ``prod`` counted them in its cluster's size.
    DescribeTaskDefinition of a revision that is not a positive integer (``job:1.0``) is ClientException,
    as in AWS and the fast engine (moto raised ValueError: a traceback). A Network Load Balancer's ARN is
    ``loadbalancer/net/NAME/ID`` as in AWS (moto wrote ``app/`` for every type, so an NLB's series went to
    ``AWS/ApplicationELB`` with request metrics it does not have)."""
    from unittest import mock

    import moto.elbv2.models as elbv2_models
    from moto.ecs.exceptions import TaskDefinitionNotFoundException
    from moto.ecs.models import EC2ContainerServiceBackend

    from ecs_guardrail.replay.memory_aws import task_definition_revision

    original = EC2ContainerServiceBackend.list_services
    original_describe = EC2ContainerServiceBackend.describe_task_definition

    def describe_task_definition(self: Any, task_definition_str: str) -> Any:
        _, colon, rev = task_definition_str.split("/")[-1].partition(":")
        if colon and task_definition_revision(rev) is None:
            raise TaskDefinitionNotFoundException()
        return original_describe(self, task_definition_str)

    def list_services(self: Any, cluster_str: str, *args: Any, **kwargs: Any) -> list[str]:
        name = self._get_cluster(cluster_str).name
        own = {s.arn for key, s in self.services.items() if key.split(":", 1)[0] == name}
        return [arn for arn in original(self, cluster_str, *args, **kwargs) if arn in own]

    original_lb = elbv2_models.ELBv2Backend.create_load_balancer
    make_arn = elbv2_models.make_arn_for_load_balancer

    def create_load_balancer(self: Any, *args: Any, **kwargs: Any) -> Any:
        kind = {"network": "net", "gateway": "gwy"}.get(str(kwargs.get("loadbalancer_type") or ""), "app")

        def arn(account_id: str, lb_id: str, name: str, region_name: str) -> str:
            return str(make_arn(account_id, lb_id, name, region_name)).replace(":loadbalancer/app/",
                                                                               f":loadbalancer/{kind}/", 1)

        with mock.patch.object(elbv2_models, "make_arn_for_load_balancer", arn):
            return original_lb(self, *args, **kwargs)

    with mock.patch.object(EC2ContainerServiceBackend, "list_services", list_services), \
            mock.patch.object(EC2ContainerServiceBackend, "describe_task_definition", describe_task_definition), \
            mock.patch.object(elbv2_models.ELBv2Backend, "create_load_balancer", create_load_balancer), \
            _moto_service_deployments():
        yield


def _when(value: Any) -> Any:
    """A request timestamp as moto's parser hands it over (datetime, epoch seconds or ISO text) -> UTC."""
    from datetime import UTC, datetime

    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, UTC)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return datetime.fromtimestamp(float(value), UTC)
    return value if value is None or value.tzinfo else value.replace(tzinfo=UTC)


@contextlib.contextmanager
def _moto_service_deployments() -> Iterator[None]:
    """ListServiceDeployments and DescribeServiceDeployments on moto, which has neither (moto 5 answers
    NotImplementedError): both derived from the service's ``deployments[]`` exactly as the fast engine
    derives them (:func:`~ecs_guardrail.replay.memory_aws.service_deployments_of`), so the two engines
    agree (``tests/contract/test_aws_port.py``)."""
    from unittest import mock

    from moto.core.responses import ActionResult
    from moto.ecs.exceptions import ServiceNotFoundException
    from moto.ecs.responses import EC2ContainerServiceResponse

    from ecs_guardrail.replay.fleet import LISTED
    from ecs_guardrail.replay.memory_aws import service_deployments_of

    def _all(backend: Any) -> dict[str, dict[str, Any]]:
        return {sd["serviceDeploymentArn"]: sd for svc in backend.services.values()
                for sd in service_deployments_of(svc.arn, list(svc.deployments), getattr(svc, LISTED, ()))}

    def list_service_deployments(self: Any) -> Any:
        backend = self.ecs_backend
        cluster = backend._get_cluster(self._get_param("cluster", "default")).name
        name = resource_name(str(self._get_param("service")))
        svc = backend.services.get(f"{cluster}:{name}")
        if svc is None or svc.status != "ACTIVE":
            raise ServiceNotFoundException
        status = self._get_param("status") or []
        window = self._get_param("createdAt") or {}
        after, before = _when(window.get("after")), _when(window.get("before"))
        out = []
        for sd in service_deployments_of(svc.arn, list(svc.deployments), getattr(svc, LISTED, ())):
            made = _when(sd.get("createdAt"))
            if status and sd["status"] not in status:
                continue
            if made is not None and ((after is not None and made < after) or (before is not None and made > before)):
                continue
            out.append({k: sd[k] for k in ("serviceDeploymentArn", "serviceArn", "clusterArn", "startedAt",
                                           "createdAt", "finishedAt", "status", "statusReason") if k in sd})
        return ActionResult({"serviceDeployments": out})

    def describe_service_deployments(self: Any) -> Any:
        arns = self._get_param("serviceDeploymentArns") or []
        known = _all(self.ecs_backend)
        return ActionResult({"serviceDeployments": [known[a] for a in arns if a in known],
                             "failures": [{"arn": a, "reason": "MISSING"} for a in arns if a not in known]})

    with mock.patch.object(EC2ContainerServiceResponse, "list_service_deployments", list_service_deployments,
                           create=True), \
            mock.patch.object(EC2ContainerServiceResponse, "describe_service_deployments",
                              describe_service_deployments, create=True):
        yield


class CallCounter:
    """Counts AWS API calls (service, operation) through botocore's ``before-call`` event."""

    def __init__(self) -> None:
        self.calls: Counter[tuple[str, str]] = Counter()

    def attach(self, client: Any) -> Any:
        service = client.meta.service_model.service_name

        def count(model: Any, **_: Any) -> None:
            self.calls[(service, model.name)] += 1

        client.meta.events.register("before-call.*.*", count)
        return client

    @property
    def total(self) -> int:
        return sum(self.calls.values())


class EmbeddedAws:
    """moto for one scenario: the history table, alert topic (with an SQS queue to read alerts back),
    the fleet's clusters, services and target groups.

    Use as a context manager; inside it every boto3 client in this process talks to moto.
    """

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.region = scenario.region
        self.counter = CallCounter()
        self._stack = contextlib.ExitStack()
        self.topic_arn = ""
        self.queue_url = ""
        # name -> {"arn", "lb_arn", "dimension", "lb_dimension", "lb_type"} (fleet.BuiltFleet)
        self.target_groups: dict[str, dict[str, str]] = {}
        self.task_definitions: dict[tuple[str, str], str] = {}  # (cluster, service) -> task definition ARN
        self.warnings: list[str] = []  # what building it found worth a line (logs.jsonl lines left out)
        self.deployments = DeploymentsFromEvents(scenario.account, scenario.region)
        #: False once the fleet build found no deployment opening in events.jsonl (saw_event: nothing to do)
        self.deployments_in_events = True

    def client(self, service: str) -> Any:
        import boto3

        from ecs_guardrail.adapters.aws import client_config

        return boto3.client(service, region_name=self.region, config=client_config())

    def __enter__(self) -> EmbeddedAws:
        from moto import mock_aws

        self._stack.enter_context(scoped_environ({**_FAKE_ENV, "AWS_DEFAULT_REGION": self.region,
                                            "MOTO_ACCOUNT_ID": self.scenario.account}))
        self._stack.enter_context(mock_aws())
        self._stack.enter_context(moto_as_aws())
        self._build()
        return self

    def clients(self) -> Any:
        """A :class:`~ecs_guardrail.handlers.runtime.Clients` over this embedded AWS (calls counted)."""
        from ecs_guardrail.handlers.runtime import Clients

        return Clients(lambda service: self.counter.attach(self.client(service)))

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def _build(self) -> None:
        create_history_table(self.client("dynamodb"), TABLE)
        sns, sqs = self.client("sns"), self.client("sqs")
        self.topic_arn = sns.create_topic(Name=TOPIC)["TopicArn"]
        self.queue_url = sqs.create_queue(QueueName="ecs-guardrail-alerts-readback")["QueueUrl"]
        qarn = sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        sns.subscribe(TopicArn=self.topic_arn, Protocol="sqs", Endpoint=qarn)  # SNS envelope: subject kept
        self._build_fleet()

    def _build_fleet(self) -> None:
        restarts = self.scenario.folder / "container_restarts.csv"
        insights: set[str] = set()
        if restarts.is_file():
            from ecs_guardrail.replay.restarts import read_container_restarts_csv

            insights = {c for _, c, _, _ in read_container_restarts_csv(restarts)}
        found: set[bytes] = set()
        built = build_fleet(self.client, self.scenario.fleet, self.scenario.account, self.region,
                            event_task_definitions=task_definitions_in_events(
                                self.scenario.events_path, self.scenario.account, self.region,
                                fleet_families(self.scenario.fleet), look_for=(_OPENS_WORD,), found=found),
                            container_insights=insights)
        # without one SERVICE_DEPLOYMENT_IN_PROGRESS in events.jsonl no ACTIVE entry is ever made
        # (DeploymentsFromEvents.saw returns None for every event): saw_event has nothing to follow
        self.deployments_in_events = _OPENS_WORD in found
        self.target_groups = built.target_groups
        self.task_definitions = built.task_definitions
        from ecs_guardrail.replay.logs_file import load_logs  # logs.jsonl: the lines alerts quote

        self.warnings += load_logs(self.client, self.scenario.fleet, self.scenario.account, self.region,
                                   self.scenario.folder, self.scenario.events_path)

    def saw_event(self, raw: Any) -> None:
        """Not an AWS operation: the replay feeds each accepted event here before the watchdog reads it, so
        that DescribeServices' ``deployments[]`` holds the deployment a rolling deployment replaces
        (:mod:`ecs_guardrail.replay.deployments`). On moto through its backend's service object."""
        if not self.deployments_in_events:
            return
        change = self.deployments.saw(raw)
        if change is not None:
            self._set_active(*change)

    def _set_active(self, cluster: str, service: str, entry: dict[str, Any] | None) -> None:
        from moto.ecs.models import ecs_backends

        found = ecs_backends[self.scenario.account][self.region].services.get(f"{cluster}:{service}")
        if found is not None:
            found.deployments = replace_active(list(found.deployments), entry)

    def alerts(self) -> list[dict[str, Any]]:
        """Every message published to the alert topic, read back through the SQS subscription:
        ``{"channel": "sns", "subject": ..., "message": ..., "time": ...}`` in publication order."""
        sqs = self.client("sqs")
        out: list[dict[str, Any]] = []
        while True:
            msgs = sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10).get("Messages", [])
            if not msgs:
                return out
            for m in msgs:
                envelope = json.loads(m["Body"])
                out.append({"channel": "sns", "subject": envelope.get("Subject"), "message": envelope.get("Message"),
                            "time": envelope.get("Timestamp")})
                sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=m["ReceiptHandle"])

    def desired_counts(self) -> dict[str, int]:
        """``{"cluster/service": desiredCount}`` read back from the embedded ECS."""
        ecs = self.client("ecs")
        out: dict[str, int] = {}
        for c in self.scenario.fleet["clusters"]:
            names = [s["name"] for s in c.get("services", [])]
            for i in range(0, len(names), 10):
                for s in ecs.describe_services(cluster=c["name"], services=names[i:i + 10])["services"]:
                    out[f"{c['name']}/{s['serviceName']}"] = int(s["desiredCount"])
        return out


class InMemoryAws(EmbeddedAws):
    """The fast engine's embedded AWS: the same fleet, topic and readbacks as :class:`EmbeddedAws`, over
    :class:`~ecs_guardrail.replay.memory_aws.MemoryAws` instead of moto (no history table here: the fast
    engine's table is :class:`~ecs_guardrail.adapters.store.memory.MemoryTable`)."""

    def __init__(self, scenario: Scenario) -> None:
        from ecs_guardrail.replay.memory_aws import MemoryAws

        super().__init__(scenario)
        self.memory = MemoryAws(scenario.account, self.region)

    def client(self, service: str) -> Any:
        return self.memory.client(service)

    def __enter__(self) -> InMemoryAws:
        # the fake credentials still: a client made outside this AWS by mistake fails, never signs as a user
        self._stack.enter_context(scoped_environ({**_FAKE_ENV, "AWS_DEFAULT_REGION": self.region}))
        self.topic_arn = self.client("sns").create_topic(Name=TOPIC)["TopicArn"]
        self._build_fleet()
        return self

    def _set_active(self, cluster: str, service: str, entry: dict[str, Any] | None) -> None:
        found = self.memory.ecs_clusters.get(cluster, {}).get("services", {}).get(service)
        if found is not None:
            found["deployments"] = replace_active(found["deployments"], entry)

    def alerts(self) -> list[dict[str, Any]]:
        """Every message published to the alert topic, in publication order (as :meth:`EmbeddedAws.alerts`,
        without the SNS envelope's wall-clock ``time``)."""
        return [{"channel": "sns", "subject": m["subject"], "message": m["message"], "time": None}
                for m in self.memory.topics.get(self.topic_arn, [])]


def create_history_table(ddb: Any, name: str) -> None:
    """The history table as template.yaml defines it (keys, GSI ``gsi1`` projecting the timeline fields,
    on-demand, TTL)."""
    from ecs_guardrail.adapters.history import HistoryStore

    ddb.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": a, "AttributeType": "S"} for a in ("pk", "sk", "gsi1pk", "gsi1sk")],
        GlobalSecondaryIndexes=[{
            "IndexName": "gsi1",
            "KeySchema": [{"AttributeName": "gsi1pk", "KeyType": "HASH"},
                          {"AttributeName": "gsi1sk", "KeyType": "RANGE"}],
            # as template.yaml: only what timeline reads project, never the raw event text
            "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": list(HistoryStore.TIMELINE_FIELDS)},
        }],
    )
    ddb.update_time_to_live(TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": "expires_at"})
