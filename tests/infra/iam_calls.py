"""Records every AWS call each Lambda function makes, with what IAM sees of it (action, resource ARN,
condition keys) and the declared unit (``ecs_guardrail.iam.permissions``) that made it.

- :class:`Recorder` holds the calls; :meth:`Recorder.acting_as` marks the code that runs as one function
  (a context variable, so each explorer thread has its own);
- :class:`RecordingClient` / :class:`RecordingTable` wrap a boto3-shaped client (the fast engine's, or a
  real one) and the history table port; each call is recorded before it is made, with the innermost
  declared unit found on the call stack (no declared unit: ``unit`` is ``None``);
- :func:`requests_of` turns a call into the IAM requests AWS authorises (Service Authorization
  Reference: the resource types and condition keys of each action), e.g. one DescribeServices of three
  services is three requests on three service ARNs.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ecs_guardrail import iam

#: boto3 service name -> IAM service prefix
IAM_PREFIX = {"ecs": "ecs", "elbv2": "elasticloadbalancing", "cloudwatch": "cloudwatch",
              "application-autoscaling": "application-autoscaling", "sns": "sns", "dynamodb": "dynamodb",
              "events": "events", "secretsmanager": "secretsmanager", "logs": "logs"}

_FUNCTION: contextvars.ContextVar[str | None] = contextvars.ContextVar("iam_function", default=None)


@dataclass(frozen=True)
class Unit:
    """The declared unit a call came from: ``qualname`` (``module:Class.method``) and its declaration."""

    qualname: str
    code: Any
    declared: iam.Permissions


@dataclass
class Call:
    function: str
    service: str
    operation: str
    params: dict[str, Any]
    unit: Unit | None
    home: tuple[str, str]  # (account, region)
    where: str  # scenario or situation
    #: the effect performers (``@performs``) on the stack when the call was made, innermost first
    performers: tuple[Unit, ...] = ()


@dataclass
class Recorder:
    home: tuple[str, str] = ("", "")
    where: str = ""
    calls: list[Call] = field(default_factory=list)

    @contextlib.contextmanager
    def acting_as(self, function: str) -> Iterator[None]:
        token = _FUNCTION.set(function)
        try:
            yield
        finally:
            _FUNCTION.reset(token)

    def as_function(self, function: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` run as ``function`` (for monkeypatching an entry point)."""
        def run(*args: Any, **kwargs: Any) -> Any:
            with self.acting_as(function):
                return fn(*args, **kwargs)
        return run

    def record(self, service: str, operation: str, params: dict[str, Any]) -> None:
        function = _FUNCTION.get()
        if function is None:
            return  # the replay's own set-up and read-backs, the operator's CLI: no function's role
        self.calls.append(Call(function, service, operation, params, _declared_unit(), self.home, self.where,
                               _performers()))


def _performers() -> tuple[Unit, ...]:
    """The effect performers (:func:`ecs_guardrail.core.permissions.performs`) on the call stack."""
    from ecs_guardrail.core.permissions import performer_by_code

    found = []
    frame = sys._getframe(1)
    while frame is not None:
        declared = performer_by_code(frame.f_code)
        if declared is not None:
            found.append(Unit(f"{frame.f_globals.get('__name__')}:{frame.f_code.co_qualname}", frame.f_code, declared))
        frame = frame.f_back  # type: ignore[assignment]
    return tuple(found)


def _declared_unit() -> Unit | None:
    frame = sys._getframe(1)
    while frame is not None:
        declared = iam.declared_by_code(frame.f_code)
        if declared is not None:
            return Unit(f"{frame.f_globals.get('__name__')}:{frame.f_code.co_qualname}", frame.f_code, declared)
        frame = frame.f_back  # type: ignore[assignment]
    return None


def _operation_names(client: Any) -> dict[str, str]:
    names = getattr(client, "OPERATIONS", None)
    if isinstance(names, dict):
        return names
    return dict(client.meta.method_to_api_mapping)


class RecordingClient:
    """A client whose operations are recorded (with their parameters) before they run."""

    def __init__(self, client: Any, recorder: Recorder) -> None:
        self._client = client
        self._recorder = recorder
        self._service = client.meta.service_model.service_name
        self._ops = _operation_names(client)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if name == "get_paginator":
            return self._paginator
        if name not in self._ops:
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            self._recorder.record(self._service, self._ops[name], dict(kwargs))
            return attr(*args, **kwargs)

        return call

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_"):
            object.__setattr__(self, name, value)
        else:
            setattr(self._client, name, value)

    def _paginator(self, name: str) -> Any:
        real = self._client.get_paginator(name)
        outer = self

        class Paginator:
            def paginate(self, **kwargs: Any) -> Iterator[dict[str, Any]]:
                outer._recorder.record(outer._service, outer._ops[name],
                                       {k: v for k, v in kwargs.items() if k != "PaginationConfig"})
                yield from real.paginate(**kwargs)

        return Paginator()


class RecordingTable:
    """The history table port (:class:`~ecs_guardrail.adapters.store.table.Table`) with its DynamoDB
    operations recorded: ``put`` PutItem, ``get`` GetItem, ``query`` Query (on the index when asked),
    ``add_to_set`` and ``delete_from_set`` UpdateItem,
    ``transact_put`` TransactWriteItems (a PutItem per write, as IAM authorises it)."""

    def __init__(self, table: Any, recorder: Recorder) -> None:
        self._table = table
        self._recorder = recorder

    def __getattr__(self, name: str) -> Any:
        return getattr(self._table, name)

    def put(self, item: dict[str, Any], cond: Any = None) -> None:
        self._recorder.record("dynamodb", "PutItem", {"TableName": self._table.name})
        return self._table.put(item, cond)  # type: ignore[no-any-return]

    def get(self, pk: str, sk: str) -> Any:
        self._recorder.record("dynamodb", "GetItem", {"TableName": self._table.name})
        return self._table.get(pk, sk)

    def query(self, pk: str, **kwargs: Any) -> Any:
        params = {"TableName": self._table.name}
        if kwargs.get("index"):
            params["IndexName"] = "gsi1"
        self._recorder.record("dynamodb", "Query", params)
        return self._table.query(pk, **kwargs)

    def add_to_set(self, pk: str, sk: str, attribute: str, members: list[str], **kwargs: Any) -> Any:
        self._recorder.record("dynamodb", "UpdateItem", {"TableName": self._table.name})
        return self._table.add_to_set(pk, sk, attribute, members, **kwargs)

    def delete_from_set(self, pk: str, sk: str, attribute: str, members: list[str]) -> None:
        self._recorder.record("dynamodb", "UpdateItem", {"TableName": self._table.name})
        self._table.delete_from_set(pk, sk, attribute, members)

    def transact_put(self, writes: list[Any]) -> None:
        self._recorder.record("dynamodb", "TransactWriteItems",
                              {"TransactItems": [{"Put": {"TableName": self._table.name}} for _ in writes]})
        return self._table.transact_put(writes)  # type: ignore[no-any-return]


# ------------------------------------------------------------------------------ calls -> IAM requests

@dataclass(frozen=True)
class Request:
    """What IAM evaluates: ``action`` on ``resource`` with ``context`` (condition key -> values)."""

    function: str
    action: str
    resource: str
    context: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def account(self) -> str:
        parts = self.resource.split(":")
        return parts[4] if len(parts) > 5 else ""

    def context_dict(self) -> dict[str, list[str]]:
        return {k: list(v) for k, v in self.context}


def _service_arn(cluster: str, service: str, account: str, region: str) -> str:
    if service.startswith("arn:"):
        return service
    if cluster.startswith("arn:"):  # arn:P:ecs:R:A:cluster/NAME
        head, name = cluster.split(":cluster/", 1)
        return f"{head}:service/{name}/{service}"
    return f"arn:aws:ecs:{region}:{account}:service/{cluster or 'default'}/{service}"


def requests_of(call: Call) -> list[Request]:  # noqa: C901 - one branch per operation
    """The IAM requests of one recorded call.

    Raises:
        KeyError: an operation this table does not know (add it, from the Service Authorization Reference).
    """
    account, region = call.home
    p, op, f = call.params, call.operation, call.function
    action = f"{IAM_PREFIX[call.service]}:{op}"

    def one(resource: str, **context: list[str] | str) -> Request:
        ctx = tuple(sorted((k, tuple([v] if isinstance(v, str) else v)) for k, v in context.items()))
        return Request(f, action, resource, ctx)

    if call.service == "dynamodb":
        table = f"arn:aws:dynamodb:{region}:{account}:table/"
        if op == "TransactWriteItems":  # authorised per item: dynamodb:PutItem for a Put
            return [Request(f, "dynamodb:PutItem", table + item["Put"]["TableName"]) for item in p["TransactItems"]]
        if op in ("PutItem", "GetItem", "Query", "UpdateItem"):
            index = f"/index/{p['IndexName']}" if p.get("IndexName") else ""
            return [one(table + p["TableName"] + index)]
    if call.service == "ecs":
        cluster = str(p.get("cluster") or "")
        if op == "DescribeServices":
            return [one(_service_arn(cluster, s, account, region)) for s in p["services"]]
        if op in ("UpdateService", "ListServiceDeployments"):
            return [one(_service_arn(cluster, p["service"], account, region))]
        if op == "TagResource":
            return [one(p["resourceArn"], **{"aws:TagKeys": [t["key"] for t in p["tags"]]},
                        **{f"aws:RequestTag/{t['key']}": t["value"] for t in p["tags"]})]
        if op == "UntagResource":
            return [one(p["resourceArn"], **{"aws:TagKeys": list(p["tagKeys"])})]
        if op == "DescribeServiceDeployments":
            return [one(a) for a in p["serviceDeploymentArns"]]
        if op == "DescribeClusters":  # resource type cluster (Service Authorization Reference)
            return [one(c if c.startswith("arn:") else f"arn:aws:ecs:{region}:{account}:cluster/{c}")
                    for c in p.get("clusters") or ["default"]]
        if op in ("ListServices", "ListClusters", "DescribeTaskDefinition"):
            return [one("*")]
    if call.service == "application-autoscaling":
        if op == "DescribeScalableTargets":
            return [one("*")]
        if op == "RegisterScalableTarget":  # the target's ARN carries a random id, not the service
            return [one(f"arn:aws:application-autoscaling:{region}:{account}:scalable-target/"
                        f"0123456789abcdef0123456789abcdef",
                        **{"application-autoscaling:service-namespace": p["ServiceNamespace"],
                           "application-autoscaling:scalable-dimension": p["ScalableDimension"]})]
    if call.service in ("elbv2", "cloudwatch") and op in ("DescribeTargetGroups", "GetMetricData"):
        return [one("*")]
    if call.service == "sns" and op == "Publish":
        return [one(p["TopicArn"])]
    if call.service == "events" and op == "PutEvents":
        buses = {e.get("EventBusName") or "default" for e in p["Entries"]}
        return [one(b if b.startswith("arn:") else f"arn:aws:events:{region}:{account}:event-bus/{b}")
                for b in sorted(buses)]
    if call.service == "secretsmanager" and op == "GetSecretValue":
        return [one(p["SecretId"])]
    if call.service == "logs" and op == "FilterLogEvents":  # resource type log-group (Service Authorization Ref.)
        return [one(f"arn:aws:logs:{region}:{account}:log-group:{p['logGroupName']}")]
    raise KeyError(f"{call.service}.{op}: no IAM resource rule (tests/infra/iam_calls.py requests_of)")


def kind_of(request: Request) -> str:
    """The resource kind (``ecs_guardrail.iam.RESOURCE_KINDS``) of a request's resource."""
    r = request.resource
    if r == "*":
        return "any"
    if ":dynamodb:" in r:
        return "history_index" if "/index/" in r else "history_table"
    if ":service-deployment/" in r:
        return "ecs_service_deployment"
    if ":ecs:" in r and ":service/" in r:
        return "ecs_service"
    if ":ecs:" in r and ":cluster/" in r:
        return "any"  # the sampler's DescribeClusters: granted on every cluster ("*")
    if ":sns:" in r:
        return "alert_topic"
    if ":event-bus/" in r:
        return "default_bus"
    if ":secretsmanager:" in r:
        return "webhook_secret"
    if ":logs:" in r and ":log-group:" in r:
        return "crash_log_group"
    if ":scalable-target/" in r:
        return "scalable_target"
    raise KeyError(f"no resource kind for {r}")
