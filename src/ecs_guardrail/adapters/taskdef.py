"""Amazon ECS task definitions: which containers of a standalone job are essential.

ECS task events do not say which container is essential; the task definition does
(DescribeTaskDefinition ``taskDefinition.containerDefinitions[].essential``; a container without the
field is essential, as the API documents). Task definition revisions are immutable, so the answer is
cached per ARN for the life of the object (keep one per Lambda container).

The same answer gives each container's log destination for the alerts' log links
(``containerDefinitions[].logConfiguration``: ``logDriver`` ``awslogs`` with the options
``awslogs-group``, ``awslogs-stream-prefix`` and ``awslogs-region``; ECS Developer Guide, "Using the
awslogs log driver"), so a link costs no second call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from msgspec import Struct

from ecs_guardrail.core.permissions import permissions

__all__ = ["TaskDefinitions", "AwsLogs"]


class AwsLogs(Struct, frozen=True):
    """A container's ``awslogs`` destination: ``group``, ``prefix`` (``None``: no stream prefix, so the
    stream name is not derivable) and ``region`` (``None``: the task's own region)."""

    group: str
    prefix: str | None
    region: str | None

# errors that will not go away by asking again: remembered as "unknown" for the ARN
_PERMANENT = frozenset({"AccessDeniedException", "AccessDenied", "ClientException", "InvalidParameterException"})


class TaskDefinitions:
    """DescribeTaskDefinition through an ECS client passed in, cached per task definition ARN."""


    def __init__(self, client: Any) -> None:
        self._ecs = client
        self._cache: dict[str, frozenset[str] | None] = {}
        self._errors: dict[str, str] = {}
        self._logs: dict[str, dict[str, AwsLogs]] = {}
        self._images: dict[str, dict[str, str]] = {}

    @classmethod
    def cached(cls, cache: dict[str, Any], clients: Callable[[str], Any]) -> TaskDefinitions:
        """The execution environment's instance, kept in ``cache`` (key ``taskdefs``) for its life; its ECS
        client is made (``clients("ecs")``) only the first time."""
        found = cache.get("taskdefs")
        if found is None:
            found = cache["taskdefs"] = cls(clients("ecs"))
        return found

    @permissions(any=["ecs:DescribeTaskDefinition"])
    def essential_containers(self, task_definition_arn: str) -> frozenset[str] | None:
        """Names of the essential containers of ``task_definition_arn`` (``taskDefinitionArn`` of the event).

        Returns ``None`` when the task definition cannot be read: AccessDeniedException, ClientException
        ("Unable to describe task definition": unknown or deleted), throttling after the client's retries,
        a connection error. The caller then alerts with "essential unknown" and the exit codes. Never raises.
        Successes and permanent errors are cached for the ARN; throttling and other transient errors are not.
        :meth:`why_unknown` says what went wrong, for the alert.
        """
        if task_definition_arn in self._cache:
            return self._cache[task_definition_arn]
        try:
            resp = self._ecs.describe_task_definition(taskDefinition=task_definition_arn)
        except ClientError as exc:
            err = exc.response.get("Error", {})
            code = err.get("Code", "ClientError")
            self._errors[task_definition_arn] = f"{code}: {err.get('Message', '')}".rstrip(": ")
            if code in _PERMANENT:
                self._cache[task_definition_arn] = None
            return None
        except BotoCoreError as exc:
            self._errors[task_definition_arn] = f"{type(exc).__name__}: {exc}"
            return None
        containers = (resp.get("taskDefinition") or {}).get("containerDefinitions") or []
        self._logs[task_definition_arn] = _awslogs(containers)
        self._images[task_definition_arn] = {c["name"]: str(c["image"]) for c in containers
                                             if c.get("name") and c.get("image")}
        essential = frozenset(c["name"] for c in containers if c.get("name") and c.get("essential", True))
        result = essential or None  # ECS requires an essential container: none found means unknown
        if result is None:
            self._errors[task_definition_arn] = "no container definition marked essential"
        else:
            self._errors.pop(task_definition_arn, None)
        self._cache[task_definition_arn] = result
        return result

    def log_destinations(self, task_definition_arn: str) -> dict[str, AwsLogs]:
        """Container name -> its ``awslogs`` destination, for the containers that log with ``awslogs``
        (read with :meth:`essential_containers`'s cached call; ``{}`` when the task definition cannot
        be read or no container uses ``awslogs``). Never raises."""
        if task_definition_arn not in self._logs:
            self.essential_containers(task_definition_arn)
        return dict(self._logs.get(task_definition_arn, {}))

    def image(self, task_definition_arn: str) -> str | None:
        """The image of the first essential container of ``task_definition_arn``
        (``containerDefinitions[].image``, read with :meth:`essential_containers`'s cached call;
        ``None`` when the task definition cannot be read). Never raises."""
        essential = self.essential_containers(task_definition_arn)
        images = self._images.get(task_definition_arn, {})
        return next((img for n, img in images.items() if essential is None or n in essential), None)

    def why_unknown(self, task_definition_arn: str) -> str | None:
        """The last error that made :meth:`essential_containers` return ``None`` for the ARN (one line)."""
        return self._errors.get(task_definition_arn)


def _awslogs(containers: list[dict[str, Any]]) -> dict[str, AwsLogs]:
    out: dict[str, AwsLogs] = {}
    for c in containers:
        conf = c.get("logConfiguration") or {}
        opts = conf.get("options") or {}
        if c.get("name") and conf.get("logDriver") == "awslogs" and opts.get("awslogs-group"):
            out[c["name"]] = AwsLogs(str(opts["awslogs-group"]), opts.get("awslogs-stream-prefix") or None,
                                     opts.get("awslogs-region") or None)
    return out
