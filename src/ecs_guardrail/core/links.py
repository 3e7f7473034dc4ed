"""Where an alert points: AWS console links for a service, its stopped tasks and its tasks' logs.

Pure string building (no I/O). Sources:

- Partitions and their console hosts (AWS General Reference, "AWS partitions"; GovCloud User Guide,
  "Signing in to the AWS GovCloud (US) console"; Amazon Web Services in China, "Console"):
  ``aws``       -> ``https://{region}.console.aws.amazon.com``,
  ``aws-us-gov``-> ``https://console.amazonaws-us-gov.com``,
  ``aws-cn``    -> ``https://console.amazonaws.cn``.
  The partition is the second field of an ARN (``arn:aws-cn:ecs:...``); without an ARN it follows
  from the region name (``us-gov-*`` GovCloud, ``cn-*`` China).
- ECS console v2 paths: ``/ecs/v2/clusters/{cluster}/services/{service}/health?region={region}``
  (the service page) and ``/ecs/v2/clusters/{cluster}/services/{service}/tasks?region={region}``
  (its tasks tab). The console's filter for stopped tasks is not a documented URL parameter, so the
  link opens the tasks tab, where "Filter desired status: Stopped" is one click; the alert's text
  says so.
- CloudWatch Logs console: ``/cloudwatch/home?region={region}#logsV2:log-groups/log-group/{group}
  /log-events/{stream}``, where group and stream are URL-encoded twice and ``%`` is written ``$``
  (``/`` -> ``%2F`` -> ``%252F`` -> ``$252F``), as the console itself writes them.
- The ``awslogs`` log driver names a container's stream ``{awslogs-stream-prefix}/{container name}/
  {task id}`` (ECS Developer Guide, "Using the awslogs log driver"); without a prefix the stream
  name is not derivable from the task, so no link is made.
"""

from __future__ import annotations

from urllib.parse import quote

from msgspec import Struct

__all__ = [
    "Link", "partition_of", "console_host", "service_url", "stopped_tasks_url", "cluster_tasks_url",
    "log_stream_name", "log_stream_url", "runbook_url", "console_escape", "Arn", "parse_arn", "arn_parts",
    "resource_name", "service_cluster", "resource_id_cluster", "service_resource_id_parts", "metric_target_group_name",
    "task_definition_parts",
]


class Link(Struct, frozen=True):
    """One link of an alert: ``label`` (a button's text, at most 75 characters) and ``url``."""

    label: str
    url: str


class Arn(Struct, frozen=True):
    """An ARN's six fields: ``arn:PARTITION:SERVICE:REGION:ACCOUNT:RESOURCE`` (IAM User Guide, "IAM
    identifiers", ARN format). ``resource`` keeps any ``:`` or ``/`` of its own
    (``task-definition/web:7``, ``targetgroup/NAME/ID``, ``service/CLUSTER/NAME``)."""

    partition: str
    service: str
    region: str
    account: str
    resource: str

    @property
    def path(self) -> tuple[str, ...]:
        """``resource`` split on ``/``: ``("service", "CLUSTER", "NAME")``, ``("targetgroup", "NAME", "ID")``."""
        return tuple(self.resource.split("/"))

    @property
    def resource_type(self) -> str:
        """The resource's kind, before the first ``/`` (``service``, ``daemon``, ``targetgroup``)."""
        return self.path[0]

    @property
    def name(self) -> str:
        """The last ``/`` segment: a task's id, a cluster's or service's name, a task definition's
        ``family:revision``."""
        return self.path[-1]


def parse_arn(text: str | None) -> Arn | None:
    """``text`` as an :class:`Arn`, or ``None`` when it is missing or not an ARN (fewer than six
    ``:``-separated fields, or not starting with ``arn``). Never raises."""
    parts = (text or "").split(":", 5)
    if len(parts) < 6 or parts[0] != "arn":
        return None
    return Arn(parts[1], parts[2], parts[3], parts[4], parts[5])


def resource_name(arn_or_name: str) -> str:
    """The name at the end of an ARN (``arn:...:cluster/prod`` -> ``prod``), or the text itself when it is
    a bare name already (ECS APIs accept either for a cluster or a service)."""
    return arn_or_name.rsplit("/", 1)[-1]


def service_cluster(service_arn: str) -> str:
    """The cluster name in a service ARN of the long format (``arn:...:service/CLUSTER/NAME`` -> ``CLUSTER``):
    the segment before the last (ECS Developer Guide, "Amazon Resource Names (ARNs) and IDs")."""
    return service_arn.split("/")[-2]


def resource_id_cluster(resource_id: str) -> str:
    """The cluster of an Application Auto Scaling ECS ``ResourceId`` (``service/CLUSTER/SERVICE`` ->
    ``CLUSTER``; Application Auto Scaling API Reference, RegisterScalableTarget ``ResourceId``), or the text
    itself when it has fewer than two ``/``."""
    return resource_id.split("/")[1] if resource_id.count("/") >= 2 else resource_id


def service_resource_id_parts(resource_id: str) -> tuple[str, str]:
    """``(CLUSTER, SERVICE)`` of an ECS ``ResourceId`` ``service/CLUSTER/SERVICE`` (the service keeps any
    further ``/``). Raises ``ValueError`` for fewer than two ``/``."""
    _, cluster, service = resource_id.split("/", 2)
    return cluster, service


def metric_target_group_name(dimension: str) -> str:
    """A CloudWatch ``TargetGroup`` dimension (``targetgroup/NAME/ID``) as operators name it (``NAME``); any
    other text is returned as it is."""
    return dimension.split("/")[1] if dimension.count("/") == 2 else dimension


def task_definition_parts(arn_or_name: str) -> tuple[str, str]:
    """``(family, revision)`` of a task definition ARN or ``family:revision`` (``arn:...:task-definition/web:7``
    -> ``("web", "7")``), split at the last ``:``; without one the family is ``""`` and the text is the
    revision, as :meth:`str.rpartition` gives (callers check the revision is a number)."""
    family, _, revision = resource_name(arn_or_name).rpartition(":")
    return family, revision


def arn_parts(arn: str | None) -> tuple[str | None, str | None, str | None]:
    """``(partition, region, account)`` of an ARN (``arn:PARTITION:SERVICE:REGION:ACCOUNT:...``);
    ``None`` for each field an ARN that is missing or malformed does not give."""
    a = parse_arn(arn)
    if a is None:
        return None, None, None
    return a.partition or None, a.region or None, a.account or None


def partition_of(region: str, arn: str | None = None) -> str:
    """``aws``, ``aws-us-gov`` or ``aws-cn``: the ARN's own partition when given, else the region's."""
    from_arn, _, _ = arn_parts(arn)
    if from_arn:
        return from_arn
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    if region.startswith("cn-"):
        return "aws-cn"
    return "aws"


def console_host(region: str, partition: str = "aws") -> str:
    """The console's origin for ``region`` in ``partition`` (see the module docstring)."""
    if partition == "aws-us-gov":
        return "https://console.amazonaws-us-gov.com"
    if partition == "aws-cn":
        return "https://console.amazonaws.cn"
    return f"https://{region}.console.aws.amazon.com"


def _seg(name: str) -> str:
    """A path segment (cluster and service names are ``[A-Za-z0-9_-]``; quoted anyway)."""
    return quote(name, safe="")


def service_url(region: str, cluster: str, service: str, partition: str = "aws") -> str:
    """The ECS console's page of the service (its health and metrics tab)."""
    return (f"{console_host(region, partition)}/ecs/v2/clusters/{_seg(cluster)}/services/{_seg(service)}"
            f"/health?region={region}")


def stopped_tasks_url(region: str, cluster: str, service: str, partition: str = "aws") -> str:
    """The service's tasks tab (the stopped ones are one filter away; see the module docstring)."""
    return (f"{console_host(region, partition)}/ecs/v2/clusters/{_seg(cluster)}/services/{_seg(service)}"
            f"/tasks?region={region}")


def cluster_tasks_url(region: str, cluster: str, partition: str = "aws") -> str:
    """The cluster's tasks tab (standalone jobs have no service page)."""
    return f"{console_host(region, partition)}/ecs/v2/clusters/{_seg(cluster)}/tasks?region={region}"


def console_escape(text: str) -> str:
    """CloudWatch console fragment encoding: quote twice, then ``%`` -> ``$`` (``/`` -> ``$252F``)."""
    return quote(quote(text, safe=""), safe="").replace("%", "$")


def log_stream_name(prefix: str, container: str, task_id: str) -> str:
    """The ``awslogs`` stream of one container of one task: ``prefix/container/task-id``."""
    return f"{prefix}/{container}/{task_id}"


def log_stream_url(region: str, group: str, stream: str, partition: str = "aws") -> str:
    """The CloudWatch Logs console page of one log stream (``region`` is the log group's region)."""
    return (f"{console_host(region, partition)}/cloudwatch/home?region={region}#logsV2:log-groups/log-group/"
            f"{console_escape(group)}/log-events/{console_escape(stream)}")


def runbook_url(template: str, cluster: str, service: str) -> str:
    """``RUNBOOK_URL`` with ``{cluster}`` and ``{service}`` replaced (URL-quoted). A template is not a
    format string: a placeholder it does not know (``{svc}``) stays, its braces percent-encoded (``%7B``,
    ``%7D``), because a raw brace is not allowed in a URL (RFC 3986) and Slack may refuse a button whose
    URL has one, and with it the whole message."""
    url = template.replace("{", "%7B").replace("}", "%7D")
    return url.replace("%7Bcluster%7D", quote(cluster, safe="")).replace("%7Bservice%7D", quote(service, safe=""))
